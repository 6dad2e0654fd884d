"""Anthropic Messages stream: typed events and accumulation, fed three ways."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from sdk._errors import APIError, OverloadedError, RateLimitError, StreamProtocolError
from sdk.stream import (
    AnthropicEventDecoder,
    CitationsDelta,
    ContentBlockDeltaEvent,
    ContentBlockStartEvent,
    ErrorEvent,
    Event,
    MessageState,
    PingEvent,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    UnknownBlock,
    UnknownDelta,
    UnknownEvent,
    Usage,
)
from sdk.stream._accumulate import apply, error_from_event

from .helpers import raises_three_ways, three_ways
from .recorded import (
    MSG_STOP,
    TEXT,
    anthropic,
    block_start,
    block_stop,
    delta,
    full_anthropic_events,
    msg_delta,
    msg_start,
    sse,
    tool_input,
)


def fold(events: list[Event]) -> MessageState:
    state = MessageState()
    for ev in events:
        state = apply(state, ev)
    return state


def check_full_message(state: MessageState, tool_n: int = 200) -> None:
    msg = state.message()
    assert state.stopped
    assert msg.id == "msg_01" and msg.model == "claude-test" and msg.role == "assistant"
    thinking, text, tool = msg.content
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.thinking == "Let me think about ユーザー… carefully. " * 5
    assert thinking.signature == "EqQBCgIYAhIM=="
    assert isinstance(text, TextBlock) and text.text == TEXT
    assert text.citations == (
        {"type": "char_location", "cited_text": "ユーザー", "document_index": 0, "start_char_index": 3},
    )
    assert isinstance(tool, ToolUseBlock)
    assert (tool.id, tool.name, tool.input, tool.input_error) == (
        "toolu_01",
        "write_file",
        tool_input(tool_n),
        None,
    )
    assert orjson.loads(tool.input_json) == tool_input(tool_n)
    assert msg.stop_reason == "tool_use"
    assert msg.usage == Usage(25, 321, 7, 11)  # cumulative output, cache counts from message_start survive
    assert msg.text == TEXT and msg.tool_uses == (tool,)


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_recorded_stream_with_pings_between_every_event(eol: str) -> None:
    data = anthropic(full_anthropic_events(), pings=True, eol=eol)
    events = three_ways(AnthropicEventDecoder, data)
    assert sum(isinstance(e, PingEvent) for e in events) == len(full_anthropic_events())
    assert any(isinstance(e, ContentBlockDeltaEvent) and isinstance(e.delta, CitationsDelta) for e in events)
    check_full_message(fold(events))


def test_garbage_lines_change_nothing() -> None:
    clean = anthropic(full_anthropic_events(30))
    noisy = bytearray()
    for i, frame in enumerate(clean.split(b"\n\n")[:-1]):
        noisy += b": keep-alive\n" if i % 3 == 0 else b""
        noisy += b"garbage without colon\nx-field: 1\n\xff\xfe bad bytes\n" if i % 4 == 1 else b""
        noisy += b"\n\n" if i % 5 == 2 else b""  # stray blank lines dispatch nothing
        noisy += frame + b"\n\n"
    assert three_ways(AnthropicEventDecoder, bytes(noisy)) == three_ways(AnthropicEventDecoder, clean)
    check_full_message(fold(three_ways(AnthropicEventDecoder, bytes(noisy))), 30)


def test_unknown_events_deltas_and_blocks_pass_through() -> None:
    events: list[dict[str, Any]] = [
        msg_start(),
        {"type": "brand_new_event", "x": 1},
        block_start(0, {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [{"url": "u"}]}),
        delta(0, {"type": "future_delta", "y": 2}),
        block_stop(0),
        block_start(1, {"type": "text", "text": "pre"}),
        delta(1, {"type": "text_delta", "text": "fix"}),
        block_stop(1),
        msg_delta(),
        MSG_STOP,
    ]
    data = anthropic(events) + sse("weird", "not json at all")
    out = three_ways(AnthropicEventDecoder, data)
    assert UnknownEvent("brand_new_event", {"type": "brand_new_event", "x": 1}) in out
    assert UnknownEvent("weird", "not json at all") in out
    assert any(
        isinstance(e, ContentBlockDeltaEvent)
        and e.delta == UnknownDelta("future_delta", {"type": "future_delta", "y": 2})
        for e in out
    )
    starts = [e for e in out if isinstance(e, ContentBlockStartEvent)]
    assert isinstance(starts[0].block, UnknownBlock) and starts[0].block.raw["content"] == [{"url": "u"}]
    msg = fold(out[:-1]).message()
    assert isinstance(msg.content[0], UnknownBlock)
    assert msg.text == "prefix"


@pytest.mark.parametrize(
    ("etype", "cls"),
    [("overloaded_error", OverloadedError), ("rate_limit_error", RateLimitError), ("api_error", APIError)],
)
def test_error_event_after_some_text(etype: str, cls: type[APIError]) -> None:
    events = [
        msg_start(),
        block_start(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "Partial ans"}),
    ]
    data = anthropic(events) + sse(
        "error", {"type": "error", "error": {"type": etype, "message": "Overloaded"}}
    )
    out = three_ways(AnthropicEventDecoder, data)
    assert isinstance(out[-1], ErrorEvent) and out[-1].error_type == etype
    state = fold(out)
    err = error_from_event(out[-1], state)
    assert isinstance(err, cls)
    assert err.status is None and err.error_type == etype
    assert err.partial is not None and err.partial.text == "Partial ans"


def test_known_event_with_invalid_json_is_a_protocol_error() -> None:
    data = anthropic([msg_start()]) + b"event: content_block_delta\ndata: {not json\n\n"
    raises_three_ways(AnthropicEventDecoder, data, StreamProtocolError)
    raises_three_ways(
        AnthropicEventDecoder,
        sse("content_block_delta", {"type": "content_block_delta", "index": -1}),
        StreamProtocolError,
    )
