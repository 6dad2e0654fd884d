"""JSON nested past depth 64 is cut by one scan of its text (``_json._flat_cuts``), its
edges as offsets: a walk over its children kept each level's children, a Section per
piece and a close per container at once (330 bytes a byte of ``[[[...]]]``)."""

from __future__ import annotations

import warnings

import pytest

from sdk.chunking import ChunkingWarning, _accel
from sdk.chunking._jsontok import Structure
from tests.chunking.test_memory_markdown import peak_per_byte

_WARM = '{"a": [1, 2, {"b": "c"}], "d": "' + "word " * 100 + '"}'


@pytest.mark.skipif(_accel.native is None, reason="the native passes were not built")
@pytest.mark.parametrize(
    ("shape", "before", "bound"),
    [
        # bytes of Python a byte at 300 KB, before and the bound (the chunks returned,
        # 30 bytes of input each at "[[[", take 9 of them). Without the native passes,
        # a value nested past Python's recursion limit is validated by the tokenizer,
        # whose stack holds a path per open container: 150 and 60 for the first two.
        ("[X]", 330, 24),
        ('{"a":X}', 90, 14),
        ('[X, "' + "word " * 20 + '"]', 60, 14),
    ],
)
def test_deep_json_peaks_at_a_few_bytes_a_byte(shape: str, before: int, bound: int) -> None:
    left, right = shape.split("X")
    depth = 300_000 // len(shape)
    text = left * depth + "1" + right * depth
    assert peak_per_byte(text, _WARM, kind="json") < bound < before


@pytest.mark.parametrize("native", [True, False])
def test_closes_are_kept_only_near_the_container_matched(
    native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past 64 levels below it, a container's close is not kept (deeper ones are cut by
    the scan, which needs none); one asked for later is matched again, the same."""
    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    depth = 20_000
    text = "[" * depth + "]" * depth
    structure = Structure(text)
    assert structure.close_of(0) == 2 * depth - 1
    assert 0 < len(structure._close) <= 65
    assert structure.close_of(5_000) == 2 * depth - 1 - 5_000


@pytest.mark.skipif(_accel.native is None, reason="the native passes were not built")
@pytest.mark.parametrize(
    ("text", "before", "bound"),
    [
        # bytes of Python a byte at 100 KB, before and the bound: the value's end was read
        # by the tokenizer (a path per open container), which a reference cycle then
        # kept alive, and the front's open containers were a frozenset and a list of ints
        # (what is left of the first: the encoder's list of token ids, 13 a byte)
        ("[" * 100_000, 399, 60),
        ('{"a":' * 20_000, 77, 20),
        ('[{"a":' * 16_000, 127, 25),
    ],
)
def test_deep_json_cut_short_peaks_at_a_few_bytes_a_byte(text: str, before: int, bound: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ChunkingWarning)
        assert peak_per_byte(text, _WARM, kind="json") < bound < before
