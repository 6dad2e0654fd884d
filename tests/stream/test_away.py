"""A consumer that keeps up with a model-paced stream and then goes away: the reader reads
ahead to the buffer bound, pauses, and the stall policy cancels and resumes seamlessly."""

from __future__ import annotations

import anyio
import httpx2
import orjson
import pytest

from sdk.stream import FlowControl, MessageStream, ResumeRequest, StallPolicy, Upstream

from .recorded import MSG_STOP, block_start, block_stop, delta, msg_delta, msg_start, sse
from .server import Conn, opener, serve

pytestmark = pytest.mark.anyio


def text(i: int) -> bytes:
    return sse(
        "content_block_delta", delta(0, {"type": "text_delta", "text": f"{i:06d} " + "y" * 200 + "\n"})
    )


async def model(conn: Conn) -> None:
    """One event per write at first (a model's pace), then as fast as the socket takes."""
    start = orjson.loads(conn.body).get("from", 0) if conn.body else 0
    await conn.send(
        sse("message_start", msg_start())
        + sse("content_block_start", block_start(0, {"type": "text", "text": ""}))
    )
    i = start
    if start:
        for i in range(start, start + 5):
            await conn.send(text(i))
        await conn.send(
            sse("content_block_stop", block_stop(0))
            + sse("message_delta", msg_delta())
            + sse("message_stop", MSG_STOP)
        )
        return
    for i in range(40):
        await conn.send(text(i))
        await anyio.sleep(0.003)
    while True:
        i += 1
        await conn.send(text(i))


async def test_a_consumer_that_goes_away_mid_stream_pauses_the_reader_and_the_policy_cancels() -> None:
    async with serve(model) as (url, log), httpx2.AsyncClient(timeout=30) as client:
        nums: list[int] = []

        async def resume(req: ResumeRequest) -> Upstream:
            return await opener(
                client, url, orjson.dumps({"from": int(req.prefill.split("\n")[-2][:6]) + 1})
            )()

        stream = MessageStream(
            opener(client, url),
            flow=FlowControl(high_water_bytes=16 * 1024),
            stall=StallPolicy(True, stall_timeout=0.2),
            resume=resume,
        )
        with anyio.fail_after(30):
            async with stream:
                async for ev in stream:
                    if type(ev).__name__ == "ContentBlockDeltaEvent":
                        nums.append(int(ev.delta.text[:6]))  # type: ignore[attr-defined]
                        if len(nums) == 30:
                            break
                await log.disconnected.wait()  # away: the reader took over, paused, was cancelled
                stats = stream.statistics()
                assert stats.pauses >= 1 and stats.cancels == 1
                assert stats.high_water_bytes <= 16 * 1024 + 64 * 1024 + 2048
                async for ev in stream:
                    if type(ev).__name__ == "ContentBlockDeltaEvent":
                        nums.append(int(ev.delta.text[:6]))  # type: ignore[attr-defined]
    assert nums == list(range(len(nums))) and len(nums) > 35  # no gap, no duplicate
    assert stream.state.message().stop_reason == "end_turn"
