"""A loopback TCP proxy in front of a real server that can cut a response mid-body (a
dropped connection, as a flaky network or a restarted load balancer makes one) and
refuse chosen requests, while everything else passes through byte for byte."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.abc import SocketAttribute, SocketStream


@dataclass
class Proxy:
    url: str
    heads: list[bytes] = field(default_factory=list)  # the first line of every request
    cut_after: int | None = None  # cut the next matching response after this many bytes
    cut_if: Callable[[bytes], bool] = lambda head: b"POST " in head
    refuse_if: Callable[[bytes], bool] = lambda head: False  # answered 404 here
    cuts: int = 0
    held: anyio.Event | None = None  # while not set, no answer to a cut_if request is passed on


@asynccontextmanager
async def proxy(upstream: str) -> AsyncIterator[Proxy]:
    host, port = upstream.removeprefix("http://").split(":")
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    p = Proxy(f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}")

    async def on_conn(client: SocketStream) -> None:
        async with client:
            try:
                first = await client.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return
            head = first.split(b"\r\n", 1)[0]
            p.heads.append(head)
            if p.refuse_if(head):
                body = b'{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}'
                await client.send(
                    b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\n"
                    b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(body), body)
                )
                return
            cut = p.cut_after if p.cut_after is not None and p.cut_if(head) else None
            if cut is not None:
                p.cut_after = None
            server = await anyio.connect_tcp(host, int(port))
            async with server, anyio.create_task_group() as tg:

                async def upward() -> None:
                    try:
                        await server.send(first)
                        async for data in client:
                            await server.send(data)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
                        pass

                tg.start_soon(upward)
                sent = 0
                try:
                    async for data in server:
                        if p.held is not None and p.cut_if(head):
                            await p.held.wait()  # its head in flight
                        if cut is not None and sent + len(data) >= cut:
                            await client.send(data[: cut - sent])
                            p.cuts += 1
                            break  # the connection drops here, mid-body
                        await client.send(data)
                        sent += len(data)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
                    pass
                tg.cancel_scope.cancel()

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, on_conn)
        try:
            yield p
        finally:
            tg.cancel_scope.cancel()
