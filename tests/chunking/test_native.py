"""The native passes (``sdk/chunking/_native.c``) against their pure-Python fallbacks.

The extension is optional for users (an install without a C compiler goes on without
it), so both paths must give the same results: each native function is checked against
its fallback on generated input, and whole corpora are chunked both ways.
"""

from __future__ import annotations

import contextlib
import json
import re
from array import array
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk.chunking import Chunker, _accel
from sdk.chunking._engine import Engine, Sizer
from sdk.chunking._jsontok import Structure
from sdk.chunking._junctions import char_class
from tests.corpus import BUDGETS, CorpusFile, corpus_files

NATIVE = _accel.native


def test_the_native_module_is_built() -> None:
    # A machine with a C compiler (every machine the project's tests run on) builds it;
    # without it, every test below would compare the fallback with itself.
    assert NATIVE is not None


@contextlib.contextmanager
def pure_python() -> Iterator[None]:
    """The native passes switched off (every caller reads ``_accel.native`` per call)."""
    _accel.native = None
    try:
        yield
    finally:
        _accel.native = NATIVE


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
    assert NATIVE.char_ends("abc", [0, 1], lengths, 0, False) == array("i", [1, 3]).tobytes()
    with pytest.raises(ValueError, match="outside the table"):
        NATIVE.char_ends("abc", [0, 3], lengths, 0, False)
    with pytest.raises(ValueError, match="outside the table"):
        NATIVE.char_ends("abc", [-1], lengths, 0, False)
    with pytest.raises(TypeError):
        NATIVE.char_ends("abc", [0, "1"], lengths, 0, False)
    with pytest.raises(ValueError, match="4-byte"):
        NATIVE.char_ends("abc", [0], b"\x01\x00\x00", 0, False)
    with pytest.raises(OverflowError):
        NATIVE.char_ends("abc", [0], lengths, (1 << 31) - 1, False)
    # ends past the text stop at its end; a tuple of ids is taken as well as a list
    assert NATIVE.char_ends("ab", (2, 2), lengths, 10, True) == array("q", [12, 12]).tobytes()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\[]{}字\n', max_size=6),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='k"[}\\', max_size=3), inner, max_size=4)
    ),
    max_leaves=30,
)


def _python_close(text: str, start: int) -> tuple[int, dict[int, int]]:
    structure = Structure(text)
    with pure_python():
        return structure.close_of(start), structure._close


@given(value=JSON_VALUES, indent=st.sampled_from([None, 1]))
@settings(max_examples=300, deadline=None)
def test_close_brackets_match_the_regex_scan(value: object, indent: int | None) -> None:
    assert NATIVE is not None
    text = json.dumps(value, indent=indent, ensure_ascii=False)
    for m in re.finditer(r"[\[{]", text):
        # (a bracket inside a string is not a container: both scans see it as text, and
        # neither is asked about it, but both must agree on the real ones)
        probe = Structure(text)
        try:
            want, want_map = _python_close(text, m.start())
        except ValueError:
            with pytest.raises(ValueError, match="unbalanced"):
                NATIVE.close_brackets(text, m.start(), {})
            continue
        got_map: dict[int, int] = {}
        assert NATIVE.close_brackets(text, m.start(), got_map) == want
        assert got_map == want_map
        assert probe.close_of(m.start()) == want


@pytest.mark.parametrize(
    "text",
    ['["a', '{"a": "b]', "[[]", '["\\"]', "[", '["a\\', "x[]"],
)
def test_close_brackets_reject_unclosed_containers_as_the_regex_scan_does(text: str) -> None:
    assert NATIVE is not None
    start = text.index("[") if "[" in text else text.index("{")
    if text.startswith("x"):
        start = 0  # not an opening bracket at all
    with pytest.raises(ValueError, match="unbalanced"):
        NATIVE.close_brackets(text, start, {})
    if not text.startswith("x"):
        with pytest.raises(ValueError, match="unbalanced"):
            _python_close(text, start)


def test_close_brackets_takes_deep_nesting() -> None:
    assert NATIVE is not None
    depth = 100_000
    text = "[" * depth + "]" * depth
    close: dict[int, int] = {}
    assert NATIVE.close_brackets(text, 0, close) == 2 * depth - 1
    assert len(close) == depth and close[depth - 1] == depth


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


def test_forward_and_backward_reject_positions_outside_the_text() -> None:
    assert NATIVE is not None
    with pytest.raises(IndexError):
        NATIVE.forward("ab", 2, 1, char_class)
    with pytest.raises(IndexError):
        NATIVE.backward("ab", -1, 2, char_class)
    with pytest.raises(ValueError, match="no junction rule"):
        NATIVE.forward("ab", 1, 3, char_class)
    with pytest.raises(ValueError, match="junction classes"):
        NATIVE.forward("a\U000e0100b", 1, 1, lambda ch: 9)
    with pytest.raises(ZeroDivisionError):
        NATIVE.backward("a\U000e0101b", 2, 1, lambda ch: 1 // 0)
