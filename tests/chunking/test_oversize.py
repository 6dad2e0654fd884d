"""``oversize`` means over ``max_tokens``, whatever lowers the packing budget.

Overlap packs chunks to ``max_tokens - overlap`` and heading trails lower the budget
too; a unit between that budget and ``max_tokens`` fits what the caller allowed, so
it is not oversize (it carries less overlap, or goes without its trail).
"""

from __future__ import annotations

import itertools
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk import count_tokens
from sdk.chunking import Chunk, Chunker, chunk
from tests.chunking import examples

TWO_TOKEN_GRAPHEME = "e\u0301"  # one cluster, two tokens
KINDS = [("text", None), ("markdown", None), ("code", "python"), ("auto", None)]


def check_budget(chunks: list[Chunk], max_tokens: int) -> None:
    for c in chunks:
        assert c.tokens == count_tokens(c.text), c
        assert c.oversize == (c.tokens > max_tokens), c


def test_the_grapheme_is_two_tokens() -> None:
    assert count_tokens(TWO_TOKEN_GRAPHEME) == 2


@pytest.mark.parametrize(("kind", "language"), KINDS)
def test_a_unit_that_fits_max_tokens_is_not_oversize_with_overlap(kind: str, language: str | None) -> None:
    text = f"ab {TWO_TOKEN_GRAPHEME} cd"
    chunks = chunk(text, max_tokens=2, overlap=1, kind=kind, language=language)
    check_budget(chunks, 2)
    assert TWO_TOKEN_GRAPHEME in [c.text for c in chunks]  # alone: no room for overlap
    assert not any(c.oversize for c in chunks)


@pytest.mark.parametrize("kind", ["json", "jsonl"])
def test_json_string_unit_that_fits_max_tokens_is_not_oversize(kind: str) -> None:
    text = f'"{TWO_TOKEN_GRAPHEME}"'  # the quotes stay with the grapheme: 4 tokens
    for max_tokens, overlap in [(4, 1), (4, 3), (5, 2)]:
        chunks = chunk(text, max_tokens=max_tokens, overlap=overlap, kind=kind)
        check_budget(chunks, max_tokens)
        assert not any(c.oversize for c in chunks)


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("overlap", [1, 2, 3])
def test_an_oversize_unit_that_counts_less_with_the_overlap_before_it_is_not_oversize(
    overlap: int, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "👍🏽" is 6 tokens in cl100k_base and " 👍🏽" 5: carried after the overlap, the
    unit fits ``max_tokens`` (it kept the flag of the unit alone, before)."""
    if not native:
        monkeypatch.setattr("sdk.chunking._accel.native", None)
        monkeypatch.setattr("sdk.chunking._accel.kernels", None)
    assert count_tokens("\U0001f44d\U0001f3fd", "cl100k_base") == 6
    chunks = chunk(
        "a \U0001f44d\U0001f3fd", max_tokens=5, overlap=overlap, kind="text", encoding="cl100k_base"
    )
    for c in chunks:
        assert c.tokens == count_tokens(c.text, "cl100k_base"), c
        assert c.oversize == (c.tokens > 5), c
    assert [c.text for c in chunks] == ["a ", " \U0001f44d\U0001f3fd"]


def test_a_unit_over_max_tokens_is_still_oversize() -> None:
    chunks = chunk(f"ab {TWO_TOKEN_GRAPHEME} cd", max_tokens=1, kind="text")
    check_budget(chunks, 1)
    assert [c.text for c in chunks if c.oversize] == [TWO_TOKEN_GRAPHEME]


def test_heading_trail_is_left_off_a_unit_it_would_push_over() -> None:
    doc = f"# T\n\n{TWO_TOKEN_GRAPHEME}{TWO_TOKEN_GRAPHEME}\n"
    chunks = chunk(doc, max_tokens=3, kind="markdown", heading_context=True)
    check_budget(chunks, 3)
    assert not any(c.oversize for c in chunks)
    for c in chunks:
        assert c.text == c.context + doc[c.start : c.end]


ATOMS = st.sampled_from(
    [
        *("a", "b", " ", ".", ",", "\n", "  ", "\n\n", "# H\n", "- x\n", "def f():\n"),
        *(TWO_TOKEN_GRAPHEME, "🇯🇵", "👍🏽", "ユーザー名", "。"),
    ]
)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.lists(ATOMS, max_size=30).map("".join),
    kind=st.sampled_from(KINDS),
    max_tokens=st.integers(1, 8),
    data=st.data(),
)
def test_oversize_is_exactly_over_max_tokens(
    text: str, kind: tuple[str, str | None], max_tokens: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(0, max_tokens - 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunks = Chunker(max_tokens, overlap=overlap).chunk(text, kind=kind[0], language=kind[1])
    check_budget(chunks, max_tokens)
    for prev, c in itertools.pairwise(chunks):
        if c.oversize:
            assert c.start >= prev.end  # an oversize unit carries no overlap
    if kind[0] == "markdown" and not overlap:
        # (A trail that does not fit is left off: no budget is too small for them.)
        chunks = Chunker(max_tokens).chunk(text, kind="markdown", heading_context=True)
        check_budget(chunks, max_tokens)


@pytest.mark.parametrize("budget", [1, 2, 8, 64])
def test_a_heading_trail_too_long_for_the_budget_is_left_off(budget: int) -> None:
    """A trail that would leave less than half the budget for text goes off the chunks
    it does not fit (the whole document raised ValueError: a heading of a hundred words
    at budget 64, or six nested headings of a dozen tokens each)."""
    long_heading = "# " + "word " * 100 + "\n\nbody text here.\n\n## sub\n\nmore text.\n"
    nested = (
        "".join("#" * i + " " + "heading words here and more " * 2 + "\n\n" for i in range(1, 7)) + "body\n"
    )
    for text in (long_heading, nested):
        chunks = Chunker(budget).chunk(text, kind="markdown", heading_context=True)
        assert "".join(c.text[len(c.context) :] for c in chunks) == text
        check_budget(chunks, budget)
    # a trail that fits is still carried
    short = "# Title\n\n" + "Some words of text. " * 40
    chunks = Chunker(64).chunk(short, kind="markdown", heading_context=True)
    assert all(c.text.startswith("Title\n\n") for c in chunks[1:])
