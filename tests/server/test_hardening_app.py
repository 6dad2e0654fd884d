"""The scheduling server under attack, in process: clients that leave at every point, quota
bypasses, kept streams that pin memory, malformed requests, a client that stops reading a
stream nothing can pause. Each test drives the ASGI app with a fake engine
(:mod:`tests.server.engine`) and checks that the server's tables and the scheduler's and
router's counters come back to idle."""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from sdk.server import ConfigError, ServerApp, ServerConfig, hash_key
from sdk.server._live import LiveStream, overdue
from sdk.server._quota import Quotas

from .engine import IDLE, Conn, FakeEngine, Harness, request, serving

pytestmark = pytest.mark.anyio

UPSTREAM = "http://engine.test:8080"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def make(engine: FakeEngine, **cfg: Any) -> ServerApp:
    cfg.setdefault("slots", 1)
    return ServerApp([UPSTREAM], ServerConfig(**cfg), transport=engine)


async def settle() -> None:
    """Let every task run until all wait on something outside them."""
    await wait_all_tasks_blocked()


async def wait(event: anyio.Event) -> None:
    with anyio.fail_after(10):
        await event.wait()


async def until(cond: Any) -> None:
    with anyio.fail_after(10):
        while not cond():
            await anyio.sleep(0.001)


# ---- 1: a client that leaves while its request is queued ------------------------------


async def test_a_stream_whose_client_leaves_while_queued_leaves_the_queue() -> None:
    engine = FakeEngine(deltas=3)
    engine.hold()
    app = make(engine)
    async with serving(app, engine) as h:
        first = h.open("/v1/messages", request(1))
        await wait(first.started)  # admitted, the slot held while the engine is held
        second = h.open("/v1/messages", request(2, size=200_000))  # costed in a thread
        await until(lambda: h.idle()["waiting"] == 1)
        assert h.idle()["in_flight"] == 2
        second.leave()
        await wait(second.ended)
        await settle()
        # out of the queue at once, its route closed, nothing kept for it
        assert h.idle() == {**IDLE, "running": 1, "in_flight": 1, "live": 1, "engine_open": 1}
        engine.release()
        await wait(first.complete)
        await settle()
        assert len(engine.generations) == 1  # never sent to the engine, decoded for nobody
        app.sweep(anyio.current_time() + app.config.replay_seconds)
        assert h.idle() == IDLE


async def test_a_stream_whose_client_leaves_before_its_head_is_ended_at_once() -> None:
    """Admitted, the engine's answer not yet begun: nobody has the stream's id, nobody
    can come back for it, so nothing is decoded on for it."""
    engine = FakeEngine(deltas=None)
    engine.hold_answers()
    app = make(engine, replay_seconds=3600.0)
    async with serving(app, engine) as h:
        conn = h.open("/v1/messages", request(1))
        await until(lambda: len(engine.generations) == 1)
        assert h.idle()["running"] == 1 and not conn.started.is_set()
        conn.leave()
        await wait(conn.ended)
        await settle()
        assert h.idle() == IDLE
        engine.answer()
        await settle()
        assert h.idle() == IDLE and engine.decoded == 0


async def test_a_non_streaming_request_whose_client_leaves_while_queued_leaves_the_queue() -> None:
    engine = FakeEngine(deltas=3)
    engine.hold()
    app = make(engine)
    async with serving(app, engine) as h:
        first = h.open("/v1/messages", request(1, stream=False))
        await until(lambda: len(engine.generations) == 1)
        second = h.open("/v1/messages", request(2, stream=False))
        await settle()
        assert h.idle()["waiting"] == 1
        second.leave()
        await wait(second.ended)
        await settle()
        assert h.idle() == {**IDLE, "running": 1, "in_flight": 1}
        engine.release()
        await wait(first.ended)
        assert first.status == 200 and len(engine.generations) == 1
        await settle()
        assert h.idle() == IDLE


async def test_an_admitted_stream_whose_client_left_is_cancelled_after_the_grace() -> None:
    engine = FakeEngine(deltas=None)
    app = make(engine, replay_seconds=30.0)
    async with serving(app, engine) as h:
        conn = h.open("/v1/messages", request(1))
        await wait(conn.got)
        conn.leave()
        await wait(conn.ended)
        await settle()
        assert len(app._live) == 1  # kept for a reattach within the grace
        app.sweep(anyio.current_time() + 30.0)
        await until(lambda: h.idle() == IDLE)


async def test_a_stream_nobody_reads_gives_its_slot_to_a_waiting_request_and_continues_later() -> None:
    """A client that left after the head: its stream is kept for a reattach and goes on
    generating while the slot is not wanted, but a request waiting for the slot gets it
    at once (before, the stream decoded on for nobody until its lead and the engine
    stream's buffer were full: hundreds of deltas). The client back for it gets the
    rest exactly once, continued when re-admitted."""
    engine = FakeEngine(deltas=None)
    app = make(engine, replay_seconds=3600.0)
    async with serving(app, engine) as h:
        first = h.open("/v1/messages", request(1))
        await wait(first.got)
        engine.hold()
        first.leave()
        await wait(first.ended)
        await settle()
        assert h.idle()["running"] == 1 and len(app._live) == 1
        engine.deltas = 3  # the second request's answer, and the first one's continuation
        second = h.open("/v1/messages", request(2))
        await until(lambda: h.idle()["waiting"] == 1)
        decoded = engine.decoded
        engine.release()
        await wait(second.complete)
        assert second.status == 200
        for_nobody = engine.decoded - decoded - 3
        assert for_nobody < 20, for_nobody  # the 16 KiB lead and buffer: about 250
        await settle()
        # given way, it waits for its client: not queued again, not continued for nobody
        assert len(engine.generations) == 2 and h.idle()["running"] == 0 and h.idle()["waiting"] == 0
        last = first.events()[-1][0]
        assert last is not None
        back = await h.call("/v1/messages", request(1), {"last-event-id": last})
        assert back.status == 200 and back.complete.is_set()
        sid, _, n = last.rpartition(":")
        ids = [i for i, _ in back.events()]
        assert ids == [f"{sid}:{k}" for k in range(int(n) + 1, int(n) + 1 + len(ids))]  # once, in order
        kinds = [d["type"] for _, d in back.events()]
        assert kinds.count("message_start") == 0 and kinds[-1] == "message_stop"
        assert len(engine.generations) == 3  # the first, the second, the first's continuation
        app.sweep(anyio.current_time() + 3600.0)
        await until(lambda: h.idle() == IDLE)


async def test_a_stream_nobody_reads_that_the_scheduler_preempts_waits_for_its_client() -> None:
    """A batch stream whose client left, preempted by the scheduler for an interactive
    request: it is not queued again and continued for nobody when the slot frees (it
    was: about 250 deltas); its client back for it gets the rest."""
    engine = FakeEngine(deltas=None)
    app = make(engine, replay_seconds=3600.0)
    async with serving(app, engine) as h:
        first = h.open("/v1/messages", request(1, priority="batch"))
        await wait(first.got)
        engine.hold()
        first.leave()
        await wait(first.ended)
        await settle()
        engine.deltas = 3
        second = h.open("/v1/messages", request(2, priority="interactive"))
        await until(lambda: len(engine.generations) == 2)
        engine.release()
        await wait(second.complete)
        await settle()
        assert len(engine.generations) == 2 and h.idle()["running"] == 0 and h.idle()["waiting"] == 0
        last = first.events()[-1][0]
        assert last is not None
        back = await h.call("/v1/messages", request(1, priority="batch"), {"last-event-id": last})
        assert back.status == 200 and back.events()[-1][1]["type"] == "message_stop"
        assert len(engine.generations) == 3
        app.sweep(anyio.current_time() + 3600.0)
        await until(lambda: h.idle() == IDLE)


def _stored(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n"


def _stored_message(block: dict[str, Any], delta: dict[str, Any], *end: bytes) -> list[bytes]:
    """What a dead replica stored of a stream: its start, one whole block, then ``end``."""
    msg = {"id": "m", "type": "message", "role": "assistant", "model": "fake", "content": []}
    return [
        _stored("message_start", {"type": "message_start", "message": {**msg, "usage": {"input_tokens": 3}}}),
        _stored("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        _stored("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        _stored("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *end,
    ]


async def _take_over(events: list[bytes]) -> tuple[LiveStream, FakeEngine]:
    """The stream ``events`` make, continued by this replica's producer as a takeover."""
    from sdk.server._takeover import rebuild

    engine = FakeEngine(deltas=3)
    app = make(engine, replay_seconds=3600.0)
    async with serving(app, engine):
        state, framer, used = rebuild({"kind": "messages"}, events)
        live = LiveStream("s1", "", keep_bytes=1 << 20, lead_bytes=1 << 14, done_frame=b"")
        route = app._router().open(None)
        await app._produce(live, route, request(1), app.scheduler.tiers.default, "", framer, (state, used))
    return live, engine


async def test_a_stream_taken_over_with_a_tool_call_in_it_ends_with_an_error_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A replica taking over a dead one's stream continues it by prefill, which carries
    text only: a stream holding a tool call ends with an error event for its client
    (it ended with nothing, and each reattach found the same, until the client gave
    up), and no continuation is sent that would make the call again."""
    call = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    live, engine = await _take_over(_stored_message(call, {"type": "input_json_delta", "partial_json": "{}"}))
    frame = live.frame(0)
    assert live.done and live.next == 1 and frame is not None and b"event: error" in frame
    assert b"tool call" in frame and not engine.generations
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


async def test_a_stream_taken_over_after_its_stop_reason_gets_only_its_end() -> None:
    """The dead replica stored the stop reason but not ``message_stop``: the message is
    whole, so the taking-over replica sends its end, not a continuation past it."""
    stop = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}
    events = _stored_message(
        {"type": "text", "text": ""},
        {"type": "text_delta", "text": "Done."},
        _stored("message_delta", stop),
    )
    live, engine = await _take_over(events)
    frame = live.frame(0)
    assert live.done and live.next == 1 and frame is not None and b"message_stop" in frame
    assert not engine.generations


async def test_a_client_done_with_a_kept_stream_deletes_it_and_frees_the_slot_at_once() -> None:
    """``DELETE /v1/streams/<id>`` by the stream's tenant ends it now (its generation, slot
    and memory), not after ``replay_seconds``; another tenant's key, an unknown id and a
    second delete get 404."""
    cfg = ServerConfig.from_mapping(
        {
            "server": {"slots": 1, "replay_seconds": 3600.0},
            "keys": [{"sha256": hash_key("k-a"), "tenant": "a"}, {"sha256": hash_key("k-b"), "tenant": "b"}],
        }
    )
    engine = FakeEngine(deltas=None)
    app = ServerApp([UPSTREAM], cfg, transport=engine)
    async with serving(app, engine) as h:
        conn = h.open("/v1/messages", request(1), {"x-api-key": "k-a"})
        await wait(conn.got)
        conn.leave()
        await wait(conn.ended)
        sid = conn.headers["seam-stream-id"]
        other = await h.call(f"/v1/streams/{sid}", b"", {"x-api-key": "k-b"}, method="DELETE")
        assert other.status == 404 and len(app._live) == 1
        wrong = await h.call(f"/v1/streams/{sid}", b"", {"x-api-key": "k-a"}, method="GET")
        assert wrong.status == 405
        done = await h.call(f"/v1/streams/{sid}", b"", {"x-api-key": "k-a"}, method="DELETE")
        assert done.status == 200 and done.json() == {"id": sid, "type": "stream_deleted"}
        await until(lambda: h.idle() == IDLE)  # no sweep: ended at once
        decoded = engine.decoded
        again = await h.call(f"/v1/streams/{sid}", b"", {"x-api-key": "k-a"}, method="DELETE")
        assert again.status == 404
        assert (await h.call("/v1/streams/nope", b"", {"x-api-key": "k-a"}, method="DELETE")).status == 404
        await settle()
        assert engine.decoded == decoded


# ---- 13: streams that completed for a client that had left ----------------------------


async def test_a_stream_that_completed_after_its_client_left_expires() -> None:
    """Clients that leave before the head (their requests admitted, not yet answered):
    whatever becomes of their streams, none stays in the table of kept streams."""
    engine = FakeEngine(deltas=3)
    app = make(engine, replay_seconds=30.0)
    async with serving(app, engine) as h:
        for n in range(20):
            engine.hold_answers()
            conn = h.open("/v1/messages", request(n))
            await until(lambda n=n: len(engine.generations) == n + 1)
            conn.leave()
            await wait(conn.ended)
            engine.answer()
            await settle()
        app.sweep(anyio.current_time() + 30.0)
        assert h.idle() == IDLE


async def test_a_finished_stream_with_no_client_expires_after_replay_seconds() -> None:
    engine = FakeEngine(deltas=3)
    app = make(engine, replay_seconds=30.0)
    async with serving(app, engine) as h:
        conn = await h.call("/v1/messages", request(1))
        assert conn.status == 200
        assert len(app._live) == 1  # its tail kept for a client that lost it in buffers
        app.sweep(anyio.current_time() + 29.0)
        assert len(app._live) == 1
        app.sweep(anyio.current_time() + 30.0)
        assert h.idle() == IDLE


# ---- 7: quotas on every route that costs engine work; one set of buckets per tenant ----

KEY = "k-quota-1"
KEY2 = "k-quota-2"


def quota_config(**server: Any) -> ServerConfig:
    return ServerConfig.from_mapping(
        {
            "server": {"slots": 1, **server},
            "keys": [{"sha256": hash_key(KEY), "tenant": "t", "requests_per_minute": 2}],
        }
    )


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/tokenize", {"content": "some text"}),
        (
            "/v1/messages/count_tokens",
            {"model": "fake", "messages": [{"role": "user", "content": "hi"}]},
        ),
    ],
)
async def test_tokenize_and_count_tokens_are_metered(path: str, body: dict[str, Any]) -> None:
    engine = FakeEngine()
    app = ServerApp([UPSTREAM], quota_config(), transport=engine)
    async with serving(app, engine) as h:
        seen = [(await h.call(path, body, {"x-api-key": KEY})).status for _ in range(4)]
        assert seen == [200, 200, 429, 429]
        assert engine.tokenized + engine.counted == 2
        # and they wait for a slot like any engine work
        engine.hold()
        app.quotas = Quotas()
        gen = h.open("/v1/messages", request(1), {"x-api-key": KEY})
        await wait(gen.started)
        conn = h.open(path, body, {"x-api-key": KEY})
        await settle()
        assert h.idle()["waiting"] == 1 and engine.tokenized + engine.counted == 2
        engine.release()
        await wait(conn.ended)
        assert conn.status == 200 and engine.tokenized + engine.counted == 3


def test_two_keys_of_one_tenant_with_different_limits_are_refused() -> None:
    with pytest.raises(ConfigError, match="tenant 't'"):
        ServerConfig.from_mapping(
            {
                "keys": [
                    {"sha256": hash_key(KEY), "tenant": "t", "requests_per_minute": 5},
                    {"sha256": hash_key(KEY2), "tenant": "t", "requests_per_minute": 6},
                ]
            }
        )


def test_a_tenant_has_one_set_of_buckets() -> None:
    """Whatever limits a check carries, the tenant's bucket is never replaced by a full one."""
    q = Quotas()
    passed = sum(q.check("t", 0.0, rpm=5.0 + i % 2, tpm=None, tokens=1).ok for i in range(60))
    assert passed <= 6


# ---- 8: what kept streams hold, and how many --------------------------------------------


async def abandon(h: Harness, n: int, size: int) -> None:
    for i in range(n):
        conn = h.open("/v1/messages", request(i, size=size))
        await wait(conn.got)  # the head and a first frame: the client has the stream's id
        conn.leave()
        await wait(conn.ended)


async def test_the_number_of_kept_streams_is_bounded() -> None:
    engine = FakeEngine(deltas=None)
    app = make(engine, slots=64, replay_max_streams=8, replay_seconds=3600.0)
    async with serving(app, engine) as h:
        await abandon(h, 40, 0)
        await settle()
        assert len(app._live) <= 8
        assert h.idle()["running"] <= 8 and h.idle()["in_flight"] <= 8 and engine.open <= 8
        app.sweep(anyio.current_time() + 3600.0)
        await until(lambda: h.idle() == IDLE)


async def test_kept_streams_hold_at_most_replay_total_bytes_and_free_it() -> None:
    """40 abandoned streams of 200 kB requests against a budget of 1 MB: the server keeps
    a few, ends the rest, and what it holds (measured) stays near the budget; once they
    expire the memory comes back."""
    engine = FakeEngine(deltas=None)
    budget = 1 << 20
    app = make(engine, slots=64, replay_total_bytes=budget, replay_seconds=3600.0)
    async with serving(app, engine) as h:
        await abandon(h, 2, 0)  # warm up whatever is allocated once
        app.sweep(anyio.current_time() + 3600.0)
        await until(lambda: h.idle() == IDLE)
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            await abandon(h, 40, 200_000)
            await settle()
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
            assert len(app._live) < 40
            assert held < 3 * budget, f"{held / 2**20:.1f} MiB held for kept streams"
            app.sweep(anyio.current_time() + 3600.0)
            await until(lambda: h.idle() == IDLE)
            gc.collect()
            after = tracemalloc.get_traced_memory()[0] - before
            # what stays is the metrics of the 40 requests, not their 8 MB of prompts
            assert after < budget, f"{after / 2**20:.1f} MiB not given back"
        finally:
            tracemalloc.stop()


# ---- 9: malformed requests are 400s, never 500s -----------------------------------------

GOOD: dict[str, Any] = {"model": "fake", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


def deep(n: int) -> Any:
    v: Any = "x"
    for _ in range(n):
        v = [v]
    return v


BAD_MESSAGES: list[tuple[str, dict[str, Any], dict[str, str]]] = [
    ("priority ²", {**GOOD, "priority": "²"}, {}),
    ("priority digits", {**GOOD, "priority": "9" * 5000}, {}),
    ("priority header ²", GOOD, {"seam-priority": "²"}),
    ("priority huge int", {**GOOD, "priority": 2**62}, {}),
    ("priority float", {**GOOD, "priority": 1.5}, {}),
    ("max_tokens 2**31", {**GOOD, "max_tokens": 2**31}, {}),
    ("message not an object", {**GOOD, "messages": [1, "x"]}, {}),
    ("role system", {**GOOD, "messages": [{"role": "system", "content": "x"}]}, {}),
    ("content a number", {**GOOD, "messages": [{"role": "user", "content": 3}]}, {}),
    ("model empty", {**GOOD, "model": ""}, {}),
    ("too deep", {**GOOD, "metadata": deep(300)}, {}),
    ("deep tool input", {**GOOD, "tools": [{"name": "f", "input_schema": deep(300)}]}, {}),
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(("name", "body", "headers"), BAD_MESSAGES, ids=[b[0] for b in BAD_MESSAGES])
async def test_malformed_messages_requests_are_400(
    name: str, body: dict[str, Any], headers: dict[str, str], stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    engine = FakeEngine()
    app = make(engine)
    async with serving(app, engine) as h:
        conn = await h.call("/v1/messages", {**body, "stream": stream}, headers)
        assert conn.status == 400, conn.body
        err = conn.json()["error"]
        assert err["type"] == "invalid_request_error" and err["message"]
        assert len(err["message"]) < 400  # names the field; does not echo 5,000 digits
        assert engine.generations == []
        assert h.idle() == IDLE
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


GOOD_CHAT: dict[str, Any] = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
BAD_CHAT: list[tuple[str, dict[str, Any]]] = [
    ("priority ²", {**GOOD_CHAT, "priority": "²"}),
    ("priority digits", {**GOOD_CHAT, "priority": "9" * 5000}),
    ("max_tokens 2**31", {**GOOD_CHAT, "max_tokens": 2**31}),
    ("max_completion_tokens 2**40", {**GOOD_CHAT, "max_completion_tokens": 2**40}),
    ("message not an object", {**GOOD_CHAT, "messages": [1]}),
    ("model empty", {**GOOD_CHAT, "model": ""}),
    ("too deep", {**GOOD_CHAT, "metadata": deep(300)}),
    ("tools not a list", {**GOOD_CHAT, "tools": 5}),
    ("tool_calls not a list", {**GOOD_CHAT, "messages": [{"role": "assistant", "tool_calls": 5}]}),
    (
        "arguments not a string",
        {
            **GOOD_CHAT,
            "messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": 5}}]}],
        },
    ),
    (
        "deep tool arguments",
        {
            **GOOD_CHAT,
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "c", "function": {"name": "f", "arguments": "[" * 300 + "]" * 300}}
                    ],
                },
            ],
        },
    ),
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize(("name", "body"), BAD_CHAT, ids=[b[0] for b in BAD_CHAT])
async def test_malformed_chat_requests_are_400(
    name: str, body: dict[str, Any], stream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    engine = FakeEngine()
    app = make(engine)
    async with serving(app, engine) as h:
        conn = await h.call("/v1/chat/completions", {**body, "stream": stream})
        assert conn.status == 400, conn.body
        err = conn.json()["error"]
        assert err["type"] == "invalid_request_error" and err["message"]
        assert engine.generations == []
        assert h.idle() == IDLE
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


@pytest.mark.parametrize("last", ["x:²", "x:" + "9" * 5000, "nocolon", ":", "x:-1", "x:1:2"])
async def test_a_malformed_last_event_id_is_400(last: str, caplog: pytest.LogCaptureFixture) -> None:
    engine = FakeEngine()
    app = make(engine)
    async with serving(app, engine) as h:
        conn = await h.call("/v1/messages", request(1), {"last-event-id": last})
        assert conn.status == 400, conn.body
        assert "Last-Event-ID" in conn.json()["error"]["message"]
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


# ---- 12: a stream reattaches only through the route that started it --------------------


async def test_a_messages_stream_is_not_reattached_through_chat_completions() -> None:
    engine = FakeEngine(deltas=None)
    app = make(engine, replay_seconds=3600.0)
    async with serving(app, engine) as h:
        conn = h.open("/v1/messages", request(1))
        await wait(conn.got)
        conn.leave()
        await wait(conn.ended)
        last = conn.events()[-1][0]
        assert last is not None
        other = await h.call("/v1/chat/completions", GOOD_CHAT | {"stream": True}, {"last-event-id": last})
        assert other.status == 400, other.body
        assert "/v1/messages" in other.json()["error"]["message"]
        assert len(app._live) == 1  # still there for the right route
        back = h.open("/v1/messages", request(1), {"last-event-id": last})
        await wait(back.got)
        sid, _, n = last.rpartition(":")
        assert back.status == 200 and back.events()[0][0] == f"{sid}:{int(n) + 1}"  # the next one
        back.leave()
        await wait(back.ended)
        app.sweep(anyio.current_time() + 3600.0)
        await until(lambda: h.idle() == IDLE)


# ---- 3: a client that stops reading a stream that cannot be paused ----------------------


async def test_a_client_that_stops_reading_an_unpausable_stream_is_cut_and_the_slot_freed() -> None:
    """A stream inside a tool input cannot be paused (no resumable point): the producer
    stops, the engine's stream is held open, the slot with it. The write timeout ends
    it."""
    engine = FakeEngine(deltas=None, tool=True)
    app = make(engine, send_timeout=0.2, replay_seconds=3600.0)
    async with serving(app, engine) as h:
        conn = h.open("/v1/messages", request(1))
        await wait(conn.got)
        conn.reading = anyio.Event()  # stops reading
        await wait(conn.ended)
        await until(lambda: h.idle() == IDLE)
        # the next request gets the slot
        engine.deltas = 2
        engine.tool = False
        nxt = await h.call("/v1/messages", request(2))
        assert nxt.status == 200 and nxt.complete.is_set()


def _kept_stream(sid: str, idle_since: float | None, *, sent: int, body: int = 0) -> LiveStream:
    live = LiveStream(sid, "t", keep_bytes=1 << 20, lead_bytes=1024, done_frame=b"", request_bytes=body)
    for _ in range(sent):
        live.push(b"x" * 100)
    live.advance(sent)
    if idle_since is None:
        live.attach()
    else:
        live.idle_since = idle_since
    return live


async def test_overdue_streams_longest_idle_first_attached_spared() -> None:
    """The pure policy: expired streams, then the longest idle past the count, then past
    the bytes (their kept events trimmed first); a stream with a client is never ended,
    only its kept events trimmed, last."""
    a, b, c = (_kept_stream(s, t, sent=10) for s, t in (("a", 1.0), ("b", 2.0), ("c", 3.0)))
    on = _kept_stream("on", None, sent=10)
    bound = {"seconds": 10.0, "max_streams": 10, "total_bytes": 1 << 30}
    assert overdue([a, b, c, on], 11.5, **bound) == [a]  # idle 10.5 s
    assert overdue([c, b, a, on], 5.0, **{**bound, "max_streams": 2}) == [a]
    # running streams pin their request twice (parsed, and as the engine's body)
    big = _kept_stream("big", 4.0, sent=1, body=50_000)
    assert big.held_bytes >= 100_000
    assert overdue([a, b, c, big, on], 5.0, **{**bound, "total_bytes": 60_000}) == [a, b, c, big]
    assert on.kept_bytes == 1000  # the attached stream kept its events
    done = _kept_stream("done", 4.0, sent=1, body=50_000)
    done.finish()  # its producer returned: the stream holds only its frames
    assert done.held_bytes == 100


def _gauges(conn: Conn) -> dict[str, float]:
    return {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in conn.body.decode().splitlines()
        if line.startswith(
            (
                "seam_streams",
                "seam_stream_held",
                "seam_upstream_in_flight",
                "seam_queue_depth",
                "seam_running",
            )
        )
    }


async def test_metrics_show_the_kept_streams_and_their_return_to_idle() -> None:
    engine = FakeEngine(deltas=None)
    app = make(engine, replay_seconds=30.0)
    async with serving(app, engine) as h:
        await abandon(h, 1, 10_000)
        busy = _gauges(await h.call("/metrics", None, method="GET"))
        assert busy['seam_streams{client="gone"}'] == 1 and busy["seam_stream_held_bytes"] > 20_000
        assert busy['seam_upstream_in_flight{upstream="0"}'] == 1
        app.sweep(anyio.current_time() + 30.0)
        await until(lambda: h.idle() == IDLE)
        idle = _gauges(await h.call("/metrics", None, method="GET"))
        assert idle['seam_streams{client="gone"}'] == 0 and idle['seam_streams{client="attached"}'] == 0
        assert idle["seam_stream_held_bytes"] == 0 and idle['seam_upstream_in_flight{upstream="0"}'] == 0
        assert all(v >= 0 for v in idle.values()) and not any(
            v for k, v in idle.items() if k.startswith(("seam_queue_depth", "seam_running"))
        )
