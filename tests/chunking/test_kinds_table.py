"""The chunking kinds live in one explicit table (``sdk.chunking._kinds.ROOTS``): what
``chunk(kind=...)`` accepts is exactly its keys, and no kind depends on a module having
been imported for its side effects."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sdk.chunking import chunk
from sdk.chunking._kinds import KINDS, ROOTS


def test_every_kind_of_the_table_chunks_and_no_other_is_taken() -> None:
    assert KINDS == ("auto", "text", "markdown", "code", "json", "jsonl")
    samples = {
        "auto": "# Title\n\nSome text.\n",
        "text": "One sentence. Another one.",
        "markdown": "# Title\n\n```python\nx = 1\n```\n",
        "code": "def f():\n    return 1\n",
        "json": '{"a": [1, 2, 3]}',
        "jsonl": '{"a": 1}\n{"b": 2}\n',
    }
    for kind in KINDS:
        text = samples[kind]
        got = chunk(text, max_tokens=8, kind=kind, language="python" if kind == "code" else None)
        assert "".join(c.text for c in got) == text, kind
    with pytest.raises(ValueError, match="expected one of auto, text, markdown, code, json, jsonl"):
        chunk("x", max_tokens=8, kind="yaml")


def test_the_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        ROOTS["yaml"] = ROOTS["text"]  # type: ignore[index]


def test_markdown_fences_are_cut_by_their_language_in_a_fresh_process() -> None:
    """A fence of Python inside Markdown is cut by the code rules with nothing imported
    but the public API (the kinds no longer register themselves on import)."""
    code = (
        "from sdk.chunking import chunk\n"
        "body = 'def a():\\n    return 1\\n\\n\\ndef b():\\n    return 2\\n'\n"
        "text = '# T\\n\\n```python\\n' + body + '```\\n'\n"
        "got = chunk(text, max_tokens=12, kind='markdown')\n"
        "print(sorted({c.language for c in got if c.language}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "python" in out
