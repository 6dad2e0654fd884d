"""The chunking engine's native passes (``_native.c``), when they were built.

``native`` is the C module, or ``None`` where it could not be compiled: every caller
then takes its pure-Python path, which gives the same results (the tests run both).
Callers read ``_accel.native`` at each call, so a test can switch it off in one place.
``guard`` is the guard around grammars' external scanners (``_guard.c``), or ``None``.
"""

from __future__ import annotations

try:
    from . import _native
except ImportError:  # pragma: no cover - built wherever a C compiler is found
    _native = None  # type: ignore[assignment]

native = _native

try:
    from . import _guard
except ImportError:  # pragma: no cover - built wherever a C compiler is found
    _guard = None  # type: ignore[assignment]

guard = _guard

# A cache per classifier the native passes ask (one entry per code point, zero until the
# classifier has been asked about it), made on first use: 1.1 MB for junction classes and
# 2.2 MB for prose flags, once per process (the encoder's tables take far more).
CODE_POINTS = 0x110000
_caches: dict[str, bytearray] = {}


def cache(name: str, entry_bytes: int) -> bytearray:
    """The cache named ``name``, of ``entry_bytes`` bytes a code point."""
    found = _caches.get(name)
    if found is None:
        found = _caches[name] = bytearray(CODE_POINTS * entry_bytes)
    return found


__all__ = ["cache", "guard", "native"]
