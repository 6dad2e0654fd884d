"""Flow control against a real loopback HTTP/1.1 server, on asyncio and trio."""

from __future__ import annotations

import tracemalloc

import anyio
import httpx2
import orjson
import pytest

from sdk.stream import ContentBlockDeltaEvent, FlowControl, MessageStream, TextDelta

from .recorded import block_start, block_stop, delta, msg_delta, msg_start, sse
from .server import Conn, opener, serve, small_client

pytestmark = pytest.mark.anyio

MB = 1 << 20
EVENT_TEXT = "x" * 1000


def text_event(i: int) -> bytes:
    return sse("content_block_delta", delta(0, {"type": "text_delta", "text": f"{i:08d}{EVENT_TEXT}"}))


async def endless(conn: Conn, limit: int = 100 * MB) -> None:
    """Offers ``limit`` bytes of text deltas (a bounded loop that stops itself)."""
    await conn.send(
        sse("message_start", msg_start())
        + sse("content_block_start", block_start(0, {"type": "text", "text": ""}))
    )
    i = 0
    batch = 32
    while conn.log.sent < limit:
        await conn.send(b"".join(text_event(i + k) for k in range(batch)))
        i += batch
    await conn.send(
        sse("content_block_stop", block_stop(0))
        + sse("message_delta", msg_delta())
        + sse("message_stop", {"type": "message_stop"})
    )


async def settle(read: object) -> None:
    """Wait until every task is blocked and the server's byte count stops moving."""
    log = read
    stable = 0
    last = -1
    while stable < 5:
        await anyio.wait_all_tasks_blocked()
        stable = stable + 1 if log.sent == last else 0  # type: ignore[attr-defined]
        last = log.sent  # type: ignore[attr-defined]


async def test_paused_consumer_stops_the_server_and_memory_stays_bounded() -> None:
    high = 512 * 1024
    async with serve(endless) as (url, log), small_client() as client:
        stream = MessageStream(opener(client, url), flow=FlowControl(high_water_bytes=high))
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        with anyio.fail_after(30):
            async with stream:
                first = await stream.__anext__()
                assert type(first).__name__ == "MessageStartEvent"
                await settle(log)
                heap = tracemalloc.get_traced_memory()[0] - base
                tracemalloc.stop()
                # client and server share this process: all of it is a few MB, not 100
                assert heap < 8 * MB, heap
                stats = stream.statistics()
                # The server's sends block: far less than the 100 MB it offers went out...
                assert log.sent < high + 4 * MB, log.sent
                # ...and the client holds no more than the bound (plus one socket read).
                assert stats.high_water_bytes <= high + 64 * 1024 + 2048
                assert stats.bytes_buffered <= high + 64 * 1024 + 2048
                assert stats.pauses >= 1
                paused_at = log.sent
                # Taking events lets the reader go on, and the server with it.
                n = 0
                async for _ in stream:
                    n += 1
                    if n > 4000:
                        break
                await settle(log)
                assert log.sent > paused_at
                assert stream.statistics().high_water_bytes <= high + 64 * 1024 + 2048
        with anyio.fail_after(10):
            await log.disconnected.wait()
        assert log.finished == 0


async def test_slow_consumer_gets_every_byte_through_many_pauses() -> None:
    total = 3 * MB

    async def handler(conn: Conn) -> None:
        await endless(conn, total)

    async with serve(handler) as (url, log), httpx2.AsyncClient(timeout=30) as client:
        stream = MessageStream(
            opener(client, url), flow=FlowControl(high_water_bytes=32 * 1024, low_water_bytes=4096)
        )
        seen = []
        with anyio.fail_after(60):
            async with stream:
                async for ev in stream:
                    if isinstance(ev, ContentBlockDeltaEvent) and isinstance(ev.delta, TextDelta):
                        seen.append(int(ev.delta.text[:8]))
                    if len(seen) % 200 == 0:
                        await anyio.lowlevel.checkpoint()
                stats = stream.statistics()
                final = stream.state.message()
    assert seen == list(range(len(seen)))
    assert final.text == "".join(f"{i:08d}{EVENT_TEXT}" for i in range(len(seen)))
    assert final.stop_reason == "end_turn"
    assert stats.pauses > 1
    assert stats.high_water_bytes <= 32 * 1024 + 64 * 1024 + 2048
    assert stats.bytes_buffered == 0
    assert stats.events_received == stats.events_delivered
    assert log.finished == 1
    assert stats.bytes_received == log.sent


async def test_events_cap_pauses_too() -> None:
    async def handler(conn: Conn) -> None:
        await endless(conn, 200 * 1024)

    async with serve(handler) as (url, _log), httpx2.AsyncClient(timeout=30) as client:
        stream = MessageStream(opener(client, url), flow=FlowControl(high_water_bytes=10 * MB, max_events=10))
        with anyio.fail_after(30):
            async with stream:
                msg = await stream.get_final_message()
                stats = stream.statistics()
    assert msg.stop_reason == "end_turn"
    assert stats.pauses >= 1
    assert stats.high_water_events < 10 + 80  # one socket read of ~1 kB events past the cap


def test_json_payload_helper_is_what_the_server_sends() -> None:
    raw = text_event(3)
    assert orjson.loads(raw.split(b"data: ", 1)[1])["delta"]["text"].startswith("00000003")
