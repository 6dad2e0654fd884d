"""Chunks keep their first part's metadata, not its parse: a Markdown document's fenced
blocks each carry a syntax tree, which must not stay alive for every chunk."""

from __future__ import annotations

import tracemalloc

import pytest

from sdk.chunking import Chunker, _accel
from tests.corpus import corpus_files
from tests.invariants import check_chunks


def peak_per_byte(text: str, warm: str | None = None, kind: str = "markdown") -> float:
    """The peak of Python allocations while chunking ``text`` at budget 64, a byte of it,
    after chunking ``warm`` (grammars, tables and the level scans' caches are made at
    their first use: not measured)."""
    chunker = Chunker(64)
    if warm is None:
        warm = "# a\n\nText. Text 日本語。\n\n| a | b |\n|---|---|\n\n- a\n- b\n\n" * 40
    chunker.chunk(warm, kind=kind)
    tracemalloc.start()
    try:
        chunks = chunker.chunk(text, kind=kind)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    check_chunks(text, chunks, 64)
    return peak / len(text.encode("utf-8"))


def test_a_megabyte_of_markdown_peaks_under_eight_times_its_size() -> None:
    md = "".join(cf.read() for cf in corpus_files(("markdown",)))
    text = (md * (1_000_000 // len(md) + 1))[:1_000_000]
    # (12x while chunks held their sections' parses)
    assert peak_per_byte(text, warm=text[:10_000]) < 8


def test_a_paragraph_of_one_character_parts_is_cut_as_offsets() -> None:
    # A section that is one paragraph is handed to the engine as that paragraph, whose
    # cuts stay plain offsets: a Section per "|" held about 200 bytes a character.
    assert peak_per_byte("|" * 200_000) < 30


def test_a_list_of_tiny_items_and_a_long_table_are_cut_as_offsets() -> None:
    # A list's items and a table's rows are plain offsets from the document's index of
    # lines (82 and 69 bytes a character before, with a span per line and a Section per
    # item).
    assert peak_per_byte("- a\n\n" * 40_000) < 25
    assert peak_per_byte("a|b\n|-|\n" * 25_000) < 25


def test_runs_of_tiny_headings_peak_a_bounded_multiple_of_their_size() -> None:
    # The document's headings are arrays (titles read when asked), and more than 513
    # sibling sections are handed in flat runs: a _Heading, a Section, a state and a
    # trail per heading held 110 bytes a character of setext or "# t\r" headings.
    assert peak_per_byte("a\n=\n" * 50_000) < 30
    assert peak_per_byte("# t\r" * 50_000) < 30
    assert peak_per_byte("# h\n## h\n###### h\n" * 10_000) < 20


def test_sections_of_many_tiny_blocks_peak_a_bounded_multiple_of_their_size() -> None:
    # More than 512 blocks are handed in flat runs, each cut into its blocks only when
    # it must be: a Section per block held 63-112 bytes a character of these.
    for block in ("a\n\n", "> q\n\n", "***\n\n", "<p>\n\n", "    x\n\ny\n\n"):
        assert peak_per_byte(block * (200_000 // len(block))) < 25, block


def test_a_run_of_empty_fences_peaks_a_bounded_multiple_of_its_size() -> None:
    # The document's fences are four offsets each (a _Fence made when a block asks):
    # a _Fence and its opening line's tuple per fence held 26 bytes a character.
    assert peak_per_byte("```\n" * 50_000) < 25
    assert peak_per_byte("~~~ py\nx\n~~~\n" * 15_000) < 25


def test_a_fence_cut_by_prose_rules_is_cut_as_offsets() -> None:
    # A line of backticks is a fence with no body: the fence seen as prose is placed in
    # its stead, so its cuts stay offsets (a Section per backtick: 196 bytes a byte).
    assert peak_per_byte("`" * 200_000) < 30


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(
    ("text", "before"),
    [
        # bytes of Python a byte at 300 KB before (now 4.2-4.5, 4.4-10.9 without the
        # native passes): the body's parts were a Section, a shifted Section and its
        # state per word or sentence
        ("```\n" + "word " * 60_000 + "\n```\n", 96),
        ("```\n" + "some words here and there\n" * 11_500 + "```\n", 21),
        ("~~~text\n" + "A sentence, and a clause. " * 11_500 + "\n~~~\n", 21),
    ],
    ids=["one line", "lines", "sentences"],
)
def test_a_fence_body_cut_at_words_is_cut_as_offsets(
    text: str, before: int, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    assert peak_per_byte(text) < 14 < before
