"""The reducer: order checks, purity, tool-input assembly and its partial view."""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk._errors import StreamProtocolError
from sdk.stream import (
    AnthropicEventDecoder,
    ContentBlockDeltaEvent,
    ContentBlockStartEvent,
    ContentBlockStopEvent,
    InputJSONDelta,
    MessageDeltaEvent,
    MessageStartEvent,
    MessageState,
    MessageStopEvent,
    PingEvent,
    SignatureDelta,
    TextBlock,
    TextDelta,
    ToolUseBlock,
    Usage,
)
from sdk.stream._accumulate import apply
from sdk.stream._partial_json import JSONPrefix, partial_value

from .recorded import anthropic, full_anthropic_events, pieces
from .test_anthropic import fold

START = MessageStartEvent("m", "model", "assistant", Usage(5, 1))
TEXT0 = ContentBlockStartEvent(0, TextBlock())
TOOL0 = ContentBlockStartEvent(0, ToolUseBlock("t", "f", {}))


@pytest.mark.parametrize(
    ("events", "why"),
    [
        ([TEXT0], "before message_start"),
        ([START, START], "second message_start"),
        ([START, ContentBlockStartEvent(1, TextBlock())], "out of order"),
        ([START, TEXT0, ContentBlockStartEvent(1, TextBlock())], "out of order"),
        ([START, TEXT0, ContentBlockDeltaEvent(3, TextDelta("x"))], "not open"),
        ([START, ContentBlockDeltaEvent(0, TextDelta("x"))], "not open"),
        ([START, TEXT0, ContentBlockStopEvent(1)], "not open"),
        ([START, TEXT0, ContentBlockDeltaEvent(0, InputJSONDelta("{"))], "non-tool"),
        ([START, TOOL0, ContentBlockDeltaEvent(0, TextDelta("x"))], "non-text"),
        ([START, TEXT0, ContentBlockDeltaEvent(0, SignatureDelta("s"))], "non-thinking"),
        ([START, TEXT0, MessageStopEvent()], "is open"),
        ([START, MessageStopEvent(), TEXT0], "after message_stop"),
    ],
)
def test_order_violations_name_the_event_and_keep_the_partial(events: list[Any], why: str) -> None:
    state = MessageState()
    with pytest.raises(StreamProtocolError, match=why) as info:
        for ev in events:
            state = apply(state, ev)
    assert info.value.event is events[-1]
    assert info.value.partial is not None or events[0] is not START


def test_states_are_immutable_snapshots() -> None:
    s1 = apply(apply(apply(MessageState(), START), TEXT0), ContentBlockDeltaEvent(0, TextDelta("Hel")))
    s2 = apply(s1, ContentBlockDeltaEvent(0, TextDelta("lo")))
    s3 = apply(s2, ContentBlockStopEvent(0))
    assert s1.text() == "Hel" and s2.text() == "Hello" and s3.text() == "Hello"
    assert s1.message().content == (TextBlock("Hel"),)
    # a branch from an old state does not disturb the other branch
    s2b = apply(s1, ContentBlockDeltaEvent(0, TextDelta("p!")))
    assert s2b.text() == "Help!" and s2.text() == "Hello"
    assert (s1.events, s2.events, s3.events) == (3, 4, 5)
    assert apply(s3, PingEvent()).message() == s3.message()


def test_message_delta_merges_cumulative_usage() -> None:
    s = apply(MessageState(), MessageStartEvent("m", "x", "assistant", Usage(10, 1, 3, 4)))
    s = apply(s, MessageDeltaEvent("end_turn", None, Usage(None, 7)))
    s = apply(s, MessageDeltaEvent(None, None, Usage(12, 9)))
    assert s.usage == Usage(12, 9, 3, 4) and s.stop_reason == "end_turn"


def test_tool_input_partial_view_during_the_stream() -> None:
    value = {"path": "/a/b", "lines": [f'line {i} "q" \\ é' for i in range(50)], "flag": True, "n": 12.5}
    raw = json.dumps(value)
    state = apply(apply(MessageState(), START), TOOL0)
    views = []
    for part in pieces(raw, 7):
        state = apply(state, ContentBlockDeltaEvent(0, InputJSONDelta(part)))
        assert state.open is not None
        views.append(state.open.partial_input())
        snap = state.message().content[0]
        assert isinstance(snap, ToolUseBlock) and snap.input == views[-1]
    assert views[-1] == value
    # every view is a dict whose lines are a prefix of the real lines (last one may be cut)
    for v in views:
        if v is None:
            continue
        lines = v.get("lines", [])
        if lines:
            assert lines[:-1] == value["lines"][: len(lines) - 1]
            assert value["lines"][len(lines) - 1].startswith(lines[-1])
    final = apply(state, ContentBlockStopEvent(0)).message().content[0]
    assert isinstance(final, ToolUseBlock) and final.input == value and final.input_json == raw


def test_empty_tool_input_keeps_the_start_value() -> None:
    s = apply(apply(apply(MessageState(), START), TOOL0), ContentBlockDeltaEvent(0, InputJSONDelta("")))
    block = apply(s, ContentBlockStopEvent(0)).message().content[0]
    assert isinstance(block, ToolUseBlock) and block.input == {} and block.input_error is None


def test_byte_by_byte_accumulation_is_identical() -> None:
    data = anthropic(full_anthropic_events(50), pings=True)
    whole = AnthropicEventDecoder()
    expected = fold(whole.feed(data) + whole.flush()).message()
    dec = AnthropicEventDecoder()
    state = MessageState()
    for i in range(len(data)):
        for ev in dec.feed(data[i : i + 1]):
            state = apply(state, ev)
    for ev in dec.flush():
        state = apply(state, ev)
    assert state.message() == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


def advance_in_pieces(text: str, rng: random.Random) -> JSONPrefix:
    p = JSONPrefix()
    i = 0
    while i < len(text):
        n = rng.randint(1, 6)
        p = p.advance(text[i : i + n])
        i += n
    return p


@settings(max_examples=150, deadline=None)
@given(json_values, st.integers(0, 10_000), st.booleans())
def test_prefix_scan_is_split_invariant_and_views_are_valid(value: Any, seed: int, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    rng = random.Random(seed)
    whole = JSONPrefix().advance(text)
    assert advance_in_pieces(text, rng) == whole
    assert partial_value(text, whole) == orjson.loads(text)
    for cut in sorted({rng.randint(0, len(text)) for _ in range(8)}):
        prefix = text[:cut]
        view = partial_value(prefix, advance_in_pieces(prefix, rng))
        assert view is None or orjson.loads(orjson.dumps(view)) == view  # a real JSON value, never an error
        if isinstance(value, dict | list) and view is not None:
            assert type(view) is type(value)
