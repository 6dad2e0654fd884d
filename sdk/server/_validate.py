"""What a request carries, checked once at its entry, before any of it is queued or sent.

A request the server cannot serve must be a 400 that names the field, never a 500 from
somewhere deep inside (a 5xx makes anthropic-sdk and openai-python retry a request that
can never succeed, and logs a traceback per attempt). Both protocols meet here: the
OpenAI route checks the Messages-style request it was translated into, so a tool call's
``arguments`` string that parses into something too deep is caught like any other field.

The checks are pure functions of the values; each raises :class:`~._http.HTTPError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._errors import InvalidRequestError
from ..client import check_request
from ._http import HTTPError

__all__ = ["MAX_DEPTH", "check_messages", "event_id", "priority"]

# Containers nested deeper than this are refused: orjson dumps at most 254 levels, and the
# request is wrapped and re-dumped on its way to the engine; no real request comes close.
MAX_DEPTH = 128
_PRIORITY_INT = re.compile(r"-?[0-9]{1,10}")  # ASCII digits only: "²".isdigit() is true
_INT_LIMIT = 2**31
_EVENT_ID = re.compile(r"([A-Za-z0-9_-]{1,64}):([0-9]{1,15})")


def _bad(message: str, param: str | None = None) -> HTTPError:
    return HTTPError(400, "invalid_request_error", message, param=param)


def priority(header: str | None, body: object) -> str | int | None:
    """The priority a request asks for (the ``seam-priority`` header first, else the body's
    ``priority``): a tier name or an integer within 32 bits, ``None`` if none."""
    asked: object = header if header is not None else body
    if asked is None:
        return None
    if isinstance(asked, bool) or not isinstance(asked, str | int):
        raise _bad("priority: a tier name or an integer", "priority")
    if isinstance(asked, str):
        text = asked.strip()
        if _PRIORITY_INT.fullmatch(text):
            asked = int(text)
        elif len(text) > 64 or not text:
            raise _bad("priority: a tier name or an integer", "priority")
        else:
            return text
    if not -_INT_LIMIT < asked < _INT_LIMIT:
        raise _bad("priority: an integer priority must fit in 32 bits", "priority")
    return asked


def _too_deep(value: object, limit: int) -> bool:
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        children: Any
        if isinstance(v, Mapping):
            children = v.values()
        elif isinstance(v, list | tuple):
            children = v
        else:
            continue
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, Mapping | list | tuple))
    return False


def check_messages(data: Mapping[str, Any], *, max_tokens: bool) -> None:
    """A Messages-style request the engine client can send: the client's own request check
    (model, messages and their roles and content, ``max_tokens`` within 32 bits where
    required), then the nesting bound."""
    try:
        check_request(data, max_tokens=max_tokens)
    except InvalidRequestError as e:
        raise _bad(str(e), e.param) from None
    if _too_deep(data, MAX_DEPTH):
        raise _bad(f"the request nests objects and arrays more than {MAX_DEPTH} levels deep")


def event_id(value: str) -> tuple[str, int]:
    """A ``Last-Event-ID`` as this server writes it: ``<stream id>:<index>``."""
    m = _EVENT_ID.fullmatch(value.strip())
    if m is None:
        raise _bad("Last-Event-ID: not an event id of this server (<stream id>:<index>)")
    return m.group(1), int(m.group(2))
