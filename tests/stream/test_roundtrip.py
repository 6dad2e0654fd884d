"""Random messages, encoded as each protocol frames them, split at random, decode and
accumulate back to the same content."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sdk.stream import AnthropicEventDecoder, OpenAIEventDecoder, TextBlock, ThinkingBlock, ToolUseBlock
from sdk.stream._wire import event_to_wire, sse_frame

from .helpers import three_ways
from .recorded import anthropic, block_start, block_stop, delta, msg_delta, msg_start, openai, openai_chunk
from .test_anthropic import fold

text = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=60)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=10,
)
block = st.one_of(
    st.tuples(st.just("text"), text),
    st.tuples(st.just("thinking"), text),
    st.tuples(st.just("tool"), st.dictionaries(st.text(max_size=6), json_value, max_size=4)),
)


def cut(s: str, rng: random.Random) -> list[str]:
    out, i = [], 0
    while i < len(s):
        n = rng.randint(1, 9)
        out.append(s[i : i + n])
        i += n
    return out


def anthropic_bytes(blocks: list[tuple[str, Any]], rng: random.Random) -> bytes:
    ev = [msg_start()]
    for i, (kind, value) in enumerate(blocks):
        if kind == "text":
            ev.append(block_start(i, {"type": "text", "text": ""}))
            ev += [delta(i, {"type": "text_delta", "text": p}) for p in cut(value, rng)]
        elif kind == "thinking":
            ev.append(block_start(i, {"type": "thinking", "thinking": "", "signature": ""}))
            ev += [delta(i, {"type": "thinking_delta", "thinking": p}) for p in cut(value, rng)]
        else:
            ev.append(block_start(i, {"type": "tool_use", "id": f"t{i}", "name": "f", "input": {}}))
            ev += [
                delta(i, {"type": "input_json_delta", "partial_json": p}) for p in cut(json.dumps(value), rng)
            ]
        ev.append(block_stop(i))
    return anthropic([*ev, msg_delta(), {"type": "message_stop"}], pings=rng.random() < 0.5)


def openai_bytes(blocks: list[tuple[str, Any]], rng: random.Random) -> bytes:
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    tool = 0
    for i, (kind, value) in enumerate(blocks):
        if kind == "text":
            chunks += [openai_chunk({"content": p}) for p in cut(value, rng)]
        elif kind == "thinking":
            chunks += [openai_chunk({"reasoning_content": p}) for p in cut(value, rng)]
        else:
            parts = cut(json.dumps(value), rng)
            head = {"index": tool, "id": f"t{i}", "function": {"name": "f", "arguments": parts[0]}}
            chunks.append(openai_chunk({"tool_calls": [head]}))
            rest = parts[1:]
            chunks += [
                openai_chunk({"tool_calls": [{"index": tool, "function": {"arguments": p}}]}) for p in rest
            ]
            tool += 1
    chunks.append(openai_chunk({}, "stop"))
    return openai(chunks)


def expected(blocks: list[tuple[str, Any]], merge: bool) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for kind, value in blocks:
        if merge and out and kind != "tool" and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + value)  # a chat stream has no boundary between them
        else:
            out.append((kind, value))
    return out


def content(msg: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for b in msg.content:
        if isinstance(b, TextBlock):
            out.append(("text", b.text))
        elif isinstance(b, ThinkingBlock):
            out.append(("thinking", b.thinking))
        else:
            assert isinstance(b, ToolUseBlock) and b.input_error is None
            out.append(("tool", b.input))
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(block, max_size=5), st.integers(0, 2**32))
def test_random_messages_round_trip_through_both_protocols(blocks: list[tuple[str, Any]], seed: int) -> None:
    rng = random.Random(seed)
    a = fold(three_ways(AnthropicEventDecoder, anthropic_bytes(blocks, rng), seed)).message()
    assert content(a) == expected(blocks, merge=False)
    o = fold(three_ways(OpenAIEventDecoder, openai_bytes(blocks, rng), seed)).message()
    assert content(o) == expected(blocks, merge=True)
    assert a.stop_reason == o.stop_reason == "end_turn"


@settings(max_examples=60, deadline=None)
@given(st.lists(block, min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_events_written_back_to_the_wire_parse_to_the_same_events(
    blocks: list[tuple[str, Any]], rng: random.Random
) -> None:
    """What the scheduling server re-sends is what it received, event for event."""
    first = AnthropicEventDecoder().feed(anthropic_bytes(blocks, rng))
    wire = b"".join(sse_frame(*event_to_wire(ev), id=str(i)) for i, ev in enumerate(first))
    again = AnthropicEventDecoder().feed(wire)
    assert again == first
    assert content(fold(again).message()) == expected(blocks, merge=False)
