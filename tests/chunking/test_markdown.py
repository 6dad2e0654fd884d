"""Markdown: heading sections > blocks > lines; fences by their own rules.

Structure is checked against markdown-it-py, an independent CommonMark parser.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from markdown_it import MarkdownIt

from sdk import count_tokens
from sdk.chunking import Chunker, _markdown, chunk
from tests.corpus import corpus_files
from tests.invariants import boundaries, check_chunks

_MD = MarkdownIt("commonmark").enable("table")

DOC = """# 安装指南

本文介绍如何在 Linux 与 macOS 上安装 seam-sdk，并给出配置示例。\
所有命令都假设你已经安装了 Python 3.10 以上版本。

## Linux

```bash
# 这一行是注释，不是标题
python3 -m venv .venv
. .venv/bin/activate
pip install seam-sdk
```

安装完成后，运行下面的 Python 代码检查版本：

```python
import sdk

def main() -> None:
    # 打印版本
    print(sdk.__version__)

if __name__ == "__main__":
    main()
```

## 配置

| 键 | 含义 | 默认值 |
|----|------|--------|
| max_tokens | 每块的最大 token 数 | 512 |
| overlap | 相邻块的重叠 | 0 |
| encoding | 编码名称 | o200k_base |

```json
{"model": "gemma-3-270m", "max_tokens": 256, "messages": [{"role": "user", "content": "你好"}]}
```

### 注意事项

- 不要把 API 密钥写进代码。
- 长文档请先用 `chunk()` 切分，再逐块发送。
  每一块都不会超过预算。
- 表格只会在行之间切开。

````markdown
这是一个嵌套的代码块示例：
```python
# 内层围栏里的井号也不是标题
print("hi")
```
````

Setext 标题
===========

最后一段。
"""


def _lines(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _structure(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]], list[list[int]]]:
    """(fence spans, heading-to-first-line spans, table row starts) from markdown-it-py."""
    starts = _lines(text)
    starts.append(len(text))
    fences, glued, tables = [], [], []
    tokens = _MD.parse(text)
    for i, tok in enumerate(tokens):
        if tok.map is None:
            continue
        a, b = starts[tok.map[0]], starts[min(tok.map[1], len(starts) - 1)]
        if tok.type == "fence" and tok.level == 0:
            fences.append((a, b))
        elif tok.type == "heading_open":
            # From the heading to the first character of what follows it: a cut may
            # fall inside a long first line, never before it.
            nxt = next((t for t in tokens[i + 3 :] if t.map is not None), None)
            if nxt is not None:
                first = starts[nxt.map[0]]
                glued.append((a, first + len(text[first:]) - len(text[first:].lstrip()) + 1))
        elif tok.type == "table_open":
            rows = [starts[t.map[0]] for t in tokens[i:] if t.type == "tr_open" and t.map is not None]
            end = next(t for t in tokens[i:] if t.type == "table_close")
            tables.append([a] + [r for r in rows if a < r < b] + [b])
            del end
    return fences, glued, tables


@pytest.mark.parametrize("budget", [8, 16, 32, 64, 128, 256])
def test_structure_respected(budget: int) -> None:
    chunks = chunk(DOC, max_tokens=budget, kind="markdown")
    check_chunks(DOC, chunks, budget)
    cuts = set(boundaries(chunks))
    fences, glued, tables = _structure(DOC)
    assert len(fences) == 4 and len(glued) == 5 and len(tables) == 1
    for a, b in glued:
        assert not {c for c in cuts if a < c < b}, ("heading cut from its section", DOC[a:b])
    for a, b in fences:
        if count_tokens(DOC[a:b]) + 16 <= budget:  # leaves room for a glued heading
            assert not {c for c in cuts if a < c < b}, ("fence that fits was cut", DOC[a:b][:40])
    (rows,) = tables  # the header row holds the delimiter row too
    if all(count_tokens(DOC[x:y]) <= budget for x, y in itertools.pairwise(rows)):
        for c in cuts:
            if rows[0] < c < rows[-1]:
                assert c in rows, "a table is cut only between rows"


def test_paths_are_heading_trails_and_fences_are_code() -> None:
    chunks = chunk(DOC, max_tokens=48, kind="markdown")
    paths = {c.path for c in chunks}
    assert "安装指南 > Linux" in paths
    assert "安装指南 > 配置 > 注意事项" in paths or "安装指南 > 配置" in paths
    code = [c for c in chunks if c.kind == "code"]
    assert code and {c.language for c in code} >= {"python"}


def test_fence_hash_lines_are_not_headings() -> None:
    text = "# Top\n\n```bash\n# comment one\necho 1\n# comment two\necho 2\n```\n\nafter\n"
    for budget in (4, 8, 16):
        chunks = chunk(text, max_tokens=budget, kind="markdown")
        check_chunks(text, chunks, budget)
        assert {c.path for c in chunks} == {"Top"}


def test_big_fence_is_cut_by_its_language() -> None:
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(30))
    text = f"Intro.\n\n```python\n{body}```\n\nOutro.\n"
    chunks = chunk(text, max_tokens=40, kind="markdown")
    check_chunks(text, chunks, 40)
    for c in chunks:
        if c.kind == "code":
            assert c.language == "python"
    cuts = set(boundaries(chunks))
    for i in range(30):
        start = text.index(f"def f{i}(")
        end = text.index("\n\n\n", start)
        assert not {c for c in cuts if start < c < end}, f"function f{i} was cut"


def test_flattened_fence_without_newlines() -> None:
    text = "这是一段文字```python\nprint('x')\n```接着又是文字。" * 20
    for budget in (4, 16, 64):
        check_chunks(text, chunk(text, max_tokens=budget, kind="markdown"), budget)


def test_unclosed_fence_and_crlf() -> None:
    text = "# T\r\n\r\npara\r\n\r\n```js\r\nlet a = 1;\r\nlet b = 2;\r\n" * 5
    for budget in (3, 8, 32):
        check_chunks(text, chunk(text, max_tokens=budget, kind="markdown"), budget)


@pytest.mark.parametrize("budget", [16, 64])
def test_every_corpus_file_as_markdown(budget: int) -> None:
    # Any text is valid Markdown: the invariants hold whatever the input.
    for cf in corpus_files():
        text = cf.read()
        check_chunks(text, Chunker(budget).chunk(text, kind="markdown"), budget)


@pytest.mark.parametrize("budget", [24, 64, 256])
def test_heading_context_prefixes_the_trail_within_budget(budget: int) -> None:
    chunks = chunk(DOC, max_tokens=budget, kind="markdown", heading_context=True)
    pos = 0
    for c in chunks:
        assert c.start == pos
        assert c.text == c.context + DOC[c.start : c.end]
        assert c.tokens == count_tokens(c.text)
        assert c.oversize or c.tokens <= budget
        assert c.context == (f"{c.path}\n\n" if c.path else "")
        pos = c.end
    assert pos == len(DOC)
    assert any(c.context for c in chunks)


def test_heading_context_only_for_markdown_and_not_with_overlap() -> None:
    plain = chunk("just text. more text.", max_tokens=4, heading_context=True)
    assert all(c.context == "" for c in plain)
    with pytest.raises(ValueError, match="overlap"):
        Chunker(64, overlap=8).chunk(DOC, kind="markdown", heading_context=True)


@pytest.mark.parametrize(
    "text",
    [
        "\n" * 1000,
        " " * 2000,
        " \n" * 500 + "x\n",
        "---\n" + "\n" * 1000,
        "-" * 5000 + "\n",
        "Text.\n\n***\n\n    indented code after a rule\n",
    ],
)
def test_blank_runs_and_rules_are_cut_like_any_text(text: str) -> None:
    # A run of blank lines or a long thematic break is no indivisible unit.
    for budget in (4, 64):
        chunks = Chunker(budget).chunk(text, kind="markdown")
        check_chunks(text, chunks, budget)
        assert not any(c.oversize for c in chunks)


def test_indented_code_may_follow_a_rule() -> None:
    from sdk.chunking._markdown import MarkdownSplitter

    text = "Text.\n***\n    indented code after a rule\n"
    blocks = MarkdownSplitter(text)._blocks(0, len(text), ())
    assert [text[b.start : b.end] for b in blocks if b.kind == "code"] == ["    indented code after a rule\n"]


def test_the_document_scan_matches_only_the_lines_that_may_be_fences_or_headings() -> None:
    from unittest import mock

    from sdk.chunking import _markdown

    class Counted:
        def __init__(self, pattern: re.Pattern[str]) -> None:
            self.pattern = pattern
            self.calls = 0

        def match(self, *args: Any) -> re.Match[str] | None:
            self.calls += 1
            return self.pattern.match(*args)

    # The scans for fences and headings ran their patterns over every position of the
    # document; they now try only the lines whose classes allow one.
    text = "# Top\n\n" + "A line of a paragraph.\n" * 5_000 + "\nUnder\n=====\n\n```py\nx = 1\n```\n"
    counted = {name: Counted(getattr(_markdown, name)) for name in ("_ATX", "_SETEXT", "_FENCE")}
    with mock.patch.multiple(_markdown, **counted):  # type: ignore[arg-type]
        splitter = _markdown.MarkdownSplitter(text)
    assert [h.title for h in splitter.headings] == ["Top", "Under"]
    assert len(splitter.fences) == 1
    assert sum(c.calls for c in counted.values()) <= 6


def test_lone_carriage_returns_end_lines_as_line_feeds_do() -> None:
    from sdk.chunking._markdown import MarkdownSplitter

    # Classic Mac line breaks: headings and fences after a lone "\r" are found as after
    # "\n" (the scan for them took "^" as Python's multi-line mode does: after "\n" only,
    # while the block scanner ends lines at "\r" too).
    doc = (
        "# Title\n\nIntro text here.\n\n## Part one\n\nSome words in part one.\n\n"
        "```python\ndef f():\n    return 1\n```\n\nSetext part\n-----------\n\nMore words.\n"
    )
    for breaks in ("\r", "\r\n"):
        other = doc.replace("\n", breaks)
        want, got = MarkdownSplitter(doc), MarkdownSplitter(other)
        assert [(h.level, h.title) for h in got.headings] == [
            (1, "Title"),
            (2, "Part one"),
            (2, "Setext part"),
        ]
        assert [(h.level, h.title) for h in got.headings] == [(h.level, h.title) for h in want.headings]
        assert len(got.fences) == len(want.fences) == 1
        assert other[got.fences[0].start : got.fences[0].body].strip() == "```python"
    paths = {c.path for c in chunk(doc.replace("\n", "\r"), 12, kind="markdown")}
    assert {"Title", "Title > Part one", "Title > Setext part"} <= paths


def test_a_setext_underline_ends_the_paragraph_of_the_next_heading() -> None:
    from unittest import mock

    from sdk.chunking import _markdown

    splitter = _markdown.MarkdownSplitter("Title\n=====\nSub\n---\nText.\n")
    assert [(h.start, h.level, h.title) for h in splitter.headings] == [(0, 1, "Title"), (12, 2, "Sub")]
    # A run of them: each heading's paragraph was read back through every underline
    # above it (2,000 headings took seconds; lines read grew with the square), and the
    # line before an underline was found by searching back for a "\r" that a file of
    # "\n" lines does not have, to the start of the text (a megabyte took 3 s, 2 MB 9 s).
    read = [0]

    class Counting(str):
        def __getitem__(self, k: Any) -> str:
            if isinstance(k, slice):
                read[0] += len(range(*k.indices(len(self))))
            return str.__getitem__(self, k)

        def rfind(self, sub: str, start: Any = 0, end: Any = None) -> int:
            read[0] += (len(self) if end is None else end) - (start or 0)
            return str.rfind(self, sub, start, end)

    for br in ("\n", "\r", "\r\n"):
        text = f"a{br}={br}" * 2_000
        read[0] = 0
        at, flags, marks = _markdown._document_lines(text)
        counting = Counting(text)
        fences = _markdown._scan_fences(counting, at, flags, marks)
        with mock.patch.object(
            _markdown, "_not_paragraph", mock.Mock(wraps=_markdown._not_paragraph)
        ) as lines:
            headings = _markdown._scan_headings(counting, fences, at, flags, marks)
        step = len(text) // 2_000
        assert [(h.start, h.title) for h in headings] == [(step * i, "a") for i in range(2_000)]
        assert lines.call_count <= 2 * 2_000
        assert read[0] <= 4 * len(text), read[0] / len(text)


@pytest.mark.parametrize("budget", [64, 1024, 8192])
def test_many_sibling_sections_in_runs_chunk_as_one_level(
    budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past 513 sibling heading sections come in flat runs (_Subs): packed as if the
    # sections stood in their place, with the path of the heading each chunk opens on.
    doc = "".join(f"# Part {i}\n\nSome text about part {i}.\n\n" for i in range(1500))
    runs = Chunker(budget).chunk(doc, kind="markdown")
    splitter = _markdown.MarkdownSplitter(doc)
    assert any(isinstance(p.state, _markdown._Subs) for p in splitter.split(doc, splitter.root()))
    monkeypatch.setattr(_markdown, "_RUN", 10**9)
    assert not any(isinstance(p.state, _markdown._Subs) for p in splitter.split(doc, splitter.root()))
    one_level = Chunker(budget).chunk(doc, kind="markdown")
    assert [(c.start, c.end, c.tokens, c.path) for c in runs] == [
        (c.start, c.end, c.tokens, c.path) for c in one_level
    ]
    assert all(c.path == f"Part {c.text.split()[2]}" for c in runs)


def test_a_run_of_sections_does_not_end_with_a_bare_heading() -> None:
    # A heading with nothing under it opens the chunk of the section after it; a run's
    # boundary is moved past such headings, so the next run does not take it alone.
    doc = "".join("# Bare\n" if i % 3 == 1 else f"# Part {i}\n\nText {i}.\n" for i in range(2000))
    splitter = _markdown.MarkdownSplitter(doc)
    parts = splitter.split(doc, splitter.root())
    assert len(parts) > 2 and all(isinstance(p.state, _markdown._Subs) for p in parts)
    for p in parts[:-1]:
        last = splitter.split(doc, p)[-1]
        assert not last.sticky and not doc[last.start : last.end].startswith("# Bare")
    for p in parts[1:]:  # nor starts with one (it would end the chunk before it)
        assert not doc[p.start : p.end].startswith("# Bare")
    for c in Chunker(64).chunk(doc, kind="markdown"):
        assert not c.text.rstrip().endswith("# Bare") or c.end == len(doc)


@pytest.mark.parametrize("budget", [16, 64, 256])
def test_a_section_of_many_blocks_in_runs_chunks_as_one_level(
    budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past 512 blocks, a section's blocks come in flat runs (_BlockRun), scanned again
    # from where each starts: the chunks are those of one level of blocks.
    kinds = [
        "Text here.",
        "More text\ncontinued",
        "",
        "- a\n  - b",
        "1. x",
        "```\nx\n```",
        "~~~py\ny = 1\n~~~",
        "| a |\n|---|\n| 1 |",
        "    code",
        "> quote",
        "***",
        "<div>",
    ]
    doc = "---\ntitle: x\n---\n" + "\n".join(
        kinds[(i * 7) % len(kinds)] + "\n" * (i % 2) for i in range(3000)
    )
    splitter = _markdown.MarkdownSplitter(doc)
    assert any(isinstance(p.state, _markdown._BlockRun) for p in splitter.split(doc, splitter.root()))
    runs = Chunker(budget).chunk(doc, kind="markdown")
    monkeypatch.setattr(_markdown, "_RUN", 10**9)
    one_level = Chunker(budget).chunk(doc, kind="markdown")
    assert runs == one_level


class _Words:
    """A tokenizer of one token a word (the budgets below count words)."""

    def encode(self, text: str) -> list[str]:
        return text.split()


_BARE = [f"# h{i}\nw w w\n" for i in range(600)]
_BARE[512] = "# bare\n"
_RUN_EDGES = [
    # the last run one block: placed as that block, it was cut to fill the chunk before
    ("a\n\n" * 512 + " ".join(f"w{i}" for i in range(15)) + "\n", 20),
    ("- a\n\n" * 700 + "- last item here\n", 9),
    # a run that started with a bare heading left it at the end of the chunk before
    ("".join(_BARE), 13),
    ("intro w\n\n# first\n" + "".join(f"# h{i}\nw w w\n" for i in range(600)), 6),
    ("# Top\n" + "".join(f"## s{i}\n" + ("w w\n" if i % 5 else "") for i in range(2000)), 7),
    # a run whole took the run's metadata, not its first block's
    ("```python\nx = 1\n```\n" + "a\n\n" * 600, 530),
]


@pytest.mark.parametrize(("doc", "budget"), _RUN_EDGES)
@pytest.mark.parametrize("native", [True, False])
def test_runs_chunk_as_their_parts_would_in_place(
    doc: str, budget: int, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Cases a review found where runs of blocks or of sections packed differently.
    from sdk.chunking import _accel

    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    runs = Chunker(budget, encoding=_Words()).chunk(doc, kind="markdown")
    monkeypatch.setattr(_markdown, "_RUN", 10**9)
    in_place = Chunker(budget, encoding=_Words()).chunk(doc, kind="markdown")
    assert runs == in_place


@pytest.mark.parametrize(
    ("text", "budget"),
    [
        ("`" * 101, 8),  # an opening line alone: an unclosed fence with no body
        ("`" * 20 + "\n" + "`" * 20, 2),  # an empty fence
        ("```" + "a b " * 100 + "\n```", 4),  # a long info string, no body
        ("`" * 60 + "\nx", 4),  # a body of one line that cannot be cut
        ("# T\n\n" + "`" * 200, 16),
        ("```py\n```\n", 2),
        ("text\n\n~~~\n" + "x" * 300 + "\n~~~\nmore\n", 8),
    ],
)
def test_a_fence_that_cannot_be_cut_inside_is_cut_by_prose_rules(text: str, budget: int) -> None:
    """A fence whose body gives no parts (empty, or one indivisible piece) was one chunk,
    oversize: it is cut like any text, fence lines included, down to graphemes."""
    import regex

    for kind in ("markdown", "auto"):
        chunks = chunk(text, max_tokens=budget, kind=kind)
        check_chunks(text, chunks, budget)
        for c in chunks:
            assert c.tokens <= budget or len(regex.findall(r"\X", c.text)) == 1, (kind, c)


@pytest.mark.parametrize("native", [True, False])
def test_a_byte_order_mark_does_not_hide_the_first_heading(
    native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``\\ufeff# Install`` is a heading: the mark goes with the first heading's section
    (it made a section of its own, and ``kind="auto"`` did not see Markdown at all)."""
    if not native:
        monkeypatch.setattr("sdk.chunking._accel.native", None)
        monkeypatch.setattr("sdk.chunking._accel.kernels", None)
    for body, paths, kinds in [
        (
            "# Install\n\n## Linux\n\nrun make\n",
            ["Install", "Install > Linux", "Install > Linux"],
            ("markdown", "auto"),
        ),
        ("Install\n===\n\ntext here\n", ["Install", "Install"], ("markdown",)),
    ]:
        text = "\ufeff" + body
        for kind in kinds:
            chunks = chunk(text, 4, kind=kind)
            check_chunks(text, chunks, 4)
            assert [c.path for c in chunks] == paths, (kind, body)
            assert [c.path for c in chunk(body, 4, kind=kind)] == paths


@pytest.mark.parametrize("native", [True, False])
def test_a_heading_inside_an_html_comment_is_no_heading(
    native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A section commented out (``<!--`` to ``-->``, blank lines and all) is raw HTML
    to CommonMark: its heading entered the trail of what followed."""
    if not native:
        monkeypatch.setattr("sdk.chunking._accel.native", None)
        monkeypatch.setattr("sdk.chunking._accel.kernels", None)
    text = "# Top\n\n<!--\n## Hidden draft\n\nold text\n-->\n\nreal body text after the comment\n"
    chunks = chunk(text, 6, kind="markdown")
    check_chunks(text, chunks, 6)
    assert {c.path for c in chunks} == {"Top"}
    # Closed on its own line, in a fence, or never closed (hidden to the end).
    assert [c.path for c in chunk("<!-->\n# A\n\nx y z\n", 3, kind="markdown")][-1] == "A"
    assert [c.path for c in chunk("```\n<!--\n```\n# A\n\nx y z\n", 3, kind="markdown")][-1] == "A"
    assert {c.path for c in chunk("# A\n\n<!--\n# B\n\nx\n", 4, kind="markdown")} == {"A"}
