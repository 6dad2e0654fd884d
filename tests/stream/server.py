"""A small HTTP/1.1 responder on loopback (anyio TCP listener, chunked transfer encoding).

It records what it was asked and how many bytes the socket accepted, and notices when the
client goes away, so tests can check flow control and cleanup from the server's side.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import httpx2
from anyio.abc import SocketAttribute, SocketStream

from sdk.stream import Upstream


@dataclass
class Conn:
    method: str
    path: str
    body: bytes
    log: ServerLog
    stream: SocketStream

    async def send(self, data: bytes) -> None:
        await self.stream.send(b"%x\r\n%s\r\n" % (len(data), data))
        self.log.sent += len(data)


@dataclass
class ServerLog:
    sent: int = 0
    requests: list[Conn] = field(default_factory=list)
    disconnects: int = 0
    finished: int = 0
    disconnected: anyio.Event = field(default_factory=anyio.Event)


Handler = Callable[[Conn], Awaitable[None]]


async def _read_request(stream: SocketStream) -> tuple[str, str, bytes]:
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += await stream.receive()
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    length = 0
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    while len(rest) < length:
        rest += await stream.receive()
    return method, path, rest


@asynccontextmanager
async def serve(handler: Handler, *, sndbuf: int | None = 65536) -> AsyncIterator[tuple[str, ServerLog]]:
    log = ServerLog()

    async def on_conn(stream: SocketStream) -> None:
        async with stream:
            if sndbuf is not None:
                stream.extra(SocketAttribute.raw_socket).setsockopt(
                    socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf
                )
            try:
                method, path, body = await _read_request(stream)
                conn = Conn(method, path, body, log, stream)
                log.requests.append(conn)
                await stream.send(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n"
                )
                await handler(conn)
                await stream.send(b"0\r\n\r\n")
                log.finished += 1
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
                log.disconnects += 1
                log.disconnected.set()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, on_conn)
        try:
            yield f"http://127.0.0.1:{port}", log
        finally:
            tg.cancel_scope.cancel()


def opener(client: httpx2.AsyncClient, url: str, body: bytes = b"{}") -> Callable[[], Awaitable[Upstream]]:
    async def open_() -> Upstream:
        resp = await client.send(client.build_request("POST", url, content=body), stream=True)
        return Upstream(resp.aiter_raw(), resp.aclose)

    return open_


def small_client(rcvbuf: int = 131072) -> httpx2.AsyncClient:
    """A client whose socket receive buffer is fixed (no autotuning), so bounds are tight."""
    transport = httpx2.AsyncHTTPTransport(socket_options=[(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)])
    return httpx2.AsyncClient(transport=transport, timeout=30)
