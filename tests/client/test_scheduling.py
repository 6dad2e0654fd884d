"""The client's scheduler against a scripted loopback server: slot learning, priorities,
cancellation in the queue, rate-limit pacing, a 529 storm, preemption, metrics and map."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked
from anyio.lowlevel import checkpoint

from sdk import Client, MapProgress, Message, RequestMetrics, StreamStatistics
from sdk.http import RetryPolicy
from sdk.scheduler import Scheduler, TicketState, UnknownTierError
from sdk.stream import StallPolicy

from .fault_server import FaultServer, Reply, Request, events_for, fault_server, prefill_of, sse

pytestmark = pytest.mark.anyio

KEY = "sk-ant-sched-0123456789abcdef"
WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
TEXT = " ".join(WORDS)
PIECES = [w + " " for w in WORDS[:-1]] + [WORDS[-1]]
DEADLINE = 30


def client(server: FaultServer, **kw: Any) -> Client:
    kw.setdefault("prefill_echo", False)
    return Client(base_url=server.url, api_key=KEY, **kw)


def msg(tag: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": tag}]


def tag_of(req: Request) -> str:
    content = req.json()["messages"][0]["content"]
    return content if isinstance(content, str) else ""


async def answer(req: Request, reply: Reply, pieces: list[str] = PIECES, gap: float = 0.0) -> None:
    """The pieces as a stream, or as one JSON message for a non-streaming request."""
    if not req.json().get("stream"):
        body = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "text", "text": "".join(pieces)}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": len(pieces)},
        }
        await reply.respond(200, body)
        return
    await reply.start()
    for ev in events_for("messages", pieces):
        await reply.chunk(ev)
        if gap:
            await anyio.sleep(gap)
    await reply.end()


async def test_slots_are_learnt_once_from_props() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await answer(req, reply)

    async with fault_server(handler) as server:
        server.props = {"total_slots": 3, "model_path": "x.gguf"}
        async with client(server) as c:
            async with anyio.create_task_group() as tg:
                for i in range(5):
                    tg.start_soon(lambda i=i: c.create(model="m", max_tokens=5, messages=msg(str(i))))
            assert c.scheduler.slots == 3
        assert [p.path for p in server.probes] == ["/v1/models", "/props"]  # once each: known by its header
        assert all(p.headers["x-api-key"] == KEY for p in server.probes)


async def test_the_hosted_api_is_not_probed_and_a_given_slot_count_wins() -> None:
    async with Client(api_key=KEY) as hosted:
        assert hosted._engine.slots_known
    async with Client(base_url="http://127.0.0.1:9", scheduler=Scheduler(slots=5)) as c:
        assert c._engine.slots_known and c.scheduler.slots == 5


async def test_unknown_tier_fails_at_the_call() -> None:
    async with Client(base_url="http://127.0.0.1:9") as c:
        with pytest.raises(UnknownTierError, match="urgent"):
            c.stream(model="m", max_tokens=5, messages=msg("x"), priority="urgent")
        with pytest.raises(UnknownTierError):
            await c.create(model="m", max_tokens=5, messages=msg("x"), priority="urgent")
        with pytest.raises(UnknownTierError):
            c.map([], priority="urgent")


class Gate:
    """The server holds the request tagged ``hold`` until ``release()``."""

    def __init__(self) -> None:
        self.event = anyio.Event()

    def release(self) -> None:
        self.event.set()


async def test_an_interactive_request_goes_before_queued_batch_work() -> None:
    gate = Gate()

    async def handler(req: Request, reply: Reply) -> None:
        if tag_of(req) == "hold":
            await gate.event.wait()
        await answer(req, reply)

    async with fault_server(handler) as server, client(server, scheduler=Scheduler(slots=1)) as c:
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                for tag, prio in [
                    ("hold", "default"),
                    ("b1", "batch"),
                    ("b2", "batch"),
                    ("i1", "interactive"),
                ]:
                    tg.start_soon(
                        lambda t=tag, p=prio: c.create(model="m", max_tokens=5, messages=msg(t), priority=p)
                    )
                    await wait_all_tasks_blocked()
                assert c.scheduler.stats().waiting == {"interactive": 1, "default": 0, "batch": 2}
                gate.release()
    assert [tag_of(r) for r in server.requests] == ["hold", "i1", "b1", "b2"]


async def test_clients_sharing_a_scheduler_share_its_slots() -> None:
    gate = anyio.Event()

    async def handler(req: Request, reply: Reply) -> None:
        if tag_of(req) == "hold":
            await gate.wait()
        await answer(req, reply)

    sched = Scheduler(slots=1)
    async with (
        fault_server(handler) as a,
        fault_server(handler) as b,
        client(a, scheduler=sched) as ca,
        client(b, scheduler=sched) as cb,
    ):
        assert ca._dispatch is cb._dispatch
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: ca.create(model="m", max_tokens=5, messages=msg("hold")))
                await wait_all_tasks_blocked()
                tg.start_soon(lambda: cb.create(model="m", max_tokens=5, messages=msg("next")))
                await wait_all_tasks_blocked()
                assert sched.waiting == 1 and b.requests == []  # waits for a's slot
                gate.set()
    assert [tag_of(r) for r in b.requests] == ["next"]


async def test_a_queued_request_can_be_cancelled() -> None:
    gate = anyio.Event()

    async def handler(req: Request, reply: Reply) -> None:
        if tag_of(req) == "hold":
            await gate.wait()
        await answer(req, reply)

    async with fault_server(handler) as server, client(server, scheduler=Scheduler(slots=1)) as c:
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                cancel = anyio.CancelScope()

                async def queued() -> None:
                    with cancel:
                        await c.create(model="m", max_tokens=5, messages=msg("gone"))

                tg.start_soon(lambda: c.create(model="m", max_tokens=5, messages=msg("hold")))
                await wait_all_tasks_blocked()
                tg.start_soon(queued)
                await wait_all_tasks_blocked()
                assert c.scheduler.waiting == 1
                cancel.cancel()
                await wait_all_tasks_blocked()
                assert c.scheduler.waiting == 0
                gate.set()
            await c.create(model="m", max_tokens=5, messages=msg("after"))
    assert [tag_of(r) for r in server.requests] == ["hold", "after"]


async def test_rate_limit_headers_pace_a_map_with_no_429_reaching_the_caller() -> None:
    """The server allows a burst of 20 requests and 100 a second after that, says so in
    OpenAI-style headers, and answers 429 past it."""
    limit, rate = 20.0, 100.0
    bucket = {"tokens": limit, "at": anyio.current_time()}
    refused = 0

    def take() -> tuple[bool, dict[str, str]]:
        now = anyio.current_time()
        bucket["tokens"] = min(limit, bucket["tokens"] + (now - bucket["at"]) * rate)
        bucket["at"] = now
        ok = bucket["tokens"] >= 1
        if ok:
            bucket["tokens"] -= 1
        missing = limit - bucket["tokens"]
        headers = {
            "x-ratelimit-limit-requests": str(int(limit)),
            "x-ratelimit-remaining-requests": str(int(bucket["tokens"])),
            "x-ratelimit-reset-requests": f"{math.ceil(missing / rate * 1000)}ms",
        }
        return ok, headers

    async def handler_stream(req: Request, reply: Reply) -> None:
        nonlocal refused
        ok, headers = take()
        if not ok:
            refused += 1
            body = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
            await reply.respond(429, body, {**headers, "retry-after-ms": str(int(1000 / rate))})
            return
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        await reply.stream.send(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            f"{head}transfer-encoding: chunked\r\nconnection: close\r\n\r\n".encode()
        )
        for ev in events_for("messages", [tag_of(req)]):
            await reply.chunk(ev)
        await reply.end()

    async with fault_server(handler_stream) as server, client(server) as c:
        started = anyio.current_time()
        with anyio.fail_after(DEADLINE):
            async with c.map(
                [dict(model="m", max_tokens=5, messages=msg(f"r{i}")) for i in range(200)], concurrency=16
            ) as results:
                out = [r async for r in results]
        elapsed = anyio.current_time() - started
    assert [r.error for r in out if not r.ok] == []
    assert [r.message.text if r.message else None for r in out] == [f"r{i}" for i in range(200)]
    assert refused <= 5  # the scheduler paced the map; the few it did hit went back in line
    assert elapsed >= (200 - limit) / rate * 0.8  # no faster than the server allows


async def test_a_529_storm_halves_concurrency_and_it_recovers() -> None:
    in_flight = 0
    peak_after_storm: list[int] = []
    storm = 24
    served = 0

    async def handler(req: Request, reply: Reply) -> None:
        nonlocal in_flight, served
        served += 1
        if served <= storm:
            body = {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}
            await reply.respond(529, body)
            return
        in_flight += 1
        peak_after_storm.append(in_flight)
        try:
            await answer(req, reply, gap=0.002)
        finally:
            in_flight -= 1

    policy = RetryPolicy(max_retries=8, initial_delay=0.01, max_delay=0.05)
    async with fault_server(handler) as server, client(server, retry=policy) as c:
        server.props = {"total_slots": 8}
        with anyio.fail_after(DEADLINE):
            async with c.map(
                [dict(model="m", max_tokens=5, messages=msg(f"r{i}")) for i in range(120)], concurrency=32
            ) as results:
                out = [r async for r in results]
        stats = c.scheduler.stats()
    assert all(r.ok for r in out)
    assert stats.decreases >= 1
    assert max(peak_after_storm[:8]) <= 4  # right after the storm: half the slots
    assert c.scheduler.window == 8.0  # recovered to the slot count
    assert max(peak_after_storm) == 8


async def cut_in(c: Client, first_piece: anyio.Event) -> tuple[list[str], StreamStatistics, Message]:
    """A batch stream asking for "bulk", and an interactive "urgent" request sent once
    ``first_piece`` is set: the stream's text pieces and statistics, and the urgent answer."""
    texts: list[str] = []
    stats: list[StreamStatistics] = []
    with anyio.fail_after(DEADLINE):
        async with anyio.create_task_group() as tg:

            async def batch() -> None:
                async with c.stream(model="m", max_tokens=50, messages=msg("bulk"), priority="batch") as s:
                    texts.extend([t async for t in s.text_deltas()])
                    stats.append(s.statistics())

            tg.start_soon(batch)
            await first_piece.wait()
            urgent = await c.create(model="m", max_tokens=5, messages=msg("urgent"), priority="interactive")
    return texts, stats[0], urgent


def cut_in_server(first_piece: anyio.Event) -> Any:
    """A handler for :func:`cut_in`: "urgent" answered at once, "bulk" streamed slowly
    from where its prefill ends (``first_piece`` set a few events in)."""

    async def handler(req: Request, reply: Reply) -> None:
        if tag_of(req) == "urgent":
            await answer(req, reply, ["ok"])
            return
        prefill = prefill_of(req)
        assert TEXT.startswith(prefill)
        rest = TEXT[len(prefill) :]
        pieces = [rest[i : i + 4] for i in range(0, len(rest), 4)]
        await reply.start()
        for n, ev in enumerate(events_for("messages", pieces)):
            await reply.chunk(ev)
            if n == 3:
                first_piece.set()
            await anyio.sleep(0.02)
        await reply.end()

    return handler


async def test_a_batch_stream_is_preempted_for_an_interactive_request_and_resumes_seamlessly() -> None:
    first_piece = anyio.Event()
    handler = cut_in_server(first_piece)
    sched = Scheduler(slots=1, min_run=0)
    async with fault_server(handler) as server, client(server, scheduler=sched) as c:
        texts, stats, urgent = await cut_in(c, first_piece)
    assert urgent.text == "ok"
    assert "".join(texts) == TEXT
    tags = [tag_of(r) for r in server.requests]
    assert tags == ["bulk", "urgent", "bulk"]
    resumed = server.requests[2]
    assert prefill_of(resumed) and TEXT.startswith(prefill_of(resumed))
    assert stats.preemptions == 1 and stats.resumes == 1
    assert sched.stats().preempted == 1


async def test_preemptions_do_not_spend_the_resume_budget() -> None:
    """A batch stream preempted more often than ``max_resumes`` is still paused for each
    interactive request: the budget bounds failures, not the scheduler's decisions (once
    spent, the stream declined every preemption and held its slot until it ended)."""
    long_text = " ".join(f"w{i}" for i in range(240))
    progress = anyio.Event()

    async def handler(req: Request, reply: Reply) -> None:
        nonlocal progress
        if tag_of(req).startswith("urgent"):
            await answer(req, reply, ["ok"])
            return
        rest = long_text[len(prefill_of(req)) :]
        await reply.start()
        for n, ev in enumerate(events_for("messages", [rest[i : i + 4] for i in range(0, len(rest), 4)])):
            await reply.chunk(ev)
            if n == 4:
                progress.set()
            await anyio.sleep(0.005)
        await reply.end()

    sched = Scheduler(slots=1, min_run=0)
    async with (
        fault_server(handler) as server,
        client(server, scheduler=sched, stall=StallPolicy(True, max_resumes=1)) as c,
    ):
        with anyio.fail_after(DEADLINE):
            async with anyio.create_task_group() as tg:
                texts: list[str] = []

                async def batch() -> None:
                    async with c.stream(
                        model="m", max_tokens=500, messages=msg("bulk"), priority="batch"
                    ) as s:
                        texts.extend([t async for t in s.text_deltas()])

                tg.start_soon(batch)
                for k in range(3):
                    await progress.wait()
                    progress = anyio.Event()
                    await c.create(
                        model="m", max_tokens=5, messages=msg(f"urgent{k}"), priority="interactive"
                    )
    assert "".join(texts) == long_text
    tags = [tag_of(r) for r in server.requests]
    assert tags == ["bulk", "urgent0", "bulk", "urgent1", "bulk", "urgent2", "bulk"]
    assert sched.stats().preempted == 3


async def test_a_preempted_stream_continues_when_its_kept_stream_cannot_be_stopped() -> None:
    """On llama-server (its ``/props`` says so) a preempted stream's kept stream is stopped
    (``DELETE /v1/stream``) when the reader leaves it and again before the continuation.
    Stopping it is best effort: a stop request that fails does not fail the stream."""
    first_piece = anyio.Event()

    async def handler(req: Request, reply: Reply) -> None:
        if req.method == "DELETE":
            return  # the connection closes with no answer
        if tag_of(req) == "urgent":
            await answer(req, reply, ["ok"])
            return
        rest = TEXT[len(prefill_of(req)) :]
        await reply.start()
        for n, ev in enumerate(events_for("messages", [rest[i : i + 4] for i in range(0, len(rest), 4)])):
            await reply.chunk(ev)
            if n == 3:
                first_piece.set()
            await anyio.sleep(0.02)
        await reply.end()

    sched = Scheduler(min_run=0)
    async with fault_server(handler) as server, client(server, scheduler=sched, retry=RetryPolicy(0)) as c:
        server.props = {"total_slots": 1}  # llama-server: one slot, streams kept by conversation
        texts, _, _ = await cut_in(c, first_piece)
    assert "".join(texts) == TEXT
    stops = [r for r in server.requests if r.method == "DELETE"]
    assert len(stops) == 2 and all(r.path.startswith("/v1/stream?conv_id=") for r in stops)
    assert [tag_of(r) for r in server.requests if r.method == "POST"] == ["bulk", "urgent", "bulk"]


async def test_the_hosted_api_is_never_preempted() -> None:
    c = Client(api_key=KEY, scheduler=Scheduler(slots=1, min_run=0))
    s = c.stream(model="m", max_tokens=5, messages=msg("x"), priority="batch")
    assert s._flight == []  # submitted on entry; preemptible only where resume is possible
    assert c.hosted
    await c.aclose()


async def test_metrics_per_request_and_per_tier() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await answer(req, reply, gap=0.001)

    seen: list[RequestMetrics] = []
    async with fault_server(handler) as server, client(server, on_metrics=seen.append) as c:
        for prio in ["interactive", "interactive", "batch"]:
            async with c.stream(model="m", max_tokens=50, messages=msg("m"), priority=prio, tenant="u1") as s:
                await s.final_message()
            m = s.metrics()
            assert m.ttft is not None and m.ttft > 0 and m.e2el >= m.ttft
            assert m.output_tokens == len(PIECES)  # the server's reported output
            assert m.tpot is not None and m.tpot >= 0
            assert len(m.itl) == len(PIECES) - 1
            assert m.tier == prio and m.tenant == "u1" and m.ok
        summary = c.metrics()
    assert [m.tier for m in seen] == ["interactive", "interactive", "batch"]
    assert summary["interactive"].requests == 2 and summary["batch"].requests == 1
    ttft = summary["interactive"].ttft
    assert ttft is not None and ttft.count == 2 and ttft.p50 <= ttft.p99
    assert summary["interactive"].tokens_per_second


async def test_a_failing_metrics_hook_does_not_break_requests() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await answer(req, reply)

    def hook(m: RequestMetrics) -> None:
        raise RuntimeError("telemetry down")

    async with (
        fault_server(handler) as server,
        client(server, on_metrics=hook) as c,
        c.stream(model="m", max_tokens=50, messages=msg("m")) as s,
    ):
        assert (await s.final_message()).text == TEXT


# ---- map --------------------------------------------------------------------------------


def echo_handler(fail: set[str] = frozenset()) -> Any:  # type: ignore[assignment]
    async def handler(req: Request, reply: Reply) -> None:
        tag = tag_of(req)
        if tag in fail:
            await reply.respond(
                400, {"type": "error", "error": {"type": "invalid_request_error", "message": "no"}}
            )
            return
        await answer(req, reply, [tag, "!"])

    return handler


async def test_map_results_in_order_with_errors_as_values(anyio_backend: str) -> None:
    progress: list[MapProgress] = []
    reqs = [dict(model="m", max_tokens=5, messages=msg(f"r{i}")) for i in range(30)]
    async with fault_server(echo_handler({"r7"})) as server, client(server) as c:
        with anyio.fail_after(DEADLINE):
            async with c.map(reqs, concurrency=5, on_progress=progress.append) as results:
                out = [r async for r in results]
    assert [r.index for r in out] == list(range(30))
    assert [r.message.text for r in out if r.message] == [f"r{i}!" for i in range(30) if i != 7]
    assert not out[7].ok and "no" in str(out[7].error)
    assert progress[-1].done == 30 and progress[-1].failed == 1 and progress[-1].total == 30
    assert all(p.running <= 5 for p in progress)


async def test_map_unordered_yields_every_result() -> None:
    async def gen() -> Any:
        for i in range(12):
            await checkpoint()
            yield dict(model="m", max_tokens=5, messages=msg(f"r{i}"))

    async with (
        fault_server(echo_handler()) as server,
        client(server) as c,
        c.map(gen(), ordered=False, concurrency=4) as results,
    ):
        out = [r async for r in results]
    assert sorted(r.index for r in out) == list(range(12))
    assert all(r.message and r.message.text == f"r{r.index}!" for r in out)


async def test_map_memory_is_bounded_by_its_window() -> None:
    read = 0

    def endless() -> Any:
        nonlocal read
        i = 0
        while True:
            read += 1
            yield dict(model="m", max_tokens=5, messages=msg(f"r{i}"))
            i += 1

    async with fault_server(echo_handler()) as server, client(server) as c:
        with anyio.fail_after(DEADLINE):
            async with c.map(endless(), concurrency=3, window=6) as results:
                got = 0
                async for _ in results:
                    got += 1
                    if got == 10:
                        await wait_all_tasks_blocked()
                        assert read <= got + 6 + 1
                        break
    assert len(server.requests) <= 10 + 6 + 1


async def test_map_checkpoint_skips_finished_requests_on_restart(tmp_path: Path) -> None:
    path = tmp_path / "map.jsonl"
    reqs = [dict(model="m", max_tokens=5, messages=msg(f"r{i}")) for i in range(20)]
    async with fault_server(echo_handler()) as server, client(server) as c:
        with pytest.raises(RuntimeError, match="crash"):
            async with c.map(reqs, concurrency=1, checkpoint=path) as results:
                async for r in results:
                    if r.index == 6:
                        raise RuntimeError("crash")
        first = len(server.requests)
        assert 7 <= first <= 8
        lines = path.read_bytes().splitlines()
        path.write_bytes(b"\n".join(lines) + b'\n{"index": 99, "key": "torn li')  # a torn last line
        async with c.map(reqs, concurrency=4, checkpoint=path) as results:
            out = [r async for r in results]
        sent = len(server.requests)
        async with c.map(reqs, concurrency=4, checkpoint=path) as results:  # after the torn line
            again = [r async for r in results]
    assert [r.message.text for r in out if r.message] == [f"r{i}!" for i in range(20)]
    restored = [r.index for r in out if r.from_checkpoint]
    assert restored == list(range(len(lines)))
    assert sent == first + 20 - len(lines)  # nothing finished was sent again
    assert all(r.from_checkpoint for r in again) and len(server.requests) == sent  # nor now


async def test_map_resends_an_item_whose_request_changed(tmp_path: Path) -> None:
    path = tmp_path / "map.jsonl"
    async with fault_server(echo_handler()) as server, client(server) as c:
        async with c.map([dict(model="m", max_tokens=5, messages=msg("a"))], checkpoint=path) as results:
            [r async for r in results]
        async with c.map([dict(model="m", max_tokens=5, messages=msg("b"))], checkpoint=path) as results:
            (r,) = [r async for r in results]
    assert r.message is not None and r.message.text == "b!" and not r.from_checkpoint
    assert len(server.requests) == 2


async def test_map_must_be_entered() -> None:
    async with Client(base_url="http://127.0.0.1:9") as c:
        with pytest.raises(TypeError, match="async with"):
            async for _ in c.map([]):
                pass


async def test_leaving_a_map_early_cancels_queued_work() -> None:
    gate = anyio.Event()

    async def handler(req: Request, reply: Reply) -> None:
        await gate.wait()
        await answer(req, reply)

    reqs = [dict(model="m", max_tokens=5, messages=msg(f"r{i}")) for i in range(10)]
    async with fault_server(handler) as server, client(server, scheduler=Scheduler(slots=2)) as c:
        with anyio.fail_after(DEADLINE):
            async with c.map(reqs, concurrency=6):
                await wait_all_tasks_blocked()
                assert c.scheduler.waiting == 4 and c.scheduler.running == 2
            assert c.scheduler.waiting == 0 and c.scheduler.running == 0
        gate.set()
    assert len(server.requests) == 2


# ---- reattach to a server that keeps the stream -----------------------------------------


def kept_stream_frames(sid: str) -> list[bytes]:
    """A message with text and a tool call, each SSE event with an id ``sid:n``."""
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "usage": {"input_tokens": 3},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me look. "}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t1", "name": "find", "input": {}},
        },
        *[
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in ['{"q', 'uery": "cats', ' and dogs"', ', "limit": 3}']
        ],
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    return [f"id: {sid}:{i}\n".encode() + sse(e["type"], e) for i, e in enumerate(events)]


@pytest.mark.parametrize("cut", [3, 6, 8])  # between blocks, inside the tool input, late in it
async def test_a_dropped_stream_reattaches_with_last_event_id_even_inside_a_tool_input(cut: int) -> None:
    frames = kept_stream_frames("s1")

    async def handler(req: Request, reply: Reply) -> None:
        last = req.headers.get("last-event-id")
        start = 0 if last is None else int(last.rsplit(":", 1)[1]) + 1
        await reply.stream.send(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nseam-stream-id: s1\r\n"
            b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        )
        for i, f in enumerate(frames[start:], start):
            if last is None and i == cut:
                return  # the connection drops here
            await reply.chunk(f)
        await reply.end()

    async with fault_server(handler) as server, client(server) as c:
        with anyio.fail_after(DEADLINE):
            async with c.stream(model="m", max_tokens=50, messages=msg("find")) as s:
                events = [ev async for ev in s]
            final = await s.final_message()
    first, second = server.requests
    assert second.headers["last-event-id"] == f"s1:{cut - 1}"
    assert second.body == first.body  # the same request: nothing prefilled, nothing regenerated
    assert final.text == "Let me look. " and final.stop_reason == "tool_use"
    assert final.tool_uses[0].input == {"query": "cats and dogs", "limit": 3}
    assert len(events) == len(frames)  # every event once
    assert s.statistics().resumes == 1


async def test_an_expired_stream_falls_back_to_a_continuation() -> None:
    frames = kept_stream_frames("s2")

    async def handler(req: Request, reply: Reply) -> None:
        if req.headers.get("last-event-id"):
            await reply.respond(
                404, {"type": "error", "error": {"type": "not_found_error", "message": "expired"}}
            )
            return
        if prefill_of(req):
            await answer(req, reply, ["more"])  # the continuation of the text
            return
        await reply.stream.send(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nseam-stream-id: s2\r\n"
            b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        )
        for f in frames[:3]:  # inside the text block
            await reply.chunk(f)

    async with fault_server(handler) as server, client(server) as c:
        with anyio.fail_after(DEADLINE):
            async with c.stream(model="m", max_tokens=50, messages=msg("find")) as s:
                text = "".join([t async for t in s.text_deltas()])
    assert [bool(r.headers.get("last-event-id")) for r in server.requests] == [False, True, False]
    assert prefill_of(server.requests[2]) == "Let me look."
    assert text == "Let me look. more"


# ---- found by an adversarial pass -------------------------------------------------------


async def test_a_finished_stream_frees_its_slot_before_its_block_ends() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await answer(req, reply, ["a ", "b"])

    async with fault_server(handler) as server, client(server, scheduler=Scheduler(slots=1)) as c:
        with anyio.fail_after(DEADLINE):
            async with c.stream(model="m", max_tokens=5, messages=msg("x")) as s:
                first = await s.final_message()
                assert c.scheduler.running == 0  # the upstream is done: its slot is free
                follow = await c.create(model="m", max_tokens=5, messages=msg(first.text))
                assert not s._inner.preempt()  # nothing left to pause
    assert follow.text == "a b" and len(server.requests) == 2


async def test_malformed_rate_limit_headers_never_fail_a_request() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        headers = {
            "date": "Tue, 01 Dec 99999 00:00:00 GMT",
            "retry-after": "Wed, 01 Jan 99999 00:00:00 GMT",
            "anthropic-ratelimit-tokens-limit": "1e400",
            "anthropic-ratelimit-tokens-reset": "9999-99-99T99:99:99Z",
            "x-ratelimit-reset-requests": "1h" * 40,
        }
        await reply.respond(
            200,
            {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": "end_turn",
                "usage": {},
            },
            headers,
        )

    async with fault_server(handler) as server, client(server) as c:
        msg_ = await c.create(model="m", max_tokens=5, messages=msg("x"))
    assert msg_.stop_reason == "end_turn"


async def test_a_client_and_its_scheduler_are_freed_together() -> None:
    import gc
    import weakref

    c = Client(base_url="http://127.0.0.1:9")
    ref = weakref.ref(c.scheduler)
    await c.aclose()
    del c
    gc.collect()
    assert ref() is None


async def test_a_batch_flight_can_be_preempted_as_soon_as_it_is_admitted() -> None:
    from sdk.scheduler import Cost, Dispatcher

    d = Dispatcher(Scheduler(slots=1))
    asked: list[str] = []
    a = d.flight(priority="batch", tenant="", cost=Cost(), preemptible=True)
    a.on_preempt(lambda: asked.append("a") or True)
    await a.admit()
    b = d.flight(priority="batch", tenant="", cost=Cost(), preemptible=True)
    b.on_preempt(lambda: asked.append("b") or True)  # before admission, as the client does
    async with anyio.create_task_group() as tg:
        tg.start_soon(b.admit)
        await wait_all_tasks_blocked()
        a.finish(ok=True)  # admits b, whose task has not run since
        i = d.flight(priority="interactive", tenant="", cost=Cost(), preemptible=False)
        tg.start_soon(i.admit)  # its poll preempts b at once: b's hook is there already
        await wait_all_tasks_blocked()
        assert asked == ["b"] and b.ticket.preemptible
        b.released()
        await wait_all_tasks_blocked()
        assert i.ticket.state is TicketState.RUNNING


async def test_map_turns_a_request_that_is_not_json_into_its_error() -> None:
    reqs: list[dict[Any, Any]] = [
        dict(model="m", max_tokens=5, messages=msg("r0")),
        {1: "not a string key"},
        dict(model="m", max_tokens=5, messages=msg("r2")),
    ]
    async with fault_server(echo_handler()) as server, client(server) as c:
        with anyio.fail_after(DEADLINE):
            async with c.map(reqs) as results:
                out = [r async for r in results]
    assert [r.ok for r in out] == [True, False, True] and "not JSON" in str(out[1].error)
    assert len(server.requests) == 2
