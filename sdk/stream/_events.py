"""Neutral, typed stream events (the shape of the Anthropic Messages stream).

Both backends speak these: Anthropic SSE events are parsed into them directly and
OpenAI chat-completion chunks are translated into them (:mod:`._openai`), so the
accumulator and everything after it see one vocabulary. Anything unknown is passed
through as :class:`UnknownEvent` / :class:`UnknownDelta` / :class:`UnknownBlock`, never
dropped and never fatal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._errors import StreamProtocolError
from .._models import (
    ContentBlock,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    UnknownBlock,
    Usage,
)
from ..http import loads_exact
from ._fast import fast_new
from ._sse import DEFAULT_MAX_EVENT_BYTES, ServerSentEvent, SSEDecoder

__all__ = [
    "AnthropicEventDecoder",
    "CitationsDelta",
    "ContentBlock",
    "ContentBlockDeltaEvent",
    "ContentBlockStartEvent",
    "ContentBlockStopEvent",
    "Delta",
    "ErrorEvent",
    "Event",
    "InputJSONDelta",
    "MessageDeltaEvent",
    "MessageStartEvent",
    "MessageStopEvent",
    "PingEvent",
    "RedactedThinkingBlock",
    "SignatureDelta",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingDelta",
    "ToolUseBlock",
    "UnknownBlock",
    "UnknownDelta",
    "UnknownEvent",
    "Usage",
    "parse_anthropic_event",
    "parse_block",
]

_EMPTY: Mapping[str, Any] = {}


# ---- deltas ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class InputJSONDelta:
    partial_json: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta:
    thinking: str


@dataclass(frozen=True, slots=True)
class SignatureDelta:
    signature: str


@dataclass(frozen=True, slots=True)
class CitationsDelta:
    citation: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class UnknownDelta:
    type: str
    raw: Mapping[str, Any] = field(default_factory=dict)


Delta = TextDelta | InputJSONDelta | ThinkingDelta | SignatureDelta | CitationsDelta | UnknownDelta

# ---- events --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessageStartEvent:
    id: str
    model: str
    role: str = "assistant"
    usage: Usage = Usage()
    content: tuple[ContentBlock, ...] = ()


@dataclass(frozen=True, slots=True)
class ContentBlockStartEvent:
    index: int
    block: ContentBlock


@dataclass(frozen=True, slots=True)
class ContentBlockDeltaEvent:
    index: int
    delta: Delta


@dataclass(frozen=True, slots=True)
class ContentBlockStopEvent:
    index: int


@dataclass(frozen=True, slots=True)
class MessageDeltaEvent:
    """Stop reason and cumulative usage (cache creation/read included)."""

    stop_reason: str | None = None
    stop_sequence: str | None = None
    usage: Usage = Usage()


@dataclass(frozen=True, slots=True)
class MessageStopEvent:
    pass


@dataclass(frozen=True, slots=True)
class PingEvent:
    pass


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    """A mid-stream error; the stream raises it as the matching :class:`~sdk.APIError`."""

    error_type: str
    message: str
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """An event type this SDK does not model; ``data`` is the parsed JSON or the raw text."""

    type: str
    data: Any = None


Event = (
    MessageStartEvent
    | ContentBlockStartEvent
    | ContentBlockDeltaEvent
    | ContentBlockStopEvent
    | MessageDeltaEvent
    | MessageStopEvent
    | PingEvent
    | ErrorEvent
    | UnknownEvent
)


_delta_event = fast_new(ContentBlockDeltaEvent)
_text_delta = fast_new(TextDelta)
_json_delta = fast_new(InputJSONDelta)


def _str(m: Mapping[str, Any], key: str) -> str:
    v = m.get(key)
    return v if isinstance(v, str) else ""


def parse_block(raw: object) -> ContentBlock:
    if not isinstance(raw, Mapping):
        return UnknownBlock("invalid", {"value": raw})
    kind = raw.get("type")
    if kind == "text":
        cites = raw.get("citations")
        return TextBlock(_str(raw, "text"), tuple(cites) if isinstance(cites, list) else ())
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        inp = raw.get("input")
        return ToolUseBlock(
            _str(raw, "id"), _str(raw, "name"), inp if inp is not None else {}, "", None, kind
        )
    if kind == "thinking":
        return ThinkingBlock(_str(raw, "thinking"), _str(raw, "signature"))
    if kind == "redacted_thinking":
        return RedactedThinkingBlock(_str(raw, "data"))
    return UnknownBlock(kind if isinstance(kind, str) else "unknown", dict(raw))


def _parse_delta(raw: object) -> Delta:
    if not isinstance(raw, Mapping):
        return UnknownDelta("invalid", {"value": raw})
    kind = raw.get("type")
    if kind == "text_delta":
        return TextDelta(_str(raw, "text"))
    if kind == "input_json_delta":
        return InputJSONDelta(_str(raw, "partial_json"))
    if kind == "thinking_delta":
        return ThinkingDelta(_str(raw, "thinking"))
    if kind == "signature_delta":
        return SignatureDelta(_str(raw, "signature"))
    if kind == "citations_delta":
        cite = raw.get("citation")
        return CitationsDelta(cite if isinstance(cite, Mapping) else {})
    return UnknownDelta(kind if isinstance(kind, str) else "unknown", dict(raw))


def stop_reason(reason: object, stop_sequence: str | None) -> str | None:
    """A message's ``stop_reason``, or ``None`` where it is not a string: ``stop_sequence``
    where a stop sequence matched, whatever the engine called it (llama-server's Messages
    route says ``end_turn`` and names the sequence)."""
    if not isinstance(reason, str):
        return None
    return "stop_sequence" if stop_sequence and reason == "end_turn" else reason


def _index(payload: Mapping[str, Any], sse: ServerSentEvent) -> int:
    idx = payload.get("index")
    if not isinstance(idx, int) or isinstance(idx, bool) or idx < 0:
        raise StreamProtocolError(f"event {sse.event!r} has no valid index", event=sse)
    return idx


def parse_anthropic_event(sse: ServerSentEvent) -> Event:
    """Turn one SSE event of the Messages stream into a typed event.

    The JSON ``type`` decides (the SSE ``event:`` name is the fallback). A known event
    whose data is not JSON is a :class:`~sdk.StreamProtocolError`; an unknown one is
    passed through with its raw text.
    """
    kind = sse.event
    if kind == "ping" and not sse.data.strip():
        return PingEvent()
    try:
        payload = loads_exact(sse.data)
    except orjson.JSONDecodeError:
        if kind in _KNOWN:
            raise StreamProtocolError(f"event {kind!r} carries invalid JSON", event=sse) from None
        return UnknownEvent(kind, sse.data)
    if not isinstance(payload, dict):
        if kind in _KNOWN:
            raise StreamProtocolError(f"event {kind!r} is not a JSON object", event=sse)
        return UnknownEvent(kind, payload)
    t = payload.get("type")
    if isinstance(t, str):
        kind = t
    if kind == "content_block_delta":
        # the hot path: one text or tool-input piece
        idx, d = payload.get("index"), payload.get("delta")
        if type(idx) is int and idx >= 0 and type(d) is dict:
            dt = d.get("type")
            if dt == "text_delta":
                text = d.get("text")
                if type(text) is str:
                    return _delta_event(idx, _text_delta(text))
            elif dt == "input_json_delta":
                pj = d.get("partial_json")
                if type(pj) is str:
                    return _delta_event(idx, _json_delta(pj))
        return ContentBlockDeltaEvent(_index(payload, sse), _parse_delta(payload.get("delta")))
    if kind == "content_block_start":
        return ContentBlockStartEvent(_index(payload, sse), parse_block(payload.get("content_block")))
    if kind == "content_block_stop":
        return ContentBlockStopEvent(_index(payload, sse))
    if kind == "ping":
        return PingEvent()
    if kind == "message_delta":
        delta = payload.get("delta")
        delta = delta if isinstance(delta, Mapping) else _EMPTY
        seq = delta.get("stop_sequence")
        seq = seq if isinstance(seq, str) else None
        return MessageDeltaEvent(
            stop_reason(delta.get("stop_reason"), seq), seq, Usage.from_wire(payload.get("usage"))
        )
    if kind == "message_start":
        msg = payload.get("message")
        msg = msg if isinstance(msg, Mapping) else _EMPTY
        content = msg.get("content")
        return MessageStartEvent(
            _str(msg, "id"),
            _str(msg, "model"),
            _str(msg, "role") or "assistant",
            Usage.from_wire(msg.get("usage")),
            tuple(parse_block(b) for b in content) if isinstance(content, list) else (),
        )
    if kind == "message_stop":
        return MessageStopEvent()
    if kind == "error":
        err = payload.get("error")
        err = err if isinstance(err, Mapping) else _EMPTY
        return ErrorEvent(_str(err, "type") or "api_error", _str(err, "message"), payload)
    return UnknownEvent(kind, payload)


_KNOWN = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "error",
    }
)


class AnthropicEventDecoder:
    """Sans-IO bytes -> typed events for the Anthropic Messages stream."""

    __slots__ = ("sse",)

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.sse = SSEDecoder(max_event_bytes=max_event_bytes)

    def feed(self, chunk: bytes) -> list[Event]:
        return [parse_anthropic_event(e) for e in self.sse.feed(chunk)]

    def flush(self) -> list[Event]:
        return [parse_anthropic_event(e) for e in self.sse.flush()]
