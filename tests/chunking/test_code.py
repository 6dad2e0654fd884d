"""Code chunking: cuts between definitions and statements, metadata, fallbacks."""

from __future__ import annotations

import itertools
import re
import textwrap
import warnings
from pathlib import Path

import pytest

from sdk import count_tokens
from sdk.chunking import Chunk, Chunker, ChunkingWarning, chunk
from sdk.chunking._code import CodeSplitter
from tests.invariants import boundaries, check_chunks

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "code"


def code(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def chunks_of(text: str, budget: int, language: str | None = "python", **kw: str) -> list[Chunk]:
    out = chunk(text, budget, kind="code", language=language, **kw)
    check_chunks(text, out, budget)
    return out


FUNCS = code(
    '''
    import os


    def first(a, b):
        """Add two numbers."""
        total = a + b
        return total


    def second(path):
        with open(path) as f:
            return f.read()


    def third():
        return os.getcwd()
    '''
)


def test_functions_that_fit_are_never_cut() -> None:
    starts = {m.start() for m in re.finditer(r"^def ", FUNCS, re.M)}
    longest = max(count_tokens(f) for f in re.split(r"\n\n\n", FUNCS))
    for budget in range(longest, longest + 40, 3):
        for b in boundaries(chunks_of(FUNCS, budget)):
            # At a definition, or at the end of one (the blank lines then start the next chunk).
            assert b in starts or FUNCS[b : min(s for s in starts if s > b)].isspace(), (budget, b)


def test_shallow_boundaries_rank_above_deep_ones() -> None:
    spans = {}
    for name, nxt in (("first", "def second"), ("second", "def third"), ("third", None)):
        a = FUNCS.index(f"def {name}")
        b = FUNCS.index(nxt) if nxt else len(FUNCS)
        spans[name] = (a, a + len(FUNCS[a:b].rstrip()))
    size = {name: count_tokens(FUNCS[a:b]) for name, (a, b) in spans.items()}
    assert size["first"] > max(size["second"], size["third"])
    for budget in range(max(size["second"], size["third"]), size["first"]):
        cuts = boundaries(chunks_of(FUNCS, budget))
        a, b = spans["first"]
        assert any(a < c < b for c in cuts), budget  # the one that does not fit is cut...
        for name in ("second", "third"):  # ...the ones that fit are not
            a, b = spans[name]
            assert not any(a < c < b for c in cuts), (budget, name)


DECORATED = code(
    """
    VALUE = compute_something_long(alpha, beta, gamma, delta, epsilon, zeta, eta, theta)


    # Explains g: this comment belongs to it.
    @register("g")
    @functools.cache
    def g(x):
        return x * 2  # doubled


    class Holder:
        # about m
        @property
        def m(self):
            return self._m  # the value
    """
)


def test_decorators_and_comments_stay_with_their_definition() -> None:
    g_whole = DECORATED[DECORATED.index("# Explains") : DECORATED.index("class Holder")]
    for budget in range(count_tokens(g_whole), count_tokens(g_whole) + 30):
        got = chunks_of(DECORATED, budget)
        owner = [c.text for c in got if "def g" in c.text]
        assert len(owner) == 1
        assert "# Explains g" in owner[0] and '@register("g")' in owner[0] and "@functools.cache" in owner[0]
        m_owner = [c.text for c in got if "def m" in c.text]
        assert "# about m" in m_owner[0] and "@property" in m_owner[0]


def test_a_trailing_comment_stays_on_its_line() -> None:
    text = code(
        """
        def f():
            alpha = first_value(1, 2, 3)  # why alpha
            beta = second_value(4, 5, 6)  # why beta
            gamma = third_value(7, 8, 9)  # why gamma
            return alpha + beta + gamma  # the sum
        """
    )
    lines = [ln.strip() for ln in text.splitlines() if "#" in ln]
    for budget in range(8, 40):
        got = chunks_of(text, budget)
        for line in lines:
            if count_tokens(line) <= budget:  # a line that fits is never cut
                assert any(line in c.text for c in got), (budget, line)


def test_paths_name_the_enclosing_definitions() -> None:
    text = code(
        """
        import os


        class Outer:
            '''Outer docstring that is long enough to matter here.'''

            def method(self, value):
                first = value + 1
                second = first * 2
                return second

            class Inner:
                def deep(self):
                    return [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
        """
    )
    expected = {  # a chunk's path follows from its first line
        "import os": None,
        "class Outer:": "Outer",
        "'''Outer docstring": "Outer",
        "def method": "Outer.method",
        "first = ": "Outer.method",
        "second = ": "Outer.method",
        "return second": "Outer.method",
        "class Inner": "Outer.Inner",
        "def deep": "Outer.Inner.deep",
        "return [": "Outer.Inner.deep",
        "[1, 2": "Outer.Inner.deep",
    }
    seen = set()
    for budget in (8, 12, 16, 24, 32):
        for c in chunks_of(text, budget):
            head = c.text.lstrip()
            key = next((k for k in expected if head.startswith(k)), None)
            if key is not None:
                assert c.path == expected[key], (budget, c.text)
                seen.add(key)
            assert c.language == "python" and c.kind == "code"
    assert {"import os", "def method", "class Inner", "[1, 2"} <= seen


@pytest.mark.parametrize(
    ("language", "text", "needle", "path"),
    [
        (
            "javascript",
            "class K {\n  m(a) {\n    const x = a + 1;\n    return x * 2;\n  }\n}\n",
            "return x",
            "K.m",
        ),
        (
            "typescript",
            "export class S {\n  get(id: string): number {\n    return id.length + 1;\n  }\n}\n",
            "return",
            "S.get",
        ),
        ("go", "package p\n\nfunc (s *S) Put(k string) {\n\ts.m[k] = len(k) + 1000\n}\n", "s.m[k]", "Put"),
        (
            "rust",
            "impl Ring {\n    fn push(&mut self, v: u32) {\n        self.v.push(v + 1000);\n    }\n}\n",
            "self.v.push",
            "Ring.push",
        ),
        (
            "c",
            "static int *make(int n)\n{\n    return malloc(n * sizeof(int) + 1000);\n}\n",
            "return",
            "make",
        ),
        (
            "java",
            "class A {\n  void run() {\n    System.out.println(1000 + 2000);\n  }\n}\n",
            "System.out",
            "A.run",
        ),
        ("json", '{"outer": {"inner": [1000, 2000, 3000, 4000, 5000, 6000, 7000]}}', "1000", "outer.inner"),
        ("ruby", "class A\n  def go(x)\n    puts x + 1000 + 2000\n  end\nend\n", "puts", "A.go"),
    ],
)
def test_paths_in_other_languages(language: str, text: str, needle: str, path: str) -> None:
    got = chunks_of(text, 6, language)
    assert [c.path for c in got if needle in c.text][:1] == [path]
    assert {c.language for c in got} == {language}


def test_cjk_identifiers_are_never_cut_where_they_fit() -> None:
    """An identifier is cut only where it does not fit the budget alone (then by prose
    rules, never inside a grapheme: an oversize chunk is one grapheme)."""
    text = 'ユーザー名 = get_user()\n表示名 = ユーザー名 + "さん"  # 敬称を付ける\n'
    idents = [(m.start(), m.end()) for m in re.finditer(r"ユーザー名|表示名|get_user", text)]
    for budget in range(1, 12):
        chunks = chunks_of(text, budget)
        check_chunks(text, chunks, budget)
        for b in boundaries(chunks):
            assert not any(s < b < e and count_tokens(text[s:e]) <= budget for s, e in idents), (budget, b)
        assert all(c.tokens <= budget or len(c.text) == 1 for c in chunks)


@pytest.mark.parametrize("language", ["python", "javascript", "go", "c", "java", "ruby", "rust", "cpp"])
def test_a_token_longer_than_the_budget_is_cut_by_prose_rules(language: str) -> None:
    """An identifier or a number over the budget was one oversize chunk (10,000 "a"s:
    1,250 tokens at budget 64); it is cut as prose cuts it, at graphemes."""
    for text in ("a" * 10_000, "x = " + "1" * 20_000 + "\n", "y = " + "привет" * 500 + "\n"):
        chunks = Chunker(max_tokens=64).chunk(text, language=language)
        check_chunks(text, chunks, 64)
        assert all(c.tokens <= 64 for c in chunks), (language, text[:10])


def test_broken_code_still_chunks_and_error_regions_cut_at_lines() -> None:
    text = (CORPUS / "broken.py").read_text(encoding="utf-8")
    for budget in (4, 16, 32, 64, 256):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = chunks_of(text, budget)
        if budget >= 32:  # every line of the broken region fits: cuts only at line starts
            assert all(text[b - 1] == "\n" or text[:b].rsplit("\n", 1)[-1].isspace() for b in boundaries(got))


def test_a_huge_string_literal_falls_back_to_prose_inside() -> None:
    text = (CORPUS / "big_literal.py").read_text(encoding="utf-8")
    start = text.index('"""', text.index("BIG_TEMPLATE"))
    end = text.index('"""', start + 3) + 3
    assert end - start > 10_000
    words = [(m.start(), m.end()) for m in re.finditer(r"\w+", text)]
    for budget in (16, 64, 256):
        got = chunks_of(text, budget)
        assert not any(c.oversize for c in got)
        inside = [b for b in boundaries(got) if start < b < end]
        assert len(inside) >= 10_000 // (budget * 6)
        assert not any(s < b < e for b in inside for s, e in words)  # never inside a word
        # The code after the literal is cut as code: `render` stays whole.
        render = text[text.index("def render") : text.index("def main")].rstrip()
        assert any(render in c.text for c in got) or count_tokens(render) > budget


def test_minified_javascript_is_cut_between_tokens() -> None:
    text = (CORPUS / "bundle.min.js").read_text(encoding="utf-8")
    assert text.count("\n") == 1
    got = chunks_of(text, 32, "javascript")
    assert len(got) > 20
    # Each function of the bundle fits 32 tokens and starts a chunk or sits inside one whole.
    for m in re.finditer(r"function f\d+\(a,b\)\{.*?\}\}\}", text):
        assert not any(m.start() < b < m.end() for b in boundaries(got)) or count_tokens(m.group()) > 32


def test_a_long_one_line_chain_comes_flat_in_order() -> None:
    # "a.b().b()..." is a left-recursive chain as deep as it is long: its links come as
    # one flat level, in order (spliced in at the front one link at a time, 50,000 links
    # moved 1.25 billion list items: a 2 MB chain took 214 s, now 10).
    from sdk.chunking._languages import load_language

    links = 20_000
    text = "a" + ".b()" * links + ";\n"
    splitter = CodeSplitter(text, "javascript", load_language("javascript"))
    splitter._load()
    chain = splitter.tree.root_node.children[0].children[0]
    children = splitter._children(chain)
    assert [c.start_byte for c in children] == sorted(c.start_byte for c in children)
    assert all(a.end_byte <= b.start_byte for a, b in itertools.pairwise(children))
    assert children[0].start_byte == 0 and children[-1].end_byte == chain.end_byte
    assert b"".join(c.text or b"" for c in children) == text.encode()[: chain.end_byte]
    assert len(children) >= 3 * links
    got = chunks_of(text, 64, "javascript")
    assert "".join(c.text for c in got) == text


def test_unknown_language_falls_back_to_prose_and_says_so() -> None:
    text = "Some words that are not code at all, just a sentence or two. " * 5
    with pytest.warns(ChunkingWarning, match="could not tell the language"):
        got = chunk(text, 8, kind="code")
    check_chunks(text, got, 8)
    assert {c.kind for c in got} == {"text"}


def test_language_from_content_and_shebang() -> None:
    go = code(
        """
        package main

        import "fmt"

        func main() {
        \tx := 1
        \tfmt.Println(x)
        }
        """
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert {c.language for c in chunk(go, 8, kind="code")} == {"go"}
        script = "#!/usr/bin/env bash\nset -e\necho hi\n"
        assert {c.language for c in chunk(script, 4, kind="code")} == {"bash"}


def test_filename_hint(tmp_path: Path) -> None:
    text = 'fn main() {\n    let v = vec![1, 2, 3];\n    println!("{:?}", v);\n}\n'
    assert {c.language for c in chunk(text, 6, kind="code", filename="src/main.rs")} == {"rust"}
    target = tmp_path / "main.rs"
    target.write_text(text, encoding="utf-8", newline="")
    got = Chunker(6).chunk_file(target, kind="code")
    check_chunks(text, got, 6)
    assert {c.language for c in got} == {"rust"}
    assert [c.path for c in got if "let v" in c.text] == ["main"]


def test_chunk_file_keeps_crlf_and_non_ascii(tmp_path: Path) -> None:
    text = 'def 関数():\r\n    """説明"""\r\n    return "値"\r\n\r\n\r\ndef other():\r\n    return 1\r\n'
    target = tmp_path / "mod.py"
    target.write_bytes(text.encode("utf-8"))
    got = Chunker(12).chunk_file(target, kind="code")
    check_chunks(text, got, 12)
    assert got[0].path == "関数"
    assert any(c.text.startswith("def other") for c in got)


def test_whitespace_only_and_tiny_inputs() -> None:
    for text in (" ", "\n\n\n", "x", "   \n\t\n" * 50, "#"):
        got = chunks_of(text, 1)
        assert "".join(c.text for c in got) == text
    assert chunk("", 5, kind="code", language="python") == []


def test_object_literal_keys_are_not_definitions() -> None:
    text = "function setup() {\n  const config = { server: { port: 8080, host: 'localhost', tls: 0 } };\n}\n"
    got = chunks_of(text, 8, "javascript")
    assert {c.path for c in got} <= {"setup"}


@pytest.mark.parametrize(
    ("language", "text"),
    [
        ("python", "s = " + " + ".join(f'"part{i}"' for i in range(3000)) + "\n"),
        ("python", "s = (" + " +\n    ".join(f'"part{i}"' for i in range(1500)) + ")\n"),
        ("python", "x = " + "[" * 500 + "1" + "]" * 500 + "\n"),
        ("javascript", "a.b()" + ".c(1)" * 2000 + ";\n"),
        ("json", "[" * 2000 + "]" * 2000),
        ("c", "int x = " + "(" * 400 + "1" + ")" * 400 + ";\n"),
    ],
    ids=["flat-sum", "multiline-sum", "nested-lists", "call-chain", "nested-json", "nested-parens"],
)
def test_deeply_nested_code_chunks_without_recursion_errors(language: str, text: str) -> None:
    for budget in (16, 64):
        got = chunks_of(text, budget, language)
        assert len(got) > 1
        assert not any(c.oversize for c in got)


def test_decorators_open_the_first_chunk_of_a_definition_that_is_cut() -> None:
    text = code(
        """
        # Explains g: this comment belongs to it.
        @register("g")
        @functools.cache
        def g(x):
            first = transform(x, mode="fast", retries=3)
            second = transform(first, mode="slow", retries=5)
            return combine(first, second, weights=(0.25, 0.75))
        """
    )
    head = text[: text.index("\n    first")]
    # Budgets where the head fits but the function alone does not: it must be cut.
    for budget in range(count_tokens(head), count_tokens(text[text.index("def g") :])):
        got = chunks_of(text, budget)
        assert head in got[0].text, budget
        assert got[0].path == "g"


@pytest.mark.parametrize("language", ["python", "bash", "ruby", "javascript", "c"])
def test_token_edges_inside_a_grapheme_are_moved_to_its_end(language: str) -> None:
    # Comments keep the CR of a CRLF (the LF is outside the node), and an identifier
    # may stop before a combining mark: neither edge may become a cut.
    text = '# note one\r\nx = 1 # two\r\ncafe\u0301 = e\u0301e\r\n// three\r\ny = "ok"\r\n' * 3
    for budget in range(1, 24):
        chunks_of(text, budget, language)


@pytest.mark.parametrize(
    ("source", "language", "budget"),
    [
        ("fn f(x: i32) -> i32 {\n    x + 1\n}\u200d\n", "rust", 16),
        ("x = a + b + c + d + e\u200d\n", "python", 3),
        ("let x = a + b + c + d + e\u200d;\n", "javascript", 3),
        ("|\ufe0f(" + "a " * 100 + ")", "bash", 8),
        ("|\u20d0(" + "a " * 100 + ")", "bash", 8),
    ],
)
def test_a_mark_after_a_node_does_not_make_it_one_oversize_chunk(
    source: str, language: str, budget: int
) -> None:
    # A zero-width joiner or a combining mark after a node's last token joins what
    # follows: its part, moved to whole clusters, spanned its whole section and came
    # back as that section, whole and oversize (20 tokens at budget 16).
    chunks = chunk(source, budget, kind="code", language=language)
    check_chunks(source, chunks, budget)
    assert not any(c.oversize for c in chunks)
