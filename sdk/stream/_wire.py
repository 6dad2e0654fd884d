"""Typed events back to the Messages API's SSE wire form (what ``sdk.server`` sends).

:func:`event_to_wire` is the inverse of :func:`~sdk.stream.parse_anthropic_event` for
every event this SDK models: an event parsed, written and parsed again is the same
value. :func:`sse_frame` writes one SSE frame with an optional ``id:`` line.
"""

from __future__ import annotations

from typing import Any

import orjson

from ._accumulate import wire_blocks
from ._events import (
    CitationsDelta,
    ContentBlockDeltaEvent,
    ContentBlockStartEvent,
    ContentBlockStopEvent,
    Delta,
    ErrorEvent,
    Event,
    InputJSONDelta,
    MessageDeltaEvent,
    MessageStartEvent,
    MessageStopEvent,
    PingEvent,
    SignatureDelta,
    TextDelta,
    ThinkingDelta,
    UnknownEvent,
)

__all__ = ["delta_to_wire", "event_to_wire", "sse_frame"]


def delta_to_wire(d: Delta) -> dict[str, Any]:
    if isinstance(d, TextDelta):
        return {"type": "text_delta", "text": d.text}
    if isinstance(d, InputJSONDelta):
        return {"type": "input_json_delta", "partial_json": d.partial_json}
    if isinstance(d, ThinkingDelta):
        return {"type": "thinking_delta", "thinking": d.thinking}
    if isinstance(d, SignatureDelta):
        return {"type": "signature_delta", "signature": d.signature}
    if isinstance(d, CitationsDelta):
        return {"type": "citations_delta", "citation": dict(d.citation)}
    return {**d.raw, "type": d.type} if d.raw else {"type": d.type}


def event_to_wire(ev: Event) -> tuple[str, dict[str, Any]]:
    """The SSE event name and JSON payload of ``ev``."""
    if type(ev) is ContentBlockDeltaEvent:
        return "content_block_delta", {
            "type": "content_block_delta",
            "index": ev.index,
            "delta": delta_to_wire(ev.delta),
        }
    if isinstance(ev, MessageStartEvent):
        msg = {
            "id": ev.id,
            "type": "message",
            "role": ev.role,
            "model": ev.model,
            "content": wire_blocks(ev.content),
            "stop_reason": None,
            "stop_sequence": None,
            "usage": ev.usage.to_wire(),
        }
        return "message_start", {"type": "message_start", "message": msg}
    if isinstance(ev, ContentBlockStartEvent):
        (block,) = wire_blocks([ev.block]) or [{"type": "text", "text": ""}]
        return "content_block_start", {
            "type": "content_block_start",
            "index": ev.index,
            "content_block": block,
        }
    if isinstance(ev, ContentBlockStopEvent):
        return "content_block_stop", {"type": "content_block_stop", "index": ev.index}
    if isinstance(ev, MessageDeltaEvent):
        return "message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": ev.stop_reason, "stop_sequence": ev.stop_sequence},
            "usage": ev.usage.to_wire(),
        }
    if isinstance(ev, MessageStopEvent):
        return "message_stop", {"type": "message_stop"}
    if isinstance(ev, PingEvent):
        return "ping", {"type": "ping"}
    if isinstance(ev, ErrorEvent):
        return "error", {"type": "error", "error": {"type": ev.error_type, "message": ev.message}}
    if isinstance(ev, UnknownEvent):
        data = ev.data if isinstance(ev.data, dict) else {"type": ev.type, "data": ev.data}
        return ev.type, data
    raise TypeError(f"not an event: {ev!r}")


def sse_frame(event: str, data: dict[str, Any], id: str | None = None) -> bytes:
    """One SSE frame. ``event`` and ``id`` must not contain line breaks (they are names
    this SDK makes, never data from a peer)."""
    head = b"id: " + id.encode() + b"\n" if id is not None else b""
    return head + b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"
