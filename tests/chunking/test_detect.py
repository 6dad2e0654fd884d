"""kind="auto": one cheap decision per input, explicit hints first."""

from __future__ import annotations

import warnings

import pytest

from sdk.chunking import Chunker, chunk, detect_kind
from tests.corpus import corpus_files
from tests.invariants import check_chunks

PY = "import os\n\n\ndef main():\n    print(os.getcwd())\n\n\nif __name__ == '__main__':\n    main()\n"


@pytest.mark.parametrize(
    ("text", "kw", "kind"),
    [
        ('{"a": [1, 2, {"b": "c"}]}', {}, "json"),
        ('{"a": 1}\n{"a": 2}\n{"a": 3}\n', {}, "jsonl"),
        ("#!/usr/bin/env python3\nprint('hi')\n", {}, "code"),
        (PY, {}, "code"),
        ("anything", {"filename": "main.go"}, "code"),
        ("anything", {"filename": "data.ndjson"}, "jsonl"),
        ("anything", {"filename": "notes.txt"}, "text"),
        ("anything", {"filename": "README.md"}, "markdown"),
        ("anything", {"language": "rust"}, "code"),
        ("# Title\n\nSome text.\n\n## Usage\n\n```python\nprint(1)\n```\n\n- item\n- item\n", {}, "markdown"),
        ("これは普通の文章です。コードではありません。\n\n第二段落です。", {}, "text"),
    ],
)
def test_detect_kind(text: str, kw: dict[str, str], kind: str) -> None:
    assert detect_kind(text, **kw)[0] == kind


def test_prose_about_code_stays_prose() -> None:
    text = (
        "このメモでは Python の asyncio と trio で動くクライアントを def や import を使って説明する。"
        "読み取りループは await で待ち、return で結果を返す。\n\n"
        "  def 受信(データ: bytes) -> list[bytes]:\n      return []\n\n"
        "最後にテストについて書く。入力を一度に全部渡した場合と"
        "一バイトずつ渡した場合で結果は同じでなければならない。" * 3
    )
    assert detect_kind(text)[0] == "text"


def test_auto_chunks_every_corpus_file_losslessly() -> None:
    for cf in corpus_files():
        text = cf.read()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chunks = Chunker(64).chunk(text, kind="auto", filename=cf.path.name)
        check_chunks(text, chunks, 64)


def test_auto_uses_the_chosen_rules() -> None:
    got = chunk(PY * 20, max_tokens=40, kind="auto")
    assert {c.kind for c in got} == {"code"}
    assert got[0].language == "python"
