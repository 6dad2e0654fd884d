"""Prose levels find and filter candidate cuts a batch at a time: on a section with no
cut above the grapheme level (a run of terminals, a CSV row of empty fields, a run of
brackets, flags), the memory beyond the cuts returned does not grow with the input.

Before, every level built a list with one Python int per character (36 bytes each)
and the sentence pattern kept 128 bytes of state per character of a run of "!": 128
bytes per input byte for ``"see" + "!" * N + "x"``. Measured with ``tracemalloc``.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import pytest

from sdk.chunking import Chunker, _prose

SHAPES: dict[str, Callable[[int], str]] = {
    "terminals": lambda n: "see" + "!" * n + "x",
    "terminals and ellipses": lambda n: "see" + "!…" * (n // 2) + "x",
    "csv": lambda n: "a" + "," * n + "\n",
    "brackets": lambda n: "[" * n,
    "prolonged marks": lambda n: "ー" * n,
    "flags": lambda n: "\U0001f1ef\U0001f1f5\U0001f1eb\U0001f1f7" * (n // 4),
    "dashes": lambda n: "-" * n,
}


def _transient(text: str) -> int:
    """Peak of Python allocations while finding the section's cuts, beyond what the
    returned cuts themselves hold."""
    tracemalloc.start()
    try:
        _, cuts = _prose.boundaries(text, 0, len(text), 0)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del cuts
    return peak - kept


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_finding_cuts_takes_memory_that_does_not_grow_with_the_input(shape: str) -> None:
    small, large = SHAPES[shape](1 << 16), SHAPES[shape](1 << 17)
    grown = len(large.encode()) - len(small.encode())
    # Batches are bounded; a list of candidates per character would add 36+ bytes per
    # byte. (A run of identifier characters is left out: the regex module keeps 128 bytes
    # per grapheme of a run, bounded by IDENT_RUN_MAX, so it grows up to that size.)
    assert _transient(large) - _transient(small) <= grown, shape


def test_sentence_skip_run_is_the_old_look_ahead_form_for_every_code_point() -> None:
    import regex

    old = regex.compile(r"(?:(?![。！？｡︒﹒﹗﹖．])[\p{Sentence_Terminal}…])")
    new = regex.compile(r"[[\p{Sentence_Terminal}…]--[。！？｡︒﹒﹗﹖．]]", regex.VERSION1)
    every = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000)
    assert [m.start() for m in old.finditer(every)] == [m.start() for m in new.finditer(every)]


def test_a_run_of_terminals_chunks_within_eight_times_its_size() -> None:
    text = "see" + "!" * (1 << 18) + "x"
    chunker = Chunker(64)
    chunker.chunk("warm up, 準備。")
    tracemalloc.start()
    try:
        chunks = chunker.chunk(text, kind="text")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "".join(c.text for c in chunks) == text
    assert peak <= 8 * len(text), peak / len(text)
