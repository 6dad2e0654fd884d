"""Serving the app with uvicorn, with socket buffers small enough for backpressure.

uvicorn's ``send`` waits while the transport's write buffer is over its high mark, which
is what tells the app that a client has stopped reading. With the defaults, though, the
kernel's send buffer and asyncio's 64 KiB write buffer absorb hundreds of tokens' worth of
SSE before ``send`` ever waits, and the engine keeps decoding into them. Each accepted
connection here gets a send buffer and a transport high mark of ``socket_buffer_bytes``,
so a client that stops reading stops the relay after that much, the stream's own bounded
buffer fills, and the stall policy pauses the upstream generation.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._app import ServerApp

__all__ = ["bounded_protocol", "serve"]


def bounded_protocol(buffer_bytes: int) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with per-connection send buffers of ``buffer_bytes``."""

    class BoundedH11Protocol(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):  # a platform without it keeps its default
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, buffer_bytes)
            transport.set_write_buffer_limits(high=buffer_bytes, low=buffer_bytes // 4)
            super().connection_made(transport)

    return BoundedH11Protocol


def serve(app: ServerApp, *, host: str, port: int, log_level: str = "info", **kw: Any) -> None:
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        access_log=False,
        http=bounded_protocol(app.config.socket_buffer_bytes),
        **kw,
    )
    uvicorn.Server(config).run()
