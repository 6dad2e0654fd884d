"""The accumulator: a pure reducer ``apply(state, event) -> state`` that builds the message.

States are immutable; text arrives as a persistent list of parts (a cons chain), so each
delta costs O(1) plus the length of the delta and an old state stays valid. Blocks of
the Messages protocol arrive one at a time: a ``content_block_start`` must carry the
next index, deltas and the stop must name the open block; anything else is a
:class:`~sdk.StreamProtocolError` that names the offending event and carries the
message so far.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._errors import APIError, StreamProtocolError, api_error_from_body
from ._events import (
    CitationsDelta,
    ContentBlock,
    ContentBlockDeltaEvent,
    ContentBlockStartEvent,
    ContentBlockStopEvent,
    ErrorEvent,
    Event,
    InputJSONDelta,
    MessageDeltaEvent,
    MessageStartEvent,
    MessageStopEvent,
    SignatureDelta,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    UnknownDelta,
    Usage,
)
from ._partial_json import JSONPrefix, partial_value

__all__ = ["Message", "MessageState", "OpenBlock", "apply", "error_from_event"]


class _Part:
    """One cell of a persistent list of string parts (newest first)."""

    __slots__ = ("prev", "text")

    def __init__(self, prev: _Part | None, text: str) -> None:
        self.prev = prev
        self.text = text


def _join(part: _Part | None) -> str:
    parts: list[str] = []
    while part is not None:
        parts.append(part.text)
        part = part.prev
    parts.reverse()
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class Message:
    """The accumulated message (final, or a snapshot of an unfinished one)."""

    id: str
    model: str
    role: str
    content: tuple[ContentBlock, ...]
    stop_reason: str | None
    stop_sequence: str | None
    usage: Usage

    @property
    def text(self) -> str:
        """All text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))


@dataclass(frozen=True, slots=True)
class OpenBlock:
    """The block being streamed: its start, its parts so far, and the JSON scan state."""

    index: int
    start: ContentBlock
    parts: _Part | None = None
    length: int = 0
    citations: tuple[Mapping[str, Any], ...] = ()
    signature: str = ""
    json: JSONPrefix | None = None

    def text(self) -> str:
        return _join(self.parts)

    def partial_input(self) -> Any:
        """Best-effort parse of a tool input so far (``None`` before anything usable)."""
        if self.json is None:
            return None
        return partial_value(self.text(), self.json)

    def finish(self) -> ContentBlock:
        start = self.start
        if isinstance(start, TextBlock):
            return TextBlock(start.text + self.text(), start.citations + self.citations)
        if isinstance(start, ThinkingBlock):
            return ThinkingBlock(start.thinking + self.text(), self.signature or start.signature)
        if isinstance(start, ToolUseBlock):
            raw = self.text()
            if not raw.strip():
                return ToolUseBlock(start.id, start.name, start.input, raw, None, start.type)
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError as e:
                return ToolUseBlock(start.id, start.name, None, raw, f"invalid JSON: {e}", start.type)
            return ToolUseBlock(start.id, start.name, value, raw, None, start.type)
        return start

    def snapshot(self) -> ContentBlock:
        """The block as far as it has arrived (a tool input is the partial view)."""
        start = self.start
        if isinstance(start, ToolUseBlock):
            raw = self.text()
            value = self.partial_input() if raw.strip() else start.input
            return ToolUseBlock(start.id, start.name, value, raw, None, start.type)
        return self.finish()


@dataclass(frozen=True, slots=True)
class MessageState:
    """Everything received so far. ``events`` counts the events applied (the cursor)."""

    id: str = ""
    model: str = ""
    role: str = "assistant"
    usage: Usage = field(default_factory=Usage)
    blocks: tuple[ContentBlock, ...] = ()
    open: OpenBlock | None = None
    stop_reason: str | None = None
    stop_sequence: str | None = None
    started: bool = False
    stopped: bool = False
    events: int = 0

    @property
    def next_index(self) -> int:
        return len(self.blocks)

    def message(self) -> Message:
        """The final message; a snapshot (open block included) when not yet stopped."""
        content = self.blocks if self.open is None else (*self.blocks, self.open.snapshot())
        return Message(
            self.id, self.model, self.role, content, self.stop_reason, self.stop_sequence, self.usage
        )

    def text(self) -> str:
        """All text so far, the open text block included."""
        done = "".join(b.text for b in self.blocks if isinstance(b, TextBlock))
        if self.open is not None and isinstance(self.open.start, TextBlock):
            return done + self.open.start.text + self.open.text()
        return done


def _fail(state: MessageState, event: Event, why: str) -> StreamProtocolError:
    return StreamProtocolError(f"{why}: {event!r}"[:500], event=event, partial=state.message())


def _with_open(
    state: MessageState, block: OpenBlock | None, blocks: tuple[ContentBlock, ...]
) -> MessageState:
    return MessageState(
        state.id,
        state.model,
        state.role,
        state.usage,
        blocks,
        block,
        state.stop_reason,
        state.stop_sequence,
        state.started,
        state.stopped,
        state.events + 1,
    )


def _delta(state: MessageState, event: ContentBlockDeltaEvent) -> MessageState:
    blk = state.open
    if blk is None or blk.index != event.index:
        raise _fail(state, event, "delta for a block that is not open")
    d = event.delta
    start = blk.start
    if isinstance(d, TextDelta):
        if not isinstance(start, TextBlock):
            raise _fail(state, event, "text delta on a non-text block")
        new = OpenBlock(blk.index, start, _Part(blk.parts, d.text), blk.length + len(d.text), blk.citations)
    elif isinstance(d, InputJSONDelta):
        if not isinstance(start, ToolUseBlock) or blk.json is None:
            raise _fail(state, event, "input_json delta on a non-tool block")
        new = OpenBlock(
            blk.index,
            start,
            _Part(blk.parts, d.partial_json),
            blk.length + len(d.partial_json),
            json=blk.json.advance(d.partial_json),
        )
    elif isinstance(d, ThinkingDelta):
        if not isinstance(start, ThinkingBlock):
            raise _fail(state, event, "thinking delta on a non-thinking block")
        new = OpenBlock(
            blk.index, start, _Part(blk.parts, d.thinking), blk.length + len(d.thinking), (), blk.signature
        )
    elif isinstance(d, SignatureDelta):
        if not isinstance(start, ThinkingBlock):
            raise _fail(state, event, "signature delta on a non-thinking block")
        new = OpenBlock(blk.index, start, blk.parts, blk.length, (), blk.signature + d.signature)
    elif isinstance(d, CitationsDelta):
        if not isinstance(start, TextBlock):
            raise _fail(state, event, "citation on a non-text block")
        new = OpenBlock(blk.index, start, blk.parts, blk.length, (*blk.citations, d.citation))
    else:
        assert isinstance(d, UnknownDelta)
        return _with_open(state, blk, state.blocks)  # passed through to the consumer, not accumulated
    return _with_open(state, new, state.blocks)


def apply(state: MessageState, event: Event) -> MessageState:
    """Fold one event into the state; raises :class:`~sdk.StreamProtocolError` on a broken order.

    Pings, errors and unknown events leave the content unchanged (the stream raises the
    error events; see :func:`error_from_event`).
    """
    if isinstance(event, ContentBlockDeltaEvent):
        return _delta(state, event)
    if isinstance(event, MessageStartEvent):
        if state.started:
            raise _fail(state, event, "second message_start")
        return MessageState(
            event.id, event.model, event.role, event.usage, tuple(event.content), None,
            None, None, True, False, state.events + 1,
        )  # fmt: skip
    if not isinstance(
        event, ContentBlockStartEvent | ContentBlockStopEvent | MessageDeltaEvent | MessageStopEvent
    ):
        return _with_open(state, state.open, state.blocks)  # ping, error, unknown
    if not state.started:
        raise _fail(state, event, "event before message_start")
    if state.stopped:
        raise _fail(state, event, "event after message_stop")
    if isinstance(event, ContentBlockStartEvent):
        if state.open is not None or event.index != len(state.blocks):
            raise _fail(state, event, f"block start out of order (expected index {len(state.blocks)})")
        b = event.block
        json = JSONPrefix() if isinstance(b, ToolUseBlock) else None
        return _with_open(state, OpenBlock(event.index, b, signature="", json=json), state.blocks)
    if isinstance(event, ContentBlockStopEvent):
        if state.open is None or state.open.index != event.index:
            raise _fail(state, event, "stop for a block that is not open")
        return _with_open(state, None, (*state.blocks, state.open.finish()))
    if isinstance(event, MessageDeltaEvent):
        return MessageState(
            state.id, state.model, state.role, state.usage.merged(event.usage), state.blocks, state.open,
            event.stop_reason if event.stop_reason is not None else state.stop_reason,
            event.stop_sequence if event.stop_reason is not None else state.stop_sequence,
            True, False, state.events + 1,
        )  # fmt: skip
    if state.open is not None:
        raise _fail(state, event, f"message_stop while block {state.open.index} is open")
    return MessageState(
        state.id, state.model, state.role, state.usage, state.blocks, None,
        state.stop_reason, state.stop_sequence, True, True, state.events + 1,
    )  # fmt: skip


def error_from_event(event: ErrorEvent, state: MessageState | None = None) -> APIError:
    """The typed error for a mid-stream ``error`` event, carrying the message so far."""
    body = event.raw or {"type": "error", "error": {"type": event.error_type, "message": event.message}}
    return api_error_from_body(body, partial=state.message() if state is not None else None)
