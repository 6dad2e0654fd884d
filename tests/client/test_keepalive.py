"""A request that a kept-alive connection loses unread is sent again on another one.

llama-server closes a connection idle for 5 s, and httpx2's pool keeps one for 5 s: on
a loaded machine the client can write a request on a connection the server is closing
at that moment, and the request fails with no answer ("Server disconnected without
sending a response", or a reset). The loopback server here plays that race without
timing: it answers a connection's first request, and when the next request arrives on
the same connection it closes the connection (or resets it) without answering. The
client must send that request again on another connection, with no retry spent (so
even with retries off), and only in that case (:mod:`sdk.http._transport`).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import httpx2
import orjson
import pytest
from anyio.abc import SocketAttribute, SocketStream

from sdk import APIConnectionError, Client, RetryPolicy
from sdk.client._engine import cancel_conversation
from sdk.http._transport import StaleConnectionResend, never_answered
from sdk.scheduler import Scheduler
from sdk.server._route import Engine, Router

from .fault_server import Request, _read_request

pytestmark = pytest.mark.anyio

KEY = "sk-ant-keepalive-0123456789abcdef"
MSG = [{"role": "user", "content": "hi"}]
NO_RETRIES = RetryPolicy(max_retries=0)
ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [{"type": "text", "text": "hello"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 3, "output_tokens": 1},
}
Drop = Literal["close", "reset"]


@dataclass
class KeepAliveServer:
    """``seen``: (connection number, request) in arrival order. ``drop``: how the server
    ends a connection when a request arrives on it after an earlier one (``close``: a
    FIN, ``reset``: an RST), ``drops`` times; ``drop_first`` drops a connection's first
    request instead (a connection made for it fails)."""

    url: str
    drop: Drop = "close"
    drops: int = 1
    drop_first: bool = False
    seen: list[tuple[int, Request]] = field(default_factory=list)

    def log(self) -> list[tuple[int, str]]:
        return [(conn, f"{r.method} {r.path}") for conn, r in self.seen]


@asynccontextmanager
async def keepalive_server(**kw: Any) -> AsyncIterator[KeepAliveServer]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server = KeepAliveServer(f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}", **kw)
    connections = 0

    async def on_conn(stream: SocketStream) -> None:
        nonlocal connections
        conn, connections = connections, connections + 1
        async with stream:
            served = 0
            while True:
                try:
                    req = await _read_request(stream)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return
                if req is None:
                    return  # the client closed the connection
                server.seen.append((conn, req))
                if server.drops > 0 and (served > 0) != server.drop_first:
                    server.drops -= 1
                    if server.drop == "reset":  # an RST instead of a FIN when it closes
                        raw = stream.extra(SocketAttribute.raw_socket)
                        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return  # no answer: the connection ends under the request
                body = orjson.dumps(ANSWER if req.method == "POST" else {"data": []})
                await stream.send(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(body), body)
                )
                served += 1

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, on_conn)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()


def client(server: KeepAliveServer, **kw: Any) -> Client:
    # a known slot count and engine: no probe, so the requests below are the only ones
    return Client(base_url=server.url, api_key=KEY, scheduler=Scheduler(slots=2), engine="self-hosted", **kw)


@pytest.mark.parametrize("drop", ["close", "reset"])
async def test_a_request_the_kept_alive_connection_lost_is_sent_again_without_a_retry(drop: Drop) -> None:
    async with keepalive_server(drop=drop) as server, client(server, retry=NO_RETRIES) as c:
        with anyio.fail_after(10):
            first = await c.create(model="m", max_tokens=5, messages=MSG)
            tokens = c.retry_budget.tokens
            again = await c.create(model="m", max_tokens=5, messages=MSG)
    assert first.text == again.text == "hello"
    post = "POST /v1/messages"
    assert server.log() == [(0, post), (0, post), (1, post)]  # lost on the kept one, sent on a new one
    assert server.seen[1][1].body == server.seen[2][1].body  # the same request, whole
    assert c.retry_budget.tokens >= tokens  # no retry was spent on it


async def test_the_request_that_stops_a_kept_stream_is_sent_again_too() -> None:
    """Every request of the client goes through its pool, the ``DELETE`` that stops
    llama-server's kept stream when a stream is preempted too (the resume path sent it
    with no retry at all)."""
    async with keepalive_server(drops=2) as server, client(server, retry=NO_RETRIES) as c:
        with anyio.fail_after(10):
            await c.models()
            await cancel_conversation(c._sender, "conv-1")
            await c.models()
    assert server.log() == [
        (0, "GET /v1/models"),
        (0, "DELETE /v1/stream?conv_id=conv-1"),
        (1, "DELETE /v1/stream?conv_id=conv-1"),
        (1, "GET /v1/models"),
        (2, "GET /v1/models"),
    ]


async def test_a_connection_made_for_the_request_that_fails_is_left_to_the_retry_policy() -> None:
    """The server may have read a request on a connection of its own and then died: that
    is no stale connection, and with retries off it is an error."""
    async with keepalive_server(drop_first=True) as server, client(server, retry=NO_RETRIES) as c:
        with anyio.fail_after(10), pytest.raises(APIConnectionError, match="without sending a response"):
            await c.create(model="m", max_tokens=5, messages=MSG)
    assert server.log() == [(0, "POST /v1/messages")]


async def test_resends_are_bounded() -> None:
    """A server that drops every request on a reused connection: at most ``max_resends``
    more, each on another kept-alive connection (a failed one leaves the pool)."""
    async with keepalive_server(drops=0) as server:
        transport = StaleConnectionResend(httpx2.AsyncHTTPTransport(), max_resends=2)
        async with httpx2.AsyncClient(transport=transport) as http:
            with anyio.fail_after(10):
                async with anyio.create_task_group() as tg:  # three connections, kept alive
                    for _ in range(3):
                        tg.start_soon(http.get, server.url + "/warm")
                assert sorted(conn for conn, _ in server.seen) == [0, 1, 2]
                server.seen.clear()
                server.drops = 10
                with pytest.raises(httpx2.RemoteProtocolError):
                    await http.get(server.url + "/lost")
    assert sorted(conn for conn, _ in server.seen) == [0, 1, 2]  # the request and two resends
    assert transport.resends == 2


async def test_a_streamed_upload_is_not_sent_again() -> None:
    async def upload() -> AsyncIterator[bytes]:
        yield b'{"a": 1}'

    async with keepalive_server() as server:
        transport = StaleConnectionResend(httpx2.AsyncHTTPTransport())
        async with httpx2.AsyncClient(transport=transport) as http:
            with anyio.fail_after(10):
                await http.get(server.url + "/warm")
                with pytest.raises(httpx2.TransportError):  # a FIN or, the body unread, an RST
                    await http.post(server.url + "/upload", content=upload())
    assert server.log() == [(0, "GET /warm"), (0, "POST /upload")] and transport.resends == 0


async def test_the_callers_own_trace_sees_every_attempt() -> None:
    names: list[str] = []

    async def trace(name: str, info: dict[str, Any]) -> None:
        names.append(name)

    async with keepalive_server() as server:
        transport = StaleConnectionResend(httpx2.AsyncHTTPTransport())
        async with httpx2.AsyncClient(transport=transport) as http:
            with anyio.fail_after(10):
                await http.get(server.url + "/warm")
                request = http.build_request("GET", server.url + "/again", extensions={"trace": trace})
                response = await http.send(request)
    assert response.status_code == 200 and transport.resends == 1
    assert names.count("http11.send_request_headers.started") == 2  # the lost attempt and the resend
    assert names.count("connection.connect_tcp.started") == 1  # only the resend made a connection
    assert "http11.response_closed.complete" in names  # the body's events reach the caller too
    assert request.extensions["trace"] is trace


async def test_the_router_takes_no_engine_for_dead_for_a_lost_kept_alive_request() -> None:
    """The scheduling server's router marks an engine down on a connection error; a
    connection the engine closed while idle must not count as one."""
    async with keepalive_server() as server:
        engine = Engine(0, server.url, Client(base_url=server.url))
        router = Router([engine])
        async with httpx2.AsyncClient(transport=router) as http:
            with anyio.fail_after(10):
                for _ in range(2):
                    r = await http.get("http://engine/v1/models")
                    assert r.status_code == 200
        await engine.client.aclose()
    assert engine.healthy and engine.failures == 0
    assert [conn for conn, _ in server.seen] == [0, 0, 1]


def test_only_a_reused_connection_that_ended_unanswered_is_stale() -> None:
    req = httpx2.Request("POST", "http://x/")
    closed = httpx2.RemoteProtocolError("Server disconnected without sending a response.", request=req)
    reset = httpx2.ReadError("[Errno 104] Connection reset by peer", request=req)
    assert never_answered(closed, reused=True) and never_answered(reset, reused=True)
    assert not never_answered(closed, reused=False) and not never_answered(reset, reused=False)
    malformed = httpx2.RemoteProtocolError("illegal status line: bytearray(b'HTTP/1.1 2x')", request=req)
    assert not never_answered(malformed, reused=True)  # an answer, however bad
    assert not never_answered(httpx2.ReadTimeout("timed out", request=req), reused=True)
    assert not never_answered(httpx2.ConnectError("refused", request=req), reused=True)
