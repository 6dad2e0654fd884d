"""UAX #29 conformance: no cut where GraphemeBreakTest.txt says ×."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk.chunking import chunk
from tests.chunking import examples
from tests.invariants import check_chunks

DATA = Path(__file__).resolve().parent.parent / "data" / "GraphemeBreakTest.txt"


def cases() -> list[tuple[str, set[int], str]]:
    out = []
    for raw in DATA.read_text(encoding="utf-8").splitlines():
        line = raw.split("#")[0].strip()
        if not line:
            continue
        text = ""
        no_break: set[int] = set()
        for field in line.split():
            if field == "×":
                no_break.add(len(text))
            elif field != "÷":
                text += chr(int(field, 16))
        out.append((text, no_break, line))
    return out


CASES = cases()


def test_file_is_complete() -> None:
    assert len(CASES) > 600


@pytest.mark.parametrize("budget", [1, 2])
def test_no_cut_where_the_standard_forbids(budget: int) -> None:
    failures = []
    for text, no_break, line in CASES:
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
            continue  # lone surrogates are rejected with a ValueError by design
        cuts = {c.end for c in chunk(text, max_tokens=budget)[:-1]}
        if cuts & no_break:
            failures.append(line)
    assert failures == []


# -- characters that join the grapheme before them (or the one after) -------------------

# One strategy per class of joining code point: UAX #29 Extend (combining marks,
# variation selectors, emoji modifiers), ZWJ, SpacingMark, Prepend, plus the Indic
# virama and regional indicators.
JOINERS = st.one_of(
    st.just("\u200d"),
    st.characters(categories=["Mn", "Me"]),  # type: ignore[list-item]
    st.characters(categories=["Mc"]),  # type: ignore[list-item]
    st.sampled_from(["\ufe0e", "\ufe0f", "\U000e0100", "\U000e01ef"]),  # variation selectors
    st.sampled_from([chr(c) for c in range(0x1F3FB, 0x1F400)]),  # emoji modifiers
    st.sampled_from(["\u0600", "\u0605", "\u06dd", "\u0d4e", "\U000111c2"]),  # Prepend
    st.sampled_from(["\u094d", "\u0903", "\u093e", "\u0e33", "\U0001f1ef", "\U0001f1f5"]),
)
CODE_ATOMS = st.sampled_from(
    [
        *"xab1=-+*/(){}[];:,.'\"#",
        " ",
        "  ",
        "\n",
        "\t",
        "क",
        "👍",
        "👨",
        "def ",
        "return ",
        "const ",
        "// c\n",
    ]
)
JOINED_CODE = st.lists(st.one_of(CODE_ATOMS, JOINERS), max_size=40).map("".join)
KINDS = st.sampled_from(
    [("code", "python"), ("code", "javascript"), ("text", None), ("markdown", None), ("json", None)]
)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=JOINED_CODE, kind=KINDS, budget=st.integers(1, 6))
def test_no_cut_inside_a_cluster_or_after_a_joiner(
    text: str, kind: tuple[str, str | None], budget: int
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # broken JSON and code fall back with a warning
        chunks = chunk(text, max_tokens=budget, kind=kind[0], language=kind[1])
    check_chunks(text, chunks, budget)  # every chunk starts a grapheme cluster
    assert not [c.text for c in chunks[:-1] if c.text.endswith("\u200d")]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("x = a\u200d - b\n", "python"),
        ("x = a\u200d - b;\n", "javascript"),
        ("x = \u0915\u094d\u200d - b\n", "python"),  # Devanagari half-form before "-"
        ("y = x\u200d\u200d-1\n", "python"),
    ],
)
def test_code_never_ends_a_chunk_with_a_joiner(text: str, language: str) -> None:
    for budget in range(1, 6):
        chunks = chunk(text, max_tokens=budget, kind="code", language=language)
        check_chunks(text, chunks, budget)
        assert not [c.text for c in chunks[:-1] if c.text.endswith("\u200d")], budget


@pytest.mark.parametrize("kind", ["json", "jsonl"])
@pytest.mark.parametrize("text", ["1\u200d", "{\u200d", '{"a": 1}\u0301 x', "[1]\n2\u0903\n3", '[[[["\u200d'])
def test_json_value_edges_never_split_a_cluster(text: str, kind: str) -> None:
    # A value (or the readable front of a broken one) followed by a character that
    # joins its last one is no value of its own.
    for budget in range(1, 5):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            chunks = chunk(text, max_tokens=budget, kind=kind)
        check_chunks(text, chunks, budget)


# Pieces that make clusters long or joined: ASCII, CR and LF, combining marks, zero
# width joiners, runs of regional indicators (paired from the run's start), an emoji, a
# Hangul syllable and a Devanagari letter with its virama.
_CLUSTER_PIECES = [
    "a",
    " ",
    "\r",
    "\n",
    "\u0301",
    "\u0308\u0308",
    "\u200d",
    "\U0001f1e6",
    "\U0001f1e6\U0001f1e9\U0001f1e6",
    "\U0001f469",
    "\uac00",
    "\u0915\u094d",
]


def _expected_edge(text: str, p: int) -> int:
    """Where a part edge at ``p`` belongs by a segmentation of the whole text."""
    import regex

    starts = [m.start() for m in regex.finditer(r"\X", text)] + [len(text)]
    edge = next(s for s in starts if s >= p)
    while edge < len(text) and text[edge - 1] == "\u200d":
        edge = next(s for s in starts if s > edge)
    return edge


def _cluster_starts(text: str) -> list[int]:
    import regex

    return [m.start() for m in regex.finditer(r"\X", text)]


@pytest.mark.parametrize(
    "text", ["x" + "\U0001f1e6" * 7 + "y", "\n" + "\U0001f1e6\U0001f1e9" * 3, "a" + "\u0301" * 70]
)
def test_an_edge_inside_a_long_run_moves_where_a_whole_segmentation_says(text: str) -> None:
    from sdk.chunking._code import _cluster_end

    for p in range(1, len(text)):
        for known in (s for s in _cluster_starts(text) if s <= p):
            assert _cluster_end(text, p, known) == _expected_edge(text, p), (p, known)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_CLUSTER_PIECES), min_size=2, max_size=16).map("".join), st.data())
def test_an_edge_moves_to_the_cluster_end_that_a_whole_segmentation_gives(
    text: str, data: st.DataObject
) -> None:
    """``_cluster_end`` (where the code splitter moves a token edge) matches clusters from
    a start near the edge, not from the text's start: it must land where segmenting the
    whole text does, past any cluster that ends in a zero width joiner."""
    from sdk.chunking._code import _cluster_end

    if len(text) < 2:
        return
    p = data.draw(st.integers(1, len(text) - 1))
    known = data.draw(st.sampled_from([s for s in _cluster_starts(text) if s <= p]))
    assert _cluster_end(text, p, known) == _expected_edge(text, p)
