"""The chunking engine's compiled parts, when they were built and not switched off.

``native`` is the C module of the engine's passes (``_native.c``), or ``None``; ``guard``
the guard around grammars' external scanners (``_guard.c``), or ``None``. Where either is
``None`` every caller takes its interpreted path, which gives the same chunks (the
guard's absence only sends the shapes it protects against to prose rules). Callers read
``_accel.native`` at each call, so a test can switch it off in one place.

``SEAM_INTERPRETED=1`` in the environment switches every compiled part off, to run the
whole suite (or an application) as an install without a compiler would;
``SEAM_NO_GUARD=1`` switches off the guard alone (its kill switch). An install that could
not build them says so once, in the ``sdk.chunking`` log.
"""

from __future__ import annotations

import logging
import os

__all__ = ["INTERPRETED", "cache", "guard", "native"]

log = logging.getLogger("sdk.chunking")


def _switched_off(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


INTERPRETED = _switched_off("SEAM_INTERPRETED")


try:
    from . import _native
except ImportError:  # pragma: no cover - built wherever a C compiler is found
    _native = None  # type: ignore[assignment]

try:
    from . import _guard
except ImportError:  # pragma: no cover - built wherever a C compiler is found
    _guard = None  # type: ignore[assignment]

native = _native
if INTERPRETED:
    native = None  # type: ignore[assignment]
guard = _guard
if INTERPRETED or _switched_off("SEAM_NO_GUARD"):
    guard = None  # type: ignore[assignment]

if INTERPRETED:
    log.info("sdk.chunking: interpreted (SEAM_INTERPRETED is set): no compiled parts")
elif _native is None or _guard is None:
    missing = " and ".join(n for n, m in (("_native", _native), ("_guard", _guard)) if m is None)
    log.warning(
        "sdk.chunking: running interpreted (%s not built: this install had no C compiler); "
        "the chunks are the same, slower",
        missing,
    )

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
