"""The chunking engine's compiled parts, when they were built and not switched off.

``kernels`` is the C module of scans over a text's code units and over arrays of
integers (``_kernels.c``, on the limited API), or ``None``; ``native`` the C module of the
engine's passes that still read Python objects (``_native.c``), or ``None``; ``guard``
the guard around grammars' external scanners (``_guard.c``), or ``None``. Where one is
``None`` every caller takes its interpreted path, which gives the same chunks (the
guard's absence only sends the shapes it protects against to prose rules). Callers read
them here at each call (and ask :func:`on` first), so a test can switch a part
off in one place; ``SEAM_OFF=name,name`` in the environment switches off single
functions of the two (for measuring what each buys, and for differential tests).

``SEAM_INTERPRETED=1`` in the environment switches every compiled part off, to run the
whole suite (or an application) as an install without a compiler would;
``SEAM_NO_GUARD=1`` switches off the guard alone (its kill switch). An install that could
not build them says so once, in the ``sdk.chunking`` log.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

__all__ = [
    "INTERPRETED",
    "OFF",
    "STR_KIND",
    "cache",
    "call",
    "forget",
    "guard",
    "kernels",
    "native",
    "on",
    "reader",
    "units",
]

log = logging.getLogger("sdk.chunking")


def _switched_off(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


INTERPRETED = _switched_off("SEAM_INTERPRETED")


try:
    from . import _native
except ImportError:  # pragma: no cover - built wherever a C compiler is found
    _native = None  # type: ignore[assignment]

try:
    from . import _kernels
except ImportError:  # pragma: no cover - built wherever a C compiler is found
    _kernels = None  # type: ignore[assignment]

try:
    from . import _guard
except ImportError:  # pragma: no cover - built wherever a C compiler is found
    _guard = None  # type: ignore[assignment]

native = _native
kernels = _kernels
if INTERPRETED:
    native = None  # type: ignore[assignment]
    kernels = None  # type: ignore[assignment]
guard = _guard
if INTERPRETED or _switched_off("SEAM_NO_GUARD"):
    guard = None  # type: ignore[assignment]

if INTERPRETED:
    log.info("sdk.chunking: interpreted (SEAM_INTERPRETED is set): no compiled parts")
elif _native is None or _kernels is None or _guard is None:
    missing = " and ".join(
        n for n, m in (("_native", _native), ("_kernels", _kernels), ("_guard", _guard)) if m is None
    )
    log.warning(
        "sdk.chunking: running interpreted (%s not built: this install had no C compiler); "
        "the chunks are the same, slower",
        missing,
    )

OFF = frozenset(x.strip() for x in os.environ.get("SEAM_OFF", "").split(",") if x.strip())


def on(name: str) -> bool:
    """Whether the compiled function ``name`` may be used (not switched off by
    ``SEAM_OFF``); callers take ``native`` or ``kernels`` only where it is."""
    return name not in OFF


class _Call(threading.local):
    """What one thread's chunking call keeps about its text, until :func:`forget` (per
    thread: threads chunking other texts side by side would otherwise take turns at one
    entry, each making again what the other dropped)."""

    # The last text's code units (the engine asks for the text it is chunking, again and
    # again): a text past ASCII, its units, their kind.
    last: tuple[str, bytes, int] | None = None
    # The last text whose characters all have entries in the class tables (``_prose.tables``).
    filled: str | None = None


call = _Call()
_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"
_UTF32 = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"


def units(text: str, *, keep: bool = True) -> tuple[str | bytes, int]:
    """``text``'s code points as the kernels read them, and their kind: an ASCII text
    itself (kind 0: read in place, no copy), else a buffer of 1, 2 or 4 bytes a code
    point (native byte order), the narrowest that holds them (the width CPython stores
    the text in, so the copy costs what the text does; kind: the bytes a code point).
    A copy is kept for the next call unless ``keep`` is false (a slice asked for once)."""
    if text.isascii():
        return text, 0
    last = call.last
    if last is not None and last[0] is text:
        return last[1], last[2]
    try:
        found, kind = text.encode("latin-1"), 1
    except UnicodeEncodeError:
        # (A lone surrogate passes as itself; a text without astral code points is one
        # UTF-16 unit a code point.)
        found, kind = text.encode(_UTF16, "surrogatepass"), 2
        if len(found) != 2 * len(text):
            found, kind = text.encode(_UTF32, "surrogatepass"), 4
    if keep:
        call.last = (text, found, kind)
    return found, kind


STR_KIND = 8  # a str the kernels that take it read a block at a time


def reader(text: str) -> tuple[str | bytes, int]:
    """``text`` for a kernel that reads it through its scans alone: its units when they
    are at hand (an ASCII text, or the last text's copy), else the str itself (kind 8,
    which those kernels read a block at a time: no copy of a whole text that is not
    ASCII, which would take up to four bytes a character for the whole call)."""
    if text.isascii():
        return text, 0
    last = call.last
    if last is not None and last[0] is text:
        return last[1], last[2]
    return text, STR_KIND


def forget() -> None:
    """Drop what this thread kept about its text (a chunking call is done)."""
    call.last = None
    call.filled = None


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
