"""MessageStream end to end over loopback HTTP: both protocols, mid-stream failures."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from sdk._errors import APIConnectionError, OverloadedError, SSEEventTooLargeError, StreamProtocolError
from sdk.stream import (
    AnthropicEventDecoder,
    ContentBlockDeltaEvent,
    MessageStream,
    OpenAIEventDecoder,
    TextDelta,
    ToolUseBlock,
)

from .recorded import (
    anthropic,
    block_start,
    delta,
    full_anthropic_events,
    full_openai_chunks,
    msg_start,
    openai,
    sse,
    tool_input,
)
from .server import Conn, opener, serve

pytestmark = pytest.mark.anyio


def dribble(data: bytes, size: int = 97):  # type: ignore[no-untyped-def]
    async def handler(conn: Conn) -> None:
        for i in range(0, len(data), size):
            await conn.send(data[i : i + size])

    return handler


@pytest.mark.parametrize("proto", ["anthropic", "openai"])
async def test_both_protocols_accumulate_over_http(proto: str) -> None:
    if proto == "anthropic":
        data, decoder = anthropic(full_anthropic_events(), pings=True), AnthropicEventDecoder
    else:
        data, decoder = openai(full_openai_chunks()), OpenAIEventDecoder  # type: ignore[assignment]
    async with serve(dribble(data)) as (url, _log), httpx2.AsyncClient(timeout=30) as client:
        with anyio.fail_after(30):
            async with MessageStream(opener(client, url), decoder=decoder) as s:
                texts = [t async for t in s.text_deltas()]
                msg = s.state.message()
                stats = s.statistics()
    assert "".join(texts) == msg.text
    tools = msg.tool_uses
    assert isinstance(tools[0], ToolUseBlock) and tools[0].input == tool_input()
    assert msg.stop_reason == "tool_use"
    assert stats.bytes_received == len(data)


async def test_error_event_raises_the_typed_error_with_the_partial_message() -> None:
    events = [msg_start(), block_start(0, {"type": "text", "text": ""})]
    events += [delta(0, {"type": "text_delta", "text": f"part{i} "}) for i in range(20)]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    data = anthropic(events) + sse("error", error)
    async with serve(dribble(data)) as (url, _log), httpx2.AsyncClient(timeout=30) as client:
        seen = []
        with pytest.raises(OverloadedError) as info:
            async with MessageStream(opener(client, url)) as s:
                async for ev in s:
                    if isinstance(ev, ContentBlockDeltaEvent) and isinstance(ev.delta, TextDelta):
                        seen.append(ev.delta.text)
    assert info.value.partial is not None
    assert info.value.partial.text == "".join(seen) == "".join(f"part{i} " for i in range(20))


async def test_connection_dropped_mid_stream_is_a_connection_error_with_the_partial() -> None:
    text = {"type": "text_delta", "text": "so far"}
    data = anthropic([msg_start(), block_start(0, {"type": "text", "text": ""}), delta(0, text)])

    async def handler(conn: Conn) -> None:
        await conn.send(data)
        await conn.stream.aclose()  # no terminating chunk: the body is cut

    async with serve(handler) as (url, _log), httpx2.AsyncClient(timeout=30) as client:
        with pytest.raises(APIConnectionError) as info:
            async with MessageStream(opener(client, url)) as s:
                async for _ in s:
                    pass
    assert info.value.partial is not None and info.value.partial.text == "so far"


async def test_an_endless_line_hits_the_event_cap_not_memory() -> None:
    async def handler(conn: Conn) -> None:
        await conn.send(b"data: ")
        for _ in range(200):
            await conn.send(b"x" * 10_000)

    def decoder() -> AnthropicEventDecoder:
        return AnthropicEventDecoder(max_event_bytes=100_000)

    async with serve(handler) as (url, _log), httpx2.AsyncClient(timeout=30) as client:
        with pytest.raises(SSEEventTooLargeError):
            async with MessageStream(opener(client, url), decoder=decoder) as s:
                async for _ in s:
                    pass


async def test_protocol_error_in_the_stream_ends_it_and_outside_use_is_refused() -> None:
    bad = anthropic([msg_start(), delta(3, {"type": "text_delta", "text": "x"})])
    async with serve(dribble(bad)) as (url, _log), httpx2.AsyncClient(timeout=30) as client:
        s = MessageStream(opener(client, url))
        with pytest.raises(RuntimeError):
            await s.__anext__()
        with pytest.raises(StreamProtocolError) as info:
            async with s:
                async for _ in s:
                    pass
        assert info.value.partial is not None and info.value.partial.id == "msg_01"
        with pytest.raises(StopAsyncIteration):
            await s.__anext__()
