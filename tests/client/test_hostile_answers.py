"""Answers a hostile or broken server may send that once escaped the client as a builtin
exception, leaked the key or cost it more than the bytes received: each now ends in the
SDK's typed error (with what arrived kept) or is read as documented."""

from __future__ import annotations

import logging
import traceback
from typing import Any

import anyio
import orjson
import pytest

from sdk import (
    APIConnectionError,
    BadRequestError,
    Client,
    InternalServerError,
    RetryPolicy,
    SDKError,
    StallPolicy,
    StreamProtocolError,
)
from sdk.scheduler._limits import TokenBucket

from .fault_server import Reply, Request, fault_server, messages_events, sse

pytestmark = pytest.mark.anyio

MSG = [{"role": "user", "content": "hi"}]
KEY = "sk-ant-api03-hostile-0123456789abcdef"
DEADLINE = 60


def client(url: str, **kw: Any) -> Client:
    kw.setdefault("retry", RetryPolicy(max_retries=0))
    return Client(base_url=url, api_key=KEY, engine="self-hosted", **kw)


def _error_body(depth: int) -> bytes:
    """An error whose ``detail`` is nested ``depth`` deep (orjson reads 1,024 levels and
    writes 255: the bytes are spelled out)."""
    detail = "[" * depth + "]" * depth
    return (
        b'{"type":"error","error":{"type":"invalid_request_error","message":"bad"},"detail":%s}'
        % detail.encode()
    )


@pytest.mark.parametrize("backend", ["messages", "openai"])
@pytest.mark.parametrize("how", ["create", "stream", "event"])
async def test_an_error_body_nested_as_deep_as_json_allows_is_the_typed_error(backend: str, how: str) -> None:
    if how == "event" and backend == "openai":
        pytest.skip("an error event is the Messages stream's")
    body = _error_body(1020)

    async def handler(req: Request, reply: Reply) -> None:
        if how == "event":
            await reply.start()
            for event in messages_events(["partial "])[:3]:
                await reply.chunk(event)
            await reply.chunk(b"event: error\ndata: " + body + b"\n\n")
            await reply.end()
        else:
            head = f"HTTP/1.1 400 X\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            await reply.stream.send(head.encode() + b"connection: close\r\n\r\n" + body)

    async with fault_server(handler) as server:
        url = server.url if backend == "messages" else server.url + "/v1"
        async with client(url, backend=backend) as c:
            with anyio.fail_after(DEADLINE), pytest.raises(BadRequestError) as e:
                if how == "create":
                    await c.create(model="m", max_tokens=5, messages=MSG)
                else:
                    async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
                        await s.final_message()
    assert e.value.message == "bad"
    if how == "event":
        assert e.value.partial is not None and e.value.partial.text == "partial "


async def test_a_retry_after_date_past_year_9999_is_ignored() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.respond(
            503,
            {"type": "error", "error": {"type": "api_error", "message": "busy"}},
            {"retry-after": "Mon, 01 Jan 99999 00:00:00 GMT"},
        )

    async with fault_server(handler) as server, client(server.url, retry=RetryPolicy(max_retries=1)) as c:
        with anyio.fail_after(DEADLINE), pytest.raises(InternalServerError):
            await c.create(model="m", max_tokens=5, messages=MSG)


async def test_an_sse_retry_field_of_thousands_of_digits_is_ignored() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        await reply.chunk(b"retry: " + b"9" * 5000 + b"\n\n")
        for event in messages_events(["hello"]):
            await reply.chunk(event)
        await reply.end()

    async with fault_server(handler) as server, client(server.url) as c:
        with anyio.fail_after(DEADLINE):
            async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
                assert (await s.final_message()).text == "hello"


async def test_a_key_echoed_in_the_request_id_stays_out_of_the_log(caplog: pytest.LogCaptureFixture) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        await reply.stream.send(b"")  # (the head is sent; the id rides on a second answer below)
        for event in messages_events(["ok"]):
            await reply.chunk(event)
        await reply.end()

    async def echo(req: Request, reply: Reply) -> None:
        key = req.headers["x-api-key"]
        body = orjson.dumps({"id": "m", "type": "message", "role": "assistant", "model": "m", "content": []})
        await reply.stream.send(
            f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nrequest-id: req_{key}\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
            + body
        )

    caplog.set_level(logging.DEBUG, logger="sdk")
    async with fault_server(echo) as server, client(server.url) as c:
        await c.create(model="m", max_tokens=5, messages=MSG)
    assert "request id req_" in caplog.text
    assert KEY not in caplog.text


async def test_a_key_in_a_malformed_header_line_stays_out_of_the_traceback() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        key = req.headers["x-api-key"]
        await reply.stream.send(f"HTTP/1.1 200 OK\r\nX-Echo {key}\r\n\r\n".encode())

    async with fault_server(handler) as server, client(server.url) as c:
        with anyio.fail_after(DEADLINE), pytest.raises(APIConnectionError) as e:
            await c.create(model="m", max_tokens=5, messages=MSG)
    printed = "".join(traceback.format_exception(e.value))
    assert "RemoteProtocolError" in printed  # the cause is kept, its text masked
    assert KEY not in printed


@pytest.mark.parametrize("backend", ["messages", "openai"])
async def test_the_raw_event_kept_on_a_protocol_error_is_masked(backend: str) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        key = req.headers.get("x-api-key") or req.headers["authorization"].removeprefix("Bearer ")
        await reply.start()
        await reply.chunk(b"event: message_start\ndata: {not json " + key.encode() + b"\n\n")
        await reply.end()

    async with fault_server(handler) as server:
        url = server.url if backend == "messages" else server.url + "/v1"
        async with client(url, backend=backend) as c:
            with anyio.fail_after(DEADLINE), pytest.raises(StreamProtocolError) as e:
                async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
                    await s.final_message()
    assert e.value.event is not None
    assert KEY not in repr(e.value.event)
    assert "not json" in repr(e.value.event)  # the rest of what came is kept


async def test_a_kept_streams_event_id_that_no_header_can_carry_is_not_sent_back() -> None:
    calls: list[Request] = []

    async def handler(req: Request, reply: Reply) -> None:
        calls.append(req)
        await reply.stream.send(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nseam-stream-id: abc\r\n"
            b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        )
        events = messages_events(["partial "])[:3]
        for n, event in enumerate(events):
            await reply.chunk(f"id: abc:\u00e9{n}\n".encode() + event)
        # the connection drops here, before message_stop

    async with fault_server(handler) as server, client(server.url, stall=StallPolicy(max_resumes=1)) as c:
        with anyio.fail_after(DEADLINE), pytest.raises(SDKError) as e:
            async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
                await s.final_message()
    assert e.value.partial is not None and e.value.partial.text.startswith("partial ")
    assert all("last-event-id" not in r.headers for r in calls)


async def test_openai_answers_of_other_shapes_are_read_or_refused_never_dropped() -> None:
    answers: list[dict[str, Any]] = []

    async def handler(req: Request, reply: Reply) -> None:
        await reply.respond(200, answers.pop(0))

    def completion(message: object) -> dict[str, Any]:
        return {
            "id": "c",
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }

    async with fault_server(handler) as server, client(server.url + "/v1", backend="openai") as c:
        answers.append(
            completion(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                    "tool_calls": [
                        {"id": "t", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}
                    ],
                }
            )
        )
        m = await c.create(model="m", max_tokens=5, messages=MSG)
        assert m.text == "ab"
        assert m.tool_uses[0].input == {"x": 1}
        for bad in ({"role": "assistant", "tool_calls": 1}, "a string", {"role": "assistant", "content": 5}):
            answers.append(completion(bad))
            with pytest.raises(StreamProtocolError):
                await c.create(model="m", max_tokens=5, messages=MSG)
        answers.append({"id": "c", "model": "m", "choices": [1]})
        with pytest.raises(StreamProtocolError):
            await c.create(model="m", max_tokens=5, messages=MSG)


async def test_openai_stream_content_as_parts_and_arguments_as_an_object_are_kept() -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse(
            None,
            {"id": "c", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]},
        )

    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        await reply.chunk(chunk({"role": "assistant", "content": [{"type": "text", "text": "hi "}]}))
        await reply.chunk(chunk({"content": [{"type": "text", "text": "there"}]}))
        call = {"index": 0, "id": "t", "function": {"name": "f", "arguments": {"x": [1]}}}
        await reply.chunk(chunk({"tool_calls": [call]}, "tool_calls"))
        await reply.chunk(b"data: [DONE]\n\n")
        await reply.end()

    async with (
        fault_server(handler) as server,
        client(server.url + "/v1", backend="openai") as c,
        c.stream(model="m", max_tokens=5, messages=MSG) as s,
    ):
        m = await s.final_message()
    assert m.text == "hi there"
    assert m.tool_uses[0].input == {"x": [1]}


def test_usage_counts_that_are_not_counts_are_dropped() -> None:
    from sdk import Usage
    from sdk.stream._openai import openai_usage

    u = Usage.from_wire({"input_tokens": -99, "output_tokens": 10**15, "cache_read_input_tokens": True})
    assert (u.input_tokens, u.output_tokens, u.cache_read_input_tokens) == (None, None, None)
    o = openai_usage(
        {"prompt_tokens": 7, "completion_tokens": -1, "prompt_tokens_details": {"cached_tokens": True}}
    )
    assert (o.input_tokens, o.output_tokens, o.cache_read_input_tokens) == (7, None, None)


def test_a_charge_leaves_at_most_one_bucket_of_debt() -> None:
    b = TokenBucket(1000.0, 0.0, rate=100.0)
    b.give_back(-(10.0**15))
    assert b.tokens == -1000.0
    assert b.wait(10.0) == pytest.approx(10.1)  # one refill of the bucket, not eons


def test_signature_and_citation_deltas_cost_a_cell_each() -> None:
    """Each delta adds one cell to a persistent list: the work of the n-th does not grow
    with n (counted in cells walked: the old code rebuilt the whole value per delta)."""
    from sdk.stream._accumulate import MessageState, apply
    from sdk.stream._events import (
        CitationsDelta,
        ContentBlockDeltaEvent,
        ContentBlockStartEvent,
        MessageStartEvent,
        SignatureDelta,
        TextBlock,
        ThinkingBlock,
    )

    state = apply(MessageState(), MessageStartEvent("m", "m", "assistant"))
    state = apply(state, ContentBlockStartEvent(0, ThinkingBlock()))
    for _ in range(20_000):
        state = apply(state, ContentBlockDeltaEvent(0, SignatureDelta("s")))
    assert state.open is not None and state.open.signature == "s" * 20_000
    assert state.open.aux is not None and type(state.open.aux).__name__ == "_Part"
    state2 = apply(MessageState(), MessageStartEvent("m", "m", "assistant"))
    state2 = apply(state2, ContentBlockStartEvent(0, TextBlock()))
    before = state2
    for i in range(3):
        state2 = apply(state2, ContentBlockDeltaEvent(0, CitationsDelta({"n": i})))
    assert state2.open is not None and state2.open.citations == ({"n": 0}, {"n": 1}, {"n": 2})
    assert before.open is not None and before.open.citations == ()  # earlier states keep theirs


@pytest.mark.parametrize("backend", ["messages", "openai"])
async def test_a_whole_message_whose_body_loses_only_its_last_chunk_is_whole(backend: str) -> None:
    """message_stop arrived, then the connection closed before the chunked body's end:
    nothing is missing, so the stream ends as it would have."""
    from .fault_server import events_for

    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        for event in events_for(backend, ["whole ", "answer"]):
            await reply.chunk(event)
        # no reply.end(): the connection closes without the last chunk

    async with fault_server(handler) as server:
        url = server.url if backend == "messages" else server.url + "/v1"
        async with client(url, backend=backend) as c, c.stream(model="m", max_tokens=5, messages=MSG) as s:
            with anyio.fail_after(DEADLINE):
                m = await s.final_message()
    assert m.text == "whole answer"
    assert len(server.requests) == 1  # not sent again


async def test_a_request_sent_again_before_its_first_event_stops_the_first_generation() -> None:
    """On llama-server (streams kept by conversation), a break after the answer's head but
    before its first event sends the request again: the first conversation, still
    generating there, is stopped first, not left to hold a second slot."""
    from .fault_server import events_for

    posts = 0

    async def handler(req: Request, reply: Reply) -> None:
        nonlocal posts
        if req.method == "DELETE":
            await reply.respond(200, {})
            return
        posts += 1
        await reply.start()
        if posts == 1:
            return  # the head, then the connection closes: no event
        for event in events_for("messages", ["fine"]):
            await reply.chunk(event)
        await reply.end()

    async with fault_server(handler) as server:
        server.props = {"total_slots": 2}  # llama-server (its /props): streams kept by conversation
        llama = Client(base_url=server.url, api_key=KEY, retry=RetryPolicy(max_retries=0), prefill_echo=True)
        async with llama as c, c.stream(model="m", max_tokens=5, messages=MSG) as s:
            with anyio.fail_after(DEADLINE):
                assert (await s.final_message()).text == "fine"
    seen = [(r.method, r.headers.get("x-conversation-id") or r.path) for r in server.requests]
    first = seen[0][1]
    assert ("DELETE", f"/v1/stream?conv_id={first}") in seen, seen
    assert seen.index(("DELETE", f"/v1/stream?conv_id={first}")) < len(seen) - 1  # before the second POST
