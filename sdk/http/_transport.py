"""A request the server never read is sent again: the kept-alive connection race.

A pooled HTTP/1.1 connection can be closed by the server at the very moment the client
reuses it. llama-server (cpp-httplib) closes a connection idle for 5 s (its answers say
``Keep-Alive: timeout=5``; no flag changes it), and httpx2's pool keeps an idle
connection for 5 s too, counted from a little later (when the client has read the
answer). The pool checks that an idle socket is still open when it hands it out, but
the request is written a few event-loop turns later: on a loaded machine that is long
enough for the server's close to land in between. The request then meets a closed
socket and fails without any answer: ``Server disconnected without sending a
response`` (the server's FIN), or a reset (its RST, the request unread).

Such a request was never processed, so sending it again is safe whatever its method;
it is what browsers do (Chromium's ``ShouldResendRequest``: a reused socket that closed
or reset before the first response byte). :class:`StaleConnectionResend` wraps the
pool's transport and does that, and only that: it follows each attempt through
httpcore2's ``trace`` extension and sends again only when the attempt went out on a
reused HTTP/1.1 connection (no new TCP connection was made for it) and that connection
ended before the response head (:func:`never_answered`). A failed connection leaves
the pool, so each resend takes another kept-alive connection or a new one; at most
``max_resends``. A new connection that fails, a timeout, or a malformed answer is the
retry policy's business (:mod:`sdk.http._retry`), one layer up.

Being below the client's retry policy, a resend spends no retry budget and no attempt,
so a client with retries off is not failed by its own pool; and being below the
scheduling server's router (:mod:`sdk.server._route`), it never makes the router take
a live engine for dead.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2

__all__ = ["StaleConnectionResend", "never_answered"]

log = logging.getLogger("sdk")

# httpcore2's words when the socket ends before a response head: the server closed it.
_NO_ANSWER = "Server disconnected without sending a response"

Trace = Callable[[str, dict[str, Any]], Awaitable[None]]


def never_answered(exc: BaseException, *, reused: bool) -> bool:
    """Whether a request that failed with ``exc`` before its response head may be sent
    again: it went out on a ``reused`` connection, and the connection ended under it (the
    server closed it or reset it) with no answer. A timeout, a malformed answer, or any
    failure of a connection made for this request is not such a case."""
    if not reused:
        return False
    if isinstance(exc, httpx2.RemoteProtocolError):
        return str(exc).startswith(_NO_ANSWER)
    return isinstance(exc, httpx2.ReadError | httpx2.WriteError)


class _Attempt:
    """One attempt's ``trace`` callback: whether it was sent on a reused HTTP/1.1
    connection (it sent request headers and made no connection of its own). Events are
    passed on to the caller's own trace, if the request had one."""

    __slots__ = ("_outer", "connected", "sent")

    def __init__(self, outer: Trace | None) -> None:
        self._outer = outer
        self.connected = False
        self.sent = False

    async def __call__(self, name: str, info: dict[str, Any]) -> None:
        if name.startswith("connection.connect_"):
            self.connected = True
        elif name == "http11.send_request_headers.started":
            self.sent = True
        if self._outer is not None:
            await self._outer(name, info)

    @property
    def reused(self) -> bool:
        return self.sent and not self.connected


class StaleConnectionResend(httpx2.AsyncBaseTransport):
    """An httpx2 transport: ``inner``'s, with a request that a kept-alive connection lost
    unread sent again (see the module doc). Only a body known in full is sent again."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, *, max_resends: int = 3) -> None:
        if max_resends < 0:
            raise ValueError("max_resends must be >= 0")
        self._inner = inner
        self.max_resends = max_resends
        self.resends = 0  # requests sent again, over this transport's life

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        extensions = request.extensions
        had_trace = "trace" in extensions
        outer: Trace | None = extensions.get("trace")
        resends = 0
        try:
            while True:
                attempt = extensions["trace"] = _Attempt(outer)
                try:
                    return await self._inner.handle_async_request(request)
                except httpx2.TransportError as e:
                    if (
                        resends >= self.max_resends
                        or not never_answered(e, reused=attempt.reused)
                        or not isinstance(request.stream, httpx2.ByteStream)  # a streamed upload
                    ):
                        raise
                    resends += 1
                    self.resends += 1
                    log.info(
                        "%s %s: the server closed the kept-alive connection before reading the "
                        "request (%s); sent again",
                        request.method,
                        request.url.path,
                        type(e).__name__,
                    )
        finally:
            # The response body's own trace events go where the caller asked, not to us.
            if had_trace:
                extensions["trace"] = outer
            else:
                extensions.pop("trace", None)

    async def aclose(self) -> None:
        await self._inner.aclose()
