"""Structural invariants on every code corpus file, judged from the syntax tree alone.

``bench/code_measures.py`` parses the source itself and never calls the chunker, so
these tests check the splitter against an independent reading of the tree.
"""

from __future__ import annotations

import itertools

import pytest

from bench.code_measures import cuts_inside_fitting_nodes, cuts_inside_tokens
from sdk import count_tokens
from sdk.chunking import Chunker, detect_language
from sdk.chunking._code import CodeSplitter, code_root
from sdk.chunking._engine import Engine, Sizer
from tests.corpus import CorpusFile, corpus_files
from tests.invariants import boundaries, check_chunks

FILES = corpus_files(("code",))
BUDGETS = (8, 16, 32, 64, 128, 256)


@pytest.mark.parametrize("cf", FILES, ids=[f.name for f in FILES])
def test_no_cut_inside_a_fitting_node_or_token(cf: CorpusFile) -> None:
    text = cf.read()
    language, _ = detect_language(text, cf.path.name)
    assert language is not None
    for budget in BUDGETS:
        chunks = Chunker(budget).chunk(text, kind="code", filename=cf.path.name)
        check_chunks(text, chunks, budget)
        assert {c.language for c in chunks} == {language}
        cuts = boundaries(chunks)
        assert cuts_inside_fitting_nodes(text, language, cuts, budget) == 0, budget
        assert cuts_inside_tokens(text, language, cuts, budget) == 0, budget
        for c in chunks:  # oversize only for one indivisible token
            assert not c.oversize or "\n" not in c.text.strip()


def test_the_measures_do_see_bad_cuts() -> None:
    text = "def f(a, b):\n    return a + b\n\n\ndef g():\n    return 1\n"
    budget = 14  # each function fits, the module does not
    assert count_tokens(text) > budget >= count_tokens(text[: text.index("\n\n")])
    assert cuts_inside_fitting_nodes(text, "python", [text.index("return a")], budget) == 1
    assert cuts_inside_fitting_nodes(text, "python", [text.index("def g")], budget) == 0
    assert cuts_inside_fitting_nodes(text, "python", [text.index("def g")], 64) == 1  # the module fits
    assert cuts_inside_tokens(text, "python", [text.index("def f") + 2], budget) == 1
    assert cuts_inside_tokens(text, "python", [text.index("return a") + 6], budget) == 0
    # A node or token over the budget may be cut.
    assert cuts_inside_fitting_nodes(text, "python", [text.index("return a")], 3) == 0
    cjk = "名前 = 'ユーザー名'\n"
    assert cuts_inside_tokens(cjk, "python", [cjk.index("ザ")], 64) == 1


def _generated(functions: int) -> str:
    body = (
        "def handler_{i}(request, *, retries=3):\n"
        '    """Handle request number {i}."""\n'
        "    payload = request.json()  # parsed body\n"
        "    for attempt in range(retries):\n"
        "        if payload.get('id') == {i}:\n"
        "            return {{'ok': True, 'attempt': attempt, 'value': payload['v'] * {i}}}\n"
        "    raise LookupError(f'no match for {{payload!r}}')\n\n\n"
    )
    return "".join(body.format(i=i) for i in range(functions))


def test_a_large_file_is_walked_lazily() -> None:
    text = _generated(6_000)  # about 1.6 MB
    assert len(text) > 1_500_000
    root = code_root(text, "python")
    splitter = root.splitter
    assert isinstance(splitter, CodeSplitter)
    raw = Engine(text, 256, Sizer("o200k_base")).run(root)
    total = splitter.tree.root_node.descendant_count
    assert raw[0].start == 0 and raw[-1].end == len(text)
    assert all(a.end == b.start for a, b in itertools.pairwise(raw))
    # Every function fits: only the top level is looked at, not the ~600k nodes below it.
    assert splitter.touched <= 6_001
    assert splitter.touched < total / 50
    assert all(r.tokens <= 256 for r in raw)
    sample = raw[:: max(1, len(raw) // 50)]
    assert all(count_tokens(text[r.start : r.end]) == r.tokens for r in sample)


def test_descending_touches_only_the_nodes_that_do_not_fit() -> None:
    text = _generated(300)
    root = code_root(text, "python")
    splitter = root.splitter
    assert isinstance(splitter, CodeSplitter)
    Engine(text, 24, Sizer("o200k_base")).run(root)
    total = splitter.tree.root_node.descendant_count
    touched = splitter.touched
    assert 300 < touched < total  # bodies were opened, small leaves were not
