"""The client: ``async with Client() as c`` -> ``create``, ``stream``, ``map``,
``count_tokens``, ``tokenize``, ``models``.

The client owns one ``httpx2.AsyncClient`` (pooling; HTTP/2 through httpx2's ``http2``
extra). Its parts, each in a module of this package:

- sending, with retries before the first byte and bounded reads (:mod:`._send`);
- the credentials, masked by value wherever redaction runs (:mod:`._secrets`);
- what differs by engine (:mod:`._profile`) and what it asks an engine besides
  generations (:mod:`._engine`: slots, ``/tokenize``, kept conversation streams);
- a stream's resumes (:mod:`._resume`): reattach, replay or continuation by prefill;
- a request's cost estimate (:mod:`._cost`) and the model catalogue (:mod:`._catalog`).

Configuration: ``api_key`` (else ``ANTHROPIC_API_KEY``; ``OPENAI_API_KEY`` for the
``openai`` backend), ``base_url`` (else ``ANTHROPIC_BASE_URL``, else the hosted API; for
``backend="openai"``, ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``).

Logging (the ``sdk`` logger): each response (method, path, status, request id, attempt)
at DEBUG; retries, re-queues and resume decisions at INFO; never a key or a body.
The backend is named (``"messages"`` or ``"openai"``) or detected from the base URL.

Every ``create`` and ``stream`` goes through the client's :class:`~sdk.scheduler.Scheduler`
(its :class:`~sdk.scheduler.Dispatcher` drives it): it is admitted by tier and tenant,
paced by the rate limits the responses report, and a 429/529 before the first byte sends
it back to the queue instead of failing. On a self-hosted server a preemptible stream
(the ``batch`` tier by default) may be paused for a higher tier and resumed by
continuation.

Telemetry (:mod:`sdk.telemetry`): with ``telemetry=True``, or by default when the
application has configured an OpenTelemetry SDK, each request is a span with the GenAI
conventions' attributes, its waits in the queue are child spans, its preemptions and
resumes are events, and its ``traceparent`` goes with every request it sends.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Literal, Unpack

import anyio
import httpx2

from .._errors import APIConnectionError, NotFoundError, SDKError, StreamProtocolError
from ..http import RetryBudget, RetryPolicy, StaleConnectionResend
from ..scheduler import Dispatcher, Flight, MetricsHook, Scheduler, Tier, TierMetrics
from ..stream import FlowControl, Message, MessageStream, StallPolicy
from ..telemetry import RequestTrace, Telemetry, TelemetryArg
from ..tokens import checked_text
from ._backends import HOSTED_HOSTS, Backend, BackendName, MessagesBackend, OpenAIBackend, configured
from ._batches import BATCH_MAX_REQUESTS, BatchMapRun, BatchPolling
from ._catalog import ModelInfo, TokenCount, known_window, models_from
from ._cost import estimate_input_tokens, request_cost
from ._engine import EngineState, Pieces, probe_slots, tokenize, window_from_props
from ._map import MapProgress, MapRun
from ._params import CountTokensParams, CreateParams, merged_request
from ._profile import EngineName, EngineProfile, engine_profile, provider_name
from ._resume import FlightObserver, Resumer, prefill_refusals
from ._secrets import Credentials, without_userinfo
from ._send import Sender, TimeoutArg, json_object
from ._stream import Stream

__all__ = ["Client", "Priority", "TimeoutArg"]

log = logging.getLogger("sdk")

DEFAULT_TIMEOUT = httpx2.Timeout(600.0, connect=10.0)
USER_AGENT = "seam-llm/0.1.0"
# How long closing waits for open streams to stop their server-side generation.
_CLOSE_GRACE = 6.0

Priority = str | int | Tier | None


class Client:
    """An async client for Messages-API and OpenAI-compatible servers; see the module doc.

    ``stall``: the stream's stall policy (default: enabled for a self-hosted base URL,
    where a held slot blocks other users, disabled for the hosted API, where a resume
    re-bills the prompt). ``prefill_echo``: whether the server repeats an assistant
    prefill at the start of its answer (llama-server does); ``None`` takes the engine
    profile's word, else asks the server's model list once, at the first resume.
    ``resume_extra_body``: fields only the continuation request gets (vLLM's OpenAI
    server needs ``{"continue_final_message": True, "add_generation_prompt": False}`` to
    continue a trailing assistant message instead of answering it). ``engine``: the
    engine's profile (:mod:`sdk.client`), else known by host or learnt once.
    ``telemetry``: OpenTelemetry spans and metrics (:mod:`sdk.telemetry`); ``None`` (the
    default) traces when an OpenTelemetry SDK is configured, ``False`` never.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        backend: BackendName | None = None,
        timeout: float | httpx2.Timeout = DEFAULT_TIMEOUT,
        idle_timeout: float | None = 60.0,
        retry: RetryPolicy | None = None,
        retry_budget: RetryBudget | None = None,
        default_headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        http2: bool = False,
        stall: StallPolicy | None = None,
        flow: FlowControl | None = None,
        prefill_echo: bool | None = None,
        resume_extra_body: Mapping[str, Any] | None = None,
        anthropic_version: str = "2023-06-01",
        scheduler: Scheduler | None = None,
        on_metrics: MetricsHook | None = None,
        metrics_window: int = 1000,
        engine: EngineName | EngineProfile | None = None,
        telemetry: TelemetryArg = None,
    ) -> None:
        if http_client is not None and not isinstance(http_client, httpx2.AsyncClient):
            raise TypeError(
                f"http_client must be an httpx2.AsyncClient, not {type(http_client).__module__}."
                f"{type(http_client).__qualname__} (httpx and httpx2 clients are not interchangeable)"
            )
        self.base_url, self.backend_name, api_key = configured(base_url, backend, api_key)
        self._backend: Backend = (
            OpenAIBackend() if self.backend_name == "openai" else MessagesBackend(anthropic_version)
        )
        url = httpx2.URL(self.base_url)
        credentials = Credentials(api_key, url.password)
        # Named first: an engine profile that is a hosted API is one whatever its host.
        profile = engine_profile(engine) if engine is not None else None
        # hosted: Anthropic's API (prompt-cache breakpoints, no prefill on newer models);
        # service: any hosted API, where nothing is self-hosted: no slot probe, no stall
        # cuts (a resume re-bills the prompt) and no preemption.
        host = url.host.lower()
        self.hosted = host == "api.anthropic.com"
        self._service = host in HOSTED_HOSTS or (profile is not None and profile.hosted)
        self.timeout = timeout if isinstance(timeout, httpx2.Timeout) else httpx2.Timeout(timeout)
        self.idle_timeout = idle_timeout
        self.retry = retry or RetryPolicy()
        self.retry_budget = retry_budget or RetryBudget()
        self.stall = stall or (StallPolicy.hosted() if self._service else StallPolicy.self_hosted())
        self.flow = flow
        self.prefill_echo = prefill_echo
        self.resume_extra_body = dict(resume_extra_body or {})
        self._own_http = http_client is None
        # Its own pool sends again a request that a kept-alive connection lost unread
        # (the server closed it at that moment): sdk.http. A client passed in keeps its
        # own transport, and the retry policy alone.
        http = http_client or httpx2.AsyncClient(
            timeout=self.timeout, transport=StaleConnectionResend(httpx2.AsyncHTTPTransport(http2=http2))
        )
        self._sender = Sender(
            self,
            http,
            base_url=self.base_url,
            # What reprs, names and messages show: a password in the URL (sent as basic
            # auth) never appears, and is masked wherever redaction runs.
            shown_url=without_userinfo(self.base_url),
            backend=self._backend,
            backend_name=self.backend_name,
            credentials=credentials,
            headers={
                "user-agent": USER_AGENT,
                "accept": "application/json",
                **self._backend.headers(None),
                **(default_headers or {}),
            },
        )
        self._live: set[Stream] = set()
        self._server_counts = True
        sched = scheduler if scheduler is not None else Scheduler()
        self._dispatch = Dispatcher.of(sched, window=metrics_window)
        if on_metrics is not None:
            self._dispatch.hooks.append(on_metrics)
        # What differs by engine (sdk.client): named, known by host, or learnt once.
        self._engine = EngineState(
            profile or (engine_profile("hosted") if self._service else None),
            slots_known=self._service or sched.slots is not None,
            models_path=self._backend.models_path,
        )
        self._refusals = prefill_refusals()  # models that refused an assistant prefill
        self.telemetry = Telemetry.of(telemetry)
        if profile is not None and profile.priority == "body" and self.backend_name == "messages":
            # (vLLM 0.32's /v1/messages drops the field in silence; measured in
            # tests/engines/test_vllm.py)
            log.warning(
                "vLLM's /v1/messages ignores the priority field; its OpenAI API takes it: "
                "Client(backend='openai', base_url='<vLLM>/v1', engine=%r)",
                profile.name,
            )
        self._host = url.host
        self._port = url.port or (443 if url.scheme == "https" else 80)

    def __repr__(self) -> str:
        key = self._sender.credentials.key
        return f"Client(base_url={self.display_url!r}, backend={self.backend_name!r}, api_key={key!r})"

    @property
    def display_url(self) -> str:
        """The base URL as messages and reprs show it: a password in it masked."""
        return self._sender.shown_url

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client: every open stream ends with :class:`APIConnectionError`."""
        sender = self._sender
        if sender.closed:
            return
        sender.closed = True
        live = list(self._live)
        for s in live:
            s._abort(APIConnectionError("the client was closed"))
        if live:
            # Each reader closes its response and, on a server that keeps streams
            # (llama-server), stops the generation there, which needs the pool still open.
            with anyio.move_on_after(_CLOSE_GRACE, shield=True):
                for s in live:
                    await s._closed()
        if self._own_http:
            with anyio.CancelScope(shield=True):
                await sender.http.aclose()
        sender.credentials.release()

    @property
    def scheduler(self) -> Scheduler:
        return self._dispatch.scheduler

    @property
    def dispatcher(self) -> Dispatcher:
        """The scheduler's async host: every request of this client is a
        :class:`~sdk.scheduler.Flight` of it. A scheduling server submits its other
        engine work (counting, tokenizing) through it too."""
        return self._dispatch

    def metrics(self) -> Mapping[str, TierMetrics]:
        """Per tier, over the last ``metrics_window`` finished requests: counts and
        p50/p90/p99 of queue time, TTFT, TPOT, ITL and E2EL, and output tokens/s."""
        return self._dispatch.metrics()

    # ---- the engine --------------------------------------------------------------------

    @property
    def engine(self) -> EngineProfile | None:
        """The engine's profile (:mod:`sdk.client`): named, known by host, or learnt before
        the first request (``None`` until then)."""
        return self._engine.profile

    @property
    def server_info(self) -> Mapping[str, Any] | None:
        """A scheduling server's capabilities (its ``GET /v1/seam``), once learnt."""
        return self._engine.server_info

    async def _learn_slots(self) -> None:
        await self._engine.learn(self._sender, self.scheduler)

    async def probe_slots(self) -> int | None:
        """The engine's slot count, asked now where its profile says (llama-server's
        ``/props``; ``None``: not said, or not reachable). The client's scheduler is not
        changed: a scheduling server sums its engines' slots with it. An engine not known
        yet is identified first (:mod:`sdk.client`)."""
        path = (await self._engine.identify(self._sender)).slots
        return None if path is None else await probe_slots(self._sender, path)

    async def echoes_prefill(self) -> bool:
        """Whether the server repeats an assistant prefill at the start of its answer
        (llama-server does): ``prefill_echo`` if given, else the engine profile's word,
        else learnt once from the model list."""
        if self.prefill_echo is None:
            profile = self._engine.profile
            said = profile.prefill_echo if profile is not None else None
            if said is None:
                try:
                    models = await self.models()
                except SDKError:
                    models = []
                said = any(m.owned_by == "llamacpp" for m in models)
            self.prefill_echo = said
        return self.prefill_echo

    # ---- scheduling --------------------------------------------------------------------

    async def _flight(
        self,
        params: Mapping[str, Any],
        tier: Tier,
        tenant: str | None,
        *,
        preempt: Callable[[], bool] | None = None,
        held: list[Flight] | None = None,
        asked: bool = True,
        trace: RequestTrace | None = None,
    ) -> Flight:
        """Submit a request to the scheduler and wait for its admission. ``preempt``
        pauses it for a higher tier (registered before it can be admitted, so no
        decision finds it missing); ``held`` receives the flight at once. ``asked``: the
        caller named the tier (only then does it go on the wire: else a scheduling
        server gives the key's own tier). ``trace``: the request's span, whose child
        span covers the wait."""
        await self._learn_slots()
        flight = self._dispatch.flight(
            priority=tier, tenant=tenant, cost=await request_cost(params), preemptible=preempt is not None
        )
        flight.asked = asked
        if preempt is not None:
            flight.on_preempt(preempt)
        if held is not None:
            held.append(flight)
        if trace is not None:
            trace.queued()
        await flight.admit()
        if trace is not None:
            trace.admitted()
        return flight

    def _provider(self) -> str:
        """The ``gen_ai.provider.name`` of this client's requests."""
        host = self._host.lower()
        if host == "api.anthropic.com":
            return "anthropic"
        if host == "api.openai.com":
            return "openai"
        profile = self._engine.profile
        return provider_name(profile.name if profile is not None else None)

    def _trace(
        self, request: Mapping[str, Any], tier: Tier, tenant: str | None, *, streaming: bool
    ) -> RequestTrace | None:
        """The request's span, when telemetry is on."""
        tel = self.telemetry
        if tel is None:
            return None
        try:
            return tel.request(
                request,
                provider=self._provider,
                address=self._host,
                port=self._port,
                streaming=streaming,
                tier=tier.name,
                tenant=tenant,
            )
        except Exception:  # telemetry never fails a request
            log.exception("a request's span could not be started")
            return None

    # ---- requests ----------------------------------------------------------------------

    async def create(
        self,
        *,
        priority: Priority = None,
        tenant: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: TimeoutArg = None,
        **params: Unpack[CreateParams],
    ) -> Message:
        """One non-streaming request; every keyword but the five above goes into the body.

        ``priority``: a tier name or an integer priority (lower first); ``tenant``: whose
        request it is, for fair sharing inside the tier. A request waiting in the queue
        is cancelled with its task."""
        tier = self.scheduler.tiers.resolve(priority)
        request = merged_request(params, extra_body, max_tokens=self.backend_name == "messages")
        body = self._backend.body(request, stream=False)
        self._sender.check_open()
        trace = self._trace(request, tier, tenant, streaming=False)
        if trace is not None:
            extra_headers = trace.headers(extra_headers)
        flight: Flight | None = None
        try:
            flight = await self._flight(request, tier, tenant, asked=priority is not None, trace=trace)
            resp = await self._sender.send(
                "POST",
                self._backend.create_path,
                body=body,
                headers=extra_headers,
                timeout=timeout,
                flight=flight,
            )
            msg = self._backend.message(json_object(resp))
        except BaseException as e:
            if flight is not None:
                flight.finish(ok=False)
            if trace is not None:
                trace.finish(message=None, metrics=None if flight is None else flight.metrics(), error=e)
            raise
        flight.finish(ok=True, input_tokens=msg.usage.input_tokens, output_tokens=msg.usage.output_tokens)
        if trace is not None:
            trace.finish(message=msg, metrics=flight.metrics())
        return msg

    def stream(
        self,
        *,
        priority: Priority = None,
        tenant: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: TimeoutArg = None,
        stall: StallPolicy | None = None,
        flow: FlowControl | None = None,
        **params: Unpack[CreateParams],
    ) -> Stream:
        """A streaming request as an async context manager (queued and sent on entry).

        ``priority`` and ``tenant`` as for :meth:`create`. On a self-hosted server a
        stream of a preemptible tier may be paused for a higher tier's request and
        continued when it is re-admitted; its consumer sees one uninterrupted stream
        (how it resumes: :mod:`sdk.client._resume`)."""
        tier = self.scheduler.tiers.resolve(priority)
        request = merged_request(params, extra_body, max_tokens=self.backend_name == "messages")
        stall = stall or self.stall
        trace = self._trace(request, tier, tenant, streaming=True)
        run = Resumer(
            self,
            request,
            tier,
            tenant=tenant,
            asked=priority is not None,
            stall=stall,
            extra_headers=extra_headers if trace is None else trace.headers(extra_headers),
            timeout=timeout,
            trace=trace,
        )
        run.inner = MessageStream(
            run.open,
            decoder=self._backend.decoder,
            flow=flow or self.flow,
            stall=stall,
            resume=run.resume,
            idle_timeout=self.idle_timeout,
            observer=FlightObserver(run.held, trace),
        )
        return Stream(self, run.inner, run.held, trace)

    def map(
        self,
        requests: Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]],
        *,
        priority: Priority = "batch",
        tenant: str | None = None,
        ordered: bool = True,
        concurrency: int = 32,
        window: int | None = None,
        on_progress: Callable[[MapProgress], None] | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
        via: Literal["streams", "batches"] = "streams",
        batch_size: int = BATCH_MAX_REQUESTS,
        polling: BatchPolling | None = None,
    ) -> MapRun:
        """Bulk work: ``async with c.map(requests) as results: async for r in results``.

        One :class:`~sdk.MapResult` per request (a mapping of :meth:`stream`'s keywords),
        in input order unless ``ordered=False``; errors are results, never the map's end.
        At most ``concurrency`` requests in flight and ``window`` (default 4 x
        ``concurrency``) results pending; ``on_progress`` is called with a
        :class:`~sdk.MapProgress` after each result; ``checkpoint`` (a JSON Lines file)
        lets a map started again skip what it finished before. See :mod:`sdk.client._map`.

        ``via="batches"``: through the Messages API's message batches, at half the price,
        answered within a day (``batch_size`` requests a batch at most, polled as
        ``polling`` says; ``priority``, ``tenant``, ``concurrency`` and ``window`` do not
        apply). See :mod:`sdk.client._batches`."""
        if via == "batches":
            return BatchMapRun(
                self,
                requests,
                ordered=ordered,
                on_progress=on_progress,
                checkpoint=checkpoint,
                batch_size=batch_size,
                polling=polling,
            )
        if via != "streams":
            raise ValueError(f"via must be 'streams' or 'batches', not {via!r}")
        return MapRun(
            self,
            requests,
            priority=priority,
            tenant=tenant,
            ordered=ordered,
            concurrency=concurrency,
            window=window,
            on_progress=on_progress,
            checkpoint=checkpoint,
        )

    async def count_tokens(
        self,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: TimeoutArg = None,
        **params: Unpack[CountTokensParams],
    ) -> TokenCount:
        """Input tokens of a request: the server's count where the backend has the
        endpoint, else a local tiktoken estimate (``TokenCount.source`` says which). A
        Messages server answering 404 there is asked no more; estimates follow. A 2xx
        without a count (``input_tokens``, a non-negative integer) is a broken answer, a
        :class:`StreamProtocolError`, never an estimate passed off as the server's."""
        request = merged_request(params, extra_body, max_tokens=False, count=True)
        path = self._backend.count_tokens_path
        if path is not None and self._server_counts:
            body = self._backend.count_body(request)
            try:
                resp = await self._sender.send(
                    "POST", path, body=body, headers=extra_headers, timeout=timeout
                )
            except NotFoundError:
                self._server_counts = False  # a Messages server without the endpoint: once
            else:
                n = json_object(resp).get("input_tokens")
                if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                    raise StreamProtocolError(
                        f"the count_tokens answer (HTTP {resp.status_code}) has no input_tokens "
                        "count (a non-negative integer)"
                    )
                return TokenCount(n, "server")
        return TokenCount(estimate_input_tokens(request), "estimate")

    async def tokenize(self, text: str, *, model: str | None = None, timeout: TimeoutArg = None) -> list[int]:
        """Token ids of ``text`` in the server's own tokenizer: ``/tokenize`` of llama-server,
        vLLM, or a seam scheduling server in front of either.

        No special tokens are added (no BOS), and where the server can (llama-server)
        special-token strings in ``text`` are ordinary text, as in :func:`sdk.count_tokens`.
        For many texts, or exact chunking budgets, use :class:`sdk.ServerTokenizer`."""
        ids, _ = await self.tokenize_pieces(text, model=model, pieces=False, timeout=timeout)
        return ids

    async def tokenize_pieces(
        self,
        text: str,
        *,
        model: str | None = None,
        pieces: bool = True,
        timeout: TimeoutArg = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> tuple[list[int], Pieces | None]:
        """As :meth:`tokenize`, with each token's piece where the server gives them and
        ``pieces`` asks (llama-server): a string, or a list of byte values for part of a
        character; ``None`` where it does not. :class:`sdk.ServerTokenizer` and the
        scheduling server's ``/tokenize`` use it."""
        text = checked_text(text, "tokenize()")
        if not text:
            return [], ([] if pieces else None)
        state = self._engine
        ids, got, state.tokenize_shape = await tokenize(
            self._sender,
            text,
            model=model,
            pieces=pieces,
            shape=state.tokenize_shape,
            timeout=timeout,
            extra_headers=extra_headers,
        )
        return ids, got

    async def models(self, *, timeout: TimeoutArg = None) -> list[ModelInfo]:
        """The server's model list (``/v1/models`` or ``/models``)."""
        resp = await self._sender.send("GET", self._backend.models_path, timeout=timeout)
        return models_from(json_object(resp))

    async def context_window(self, model: str) -> int | None:
        """The model's context window in tokens, where it can be known: the server's model
        list (vLLM's ``max_model_len``, llama-server's ``n_ctx`` per slot), llama-server's
        ``/props``, else a small table of hosted models; ``None`` when nothing says."""
        try:
            listed = await self.models(timeout=10.0)
        except SDKError:
            listed = []
        for m in listed:
            if m.id == model and m.context_window:
                return m.context_window
        if not self._service:
            path = (await self._engine.identify(self._sender)).slots  # llama-server's /props
            n = await window_from_props(self._sender, path) if path is not None else None
            if n:
                return n
        known = known_window(model)
        if known is None and len(listed) == 1 and listed[0].context_window:
            return listed[0].context_window  # a server of one model, listed under another name
        return known
