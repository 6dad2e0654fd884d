"""A long source is parsed a window at a time: bounded parser work and tree memory.

A tree-sitter tree takes about 20 bytes of memory per byte of source, outside
Python's allocator (``tracemalloc`` does not see it), so these tests bound what the
splitter hands the parser instead: the bytes parsed in all and the longest stretch
parsed at once. They are operation counts, not clocks.
"""

from __future__ import annotations

import bisect
import itertools
from pathlib import Path

import pytest

import sdk.chunking._code as code
from sdk import count_tokens
from sdk.chunking import Chunk, Chunker
from sdk.chunking._code import CodeSplitter, code_root
from sdk.chunking._engine import Engine, Sizer
from tests.invariants import check_chunks


def _module(functions: int) -> str:
    body = (
        "# Handler {i}.\n"
        "@route('/items/{i}')\n"
        "def handler_{i}(request, *, retries=3):\n"
        '    """Handle request number {i}."""\n'
        "    payload = request.json()  # parsed body\n"
        "    for attempt in range(retries):\n"
        "        if payload.get('id') == {i}:\n"
        "            return {{'ok': True, 'attempt': attempt, 'value': payload['v'] * {i}}}\n"
        "    raise LookupError(f'no match for {{payload!r}}')\n\n\n"
        "TABLE_{i} = {{\n" + "".join(f"    'key{k}': '''line\nline''',\n" for k in range(12)) + "}}\n\n"
    )
    return "".join(body.format(i=i) for i in range(functions))


def test_a_long_source_is_parsed_once_a_window_at_a_time() -> None:
    text = _module(2_000)  # about 1.3 MB
    n = len(text.encode("utf-8"))
    assert n > 1_200_000
    root = code_root(text, "python")
    splitter = root.splitter
    assert isinstance(splitter, CodeSplitter)
    raw = Engine(text, 64, Sizer("o200k_base")).run(root)
    assert raw[0].start == 0 and raw[-1].end == len(text)
    assert all(a.end == b.start for a, b in itertools.pairwise(raw))
    assert all(r.tokens <= 64 for r in raw)
    sample = raw[:: max(1, len(raw) // 50)]
    assert all(count_tokens(text[r.start : r.end]) == r.tokens for r in sample)
    # Each byte reaches the parser about once (a window's last statement is parsed
    # again with the next window), and never more than a window's worth at a time:
    # the whole source at once would hold a tree of about 25 MB here.
    assert splitter.parsed <= 1.05 * n
    assert splitter.widest <= max(code._WINDOW_BYTES, n // 32) + 1_000


@pytest.mark.parametrize("window", [2_000, 9_000])
def test_windows_cut_where_one_parse_of_the_whole_cuts(monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    # Windows end inside strings, dict literals, decorated and commented definitions.
    text = _module(60)
    whole = {}
    for budget in (16, 64, 256):
        monkeypatch.setattr(code, "_WINDOWED", frozenset())
        whole[budget] = Chunker(budget).chunk(text, kind="code", language="python")
    monkeypatch.setattr(code, "_WINDOWED", frozenset({"python"}))
    monkeypatch.setattr(code, "_WINDOW_BYTES", window)
    for budget in (16, 64, 256):
        got = Chunker(budget).chunk(text, kind="code", language="python")
        check_chunks(text, got, budget)
        ours = {(c.start, c.path) for c in got}
        theirs = {(c.start, c.path) for c in whole[budget]}
        # Only the packing next to a window's end may differ (a chunk may not run on
        # into the next window); every cut is still one the whole parse allows.
        assert len(ours ^ theirs) <= 2 * (len(text) // window + 1), budget


def test_broken_code_in_a_long_source_still_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code, "_WINDOW_BYTES", 4_000)
    text = _module(10) + "def broken(:\n    return ((\n" + _module(10) + "x = '''never closed\n" + _module(5)
    root = code_root(text, "python")
    splitter = root.splitter
    assert isinstance(splitter, CodeSplitter)
    for budget in (16, 64):
        got = Chunker(budget).chunk(text, kind="code", language="python")
        check_chunks(text, got, budget)


def _clauses(n: int) -> str:
    """Statements whose clauses follow them at the top level, some after a comment."""
    parts = []
    for i in range(n):
        parts.append(
            f"if value == {i}:\n    handle({i})\n"
            + "".join(f"elif value == {i}.{k}:\n    handle({i}, {k})\n" for k in range(40))
            + f"# otherwise, item {i}\nelse:\n    fallback({i})\n"
            f"try:\n    risky({i})\n# when it fails\nexcept ValueError:\n    recover({i})\n"
            f"finally:\n    done({i})\n"
            f"for item in items_{i}:\n    visit(item)\nelse:\n    nothing({i})\n\n"
        )
    return "".join(parts)


@pytest.mark.parametrize("window", [1_000, 3_000])
def test_clauses_that_follow_a_window_stay_with_their_statement(
    monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """A window ends at a line's end, and its last statement other than comments is left
    to the next window: cut inside ``elif``, a window parsed ``eli`` as a statement and
    kept the ``if`` before it as whole; then every window from the bare ``elif`` on was
    broken, its windows doubled to the end of the source, and the rest was prose."""
    text = _clauses(12)
    monkeypatch.setattr(code, "_WINDOWED", frozenset())
    whole = Chunker(64).chunk(text, kind="code", language="python")
    monkeypatch.setattr(code, "_WINDOWED", frozenset({"python"}))
    monkeypatch.setattr(code, "_WINDOW_BYTES", window)
    splitter = code_root(text, "python").splitter
    assert isinstance(splitter, CodeSplitter)
    got = Chunker(64).chunk(text, kind="code", language="python")
    check_chunks(text, got, 64)
    # Every chunk starts where the whole parse's chunks start, but at a window's end.
    theirs = {c.start for c in whole}
    assert sum(c.start not in theirs for c in got) <= len(text) // window + 1
    assert {c.path for c in got} == {c.path for c in whole}


CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "code"


@pytest.mark.parametrize(
    "name",
    ["hashmap.c", "matrix.cpp", "app.js", "service.ts", "server.go", "lib.rs", "tasks.rb", "deploy.sh"],
)
@pytest.mark.parametrize("budget", [16, 256])
def test_every_language_windows_cut_only_between_top_level_statements(
    monkeypatch: pytest.MonkeyPatch, name: str, budget: int
) -> None:
    """Windows of 1,500 bytes (cut inside functions, blocks, strings and comments):
    every chunk starts where one parse of the whole starts a chunk, or at one of its
    top-level statements (a window's end is a seam between two)."""
    unit = (CORPUS / name).read_text(encoding="utf-8")
    language = code.language_for_filename(name, unit)
    assert language is not None
    text = (unit + "\n") * (40_000 // len(unit))
    root = code_root(text, language)
    assert isinstance(root.splitter, CodeSplitter) and root.splitter.tree is not None
    data = text.encode()
    tops = {len(data[: c.start_byte].decode()) for c in root.splitter.tree.root_node.children}
    monkeypatch.setattr(code, "_WINDOWED", frozenset())
    whole = {c.start for c in Chunker(budget).chunk(text, language=language)}
    monkeypatch.setattr(code, "_WINDOWED", frozenset({language}))
    monkeypatch.setattr(code, "_WINDOW_BYTES", 1_500)
    monkeypatch.setattr(code, "_WINDOW_LINES", 1)
    splitter = code_root(text, language).splitter
    assert isinstance(splitter, CodeSplitter)
    got = Chunker(budget).chunk(text, language=language)
    check_chunks(text, got, budget)
    assert [c.start for c in got if c.start not in whole and c.start not in tops] == []


def test_a_minified_source_is_parsed_whole() -> None:
    """Its first statement is likely all of it: windows would double until it is whole,
    parsing it about twice over."""
    text = "var a=[" + ",".join(f'{{"k{i}":{i}}}' for i in range(20_000)) + "];" + "f();" * 20_000
    n = len(text)
    assert n > code._WINDOW_BYTES and text.count("\n") == 0
    root = code_root(text, "javascript")
    splitter = root.splitter
    assert isinstance(splitter, CodeSplitter)
    raw = Engine(text, 64, Sizer("o200k_base")).run(root)
    assert raw[0].start == 0 and raw[-1].end == n
    assert splitter.parsed == splitter.widest == n


def test_windows_whose_parse_failed_as_a_whole_keep_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut inside a function, a C window can fail as a whole (its root an ERROR): its
    top-level nodes are then the function's statements and loose tokens, which do not
    look broken. Such a window keeps nothing and grows instead. On this project's own
    C (6,000 lines, windows of 3,000 bytes), chunks then carry the definition they are
    in, as in one parse of the whole; keeping those nodes gave 14 chunks another."""
    path = Path(code.__file__).with_name("_native.c")
    text = path.read_text(encoding="utf-8")
    monkeypatch.setattr(code, "_WINDOWED", frozenset())
    whole = Chunker(64).chunk(text, language="c")
    monkeypatch.setattr(code, "_WINDOWED", frozenset({"c"}))
    monkeypatch.setattr(code, "_WINDOW_BYTES", 3_000)
    got = Chunker(64).chunk(text, language="c")
    check_chunks(text, got, 64)
    starts = [c.start for c in whole]

    def differs(c: Chunk) -> bool:
        theirs = whole[bisect.bisect_right(starts, c.start) - 1].path
        return c.path != theirs and not (c.path or "").startswith(theirs or "\0")

    assert sum(map(differs, got)) <= 2


@pytest.mark.parametrize(
    ("language", "head", "line"),
    [
        ("python", "<<<<<<< HEAD\n", "def f(a):\n    return a + 1\n\n"),
        ("python", "x = = 1\n", "def f(a):\n    return a + 1\n\n"),
        ("python", "", "x\U0001f44d = 1\ny = 2\n"),  # every other line broken
        ("javascript", "let = = ;\n", "function f(a) {\n  return a + 1;\n}\n"),
        ("c", "", "int x\U0001f44d = 1;\n"),  # every line broken
    ],
)
def test_broken_code_at_a_window_start_does_not_parse_the_rest_at_once(
    language: str, head: str, line: str
) -> None:
    # A window whose first node was broken kept nothing and was doubled to the end of
    # the source: one conflict marker on the first line, or lines broken every other
    # one, parsed the whole file at once (70-300 bytes a byte of tree and nodes).
    text = head + line * (400_000 // len(line))
    n = len(text.encode("utf-8"))
    root = code_root(text, language)
    splitter = root.splitter
    assert isinstance(splitter, CodeSplitter)
    raw = Engine(text, 64, Sizer("o200k_base")).run(root)
    assert raw[0].start == 0 and raw[-1].end == len(text)
    assert all(a.end == b.start for a, b in itertools.pairwise(raw))
    assert splitter.widest <= max(code._WINDOW_BYTES, n // 32) + 1_000
    assert splitter.parsed <= 1.05 * n
