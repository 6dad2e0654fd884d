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
