"""A level of thousands of sibling groups (an array literal, a long argument list, a
file of small functions) is handed to the engine as flat runs of groups, made into
sections only when one must be cut: a Section and its state per group took 160 bytes
and more per byte of a long array of small numbers."""

from __future__ import annotations

import tracemalloc
import warnings

import pytest

import sdk.chunking._code as code
from sdk.chunking import Chunk, Chunker, ChunkingWarning, _accel
from sdk.chunking._code import CodeSplitter, code_root
from tests.invariants import check_chunks

SHAPES = {
    "array": ("javascript", "x = [" + "1, " * 6_000 + "1];\n"),
    "arguments": ("python", "f(" + "a, " * 6_000 + "a)\n"),
    "sum": ("javascript", "x = a" + " + a" * 6_000 + ";\n"),
    "functions": ("go", "package p\n" + "func f() {}\n" * 3_000),
    "cases": ("c", "void f(int x) {\n  switch (x) {\n" + "  case 1: y(); break;\n" * 2_000 + "  }\n}\n"),
    "methods": ("ruby", "class A\n" + "  def f; end\n" * 3_000 + "end\n"),
}


def _seams(text: str, language: str) -> set[int]:
    """Every offset where a node starts or ends (the text is ASCII)."""
    splitter = code_root(text, language).splitter
    assert isinstance(splitter, CodeSplitter) and splitter.tree is not None
    seams = set()
    todo = [splitter.tree.root_node]
    while todo:
        node = todo.pop()
        seams.update((node.start_byte, node.end_byte))
        todo.extend(node.children)
    return seams


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_runs_cut_where_the_level_cuts(monkeypatch: pytest.MonkeyPatch, name: str, native: bool) -> None:
    """With runs of 8 groups, chunks still start only at a node's edge or the whitespace
    after one, and pack as full: a run's first groups fill the chunk before it. (Where a
    chunk that ends a cut run is full by the estimate, the whitespace after the run opens
    the next chunk instead of ending that one, so a cut may move by a group.)"""
    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    language, text = SHAPES[name]
    assert text.isascii()
    seams = _seams(text, language)
    for budget in (16, 64, 256):
        monkeypatch.setattr(code, "_RUN", 1 << 30)
        whole = Chunker(budget).chunk(text, language=language)
        monkeypatch.setattr(code, "_RUN", 8)
        runs = Chunker(budget).chunk(text, language=language)
        check_chunks(text, runs, budget)
        assert all(c.start in seams or text[c.start].isspace() for c in runs)
        assert len(runs) <= len(whole) * 1.01 + 1
        # The definition paths are the level's.
        assert {c.path for c in runs} == {c.path for c in whole}


def _peak(text: str, language: str) -> int:
    chunker = Chunker(64)
    chunker.chunk(text[:2_000], language=language)  # grammar and tables loaded first
    tracemalloc.start()
    try:
        chunks: list[Chunk] = chunker.chunk(text, language=language)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "".join(c.text for c in chunks) == text
    return peak


def test_runs_keep_a_wide_level_light(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "x = [" + "1, " * 40_000 + "1];\n"  # 120 KB: one parse, one level of 80,000 nodes
    monkeypatch.setattr(code, "_RUN", 1 << 30)
    without = _peak(text, "javascript")
    monkeypatch.setattr(code, "_RUN", 512)
    with_runs = _peak(text, "javascript")
    # (About 480 bytes a byte without runs, 320 with: the rest is tree-sitter's tree,
    # 180 bytes a byte here, and a node object per child.)
    assert with_runs < 0.75 * without


@pytest.mark.parametrize("native", [True, False])
def test_runs_snapped_to_a_cluster_keep_every_character(
    monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    """A run whose end fell inside a CRLF was moved to the cluster's end while its own
    offsets were not: the character moved in was in no chunk ("\\r\\n/*" repeated lost
    one "\\n" a run)."""
    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    monkeypatch.setattr(code, "_LEX_PER_BYTE", 1 << 40)  # parsed, however slowly it lexes
    monkeypatch.setattr(code, "_RUN", 8)
    for text, language in (("\r\n/*" * 1_025, "typescript"), ("x;\r\n" * 3_000, "javascript")):
        for budget in (16, 64):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ChunkingWarning)
                chunks = Chunker(budget).chunk(text, language=language)
            check_chunks(text, chunks, budget)
