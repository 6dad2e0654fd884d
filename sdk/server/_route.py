"""Routing the server's engine traffic: one upstream client, several engines.

The server reaches all its engines through one :class:`~sdk.Client` whose HTTP transport
is a :class:`Router`. Each request the server makes for a caller carries a route (an
internal header, removed before the request leaves): the route names the engine that
serves it, chosen least-loaded with conversation affinity when the request arrives
(:meth:`Router.open`). Because a stream's resume request (after a stall, a preemption or
a broken connection) goes through the same client with the same route, failover needs
nothing more than moving the route:

- an engine that cannot be reached, or whose response breaks off mid-body (a crashed or
  killed process), is marked down at once (the health loop marks it up again when its
  ``/health`` answers 200) and its routes move to the least-loaded healthy engine;
- a timeout moves only the route that saw it;
- a request whose engine is down when it is sent is moved before it is sent.

The stream machinery then continues the broken stream on the new engine by a prefill
continuation, as it does after any dropped connection, so the caller sees one
uninterrupted stream. Requests without a route (the model list the resume path reads)
go to any healthy engine.
"""

from __future__ import annotations

import secrets
import zlib
from collections.abc import AsyncIterator, Callable, Sequence

import httpx2

from ..client import Client
from ..http import StaleConnectionResend

__all__ = ["ROUTE_HEADER", "Engine", "Router"]

ROUTE_HEADER = "seam-route"

# Errors after which an engine is taken for dead until its health check passes.
_DOWN = (httpx2.ConnectError, httpx2.ReadError, httpx2.WriteError, httpx2.RemoteProtocolError)


class Engine:
    """One engine: its URL, a client for its own control requests (slots, models), its
    load (routes on it), its health and its slot count where it says it."""

    def __init__(self, index: int, url: str, client: Client) -> None:
        self.index = index
        self.url = url
        self.client = client
        self.in_flight = 0
        self.healthy = True
        self.slots: int | None = None
        self.failures = 0  # times traffic found it dead: a health answer from before is stale

    def __repr__(self) -> str:
        return f"<Engine {self.index} in_flight={self.in_flight} healthy={self.healthy}>"


class Router(httpx2.AsyncBaseTransport):
    """An httpx2 transport that sends each request to its route's engine."""

    def __init__(
        self,
        engines: Sequence[Engine],
        transport: httpx2.AsyncBaseTransport | None = None,
        *,
        on_health: Callable[[], None] | None = None,
    ) -> None:
        if not engines:
            raise ValueError("at least one engine is needed")
        self.engines = list(engines)
        # A request a kept-alive connection lost unread is sent again below the failure
        # accounting: a server closing an idle connection is not a dead engine.
        self._inner = transport or StaleConnectionResend(httpx2.AsyncHTTPTransport())
        self._routes: dict[str, Engine] = {}
        self._rr = 0
        self.failovers = 0  # routes moved off an engine that failed them
        self.on_health = on_health  # called when an engine is marked down here

    # ---- routes ----------------------------------------------------------------------

    def open(self, conversation: str | None = None) -> str:
        """A new route on the least-loaded healthy engine; a conversation id sticks to one
        engine while its load is within one of the least (its prompt cache is there)."""
        engine = self._pick(conversation)
        rid = secrets.token_hex(8)
        self._routes[rid] = engine
        engine.in_flight += 1
        return rid

    def close(self, rid: str) -> None:
        engine = self._routes.pop(rid, None)
        if engine is not None:
            engine.in_flight -= 1

    def engine_of(self, rid: str) -> Engine | None:
        return self._routes.get(rid)

    def set_health(self, engine: Engine, healthy: bool, *, probed_at: int | None = None) -> None:
        """Mark ``engine`` up or down. ``probed_at`` is ``engine.failures`` when the health
        probe that says so was sent: a 200 sent before traffic found the engine dead (the
        answer may even predate the crash) does not mark it up again."""
        if healthy and probed_at is not None and probed_at != engine.failures:
            return
        changed = engine.healthy != healthy
        engine.healthy = healthy
        if changed and self.on_health is not None:
            self.on_health()

    def _pick(self, conversation: str | None = None, avoid: Engine | None = None) -> Engine:
        ups = [e for e in self.engines if e.healthy and e is not avoid]
        if not ups:
            ups = [e for e in self.engines if e is not avoid] or self.engines
        least = min(e.in_flight for e in ups)
        if conversation:
            home = self.engines[zlib.crc32(conversation.encode()) % len(self.engines)]
            if home in ups and home.in_flight <= least + 1:
                return home
        cands = [e for e in ups if e.in_flight == least]
        self._rr += 1
        return cands[self._rr % len(cands)]

    def _move(self, rid: str | None, failed: Engine) -> Engine:
        """Move ``rid`` off ``failed`` (if it is still there) to a healthy engine."""
        if rid is None:
            return failed
        current = self._routes.get(rid)
        if current is not failed:
            return current or failed
        if len(self.engines) == 1:
            return failed  # nowhere to go: the next attempt tries it again
        # a healthy engine if there is one, else the next of the others in turn (every
        # engine down: each retry tries another one)
        target = self._pick(None, avoid=failed)
        failed.in_flight -= 1
        target.in_flight += 1
        self._routes[rid] = target
        self.failovers += 1
        return target

    def _failed(self, rid: str | None, engine: Engine, exc: Exception) -> None:
        if isinstance(exc, _DOWN):
            engine.failures += 1
            self.set_health(engine, False)
        self._move(rid, engine)

    # ---- transport -------------------------------------------------------------------

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        rid = request.headers.get(ROUTE_HEADER)
        if rid is not None:
            del request.headers[ROUTE_HEADER]
        engine = self._routes.get(rid) if rid else None
        if engine is None:
            rid = None
            engine = self._pick()
        elif not engine.healthy:
            engine = self._move(rid, engine)
        target = httpx2.URL(engine.url)
        request.url = request.url.copy_with(
            scheme=target.scheme,
            host=target.host,
            port=target.port,
            path=target.path.rstrip("/") + request.url.path,
        )
        request.headers["host"] = target.netloc.decode("ascii")
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.TransportError as e:
            self._failed(rid, engine, e)
            raise
        response.stream = _Watched(response.stream, lambda e: self._failed(rid, engine, e))
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Watched(httpx2.AsyncByteStream):
    """A response body that reports a transport failure while it is read."""

    def __init__(
        self, inner: httpx2.AsyncByteStream | httpx2.SyncByteStream, failed: Callable[[Exception], None]
    ) -> None:
        self._inner = inner
        self._failed = failed

    async def __aiter__(self) -> AsyncIterator[bytes]:
        stream = self._inner
        if not isinstance(stream, httpx2.AsyncByteStream):
            raise TypeError("an async transport returned a sync body")
        try:
            async for part in stream:
                yield part
        except httpx2.TransportError as e:
            self._failed(e)
            raise

    async def aclose(self) -> None:
        stream = self._inner
        if isinstance(stream, httpx2.AsyncByteStream):
            await stream.aclose()
