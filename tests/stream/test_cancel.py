"""Leaving early, consumer exceptions and cancellation close the response; nothing leaks."""

from __future__ import annotations

import anyio
import httpx2
import pytest

from sdk._errors import IncompleteStreamError
from sdk.stream import AnthropicEventDecoder, FlowControl, MessageStream, Upstream

from .recorded import anthropic, full_anthropic_events
from .server import Conn, ServerLog, opener, serve
from .test_flow import endless

pytestmark = pytest.mark.anyio


def task_names() -> set[str]:
    return {t.name for t in anyio.get_running_tasks()}


def pool_size(client: httpx2.AsyncClient) -> int:
    return len(client._transport._pool.connections)  # type: ignore[attr-defined]


async def check_closed(log: ServerLog, client: httpx2.AsyncClient, before: set[str]) -> None:
    with anyio.fail_after(10):
        await log.disconnected.wait()
    await anyio.wait_all_tasks_blocked()
    assert pool_size(client) == 0
    # only the server's own tasks may remain besides those that ran before
    leaked = {n for n in task_names() - before if "serve" not in n and "on_conn" not in n}
    assert not leaked, leaked


async def test_break_out_of_the_loop_closes_the_response() -> None:
    async with serve(endless) as (url, log), httpx2.AsyncClient(timeout=30) as client:
        before = task_names()
        async with MessageStream(opener(client, url), flow=FlowControl(high_water_bytes=64 * 1024)) as s:
            async for i, _ in _enumerate(s):
                if i == 50:
                    break
        await check_closed(log, client, before)


async def test_exception_in_consumer_closes_the_response_and_propagates() -> None:
    async with serve(endless) as (url, log), httpx2.AsyncClient(timeout=30) as client:
        before = task_names()
        with pytest.raises(KeyError):
            async with MessageStream(opener(client, url)) as s:
                async for _ in s:
                    raise KeyError("consumer bug")
        await check_closed(log, client, before)


async def test_cancelled_task_closes_the_response() -> None:
    async with serve(endless) as (url, log), httpx2.AsyncClient(timeout=30) as client:
        before = task_names()
        got_first = anyio.Event()

        async def consume() -> None:
            async with MessageStream(opener(client, url), flow=FlowControl(high_water_bytes=16 * 1024)) as s:
                async for _ in s:
                    got_first.set()
                    await anyio.sleep_forever()

        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await got_first.wait()
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()
        await check_closed(log, client, before)


async def test_cancel_while_the_reader_is_paused() -> None:
    async with serve(endless) as (url, log), httpx2.AsyncClient(timeout=30) as client:
        before = task_names()
        with anyio.move_on_after(30) as scope:
            async with MessageStream(opener(client, url), flow=FlowControl(high_water_bytes=8 * 1024)) as s:
                await s.__anext__()
                await anyio.wait_all_tasks_blocked()
                assert s.statistics().pauses >= 1
                scope.cancel()
                await anyio.sleep_forever()
        assert scope.cancelled_caught
        await check_closed(log, client, before)


async def test_truncated_body_is_an_incomplete_stream_with_the_partial_message() -> None:
    body = anthropic(full_anthropic_events(20))
    cut = body[: body.index(b"content_block_stop", body.index(b"text_delta"))]

    async def handler(conn: Conn) -> None:
        await conn.send(cut)

    async with serve(handler) as (url, _log), httpx2.AsyncClient(timeout=30) as client:
        with pytest.raises(IncompleteStreamError) as info:
            async with MessageStream(opener(client, url)) as s:
                async for _ in s:
                    pass
    partial = info.value.partial
    assert partial is not None
    assert partial.content[0].type == "thinking"
    assert partial.text  # the text received so far is kept


async def test_upstream_closed_once_when_fully_read() -> None:
    closes = []
    data = anthropic(full_anthropic_events(5))

    async def chunks():  # type: ignore[no-untyped-def]
        for i in range(0, len(data), 100):
            yield data[i : i + 100]

    async def aclose() -> None:
        closes.append(1)

    async def open_() -> Upstream:
        return Upstream(chunks(), aclose)

    async with MessageStream(open_, decoder=AnthropicEventDecoder) as s:
        msg = await s.get_final_message()
    assert msg.stop_reason == "tool_use"
    assert closes == [1]


async def _enumerate(s: MessageStream):  # type: ignore[no-untyped-def]
    i = 0
    async for ev in s:
        yield i, ev
        i += 1
