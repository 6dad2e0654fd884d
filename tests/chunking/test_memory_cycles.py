"""Chunking leaves no reference cycles behind: what it built is freed as soon as the
last reference goes, not when the cyclic collector next runs (a document's Markdown
splitter, with its line index and headings, was once in a cycle with its tables'
splitter)."""

from __future__ import annotations

import gc

import pytest

from sdk.chunking import Chunker

DOCS = {
    "markdown": "# T\n\nText here.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- a\n- b\n\n```py\nx = 1\n```\n"
    * 40,
    "json": '{"a": [1, 2, {"b": "text here"}], "c": "more"}\n' * 200,
    "jsonl": '{"a": 1, "b": "text"}\n' * 300,
    "code": "def f(x):\n    return x + 1\n\n\nclass C:\n    def g(self):\n        pass\n" * 60,
    "text": "Some words here. More words there, and a clause. 日本語の文。\n\n" * 80,
}


@pytest.mark.parametrize("kind", sorted(DOCS))
def test_chunking_leaves_no_cyclic_garbage(kind: str) -> None:
    chunker = Chunker(16)
    text = DOCS[kind]
    filename = "x.py" if kind == "code" else None
    chunker.chunk(text, kind=kind, filename=filename)  # grammars and tables loaded
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        chunks = chunker.chunk(text, kind=kind, filename=filename)
        assert chunks
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
