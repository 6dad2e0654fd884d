"""The prose fast paths give exactly what the plain patterns give.

Grapheme clusters are found without \\X between characters that join nothing (the
property classes of ``_prose._JOINING``); level cuts are filtered by kinsoku and grapheme
safety through memo tables looked up in C. Both are checked here against the plain
definitions: \\X itself, for every assigned code point in the contexts where clusters
join, and :func:`allowed_cut` one position at a time.
"""

from __future__ import annotations

import sys
import unicodedata

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk.chunking import _prose

from . import examples

X = regex.compile(r"\X")


def reference(text: str, start: int = 0) -> list[int]:
    return [m.start() for m in X.finditer(text, start)]


def test_every_code_point_clusters_as_regex_X_does() -> None:
    # Each code point between neighbours that join the most (a letter, an Indic
    # consonant and virama, a Hangul vowel, an emoji and a joiner); "\n" between the
    # samples always ends a cluster.
    contexts = ("{c}{c}", "a{c}a", "{c}\u0915\u094d\u0915", "\u0915\u094d{c}", "\U0001f469\u200d{c}\u1161")
    assigned = [
        chr(c)
        for c in range(sys.maxunicode + 1)
        if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) != "Cn"
    ]
    for context in contexts:
        text = "\n".join(context.format(c=c) for c in assigned)
        assert _prose._cluster_starts(text, 0, len(text)) == reference(text)


JOINERS = st.sampled_from(
    [
        *("a", "日", " ", "\n", "\r", "\u0915", "\u094d", "\u093f", "\u0930", "\u0d4e", "\u1cf5"),
        *("\U00011a3a", "\u0600", "\u0301", "\u200d", "\ufe0f", "\U0001f469", "\U0001f3fd"),
        *("\U0001f1ef", "\U0001f1f5", "\u1100", "\u1161", "\u11a8", "\uac00", "\u0e33", "\uff76", "\uff9e"),
    ]
)


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(JOINERS, max_size=40).map("".join), st.data())
def test_cluster_starts_from_any_cluster_boundary(text: str, data: st.DataObject) -> None:
    starts = reference(text)
    assert _prose._cluster_starts(text, 0, len(text)) == starts
    if starts:
        a = data.draw(st.sampled_from(starts))
        b = data.draw(st.integers(a, len(text)))
        got = [g for g in _prose._cluster_starts(text, a, b) if g < b]
        assert got == [g for g in starts if a <= g < b]


@settings(max_examples=examples(500), deadline=None)
@given(st.text(st.sampled_from([*"a 。、）」「（ーっ\u200d\u0301\u0600!,", "\U0001f1ef"]), max_size=40))
def test_allowed_cuts_is_allowed_cut_at_each_position(text: str) -> None:
    positions = list(range(1, len(text)))
    assert _prose.allowed_cuts(text, positions) == [p for p in positions if _prose.allowed_cut(text, p)]


def test_plain_text_identifier_runs_are_those_of_regex_X() -> None:
    """Where no character joins a neighbour, every character starts a cluster and
    identifier runs are found by character classes (``_IDENT_OR_CHAR``) instead of by
    \\X: the same starts, for every assigned code point that joins nothing, among
    letters and between spaces."""
    plain = [
        chr(c)
        for c in range(sys.maxunicode + 1)
        if not 0xD800 <= c < 0xE000
        and unicodedata.category(chr(c)) != "Cn"
        and _prose._JOINING.match(chr(c)) is None
    ]
    for text in ("".join(plain), "a".join(plain), " ".join(plain)):
        assert _prose._plain(text, 0, len(text))
        assert _prose._cluster_starts(text, 0, len(text)) == reference(text)
        slow = [m.start() for m in _prose._IDENT_OR_GRAPHEME.finditer(text)]
        assert [m.start() for m in _prose._IDENT_OR_CHAR.finditer(text)] == slow
        assert _prose._identifiers(text, 0, len(text)) == [g for g in slow if g > 0]


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(JOINERS | st.sampled_from(["-", "x", "9", "_", "。"]), max_size=40).map("".join), st.data())
def test_identifier_starts_match_the_plain_pattern(text: str, data: st.DataObject) -> None:
    starts = reference(text)
    if not starts:
        return
    a = data.draw(st.sampled_from(starts))
    b = data.draw(st.integers(a, len(text)))
    got = _prose._identifiers(text, a, b)
    if "\U0001f1ef" not in text[a:b] and "\U0001f1f5" not in text[a:b]:
        # (Runs of flags are paired from their true start, which \X over a slice cannot see.)
        assert got == [m.start() for m in _prose._IDENT_OR_GRAPHEME.finditer(text, a, b) if m.start() > a]
    assert _prose._plain(text, a, b) == (_prose._JOINING.search(text, a, b) is None)


def test_plain_checks_every_slice_of_a_long_range() -> None:
    text = "a" * (3 * _prose._PLAIN_STEP) + "\u0301" + "a" * 10
    assert not _prose._plain(text, 0, len(text))
    assert _prose._plain(text, 0, 3 * _prose._PLAIN_STEP)
    assert _prose._plain(text, 3 * _prose._PLAIN_STEP + 1, len(text))


UNGATED_SENTENCE = regex.compile(
    _prose._SENTENCE.pattern.removeprefix("(?=[\\p{Sentence_Terminal}…])(?:")[:-1],
    _prose._SENTENCE.flags,
)


def test_every_sentence_match_starts_with_a_terminal() -> None:
    """The sentence pattern's look-ahead gate is sound: every character any of its
    alternatives can start with is a Sentence_Terminal or "…"."""
    assert UNGATED_SENTENCE.pattern != _prose._SENTENCE.pattern
    assert all(regex.match(r"\p{Sentence_Terminal}", c) for c in "。！？｡︒﹒﹗﹖．")


@settings(max_examples=examples(500), deadline=None)
@given(st.text(st.sampled_from([*"a .!?。！）」”…\u3000\t\n", "\u0964", "\uff0e"]), max_size=40))
def test_the_gated_sentence_pattern_matches_as_the_plain_one(text: str) -> None:
    def spans(p: regex.Pattern[str]) -> list[tuple[tuple[int, int], str | None]]:
        return [(m.span(), m.lastgroup) for m in p.finditer(text)]

    assert spans(_prose._SENTENCE) == spans(UNGATED_SENTENCE)
