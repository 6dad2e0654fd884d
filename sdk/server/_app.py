"""The scheduling server: an ASGI application in front of one or more engines.

It speaks the Messages API (``/v1/messages``, streaming and not, ``count_tokens``,
``/v1/models``) and OpenAI's ``/v1/chat/completions`` (:mod:`._openai`), so
anthropic-sdk-python, openai-python and this SDK's ``Client`` work against it unchanged,
and runs :mod:`sdk.scheduler` over the engines' slots. Each upstream is
reached with this SDK's own :class:`~sdk.Client`; all of them share the server's one
scheduler, so admission, fairness, preemption and metrics are decided in one place:

- **admission** by tier (a key's tier, or the ``priority`` the request asks for within
  the key's ``max_tier``: a ``seam-priority`` header or a ``priority`` body field, a tier
  name or vLLM's integer) and tenant; a full queue answers 503 with ``retry-after``, a
  tenant past its quota 429 (:mod:`._quota`);
- **preemption**: a preemptible stream is paused for a higher tier by the client's
  stream machinery (upstream closed at a resumable point, continued by prefill when a
  slot frees); its client sees one uninterrupted stream;
- **backpressure**: the response is written with the ASGI ``send``, which waits while
  the client's socket does not drain (:mod:`._serve` keeps socket buffers small); the
  stream's producer stays at most ``buffer_bytes`` ahead of what was sent, so its engine
  stream's buffer fills and, after ``stall_seconds`` without a read, the generation is
  cancelled, freeing its slot, and resumed when the client reads again;
- **reattach**: the engine stream belongs to the server (a :class:`~._live.LiveStream`
  fed by a task of the server's own), not to the connection. Every SSE event carries an
  ``id:`` (``<stream id>:<n>``, the stream id also in the ``seam-stream-id`` header); a
  client that lost its connection re-sends its request with ``Last-Event-ID`` and gets
  the rest exactly once, with no new engine request.

Upstream errors keep their status and type; their text never carries an upstream URL or
key.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import httpx2
import orjson
from anyio.abc import TaskGroup

from .._client import Client, _cost
from .._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    RequestRejectedError,
    SDKError,
    StreamProtocolError,
)
from ..scheduler import RequestMetrics, Scheduler, Tier, UnknownTierError
from ..stream import FlowControl, StallPolicy
from ..stream._accumulate import message_to_wire
from ._config import Keyring, Principal, ServerConfig
from ._http import (
    ERROR_TYPES,
    ChatFramer,
    Framer,
    HTTPError,
    Message,
    MessagesFramer,
    Receive,
    Scope,
    Send,
    error_body,
    header_map,
    model_entry,
    openai_error_body,
    send_json,
    watch_disconnect,
    with_id,
)
from ._live import LiveStream
from ._metrics import CONTENT_TYPE, ServerMetrics
from ._openai import ChatError, ChunkWriter, chat_to_messages, completion
from ._quota import Quotas
from ._route import ROUTE_HEADER, Engine, Router

__all__ = ["ServerApp"]

log = logging.getLogger("sdk.server")

HEALTH_INTERVAL = 5.0


class ServerApp:
    """``ServerApp(["http://127.0.0.1:8080"], config)`` is the ASGI application;
    ``uvicorn.run(app)`` serves it (``python -m sdk.server`` does)."""

    def __init__(
        self,
        upstreams: Sequence[str],
        config: ServerConfig | None = None,
        *,
        upstream_api_key: str | None = None,
    ) -> None:
        if not upstreams:
            raise ValueError("at least one upstream is needed")
        self.config = config = config or ServerConfig()
        self.scheduler = Scheduler(
            config.tiers,
            slots=config.slots,
            aging=config.aging_seconds,
            max_queue=config.max_queue,
            tenant_weights=config.tenant_weights,
        )
        self.keyring = Keyring(config)
        self._upstream_key = upstream_api_key
        self._urls = [u.rstrip("/") for u in upstreams]
        self.upstreams: list[Engine] = []
        self.router: Router | None = None
        self._client: Client | None = None  # the engines' one client, routed by ``router``
        self.metrics = ServerMetrics(
            self.scheduler,
            lambda: [u.healthy for u in self.upstreams],
            lambda: self.router.failovers if self.router is not None else 0,
        )
        self.stall = StallPolicy(
            True, stall_timeout=config.stall_seconds, max_backlog_bytes=config.buffer_bytes
        )
        self.flow = FlowControl(high_water_bytes=config.buffer_bytes)
        self._models: tuple[float, list[dict[str, Any]]] | None = None
        self._live: dict[str, LiveStream] = {}
        self.quotas = Quotas()
        self._tg: TaskGroup | None = None  # the server's own tasks (from the lifespan)

    # ---- life ------------------------------------------------------------------------

    async def startup(self) -> None:
        """Make the engines' client (routed, :mod:`._route`) and a control client per
        engine, and learn the slot count (unless configured)."""
        key = self._upstream_key or ""
        for i, url in enumerate(self._urls):
            control = Client(base_url=url, backend="messages", api_key=key)
            control._slots_known = True
            self.upstreams.append(Engine(i, url, control))
        self.router = Router(self.upstreams, on_health=self._health_changed)
        self._client = Client(
            base_url="http://engine",  # the router sends each request to its engine
            backend="messages",
            api_key=key,
            http_client=httpx2.AsyncClient(transport=self.router),
            scheduler=self.scheduler,
            stall=self.stall,
            flow=self.flow,
            on_metrics=self._observe,
        )
        self._client._slots_known = True  # the server sums the engines' slots itself
        if self.config.slots is None:
            for u in self.upstreams:
                u.slots = await u.client._probe_slots()
            self._health_changed()

    def _health_changed(self) -> None:
        """Learnt slots follow health: a dead engine's slots are not handed out."""
        if self.config.slots is not None or any(u.slots is None for u in self.upstreams):
            return
        live = [u for u in self.upstreams if u.healthy] or self.upstreams
        self.scheduler.set_slots(max(1, sum(u.slots or 0 for u in live)))

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("the server has not started")
        return self._client

    def _router(self) -> Router:
        if self.router is None:
            raise RuntimeError("the server has not started")
        return self.router

    async def shutdown(self) -> None:
        for u in self.upstreams:
            await u.client.aclose()
        if self._client is not None:
            await self._client.aclose()
            await self._client._http.aclose()

    def _observe(self, m: RequestMetrics) -> None:
        self.metrics.observe(m)

    async def _health_loop(self) -> None:
        async with httpx2.AsyncClient(timeout=HEALTH_INTERVAL) as http:
            while True:
                router = self._router()
                for u in self.upstreams:
                    probed_at = u.failures
                    try:
                        with anyio.fail_after(HEALTH_INTERVAL):  # however slowly it answers
                            r = await http.get(u.url + "/health")
                        ok = r.status_code == 200
                    except Exception:
                        ok = False
                    router.set_health(u, ok, probed_at=probed_at)
                await anyio.sleep(HEALTH_INTERVAL)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        msg = await receive()
        if msg["type"] != "lifespan.startup":
            return
        try:
            await self.startup()
        except Exception as e:
            await send({"type": "lifespan.startup.failed", "message": f"{type(e).__name__}: {e}"})
            return
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._health_loop)
            tg.start_soon(self._janitor)
            await send({"type": "lifespan.startup.complete"})
            while (await receive())["type"] != "lifespan.shutdown":
                pass
            tg.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await self.shutdown()
        await send({"type": "lifespan.shutdown.complete"})

    # ---- ASGI ------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return
        if not self.upstreams:
            await self.startup()  # served without a lifespan
        started: list[bool] = [False]

        async def tracked(message: Message) -> None:
            if message["type"] == "http.response.start":
                started[0] = True
            await send(message)

        try:
            await self._route(scope, receive, tracked)
        except HTTPError as e:
            if not started[0]:
                openai = scope["path"] == "/v1/chat/completions"
                body = openai_error_body(e) if openai else error_body(e.error_type, e.message)
                await send_json(tracked, e.status, body, e.headers)
        except OSError:
            pass  # the client went away
        except Exception:
            log.exception("unexpected error")
            if not started[0]:
                await send_json(tracked, 500, error_body("api_error", "internal server error"))

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        if path == "/health":
            ok = any(u.healthy for u in self.upstreams)
            ups = [
                {"upstream": u.index, "healthy": u.healthy, "in_flight": u.in_flight} for u in self.upstreams
            ]
            await send_json(
                send, 200 if ok else 503, {"status": "ok" if ok else "unavailable", "upstreams": ups}
            )
            return
        if path == "/metrics":
            body = self.metrics.render()
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", CONTENT_TYPE.encode())],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        routes: dict[str, tuple[str, Callable[[Scope, Receive, Send, Principal], Awaitable[None]]]] = {
            "/v1/messages": ("POST", self._messages),
            "/v1/messages/count_tokens": ("POST", self._count_tokens),
            "/v1/chat/completions": ("POST", self._chat),
            "/v1/models": ("GET", self._list_models),
            "/tokenize": ("POST", self._tokenize),
        }
        route = routes.get(path)
        if route is None and path.startswith("/v1/models/") and len(path) > len("/v1/models/"):
            route = ("GET", self._get_model)  # a model id may hold slashes (org/name)
        if route is None:
            raise HTTPError(404, "not_found_error", f"no route {path}")
        if method != route[0]:
            raise HTTPError(405, "invalid_request_error", f"{path} takes {route[0]}", {"allow": route[0]})
        principal = self._authenticate(scope)
        last = header_map(scope).get("last-event-id")
        if last and path in ("/v1/messages", "/v1/chat/completions"):
            await self._reattach(scope, receive, send, principal, last)
            return
        await route[1](scope, receive, send, principal)

    # ---- requests --------------------------------------------------------------------

    def _authenticate(self, scope: Scope) -> Principal:
        headers = header_map(scope)
        key = headers.get("x-api-key")
        if key is None:
            auth = headers.get("authorization", "")
            if auth[:7].lower() == "bearer ":
                key = auth[7:].strip()
        p = self.keyring.principal(key)
        if p is None:
            raise HTTPError(401, "authentication_error", "invalid x-api-key" if key else "missing x-api-key")
        return p

    async def _body(self, receive: Receive) -> dict[str, Any]:
        limit = self.config.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                raise OSError("the client disconnected")
            part = msg.get("body", b"")
            size += len(part)
            if size > limit:
                raise HTTPError(413, "request_too_large", f"the request body is over {limit} bytes")
            chunks.append(part)
            if not msg.get("more_body"):
                break
        try:
            data = orjson.loads(b"".join(chunks))
        except orjson.JSONDecodeError as e:
            raise HTTPError(400, "invalid_request_error", f"the body is not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise HTTPError(400, "invalid_request_error", "the body must be a JSON object")
        return data

    def _tier(self, scope: Scope, data: dict[str, Any], who: Principal) -> Tier:
        asked: str | int | None = header_map(scope).get("seam-priority")
        body_priority = data.pop("priority", None)
        if asked is None and body_priority is not None:
            asked = body_priority
        if isinstance(asked, str) and asked.strip().lstrip("-").isdigit():
            asked = int(asked)
        if asked is None:
            return who.tier
        if not isinstance(asked, str | int) or isinstance(asked, bool):
            raise HTTPError(400, "invalid_request_error", "priority must be a tier name or an integer")
        try:
            tier = self.scheduler.tiers.resolve(asked)
        except UnknownTierError as e:
            raise HTTPError(400, "invalid_request_error", str(e)) from None
        if tier.rank < who.max_tier.rank:
            raise HTTPError(403, "permission_error", f"this key may not use the tier {tier.name!r}")
        return tier

    def _route_for(self, scope: Scope) -> str:
        """A route (an engine, chosen least-loaded with conversation affinity) for one
        request; closed with ``self.router.close`` when the request is over."""
        return self._router().open(header_map(scope).get("x-conversation-id"))

    async def _messages(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        data = await self._body(receive)
        if not isinstance(data.get("model"), str):
            raise HTTPError(400, "invalid_request_error", "model: a model name is required")
        if not isinstance(data.get("messages"), list):
            raise HTTPError(400, "invalid_request_error", "messages: a list of messages is required")
        mt = data.get("max_tokens")
        if not isinstance(mt, int) or isinstance(mt, bool) or mt < 1:
            raise HTTPError(400, "invalid_request_error", "max_tokens: a positive integer is required")
        streaming = data.pop("stream", False) is True
        await self._serve(
            scope, receive, send, who, data, MessagesFramer() if streaming else None, message_to_wire
        )

    async def _chat(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        raw = await self._body(receive)
        model = raw.get("model")
        if not isinstance(model, str):
            raise HTTPError(400, "invalid_request_error", "model: a model name is required", param="model")
        try:
            data = chat_to_messages(raw)
        except ChatError as e:
            raise HTTPError(400, "invalid_request_error", str(e), param=e.param) from None
        if "priority" in raw:
            data["priority"] = raw["priority"]
        framer: Framer | None = None
        if raw.get("stream") is True:
            opts = raw.get("stream_options")
            include = isinstance(opts, Mapping) and opts.get("include_usage") is True
            framer = ChatFramer(ChunkWriter(model, include_usage=include))
        await self._serve(scope, receive, send, who, data, framer, lambda msg: completion(msg, model))

    async def _serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        who: Principal,
        data: dict[str, Any],
        framer: Framer | None,
        render: Callable[[Any], object],
    ) -> None:
        """Admit and run one request: streamed through ``framer``, or whole through
        ``render`` (the message to the protocol's JSON)."""
        tier = self._tier(scope, data, who)
        quota: dict[str, str] = {}
        if who.requests_per_minute or who.tokens_per_minute:
            cost = await _cost(data)
            verdict = self.quotas.check(
                who.tenant,
                anyio.current_time(),
                rpm=who.requests_per_minute,
                tpm=who.tokens_per_minute,
                tokens=cost.tokens,
            )
            quota = verdict.headers
            if not verdict.ok:
                self.metrics.rejected.labels("quota").inc()
                raise HTTPError(429, "rate_limit_error", "this key's quota is used up for now", quota)
        route = self._route_for(scope)
        if framer is not None:  # its producer closes the route (it outlives this connection)
            await self._stream(route, data, tier, who, receive, send, framer, quota)
            return
        try:
            msg = await self._call(
                receive,
                self.client.create(
                    priority=tier, tenant=who.tenant, extra_headers={ROUTE_HEADER: route}, extra_body=data
                ),
            )
            await send_json(send, 200, render(msg), quota)
        finally:
            self._router().close(route)

    async def _call(self, receive: Receive, work: Awaitable[Any]) -> Any:
        """Run ``work`` (queued, then sent upstream) and give up if the client leaves."""
        result: list[Any] = []
        failure: list[BaseException] = []
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                try:
                    result.append(await work)
                except Exception as e:
                    failure.append(e)
                finally:
                    tg.cancel_scope.cancel()

            tg.start_soon(watch_disconnect, receive, tg.cancel_scope)
            tg.start_soon(run)
        if failure:
            raise self._translate(failure[0])
        if not result:
            raise OSError("the client disconnected")
        return result[0]

    async def _stream(
        self,
        route: str,
        data: dict[str, Any],
        tier: Tier,
        who: Principal,
        receive: Receive,
        send: Send,
        framer: Framer,
        headers: Mapping[str, str],
    ) -> None:
        """Start the engine stream in a task of the server's own (it outlives this
        connection for a while, for a reattach), then send its frames."""
        cfg = self.config
        sid = secrets.token_urlsafe(12)
        live = LiveStream(
            sid,
            who.tenant,
            keep_bytes=cfg.replay_bytes,
            lead_bytes=cfg.buffer_bytes,
            done_frame=framer.done(),
        )
        self._live[sid] = live
        if self._tg is not None:
            self._tg.start_soon(self._produce, live, route, data, tier, who, framer)
            await self._attach(live, 0, receive, send, headers)
            return
        async with anyio.create_task_group() as tg:  # served without a lifespan: no reattach
            tg.start_soon(self._produce, live, route, data, tier, who, framer)
            try:
                await self._attach(live, 0, receive, send, headers)
            finally:
                live.scope.cancel()

    async def _produce(
        self,
        live: LiveStream,
        route: str,
        data: dict[str, Any],
        tier: Tier,
        who: Principal,
        framer: Framer,
    ) -> None:
        """Read the engine stream into ``live``, at most its lead ahead of the client.
        The stream's resumes go through the same route, so they follow it to another
        engine when its engine fails (:mod:`._route`)."""
        try:
            with live.scope:
                s = self.client.stream(
                    priority=tier, tenant=who.tenant, extra_headers={ROUTE_HEADER: route}, extra_body=data
                )
                try:
                    async with s:  # queued, admitted, sent upstream; closed under a shield on exit
                        live.opened.set()
                        try:
                            async for ev in s:
                                for frame in framer.frames(ev):
                                    live.push(with_id(frame, live.sid, live.next))
                                while live.ahead():
                                    await live.changed()
                        except SDKError as e:  # after the first byte: an error frame
                            live.push(with_id(framer.error(self._translate(e)), live.sid, live.next))
                except SDKError as e:  # before it: the error answer
                    live.failure = e
        except Exception as e:
            log.exception("a stream's producer failed")
            live.failure = e
        finally:
            self._router().close(route)
            live.finish()

    async def _attach(
        self,
        live: LiveStream,
        start: int,
        receive: Receive,
        send: Send,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Send ``live``'s frames from index ``start`` until it ends or the client leaves."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_disconnect, receive, tg.cancel_scope)
            await live.opened.wait()
            if live.failure is not None and live.next == 0:
                tg.cancel_scope.cancel()
                self._live.pop(live.sid, None)
            else:
                live.attached += 1
                live.idle_since = None
                try:
                    await self._send_frames(live, start, send, headers or {})
                finally:
                    live.attached -= 1
                    if live.attached == 0:
                        live.idle_since = anyio.current_time()
                tg.cancel_scope.cancel()
        if live.failure is not None and live.next == 0:
            raise self._translate(live.failure)

    async def _send_frames(
        self, live: LiveStream, start: int, send: Send, headers: Mapping[str, str]
    ) -> None:
        hdrs = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (b"seam-stream-id", live.sid.encode()),
        ]
        hdrs += [(k.encode(), v.encode()) for k, v in headers.items()]
        await send({"type": "http.response.start", "status": 200, "headers": hdrs})
        i = start
        while True:
            while i < live.next:
                frame = live.frame(i)
                if frame is None:  # trimmed: cannot happen to the frames not yet sent
                    raise RuntimeError("a frame to send was dropped")
                await send({"type": "http.response.body", "body": frame, "more_body": True})
                i += 1
                live.advance(i)
            if live.done:
                break
            await live.changed()
        await send({"type": "http.response.body", "body": live.done_frame, "more_body": False})

    async def _reattach(self, scope: Scope, receive: Receive, send: Send, who: Principal, last: str) -> None:
        """A client back after a dropped connection: the frames after ``last``."""
        sid, _, n = last.rpartition(":")
        live = self._live.get(sid)
        if live is None or live.tenant != who.tenant or not n.isdigit():
            raise HTTPError(404, "not_found_error", f"no stream {sid!r} to reattach to (expired or unknown)")
        start = int(n) + 1
        if start < live.base or start > live.next:
            raise HTTPError(
                404, "not_found_error", f"event {last!r} is no longer kept; the stream cannot continue"
            )
        self.metrics.reattached.inc()
        await self._attach(live, start, receive, send)

    async def _janitor(self) -> None:
        """Drop kept streams nobody came back for (stopping their producers), and keep
        all streams' kept events within ``replay_total_bytes``."""
        while True:
            await anyio.sleep(1.0)
            self.sweep(anyio.current_time())

    def sweep(self, now: float) -> None:
        for sid, live in list(self._live.items()):
            idle = live.idle_since
            if live.attached or idle is None or now - idle < self.config.replay_seconds:
                continue
            live.scope.cancel()
            del self._live[sid]
        excess = sum(live.kept_bytes for live in self._live.values()) - self.config.replay_total_bytes
        if excess <= 0:
            return
        # The longest-idle streams first (a stream with a connection attached last).
        order = sorted(
            self._live.values(),
            key=lambda s: (s.attached > 0, s.idle_since if s.idle_since is not None else now),
        )
        for live in order:
            if excess <= 0:
                break
            excess -= live.drop_kept(live.kept_bytes - excess)

    async def _count_tokens(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        data = await self._body(receive)
        if not isinstance(data.get("messages"), list):
            raise HTTPError(400, "invalid_request_error", "messages: a list of messages is required")
        data.pop("priority", None)
        route = self._route_for(scope)
        try:
            n = await self._call(
                receive, self.client.count_tokens(extra_headers={ROUTE_HEADER: route}, extra_body=data)
            )
        finally:
            self._router().close(route)
        await send_json(send, 200, {"input_tokens": n.input_tokens})

    async def _tokenize(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        """An engine's ``/tokenize``, in llama-server's shape (``content``, ``with_pieces``)
        or vLLM's (``prompt``, ``model``): no special tokens are added, and special-token
        strings are ordinary text where the engine allows it. The answer has ``tokens``
        (ids, or ``{"id", "piece"}`` objects with ``with_pieces`` where the engine gives
        pieces) and ``count``."""
        data = await self._body(receive)
        text = data.get("content", data.get("prompt"))
        if not isinstance(text, str):
            raise HTTPError(
                400, "invalid_request_error", "content: the text to tokenize (a string) is required"
            )
        model = data.get("model")
        pieces = data.get("with_pieces") is True
        route = self._route_for(scope)
        try:
            ids, got = await self._call(
                receive,
                self.client._tokenize(
                    text,
                    model=model if isinstance(model, str) else None,
                    pieces=pieces,
                    extra_headers={ROUTE_HEADER: route},
                ),
            )
        finally:
            self._router().close(route)
        tokens: list[Any] = (
            [{"id": i, "piece": p} for i, p in zip(ids, got, strict=True)] if got is not None else ids
        )
        await send_json(send, 200, {"tokens": tokens, "count": len(ids)})

    async def _known_models(self) -> list[dict[str, Any]]:
        """The engines' models, asked at most every 30 s."""
        now = anyio.current_time()
        if self._models is None or now - self._models[0] > 30.0:
            seen: dict[str, dict[str, Any]] = {}
            for u in self.upstreams:
                try:
                    for m in await u.client.models(timeout=10.0):
                        seen.setdefault(m.id, model_entry(m.id, m.display_name))
                except SDKError:
                    continue
            self._models = (now, list(seen.values()))
        return self._models[1]

    async def _get_model(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        model_id = scope["path"][len("/v1/models/") :]
        for m in await self._known_models():
            if m["id"] == model_id:
                await send_json(send, 200, m)
                return
        raise HTTPError(404, "not_found_error", f"no model {model_id!r} on this server")

    async def _list_models(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        models = await self._known_models()
        await send_json(
            send,
            200,
            {
                "object": "list",  # the OpenAI list shape and the Messages API's, in one
                "data": models,
                "has_more": False,
                "first_id": models[0]["id"] if models else None,
                "last_id": models[-1]["id"] if models else None,
            },
        )

    # ---- errors ----------------------------------------------------------------------

    def _translate(self, e: BaseException) -> HTTPError:
        """An SDK error as the answer to send: the same status and type, the message
        without upstream URLs or keys."""
        if isinstance(e, HTTPError):
            return e
        if isinstance(e, RequestRejectedError):
            self.metrics.rejected.labels("queue full" if "queue" in e.reason else "cost").inc()
            status = 503 if "queue" in e.reason else 429
            return HTTPError(
                status,
                "overloaded_error" if status == 503 else "rate_limit_error",
                e.reason,
                {"retry-after": "1"},
            )
        if isinstance(e, APIError):
            status = e.status or 500
            return HTTPError(
                status, e.error_type or ERROR_TYPES.get(status, "api_error"), self._clean(e.message)
            )
        if isinstance(e, APITimeoutError):
            return HTTPError(504, "timeout_error", "the upstream server did not answer in time")
        if isinstance(e, APIConnectionError):
            return HTTPError(502, "api_error", "the upstream server is unreachable")
        if isinstance(e, StreamProtocolError):
            return HTTPError(502, "api_error", "the upstream server sent a malformed response")
        log.exception("unexpected upstream failure", exc_info=e)
        return HTTPError(500, "api_error", "internal server error")

    def _clean(self, text: str) -> str:
        for url in self._urls:
            text = text.replace(url, "<upstream>")
        key = self._upstream_key
        if key:
            text = text.replace(key, "***")
        return text
