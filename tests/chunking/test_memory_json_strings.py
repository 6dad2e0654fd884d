"""A long JSON string is cut as offsets: its cuts are the engine's uniform parts, and
its escapes are kept as arrays, not a Section per cut and a set of every position
inside an escape."""

from __future__ import annotations

import pytest

from sdk.chunking import _accel
from tests.chunking.test_memory_markdown import peak_per_byte

_WARM = '["' + "Words here. " * 60 + "line\\n" * 60 + "\\u0000" * 60 + '"]'


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize(
    ("unit", "before", "bound"),
    [
        # bytes of Python a byte at 300 KB: before (native path), and the bound on both
        # paths (the pure-Python engine holds more for the packing, 22.5 for the last two)
        ("word ", 37, 14),  # a Section per word
        ("line\\n", 44, 26),  # a tuple per escape, a set of the positions inside one
        ("\\u0000", 108, 26),
    ],
)
def test_a_long_string_peaks_at_a_few_bytes_a_byte(
    unit: str, before: int, bound: int, native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not native:
        monkeypatch.setattr(_accel, "native", None)
        monkeypatch.setattr(_accel, "kernels", None)
    text = '["' + unit * (300_000 // len(unit)) + '"]'
    assert peak_per_byte(text, _WARM, kind="json") < bound < before


@pytest.mark.skipif(_accel.native is None, reason="the native passes were not built")
@pytest.mark.parametrize(
    ("unit", "before", "bound"),
    [
        # bytes of Python a byte at 300 KB, before and the bound: the prose levels listed
        # a candidate per character as Python ints before dropping those inside escapes
        # (without the native passes prose's own level scans hold lists: 45-70)
        ("\\n", 55, 20),
        ('\\"(', 50, 20),
    ],
)
def test_a_string_of_escapes_peaks_at_a_few_bytes_a_byte(unit: str, before: int, bound: int) -> None:
    text = '["' + unit * (300_000 // len(unit)) + '"]'
    assert peak_per_byte(text, _WARM, kind="json") < bound < before
