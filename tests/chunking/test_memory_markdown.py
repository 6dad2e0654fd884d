"""Chunks keep their first part's metadata, not its parse: a Markdown document's fenced
blocks each carry a syntax tree, which must not stay alive for every chunk."""

from __future__ import annotations

import tracemalloc

from sdk.chunking import Chunker
from tests.corpus import corpus_files


def test_a_megabyte_of_markdown_peaks_under_eight_times_its_size() -> None:
    md = "".join(cf.read() for cf in corpus_files(("markdown",)))
    text = (md * (1_000_000 // len(md) + 1))[:1_000_000]
    size = len(text.encode("utf-8"))
    chunker = Chunker(64)
    chunker.chunk(text[:10_000], kind="markdown")  # grammars and tables loaded before measuring
    tracemalloc.start()
    try:
        chunks = chunker.chunk(text, kind="markdown")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert chunks
    assert peak < 8 * size, peak / size  # 12x while chunks held their sections' parses
