"""Long runs that used to cost quadratic time: sentence or clause punctuation with no
space after it ("see!!!...x", a CSV row of empty fields) and runs of flags (regional
indicators). The cuts are the same as the plain patterns give; the work is bounded."""

from __future__ import annotations

import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk import chunk
from sdk.chunking import _prose

from . import examples

# The patterns as they were before the runs were made linear: the reference for the cuts.
_HS = _prose._HSPACE
_CC = _prose._CLOSE_CLASS
OLD_SENTENCE = regex.compile(
    r"[。！？｡︒﹒﹗﹖．]+[" + _CC + r"]*" r"|[\p{Sentence_Terminal}…]+[" + _CC + r"]*(?=" + _HS + r")"
)
OLD_CLAUSE = regex.compile(r"[、，；：﹐﹑､︐︑]+[" + _CC + r"]*" r"|[,;:،؛]+[" + _CC + r"]*(?=" + _HS + r")")
GRAPHEME = regex.compile(r"\X")
IDENT = regex.compile(r"(?:(?=[\p{XID_Continue}])\X)+|\X")

PIECES = st.sampled_from(
    [
        "!",
        "?",
        ".",
        "…",
        "。",
        "！",
        ",",
        ";",
        ":",
        "、",
        "，",
        ")",
        "”",
        "」",
        " ",
        "\t",
        "\n",
        "a",
        "日",
        "x",
    ]
)
FLAGS = st.sampled_from(
    ["\U0001f1ef", "\U0001f1f5", "\U0001f1fa", "a", " ", "\u0301", "\u200d", "\u0600", "\ufe0f"]
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(PIECES, max_size=60).map("".join))
def test_sentence_and_clause_cuts_are_unchanged(text: str) -> None:
    for new, old in ((_prose._SENTENCE, OLD_SENTENCE), (_prose._CLAUSE, OLD_CLAUSE)):
        got = [m.span() for m in new.finditer(text) if m.group("skip") is None]
        assert got == [m.span() for m in old.finditer(text)]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(FLAGS, max_size=60).map("".join), st.data())
def test_flag_runs_cut_as_graphemes_do(text: str, data: st.DataObject) -> None:
    starts = [m.start() for m in GRAPHEME.finditer(text)]
    assert _prose._graphemes(text, 0, len(text)) == [g for g in starts if g > 0]
    assert _prose._identifiers(text, 0, len(text)) == [
        m.start() for m in IDENT.finditer(text) if m.start() > 0
    ]
    if starts:  # from any cluster boundary, as the engine asks
        a = data.draw(st.sampled_from(starts))
        b = data.draw(st.integers(a, len(text)))
        assert [g for g in _prose._graphemes(text, a, b) if g < b] == [g for g in starts if a < g < b]


def test_grapheme_search_never_walks_a_long_flag_run(monkeypatch: object) -> None:
    """\\X looks back over a whole run of flags to pair them; the runs are paired without
    it, so the text handed to \\X does not grow with the run."""
    seen: list[int] = []

    class Counting:
        def __init__(self, inner: regex.Pattern[str]) -> None:
            self.inner = inner

        def finditer(self, text: str, pos: int = 0, endpos: int | None = None) -> object:
            end = len(text) if endpos is None else endpos
            seen.append(end - pos)
            return self.inner.finditer(text, pos, end)

    import pytest

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(_prose, "_GRAPHEME", Counting(_prose._GRAPHEME))
        mp.setattr(_prose, "_IDENT_OR_GRAPHEME", Counting(_prose._IDENT_OR_GRAPHEME))
        text = "Flags: " + "🇯🇵🇫🇷" * 20_000 + " end."
        chunks = chunk(text, max_tokens=64, kind="text")
    finally:
        mp.undo()
    assert "".join(c.text for c in chunks) == text
    assert max(seen) < 100  # never the run itself (80,000 code points)


def test_long_punctuation_runs_chunk_whole() -> None:
    for text in ("see" + "!" * 50_000 + "x", "a" + "," * 50_000 + "\n", "。" * 30_000):
        chunks = chunk(text, max_tokens=64, kind="text")
        assert "".join(c.text for c in chunks) == text
        assert all(c.tokens <= 64 or c.oversize for c in chunks)


def test_an_identifier_run_is_bounded_so_millions_of_letters_do_not_exhaust_memory() -> None:
    """The identifier pattern keeps state per grapheme of a run; a run is at most
    IDENT_RUN_MAX graphemes, so a run of millions (which raised MemoryError) is several
    pieces cut at grapheme boundaries."""
    text = "a" * (3 * _prose.IDENT_RUN_MAX + 5)
    cuts = _prose._identifiers(text, 0, len(text))
    assert cuts == [_prose.IDENT_RUN_MAX, 2 * _prose.IDENT_RUN_MAX, 3 * _prose.IDENT_RUN_MAX]
    assert _prose._identifiers("ユーザー名 abc", 0, 9) == [5, 6]  # ordinary runs unchanged
