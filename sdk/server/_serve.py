"""Serving the app with uvicorn: small socket buffers for backpressure, and the limits
every connection is held to.

**Backpressure.** uvicorn's ``send`` waits while the transport's write buffer is over its
high mark, which is what tells the app that a client has stopped reading. With the
defaults, though, the kernel's send buffer and asyncio's 64 KiB write buffer absorb
hundreds of tokens' worth of SSE before ``send`` ever waits, and the engine keeps
decoding into them. Each accepted connection here gets a send buffer and a transport high
mark of ``socket_buffer_bytes``, so a client that stops reading stops the relay after that
much, the stream's own bounded buffer fills, and the stall policy pauses the upstream
generation.

**Limits.** uvicorn bounds none of what a client can hold open by being slow: its
keep-alive timer runs only between requests and is reset by every byte, so a head sent
one byte at a time, a body that never ends, or a response nobody reads keeps a
connection (and its descriptor) forever, and it accepts connections until the process
runs out of descriptors. The protocol here adds, as nginx does:

- a **head timeout** (``head_timeout``): the request head must be complete within this
  long of the connection opening, or of its first byte on a kept-alive connection; else
  the connection is closed;
- a **body timeout** (``body_timeout``): the whole body must arrive within this long of
  the head; else the answer is 408 (or, once an answer has started, the connection is
  closed). Time the server itself is not reading (the app has not asked for more) does
  not count against the client;
- a **send timeout** (``send_timeout``, the bound the app puts on each of its writes):
  while the client reads nothing and the write buffer stays full, the connection is
  aborted after this long. This also covers what the app has already handed over (the
  end of an answer nobody reads), which would otherwise keep the connection open, since
  closing a socket waits for its unsent bytes;
- a **keep-alive timeout** (``keepalive_timeout``): an idle connection between requests
  is closed (uvicorn's ``timeout_keep_alive``);
- a **connection cap** (``max_connections``, by default half the process's descriptor
  limit, leaving the rest for engine connections and files): at the cap a new
  connection first takes the place of the longest-idle one (no request in progress:
  waiting for a head, or kept alive), so a flood of idle sockets cannot keep ``/health``
  or real requests out; when every connection is busy, the new one is answered 503 and
  closed. uvicorn's own ``limit_concurrency`` acts only once a request head has arrived,
  when the descriptor is already spent, so the cap acts where the connection is made.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import resource
import socket
from dataclasses import dataclass
from typing import Any

import h11
import orjson
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ._app import ServerApp
from ._config import ServerConfig
from ._http import error_body

__all__ = ["Limits", "bounded_protocol", "default_max_connections", "serve"]

log = logging.getLogger("sdk.server")


@dataclass(frozen=True, slots=True)
class Limits:
    """What each connection is held to (see the module doc); times in seconds."""

    buffer_bytes: int
    head_timeout: float
    body_timeout: float
    send_timeout: float
    max_connections: int

    @classmethod
    def of(cls, config: ServerConfig) -> Limits:
        return cls(
            buffer_bytes=config.socket_buffer_bytes,
            head_timeout=config.head_timeout,
            body_timeout=config.body_timeout,
            send_timeout=config.send_timeout,
            max_connections=config.max_connections or default_max_connections(),
        )


def default_max_connections() -> int:
    """Half the process's descriptor limit (``ulimit -n``): each client connection may
    need an engine connection beside it, and logs, the listener and the event loop take
    a few more."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 16
    return max(1, soft // 2)


# A request head's bound. h11 bounds only a head still incomplete in its buffer, so a
# larger head that arrives whole in one read would pass: the bytes are counted here.
MAX_HEAD_BYTES = 16 * 1024
_REFUSED = orjson.dumps(error_body("overloaded_error", "the server is at its connection limit; try again"))
_HEAD_TOO_LARGE = orjson.dumps(
    error_body("invalid_request_error", f"the request head is over {MAX_HEAD_BYTES // 1024} KiB")
)
_TOO_SLOW = orjson.dumps(error_body("timeout_error", "the request body did not arrive in time"))


def bounded_protocol(limits: Limits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with per-connection send buffers of ``limits.buffer_bytes``
    and the timeouts and connection cap of ``limits``."""

    class BoundedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, **kw)
            self._head_timer: asyncio.TimerHandle | None = None
            self._body_timer: asyncio.TimerHandle | None = None
            self._send_timer: asyncio.TimerHandle | None = None
            self._started: object = None  # the request cycle whose head has been seen
            self._head_bytes = 0  # bytes of the head awaited, so far
            self._head_tail = b""  # its last three bytes (an end of head across two reads)

        # ---- the connection's life ---------------------------------------------------

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):  # a platform without it keeps its default
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, limits.buffer_bytes)
            transport.set_write_buffer_limits(high=limits.buffer_bytes, low=limits.buffer_bytes // 4)
            super().connection_made(transport)
            if len(self.connections) > limits.max_connections and not self._make_room():
                log.warning(
                    "at the connection limit (%d): a new connection is refused", limits.max_connections
                )
                self._refuse()
                return
            self._idle()
            self._head_timer = self.loop.call_later(limits.head_timeout, self._head_timed_out)

        def connection_lost(self, exc: Exception | None) -> None:
            idle.pop(self, None)
            for timer in (self._head_timer, self._body_timer, self._send_timer):
                if timer is not None:
                    timer.cancel()
            self._head_timer = self._body_timer = self._send_timer = None
            super().connection_lost(exc)

        def _make_room(self) -> bool:
            """Close the longest-idle other connection; False when every one is busy."""
            for other in idle:
                if other is not self:
                    log.info("at the connection limit: the longest-idle connection is closed")
                    other._drop()
                    return True
            return False

        def _refuse(self) -> None:
            self._answer_and_close(b"503 Service Unavailable", b"retry-after: 1\r\n", _REFUSED)

        def _answer_and_close(self, status: bytes, headers: bytes, body: bytes) -> None:
            """A whole JSON answer written before h11 has a request (the connection is
            refused or its head refused), then the connection closed once it is sent."""
            head = b"HTTP/1.1 %s\r\ncontent-type: application/json\r\n%sconnection: close\r\n" % (
                status,
                headers,
            )
            if not self.transport.is_closing():
                self.transport.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
                self.transport.close()

        def _drop(self) -> None:
            """Close the connection; abort it where unsent bytes would keep it open."""
            idle.pop(self, None)
            if self.transport.get_write_buffer_size():
                self.transport.abort()
            elif not self.transport.is_closing():
                self.transport.close()

        def _idle(self) -> None:
            idle.pop(self, None)
            idle[self] = None  # last: the most recently idle

        # ---- the head and the body ---------------------------------------------------

        def data_received(self, data: bytes) -> None:
            if self._head_timer is None and self._between_requests():
                # The first byte of the next request on a kept-alive connection: its head
                # must be complete within head_timeout from now, however it trickles in.
                self._head_timer = self.loop.call_later(limits.head_timeout, self._head_timed_out)
            if self._between_requests() and self._head_over(data):
                self._head_too_large()
                return
            super().data_received(data)
            self._progress()

        def _head_over(self, data: bytes) -> bool:
            """Whether the head awaited grows past ``MAX_HEAD_BYTES`` with ``data``."""
            seen = self._head_tail + data
            end = seen.find(b"\r\n\r\n")
            if end >= 0:
                size = self._head_bytes - len(self._head_tail) + end + 4
                self._head_bytes, self._head_tail = 0, b""  # the next head counts afresh
                return size > MAX_HEAD_BYTES
            self._head_bytes += len(data)
            self._head_tail = seen[-3:]
            return self._head_bytes > MAX_HEAD_BYTES

        def _head_too_large(self) -> None:
            log.info("a request head over %d bytes: 431, the connection is closed", MAX_HEAD_BYTES)
            idle.pop(self, None)
            self._answer_and_close(b"431 Request Header Fields Too Large", b"", _HEAD_TOO_LARGE)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.transport.is_closing():
                return
            self._progress()  # a pipelined request may have started
            if self._between_requests():
                self._idle()

        def _between_requests(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _progress(self) -> None:
            """Move the timers along what h11 has read: a new head stops the head timer
            and, while its body is due, runs the body timer; the body's end stops it."""
            if self.cycle is not None and self.cycle is not self._started:
                self._started = self.cycle
                idle.pop(self, None)
                if self._head_timer is not None:
                    self._head_timer.cancel()
                    self._head_timer = None
                if self.conn.their_state is h11.SEND_BODY:
                    self._body_timer = self.loop.call_later(limits.body_timeout, self._body_timed_out)
            if self._body_timer is not None and self.conn.their_state is not h11.SEND_BODY:
                self._body_timer.cancel()
                self._body_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if not self.transport.is_closing():
                log.info(
                    "a request head did not arrive within %g s: the connection is closed", limits.head_timeout
                )
                self._drop()

        def _body_timed_out(self) -> None:
            self._body_timer = None
            cycle = self.cycle
            if self.transport.is_closing() or cycle is None or self.conn.their_state is not h11.SEND_BODY:
                return
            if self.flow.read_paused:  # the server is not reading: not the client's delay
                self._body_timer = self.loop.call_later(limits.body_timeout, self._body_timed_out)
                return
            log.info("a request body did not arrive within %g s: 408", limits.body_timeout)
            answered = cycle.response_started
            # The app's receive() now says the client left, and what it sends goes nowhere.
            cycle.disconnected = True
            cycle.message_event.set()
            if not answered:
                headers = [
                    (b"content-type", b"application/json"),
                    (b"content-length", b"%d" % len(_TOO_SLOW)),
                    (b"connection", b"close"),
                ]
                with contextlib.suppress(h11.LocalProtocolError):
                    out = self.conn.send(
                        h11.Response(status_code=408, headers=headers, reason=b"Request Timeout")
                    )
                    out = (out or b"") + (self.conn.send(h11.Data(data=_TOO_SLOW)) or b"")
                    out += self.conn.send(h11.EndOfMessage()) or b""
                    self.transport.write(out)
            self._drop()

        # ---- sending -----------------------------------------------------------------

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._send_timer is None:
                # A moment after the app's own bound on the same write: the app's fires
                # first and ends the stream at once, freeing its slot; this one only ends
                # what the app no longer waits on (an answer's tail nobody reads).
                delay = limits.send_timeout + min(1.0, 0.1 * limits.send_timeout)
                self._send_timer = self.loop.call_later(delay, self._send_timed_out)

        def resume_writing(self) -> None:
            super().resume_writing()
            if self._send_timer is not None:
                self._send_timer.cancel()
                self._send_timer = None

        def _send_timed_out(self) -> None:
            self._send_timer = None
            log.info("a client read nothing for %g s: the connection is aborted", limits.send_timeout)
            self.transport.abort()  # close() would wait for the unread bytes forever

        def timeout_keep_alive_handler(self) -> None:
            if self.transport.get_write_buffer_size():
                self.transport.abort()
                return
            super().timeout_keep_alive_handler()

    # The connections with no request in progress, longest idle first: the ones a new
    # connection over the cap takes the place of. (Insertion order is the idle order.)
    idle: dict[BoundedH11Protocol, None] = {}
    return BoundedH11Protocol


def serve(app: ServerApp, *, host: str, port: int, log_level: str = "info", **kw: Any) -> None:
    cfg = app.config
    limits = Limits.of(cfg)
    log.info(
        "limits: %d connections, head %g s, body %g s, send %g s, keep-alive %g s",
        limits.max_connections,
        cfg.head_timeout,
        cfg.body_timeout,
        cfg.send_timeout,
        cfg.keepalive_timeout,
    )
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        access_log=False,
        http=bounded_protocol(limits),
        timeout_keep_alive=cfg.keepalive_timeout,  # type: ignore[arg-type]  # a float works
        **kw,
    )
    uvicorn.Server(config).run()
