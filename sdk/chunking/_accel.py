"""The chunking engine's native passes (``_native.c``), when they were built.

``native`` is the C module, or ``None`` where it could not be compiled: every caller
then takes its pure-Python path, which gives the same results (the tests run both).
Callers read ``_accel.native`` at each call, so a test can switch it off in one place.
"""

from __future__ import annotations

try:
    from . import _native
except ImportError:  # pragma: no cover - built wherever a C compiler is found
    _native = None  # type: ignore[assignment]

native = _native

__all__ = ["native"]
