"""Work and memory grow linearly with the input, on ordinary text and on the shapes
that used to cost quadratic time or gigabytes: a run of terminals with no space after
it, a CSV row of empty fields, flags (regional indicators), millions of identifier
characters, CJK without punctuation, a run of brackets.

Measured by operation counts, never by the clock: the characters handed to the encoder
per input character must not grow with the input, and ``tracemalloc``'s peak stays a
small multiple of the input's size. A run of brackets (which kinsoku glues) is cut
once it is longer than ``KINSOKU_RUN_MAX`` graphemes, instead of being one oversize unit.
"""

from __future__ import annotations

import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from sdk.chunking import Chunk, Chunker, _code, _engine, _prose
from tests.corpus import corpus_files
from tests.invariants import check_chunks, watch_encoder

SHAPES: dict[str, Callable[[int], str]] = {
    "terminals": lambda n: "see" + "!" * n + "x",
    "csv": lambda n: "a" + "," * n + "\n",
    "flags": lambda n: "\U0001f1ef\U0001f1f5\U0001f1eb\U0001f1f7" * (n // 4),
    "identifier": lambda n: "a" * n,
    "hex": lambda n: "0123456789abcdef" * (n // 16),
    "cjk": lambda n: "日本語の文章を書きます" * (n // 11),
    "brackets": lambda n: "[" * n,
    "prolonged marks": lambda n: "ー" * n,
}


def _encoded_per_char(text: str, budget: int = 64) -> float:
    chunker = Chunker(budget)
    seen = [0]

    def counting(s: str) -> None:
        seen[0] += len(s)

    watch_encoder(chunker.sizer, counting)
    chunks = chunker.chunk(text, kind="text")
    assert "".join(c.text for c in chunks) == text
    assert all(c.tokens <= budget or c.oversize for c in chunks)
    return seen[0] / len(text)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_encoder_work_per_character_does_not_grow(shape: str) -> None:
    small = _encoded_per_char(SHAPES[shape](1 << 15))
    large = _encoded_per_char(SHAPES[shape](1 << 18))
    assert large <= 8, (shape, large)  # each character is encoded a bounded number of times
    assert large <= small * 1.25 + 0.1, (shape, small, large)


def test_a_run_of_terminals_is_one_match_of_each_level_pattern() -> None:
    """The sentence and clause patterns take a run of terminals with no space after it
    as one match and never give it back, so no position of the run is scanned twice."""
    text = "see" + "!" * 100_000 + "x"
    assert [m.span() for m in _prose._SENTENCE.finditer(text)] == [(3, 100_003)]
    text = "a" + "," * 100_000 + "\n"
    assert [m.span() for m in _prose._CLAUSE.finditer(text)] == [(1, 100_001)]


def test_a_run_of_brackets_is_cut_not_one_oversize_unit() -> None:
    text = "[" * 5000
    chunks = Chunker(64).chunk(text, kind="text")
    check_chunks(text, chunks, 64)
    assert len(chunks) > 1
    assert not any(c.oversize for c in chunks)


def test_kinsoku_glues_runs_up_to_the_bound() -> None:
    run = _prose.KINSOKU_RUN_MAX
    # A run within the bound stays glued: no chunk ends with an opening bracket.
    text = ("「" * (run - 1) + "あい。") * 3
    chunks = Chunker(1).chunk(text, kind="text")
    check_chunks(text, chunks, 1)
    assert not any(c.text.endswith("「") for c in chunks[:-1])
    # A longer run is cut every KINSOKU_RUN_MAX graphemes, never inside a grapheme.
    text = "ー\u0301" * (5 * run)
    chunks = Chunker(1).chunk(text, kind="text")
    check_chunks(text, chunks, 1)
    assert max(len(c.text) for c in chunks) == 2 * run


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("kind", ["text", "markdown", "json", "code"])
def test_a_run_of_clusters_ending_in_a_joiner_is_bounded_like_kinsoku(
    kind: str, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    r"""A cluster that ends with a zero-width joiner (``a\u200d``: \X ends it there) is
    not cut after, up to KINSOKU_RUN_MAX clusters; a longer run is cut every
    KINSOKU_RUN_MAX clusters (it was one chunk of 20,000 tokens at budget 64), and the
    joiner's emoji and Indic sequences, one cluster each, are never cut."""
    if not native:
        monkeypatch.setattr("sdk.chunking._accel.native", None)
        monkeypatch.setattr("sdk.chunking._accel.kernels", None)
    run = _prose.KINSOKU_RUN_MAX
    language = "python" if kind == "code" else None
    short = ("a\u200d" * (run - 1) + " ") * 6
    chunks = Chunker(4).chunk(short, kind="text")
    check_chunks(short, chunks, 4)
    assert not [c.text for c in chunks[:-1] if c.text.endswith("\u200d")]
    for text in ("a\u200d" * 10_000, '["' + "x\u200d" * 3_000 + '"]'):
        for budget in (1, 64):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # not JSON, not Python: prose rules
                chunks = Chunker(budget).chunk(text, kind=kind, language=language)
            check_chunks(text, chunks, budget)
            assert max(len(_prose._GRAPHEME.findall(c.text)) for c in chunks) <= run + 1
            assert max(c.tokens for c in chunks) <= max(budget, 2 * run + 2)
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467" * 100
    chunks = Chunker(1).chunk(family, kind="text")
    check_chunks(family, chunks, 1)
    assert len(chunks) == 100


def _python_peak(text: str, kind: str) -> int:
    chunker = Chunker(64)
    chunker.chunk("warm up. 準備。\n\n" * 10, kind="text")  # lazy loads and caches, outside the measure
    tracemalloc.start()
    try:
        chunker.chunk(text, kind=kind)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("kind", "bound"), [("text", 10), ("json", 10), ("markdown", 16)])
def test_memory_is_a_small_multiple_of_the_input(kind: str, bound: int) -> None:
    group = {"text": "prose", "json": "json", "markdown": "markdown"}[kind]
    unit = (",\n" if kind == "json" else "\n\n").join(cf.read().strip() for cf in corpus_files((group,)))
    sep = ",\n" if kind == "json" else "\n\n"
    text = sep.join([unit] * max(1, (1 << 20) // len(unit.encode())))
    if kind == "json":
        text = "[" + text + "]"
    size = len(text.encode("utf-8"))
    # Chunks returned included (their text is a copy of the input). Markdown keeps line
    # spans and block sections of the sections it opens, and is not yet within 10.
    assert _python_peak(text, kind) <= bound * size


def _longest_encode(text: str, budget: int) -> tuple[int, list[Chunk]]:
    chunker = Chunker(budget)
    longest = [0]

    def counting(s: str) -> None:
        longest[0] = max(longest[0], len(s))

    watch_encoder(chunker.sizer, counting)
    chunks = chunker.chunk(text, kind="text")
    return longest[0], chunks


@pytest.mark.parametrize("shape", ["identifier", "brackets", "cjk", "prolonged marks"])
def test_one_long_piece_is_encoded_in_bounded_segments(shape: str) -> None:
    """A run with no position where the pre-tokenizer must cut is one piece for tiktoken,
    which then takes about 50 bytes a byte: it is encoded a segment at a time, and the
    counts that cross a seam between segments are made afresh (exact, as ever)."""
    text = SHAPES[shape](3 * _engine._SEGMENT + 12345)
    longest, chunks = _longest_encode(text, 64)
    check_chunks(text, chunks, 64)
    assert longest <= _engine._SEGMENT * 5 // 4, longest


def test_counts_across_a_seam_are_exact_at_a_large_budget() -> None:
    # Words, with runs of 1250 letters (no additive position in them, and a period that
    # does not divide the segment lengths) where the first segment would end: it ends
    # at a seam, mid-run, where the tokens of two encodes differ from those of one.
    # Budget 3000: a chunk holds a whole run and crosses the seam, and its count must be
    # made afresh to be exact.
    # The text is longer than 3000 tokens of the longest token could cover, so it is
    # not counted whole (a seamed section that might fit is, once).
    chunker = Chunker(3000)
    words = "word and words " * ((3000 * chunker.sizer.max_token_chars + 3 * _engine._SEGMENT) // 15)
    letters = ("abcdefg" * 200)[:1250]
    text = words
    for at in (_engine._PIECE_SEGMENT - 50, _engine._SEGMENT - 50):
        text = text[:at] + letters + text[at + len(letters) :]
    view = _engine.Engine(text, 3000, chunker.sizer)._encode(0, len(text))
    assert view.seams and view.seams[0] == _engine._PIECE_SEGMENT
    longest, chunks = _longest_encode(text, 3000)
    check_chunks(text, chunks, 3000)
    assert longest <= _engine._SEGMENT * 5 // 4
    assert any(c.start < view.seams[0] < c.end for c in chunks)


def _python_source(size: int) -> str:
    """Real Python source the project did not write: hypothesis's, as installed."""
    import hypothesis

    files = sorted(Path(hypothesis.__file__).parent.rglob("*.py"))[:40]
    unit = "\n\n".join(p.read_text(encoding="utf-8") for p in files)
    return "\n\n".join([unit] * max(1, size // len(unit.encode())))


@pytest.mark.parametrize(
    ("shape", "make", "kind"),
    [
        ("flags", SHAPES["flags"], "text"),
        ("brackets", SHAPES["brackets"], "text"),
        ("python source", _python_source, "code"),
    ],
)
def test_memory_within_eight_times_the_input(
    shape: str, make: Callable[[int], str], kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A section cut at every grapheme (flags: a part every 8 bytes) keeps its part
    edges, offsets and token prefixes as 8-byte machine integers, the token ends as
    4-byte ones, and the engine's memos are bounded; code keeps one window's syntax tree
    at a time. Python lists of them took 20 bytes per byte of flags, and code 9."""
    # (One window's syntax tree, about 20 bytes a byte of the window, is a fixed cost:
    # the first window is pinned at 128 KiB, so the bound does not move with its size.)
    monkeypatch.setattr(_code, "_WINDOW_BYTES", 1 << 17)
    text = make(1 << 22 if kind == "code" else 1 << 21)
    size = len(text.encode("utf-8"))
    chunker = Chunker(64)
    chunker.chunk("warm up. 準備。\n\n" * 10, kind="text")
    chunker.chunk("def f():\n    return 1\n", kind="code", filename="warm.py")
    tracemalloc.start()
    try:
        chunks = chunker.chunk(text, kind=kind, filename="big.py" if kind == "code" else None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "".join(c.text for c in chunks) == text
    assert all(c.tokens <= 64 and not c.oversize for c in chunks)
    assert peak <= 8 * size, (shape, peak / size)
