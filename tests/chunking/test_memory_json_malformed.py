"""A JSON container cut short (truncated, or a bad value at its end) is cut as a
complete one is: in runs of members, its readable front found by feeding the tokenizer
a window at a time. Its events at once, then a Section per member, took 240 bytes a
byte of an array of numbers cut short."""

from __future__ import annotations

import warnings

import pytest

from sdk.chunking import ChunkingWarning, _accel, chunk
from tests.chunking.test_memory_markdown import peak_per_byte
from tests.invariants import check_chunks

_WARM = '{"a": [1, 2, {"b": "c"}], "d": "' + "word " * 100 + '"} [1, 2'


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(
    ("text", "before"),
    [
        # bytes of Python a byte at 100 KB before (both paths); the bound is 20: an array
        # of one-digit numbers that closes takes 16 at this size (its chunks, and fixed
        # costs), 12.4 at 300 KB
        ("[" + "1," * 50_000, 236),
        ("[" + "1," * 50_000 + "-]", 240),
        ("[" + "1," * 50_000 + "]", 236),
        ("{" + '"a":1,' * 16_000, 87),
    ],
    ids=["truncated", "bad value", "trailing comma", "object"],
)
def test_a_container_cut_short_peaks_as_a_complete_one(
    text: str, before: int, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChunkingWarning)
        assert peak_per_byte(text, _WARM, kind="json") < 20 < before


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("count", [513, 514, 1025, 1026, 3000])
@pytest.mark.parametrize("budget", [16, 64, 4096])
def test_a_container_cut_short_is_cut_between_its_members(
    count: int, budget: int, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every chunk ends after a member's comma (or is the tail), and the open member
    after the runs (here an array cut short inside it) is cut as one too."""
    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    text = "[" + "10, " * count + '{"k": [' + "2, " * count
    with pytest.warns(ChunkingWarning, match="malformed JSON"):
        chunks = chunk(text, budget, kind="json")
    check_chunks(text, chunks, budget)
    for c in chunks[:-1]:
        assert c.text.rstrip().endswith((",", "[")), c.text[-20:]
    inner = [c.path for c in chunks if c.start > text.index("{")]
    assert all(p is not None and p.startswith(f"/{count}") for p in inner)
    assert inner or budget > 1000  # (at 4096 the member opens inside a chunk)


@pytest.mark.parametrize("native", [True, False])
def test_an_unterminated_string_is_cut_as_offsets(native: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """One unparseable stretch alone at the top is placed in the document's stead, so
    its prose cuts stay offsets (a Section per word: 100 bytes a byte at 100 KB)."""
    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChunkingWarning)
        assert peak_per_byte('"' + "a b " * 25_000, _WARM, kind="json") < 30
