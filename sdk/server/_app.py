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
  tenant past its quota 429 (:mod:`._quota`). Every route that costs engine work is
  metered and queued so: ``count_tokens`` and ``/tokenize`` too. A request is checked
  once at its entry (:mod:`._validate`): what cannot be served is a 400, never a 500;
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
  client that lost its connection re-sends its request with ``Last-Event-ID`` (on the
  same route: a stream keeps its protocol) and gets the rest exactly once, with no new
  engine request;
- **clients that leave**: one that leaves before its response's head never learnt the
  stream's id, so its stream is ended at once (a queued request leaves the queue, an
  admitted one is cancelled); a stream with no client gives its slot up at once to a
  request that waits for one (paused at a resumable point, continued by prefill when its
  client is back and it is re-admitted), and is kept ``replay_seconds``, at most
  ``replay_max_streams`` of them and within ``replay_total_bytes`` of all they hold, then
  ended, its slot, route and memory freed (:meth:`ServerApp.sweep`); a write that waits
  ``send_timeout`` for a client that stopped reading ends the response and its stream
  (the bound on a stream that cannot be paused).

Upstream errors keep their status and type; their text never carries an upstream URL or
key.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
import math
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import anyio
import httpx2
import orjson
from anyio.abc import TaskGroup

from .._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    BadRequestError,
    InvalidRequestError,
    RedirectError,
    RequestRejectedError,
    SDKError,
    StreamProtocolError,
)
from ..client import (
    PRIORITY_HEADER,
    SERVER_HEADER,
    STREAM_ID_HEADER,
    STREAMS_PATH,
    TENANT_HEADER,
    Client,
    EngineName,
    engine_profile,
    request_cost,
    without_probes,
)
from ..scheduler import Cost, Dispatcher, RequestMetrics, Scheduler, Tier, UnknownTierError
from ..stream import Event, FlowControl, MessageState, MessageStopEvent, StallPolicy, TextBlock
from ..stream._accumulate import message_to_wire
from ..stream._resume import continuation, thought
from ..stream._stream import Splicer
from ..stream._wire import event_to_wire, sse_frame
from ..telemetry import ServerTrace, Telemetry, TelemetryArg
from ._config import Keyring, Principal, ServerConfig
from ._fleet import FleetAdmission, FleetLink, FleetUnavailable, fleet_name
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
    WriteTimeout,
    error_body,
    header_map,
    model_entry,
    openai_error_body,
    send_json,
    watch_disconnect,
    with_id,
)
from ._live import LiveStream, overdue
from ._metrics import CONTENT_TYPE, ServerMetrics, StreamGauges
from ._openai import ChatError, ChunkWriter, chat_to_messages, completion
from ._quota import Quotas, SharedQuotas
from ._route import ROUTE_HEADER, Engine, Router
from ._seam import acting_for, capabilities
from ._shared import SharedStreams
from ._takeover import NotContinuable, framer_for, framer_meta, rebuild
from ._validate import check_messages, event_id, priority

__all__ = ["ServerApp"]

log = logging.getLogger("sdk.server")
# How often a stream nobody reads, held at its lead, looks for a request waiting for a slot.
_GIVE_WAY_POLL = 0.05
_SERVER_HEADER = (SERVER_HEADER.encode(), b"1")  # every answer's: this server schedules
# The routes a request span is made for (the API's; not /health or /metrics).
_TRACED = frozenset(
    {
        "/v1/messages",
        "/v1/messages/count_tokens",
        "/v1/chat/completions",
        "/v1/models",
        "/tokenize",
        "/v1/seam",
    }
)

HEALTH_INTERVAL = 5.0

T = TypeVar("T")


class ServerApp:
    """``ServerApp(["http://127.0.0.1:8080"], config)`` is the ASGI application;
    ``uvicorn.run(app)`` serves it (``python -m sdk.server`` does)."""

    def __init__(
        self,
        upstreams: Sequence[str],
        config: ServerConfig | None = None,
        *,
        upstream_api_key: str | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
        telemetry: TelemetryArg = None,
    ) -> None:
        """``transport``: how the engines are reached (default: HTTP over TCP); the
        engines' traffic and their health checks go through it. ``telemetry``:
        OpenTelemetry (:mod:`sdk.telemetry`): a ``SERVER`` span per API request,
        continuing the caller's ``traceparent``, with the engine requests as its
        children, and the ``gen_ai.server.*`` histograms; ``None`` (the default) when an
        OpenTelemetry SDK is configured in the process (``opentelemetry-instrument``)."""
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
        self._engine = engine_profile(cast(EngineName, config.upstream_engine))  # validated by the config
        self._transport = transport
        self._urls = [u.rstrip("/") for u in upstreams]
        self.upstreams: list[Engine] = []
        self.router: Router | None = None
        self._client: Client | None = None  # the engines' one client, routed by ``router``
        self._generator: Client | None = None  # the one generations go through (see startup)
        self._engine_http: httpx2.AsyncClient | None = None  # its pool, the router's transport
        self.metrics = ServerMetrics(
            self.scheduler,
            lambda: [u.healthy for u in self.upstreams],
            lambda: self.router.failovers if self.router is not None else 0,
            self._stream_gauges,
            lambda: self.fleet,
        )
        self.stall = StallPolicy(
            True, stall_timeout=config.stall_seconds, max_backlog_bytes=config.buffer_bytes
        )
        self.flow = FlowControl(high_water_bytes=config.buffer_bytes)
        self._models: tuple[float, list[dict[str, Any]]] | None = None
        self._live: dict[str, LiveStream] = {}
        self.quotas: Quotas | SharedQuotas = Quotas()
        self.link: FleetLink | None = None
        self.fleet: FleetAdmission | None = None
        if config.state is not None:
            self.link = FleetLink(
                config.state,
                fleet=config.fleet or fleet_name(self._urls),
                replica=secrets.token_hex(6),
            )
            self.quotas = SharedQuotas(self.link, degraded_share=config.degraded_share)
        self.shared = None if self.link is None else SharedStreams(self.link, seconds=config.replay_seconds)
        self._tg: TaskGroup | None = None  # the server's own tasks (from the lifespan)
        tel = Telemetry.of(telemetry)
        self.telemetry = None if tel is None else tel.for_server()

    # ---- life ------------------------------------------------------------------------

    async def startup(self) -> None:
        """Make the engines' client (routed, :mod:`._route`) and a control client per
        engine, and learn the slot count (unless configured)."""
        key = self._upstream_key or ""
        for i, url in enumerate(self._urls):
            # an engine not configured is known by its answers (llama-server's /props slots)
            # (a control client sends no generation: no priority field to warn about)
            named = (
                None
                if self._engine.name == "self-hosted"
                else dataclasses.replace(self._engine, priority=None)
            )
            control = Client(base_url=url, backend="messages", api_key=key, engine=named)
            self.upstreams.append(Engine(i, url, control))
        self.router = Router(self.upstreams, self._transport, on_health=self._health_changed)
        self._engine_http = httpx2.AsyncClient(transport=self.router)
        self._client = Client(
            base_url="http://engine",  # the router sends each request to its engine
            backend="messages",
            api_key=key,
            http_client=self._engine_http,
            scheduler=self.scheduler,
            stall=self.stall,
            flow=self.flow,
            on_metrics=self._observe,
            # the server sums the engines' slots itself, and resumes its streams itself;
            # vLLM's priority field goes only with generations (below)
            engine=without_probes(dataclasses.replace(self._engine, priority=None)),
            telemetry=self.telemetry or False,
        )
        self._generator = self._client
        if self._engine.priority == "body":
            # vLLM's /v1/messages drops the priority field; its chat completions take it:
            # generations go that way (the same scheduler and pool; counting and
            # tokenizing stay on the Messages client). A continuation there extends the
            # assistant message instead of answering it.
            self._generator = Client(
                base_url="http://engine/v1",
                backend="openai",
                api_key=key,
                http_client=self._engine_http,
                scheduler=self.scheduler,  # (its dispatcher, and the metrics hook, are shared)
                stall=self.stall,
                flow=self.flow,
                engine=without_probes(self._engine),
                telemetry=self.telemetry or False,
                resume_extra_body={"continue_final_message": True, "add_generation_prompt": False},
            )
        if self.config.slots is None:
            for u in self.upstreams:
                u.slots = await u.client.probe_slots()
            self._health_changed()
        if self.link is not None:
            self.fleet = FleetAdmission(
                self.link,
                Dispatcher.of(self.scheduler),
                lambda: self.scheduler.slots or 1,
                ttl=self.config.lease_seconds,
                degraded_share=self.config.degraded_share,
            )

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

    @property
    def generator(self) -> Client:
        """The client generations go through: :attr:`client`, but for an engine that takes
        vLLM's priority field, its OpenAI API (its ``/v1/messages`` drops the field)."""
        if self._generator is None:
            raise RuntimeError("the server has not started")
        return self._generator

    def _router(self) -> Router:
        if self.router is None:
            raise RuntimeError("the server has not started")
        return self.router

    async def shutdown(self) -> None:
        if self.fleet is not None:
            await self.fleet.leave()
        if self.link is not None:
            self.link.close()
        for u in self.upstreams:
            await u.client.aclose()
        if self._generator is not None and self._generator is not self._client:
            await self._generator.aclose()
        if self._client is not None:
            await self._client.aclose()
        if self._engine_http is not None:
            await self._engine_http.aclose()

    def _observe(self, m: RequestMetrics) -> None:
        self.metrics.observe(m)

    def _stream_gauges(self) -> StreamGauges:
        gone = [s for s in self._live.values() if not s.attached]
        return StreamGauges(
            attached=len(self._live) - len(gone),
            detached=len(gone),
            held_bytes=sum(s.held_bytes for s in gone),
            in_flight=tuple(u.in_flight for u in self.upstreams),
        )

    async def _health_loop(self) -> None:
        async with httpx2.AsyncClient(timeout=HEALTH_INTERVAL, transport=self._transport) as http:
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
            if self.fleet is not None:
                tg.start_soon(self.fleet.run)
            if self.shared is not None:
                tg.start_soon(self.shared.run)
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
        status: list[int] = [0]
        timeout = self.config.send_timeout

        async def tracked(message: Message) -> None:
            """``send``, bounded: a client that stops reading holds nothing for long. Every
            answer says what answers (``seam-server``), so a client knows it schedules."""
            if message["type"] == "http.response.start":
                started[0] = True
                status[0] = int(message["status"])
                message = {**message, "headers": [*message.get("headers", ()), _SERVER_HEADER]}
            try:
                with anyio.fail_after(timeout):
                    await send(message)
            except TimeoutError:
                raise WriteTimeout(f"a write to the client took over {timeout:g} s") from None

        span = self._span(scope)
        if span is None:
            await self._routed(scope, receive, tracked, started)
            return
        failure: BaseException | None = None
        try:
            with span.current():
                await self._routed(scope, receive, tracked, started)
        except BaseException as e:
            failure = e
            raise
        finally:
            span.end(status[0] or None, failure)

    def _span(self, scope: Scope) -> ServerTrace | None:
        """The request's span, for the API's routes, when telemetry is on."""
        tel = self.telemetry
        path = scope["path"]
        if tel is None or not (path in _TRACED or path.startswith("/v1/models/")):
            return None
        try:
            return tel.server_span(
                header_map(scope), path if path in _TRACED else "/v1/models/{id}", scope["method"]
            )
        except Exception:  # telemetry never fails a request
            log.exception("a request's span could not be started")
            return None

    async def _routed(self, scope: Scope, receive: Receive, send: Send, started: list[bool]) -> None:
        """``_route``, its errors answered (see ``__call__``)."""
        try:
            await self._route(scope, receive, send)
            return
        except HTTPError as e:
            failed = e
        except OSError:
            return  # the client went away
        except WriteTimeout as e:
            log.info("%s: its response was ended", e)  # the connection closes unfinished
            return
        except Exception:
            log.exception("unexpected error")
            failed = HTTPError(500, "api_error", "internal server error")
        if not started[0]:  # in the error shape of the route's protocol
            openai = scope["path"] == "/v1/chat/completions"
            body = openai_error_body(failed) if openai else error_body(failed.error_type, failed.message)
            await send_json(send, failed.status, body, failed.headers)

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
            "/v1/seam": ("GET", self._capabilities),
        }
        route = routes.get(path)
        if route is None and path.startswith("/v1/models/") and len(path) > len("/v1/models/"):
            route = ("GET", self._get_model)  # a model id may hold slashes (org/name)
        if route is None and path.startswith(STREAMS_PATH) and len(path) > len(STREAMS_PATH):
            route = ("DELETE", self._delete_stream)
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

    async def _delete_stream(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        """``DELETE /v1/streams/<id>``: the client is done with a kept stream (it left it
        before its end and will not come back): its generation stops and its slot, route
        and memory are freed now, not after ``replay_seconds``."""
        sid = scope["path"][len(STREAMS_PATH) :]
        live = self._live.get(sid)
        if live is None or live.tenant != who.tenant:
            raise HTTPError(404, "not_found_error", f"no stream {sid!r} kept here (ended, expired, unknown)")
        self._end(live)
        self.metrics.deleted.inc()
        await send_json(send, 200, {"id": sid, "type": "stream_deleted"})

    async def _capabilities(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        """``GET /v1/seam``: this server schedules for its clients (:mod:`._seam`)."""
        await send_json(send, 200, capabilities(self.config, self.scheduler, who))

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
        return acting_for(p, headers.get(TENANT_HEADER))

    async def _body(self, receive: Receive) -> tuple[dict[str, Any], int]:
        """The request's JSON object and its size in bytes."""
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
        return data, size

    def _tier(self, scope: Scope, data: dict[str, Any], who: Principal) -> Tier:
        """The tier the request asks for (taking ``priority`` out of the body), within the
        key's ``max_tier``."""
        asked = priority(header_map(scope).get(PRIORITY_HEADER), data.pop("priority", None))
        if asked is None:
            return who.tier
        try:
            tier = self.scheduler.tiers.resolve(asked)
        except UnknownTierError:
            known = ", ".join(repr(t.name) for t in self.scheduler.tiers)
            raise HTTPError(
                400, "invalid_request_error", f"priority: unknown tier (known: {known})", param="priority"
            ) from None
        if tier.rank < who.max_tier.rank:
            raise HTTPError(403, "permission_error", f"this key may not use the tier {tier.name!r}")
        return tier

    def _route_for(self, scope: Scope) -> str:
        """A route (an engine, chosen least-loaded with conversation affinity) for one
        request; closed with ``self.router.close`` when the request is over."""
        return self._router().open(header_map(scope).get("x-conversation-id"))

    async def _meter(self, who: Principal, tokens: int) -> dict[str, str]:
        """Take one request of ``tokens`` from the tenant's quota (429 past it); the
        rate-limit headers of the answer."""
        if not (who.requests_per_minute or who.tokens_per_minute):
            return {}
        args = (who.account, anyio.current_time())  # the key's quota, whichever end tenant a gateway names
        rpm, tpm = who.requests_per_minute, who.tokens_per_minute
        if isinstance(self.quotas, SharedQuotas):
            verdict = await self.quotas.check(*args, rpm=rpm, tpm=tpm, tokens=tokens)
        else:
            verdict = self.quotas.check(*args, rpm=rpm, tpm=tpm, tokens=tokens)
        if not verdict.ok:
            self.metrics.rejected.labels("quota").inc()
            raise HTTPError(429, "rate_limit_error", "this key's quota is used up for now", verdict.headers)
        return verdict.headers

    async def _scheduled(self, tier: Tier, who: Principal, cost: Cost, work: Callable[[], Awaitable[T]]) -> T:
        """Engine work that is not a generation (counting, tokenizing) waits for a slot
        like one: a tokenizer pass over megabytes is engine time too."""
        flight = self.client.dispatcher.flight(priority=tier, tenant=who.tenant, cost=cost, preemptible=False)
        await flight.admit()  # a cancelled wait leaves the queue
        ok = False
        try:
            result = await work()
            ok = True
            return result
        finally:
            flight.finish(ok=ok)

    async def _messages(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        data, size = await self._body(receive)
        streaming = data.pop("stream", False) is True
        tier = self._tier(scope, data, who)
        check_messages(data, max_tokens=True)
        framer = MessagesFramer() if streaming else None
        await self._serve(scope, receive, send, who, tier, data, size, framer, message_to_wire)

    async def _chat(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        raw, size = await self._body(receive)
        model = raw.get("model")
        if not isinstance(model, str):
            raise HTTPError(400, "invalid_request_error", "model: a model name is required", param="model")
        try:
            data = chat_to_messages(raw)
        except ChatError as e:
            raise HTTPError(400, "invalid_request_error", str(e), param=e.param) from None
        tier = self._tier(scope, {"priority": raw.get("priority")}, who)
        check_messages(data, max_tokens=True)
        framer: Framer | None = None
        if raw.get("stream") is True:
            opts = raw.get("stream_options")
            include = isinstance(opts, Mapping) and opts.get("include_usage") is True
            framer = ChatFramer(ChunkWriter(model, include_usage=include))
        await self._serve(
            scope, receive, send, who, tier, data, size, framer, lambda msg: completion(msg, model)
        )

    async def _serve(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        who: Principal,
        tier: Tier,
        data: dict[str, Any],
        size: int,
        framer: Framer | None,
        render: Callable[[Any], object],
    ) -> None:
        """Admit and run one checked request: streamed through ``framer``, or whole
        through ``render`` (the message to the protocol's JSON)."""
        quota: dict[str, str] = {}
        if who.requests_per_minute or who.tokens_per_minute:
            quota = await self._meter(who, (await request_cost(data)).tokens)
        route = self._route_for(scope)
        if framer is not None:  # its producer closes the route (it outlives this connection)
            await self._stream(scope["path"], route, data, size, tier, who, receive, send, framer, quota)
            return
        try:
            msg = await self._call(
                receive,
                self.generator.create(
                    priority=tier, tenant=who.tenant, extra_headers={ROUTE_HEADER: route}, extra_body=data
                ),
            )
            await send_json(send, 200, render(msg), quota)
        finally:
            self._router().close(route)

    async def _call(self, receive: Receive, work: Awaitable[T]) -> T:
        """Run ``work`` (queued, then sent upstream) and give up if the client leaves: a
        request still queued leaves the queue, one sent upstream is cancelled there."""
        result: list[T] = []
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
            if inspect.iscoroutine(work):
                work.close()  # cancelled before it started: never awaited, nothing to undo
            raise OSError("the client disconnected")
        return result[0]

    async def _stream(
        self,
        path: str,
        route: str,
        data: dict[str, Any],
        size: int,
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
            route=path,
            request_bytes=size,
            now=anyio.current_time(),
        )
        self._live[sid] = live
        if (
            self.shared is not None
            and self._tg is not None
            and self.fleet is not None
            and not self.fleet.degraded
        ):
            self.shared.up = True
            meta = {
                "tenant": who.tenant,
                "route": path,
                "tier": tier.name,
                "request": orjson.dumps(data).decode(),
            }
            self.shared.share(live, {**meta, **framer_meta(framer)})
        if self._tg is not None:
            self._tg.start_soon(self._produce, live, route, data, tier, who.tenant, framer)
            await self._attach(live, 0, receive, send, headers, first=True)
            return
        async with anyio.create_task_group() as tg:  # served without a lifespan: no reattach
            tg.start_soon(self._produce, live, route, data, tier, who.tenant, framer)
            try:
                await self._attach(live, 0, receive, send, headers, first=True)
            finally:
                self._end(live)

    async def _produce(
        self,
        live: LiveStream,
        route: str,
        data: dict[str, Any],
        tier: Tier,
        tenant: str,
        framer: Framer,
        after: tuple[MessageState, int] | None = None,
    ) -> None:
        """Read the engine stream into ``live``, at most its lead ahead of the client.
        The stream's resumes go through the same route, so they follow it to another
        engine when its engine fails (:mod:`._route`). ``after``: the message so far of a
        stream taken over from a dead replica and the tokens it used, continued by
        prefill and spliced onto it."""
        shared = self.shared

        def push(wire: Callable[[], bytes], frames: list[bytes]) -> None:
            """``frames`` to the stream; and while it is shared, the event (in the Messages
            wire format: made only then, not for every token of every stream) to the store."""
            pushed = []
            for frame in frames:
                pushed.append(with_id(frame, live.sid, live.next))
                live.push(pushed[-1])
            if shared is not None and live.durable is not None:
                shared.append(live, wire(), pushed)

        try:
            with live.scope:
                params, splice = data, None
                if after is not None:
                    state, used = after
                    if state.stopped:
                        return  # the message was whole: only its end was not stored
                    if state.stop_reason is not None:  # ended: only its message_stop was lost
                        stop = MessageStopEvent()
                        push(functools.partial(_wire, stop), framer.frames(stop))
                        return
                    if thought(state.message()) or (
                        state.open is not None and not isinstance(state.open.start, TextBlock)
                    ):
                        # A prefill carries text only: its client gets the end, not a
                        # continuation that would repeat a tool call, nor silence.
                        err = HTTPError(
                            500,
                            "api_error",
                            "the stream's replica stopped and the stream cannot be continued elsewhere "
                            "(it holds a tool call or a thinking block)",
                        )
                        push(functools.partial(MessagesFramer().error, err), [framer.error(err)])
                        return
                    echo = await self.generator.echoes_prefill()
                    cont = continuation(data, state.text(), echo=echo, used_tokens=used)
                    params, splice = cont.params, Splicer(state, cont.repeat, used)
                s = self.generator.stream(
                    priority=tier, tenant=tenant, extra_headers={ROUTE_HEADER: route}, extra_body=params
                )
                try:
                    async with s:  # queued, admitted, sent upstream; closed under a shield on exit
                        live.opened.set()
                        try:
                            given: list[float] = []  # the detaches the slot was given up for

                            def give_way() -> None:
                                """Nobody reads the stream and a request waits for a
                                slot: the slot goes to it now, not after the lead and
                                the engine stream's buffer fill. The stream then waits
                                for its client (a client back for it gets the rest,
                                continued when re-admitted)."""
                                since = live.unread
                                if (
                                    since is not None
                                    and since not in given
                                    and self._slot_wanted()
                                    and s.preempt()
                                ):
                                    given.append(since)

                            async def reader_back() -> None:
                                """A stream nobody reads, paused (given way, preempted by
                                the scheduler, stalled), is re-admitted only for a client."""
                                while live.unread is not None:
                                    await live.changed()

                            s.hold_resumes(reader_back)

                            async for ev in s:
                                for e in [ev] if splice is None else splice([ev]):
                                    push(functools.partial(_wire, e), framer.frames(e))
                                give_way()
                                while live.ahead():  # held as far ahead as it may be
                                    if live.unread is None or live.unread in given or not s.holds_slot:
                                        await live.changed()
                                        continue
                                    with anyio.move_on_after(_GIVE_WAY_POLL):
                                        await live.changed()
                                    give_way()
                        except SDKError as e:  # after the first byte: an error frame
                            err = self._translate(e)
                            push(functools.partial(MessagesFramer().error, err), [framer.error(err)])
                except SDKError as e:  # before it: the error answer
                    if after is not None:
                        err = self._translate(e)
                        push(functools.partial(MessagesFramer().error, err), [framer.error(err)])
                    live.failure = e
        except Exception as e:
            log.exception("a stream's producer failed")
            live.failure = e
        finally:
            self._router().close(route)
            live.finish()
            if shared is not None:
                shared.finish(live)

    async def _attach(
        self,
        live: LiveStream,
        start: int,
        receive: Receive,
        send: Send,
        headers: Mapping[str, str] | None = None,
        *,
        first: bool = False,
    ) -> None:
        """Send ``live``'s frames from index ``start`` until it ends or the client leaves.

        The connection counts as attached while it waits for the stream to open (its
        request queued, or admitted and not yet answered). A ``first`` connection that
        leaves before the response's head never learnt the stream's id, so nobody can
        come back for it: the stream is ended at once (a queued request leaves the queue,
        an admitted one is cancelled, freeing its slot, route and memory). One that leaves
        later leaves it kept for a reattach within ``replay_seconds``; one that stops
        reading for ``send_timeout`` ends it."""
        live.attach()
        shown = False  # the head, with the stream's id, went out
        failure: list[Exception] = []
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch_disconnect, receive, tg.cancel_scope)
                try:
                    await live.opened.wait()
                    if live.failure is None or live.next > 0:
                        await self._send_head(live, send, headers or {})
                        shown = True
                        await self._send_frames(live, start, send)
                except Exception as e:  # raised after the task group, not as a group
                    failure.append(e)
                tg.cancel_scope.cancel()
        finally:
            live.detach(anyio.current_time())
            if (first and not shown) or any(isinstance(e, WriteTimeout) for e in failure):
                self._end(live)
            else:
                self.sweep(anyio.current_time())
        if failure:
            raise failure[0]
        if live.failure is not None and live.next == 0:
            raise self._translate(live.failure)

    async def _send_head(self, live: LiveStream | str, send: Send, headers: Mapping[str, str]) -> None:
        sid = live if isinstance(live, str) else live.sid
        hdrs = [
            (b"content-type", b"text/event-stream; charset=utf-8"),
            (b"cache-control", b"no-cache"),
            (STREAM_ID_HEADER.encode(), sid.encode()),
        ]
        hdrs += [(k.encode(), v.encode()) for k, v in headers.items()]
        await send({"type": "http.response.start", "status": 200, "headers": hdrs})

    async def _send_frames(self, live: LiveStream, start: int, send: Send) -> None:
        i = start
        while True:
            while i < live.sendable:
                frame = live.frame(i)
                if frame is None:  # trimmed: cannot happen to the frames not yet sent
                    raise RuntimeError("a frame to send was dropped")
                await send({"type": "http.response.body", "body": frame, "more_body": True})
                i += 1
                live.advance(i)
            if live.done and i >= live.next:
                break
            await live.changed()
        await send({"type": "http.response.body", "body": live.done_frame, "more_body": False})

    async def _reattach(self, scope: Scope, receive: Receive, send: Send, who: Principal, last: str) -> None:
        """A client back after a dropped connection: the frames after ``last``, on the
        route (so in the protocol) the stream was started on."""
        sid, n = event_id(last)
        live = self._live.get(sid)
        if live is None and self.shared is not None:
            await self._reattach_shared(scope, receive, send, who, sid, n)
            return
        if live is None or live.tenant != who.tenant:
            raise HTTPError(404, "not_found_error", f"no stream {sid!r} to reattach to (expired or unknown)")
        if live.route != scope["path"]:
            raise HTTPError(
                400,
                "invalid_request_error",
                f"stream {sid!r} was started on {live.route}; reattach to it there",
            )
        start = n + 1
        if start < live.base and self.shared is not None and live.durable is not None:
            await self._reattach_shared(scope, receive, send, who, sid, n)  # the store keeps more
            return
        if start < live.base or start > live.next:
            raise HTTPError(
                404, "not_found_error", f"event {last!r} is no longer kept; the stream cannot continue"
            )
        self.metrics.reattached.inc()
        await self._attach(live, start, receive, send)

    async def _reattach_shared(
        self, scope: Scope, receive: Receive, send: Send, who: Principal, sid: str, n: int
    ) -> None:
        """A stream another replica holds, or held: its frames from Valkey, then the new
        ones as they are stored; if its replica died, this one takes it over."""
        shared = self.shared
        assert shared is not None
        try:
            meta = await shared.meta(sid)
        except FleetUnavailable:
            meta = None
        if meta is None or meta.get("tenant") != who.tenant:
            raise HTTPError(404, "not_found_error", f"no stream {sid!r} to reattach to (expired or unknown)")
        if meta.get("route") != scope["path"]:
            raise HTTPError(
                400,
                "invalid_request_error",
                f"stream {sid!r} was started on {meta.get('route')}; reattach to it there",
            )
        self.metrics.reattached.inc()
        done_frame = framer_for(meta).done()
        after = f"{n + 1}-0"  # frame n's entry
        shown = False
        seen = -math.inf
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_disconnect, receive, tg.cancel_scope)
            while True:
                if anyio.current_time() - seen >= 1.0:  # the owner keeps a stream that is followed
                    seen = anyio.current_time()
                    with contextlib.suppress(FleetUnavailable):
                        await shared.seen(sid)
                try:
                    got = await (shared.read(sid, after) if not shown else shared.wait(sid, after))
                except FleetUnavailable as e:
                    if not shown:
                        raise HTTPError(
                            503, "overloaded_error", "the stream's store is unreachable; retry"
                        ) from e
                    break  # the connection ends unfinished: the client reattaches again
                if not shown:
                    if got.frames and got.first != n + 1:
                        raise HTTPError(404, "not_found_error", f"event {sid}:{n} is no longer kept")
                    await self._send_head(sid, send, {})
                    shown = True
                for frame in got.frames:
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
                after = got.last_id
                if got.ended:
                    await send({"type": "http.response.body", "body": done_frame, "more_body": False})
                    break
                if got.frames or got.events:
                    continue
                claimed = await self._claimed(sid, meta)
                if claimed is not None:
                    try:
                        await self._send_frames(claimed, got.first, send)
                    finally:
                        claimed.detach(anyio.current_time())
                    break
            tg.cancel_scope.cancel()

    async def _claimed(self, sid: str, meta: Mapping[str, str]) -> LiveStream | None:
        """Take the stream over if its replica is dead (else None): rebuild its message
        from the stored events and continue it in a producer of this replica's."""
        shared = self.shared
        assert shared is not None and self._tg is not None
        try:
            if await shared.claim(sid) != 1:
                return None
            stored = await shared.read(sid, count=1 << 20)
        except FleetUnavailable:
            return None
        live = self._live.get(sid)
        if live is not None:
            return live  # another connection took it over here first
        if stored.first != 0 and stored.frames:
            log.warning("stream %s cannot be continued: its start is no longer stored", sid)
            return None
        try:
            state, framer, used = rebuild(meta, stored.events)
        except NotContinuable as e:
            log.warning("stream %s cannot be continued: %s", sid, e)
            return None
        cfg = self.config
        request = meta.get("request", "{}")
        live = LiveStream(
            sid,
            meta.get("tenant", ""),
            keep_bytes=cfg.replay_bytes,
            lead_bytes=cfg.buffer_bytes,
            done_frame=framer.done(),
            route=meta.get("route", "/v1/messages"),
            request_bytes=len(request),
            now=anyio.current_time(),
        )
        for frame in stored.frames:
            live.push(frame)
        live.opened.set()
        self._live[sid] = live
        shared.adopt(live, stored.last_id)
        try:
            tier = self.scheduler.tiers.resolve(meta.get("tier"))
        except UnknownTierError:
            tier = self.scheduler.tiers.default
        data = orjson.loads(request)
        log.info("took over stream %s after %d frames from a replica that died", sid, live.next)
        live.attach()  # the connection that found it
        self._tg.start_soon(
            self._produce, live, self._router().open(None), data, tier, live.tenant, framer, (state, used)
        )
        return live

    async def _janitor(self) -> None:
        """Drop kept streams nobody came back for (stopping their producers), and keep
        what kept streams hold within the bounds (:meth:`sweep`)."""
        while True:
            await anyio.sleep(1.0)
            if self.shared is not None:
                # A client may follow a stream of ours through another replica: there it
                # is, as far as ending the stream goes.
                alone = [s for s in self._live.values() if not s.attached and s.durable is not None]
                try:
                    followed = await self.shared.followed([s.sid for s in alone]) if alone else set()
                except FleetUnavailable:
                    followed = set()
                now = anyio.current_time()
                for live in alone:
                    if live.sid in followed:
                        live.idle_since = now
            self.sweep(anyio.current_time())

    def _slot_wanted(self) -> bool:
        """A request waits, and not for a rate or a quota: every slot is taken."""
        sch = self.scheduler
        return sch.waiting > 0 and sch.running >= sch.capacity()

    def _end(self, live: LiveStream) -> None:
        """Stop ``live``'s producer (its engine request leaves the queue or is cancelled,
        its slot and route freed) and forget the stream."""
        live.scope.cancel()
        self._live.pop(live.sid, None)

    def sweep(self, now: float) -> None:
        """End the streams with no client attached that are past their bounds
        (:func:`~._live.overdue`)."""
        cfg = self.config
        for live in overdue(
            self._live.values(),
            now,
            seconds=cfg.replay_seconds,
            max_streams=cfg.replay_max_streams,
            total_bytes=cfg.replay_total_bytes,
        ):
            self._end(live)

    async def _count_tokens(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        data, _ = await self._body(receive)
        tier = self._tier(scope, data, who)
        check_messages(data, max_tokens=False)
        cost = await request_cost(data)
        quota = await self._meter(who, cost.input_tokens)
        route = self._route_for(scope)
        try:
            n = await self._call(
                receive,
                self._scheduled(
                    tier,
                    who,
                    Cost(cost.input_tokens, 0),
                    lambda: self.client.count_tokens(extra_headers={ROUTE_HEADER: route}, extra_body=data),
                ),
            )
        finally:
            self._router().close(route)
        await send_json(send, 200, {"input_tokens": n.input_tokens}, quota)

    async def _tokenize(self, scope: Scope, receive: Receive, send: Send, who: Principal) -> None:
        """An engine's ``/tokenize``, in llama-server's shape (``content``, ``with_pieces``)
        or vLLM's (``prompt``, ``model``): no special tokens are added, and special-token
        strings are ordinary text where the engine allows it. The answer has ``tokens``
        (ids, or ``{"id", "piece"}`` objects with ``with_pieces`` where the engine gives
        pieces) and ``count``. Metered and scheduled like a generation's prompt: the
        quota's tokens are estimated at four characters a token (an exact count is the
        engine work being paid for)."""
        data, _ = await self._body(receive)
        tier = self._tier(scope, data, who)
        text = data.get("content", data.get("prompt"))
        if not isinstance(text, str):
            raise HTTPError(
                400, "invalid_request_error", "content: the text to tokenize (a string) is required"
            )
        model = data.get("model")
        pieces = data.get("with_pieces") is True
        estimate = len(text) // 4 + 1
        quota = await self._meter(who, estimate)
        route = self._route_for(scope)
        try:
            ids, got = await self._call(
                receive,
                self._scheduled(
                    tier,
                    who,
                    Cost(estimate, 0),
                    lambda: self.client.tokenize_pieces(
                        text,
                        model=model if isinstance(model, str) else None,
                        pieces=pieces,
                        extra_headers={ROUTE_HEADER: route},
                    ),
                ),
            )
        finally:
            self._router().close(route)
        tokens: list[Any] = (
            [{"id": i, "piece": p} for i, p in zip(ids, got, strict=True)] if got is not None else ids
        )
        await send_json(send, 200, {"tokens": tokens, "count": len(ids)}, quota)

    async def _known_models(self) -> list[dict[str, Any]]:
        """The engines' models, asked at most every 30 s, each with its context window
        where the engines tell it (the smallest, when engines differ: a request may go to
        any of them), as vLLM's ``max_model_len``: a session through the server learns
        its window as it would from the engine."""
        now = anyio.current_time()
        if self._models is None or now - self._models[0] > 30.0:
            seen: dict[str, dict[str, Any]] = {}
            for u in self.upstreams:
                try:
                    for m in await u.client.models(timeout=10.0):
                        entry = seen.setdefault(m.id, model_entry(m.id, m.display_name))
                        # the listing's own window, else what the engine says elsewhere
                        window = m.context_window or await u.client.context_window(m.id)
                        if window is not None:
                            entry["max_model_len"] = min(window, entry.get("max_model_len", window))
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
        if isinstance(e, InvalidRequestError):  # refused by the engine client's own check
            return HTTPError(400, "invalid_request_error", str(e), param=e.param)
        if isinstance(e, RequestRejectedError):
            self.metrics.rejected.labels("queue full" if "queue" in e.reason else "cost").inc()
            status = 503 if "queue" in e.reason else 429
            return HTTPError(
                status,
                "overloaded_error" if status == 503 else "rate_limit_error",
                e.reason,
                {"retry-after": "1"},
            )
        if isinstance(e, RedirectError):  # the engine's own URLs are no client's to follow
            return HTTPError(502, "api_error", "the upstream server answered with a redirect")
        if isinstance(e, BadRequestError) and (e.status or 500) >= 500:
            # the engine's 500 for input its model does not take (an image without a
            # projector): a client must not retry it
            return HTTPError(400, "invalid_request_error", self._clean(e.message))
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


def _wire(ev: Event) -> bytes:
    """An event as a Messages SSE frame: how the shared store keeps a stream's events."""
    return sse_frame(*event_to_wire(ev))
