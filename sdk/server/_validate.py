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
    _check_shapes(data)


# The Messages API's content blocks a request may carry; a type past these is refused here
# rather than dropped or failed on by the engine.
_BLOCK_TYPES = frozenset(
    {
        "text",
        "image",
        "document",
        "search_result",
        "tool_use",
        "tool_result",
        "server_tool_use",
        "web_search_tool_result",
        "thinking",
        "redacted_thinking",
    }
)
_TOOL_CHOICES = frozenset({"auto", "any", "tool", "none"})


def _check_block(block: Mapping[str, Any], where: str) -> None:
    kind = block.get("type")
    if kind not in _BLOCK_TYPES:
        raise _bad(f"{where}.type: {str(kind)[:40]!r} is not a content block type", "messages")
    if kind == "text" and not isinstance(block.get("text"), str):
        raise _bad(f"{where}.text: a text block needs its text (a string)", "messages")
    if kind in ("image", "document") and not isinstance(block.get("source"), Mapping):
        raise _bad(f"{where}.source: an {kind} block needs a source (an object)", "messages")
    if kind == "tool_use" and not (
        isinstance(block.get("name"), str) and isinstance(block.get("input"), Mapping)
    ):
        raise _bad(f"{where}: a tool_use block needs a name and an input object", "messages")
    if kind == "tool_result":
        if not isinstance(block.get("tool_use_id"), str):
            raise _bad(f"{where}.tool_use_id: a tool_result block names its tool_use", "messages")
        content = block.get("content")
        if isinstance(content, list):
            for j, inner in enumerate(content):
                if not isinstance(inner, Mapping):
                    raise _bad(f"{where}.content[{j}]: a content block is an object", "messages")
                _check_block(inner, f"{where}.content[{j}]")
        elif content is not None and not isinstance(content, str):
            raise _bad(f"{where}.content: a string or a list of content blocks", "messages")


def _check_shapes(data: Mapping[str, Any]) -> None:
    """What the client's check leaves to the API: at least one message, content blocks of
    the API's types with their fields, and the shapes of ``system``, ``stop_sequences``,
    ``tools``, ``tool_choice`` and ``metadata``."""
    messages = data.get("messages")
    if not messages:
        raise _bad("messages: at least one message is required", "messages")
    for i, m in enumerate(messages):
        content = m.get("content")
        if isinstance(content, list | tuple):
            for j, block in enumerate(content):
                _check_block(block, f"messages[{i}].content[{j}]")
    system = data.get("system")
    text_blocks = isinstance(system, list) and all(
        isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str) for b in system
    )
    if system is not None and not isinstance(system, str) and not text_blocks:
        raise _bad("system: a string or a list of text blocks", "system")
    stops = data.get("stop_sequences")
    if stops is not None and not (isinstance(stops, list) and all(isinstance(x, str) for x in stops)):
        raise _bad("stop_sequences: a list of strings", "stop_sequences")
    tools = data.get("tools")
    if tools is not None and not (
        isinstance(tools, list)
        and all(isinstance(t, Mapping) and isinstance(t.get("name"), str) for t in tools)
    ):
        raise _bad("tools: a list of tools, each with a name", "tools")
    choice = data.get("tool_choice")
    if choice is not None and not (isinstance(choice, Mapping) and choice.get("type") in _TOOL_CHOICES):
        raise _bad("tool_choice: an object whose type is auto, any, tool or none", "tool_choice")
    if (
        isinstance(choice, Mapping)
        and choice.get("type") == "tool"
        and not isinstance(choice.get("name"), str)
    ):
        raise _bad("tool_choice: a tool choice names its tool", "tool_choice")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise _bad("metadata: an object", "metadata")


def event_id(value: str) -> tuple[str, int]:
    """A ``Last-Event-ID`` as this server writes it: ``<stream id>:<index>``."""
    m = _EVENT_ID.fullmatch(value.strip())
    if m is None:
        raise _bad("Last-Event-ID: not an event id of this server (<stream id>:<index>)")
    return m.group(1), int(m.group(2))
