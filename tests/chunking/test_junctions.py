"""The additive-junction rules against tiktoken, over every class of code point.

Where a rule says a position is additive, the engine trusts
``count(text[x:y]) == count(text[x:p]) + count(text[p:y])`` for any range around it,
so the tests check exactly that, for ranges that start and end anywhere, on text drawn
from every general category (controls, format characters, separators, every Unicode
whitespace, combining and spacing marks, unassigned code points) and from the corners
of both patterns.
"""

from __future__ import annotations

import unicodedata

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk.chunking import Chunker
from sdk.chunking import _junctions as j
from sdk.chunking._engine import Sizer
from sdk.tokens import _local as _tokens
from tests.chunking import examples
from tests.invariants import check_chunks

ENCODINGS = ("o200k_base", "cl100k_base")
CATEGORIES = (
    *("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No"),
    *("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So"),
    *("Zs", "Zl", "Zp", "Cc", "Cf", "Co", "Cn"),
)
WHITE_SPACE = sorted(_tokens.WHITE_SPACE)
# The corners of the patterns: line breaks, "/", the apostrophe of contractions, the
# separators str.isspace() calls whitespace and the patterns do not, marks of every kind.
CORNERS = [
    *("\r", "\n", "/", "'", "s", "ve", "LL", "a", "Z", "7", "٣", "-", "{", ".", " ", "  ", "\t"),
    *("\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028", "\u2029", "\u3000", "\xa0", "\u200b", "\ufeff"),
    *("\u0301", "\u0903", "\u20dd", "\u200d", "\ufe0f", "\U0001f3fd", "ā", "字", "ー"),
]
ANY_CLASS = st.one_of(
    st.sampled_from(CORNERS),
    st.sampled_from(WHITE_SPACE),
    st.sampled_from(CATEGORIES).flatmap(lambda cat: st.characters(categories=[cat])),  # type: ignore[list-item]
)
TEXT = st.lists(ANY_CLASS, min_size=2, max_size=16).map("".join)


SIZERS = {name: Sizer(name) for name in ENCODINGS}


def _adds_up(name: str, text: str) -> list[tuple[int, int, int]]:
    """Every (x, p, y) where a rule trusts a sum that tiktoken does not give."""
    sizer = SIZERS[name]
    n = len(text)
    cuts = [p for p in range(1, n) if sizer.additive(text, p)]
    if not cuts:
        return []
    count = {(x, y): sizer.count(text[x:y]) for x in range(n) for y in range(x + 1, n + 1)}
    return [
        (x, p, y)
        for p in cuts
        for x in range(p)
        for y in range(p + 1, n + 1)
        if count[x, y] != count[x, p] + count[p, y]
    ]


PATTERNS = {name: regex.compile(_tokens.pattern(name)) for name in ENCODINGS}


def _split_inside(name: str, text: str) -> list[tuple[int, int, int]]:
    """Every (x, p, y) where a rule calls ``p`` additive but a piece of ``text[x:y]`` spans it."""
    sizer = SIZERS[name]
    pattern = PATTERNS[name]
    n = len(text)
    bad = []
    for p in range(1, n):
        if not sizer.additive(text, p):
            continue
        for x in range(p):
            for y in range(p + 1, n + 1):
                if any(m.start() < p - x < m.end() for m in pattern.finditer(text[x:y])):
                    bad.append((x, p, y))
    return bad


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT)
def test_additive_positions_are_piece_boundaries_in_every_range(text: str) -> None:
    # Vocabulary aside (BPE may happen to give the same tokens across a piece), the
    # rules must agree with the patterns themselves.
    for name in ENCODINGS:
        assert _split_inside(name, text) == [], (name, text)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXT)
def test_additive_positions_add_up_in_every_range(text: str) -> None:
    for name in ENCODINGS:
        assert _adds_up(name, text) == [], (name, text)


@settings(max_examples=examples(500), deadline=None)
@given(
    text=st.lists(ANY_CLASS, min_size=2, max_size=90).map("".join),
    at=st.integers(0, 200),
    room=st.integers(0, 200),
    name=st.sampled_from(ENCODINGS),
)
def test_the_search_for_the_next_additive_position_asks_at_every_one(
    text: str, at: int, room: int, name: str
) -> None:
    """``next_additive`` asks the rule only where a letter does not follow a letter or
    a mark (found by a regex in C): it finds what asking at every position finds."""
    rule = j.ADDITIVE[name]
    p = 1 + at % (len(text) - 1)
    limit = min(len(text), p + room)
    plain = next((q for q in range(p + 1, min(limit, p + j._REACH)) if rule(text, q)), None)
    assert j.next_additive(rule, text, p, limit) == plain


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("category", CATEGORIES)
def test_every_category_next_to_every_corner(name: str, category: str) -> None:
    # A sample of each general category (every whitespace, below) on either side of
    # each corner, with the text ending right after it or running on.
    every = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == category]
    sample = every[:: max(1, len(every) // 48)]
    sizer = SIZERS[name]
    bad = []
    for ch in sample:
        for other in CORNERS:
            for text in (ch + other, other + ch, ch + other + ch, other + ch + other, ch + ch + other):
                for p in range(1, len(text)):
                    if sizer.additive(text, p):
                        for y in range(p + 1, len(text) + 1):
                            if sizer.count(text[:y]) != sizer.count(text[:p]) + sizer.count(text[p:y]):
                                bad.append((text, p, y))
    assert bad == []


# One of each class the rules tell apart, and the near-whitespace controls.
NEIGHBOURS = ["\r", "\n", "/", "'", "s", "7", "-", " ", "\x1c", "\x1f", "\u0301", "\u0903", "\u200b", "字"]


@pytest.mark.parametrize("name", ENCODINGS)
def test_every_whitespace_next_to_every_class(name: str) -> None:
    bad = []
    for ws in WHITE_SPACE:
        for a in NEIGHBOURS:
            for b in NEIGHBOURS:
                text = a + ws + b + ws
                bad += [(text, *t) for t in _adds_up(name, text)]
    assert bad == []
    assert not SIZERS[name].additive("{\x1c", 1)  # punctuation to the patterns, whitespace to str.isspace()


def test_classes_are_the_patterns_classes() -> None:
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    space = set(regex.findall(r"\s", every))
    assert {ch for ch in every if j.char_class(ch) in (j.SPACE, j.NEWLINE)} == space
    assert {ch for ch in every if j.char_class(ch) == j.NEWLINE} == {"\r", "\n"}
    for ch in "\x1c\x1d\x1e\x1f":
        assert ch.isspace() and j.char_class(ch) == j.OTHER
    # A code point unassigned in this Python's tables may be a letter to the encoder.
    unassigned = next(chr(c) for c in range(0x10000, 0x110000) if unicodedata.category(chr(c)) == "Cn")
    assert j.char_class(unassigned) == j.UNKNOWN


def test_rules_hold_only_for_the_patterns_they_were_derived_for() -> None:
    assert set(j.ADDITIVE) == {"o200k_base", "cl100k_base"}


@pytest.mark.parametrize(
    ("text", "budget"),
    [
        ("ax{\x1c\u0903{\u0903've've'{\x1e.ve\u0903", 8),  # "{" + U+001C was taken for a seam
        ("ve\x1fve-\x1e\u0903.a{vex'exa-\n\nः\u0903ve \x1dvev ", 4),
    ],
)
def test_reported_counts_are_exact(text: str, budget: int) -> None:
    for name in ENCODINGS:
        check_chunks(text, Chunker(budget, encoding=name).chunk(text, kind="text"), budget, encoding=name)


CHUNK_TEXT = st.lists(ANY_CLASS, max_size=60).map("".join)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=CHUNK_TEXT, budget=st.integers(1, 12), name=st.sampled_from(ENCODINGS))
def test_every_chunk_count_is_a_fresh_encode(text: str, budget: int, name: str) -> None:
    check_chunks(text, Chunker(budget, encoding=name).chunk(text, kind="text"), budget, encoding=name)
