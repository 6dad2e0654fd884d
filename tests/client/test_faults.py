"""The client against a scripted loopback server: retries, dropped connections, split
UTF-8, mid-stream errors and a server that goes silent, through both backends."""

from __future__ import annotations

import email.utils
import time
from typing import Any

import anyio
import pytest

from sdk import Client
from sdk._errors import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ContextOverflowError,
    InternalServerError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    RateLimitError,
    RequestTooLargeError,
)
from sdk.http import RetryBudget, RetryPolicy
from sdk.stream import StallPolicy

from .fault_server import FaultServer, Reply, Request, events_for, fault_server, prefill_of, sse

pytestmark = pytest.mark.anyio

KEY = "sk-ant-fault-0123456789abcdef"
MSG = [{"role": "user", "content": "hi"}]
TEXT = "Grüße, 世界! 😀 one two  three\nfour "  # multi-byte characters and inner/trailing space
PIECES = ["Grü", "ße, ", "世界", "! 😀", " one", " two ", " three\n", "four "]
# A retry that ignored the server's delay would wait a minute: the deadline catches it.
SLOW = RetryPolicy(max_retries=3, initial_delay=60.0, max_delay=60.0)
DEADLINE = 20


@pytest.fixture(params=["messages", "openai"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def client(server: FaultServer, backend: str, **kw: Any) -> Client:
    base = server.url + ("/v1" if backend == "openai" else "")
    kw.setdefault("prefill_echo", False)
    return Client(base_url=base, api_key=KEY, **kw)


def ok_body(backend: str) -> dict[str, Any]:
    if backend == "messages":
        return {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "text", "text": TEXT}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 8},
        }
    return {
        "id": "c1",
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 8},
    }


def http_date(offset: float) -> str:
    return email.utils.formatdate(time.time() + offset, usegmt=True)


# ---- retries before the first byte ---------------------------------------------------


@pytest.mark.parametrize(
    ("status", "headers"),
    [
        (429, {"retry-after-ms": "20"}),
        (429, {"retry-after": "0"}),
        (529, {"retry-after": http_date(-5)}),  # a date in the past: now
        (529, {"retry-after-ms": "10", "retry-after": "3000"}),  # the ms header wins
        (503, {"x-should-retry": "true", "retry-after-ms": "0"}),
        (408, {"retry-after-ms": "0"}),
        (409, {"retry-after-ms": "0"}),
    ],
)
async def test_retryable_status_is_retried_after_the_servers_delay(
    backend: str, status: int, headers: dict[str, str]
) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        if len(server.requests) <= 2:
            await reply.respond(status, {"type": "error", "error": {"type": "x", "message": "busy"}}, headers)
        else:
            await reply.respond(200, ok_body(backend))

    async with fault_server(handler) as server, client(server, backend, retry=SLOW) as c:
        with anyio.fail_after(DEADLINE):
            msg = await c.create(model="m", max_tokens=5, messages=MSG)
    assert msg.text == TEXT and len(server.requests) == 3
    assert [r.body for r in server.requests] == [server.requests[0].body] * 3  # the same request


@pytest.mark.parametrize(
    ("status", "body", "cls"),
    [
        (
            400,
            {
                "type": "error",
                "error": {"type": "invalid_request_error", "message": "prompt is too long: 9 > 8"},
            },
            ContextOverflowError,
        ),
        (
            400,
            {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}},
            BadRequestError,
        ),
        (
            401,
            {"type": "error", "error": {"type": "authentication_error", "message": "no"}},
            AuthenticationError,
        ),
        (
            403,
            {"type": "error", "error": {"type": "permission_error", "message": "no"}},
            PermissionDeniedError,
        ),
        (404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}}, NotFoundError),
        (
            413,
            {"type": "error", "error": {"type": "request_too_large", "message": "no"}},
            RequestTooLargeError,
        ),
    ],
)
async def test_client_errors_are_never_retried(status: int, body: object, cls: type[Exception]) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        # even a server that says "retry" does not make a wrong request right
        await reply.respond(
            status, body, {"x-should-retry": "true", "request-id": "req_42", "retry-after-ms": "0"}
        )

    async with fault_server(handler) as server, client(server, "messages", retry=SLOW) as c:
        with pytest.raises(cls) as info:
            await c.stream(model="m", max_tokens=5, messages=MSG).__aenter__()
    assert len(server.requests) == 1
    err = info.value
    assert err.status == status and err.request_id == "req_42"  # type: ignore[attr-defined]
    assert KEY not in repr(err) and KEY not in str(err)


async def test_x_should_retry_false_stops_a_retryable_status() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.respond(
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "o"}},
            {"x-should-retry": "false"},
        )

    async with fault_server(handler) as server, client(server, "messages", retry=SLOW) as c:
        with pytest.raises(OverloadedError):
            await c.create(model="m", max_tokens=5, messages=MSG)
    assert len(server.requests) == 1


async def test_connection_errors_are_retried_and_the_budget_bounds_retries() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        if len(server.requests) == 1:
            return  # close without an answer
        await reply.respond(500, {"error": {"type": "api_error", "message": "boom"}}, {"retry-after-ms": "0"})

    budget = RetryBudget(ratio=0.0, capacity=2.0)  # two retries for the client's lifetime
    policy = RetryPolicy(max_retries=5, initial_delay=0.0, max_delay=0.0)
    async with (
        fault_server(handler) as server,
        client(server, "messages", retry=policy, retry_budget=budget) as c,
    ):
        with pytest.raises(InternalServerError):
            await c.create(model="m", max_tokens=5, messages=MSG)
        assert len(server.requests) == 3  # the dropped one, then two 500s: budget spent
        with pytest.raises(InternalServerError):
            await c.create(model="m", max_tokens=5, messages=MSG)
        assert len(server.requests) == 4  # no budget left: no retry at all


async def test_a_429_that_keeps_coming_ends_as_rate_limit_error_with_its_body() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.respond(
            429,
            {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
            {"retry-after-ms": "0"},
        )

    async with (
        fault_server(handler) as server,
        client(server, "messages", retry=RetryPolicy(max_retries=2)) as c,
    ):
        with pytest.raises(RateLimitError) as info:
            await c.create(model="m", max_tokens=5, messages=MSG)
    assert len(server.requests) == 3 and info.value.error_type == "rate_limit_error"


# ---- after the first byte: resume ----------------------------------------------------


def seen(backend: str, n_events: int) -> str:
    """The text of the first ``n_events`` events (the Messages stream has two header
    events before the first delta, the OpenAI one a single role chunk)."""
    return "".join(PIECES[: n_events - (2 if backend == "messages" else 1)])


def n_events(backend: str) -> int:
    return len(events_for(backend, PIECES))


@pytest.mark.parametrize("k", range(12))
async def test_connection_dropped_after_event_k_resumes_without_gap_or_duplicate(
    backend: str, k: int
) -> None:
    if k >= n_events(backend):
        pytest.skip("the stream has fewer events")

    async def handler(req: Request, reply: Reply) -> None:
        prefill = prefill_of(req)
        assert TEXT.startswith(prefill), "the prefill is exactly the text handed out"
        await reply.start()
        if len(server.requests) == 1:
            for ev in events_for(backend, PIECES)[:k]:
                await reply.chunk(ev)
            return  # cut: no terminating chunk
        rest = TEXT[len(prefill) :]
        for ev in events_for(backend, [rest[i : i + 3] for i in range(0, len(rest), 3)]):
            await reply.chunk(ev)
        await reply.end()

    async with fault_server(handler) as server, client(server, backend, stall=StallPolicy(False)) as c:
        with anyio.fail_after(DEADLINE):
            async with c.stream(model="m", max_tokens=50, messages=MSG) as s:
                texts = [t async for t in s.text_deltas()]
    msg = await s.final_message()
    assert "".join(texts) == msg.text == TEXT
    assert msg.stop_reason == "end_turn"
    assert len(server.requests) == 2
    if prefill_of(server.requests[1]):
        assert not prefill_of(server.requests[1]).endswith(" ")  # the hosted API refuses it


async def test_dropped_connection_without_resumes_left_raises_with_the_partial(backend: str) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        for ev in events_for(backend, PIECES)[:5]:
            await reply.chunk(ev)

    stall = StallPolicy(False, max_resumes=0)
    async with fault_server(handler) as server, client(server, backend, stall=stall) as c:
        with pytest.raises(APIConnectionError) as info:
            async with c.stream(model="m", max_tokens=50, messages=MSG) as s:
                async for _ in s:
                    pass
    assert info.value.partial is not None and info.value.partial.text == seen(backend, 5)
    assert KEY not in repr(info.value) and len(server.requests) == 1


async def test_utf8_character_split_across_tcp_writes(backend: str) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        body = b"".join(events_for(backend, PIECES))
        cuts = [i + 1 for i in range(len(body)) if body[i] >= 0xC0]  # just after each lead byte
        prev = 0
        for cut in cuts:
            await reply.chunk(body[prev:cut])
            await anyio.sleep(0.002)  # separate TCP segments, so separate reads
            prev = cut
        await reply.chunk(body[prev:])
        await reply.end()

    async with (
        fault_server(handler) as server,
        client(server, backend) as c,
        c.stream(model="m", max_tokens=50, messages=MSG) as s,
    ):
        msg = await s.final_message()
        stats = s.statistics()
    assert msg.text == TEXT and stats.invalid_utf8_replaced == 0 and len(server.requests) == 1


async def test_error_event_mid_stream_raises_the_typed_error_with_the_partial(backend: str) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        for ev in events_for(backend, PIECES)[:5]:
            await reply.chunk(ev)
        err = {"type": "overloaded_error", "message": "Overloaded"}
        if backend == "messages":
            await reply.chunk(sse("error", {"type": "error", "error": err}))
        else:
            await reply.chunk(sse(None, {"error": err}))
        await reply.end()

    async with fault_server(handler) as server, client(server, backend) as c:
        with pytest.raises(OverloadedError) as info:
            async with c.stream(model="m", max_tokens=50, messages=MSG) as s:
                async for _ in s:
                    pass
    assert info.value.partial is not None and info.value.partial.text == seen(backend, 5)
    assert len(server.requests) == 1  # an error event is an answer: neither retried nor resumed


async def test_silent_server_ends_in_the_idle_timeout(backend: str) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        for ev in events_for(backend, PIECES)[:4]:
            await reply.chunk(ev)
        await anyio.sleep_forever()  # keeps the connection open, sends nothing

    stall = StallPolicy(False, max_resumes=0)
    async with fault_server(handler) as server, client(server, backend, idle_timeout=0.2, stall=stall) as c:
        with anyio.fail_after(DEADLINE), pytest.raises(APITimeoutError) as info:
            async with c.stream(model="m", max_tokens=50, messages=MSG) as s:
                async for _ in s:
                    pass
    assert info.value.partial is not None and info.value.partial.text == seen(backend, 4)


@pytest.mark.parametrize("split", [False, True])
async def test_pings_do_not_hide_a_stalled_generation_and_resume_finishes_it(split: bool) -> None:
    ping = sse("ping", {"type": "ping"})
    cut = ping.index(b"ping") + 2 if split else len(ping)  # split: no read holds "ping" whole

    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        prefill = prefill_of(req)
        if not prefill:
            for ev in events_for("messages", PIECES)[:5]:
                await reply.chunk(ev)
            while True:  # alive, but generating nothing
                await reply.chunk(ping[:cut])
                await anyio.sleep(0.005)
                if ping[cut:]:
                    await reply.chunk(ping[cut:])
                await anyio.sleep(0.005)
        rest = TEXT[len(prefill) :]
        for ev in events_for("messages", [rest]):
            await reply.chunk(ev)
        await reply.end()

    async with fault_server(handler) as server, client(server, "messages", idle_timeout=0.2) as c:
        with anyio.fail_after(DEADLINE):
            async with c.stream(model="m", max_tokens=50, messages=MSG) as s:
                msg = await s.final_message()
    assert msg.text == TEXT and len(server.requests) == 2


async def test_continuation_extends_the_callers_prefill_and_carries_resume_only_fields() -> None:
    own = "Grü"  # the caller's own prefill: the model writes the rest of TEXT

    async def handler(req: Request, reply: Reply) -> None:
        prefill = prefill_of(req)
        assert TEXT.startswith(prefill)
        rest = TEXT[len(prefill) :]
        pieces = [rest[i : i + 4] for i in range(0, len(rest), 4)]
        await reply.start()
        if len(server.requests) == 1:
            for ev in events_for("messages", pieces)[:5]:
                await reply.chunk(ev)
            return
        for ev in events_for("messages", pieces):
            await reply.chunk(ev)
        await reply.end()

    messages = [*MSG, {"role": "assistant", "content": own}]
    extra = {"continue_final_message": True}
    async with (
        fault_server(handler) as server,
        client(server, "messages", resume_extra_body=extra) as c,
        c.stream(model="m", max_tokens=50, messages=messages) as s,
    ):
        msg = await s.final_message()
    first, second = (r.json() for r in server.requests)
    assert own + msg.text == TEXT  # the caller's prefill is not repeated in the answer
    assert "continue_final_message" not in first and second["continue_final_message"] is True
    assert second["messages"][:-1] == MSG and prefill_of(server.requests[1]).startswith(own)
    # The server reported 1 output token at message_start, but 3 text deltas were handed
    # out: the continuation is lowered by the larger count.
    assert second["max_tokens"] == 50 - 3


async def test_a_broken_upstream_frees_its_slot_before_the_consumer_reads(backend: str) -> None:
    """The engine connection breaks while the consumer is not reading: the scheduler's
    slot comes back at once (it stayed taken until a consumer that might never come read
    the error), and the consumer who does come back still gets the whole text, through a
    continuation that is admitted again."""
    first_part = anyio.Event()

    async def handler(req: Request, reply: Reply) -> None:
        prefill = prefill_of(req)
        await reply.start()
        if len(server.requests) == 1:
            for ev in events_for(backend, PIECES)[:4]:
                await reply.chunk(ev)
            first_part.set()
            return  # cut: the connection ends without the rest
        rest = TEXT[len(prefill) :]
        for ev in events_for(backend, [rest]):
            await reply.chunk(ev)
        await reply.end()

    async with fault_server(handler) as server, client(server, backend, stall=StallPolicy(False)) as c:
        with anyio.fail_after(DEADLINE):
            async with c.stream(model="m", max_tokens=50, messages=MSG) as s:
                await first_part.wait()
                while c.scheduler.running:  # nobody reads: the break alone frees the slot
                    await anyio.sleep(0.01)
                assert c.scheduler.stats().running == {"interactive": 0, "default": 0, "batch": 0}
                texts = [t async for t in s.text_deltas()]
    assert "".join(texts) == TEXT
    assert len(server.requests) == 2 and c.scheduler.running == 0
