"""JSON parsing that keeps integers exact.

orjson reads an integer beyond 64 bits as a float (``-9223372036854775809`` becomes
``-9.223372036854776e+18``), silently changing a tool's input or an event's value. Where
the text holds a run of 19 or more digits, the standard library parser, which keeps
integers of any size, reads it instead; everything else keeps orjson's speed.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["loads"]

_LONG_DIGITS = re.compile(rb"\d{19}")


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """``orjson.loads``, exact for integers of any size. Raises ``orjson.JSONDecodeError``
    (a ``ValueError``) for invalid JSON, as orjson does."""
    value = orjson.loads(data)
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if _LONG_DIGITS.search(raw) is None:
        return value
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return value  # orjson read it: keep its reading
