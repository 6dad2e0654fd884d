"""OpenAI-compatible chunks -> neutral events, fed three ways; same accumulator."""

from __future__ import annotations

import orjson
import pytest

from sdk._errors import ContextOverflowError, RateLimitError, StreamProtocolError
from sdk.stream import (
    ErrorEvent,
    MessageDeltaEvent,
    MessageStartEvent,
    MessageStopEvent,
    OpenAIEventDecoder,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from sdk.stream._accumulate import error_from_event
from sdk.stream._openai import OpenAIChunkTranslator

from .helpers import raises_three_ways, three_ways
from .recorded import TEXT, full_openai_chunks, openai, openai_chunk, sse, tool_input
from .test_anthropic import fold


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_recorded_stream(eol: str) -> None:
    events = three_ways(OpenAIEventDecoder, openai(full_openai_chunks(), eol=eol))
    assert isinstance(events[0], MessageStartEvent) and events[0].id == "chatcmpl-1"
    assert isinstance(events[-1], MessageStopEvent)
    state = fold(events)
    msg = state.message()
    thinking, text, tool_a, tool_b = msg.content
    assert isinstance(thinking, ThinkingBlock) and thinking.thinking == "Thinking… about ユーザー. " * 4
    assert isinstance(text, TextBlock) and text.text == TEXT
    assert isinstance(tool_a, ToolUseBlock) and (tool_a.id, tool_a.name) == ("call_a", "write_file")
    assert tool_a.input == tool_input()
    assert isinstance(tool_b, ToolUseBlock) and tool_b.input == {"q": "ü" * 50}
    assert msg.stop_reason == "tool_use"
    assert msg.usage == Usage(70, 50, None, 30)  # prompt 100 of which 30 were cache reads


@pytest.mark.parametrize(
    ("finish", "reason"),
    [
        ("stop", "end_turn"),
        ("length", "max_tokens"),
        ("tool_calls", "tool_use"),
        ("content_filter", "refusal"),
        ("eos", "eos"),
    ],
)
def test_finish_reasons(finish: str, reason: str) -> None:
    chunks = [openai_chunk({"role": "assistant", "content": "hi"}), openai_chunk({}, finish)]
    msg = fold(three_ways(OpenAIEventDecoder, openai(chunks))).message()
    assert msg.stop_reason == reason and msg.text == "hi"


def test_missing_done_after_a_finish_reason_still_stops() -> None:
    chunks = [
        openai_chunk({"content": "a"}),
        openai_chunk({"content": "b"}, "stop", usage={"prompt_tokens": 3, "completion_tokens": 2}),
    ]
    events = three_ways(OpenAIEventDecoder, openai(chunks, done=False))
    assert isinstance(events[-1], MessageStopEvent)
    msg = fold(events).message()
    assert (msg.text, msg.usage) == ("ab", Usage(3, 2, None, None))


def test_missing_done_and_finish_is_left_incomplete() -> None:
    events = three_ways(OpenAIEventDecoder, openai([openai_chunk({"content": "a"})], done=False))
    assert not any(isinstance(e, MessageStopEvent) for e in events)
    assert not fold(events).stopped


def test_error_object_mid_stream() -> None:
    err = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    events = three_ways(OpenAIEventDecoder, openai([openai_chunk({"content": "par"}), err], done=False))
    assert isinstance(events[-1], ErrorEvent)
    state = fold(events)
    e = error_from_event(events[-1], state)
    assert isinstance(e, RateLimitError) and e.partial is not None and e.partial.text == "par"
    overflow = {
        "error": {
            "message": "the request exceeds the available context size",
            "type": "exceed_context_size_error",
        }
    }
    events = three_ways(OpenAIEventDecoder, openai([overflow], done=False))
    assert isinstance(error_from_event(events[-1]), ContextOverflowError)  # type: ignore[arg-type]


def test_usage_only_chunk_and_empty_done() -> None:
    events = three_ways(OpenAIEventDecoder, openai([]))
    assert [type(e) for e in events] == [MessageStartEvent, MessageStopEvent]
    chunks = [
        openai_chunk({"content": "x"}, "stop"),
        openai_chunk(None, usage={"prompt_tokens": 9, "completion_tokens": 1}),
    ]
    events = three_ways(OpenAIEventDecoder, openai(chunks))
    deltas = [e for e in events if isinstance(e, MessageDeltaEvent)]
    assert deltas[0].stop_reason == "end_turn" and deltas[-1].usage == Usage(9, 1, None, None)
    assert fold(events).message().stop_reason == "end_turn"


def test_protocol_errors() -> None:
    back = [
        openai_chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{"}}]}),
        openai_chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}),
    ]
    raises_three_ways(OpenAIEventDecoder, openai(back), StreamProtocolError)
    two = {"id": "x", "choices": [{"index": 1, "delta": {"content": "b"}}]}
    raises_three_ways(OpenAIEventDecoder, openai([two]), StreamProtocolError)
    raises_three_ways(
        OpenAIEventDecoder, openai([]) + sse(None, openai_chunk({"content": "late"})), StreamProtocolError
    )
    raises_three_ways(OpenAIEventDecoder, b"data: {oops\n\n", StreamProtocolError)
    raises_three_ways(OpenAIEventDecoder, b"data: [1, 2]\n\n", StreamProtocolError)


def test_translator_directly_and_invalid_tool_json_is_kept() -> None:
    tr = OpenAIChunkTranslator()
    events = []
    for c in [
        openai_chunk({"role": "assistant"}),
        openai_chunk(
            {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": '{"a": tru'}}]}
        ),
        openai_chunk({}, "tool_calls"),
    ]:
        events += tr.feed(orjson.loads(orjson.dumps(c)))
    events += tr.done()
    tool = fold(events).message().content[0]
    assert isinstance(tool, ToolUseBlock)
    assert tool.input is None and tool.input_json == '{"a": tru' and tool.input_error


def test_legacy_function_call() -> None:
    chunks = [
        openai_chunk({"role": "assistant", "function_call": {"name": "lookup", "arguments": '{"q": '}}),
        openai_chunk({"function_call": {"arguments": '"x"}'}}),
        openai_chunk({}, "function_call"),
    ]
    msg = fold(three_ways(OpenAIEventDecoder, openai(chunks))).message()
    (tool,) = msg.tool_uses
    assert (tool.name, tool.input, msg.stop_reason) == ("lookup", {"q": "x"}, "tool_use")


def test_comments_and_garbage_lines_between_chunks() -> None:
    clean = openai(full_openai_chunks(20))
    noisy = bytearray(b": OPENROUTER PROCESSING\n\n")
    for i, frame in enumerate(clean.split(b"\n\n")[:-1]):
        noisy += b": keep-alive\n" if i % 2 else b"junk line\nretry: 3000\n"
        noisy += frame + b"\n\n"
    assert three_ways(OpenAIEventDecoder, bytes(noisy)) == three_ways(OpenAIEventDecoder, clean)


def test_a_replayed_body_goes_on_with_the_same_message() -> None:
    """A reattach's body (the chunks after the last one received) is the same message: its
    first chunk is no second message start."""
    import orjson

    from sdk.stream import MessageStartEvent
    from sdk.stream._openai import OpenAIEventDecoder

    def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + orjson.dumps({"id": "c", "model": "m", "choices": [choice]}) + b"\n\n"

    first = OpenAIEventDecoder()
    events = first.feed(chunk({"role": "assistant", "content": "Hel"}))
    assert isinstance(events[0], MessageStartEvent)
    replay = first.for_replay()
    more = replay.feed(chunk({"content": "lo"}) + chunk({}, "stop") + b"data: [DONE]\n\n")
    assert not any(isinstance(e, MessageStartEvent) for e in more)
    assert [type(e).__name__ for e in more][-1] == "MessageStopEvent"
