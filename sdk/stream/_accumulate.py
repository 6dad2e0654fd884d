"""The accumulator: a pure reducer ``apply(state, event) -> state`` that builds the message.

States are immutable; text arrives as a persistent list of parts (a cons chain), so each
delta costs O(1) plus the length of the delta and an old state stays valid. Blocks of
the Messages protocol arrive one at a time: a ``content_block_start`` must carry the
next index, deltas and the stop must name the open block; anything else is a
:class:`~sdk.StreamProtocolError` that names the offending event and carries the
message so far.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .._errors import APIError, StreamProtocolError, _safe_repr, api_error_from_body
from .._models import Message, blocks_to_param
from ..http import loads_exact
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
from ._fast import fast_new
from ._partial_json import JSONPrefix, partial_value

__all__ = [
    "Message",
    "MessageHeader",
    "MessageState",
    "OpenBlock",
    "apply",
    "error_from_event",
    "message_to_wire",
    "wire_blocks",
]


class _Part:
    """One cell of a persistent list of string parts (newest first)."""

    __slots__ = ("prev", "text")

    def __init__(self, prev: _Part | None, text: str) -> None:
        self.prev = prev
        self.text = text


class _Cited:
    """One cell of a persistent list of citations (newest first)."""

    __slots__ = ("item", "prev")

    def __init__(self, prev: _Cited | None, item: Mapping[str, Any]) -> None:
        self.prev = prev
        self.item = item


def _join(part: _Part | None) -> str:
    parts: list[str] = []
    while part is not None:
        parts.append(part.text)
        part = part.prev
    parts.reverse()
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class OpenBlock:
    """The block being streamed: its start, its parts so far and one kind-specific extra.

    ``aux`` is the citations of a text block, the signature parts of a thinking block
    (each a persistent list, newest first, so that a delta adds one cell however many
    came before) or the :class:`JSONPrefix` scan state of a tool input (kept in one field
    so that a delta builds one small object).
    """

    index: int
    start: ContentBlock
    parts: _Part | None = None
    aux: _Cited | _Part | JSONPrefix | None = None

    @property
    def citations(self) -> tuple[Mapping[str, Any], ...]:
        cell = self.aux if isinstance(self.aux, _Cited) else None
        found: list[Mapping[str, Any]] = []
        while cell is not None:
            found.append(cell.item)
            cell = cell.prev
        found.reverse()
        return tuple(found)

    @property
    def signature(self) -> str:
        return _join(self.aux) if isinstance(self.aux, _Part) else ""

    @property
    def json(self) -> JSONPrefix | None:
        return self.aux if isinstance(self.aux, JSONPrefix) else None

    def text(self) -> str:
        return _join(self.parts)

    def partial_input(self) -> Any:
        """Best-effort parse of a tool input so far (``None`` before anything usable).

        Each call joins and parses the text so far (O(size)): call it to display progress,
        not after every delta. The scan that makes it possible is already O(delta).
        """
        prefix = self.json
        if prefix is None:
            return None
        return partial_value(self.text(), prefix)

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
                value = loads_exact(raw)
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
class MessageHeader:
    """The message-level fields; they change only on message_start/delta/stop."""

    id: str = ""
    model: str = ""
    role: str = "assistant"
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    stop_sequence: str | None = None
    started: bool = False
    stopped: bool = False


_NO_HEADER = MessageHeader()


@dataclass(frozen=True, slots=True)
class MessageState:
    """Everything received so far. ``events`` counts the events applied (the cursor)."""

    header: MessageHeader = _NO_HEADER
    blocks: tuple[ContentBlock, ...] = ()
    open: OpenBlock | None = None
    events: int = 0

    @property
    def usage(self) -> Usage:
        return self.header.usage

    @property
    def stop_reason(self) -> str | None:
        return self.header.stop_reason

    @property
    def started(self) -> bool:
        return self.header.started

    @property
    def stopped(self) -> bool:
        return self.header.stopped

    @property
    def next_index(self) -> int:
        return len(self.blocks)

    def message(self) -> Message:
        """The final message; a snapshot (open block included) when not yet stopped."""
        h = self.header
        content = self.blocks if self.open is None else (*self.blocks, self.open.snapshot())
        return Message(h.id, h.model, h.role, content, h.stop_reason, h.stop_sequence, h.usage)

    def text(self) -> str:
        """All text so far, the open text block included."""
        done = "".join(b.text for b in self.blocks if isinstance(b, TextBlock))
        if self.open is not None and isinstance(self.open.start, TextBlock):
            return done + self.open.start.text + self.open.text()
        return done


_state = fast_new(MessageState)
_block = fast_new(OpenBlock)


def _fail(state: MessageState, event: Event, why: str) -> StreamProtocolError:
    return StreamProtocolError(f"{why}: {_safe_repr(event)}"[:500], event=event, partial=state.message())


def _delta(state: MessageState, event: ContentBlockDeltaEvent) -> MessageState:
    blk = state.open
    if blk is None or blk.index != event.index:
        raise _fail(state, event, "delta for a block that is not open")
    d = event.delta
    start = blk.start
    if isinstance(d, TextDelta):
        if not isinstance(start, TextBlock):
            raise _fail(state, event, "text delta on a non-text block")
        new = _block(blk.index, start, _Part(blk.parts, d.text), blk.aux)
    elif isinstance(d, InputJSONDelta):
        prefix = blk.aux
        if not isinstance(prefix, JSONPrefix):
            raise _fail(state, event, "input_json delta on a non-tool block")
        new = _block(blk.index, start, _Part(blk.parts, d.partial_json), prefix.advance(d.partial_json))
    elif isinstance(d, ThinkingDelta):
        if not isinstance(start, ThinkingBlock):
            raise _fail(state, event, "thinking delta on a non-thinking block")
        new = _block(blk.index, start, _Part(blk.parts, d.thinking), blk.aux)
    elif isinstance(d, SignatureDelta):
        if not isinstance(start, ThinkingBlock):
            raise _fail(state, event, "signature delta on a non-thinking block")
        signed = blk.aux if isinstance(blk.aux, _Part) else None
        new = _block(blk.index, start, blk.parts, _Part(signed, d.signature))
    elif isinstance(d, CitationsDelta):
        if not isinstance(start, TextBlock):
            raise _fail(state, event, "citation on a non-text block")
        cited = blk.aux if isinstance(blk.aux, _Cited) else None
        new = _block(blk.index, start, blk.parts, _Cited(cited, d.citation))
    else:
        assert isinstance(d, UnknownDelta)
        new = blk  # passed through to the consumer, not accumulated
    return _state(state.header, state.blocks, new, state.events + 1)


def apply(state: MessageState, event: Event) -> MessageState:
    """Fold one event into the state; raises :class:`~sdk.StreamProtocolError` on a broken order.

    Pings, errors and unknown events leave the content unchanged (the stream raises the
    error events; see :func:`error_from_event`).
    """
    if isinstance(event, ContentBlockDeltaEvent):
        return _delta(state, event)
    h = state.header
    if isinstance(event, MessageStartEvent):
        if h.started:
            raise _fail(state, event, "second message_start")
        header = MessageHeader(event.id, event.model, event.role, event.usage, None, None, True, False)
        return _state(header, tuple(event.content), None, state.events + 1)
    if not isinstance(event, _ORDERED):
        return _state(h, state.blocks, state.open, state.events + 1)  # ping, error, unknown
    if not h.started:
        raise _fail(state, event, "event before message_start")
    if h.stopped:
        raise _fail(state, event, "event after message_stop")
    if isinstance(event, ContentBlockStartEvent):
        if state.open is not None or event.index != len(state.blocks):
            raise _fail(state, event, f"block start out of order (expected index {len(state.blocks)})")
        b = event.block
        aux = JSONPrefix() if isinstance(b, ToolUseBlock) else None
        return _state(h, state.blocks, _block(event.index, b, None, aux), state.events + 1)
    if isinstance(event, ContentBlockStopEvent):
        if state.open is None or state.open.index != event.index:
            raise _fail(state, event, "stop for a block that is not open")
        return _state(h, (*state.blocks, state.open.finish()), None, state.events + 1)
    if isinstance(event, MessageDeltaEvent):
        reason = event.stop_reason is not None
        header = MessageHeader(
            h.id, h.model, h.role, h.usage.merged(event.usage),
            event.stop_reason if reason else h.stop_reason,
            event.stop_sequence if reason else h.stop_sequence,
            True, False,
        )  # fmt: skip
        return _state(header, state.blocks, state.open, state.events + 1)
    if state.open is not None:
        raise _fail(state, event, f"message_stop while block {state.open.index} is open")
    header = MessageHeader(h.id, h.model, h.role, h.usage, h.stop_reason, h.stop_sequence, True, True)
    return _state(header, state.blocks, None, state.events + 1)


_ORDERED = (ContentBlockStartEvent, ContentBlockStopEvent, MessageDeltaEvent, MessageStopEvent)


def error_from_event(event: ErrorEvent, state: MessageState | None = None) -> APIError:
    """The typed error for a mid-stream ``error`` event, carrying the message so far."""
    body = event.raw or {"type": "error", "error": {"type": event.error_type, "message": event.message}}
    return api_error_from_body(body, partial=state.message() if state is not None else None)


def wire_blocks(content: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    """An accumulated message's blocks as request content blocks."""
    return blocks_to_param(content)


def message_to_wire(message: Message) -> dict[str, Any]:
    """The message as the Messages API returns it (what a non-streaming ``create``
    answers), for storing; a Messages backend parses it back."""
    return {
        "id": message.id,
        "type": "message",
        "role": message.role,
        "model": message.model,
        "content": wire_blocks(message.content),
        "stop_reason": message.stop_reason,
        "stop_sequence": message.stop_sequence,
        "usage": message.usage.to_wire(),
    }
