"""The shape of a session file, checked once, on load.

A file that parses but holds a value of the wrong type (``"usage": "abc"``) must fail
when it is loaded, naming the place in the document (``turns[3].usage``), not later
with a bare ``TypeError`` far from the file. Content blocks are checked by the same
rules when they enter the log (:func:`check_block`), so whatever a session can save,
it can load.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

from ..tokens import known_encodings

__all__ = ["DocumentError", "check_block", "check_document"]


class DocumentError(ValueError):
    """A value of a session document is missing or of the wrong type; ``where`` is its
    path in the document (``turns[3].usage``)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def _bad(where: str, expected: str, v: Any) -> DocumentError:
    return DocumentError(where, f"expected {expected}, got {_kind(v)}")


def _field(obj: dict[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise DocumentError(f"{where}.{key}" if where else key, "missing")
    return obj[key]


def _object(v: Any, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise _bad(where, "an object", v)
    return v


def _array(v: Any, where: str, length: int | None = None) -> list[Any]:
    if not isinstance(v, list):
        raise _bad(where, "an array", v)
    if length is not None and len(v) != length:
        raise DocumentError(where, f"expected {length} items, got {len(v)}")
    return v


def _str(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise _bad(where, "a string", v)
    return v


def _bool(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise _bad(where, "a boolean", v)
    return v


def _int(v: Any, where: str, minimum: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _bad(where, "an integer", v)
    if v < minimum:
        raise DocumentError(where, f"must be at least {minimum}, got {v}")
    return v


def _opt_int(v: Any, where: str) -> int | None:
    return None if v is None else _int(v, where)


def _opt_str(v: Any, where: str) -> str | None:
    return None if v is None else _str(v, where)


# The fields of content blocks that this package reads or that the APIs require to have
# one type; any other field is passed through as it is.
_BLOCK_FIELDS: dict[str, dict[str, Callable[[Any, str], Any]]] = {
    "text": {"text": _str},
    "thinking": {"thinking": _str, "signature": _str},
    "redacted_thinking": {"data": _str},
    "tool_use": {"id": _str, "name": _str, "input": _object},
    "tool_result": {"tool_use_id": _str, "is_error": _bool},
    "image": {"source": _object},
    "document": {"source": _object},
}


def check_block(block: Any, where: str) -> None:
    """A content block: an object with a ``type`` string, and its known fields typed."""
    b = _object(block, where)
    kind = _str(_field(b, "type", where), f"{where}.type")
    for key, check in _BLOCK_FIELDS.get(kind, {}).items():
        if key in b:
            check(b[key], f"{where}.{key}")
    if "cache_control" in b:
        _object(b["cache_control"], f"{where}.cache_control")
    if kind == "tool_result" and "content" in b:
        inner = b["content"]
        if not isinstance(inner, str):
            for i, x in enumerate(_array(inner, f"{where}.content")):
                check_block(x, f"{where}.content[{i}]")


def _blocks(v: Any, where: str) -> None:
    for i, b in enumerate(_array(v, where)):
        check_block(b, f"{where}[{i}]")


def _usage(v: Any, where: str) -> None:
    if v is not None:
        for i, n in enumerate(_array(v, where, 4)):
            _opt_int(n, f"{where}[{i}]")


def _scale(v: Any, where: str) -> None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _bad(where, "a number", v)
    if not (math.isfinite(v) and v > 0):
        raise DocumentError(where, f"must be a finite number above 0, got {v!r}")


def _encoding(v: Any, where: str) -> None:
    """A tiktoken name, a tokenizer.json path (or its folder), or null (a tokenizer object,
    passed again at load)."""
    if v is None:
        return
    if _str(v, where) in known_encodings():
        return
    if os.path.isfile(v) or os.path.isfile(os.path.join(v, "tokenizer.json")):
        return
    raise DocumentError(
        where, f"unknown encoding {v!r} (known: {', '.join(known_encodings())}, or a tokenizer.json path)"
    )


def _summary(v: Any, where: str) -> None:
    if v is not None:
        cut, text = _array(v, where, 2)
        _int(cut, f"{where}[0]")
        _str(text, f"{where}[1]")


def _last_fit(v: Any, where: str) -> None:
    if v is not None:
        items = _array(v, where, 4)
        for i in range(3):
            _int(items[i], f"{where}[{i}]")
        _opt_str(items[3], f"{where}[3]")


def _tools(v: Any, where: str) -> None:
    for i, t in enumerate(_array(v, where)):
        _object(t, f"{where}[{i}]")


def _role(v: Any, where: str) -> None:
    if _str(v, where) not in ("user", "assistant"):
        raise DocumentError(where, f"must be 'user' or 'assistant', got {v!r}")


def _content(v: Any, where: str) -> None:
    _blocks(v, where)
    if not v:
        raise DocumentError(where, "a turn needs at least one content block")


_SESSION: dict[str, Callable[[Any, str], Any]] = {
    "model": _str,
    "system": _blocks,
    "tools": _tools,
    "context_window": lambda v, w: None if v is None else _int(v, w, 1),
    "reserve_output": lambda v, w: None if v is None else _int(v, w, 1),
    "encoding": _encoding,
    "scale": _scale,
    "summarize": _bool,
    "summary_tokens": _int,
    "summary": _summary,
    "epoch": _int,
    "last_fit": _last_fit,
}
_TURN: dict[str, Callable[[Any, str], Any]] = {
    "role": _role,
    "content": _content,
    "pinned": _bool,
    "estimate": _int,
    "usage": _usage,
    "request_estimate": _opt_int,
}
_PENDING: dict[str, Callable[[Any, str], Any]] = {
    "after": _int,
    "text": _str,
    "usage": _usage,
    "requests": _int,
    "request_estimate": _opt_int,
}


def _fields(obj: Any, where: str, spec: dict[str, Callable[[Any, str], Any]]) -> None:
    o = _object(obj, where)
    for key, check in spec.items():
        check(_field(o, key, where), f"{where}.{key}")


def check_document(doc: dict[str, Any]) -> None:
    """Raise :class:`DocumentError` at the first value of a session document (as
    ``Session.to_document`` writes it) that is missing or of the wrong type."""
    _fields(_field(doc, "session", ""), "session", _SESSION)
    for i, t in enumerate(_array(_field(doc, "turns", ""), "turns")):
        _fields(t, f"turns[{i}]", _TURN)
    pending = _field(doc, "pending", "")
    if pending is not None:
        _fields(pending, "pending", _PENDING)
