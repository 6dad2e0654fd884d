"""Property tests: tiling, exact budgets and grapheme safety on arbitrary Unicode."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk import count_tokens
from sdk.chunking import Chunker
from sdk.chunking._engine import Sizer
from tests.chunking import examples
from tests.invariants import check_chunks

# Arbitrary scalar values (no surrogates), plus an alphabet rich in the hard cases.
ANY_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=300)
HARD = st.lists(
    st.sampled_from(
        [
            *"ab cd.\n\r\t、。，！？「」（）ーっャ ユーザー名漢字かなカナ한국어",
            *("\u200d", "\u0301", "\u0302", "🇯", "🇵", "👨", "👩", "🏽", "\ufe0f"),
            *("\u2028", "\u2029", "\u3000"),
            *("क", "्", "ष", "ि", "\u1100", "\u1161", "\u11a8", "/", "  ", "\n\n", "'s", "123"),
        ]
    ),
    max_size=120,
).map("".join)
BUDGETS = st.integers(min_value=1, max_value=40)
SETTINGS = settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(text=ANY_TEXT, budget=BUDGETS)
def test_invariants_on_arbitrary_text(text: str, budget: int) -> None:
    check_chunks(text, Chunker(budget).chunk(text, kind="text"), budget)


@SETTINGS
@given(text=HARD, budget=BUDGETS)
def test_invariants_on_hard_alphabet(text: str, budget: int) -> None:
    check_chunks(text, Chunker(budget).chunk(text, kind="text"), budget)


@SETTINGS
@given(text=HARD, budget=st.integers(min_value=1, max_value=10))
def test_invariants_cl100k(text: str, budget: int) -> None:
    chunks = Chunker(budget, encoding="cl100k_base").chunk(text, kind="text")
    check_chunks(text, chunks, budget, encoding="cl100k_base")


@SETTINGS
@given(text=HARD, budget=st.integers(min_value=3, max_value=30), overlap=st.integers(0, 2))
def test_overlap_view(text: str, budget: int, overlap: int) -> None:
    plain = Chunker(budget - overlap).chunk(text, kind="text")
    got = Chunker(budget, overlap=overlap).chunk(text, kind="text")
    assert [c.end for c in got] == [c.end for c in plain]
    for c in got:
        assert text[c.start : c.end] == c.text
        assert c.tokens == count_tokens(c.text)
        assert c.oversize or c.tokens <= budget


# Punctuation, marks, digits, apostrophes and letters of several scripts next to each
# other: the corners of the pre-tokenizer patterns.
JUNCTION = st.lists(
    st.sampled_from(
        [*"'-[]().,:/!?\"a Z9٣", "\u0301", "\u0300", "\u20dd", "ā", "字", "ー", "\n", "\r", "\t", "  "]
    ),
    max_size=12,
).map("".join)


SIZERS = {name: Sizer(name) for name in ("o200k_base", "cl100k_base")}


@settings(max_examples=examples(300), deadline=None)
@given(left=JUNCTION, right=JUNCTION)
def test_additive_junction_rule_on_pattern_corners(left: str, right: str) -> None:
    for name in ("o200k_base", "cl100k_base"):
        sizer = SIZERS[name]
        text = left + right
        if left and right and sizer.additive(text, len(left)):
            assert sizer.count(text) == sizer.count(left) + sizer.count(right), (name, left, right)


@settings(max_examples=examples(100), deadline=None)
@given(left=HARD, right=HARD)
def test_additive_junction_rule(left: str, right: str) -> None:
    # Where the engine trusts counts to add up across a cut, they must.
    for name in ("o200k_base", "cl100k_base"):
        sizer = SIZERS[name]
        text = left + right
        if left and right and sizer.additive(text, len(left)):
            assert sizer.count(text) == sizer.count(left) + sizer.count(right)
