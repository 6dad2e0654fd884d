"""The compiled passes (``sdk/chunking/_native.c``) and kernels (``_kernels.c``) against
their pure-Python references.

The extensions are optional for users (an install without a C compiler goes on without
them), so both paths must give the same results: each compiled function is checked
against its reference on generated input, and whole corpora are chunked both ways.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import itertools
import json
from array import array
from collections.abc import Iterator
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk.chunking import Chunk, Chunker, _accel, _markdown
from sdk.chunking._engine import Engine, Sizer
from sdk.chunking._jsontok import Structure
from sdk.chunking._junctions import char_class
from sdk.chunking._prose import tables
from tests.corpus import BUDGETS, CorpusFile, corpus_files

NATIVE = _accel.native
KERNELS = _accel.kernels

# This module compares the compiled passes with the interpreted ones: nothing to compare
# where they are switched off (SEAM_INTERPRETED=1; the rest of the suite runs that way).
pytestmark = pytest.mark.skipif(_accel.INTERPRETED, reason="SEAM_INTERPRETED: no compiled parts")


def test_the_native_module_is_built() -> None:
    # A machine with a C compiler (every machine the project's tests run on) builds it;
    # without it, every test below would compare the fallback with itself.
    assert NATIVE is not None
    assert KERNELS is not None


@contextlib.contextmanager
def pure_python() -> Iterator[None]:
    """The compiled parts switched off (every caller reads ``_accel`` per call)."""
    _accel.native = _accel.kernels = None
    try:
        yield
    finally:
        _accel.native, _accel.kernels = NATIVE, KERNELS


# Code points of every UTF-8 width, with combining marks, a flag, CJK and line breaks.
ALPHABET = st.sampled_from(
    [
        *("a", "Z", " ", "\n", "\r\n", "\t", "\x00", "!!", "{"),
        *("é", "\u0301", "ß", "ā", "字", "ー", "한", "😀", "🇯🇵"),
    ]
)
TEXTS = st.lists(ALPHABET, max_size=80).map("".join)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@given(text=TEXTS, start=st.sampled_from([0, 1, 5000]))
@settings(max_examples=300, deadline=None)
def test_char_ends_match_the_numpy_fallback(encoding: str, text: str, start: int) -> None:
    sizer = Sizer(encoding)
    assert NATIVE is not None
    for code in "iq":
        native = sizer.char_ends(text, start, code)
        with pure_python():
            fallback = sizer.char_ends(text, start, code)
        assert native.typecode == fallback.typecode == code
        assert native == fallback
        assert len(native) == sizer.count(text)
        if native:
            assert native[-1] == start + len(text)


def test_char_ends_rejects_what_is_not_a_token_id() -> None:
    assert NATIVE is not None
    lengths = array("i", [1, 2, 3]).tobytes()
    assert KERNELS.char_ends("abc", [0, 1], lengths, 0, False) == array("i", [1, 3]).tobytes()
    with pytest.raises(ValueError, match="outside the table"):
        KERNELS.char_ends("abc", [0, 3], lengths, 0, False)
    with pytest.raises(ValueError, match="outside the table"):
        KERNELS.char_ends("abc", [-1], lengths, 0, False)
    with pytest.raises(TypeError):
        KERNELS.char_ends("abc", [0, "1"], lengths, 0, False)
    with pytest.raises(ValueError, match="4-byte"):
        KERNELS.char_ends("abc", [0], b"\x01\x00\x00", 0, False)
    with pytest.raises(OverflowError):
        KERNELS.char_ends("abc", [0], lengths, (1 << 31) - 1, False)
    # ends past the text stop at its end; a tuple of ids is taken as well as a list
    assert KERNELS.char_ends("ab", (2, 2), lengths, 10, True) == array("q", [12, 12]).tobytes()
    # and a buffer of 4-byte ids; one of other widths is refused
    assert KERNELS.char_ends("abc", array("I", [0, 1]), lengths, 0, False) == array("i", [1, 3]).tobytes()
    with pytest.raises(ValueError, match="outside the table"):
        KERNELS.char_ends("abc", array("I", [0, 2**32 - 1]), lengths, 0, False)
    with pytest.raises(ValueError, match="4-byte unsigned"):
        KERNELS.char_ends("abc", array("q", [0, 1]), lengths, 0, False)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@given(text=TEXTS)
@settings(max_examples=200, deadline=None)
def test_tiktokens_buffer_of_ids_gives_the_ends_its_list_does(encoding: str, text: str) -> None:
    """tiktoken's buffer of ids (which reports its shape in bytes) is read by its length:
    the same ends as from ``encode_ordinary``'s list, special-token strings included."""
    assert NATIVE is not None
    sizer = Sizer(encoding)
    text += "<|endoftext|>" if len(text) % 2 else ""
    ids = sizer._ids(text)
    assert not isinstance(ids, list)  # this tiktoken has the buffer encoder
    listed = sizer.encode(text)
    assert array("I", bytes(ids)).tolist() == listed  # type: ignore[call-overload]
    assert KERNELS.char_ends(text, ids, sizer._len32, 3, True) == KERNELS.char_ends(
        text, listed, sizer._len32, 3, True
    )


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\[]{}字\n', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='k"[}\\', max_size=3), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(
    value=JSON_VALUES | st.lists(st.floats(allow_nan=True) | st.integers(), max_size=4),
    indent=st.sampled_from([None, 1]),
    tail=st.sampled_from(["", "-", "x", "tru", '"ab', "1e", "1.", "-I", "0", "-Infinity", "NaN"]),
)
@settings(max_examples=300, deadline=None)
def test_json_front_matches_the_tokenizer_on_every_prefix(
    value: object, indent: int | None, tail: str
) -> None:
    """The open containers and the last complete child of the innermost one, for every
    prefix of a document (and of one with a bad or cut tail after a comma), as the
    Python path's tokenizer finds them; None where that finds no front (invalid, or
    with nothing open)."""
    from sdk.chunking._json import _front

    assert NATIVE is not None
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    if text.endswith(("]", "}")) and len(text) > 2:
        text = text[:-1] + ", " + tail + text[-1]
    for stop in range(1, len(text)):
        with pure_python():
            want = _front(text, 0, stop)
        got = KERNELS.json_front(*_accel.units(text, keep=False), 0, stop)
        if got is None or want is None:
            assert got is want, text[:stop]
            continue
        starts = array("q")
        starts.frombytes(got[0])
        assert (list(starts), got[1]) == (list(want[0]), want[1]), text[:stop]


FILES = corpus_files()


@pytest.mark.parametrize("cf", FILES, ids=[f.name for f in FILES])
def test_the_fallback_chunks_every_corpus_file_as_the_native_passes_do(cf: CorpusFile) -> None:
    text = cf.read()
    for budget in BUDGETS:
        native = Chunker(budget).chunk(text, kind=cf.kind, filename=cf.path.name)
        with pure_python():
            pure = Chunker(budget).chunk(text, kind=cf.kind, filename=cf.path.name)
        assert native == pure


# Every junction class and the corners of both patterns (see test_junctions.py), with
# indentation runs and unassigned code points (UNKNOWN).
JUNCTION_PIECES = st.sampled_from(
    [
        *("\r", "\n", "\r\n", "/", "'", "s", "ve", "a", "Z", "7", "٣", "-", "{", ".", " ", "    ", "\t"),
        *("\x1c", "\x85", "\u2028", "\u3000", "\xa0", "\u200b", "\u0301", "\u0903", "\u200d", "\U0001f3fd"),
        *("ā", "字", "ー", "\U000e0080", "\u0378", "😀"),
    ]
)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@given(pieces=st.lists(JUNCTION_PIECES, min_size=1, max_size=100))
@settings(max_examples=200, deadline=None)
def test_forward_and_backward_match_the_python_rules(encoding: str, pieces: list[str]) -> None:
    text = "".join(pieces)
    sizer = Sizer(encoding)
    for p in range(len(text)):
        native = Engine(text, 64, sizer)
        pure = Engine(text, 64, sizer)
        got = native._forward(p), native._backward(p)
        with pure_python():
            want = pure._forward(p), pure._backward(p)
        assert got == want, (p, got, want)


def test_additive_rejects_bad_calls_and_unfilled_tables() -> None:
    from sdk.chunking._prose import tables

    assert KERNELS is not None
    classes, _ = tables("ab c")
    with pytest.raises(IndexError):
        KERNELS.additive("ab", 0, 2, 1, 1, classes)
    with pytest.raises(IndexError):
        KERNELS.additive("ab", 0, -1, 2, -1, classes)
    with pytest.raises(ValueError, match="no junction rule"):
        KERNELS.additive("ab", 0, 1, 3, 1, classes)
    with pytest.raises(ValueError, match="step"):
        KERNELS.additive("ab", 0, 1, 1, 2, classes)
    with pytest.raises(ValueError, match="table of 1-byte entries"):
        KERNELS.additive("ab", 0, 1, 1, 1, bytearray(10))
    # a character without an entry is an error, not a guess
    with pytest.raises(ValueError, match="no entry"):
        KERNELS.additive("ab", 0, 1, 1, 1, bytearray(0x110000))
    # nor are code points past Unicode read from beyond the table
    wide = array("I", [ord("a"), 0x7FFFFFFF, ord("b")]).tobytes()
    with pytest.raises(ValueError, match="no entry"):
        KERNELS.additive(wide, 4, 1, 1, 1, classes)
    assert KERNELS.additive("ab c", 0, 1, 1, 1, classes) == 2
    # a str read as it is (kind 8), as its units are
    assert KERNELS.additive("\u00e9b c", 8, 1, 1, 1, tables("\u00e9b c")[0]) == 2
    with pytest.raises(TypeError, match="kind 8"):
        KERNELS.additive(b"ab", 8, 1, 1, 1, classes)
    assert KERNELS.additive("ab c", 0, 3, 1, -1, classes) == 2


def test_tables_are_filled_for_every_character_and_undone_on_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    from sdk.chunking import _prose
    from sdk.chunking._prose import prose_flags, tables

    assert KERNELS is not None
    text = "\U0001d54f\u0b95\u0b95 x \U0001d54f"  # characters no test before has seen, perhaps
    for ch in set(text):
        cp = ord(ch)
        _accel.cache("junction", 1)[cp] = 0
        _accel.cache("prose", 2)[2 * cp : 2 * cp + 2] = b"\0\0"
    _accel.forget()

    def boom(ch: str) -> int:
        raise ZeroDivisionError(ch)

    monkeypatch.setattr(_prose, "prose_flags", boom)
    with pytest.raises(ZeroDivisionError):
        tables(text)
    classes, flags = _accel.cache("junction", 1), _accel.cache("prose", 2)
    assert all(classes[ord(ch)] == 0 for ch in text if ord(ch) > 255)  # set back, not marked
    monkeypatch.undo()
    _accel.forget()
    classes, flags = tables(text)
    by_point = memoryview(flags).cast("H")
    for ch in set(text):
        assert classes[ord(ch)] == char_class(ch) + 1
        assert by_point[ord(ch)] == prose_flags(ch) | 0x8000
    by_point.release()
    assert KERNELS.unfilled(*_accel.units(text, keep=False), classes) == []


# The characters the level patterns class (line breaks, horizontal space of every kind,
# Latin/CJK/Arabic terminals and clause marks, closers, kinsoku characters, joiners).
PROSE_PIECES = st.sampled_from(
    [
        *("\r", "\n", "\r\n", "\u2028", "\u2029", "\x85", " ", "  ", "\t", "\u3000", "\xa0", "\x0b"),
        *(".", "!", "?", "…", "。", "！", "．", "｡", "‼", "।", "؟", ",", ";", ":", "、", "，", "：", "،"),
        *(")", "」", "』", "”", '"', "'", "(", "「", "ー", "ッ", "々", "\u0301", "\u200d", "\u0600"),
        *("a", "word", "字", "한", "😀", "🇯🇵", "x y", "1"),
    ]
)


def _units(text: str, in_place: bool) -> tuple[str | bytes, int]:
    """The text's units, or (``in_place``) the str itself, read a block at a time."""
    if in_place and not text.isascii():
        return text, _accel.STR_KIND
    return _accel.units(text, keep=False)


def _level_cuts(text: str, start: int, end: int, level: int, limit: int, in_place: bool = False) -> list[int]:
    from sdk.chunking._prose import tables

    units, kind = _units(text, in_place)
    flags = tables(text)[1]
    got = array("q")
    pos, calls = start, 0
    while pos < end:
        batch, pos = KERNELS.level_cuts(units, kind, start, end, level, flags, True, limit, pos)
        assert limit == 0 or len(batch) <= 8 * limit
        got.frombytes(batch)
        calls += 1
    return got.tolist()


@given(pieces=st.lists(PROSE_PIECES, max_size=60), limit=st.integers(0, 3), data=st.data())
@settings(max_examples=400, deadline=None)
def test_level_cuts_match_the_level_patterns(pieces: list[str], limit: int, data: st.DataObject) -> None:
    from sdk.chunking._prose import _LEVEL_BATCHES, _NATIVE_LEVELS, _inside, allowed_cuts

    assert KERNELS is not None
    text = "".join(pieces)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    for level in range(_NATIVE_LEVELS):
        want: list[int] = []
        for batch in _LEVEL_BATCHES[level](text, start, end):
            inside = _inside(batch, start, end)
            if inside:
                want += allowed_cuts(text, inside)
        # the same cuts whether handed over at once or a few at a time, from the text's
        # units or from the str itself
        assert _level_cuts(text, start, end, level, limit) == want, (level, text, start, end)
        assert _level_cuts(text, start, end, level, 0, in_place=True) == want


def test_boundaries_are_those_of_the_patterns_on_every_prose_corpus_file() -> None:
    from sdk.chunking._prose import boundaries

    for cf in FILES:
        text = cf.read()
        for level in range(9):
            for start, end in ((0, len(text)), (len(text) // 3, 2 * len(text) // 3)):
                got = boundaries(text, start, end, level)
                with pure_python():
                    want = boundaries(text, start, end, level)
                assert got == want, (cf.name, level)


def test_a_str_read_in_blocks_gives_what_its_units_give() -> None:
    # Longer than a block (16,384 code points), with runs that cross a block's end.
    text = "".join(f"字{i}。 a\u3000b, c\n\n{'ー' * (i % 70)}{' ' * (i % 9)}x😀\u2029" for i in range(3000))
    assert len(text) > 5 * 16_384
    for start, end in ((0, len(text)), (16_380, 50_000), (33_000, 33_100)):
        for level in range(5):
            assert _level_cuts(text, start, end, level, 1000, in_place=True) == _level_cuts(
                text, start, end, level, 0
            )
        for level in range(5, 9):
            assert _fine_cuts(text, start, end, level, 7, in_place=True) == _fine_cuts(
                text, start, end, level, 0
            )
    classes = tables(text)[0]
    units, kind = _accel.units(text, keep=False)
    for p in (*range(16_300, 16_500, 7), *range(len(text) - 70, len(text))):
        for step in (1, -1):
            want = KERNELS.additive(units, kind, p, 1, step, classes)
            assert KERNELS.additive(text, _accel.STR_KIND, p, 1, step, classes) == want


def _forget_points(points: range) -> None:
    """The tables' entries of ``points`` set back to not filled (so a test sees them new)."""
    classes, flags = _accel.cache("junction", 1), _accel.cache("prose", 2)
    for cp in points:
        classes[cp] = 0
        flags[2 * cp : 2 * cp + 2] = b"\0\0"
    _accel.forget()


def test_threads_filling_the_tables_at_once_each_see_their_characters() -> None:
    import concurrent.futures
    import sys

    # Characters no one has seen, two texts of each set, chunked by eight threads at
    # once, switching often: a thread must not take the entries another is filling for
    # filled ones.
    texts = []
    for i in range(4):
        points = range(0x20000 + 3000 * i, 0x20000 + 3000 * (i + 1))
        _forget_points(points)
        texts += ["".join(map(chr, points)) + " end.", "Start. " + "".join(map(chr, reversed(points)))]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda t: Chunker(200).chunk(t, kind="text"), texts))
    finally:
        sys.setswitchinterval(interval)
    for text, chunks in zip(texts, got, strict=True):
        assert "".join(c.text for c in chunks) == text


def test_a_classifier_interrupted_leaves_no_entry_marked(monkeypatch: pytest.MonkeyPatch) -> None:
    from sdk.chunking import _prose

    _forget_points(range(0x4E01, 0x4E03))
    text = "ab \u4e01\u4e02. " * 300 + "\u4e01" * 3000
    real = _prose.char_class

    def interrupted(ch: str) -> int:
        if ch == "\u4e02":
            raise KeyboardInterrupt
        return real(ch)

    monkeypatch.setattr(_prose, "char_class", interrupted)
    with pytest.raises(KeyboardInterrupt):
        Chunker(50).chunk(text, kind="text")
    assert 255 not in _accel.cache("junction", 1)
    monkeypatch.undo()
    with pure_python():
        want = Chunker(50).chunk(text, kind="text")
    assert Chunker(50).chunk(text, kind="text") == want


def test_fine_cuts_take_back_only_the_state_they_hand_out() -> None:
    assert KERNELS is not None
    text = "日本" * 200
    flags = tables(text)[1]
    units, kind = _accel.units(text, keep=False)
    for level, pos, aux in ((6, 0, 3), (7, 5, 2), (6, 10, 8), (6, 10, -1), (8, 1, 2**40), (5, 3, 1)):
        with pytest.raises(ValueError, match="aux"):
            KERNELS.fine_cuts(
                units, kind, pos if level == 7 else 0, len(text), flags, False, 0, level, pos, aux, False
            )
    got = KERNELS.fine_cuts(units, kind, 0, len(text), flags, False, 0, 6, -1, 0, False)
    assert got is not None and type(got[4]) is bool


def test_level_cuts_reject_bad_ranges_and_tables() -> None:
    from sdk.chunking._prose import tables

    assert KERNELS is not None
    flags = tables("a b")[1]
    with pytest.raises(IndexError):
        KERNELS.level_cuts("ab", 0, 0, 3, 0, flags, False, 0, 0)
    with pytest.raises(IndexError):
        KERNELS.level_cuts("ab", 0, 2, 1, 0, flags, False, 0, 2)
    with pytest.raises(IndexError, match="position"):
        KERNELS.level_cuts("ab", 0, 0, 2, 0, flags, False, 0, 3)
    with pytest.raises(ValueError, match="no level scan"):
        KERNELS.level_cuts("ab", 0, 0, 2, 5, flags, False, 0, 0)
    with pytest.raises(ValueError, match="2-byte entries"):
        KERNELS.level_cuts("ab", 0, 0, 2, 4, bytearray(0x110000), False, 0, 0)
    with pytest.raises(ValueError, match="2-byte entries"):  # not aligned to its entries
        KERNELS.level_cuts("ab", 0, 0, 2, 4, memoryview(bytearray(0x220002))[1:-1], False, 0, 0)
    with pytest.raises(ValueError, match="no entry"):
        KERNELS.level_cuts("a b", 0, 0, 3, 4, bytearray(0x220000), False, 0, 0)
    batch, pos = KERNELS.level_cuts("a b", 0, 0, 3, 4, flags, False, 0, 0)
    assert array("i", batch) == array("i", [1]) and pos == 3


def test_many_cuts_come_in_bounded_batches() -> None:
    text = "a " * 50_000
    assert _level_cuts(text, 0, len(text), 4, 8192) == list(range(1, len(text), 2))


# Identifier characters of several scripts (script changes, kanji/katakana to hiragana),
# kinsoku characters in long glued runs, and a few that join a neighbour (the native
# pass then leaves the section to the grapheme stepping).
FINE_PIECES = st.sampled_from(
    [
        *("a", "word", "x_1", "7", "字", "漢字", "カタカナ", "ひらがな", "ー", "ッ", "々", "한국"),
        *("ไทย", " ", ".", "-", "(", "「", "」", "」" * 40, "(" * 40, "!", "、", "😀", "\n"),
        *("\u0301", "\u200d", "🇯🇵", "\u1100"),
    ]
)


@given(pieces=st.lists(FINE_PIECES, max_size=50), level=st.integers(5, 9), data=st.data())
@settings(max_examples=400, deadline=None)
def test_fine_levels_match_the_grapheme_stepping(pieces: list[str], level: int, data: st.DataObject) -> None:
    from sdk.chunking._prose import _JOINS, boundaries

    text = "".join(pieces)
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    got = boundaries(text, start, end, level)
    with pure_python():
        want = boundaries(text, start, end, level)
    assert got == want
    # the kernel took it exactly when no character joins a neighbour, and gives the same
    # cuts a few at a time
    whole = _fine_cuts(text, start, end, min(level, 8), 0)
    assert (whole is None) == any(_JOINS[ch] for ch in text[start:end])
    assert _fine_cuts(text, start, end, min(level, 8), data.draw(st.integers(1, 3))) == whole
    assert _fine_cuts(text, start, end, min(level, 8), data.draw(st.integers(0, 3)), in_place=True) == whole


def _fine_cuts(
    text: str, start: int, end: int, level: int, limit: int, in_place: bool = False
) -> tuple[int, list[int]] | None:
    from sdk.chunking._prose import tables

    units, kind = _units(text, in_place)
    flags = tables(text)[1]
    got = array("i")
    state: tuple[int, int, int, bool] = (level, -1, 0, False)
    while True:
        found = KERNELS.fine_cuts(units, kind, start, end, flags, False, limit, *state)
        if found is None:
            assert not got
            return None
        assert limit == 0 or len(found[0]) <= 4 * limit
        got.frombytes(found[0])
        state = found[1:]
        if state[1] >= end:
            return state[0], got.tolist()


def test_fine_cuts_reject_bad_levels_and_ranges() -> None:
    from sdk.chunking._prose import tables

    assert KERNELS is not None
    flags = tables("ab")[1]
    with pytest.raises(ValueError, match="no fine scan"):
        KERNELS.fine_cuts("ab", 0, 0, 2, flags, False, 0, 4, -1, 0, False)
    with pytest.raises(ValueError, match="no fine scan"):
        KERNELS.fine_cuts("ab", 0, 0, 2, flags, False, 0, 9, -1, 0, False)
    with pytest.raises(IndexError):
        KERNELS.fine_cuts("ab", 0, 1, 3, flags, False, 0, 5, -1, 0, False)
    with pytest.raises(IndexError, match="position"):
        KERNELS.fine_cuts("ab", 0, 0, 2, flags, False, 0, 5, 3, 0, False)
    with pytest.raises(ValueError, match="no entry"):
        KERNELS.fine_cuts("ab", 0, 0, 2, bytearray(0x220000), False, 0, 5, -1, 0, False)
    assert _fine_cuts("", 0, 0, 5, 0) == (9, [])
    assert _fine_cuts("ab", 0, 2, 5, 0) == (8, [1])
    assert _fine_cuts("a+b+c+d+e", 0, 9, 5, 2) == (5, list(range(1, 9)))
    assert _fine_cuts("漢字ひらがな漢字ひらがな", 0, 12, 6, 1) == (6, [6])  # a strong change only
    assert _fine_cuts("・" * 40, 0, 40, 5, 1) == (8, [32])  # kinsoku glues 32 at most


@given(
    ends=st.lists(st.integers(0, 300), max_size=60).map(sorted),
    edges=st.lists(st.integers(-5, 320), max_size=40).map(sorted),
)
@settings(max_examples=300, deadline=None)
def test_prefix_counts_are_bisections(ends: list[int], edges: list[int]) -> None:
    from bisect import bisect_right

    assert NATIVE is not None
    want = [bisect_right(ends, e) for e in edges]
    for ends_as in (ends, array("i", ends), array("q", ends)):
        for edges_as in (edges, tuple(edges), array("q", edges), array("i", edges)):
            assert KERNELS.prefix_counts(ends_as, edges_as, None) == want
            out = array("q", [7]) * len(edges)
            assert KERNELS.prefix_counts(ends_as, edges_as, out) is None
            assert out.tolist() == want


def test_prefix_counts_take_unsorted_edges_and_reject_what_is_not_integers() -> None:
    assert NATIVE is not None
    assert KERNELS.prefix_counts([1, 2, 3], [5, 0, 2], None) == [3, 0, 2]
    with pytest.raises(TypeError, match="edges"):
        KERNELS.prefix_counts([1], array("d", [1.0]), None)
    with pytest.raises(TypeError, match="ends"):
        KERNELS.prefix_counts("abc", [1], None)
    with pytest.raises(TypeError):
        KERNELS.prefix_counts([1, "x"], [1], None)
    with pytest.raises(ValueError, match="8-byte integer per edge"):
        KERNELS.prefix_counts([1], [1, 2], array("q", [0]))
    with pytest.raises(BufferError):
        KERNELS.prefix_counts([1], [1], b"\0" * 8)  # not writable


def test_the_kernels_build_the_chunks_the_python_path_builds() -> None:
    from sdk.chunking._api import _CHUNK_FIELDS, _finish
    from sdk.chunking._types import Chunk

    assert tuple(f.name for f in dataclasses.fields(Chunk)) == _CHUNK_FIELDS
    from sdk.chunking._engine import Engine, RawChunk
    from sdk.chunking._prose import PROSE

    text = "Zürich ist schön. 東京は大きい。 Plain words here.\n\nA second paragraph 🇯🇵."
    raw = Engine(text, 8, Sizer("o200k_base")).run(PROSE.root(text))
    raw[0] = RawChunk(raw[0].start, raw[0].end, 99, raw[0].first, oversize=True, partial=True)
    assert KERNELS is not None
    for max_tokens in (8, 200):
        native = _finish(text, raw, max_tokens)
        with pure_python():
            pure = _finish(text, raw, max_tokens)
        assert native == pure
        assert [type(c) for c in native] == [type(c) for c in pure]
        assert native[0].oversize == (max_tokens < 99)
        with pytest.raises(dataclasses.FrozenInstanceError):
            native[0].start = 1  # type: ignore[misc]
        assert hash(native[0]) == hash(pure[0])


@given(
    text=st.lists(st.sampled_from(["a", "é", "字", "😀", "\ud800", "\x00", "ß\u0301"]), max_size=60).map(
        "".join
    ),
    cuts=st.lists(st.integers(0, 60), max_size=12),
)
@settings(max_examples=300, deadline=None)
def test_utf8_sizes_match_the_encoder(text: str, cuts: list[int]) -> None:
    """Every span's UTF-8 size (a lone surrogate counted as "surrogatepass" encodes it),
    spans in order, backwards, empty and overlapping."""
    assert KERNELS is not None
    points = sorted(min(c, len(text)) for c in cuts)
    spans = [*itertools.pairwise(points), *((p, len(text)) for p in points), (0, 0)]
    starts, ends = [s for s, _ in spans], [e for _, e in spans]
    want = [len(text[s:e].encode("utf-8", "surrogatepass")) for s, e in spans]
    assert KERNELS.utf8_sizes(text, starts, ends) == want
    assert KERNELS.utf8_sizes(text, starts[::-1], ends[::-1]) == want[::-1]
    assert KERNELS.utf8_sizes(text, array("q", starts), array("q", ends)) == want


def test_utf8_sizes_read_a_long_text_in_blocks() -> None:
    assert KERNELS is not None
    text = ("ab字😀" * 30_000)[:100_003]
    cuts = [*range(0, len(text), 7_919), len(text)]
    starts, ends = cuts[:-1], cuts[1:]
    assert KERNELS.utf8_sizes(text, starts, ends) == [len(text[s:e].encode()) for s, e in zip(starts, ends)]
    assert KERNELS.utf8_sizes(text, [0], [len(text)]) == [len(text.encode())]


def test_utf8_sizes_reject_spans_outside_the_text() -> None:
    assert KERNELS is not None
    for starts, ends in (([0], [4]), ([-1], [2]), ([2], [1])):
        with pytest.raises(ValueError, match="outside the text"):
            KERNELS.utf8_sizes("abé", starts, ends)
    with pytest.raises(ValueError, match="differ in length"):
        KERNELS.utf8_sizes("abc", [0, 1], [1])
    with pytest.raises(TypeError):
        KERNELS.utf8_sizes(b"abc", [0], [1])  # type: ignore[arg-type]


def test_build_sets_what_object_setattr_sets() -> None:
    """The kernel and its reference (``_api._build``) make equal chunks, frozen and
    hashable as ``Chunk(...)`` makes them, from lists and tuples."""
    from sdk.chunking._api import _CHUNK_FIELDS, _build
    from sdk.chunking._types import Chunk

    assert KERNELS is not None
    assert tuple(f.name for f in dataclasses.fields(Chunk)) == _CHUNK_FIELDS
    rows = [
        ("ab", 0, 2, 1, "text", None, "/a", False, 0, 2, False, ""),
        ("cé", 2, 4, 2, "json", "x", None, True, 2, 5, True, ""),
    ]
    columns = tuple(list(c) if i % 2 else tuple(c) for i, c in enumerate(zip(*rows)))
    made = KERNELS.build(Chunk, _CHUNK_FIELDS, columns, 2)
    assert made == _build(Chunk, _CHUNK_FIELDS, columns, 2) == [Chunk(*r) for r in rows]
    assert [hash(c) for c in made] == [hash(Chunk(*r)) for r in rows]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made[0].start = 1  # type: ignore[misc]
    assert KERNELS.build(Chunk, _CHUNK_FIELDS, tuple(() for _ in _CHUNK_FIELDS), 0) == []


def test_build_rejects_what_it_cannot_set() -> None:
    from sdk.chunking._api import _CHUNK_FIELDS
    from sdk.chunking._types import Chunk

    assert KERNELS is not None
    one = tuple([0] for _ in _CHUNK_FIELDS)
    with pytest.raises(ValueError, match="column per name"):
        KERNELS.build(Chunk, _CHUNK_FIELDS, one[:-1], 1)
    with pytest.raises(ValueError, match="n items"):
        KERNELS.build(Chunk, _CHUNK_FIELDS, one, 2)
    with pytest.raises(ValueError, match="names are str"):
        KERNELS.build(Chunk, (1,) * 12, one, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="names are str"):
        KERNELS.build(Chunk, _CHUNK_FIELDS, ({0}, *one[1:]), 1)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        KERNELS.build(Chunk, ("nope",), ([1],), 1)  # no such slot: nothing half made escapes
    with pytest.raises(AttributeError, match="not writable"):
        KERNELS.build(int, ("real",), ([1],), 1)


SCALARS = st.sampled_from(
    [
        *("0", "-0", "12", "-3.25", "1e5", "2E-7", "6.02e+23"),
        *("true", "false", "null", "NaN", "Infinity", "-Infinity"),
    ]
)


def _containers(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Arrays and objects of ``inner`` documents, with the white space JSON allows."""
    arrays = st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]")
    members = st.lists(st.tuples(st.text(alphabet='k"\\', max_size=3), inner), max_size=4)
    objects = members.map(lambda kv: "{" + ",\n ".join(f"{json.dumps(k)} :\t{v}" for k, v in kv) + "}")
    return arrays | objects


LOOSE_JSON = st.recursive(
    SCALARS | st.text(alphabet='ab"\\字 \n', max_size=5).map(lambda t: json.dumps(t, ensure_ascii=False)),
    _containers,
    max_leaves=25,
)


KEYED_JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(
            st.tuples(st.text(alphabet='k~/"\\\u00e9\U0001f600', max_size=4), inner), min_size=1, max_size=4
        ).map(lambda kv: "{" + ",\n  ".join(f"{json.dumps(k)}: {v}" for k, v in kv) + "\r\n}")
        | st.lists(inner, min_size=1, max_size=4).map(lambda xs: "[" + " ,\t".join(xs) + "]")
    ),
    max_leaves=20,
)


def test_the_public_switch_tells_whether_the_native_passes_are_in_use() -> None:
    import sdk.chunking

    assert sdk.chunking.native_passes() is (NATIVE is not None)
    with pure_python():
        assert sdk.chunking.native_passes() is False


# Any text at all (every category of code point, long runs, JSON and Markdown syntax,
# line breaks of every kind): both paths give the same chunks.
ANY_TEXT = st.lists(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
    | st.sampled_from(["\r\n", "\n\n", "\u2029", "。", "」", "🇯🇵🇺🇸", '{"a": [1, 2]}', "# h\n"])
    | st.just("```py\nx=1\n```\n")
    | st.tuples(st.sampled_from(["!", ",", " ", "a", "字", "[", "\u0301"]), st.integers(1, 80)).map(
        lambda t: t[0] * t[1]
    ),
    max_size=30,
).map("".join)


@given(text=ANY_TEXT, budget=st.integers(1, 48), kind=st.sampled_from(["text", "markdown", "json", "auto"]))
@settings(max_examples=150, deadline=None)
def test_both_paths_chunk_any_text_alike(text: str, budget: int, kind: str) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        native = Chunker(budget).chunk(text, kind=kind)
        with pure_python():
            pure = Chunker(budget).chunk(text, kind=kind)
    assert native == pure
    assert "".join(c.text for c in native) == text


# Calls no caller in the package makes, that must still fail cleanly rather than crash
# (found by an adversarial review of the extension under AddressSanitizer).


def test_sequences_changed_by_the_code_their_items_run_are_read_from_a_copy() -> None:
    assert NATIVE is not None
    ends: list[object] = list(range(100))

    class Shrinking(int):
        def __index__(self) -> int:
            ends.clear()
            return 50

    ends[50] = Shrinking(50)
    assert KERNELS.prefix_counts(ends, [10, 60, 70], None) == [11, 61, 71]


def test_char_ends_rejects_ends_out_of_range_and_negative_lengths() -> None:
    assert NATIVE is not None
    with pytest.raises(OverflowError):
        KERNELS.char_ends("ab", [0], array("i", [1]).tobytes(), -(2**40), False)
    with pytest.raises(ValueError, match="negative length"):
        KERNELS.char_ends("abc", [0, 1], array("i", [3, -1]).tobytes(), 0, False)


def test_char_ends_reads_a_text_no_encoder_has_read() -> None:
    """The kernel reads a text's UTF-8 in place; a str whose UTF-8 nothing has made yet
    gets it made, one with a lone surrogate has none and says so."""
    assert KERNELS is not None
    widths = array("i", [1, 2, 3, 4]).tobytes()
    fresh = "".join(["é", "字", "😀"])
    # tokens of 2, 3 and 4 bytes: one character each
    assert KERNELS.char_ends(fresh, [1, 2, 3], widths, 0, False) == array("i", [1, 2, 3]).tobytes()
    # a token that ends inside a character's bytes ends after it
    split = KERNELS.char_ends("".join(["é", "x"]), [0, 0, 0], widths, 5, True)
    assert split == array("q", [6, 6, 7]).tobytes()
    with pytest.raises(UnicodeEncodeError):
        KERNELS.char_ends("a\ud800", [0], widths, 0, False)
    with pytest.raises(ValueError, match="no level scan"):
        KERNELS.level_cuts("", 0, 0, 0, 99, bytearray(0x220000), False, 0, 0)


NEEDLE_TEXTS = st.lists(
    st.sampled_from(["a", "ab", "abc", " ", "\n", "字", "😀", "é", "::", "->", "if "]), max_size=60
)


@given(pieces=NEEDLE_TEXTS, needles=st.lists(st.text("ab :->ifc", min_size=1, max_size=4), max_size=12))
@settings(max_examples=300, deadline=None)
def test_first_found_is_find_for_each_needle(pieces: list[str], needles: list[str]) -> None:
    assert NATIVE is not None
    text = "".join(pieces)
    assert KERNELS.first_found(*_accel.units(text, keep=False), tuple(needles)) == [
        text.find(n) for n in needles
    ]


def test_first_found_rejects_needles_it_cannot_search_for() -> None:
    assert NATIVE is not None
    for bad in (("",), ("é",), (b"a",), ("a", 1)):
        with pytest.raises(ValueError, match="non-empty ASCII"):
            KERNELS.first_found(*_accel.units("a text", keep=False), bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        KERNELS.first_found(*_accel.units("a text", keep=False), ["a"])  # type: ignore[arg-type]
    assert KERNELS.first_found(*_accel.units("", keep=False), ("a",)) == [-1]
    assert KERNELS.first_found(*_accel.units("abc", keep=False), ()) == []


def test_the_language_classifier_scores_alike_both_ways() -> None:
    from sdk.chunking._languages import _FEATURES, _score

    for cf in corpus_files():
        prefix = cf.read()[:8192]
        native = {lang: _score(features, prefix) for lang, features in _FEATURES.items()}
        with pure_python():
            assert {lang: _score(features, prefix) for lang, features in _FEATURES.items()} == native


PROSE_TEXT = "One sentence here. Another one, with a clause; and more words follow it. " * 12


def _pack_args(engine: Engine, budget_edges: int = 6) -> tuple[object, ...]:
    """Arguments for native.pack over the first few word edges of PROSE_TEXT."""
    from sdk.chunking._engine import RawChunk, _meta
    from sdk.chunking._prose import PROSE

    edges = array("q", [0, 19, 73, 146, len(PROSE_TEXT)][:budget_edges])
    template = PROSE.root(PROSE_TEXT)._replace(state=2)
    view = engine._encode(0, len(PROSE_TEXT))
    return (engine, edges, None, template, view, None, _meta(template), _meta, RawChunk, 1)


def _engine(budget: int = 12, cls: type[Engine] = Engine) -> Engine:
    return cls(PROSE_TEXT, budget, Sizer("o200k_base"))


def test_pack_packs_as_the_python_loop_does() -> None:
    assert NATIVE is not None
    for budget in (3, 12, 30, 200):
        native_engine = _engine(budget)
        NATIVE.pack(*_pack_args(native_engine), tables(PROSE_TEXT)[0])
        python_engine = _engine(budget)
        with pure_python():
            python_engine._pack(*_pack_args(python_engine)[1:6])
        spans = [(c.start, c.end, c.tokens, c.oversize, c.partial) for c in native_engine.out]
        assert spans == [(c.start, c.end, c.tokens, c.oversize, c.partial) for c in python_engine.out]
        assert spans and all(t <= budget or over for _s, _e, t, over, _p in spans)


def test_pack_rejects_what_the_engine_never_passes() -> None:
    assert NATIVE is not None
    args = list(_pack_args(_engine()))
    cache = tables(PROSE_TEXT)[0]
    cases: list[tuple[int, object, type[Exception], str]] = [
        (1, array("q", [0]), ValueError, "two edges"),
        (2, [PROSE_TEXT], ValueError, "disagree"),
        (2, [1, 2, 3, 4], TypeError, "Sections"),
        (3, ("too", "short"), TypeError, "Section"),
        (9, 7, ValueError, "no junction rule"),
        (1, "not edges", TypeError, "list of ints or a buffer"),
    ]
    for index, value, error, message in cases:
        bad = list(args)
        bad[index] = value
        if index == 2 and value == [1, 2, 3, 4]:
            bad[7] = lambda part: part  # so the parts reach the C check
        with pytest.raises(error, match=message):
            NATIVE.pack(*bad, cache)
    with pytest.raises(ValueError, match="byte per code point"):
        NATIVE.pack(*args, bytearray(10))
    with pytest.raises(IndexError):
        NATIVE.pack(*args[:1], array("q", [0, 10**6, 2 * 10**6]), *args[2:], cache)


def test_an_exception_from_a_count_or_a_placement_is_the_one_raised() -> None:
    assert NATIVE is not None

    class Boom(Exception):
        pass

    class CountFailsSizer(Sizer):
        __slots__ = ()

        def count(self, text: str) -> int:
            raise Boom

    class CountFails(Engine):
        """Its sizer fails to count (the pack re-counts the stretches at chunk edges by it)."""

        __slots__ = ()

        def __init__(self, text: str, budget: int, sizer: Sizer) -> None:
            super().__init__(text, budget, CountFailsSizer("o200k_base"))

    class PlaceFails(Engine):
        __slots__ = ()

        def _place(self, section: object, view: object, lead: object = None) -> None:
            raise Boom

    for cls in (CountFails, PlaceFails):
        engine = _engine(3, cls)
        with pytest.raises(Boom):
            NATIVE.pack(*_pack_args(engine), tables(PROSE_TEXT)[0])


def test_a_splitter_that_never_gets_smaller_ends_in_a_recursion_error_both_ways() -> None:
    """Each level of a descent is a C frame in the native pack: Python's recursion limit
    bounds them, as it bounds engine._place's, instead of the C stack."""
    from sdk.chunking._types import Section

    class ShedOne:
        def split(self, text: str, section: Section) -> list[Section]:
            # one character off the end per level: as deep as the text is long
            return [section._replace(end=section.end - 1), Section(section.end - 1, section.end)]

    text = "word " * 2000
    for native in (True, False):
        engine = Engine(text, 1, Sizer("o200k_base"))
        with contextlib.nullcontext() if native else pure_python(), pytest.raises(RecursionError):
            engine.run(Section(0, len(text), ShedOne()))


def test_a_part_past_the_end_of_the_text_is_an_index_error_not_a_read_past_it() -> None:
    """The native descent reads the text in place: a custom splitter's part that runs
    past the text is refused (found under AddressSanitizer by a review)."""
    from sdk.chunking._prose import PROSE
    from sdk.chunking._types import Section

    text = "word " * 4000
    n = len(text)

    class PastTheEnd:
        def split(self, t: str, s: Section) -> list[Section]:
            return [Section(0, 10, PROSE, 0), Section(10, n + 40_000, PROSE, 0)]

    with pytest.raises(IndexError, match="outside the text"):
        Engine(text, 20, Sizer("o200k_base")).run(Section(0, n, PastTheEnd()))


def test_a_part_that_is_not_a_section_is_a_type_error_not_a_read_past_it() -> None:
    """Parts handed to the native pack are checked before their states are read (a
    short tuple read past its end, found under AddressSanitizer by a review)."""
    from collections import namedtuple

    from sdk.chunking._types import Section

    text = "word " * 400
    n = len(text)
    short = namedtuple("short", "start end")

    class Short:
        def split(self, t: str, s: Section) -> list[object]:
            return [Section(0, 5), Section(5, 10), short(10, n)]

    with pytest.raises(TypeError, match="Sections"):
        Engine(text, 8, Sizer("o200k_base")).run(Section(0, n, Short()))


def test_split_edges_with_no_cut_leaves_the_section_whole_both_ways() -> None:
    """No edges to pack: the template is never read (Engine._place's rule)."""
    from sdk.chunking._types import Section

    class NoCut:
        def split_edges(self, t: str, s: Section) -> tuple[list[int], None]:
            return [], None

        def split(self, t: str, s: Section) -> list[Section]:  # pragma: no cover - not asked
            raise AssertionError("split_edges answered")

    class Top:
        def split(self, t: str, s: Section) -> list[Section]:
            return [Section(0, 100, NoCut(), 1), Section(100, s.end, NoCut(), 1)]

    text = "word " * 400
    runs = []
    for native in (True, False):
        with contextlib.nullcontext() if native else pure_python():
            out = Engine(text, 8, Sizer("o200k_base")).run(Section(0, len(text), Top()))
        runs.append([(c.start, c.end, c.tokens, c.oversize) for c in out])
    assert runs[0] == runs[1] and runs[0][0][:2] == (0, 100)


def test_one_part_that_refines_its_section_is_placed_in_its_stead_both_ways() -> None:
    """A splitter may hand back its section's span seen another way (another splitter,
    or its own in another type of state): the engine cuts that. The same span in the
    same splitter and type of state is not a cut: the section stays whole."""
    from sdk.chunking._prose import PROSE
    from sdk.chunking._types import Section

    class Refine:
        def split(self, t: str, s: Section) -> list[Section]:
            if isinstance(s.state, str):
                return [s._replace(splitter=PROSE, state=0, path="p")]
            return [s._replace(state="again")]

    class Same:
        def split(self, t: str, s: Section) -> list[Section]:
            return [s._replace(path="same")]

    text = "Some words here. " * 60
    want = [(c.start, c.end, c.tokens) for c in Engine(text, 16, Sizer("o200k_base")).run(PROSE.root(text))]
    for native in (True, False):
        with contextlib.nullcontext() if native else pure_python():
            got = Engine(text, 16, Sizer("o200k_base")).run(Section(0, len(text), Refine(), 0))
            whole = Engine(text, 16, Sizer("o200k_base")).run(Section(0, len(text), Same(), 0))
        assert [(c.start, c.end, c.tokens) for c in got] == want
        assert {c.first.path for c in got} == {"p"}
        assert [(c.start, c.end, c.oversize) for c in whole] == [(0, len(text), True)]


# (Switched off by SEAM_OFF, the native JSON split is never set up: these call it directly.)
NEEDS_JSON_SPLIT = pytest.mark.skipif(not _accel.on("json_split"), reason="json_split is switched off")


def _descend(doc: str, lines: bool = False) -> Iterator[object]:
    """Every section the JSON splitter cuts ``doc`` into, level by level (both paths'
    parts compared on the way down)."""
    from sdk.chunking._json import JSONSplitter, _root

    assert NATIVE is not None
    todo = [_root(doc, lines)]
    seen = 0
    while todo and seen < 400:
        section = todo.pop()
        splitter = section.splitter
        if not isinstance(splitter, JSONSplitter):
            continue
        seen += 1
        want = list(splitter._split(doc, section))
        got = NATIVE.json_split(splitter, doc, section)
        assert list(got) == want
        assert [type(s.state) for s in got] == [type(s.state) for s in want]
        yield section
        todo.extend(want)


PRETTY_JSON = (LOOSE_JSON | KEYED_JSON).map(lambda doc: json.dumps(json.loads(doc), indent=2))


@NEEDS_JSON_SPLIT
@given(doc=LOOSE_JSON | KEYED_JSON | PRETTY_JSON)
@settings(max_examples=300, deadline=None)
def test_json_split_makes_the_sections_the_python_split_makes(doc: str) -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert sum(1 for _ in _descend(doc)) >= 1
        # several values (numbered pointers) and a value cut short (containers still open)
        list(_descend(doc + "\n" + doc, lines=True))
        list(_descend(doc[: len(doc) // 2]))


@NEEDS_JSON_SPLIT
def test_json_split_takes_deep_containers_and_rejects_bad_calls() -> None:
    import warnings

    from sdk.chunking._json import JSONSplitter, _Value
    from sdk.chunking._types import Section

    assert NATIVE is not None
    deep = "[" * 70 + "1, 2" + "]" * 70
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        depths = {getattr(s.state, "depth", None) for s in _descend(deep)}
    assert 64 in depths  # flattened below depth 64 by the Python path
    splitter = JSONSplitter(Structure("[1]"))
    with pytest.raises(TypeError, match="section"):
        NATIVE.json_split(splitter, "[1]", (0, 3))
    outside = Section(0, 3, splitter, _Value(7, 8, 0, ""), "json")
    with pytest.raises(IndexError, match="outside the text"):
        NATIVE.json_split(splitter, "[1]", outside)
    with pytest.raises(TypeError, match="pointer"):
        NATIVE.json_split(splitter, "[1]", Section(0, 3, splitter, _Value(0, 3, 0, None), "json"))  # type: ignore[arg-type]
    # (a scalar is asked of the Python path, whose whitespace cuts find none here)
    scalar = Section(1, 2, splitter, _Value(1, 2, 1, "/0"), "json")
    assert list(NATIVE.json_split(splitter, "[1]", scalar)) == []


def _decoded_end(text: str) -> int | None:
    from sdk.chunking._json import _LENIENT

    try:
        return int(_LENIENT.raw_decode(text, 0)[1])
    except ValueError:
        return None


# Valid documents, then the same cut short or with one character put in or taken out
# (control characters, bad escapes, trailing commas, stray brackets and digits).
EDITS = st.sampled_from(
    ["", ",", "]", "}", "0", "\\", "\\u12", "\\x", '"', ":", "\x01", " ", "-", ".", "e", "tr"]
)


@given(doc=LOOSE_JSON | KEYED_JSON, edit=EDITS, data=st.data())
@settings(max_examples=500, deadline=None)
def test_json_value_end_agrees_with_the_decoder(doc: str, edit: str, data: st.DataObject) -> None:
    assert NATIVE is not None
    at = data.draw(st.integers(0, len(doc)))
    for text in (doc, doc[:at] + edit + doc[at:], doc[:at], doc[:at] + doc[at + 1 :]):
        want = _decoded_end(text)
        got = KERNELS.json_value_end(*_accel.units(text, keep=False), 0, len(text))
        assert got == (want if want is not None else got)
        assert (got >= 0) == (want is not None), text
        # Read within a window: the end within it, else -1 only where the whole text
        # fails too (-2: it needs more than the window).
        stop = data.draw(st.integers(0, len(text)))
        within = KERNELS.json_value_end(*_accel.units(text, keep=False), 0, stop)
        assert within == (_decoded_end(text[:stop]) if within >= 0 else within)
        if within == -1:
            assert want is None
        elif within == -2:
            assert stop < len(text) or want is None


def test_json_value_end_reads_any_depth_and_checks_its_arguments() -> None:
    assert NATIVE is not None
    deep = '{"a": ' * 100_000 + "[]" + "}" * 100_000
    assert KERNELS.json_value_end(*_accel.units(deep + " x", keep=False), 0, len(deep) + 2) == len(deep)
    assert KERNELS.json_value_end(*_accel.units(deep[:-1], keep=False), 0, len(deep)) == -2
    assert KERNELS.json_value_end(*_accel.units(" [1]", keep=False), 1, 99) == 4
    for pos, stop in ((-1, 3), (3, 2), (5, 9)):
        with pytest.raises(IndexError):
            KERNELS.json_value_end(*_accel.units("[1]", keep=False), pos, stop)


# Lines of JSON Lines: values, broken values, junk, leading zeros, a combining mark
# after a value, values running over several lines.
JSONL_LINES = st.lists(
    LOOSE_JSON
    | EDITS
    | st.sampled_from(["01", "[1,\n2]", '"a"\u0301', "{\n", "}", "tru", " ", "-", "1 2", "\ufeff[]"]),
    max_size=12,
)


@given(lines=JSONL_LINES, sep=st.sampled_from(["\n", "\r\n", " ", ""]))
@settings(max_examples=400, deadline=None)
def test_json_values_find_the_items_the_decoder_finds(lines: list[str], sep: str) -> None:
    from sdk.chunking._json import _lenient_items

    text = sep.join(lines)
    for as_lines in (True, False):
        got = _lenient_items(text, as_lines)
        with pure_python():
            want = _lenient_items(text, as_lines)
        assert got == want


# Sources with what the native walk must leave to Python or handle as Python does:
# non-ASCII names, strings and comments (character offsets from UTF-8 bytes), CRLF line
# ends and combining marks at token edges (snapped to clusters), comments gluing to
# definitions, decorators, long lines.
CODE_PIECES = st.sampled_from(
    [
        "def f(x):\n    return x\n",
        "# note\n",
        "# a comment about g\ndef g():\n    pass\n\n",
        "@dec\nclass Ünïcode:\n    '''Doc ü'''\n    x = 1  # trailing\n",
        "s = 'é\u0301' + \"日本語\"\r\n",
        "values = [1, 2, 3,\r\n    4, 5]\r\n",
        "x\u200d = 1\n",
        "if a:\n\tb = (c +\n\t     d)\n",
        "🇯🇵 = 'flag'\n",
        "\n\n",
    ]
)


@given(
    pieces=st.lists(CODE_PIECES, min_size=1, max_size=12),
    budget=st.integers(2, 40),
    language=st.sampled_from(["python", "javascript", "go"]),
)
@settings(max_examples=120, deadline=None)
def test_both_paths_chunk_generated_code_alike(pieces: list[str], budget: int, language: str) -> None:
    import warnings

    text = "".join(pieces)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        native = Chunker(budget).chunk(text, kind="code", language=language)
        with pure_python():
            pure = Chunker(budget).chunk(text, kind="code", language=language)
    assert native == pure
    assert "".join(c.text for c in native) == text


@pytest.mark.parametrize(
    "tail", [" 1 x\n2", "01\n", "\nx", "\n" + "[" * 3000 + "\n" + "]" * 3000 + "x\n5", "]"]
)
def test_values_deeper_than_the_recursion_limit_are_read_alike_by_both_paths(tail: str) -> None:
    import warnings

    from sdk.chunking._json import _lenient_items

    # The decoder recurses (RecursionError past the limit); the native scan and the
    # tokenizer do not: both paths take a deep value as they take a shallow one.
    text = "[" * 3000 + "]" * 3000 + tail
    for lines in (True, False):
        got = _lenient_items(text, lines)
        with pure_python():
            want = _lenient_items(text, lines)
        assert got == want
        assert got[0][0].json and got[0][0].end == 6000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        native = Chunker(2000).chunk(text, kind="json")
        with pure_python():
            pure = Chunker(2000).chunk(text, kind="json")
    assert native == pure


def test_json_values_take_many_values_on_one_line_in_one_search_for_its_end() -> None:
    assert NATIVE is not None
    # 20,000 values on one line: each looked for its line's end from itself, this took
    # seconds (quadratic); the values and their ends are those the decoder finds.
    text = '{"a":1} ' * 20_000 + "\n[2]"
    packed, stop = KERNELS.json_values(*_accel.units(text, keep=False), 0, True, 8, 1 << 20)
    found = array("q", packed)
    assert stop == len(text)
    assert len(found) == 2 * 20_001
    assert found[-4:-2].tolist() == [8 * 19_999, 8 * 19_999 + 7]
    # At most ``limit`` values a call, in machine integers of either width.
    packed, stop = KERNELS.json_values(*_accel.units(text, keep=False), 0, True, 4, 3)
    assert array("i", packed).tolist() == [0, 7, 8, 15, 16, 23] and stop == 23


@contextlib.contextmanager
def short_runs(run: int) -> Iterator[None]:
    """Containers of more than ``run`` members cut into runs first (both paths)."""
    from sdk.chunking import _json
    from sdk.chunking._jsontok import decode_key
    from sdk.chunking._types import Section

    assert NATIVE is not None
    saved = _json._RUN
    setup = (_json.JSONSplitter, _json._Value, _json._Prefix, _json._Run, Section, decode_key, _json._NO_OPEN)
    _json._RUN = run
    NATIVE.json_setup(*setup, run, _json._GAPS)
    try:
        yield
    finally:
        _json._RUN = saved
        NATIVE.json_setup(*setup, saved, _json._GAPS)


@given(doc=LOOSE_JSON | KEYED_JSON | PRETTY_JSON, run=st.integers(2, 4), budget=st.integers(1, 30))
@settings(max_examples=300, deadline=None)
def test_runs_of_members_are_cut_alike_by_both_paths(doc: str, run: int, budget: int) -> None:
    import warnings

    with short_runs(run), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert sum(1 for _ in _descend(doc)) >= 1
        list(_descend(doc + "\n" + doc, lines=True))
        native = Chunker(budget).chunk(doc, kind="json")
        with pure_python():
            pure = Chunker(budget).chunk(doc, kind="json")
    assert native == pure
    assert "".join(c.text for c in native) == doc


def _traced_chunking(text: str, kind: Literal["json", "jsonl"]) -> tuple[list[Chunk], int]:
    """The chunks of ``text`` at budget 64 and the peak of Python allocations made."""
    import tracemalloc
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunker = Chunker(64)
        chunker.chunk("[1]", kind=kind)
        tracemalloc.start()
        try:
            chunks = chunker.chunk(text, kind=kind)
            return chunks, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


@NEEDS_JSON_SPLIT
def test_a_large_array_is_cut_a_run_at_a_time() -> None:

    from sdk.chunking._json import _RUN, _root

    # 200,000 one-digit numbers: a section, value and pointer per member made at once
    # took 500 bytes a member (250 times the input); runs keep the peak near the chunks'.
    doc = "[" + "1," * 199_999 + "1]"
    root = _root(doc, False)
    top = NATIVE.json_split(root.splitter, doc, root)  # type: ignore[union-attr]
    assert len(top) == 2 + -(-200_000 // _RUN)  # the opening bracket, the runs, the closing one
    assert [s.path for s in top[1:3]] == ["/0", f"/{_RUN}"] and doc[top[-1].start :] == "]"
    members = NATIVE.json_split(root.splitter, doc, top[2])  # type: ignore[union-attr]
    assert [s.path for s in members[:2]] == [f"/{_RUN}", f"/{_RUN + 1}"] and len(members) == _RUN
    chunks, peak = _traced_chunking(doc, "json")
    assert "".join(c.text for c in chunks) == doc
    assert peak < 20 * len(doc)  # 250x before; the chunks returned take about 6x


@pytest.mark.parametrize("native", [True, False])
def test_a_run_that_would_fit_alone_first_fills_the_chunk_before_it(native: bool) -> None:
    import warnings

    # Runs of 4 numbers (about 8 tokens) fit a budget of 30 whole; packed as runs that
    # stay whole, a chunk ended where the next run did not fit (two or three runs a
    # chunk, about 20 tokens): flat, they pack as the members themselves do.
    doc = "[" + ", ".join(str(1000 + i) for i in range(300)) + "]"
    jsonl = "\n".join(str(1000 + i) for i in range(300))
    context = contextlib.nullcontext() if native else pure_python()
    with context, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with short_runs(10**6):
            want = Chunker(30).chunk(doc, kind="json"), Chunker(30).chunk(jsonl, kind="jsonl")
        with short_runs(4):
            got = Chunker(30).chunk(doc, kind="json"), Chunker(30).chunk(jsonl, kind="jsonl")
    assert got == want
    assert all(c.tokens >= 27 for c in got[0][:-1])


def test_many_top_level_values_are_cut_a_run_at_a_time() -> None:

    from sdk.chunking._json import _RUN, _root

    # 300,000 tiny values, a Python item, value, section and pointer each made at once
    # took 60 times the text (and "1\n" lines 250 times); kept as offsets and cut in
    # runs, the peak stays near what the chunks returned take.
    text = '{"a": 1} ' * 300_000
    root = _root(text, True)
    top = root.splitter.split(text, root)  # type: ignore[union-attr]
    size = -(-300_000 // _RUN)  # values a run: runs of runs of _RUN
    assert len(top) == _RUN and top[1].path == f"/{size}" and top[-1].end == len(text)
    runs = root.splitter.split(text, top[1])  # type: ignore[union-attr]
    assert [s.path for s in runs] == [f"/{size}", f"/{size + _RUN}"]
    values = root.splitter.split(text, runs[1])  # type: ignore[union-attr]
    assert [s.path for s in values] == [f"/{size + _RUN + i}" for i in range(size - _RUN)]
    assert values[0].start == runs[1].start and values[-1].end == runs[1].end
    chunks, peak = _traced_chunking(text, "jsonl")
    assert "".join(c.text for c in chunks) == text
    assert [c.path for c in chunks[:2]] == ["/0", f"/{chunks[0].text.count('{')}"]
    assert peak < 11 * len(text)  # 60x before; the chunks returned take about 5.5x


@pytest.mark.parametrize("native", [True, False])
def test_finishing_chunks_may_consume_the_engines_list(native: bool) -> None:
    from sdk.chunking._api import _finish
    from sdk.chunking._engine import RawChunk
    from sdk.chunking._types import Section

    text = "héllo wörld, and more"
    raw = [
        RawChunk(0, 6, 2, Section(0, 6, kind="text", path="/a")),
        RawChunk(6, len(text), 5, Section(6, len(text), kind="json", path="/b"), partial=True),
    ]
    context = contextlib.nullcontext() if native else pure_python()
    with context:
        kept = _finish(text, list(raw), 8)
        given = list(raw)
        consumed = _finish(text, given, 8, consume=True)
    assert consumed == kept and given == []
    assert [(c.text, c.byte_start, c.byte_end, c.path, c.partial) for c in consumed] == [
        ("héllo ", 0, 7, "/a", False),
        ("wörld, and more", 7, 23, "/b", True),
    ]


def test_the_pure_python_scan_slices_a_line_once_for_all_its_values() -> None:
    from sdk.chunking._json import _lenient_items, _LineEnds

    # A slice per value from each to its line's end was quadratic in a line's values.
    text = '{"a":1} ' * 5_000 + "\n[2]"
    ends = _LineEnds(text)
    first, base = ends.window_of(0, text.index("\n") + 1)
    again, same = ends.window_of(800, text.index("\n") + 1)
    assert again is first and same == base == 0
    assert ends.window_of(len(text) - 3, len(text))[1] == len(text) - 3
    with pure_python():
        items, note = _lenient_items(text, True)
    assert note is None and len(items) == 5_001 and items[4_999].start == 8 * 4_999


def test_a_file_of_broken_lines_keeps_its_fronts_as_offsets() -> None:
    import tracemalloc
    import warnings

    from sdk.chunking._json import _lenient_items

    # Every line broken (a leading zero): the readable front of each, "{", and the rest
    # of the line as text. A frozenset and a dict entry per front took 10 times the text.
    text = "".join(f'{{"id": {i:07d}, "ok": true}}\n' for i in range(20_000))
    tracemalloc.start()
    items, note = _lenient_items(text, True)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert note is not None and len(items) == 40_000
    assert items[2] == (28, 29, True, frozenset({28})) and items[3] == (29, 56, False, frozenset())
    assert held < 2 * len(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunks = Chunker(64).chunk(text, kind="jsonl")
    assert "".join(c.text for c in chunks) == text


MARKDOWN_LINE = st.lists(
    st.sampled_from(
        [
            " ",
            "   ",
            "    ",
            "\t",
            "#",
            "#######",
            "# x",
            "```",
            "~~~",
            "``",
            ">",
            "-",
            "*",
            "_",
            "+",
            "- ",
            "* * *",
            "===",
            "1.",
            "1)",
            "1234567890.",
            "\u0663.",
            "<a",
            "</b",
            "<!--",
            "<?",
            "<!D",
            "<!d",
            "|",
            "| --- |",
            ":--:",
            "-|",
            "--- ---",
            "a",
            "\u3000",
            "\x0c",
            "\u00e9",
            "\u0661",  # Arabic-Indic digit one: a regex's \\d, past ASCII
            "\uff12",  # fullwidth digit two
            "\U0001d7ce",  # mathematical bold digit zero (4 bytes a code point)
            "\u00b2",  # superscript two: a digit, not a decimal one
        ]
    ),
    max_size=5,
).map("".join)


@given(
    lines=st.lists(st.tuples(MARKDOWN_LINE, st.sampled_from(["\n", "\r\n", "\r"])), max_size=8),
    tail=st.sampled_from(["", "x", "|---|", "# h"]),
    data=st.data(),
)
@settings(max_examples=400, deadline=None)
def test_markdown_lines_are_classed_alike_by_both_paths(
    lines: list[tuple[str, str]], tail: str, data: st.DataObject
) -> None:
    from sdk.chunking._markdown import _line_flags_python

    assert NATIVE is not None
    text = "".join(a + b for a, b in lines) + tail
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(start, len(text)))
    headings = sorted(data.draw(st.sets(st.integers(0, len(text)), max_size=3)))
    got = _markdown._lines_of(text, start, end, array("q", headings))  # the kernel, decided
    want = _line_flags_python(text, start, end, frozenset(headings))
    assert (array("q", got[0]), got[1], got[2]) == want


@pytest.mark.parametrize(
    ("line", "listed"),
    [
        ("\u0661. one\n", True),
        ("\u0661\u0662) two\n", True),
        ("\uff11. fullwidth\n", True),
        ("\U0001d7cf. bold\n", True),
        ("1\u0662. mixed\n", True),
        ("\u00e9. not a digit\n", False),
        ("\u00b2. superscript\n", False),
        ("\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661\u0661. ten digits\n", False),
        ("   \u0661. indented\n", True),
    ],
)
def test_a_list_item_of_digits_past_ascii_is_decided_as_the_regex_does(line: str, listed: bool) -> None:
    """The kernel cannot tell Unicode's decimal digits on the limited API: it leaves such
    a line to Python, which decides it as the reference's regex does."""
    text = "para\n" + line
    got = _markdown._lines_of(text, 0, len(text), array("q"))
    want = _markdown._line_flags_python(text, 0, len(text), frozenset())
    assert (array("q", got[0]), got[1], got[2]) == want
    assert bool(got[1][1] & _markdown._F_LIST) is listed
    assert not any(f & _markdown._F_CHECK for f in got[1])


MARKDOWN_BLOCK = st.sampled_from(
    [
        "# Title",
        "## Sub",
        "Title\n=====",
        "Sub\n---",
        "- item",
        "  - nested",
        "1. first",
        "2) second",
        "> quote",
        "    code",
        "\tcode",
        "```python\ndef f():\n    return 1\n```",
        "~~~\nplain\n~~~",
        '```json\n{"a": [1, 2]}\n```',
        "```\nunclosed",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "***",
        "* * *",
        "<div>html</div>",
        "Plain text. Another sentence!",
        "",
        "---\ntitle: x\n---",
        "#hashtag",
        "+ plus",
        "text | pipe",
        "|---|",
        "   ### indented",
        "Para\nline two\n===",
        "- [ ] task",
        "   ",
        "\r",
    ]
)


@given(
    blocks=st.lists(MARKDOWN_BLOCK, min_size=1, max_size=14),
    sep=st.sampled_from(["\n", "\n\n", "\r\n"]),
    data=st.data(),
)
@settings(max_examples=300, deadline=None)
def test_markdown_blocks_are_found_alike_by_both_paths(
    blocks: list[str], sep: str, data: st.DataObject
) -> None:
    from sdk.chunking._markdown import MarkdownSplitter

    text = sep.join(blocks)
    splitter = MarkdownSplitter(text)
    starts = [*splitter._at]
    start = data.draw(st.sampled_from(starts))
    end = data.draw(st.sampled_from([s for s in starts if s >= start]))
    trail = data.draw(st.sampled_from([(), ("A",), ("A", "B")]))
    native = splitter._blocks(start, end, trail)
    with pure_python():
        pure = splitter._blocks(start, end, trail)
    assert native == pure
    if native:
        assert native[0].start == start and native[-1].end == end


@given(
    blocks=st.lists(MARKDOWN_BLOCK, min_size=1, max_size=20),
    sep=st.sampled_from(["\n", "\n\n", "\r\n"]),
    limit=st.integers(1, 4),
)
@settings(max_examples=300, deadline=None)
def test_markdown_blocks_scanned_in_runs_are_the_blocks_scanned_at_once(
    blocks: list[str], sep: str, limit: int
) -> None:
    """A scan limited to ``limit`` blocks stops only where a block starts whatever came
    before it: scanning again from there, run after run, finds the same blocks as one
    scan (the runs of a section with many blocks), on both paths."""
    from sdk.chunking._markdown import MarkdownSplitter

    text = sep.join(blocks)
    splitter = MarkdownSplitter(text)
    whole = splitter._blocks(0, len(text), ("A",))
    at, flags = splitter._lines(0, len(text))
    front = splitter._front_end(0, len(text))
    first = bisect.bisect_left(at, front) if front else 0
    runs: list[object] = []
    while whole:
        found = splitter._scan_blocks(at, flags, first, len(text), front, ("A",), limit)
        with pure_python():
            assert splitter._scan_blocks(at, flags, first, len(text), front, ("A",), limit) == found
        assert found and len(found) >= min(limit, len(whole) - len(runs))
        runs += found
        if found[-1].end >= len(text):
            break
        first, front = bisect.bisect_left(at, found[-1].end), 0
        assert not flags[first] & (_markdown._F_BLANK | _markdown._F_INDENTED)
    assert runs == whole


@pytest.mark.parametrize("native", [True, False])
def test_a_last_member_alone_joins_the_run_before_it(native: bool) -> None:
    import warnings

    from sdk.chunking._json import _runs

    assert _runs(9, 4) == [(0, 4), (4, 9)] and _runs(8, 4) == [(0, 4), (4, 8)]
    # Nine members in runs of four: a run of the last member alone was cut into that
    # member's pieces, and a string that does not fit came out whole, over the budget.
    doc = json.dumps([*range(1, 9), "A sentence of the last member. " * 40])
    context = contextlib.nullcontext() if native else pure_python()
    with context, short_runs(4), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunks = Chunker(30).chunk(doc, kind="json")
    assert "".join(c.text for c in chunks) == doc
    assert all(c.tokens <= 30 and not c.oversize for c in chunks)


def test_the_python_path_cuts_a_large_container_a_run_at_a_time_too() -> None:
    # Without the native module, every member of a large container was made (a child,
    # a value, a pointer and a section each) before the runs: 230 times the text.
    doc = "[" + "1," * 99_999 + "1]"
    keyed = "{" + ", ".join(f'"k{i}": [{i}]' for i in range(3_000)) + "}"
    with pure_python():
        chunks, peak = _traced_chunking(doc, "json")
        pure = Chunker(40).chunk(keyed, kind="json")
    native = Chunker(40).chunk(keyed, kind="json")
    assert "".join(c.text for c in chunks) == doc
    assert peak < 25 * len(doc)
    assert pure == native and pure[1].path.startswith("/k")


def test_each_thread_keeps_its_own_texts_units() -> None:
    import threading

    # Threads chunking other texts side by side must not take turns at one entry (each
    # would copy its text again, and fill its tables again, at every call).
    mine, other = "\u00e9" * 10, "\u4e00" * 10
    _accel.forget()
    _accel.units(mine)
    seen: list[object] = []

    def elsewhere() -> None:
        _accel.units(other)
        tables(other)
        seen.append(_accel.call.last and _accel.call.last[0])
        seen.append(_accel.call.filled)

    thread = threading.Thread(target=elsewhere)
    thread.start()
    thread.join()
    assert seen == [other, other]
    assert _accel.call.last is not None and _accel.call.last[0] is mine and _accel.call.filled is None
    _accel.forget()


def test_json_children_and_close_refuse_what_is_not_there() -> None:
    """Hostile calls get a ValueError or offsets inside the text, never a read outside it."""
    assert KERNELS is not None
    for text in ('{"a": [1, "b]"]}', "".join(['{"é": [1, "字]"]}'])):
        for units, kind in (_accel.units(text, keep=False), (text, _accel.STR_KIND)):
            assert KERNELS.json_close(units, kind, 0) == len(text) - 1
            assert KERNELS.json_close(units, kind, 6) == len(text) - 2
            with pytest.raises(ValueError):
                KERNELS.json_close(units, kind, 1)  # not a bracket
            for pos in (-1, len(text), 10**9):
                with pytest.raises(ValueError):
                    KERNELS.json_close(units, kind, pos)
            with pytest.raises(ValueError, match="outside"):
                KERNELS.json_children(units, kind, 1, len(text) + 1, True, 4)
            with pytest.raises(ValueError, match="outside"):
                KERNELS.json_children(units, kind, -1, len(text), True, 4)
            assert KERNELS.json_children(units, kind, 1, 1, True, 4) == b""
            with pytest.raises(ValueError):
                KERNELS.json_children(units, kind, 2, len(text), True, 4)  # no key there
    for cut in ("[", "[1,", '["a', "[[]", '{"a" 1}', '{"a":'):
        if cut != '{"a" 1}':  # (balanced, though no JSON)
            with pytest.raises(ValueError, match="unbalanced"):
                KERNELS.json_close(cut, 0, 0)
        # (a text cut short is not validated JSON: whatever comes back lies inside it)
        try:
            got = array("q", KERNELS.json_children(cut, 0, 1, len(cut), cut[0] == "{", 8))
        except ValueError:
            continue
        assert len(got) % 6 == 0 and all(0 <= v <= len(cut) for v in got)
