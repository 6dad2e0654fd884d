"""The client: ``async with Client() as c`` -> ``create``, ``stream``, ``count_tokens``, ``models``.

The client owns one ``httpx2.AsyncClient`` (pooling; HTTP/2 through httpx2's ``http2``
extra) and supplies the HTTP part of :class:`~sdk.stream.MessageStream`: it opens the
streaming request (with retries before the first byte, :mod:`sdk._retry`) and, for the
stall policy, a resume hook that sends a continuation request with the text so far as
an assistant prefill. Transport exceptions become SDK errors only through
:func:`sdk._errors.error_from_transport`.

Configuration: ``api_key`` (else ``ANTHROPIC_API_KEY``; ``OPENAI_API_KEY`` for the
``openai`` backend), ``base_url`` (else ``ANTHROPIC_BASE_URL``, else the hosted API; for
``backend="openai"``, ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``).

Logging: the ``sdk`` logger records each response (method, path, status, request id,
attempt) at DEBUG, and retries, re-queues and resume decisions at INFO; never a key or a
message body.
The backend is named (``backend="messages"`` or ``"openai"``) or detected once from the
base URL (:func:`~sdk._backends.detect_backend`).

Every ``create`` and ``stream`` goes through the client's :class:`~sdk.scheduler.Scheduler`
(:mod:`sdk._dispatch` drives it): it is admitted by tier and tenant, paced by the rate
limits the responses report, and a 429/529 before the first byte sends it back to the
queue instead of failing. On a self-hosted server a preemptible stream (the ``batch``
tier by default) may be paused for a higher tier and resumed by continuation.
"""

from __future__ import annotations

import logging
import os
import random
import re
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Unpack
from urllib.parse import quote

import anyio
import httpx2
import orjson

from . import _jsonexact
from ._backends import Backend, BackendName, MessagesBackend, OpenAIBackend, detect_backend
from ._body import MAX_ERROR_BODY, MAX_RESPONSE_BODY, decoded_chunks, read_bounded
from ._dispatch import Dispatcher, Flight
from ._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    BadRequestError,
    IncompleteStreamError,
    NotFoundError,
    OverloadedError,
    RateLimitError,
    RedirectError,
    ResponseTooLargeError,
    SDKError,
    StreamProtocolError,
    UnprocessableEntityError,
    api_error_from_body,
    error_from_transport,
    longest_secret,
    redact,
    register_secret,
    release_secret,
)
from ._map import MapProgress, MapRun
from ._params import CountTokensParams, CreateParams, check_request
from ._retry import RetryBudget, RetryPolicy, parse_retry_after, retry_decision
from ._tokens import checked_text, count_tokens
from ._transport import StaleConnectionResend
from .client import PRIORITY_HEADER, SEAM_PROBE_PATH, TENANT_HEADER, EngineName, EngineProfile, engine_profile
from .scheduler import Cost, MetricsHook, RequestMetrics, Scheduler, Tier, TierMetrics
from .stream import (
    FlowControl,
    Message,
    MessageState,
    MessageStream,
    ResumeRequest,
    StallPolicy,
    StreamStatistics,
    Upstream,
)
from .stream._resume import (
    PrefillRefusals,
    ResumeMode,
    continuation,
    plan_resume,
    refusal_reason,
    refuses_prefill,
    thought,
)

__all__ = ["Client", "ModelInfo", "Stream", "TokenCount"]

log = logging.getLogger("sdk")

CONVERSATION_HEADER = "x-conversation-id"  # llama-server keeps a stream under it

HOSTED_BASE_URL = "https://api.anthropic.com"
OPENAI_BASE_URL = "https://api.openai.com/v1"
# Hosted APIs by host name: nothing there is a self-hosted engine with slots.
HOSTED_HOSTS = frozenset({"api.anthropic.com", "api.openai.com"})
_PROBE_BYTES = 1 << 16
STREAM_ID_HEADER = "seam-stream-id"  # a scheduling server (sdk.server) keeps the stream: reattach by id
_BIG_PROMPT = 200_000  # characters: above this the cost estimate runs in a worker thread
DEFAULT_TIMEOUT = httpx2.Timeout(600.0, connect=10.0)
USER_AGENT = "seam-sdk/0.1.0"

TimeoutArg = float | httpx2.Timeout | None
Priority = str | int | Tier | None


@dataclass(frozen=True, slots=True)
class TokenCount:
    """Input tokens of a request. ``source`` says whether the server counted them
    (``"server"``, exact for that model) or the SDK estimated them locally with tiktoken
    (``"estimate"``: another tokenizer, so only an approximation)."""

    input_tokens: int
    source: Literal["server", "estimate"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model the server lists. ``context_window``: its window in tokens where the list
    says it (vLLM's ``max_model_len``, llama-server's ``meta.n_ctx``)."""

    id: str
    display_name: str | None = None
    owned_by: str | None = None
    context_window: int | None = None


class _Secret:
    """Holds the API key; its repr never shows it."""

    __slots__ = ("value",)

    def __init__(self, value: str | None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<api key>" if self.value else "<no api key>"


class Stream:
    """``async with client.stream(...) as s``: the request is queued and sent on entry.

    ``async for event in s`` yields the neutral events, ``s.text_deltas()`` only the
    text, ``await s.final_message()`` the accumulated message (after the block: what
    was received, a snapshot if the stream was left early). ``s.metrics()``: queue time,
    TTFT, ITL, TPOT and E2EL of this request.
    """

    def __init__(self, client: Client, inner: MessageStream, flight: list[Flight]) -> None:
        self._client = client
        self._inner = inner
        self._flight = flight  # set when the request is submitted on entry
        self._open = False

    @property
    def state(self) -> MessageState:
        return self._inner.state

    def statistics(self) -> StreamStatistics:
        return self._inner.statistics()

    def metrics(self) -> RequestMetrics:
        """This request's metrics (a snapshot while it runs)."""
        if not self._flight:
            raise RuntimeError("the stream has not been entered")
        return self._flight[0].metrics()

    async def __aenter__(self) -> Stream:
        self._client._check_open()
        try:
            await self._inner.__aenter__()
        except BaseException as e:
            self._finish(e)
            raise
        self._open = True
        self._client._live.add(self)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self._open = False
        self._client._live.discard(self)
        try:
            return await self._inner.__aexit__(exc_type, exc, tb)
        finally:
            self._finish(exc)

    def _finish(self, exc: BaseException | None) -> None:
        if not self._flight:
            return
        flight = self._flight[0]
        if isinstance(exc, OverloadedError | RateLimitError):  # a mid-stream overload event
            flight.overloaded()
        st = self._inner.state
        usage = st.usage
        flight.finish(
            ok=exc is None and st.stopped,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
        )

    def __aiter__(self) -> MessageStream:
        return self._inner  # no wrapper per event: the client adds no cost to the hot path

    def text_deltas(self) -> AsyncIterator[str]:
        return self._inner.text_deltas()

    async def final_message(self) -> Message:
        if self._open:
            return await self._inner.get_final_message()
        return self._inner.state.message()

    def _abort(self, err: SDKError) -> None:
        """Client closing: the consumer's next step raises ``err``; no resume follows."""
        self._inner.abort(err)


class Client:
    """An async client for Messages-API and OpenAI-compatible servers; see the module doc.

    ``stall``: the stream's stall policy (default: enabled for a self-hosted base URL,
    where a held slot blocks other users, disabled for the hosted API, where a resume
    re-bills the prompt). ``prefill_echo``: whether the server repeats an assistant
    prefill at the start of its answer (llama-server does); ``None`` asks the server's
    model list once, at the first resume. ``resume_extra_body``: fields only the
    continuation request gets (vLLM's OpenAI server needs
    ``{"continue_final_message": True, "add_generation_prompt": False}`` to continue a
    trailing assistant message instead of answering it).
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
    ) -> None:
        if http_client is not None and not isinstance(http_client, httpx2.AsyncClient):
            raise TypeError(
                f"http_client must be an httpx2.AsyncClient, not {type(http_client).__module__}."
                f"{type(http_client).__qualname__} (httpx and httpx2 clients are not interchangeable)"
            )
        if backend == "openai":
            base = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        else:
            base = base_url or os.environ.get("ANTHROPIC_BASE_URL") or HOSTED_BASE_URL
        self.base_url = base.rstrip("/")
        # What reprs, names and messages show: a password in the URL (sent as basic auth)
        # never appears, and is masked wherever redaction runs.
        self._shown_url = _without_userinfo(self.base_url)
        self.backend_name: BackendName = backend or detect_backend(self.base_url)
        self._backend: Backend = (
            OpenAIBackend() if self.backend_name == "openai" else MessagesBackend(anthropic_version)
        )
        if api_key is None:
            env = "OPENAI_API_KEY" if self.backend_name == "openai" else "ANTHROPIC_API_KEY"
            api_key = os.environ.get(env)
        self._key = _Secret(api_key)
        # registered for redaction by value (the key, and the latest credential header
        # values sent: at most _MAX_HEADER_SECRETS); released on close
        self._secrets: OrderedDict[str, None] = OrderedDict()
        url = httpx2.URL(self.base_url)
        self._pinned = {s for s in (api_key, url.password) if s}  # kept while headers come and go
        self._register(api_key)
        self._register(url.password)
        host = url.host.lower()
        # hosted: Anthropic's API (prompt-cache breakpoints, no prefill on newer models);
        # service: any hosted API, where nothing is self-hosted: no slot probe, no stall
        # cuts (a resume re-bills the prompt) and no preemption.
        self.hosted = host == "api.anthropic.com"
        self._service = host in HOSTED_HOSTS
        self.timeout = timeout if isinstance(timeout, httpx2.Timeout) else httpx2.Timeout(timeout)
        self.idle_timeout = idle_timeout
        self.retry = retry or RetryPolicy()
        self.retry_budget = retry_budget or RetryBudget()
        self.stall = stall or (StallPolicy.hosted() if self._service else StallPolicy.self_hosted())
        self.flow = flow
        self.prefill_echo = prefill_echo
        self.resume_extra_body = dict(resume_extra_body or {})
        self._headers = {
            "user-agent": USER_AGENT,
            "accept": "application/json",
            **self._backend.headers(None),
            **(default_headers or {}),
        }
        self._register_headers(self._headers)
        self._own_http = http_client is None
        # Its own pool sends again a request that a kept-alive connection lost unread
        # (the server closed it at that moment): sdk._transport. A client passed in keeps
        # its own transport, and the retry policy alone.
        self._http = http_client or httpx2.AsyncClient(
            timeout=self.timeout, transport=StaleConnectionResend(httpx2.AsyncHTTPTransport(http2=http2))
        )
        self._live: set[Stream] = set()
        self._server_counts = True
        self._tokenize_flavor: Literal["llama", "vllm"] | None = None  # learnt from the first answer
        self._closed = False
        self._rng = random.Random()
        sched = scheduler if scheduler is not None else Scheduler()
        self._dispatch = Dispatcher.of(sched, window=metrics_window)
        if on_metrics is not None:
            self._dispatch.hooks.append(on_metrics)
        self._slots_known = self._service or sched.slots is not None
        # What differs by engine (sdk.client): named, known by host, or learnt once.
        self._profile: EngineProfile | None = (
            engine_profile(engine)
            if engine is not None
            else engine_profile("hosted")
            if self._service
            else None
        )
        self.server_info: Mapping[str, Any] | None = None  # a scheduling server's GET /v1/seam
        self._conversations = False  # the server keeps streams by conversation id (llama-server)
        self._refusals = PrefillRefusals()  # models that refused an assistant prefill
        self._slots_probe: anyio.Event | None = None

    def __repr__(self) -> str:
        return f"Client(base_url={self._shown_url!r}, backend={self.backend_name!r}, api_key={self._key!r})"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client: every open stream ends with :class:`APIConnectionError`."""
        if self._closed:
            return
        self._closed = True
        live = list(self._live)
        for s in live:
            s._abort(APIConnectionError("the client was closed"))
        if live:
            # Each reader closes its response and, on a server that keeps streams
            # (llama-server), stops the generation there, which needs the pool still open.
            with anyio.move_on_after(_CLOSE_GRACE, shield=True):
                for s in live:
                    await s._inner.reader_closed()
        if self._own_http:
            with anyio.CancelScope(shield=True):
                await self._http.aclose()
        for secret in self._secrets:
            release_secret(secret)
        self._secrets.clear()

    def _register(self, secret: str | None) -> None:
        if not secret:
            return
        if secret in self._secrets:
            self._secrets.move_to_end(secret)
            return
        if register_secret(secret):
            self._secrets[secret] = None
            while len(self._secrets) > _MAX_HEADER_SECRETS:  # the oldest header value goes
                oldest = next(s for s in self._secrets if s not in self._pinned)
                del self._secrets[oldest]
                release_secret(oldest)

    def _register_headers(self, headers: Mapping[str, str]) -> None:
        """Mask the values of the credential headers a request carries, by value."""
        for k, v in headers.items():
            if k.lower() in _SECRET_HEADERS and isinstance(v, str):
                self._register(v)
                scheme, _, token = v.partition(" ")
                if token and scheme.lower() in ("bearer", "basic", "token"):
                    self._register(token.strip())

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the client is closed")

    @property
    def scheduler(self) -> Scheduler:
        return self._dispatch.scheduler

    def metrics(self) -> Mapping[str, TierMetrics]:
        """Per tier, over the last ``metrics_window`` finished requests: counts and
        p50/p90/p99 of queue time, TTFT, TPOT, ITL and E2EL, and output tokens/s."""
        return self._dispatch.metrics()

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
    ) -> Flight:
        """Submit a request to the scheduler and wait for its admission. ``preempt``
        pauses it for a higher tier (registered before it can be admitted, so no
        decision finds it missing); ``held`` receives the flight at once. ``asked``: the
        caller named the tier (only then does it go on the wire: else a scheduling
        server gives the key's own tier)."""
        await self._learn_slots()
        flight = self._dispatch.flight(
            priority=tier, tenant=tenant, cost=await _cost(params), preemptible=preempt is not None
        )
        flight.asked = asked
        if preempt is not None:
            flight.on_preempt(preempt)
        if held is not None:
            held.append(flight)
        await flight.admit()
        return flight

    @property
    def engine(self) -> EngineProfile | None:
        """The engine's profile (:mod:`sdk.client`): named, known by host, or learnt before
        the first request (``None`` until then)."""
        return self._profile

    async def _learn_slots(self) -> None:
        """Once per client: what the engine is, unless named (a scheduling server answers
        ``GET /v1/seam``), and a self-hosted server's slot count (llama-server's ``/props``
        ``total_slots``); concurrent first requests wait for the one probe. A scheduling
        server decides admission itself: its slots are not ours to count."""
        if self._slots_known and self._profile is not None:
            return
        probe = self._slots_probe
        if probe is not None:
            await probe.wait()
            return
        probe = self._slots_probe = anyio.Event()
        try:
            if self._profile is None or self._profile.schedules:
                info = await self._probe_seam()
                if info is not None:
                    self.server_info = info
                    self._profile = self._profile or engine_profile("seam")
            if not self._slots_known and not (self._profile is not None and self._profile.schedules):
                n = await self._probe_slots()
                if n is not None and self.scheduler.slots is None:
                    self.scheduler.set_slots(n)
        finally:
            self._slots_known = True
            if self._profile is None:
                self._profile = engine_profile("llama-server" if self._conversations else "self-hosted")
            probe.set()

    async def _probe_seam(self) -> Mapping[str, Any] | None:
        """A scheduling server's capabilities (``None``: not one, or not reachable)."""
        try:
            with anyio.fail_after(10.0):
                doc = await self._get_small(self._root() + SEAM_PROBE_PATH, _PROBE_BYTES)
        except Exception:
            return None
        if isinstance(doc, dict) and doc.get("object") == "seam.server" and doc.get("schedules") is True:
            return doc
        return None

    async def _probe_slots(self) -> int | None:
        try:
            with anyio.fail_after(10.0):  # however slowly its bytes come
                n = _slots_from(await self._get_small(self._root() + "/props", _PROBE_BYTES))
                self._conversations = n is not None  # llama-server: it keeps streams by conversation
                return n
        except Exception:  # no such endpoint, not JSON, not reachable: slots stay unknown
            return None

    async def _get_small(self, url: str, limit: int) -> object:
        """A small JSON document: ``None`` unless a 200 of at most ``limit`` bytes."""
        async with self._http.stream(
            "GET", url, headers={**self._request_headers(None), "accept-encoding": "identity"}, timeout=5.0
        ) as resp:
            if resp.status_code != 200:
                return None
            raw, more = await read_bounded(resp, limit)
        return None if more else orjson.loads(raw)

    # ---- requests ----------------------------------------------------------------------

    def _request_headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        h = dict(self._headers)
        key = self._key.value
        if key:
            h.update(self._backend.headers(key))
        if extra:
            self._register_headers(extra)
            h.update(extra)
        return h

    async def _send(
        self,
        method: str,
        path: str,
        *,
        body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: TimeoutArg = None,
        stream: bool = False,
        flight: Flight | None = None,
        root: bool = False,
    ) -> httpx2.Response:
        """Send with retries until the response headers are in; raise the typed error for
        an error status. With ``stream`` the body is left unread for the caller, and a 2xx
        must be an event stream (:func:`_is_event_stream`). With a
        ``flight`` every response's rate-limit headers go to the scheduler, and a 429 or
        529 that the retry policy would retry sends the request back to the scheduler's
        queue instead of sleeping (the scheduler holds all admissions for the delay)."""
        self._check_open()
        hdrs = self._request_headers(headers)
        profile = self._profile
        if flight is not None and profile is not None:
            if flight.asked:
                # The tier the caller named travels with the request, to an engine that
                # honours it and only there (unnamed, a scheduling server gives the key's).
                tier = flight.ticket.tier
                if profile.priority == "header":
                    hdrs[PRIORITY_HEADER] = tier.name
                elif profile.priority == "body" and body is not None and "priority" not in body:
                    body = {**body, "priority": tier.rank}
            info = self.server_info
            gateway = info is not None and info.get("gateway") is True
            if profile.schedules and flight.ticket.tenant and gateway:
                hdrs[TENANT_HEADER] = flight.ticket.tenant  # a gateway key names its end tenant
        content = orjson.dumps(body) if body is not None else None
        if content is not None:
            hdrs["content-type"] = "application/json"
        t: httpx2.Timeout = self.timeout
        if timeout is not None:
            t = timeout if isinstance(timeout, httpx2.Timeout) else httpx2.Timeout(timeout)
        elif flight is not None and profile is not None and profile.schedules:
            # A scheduling server answers when it admits the request: the wait for the head
            # is its queue, as long as the load makes it. The body is still watched: a
            # stream's idle timeout ends one that brings nothing but pings.
            t = httpx2.Timeout(connect=t.connect, read=None, write=t.write, pool=t.pool)
        elif stream and self.idle_timeout is not None:
            t = httpx2.Timeout(connect=t.connect, read=self.idle_timeout, write=t.write, pool=t.pool)
        hdrs["accept-encoding"] = "identity" if stream else "gzip, deflate"  # what _body reads
        backend_path = self._backend.create_path
        deadline = _deadline(t)
        self.retry_budget.deposit()
        attempt = 0
        while True:
            request = self._http.build_request(
                method,
                (self._root() if root else self.base_url) + path,
                content=content,
                headers=hdrs,
                timeout=t,
            )
            try:
                with anyio.fail_after(deadline):  # the head, whatever the pace of its bytes
                    response = await self._http.send(request, stream=True)
            except Exception as e:
                err = error_from_transport(e)
                if err is None:
                    raise
                delay = retry_decision(None, {}, attempt, self.retry, rng=self._rng)
                if delay is None or not self.retry_budget.withdraw():
                    raise err from e
                if attempt == 0 and not isinstance(err, APITimeoutError):
                    # At once: through a pool that is not ours (an http_client passed in),
                    # most often a kept-alive connection the server had closed; our own pool
                    # sends those again by itself, spending no retry (sdk._transport).
                    delay = 0.0
                attempt += 1
                await anyio.sleep(delay)
                continue
            status = response.status_code
            log.debug(
                "%s %s -> %d (request id %s, attempt %d)",
                method,
                path,
                status,
                _request_id(response),
                attempt + 1,
            )
            if flight is not None:
                flight.response(status, response.headers)
            if 300 <= status < 400:
                await response.aclose()
                raise RedirectError(
                    status, response.headers.get("location"), request_id=_request_id(response)
                )
            if status < 400:
                if not stream:
                    return await self._whole(response, deadline)
                if not _is_event_stream(response):
                    raise await self._not_a_stream(response, deadline)
                return response
            err = await self._error(response, deadline)
            if status == 404 and method == "POST" and path == backend_path:
                err.message = _not_found_hint(err.message, self._shown_url + path, self.backend_name)
            if flight is not None and status == 503 and profile is not None and profile.schedules:
                # A scheduling server's queue is full: back in our own queue for its
                # retry-after, however often (never a failure); our window shrinks meanwhile.
                wait = parse_retry_after(response.headers)
                wait = wait if wait is not None else self.retry.backoff(min(attempt, 8), self._rng)
                log.info("%s %s: 503, back in the scheduler's queue for %.2f s", method, path, wait)
                attempt += 1
                flight.requeue(hold=0.0)
                await anyio.sleep(min(wait, 60.0))
                await flight.admit()
                continue
            delay = retry_decision(status, response.headers, attempt, self.retry, rng=self._rng)
            if flight is not None and status in (429, 529) and delay is not None:
                log.info("%s %s: %d, back in the scheduler's queue for %.2f s", method, path, status, delay)
                attempt += 1
                flight.requeue(hold=delay)  # back in line; every admission waits out the delay
                await flight.admit()
                continue
            if delay is None or not self.retry_budget.withdraw():
                raise err
            log.info("%s %s: %d, retry %d in %.2f s", method, path, status, attempt + 1, delay)
            attempt += 1
            await anyio.sleep(delay)

    @staticmethod
    async def _whole(response: httpx2.Response, deadline: float | None) -> httpx2.Response:
        """A non-streamed answer read whole, within ``MAX_RESPONSE_BODY`` (decompressed) and
        the deadline, as a response whose content is in memory."""
        try:
            with anyio.fail_after(deadline):
                raw, more = await read_bounded(response, MAX_RESPONSE_BODY, excerpt=False)
        except Exception as e:
            err = error_from_transport(e)
            if err is None:
                raise
            raise err from e
        finally:
            await response.aclose()
        if more:
            raise ResponseTooLargeError(MAX_RESPONSE_BODY)
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "content-encoding"]
        return httpx2.Response(response.status_code, headers=headers, content=raw, request=response.request)

    @staticmethod
    async def _error(response: httpx2.Response, deadline: float | None = None) -> APIError:
        """The typed error for an error status. At most ``MAX_ERROR_BODY`` bytes of the body
        are read (within the deadline); a longer one is kept as a marked excerpt."""
        raw, more = b"", False
        try:
            with anyio.move_on_after(deadline) as scope:
                # a little more than is kept: a key across the cut is masked before the cut
                raw, more = await read_bounded(response, MAX_ERROR_BODY + min(longest_secret(), 8192))
                if len(raw) > MAX_ERROR_BODY:
                    more = True
            more = more or scope.cancelled_caught
        except Exception:
            more = True
        finally:
            await response.aclose()
        body: object
        if more:
            excerpt = redact(raw.decode("utf-8", "replace"))[:MAX_ERROR_BODY]
            body = f"{excerpt}... (truncated: only the first {MAX_ERROR_BODY} bytes are kept)"
        else:
            try:
                body = orjson.loads(raw) if raw else None
            except orjson.JSONDecodeError:
                body = raw.decode("utf-8", "replace")
        return api_error_from_body(body, status=response.status_code, request_id=_request_id(response))

    @staticmethod
    async def _not_a_stream(response: httpx2.Response, deadline: float | None) -> StreamProtocolError:
        """The error for a streamed request answered 2xx with something else (a proxy's
        HTML, a whole JSON answer): decided on the head, so nothing sends it again or
        resumes it (the SSE decoder would find no events in it, and a stream that ends
        without events reads as a dropped connection). Its ``event`` is a masked excerpt
        of the body, read within the deadline."""
        raw = b""
        try:
            with anyio.move_on_after(deadline):
                raw, _ = await read_bounded(response, _EXCERPT_BYTES + min(longest_secret(), 8192))
        except Exception:
            pass  # the excerpt is a courtesy: the head already says what is wrong
        finally:
            await response.aclose()
        excerpt = _excerpt(raw)
        ctype = response.headers.get("content-type", "")[:100]
        return StreamProtocolError(
            f"the streamed response (HTTP {response.status_code}) is {ctype!r}, not an event stream "
            f"(text/event-stream): {excerpt[:200]!r}",
            event=excerpt,
        )

    def _request(
        self, params: Mapping[str, Any], extra_body: Mapping[str, Any] | None, *, count: bool = False
    ) -> dict[str, Any]:
        """The request's fields (``extra_body`` over the keywords), checked: a missing or
        malformed required field is an :class:`InvalidRequestError` before anything is sent."""
        request = dict(params)
        if extra_body:
            request.update(extra_body)
        check_request(request, max_tokens=not count and self.backend_name == "messages")
        return request

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
        request = self._request(params, extra_body)
        body = self._backend.body(request, stream=False)
        self._check_open()
        flight = await self._flight(request, tier, tenant, asked=priority is not None)
        try:
            resp = await self._send(
                "POST",
                self._backend.create_path,
                body=body,
                headers=extra_headers,
                timeout=timeout,
                flight=flight,
            )
            msg = self._backend.message(_json(resp))
        except BaseException:
            flight.finish(ok=False)
            raise
        flight.finish(ok=True, input_tokens=msg.usage.input_tokens, output_tokens=msg.usage.output_tokens)
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
        continued when it is re-admitted; its consumer sees one uninterrupted stream."""
        tier = self.scheduler.tiers.resolve(priority)
        request = self._request(params, extra_body)
        backend = self._backend
        body = backend.body(request, stream=True)
        stall = stall or self.stall
        held: list[Flight] = []
        kept: list[str] = []  # the stream id, where the server keeps the stream for a reattach
        conv: list[str] = []  # llama-server's conversation id of the current engine request

        def conversation_headers() -> Mapping[str, str] | None:
            """A fresh conversation id per engine request where the server keeps streams
            by conversation (llama-server), so a dropped connection can be replayed."""
            if not self._conversations:
                return extra_headers
            conv[:] = [secrets.token_hex(12)]
            return {**(extra_headers or {}), CONVERSATION_HEADER: conv[0]}

        async def post(
            flight: Flight, body: Mapping[str, Any], headers: Mapping[str, str] | None
        ) -> httpx2.Response:
            return await self._send(
                "POST",
                backend.create_path,
                body=body,
                headers=headers,
                timeout=timeout,
                stream=True,
                flight=flight,
            )

        def keep(resp: httpx2.Response) -> bool:
            """Whether the server keeps this stream for a reattach (and under which id)."""
            sid = resp.headers.get(STREAM_ID_HEADER, "")
            kept[:] = [sid] if _valid_stream_id(sid) else []
            return bool(kept)

        async def open_() -> Upstream:
            if held:
                flight = held[0]
                await flight.admit()  # a plain re-send: re-admitted if it was paused
            else:
                # Preemptible whatever the request's fields say: the stream itself refuses a
                # cut once it has generated what a prefill cannot carry (a thinking block).
                # A scheduling server preempts and resumes its streams itself.
                await self._learn_slots()
                schedules = self._profile is not None and self._profile.schedules
                resumable = not self._service and not schedules and stall.max_resumes > 0
                flight = await self._flight(
                    request,
                    tier,
                    tenant,
                    preempt=inner.preempt if resumable else None,
                    held=held,
                    asked=priority is not None,
                )
            resp = await post(flight, body, conversation_headers())
            return Upstream(
                self._chunks(resp),
                resp.aclose,
                replayable=keep(resp),
                cancel=self._conversation_cancel(conv[0]) if conv else None,
            )

        async def resume(rr: ResumeRequest) -> Upstream:
            """After a break: replay where the server keeps the stream, else a continuation
            by prefill, else (a model that refuses a prefill) the partial message in an
            ``IncompleteStreamError``. The plan is :func:`sdk.stream._resume.plan_resume`'s."""
            flight = held[0]
            await flight.admit()  # after a stall or a preemption: wait for a slot again
            model = request.get("model")
            seam = bool(kept) and rr.last_event_id.startswith(kept[0] + ":")
            plan = plan_resume(
                rr.cause,
                replay=seam or bool(conv),
                replay_frees_slot=seam,
                prefill_refused=model in self._refusals,
            )
            log.info("resuming a stream (attempt %d): %s", rr.attempt, plan.reason)
            if plan.mode is ResumeMode.REPLAY and seam:
                # This SDK's server keeps the stream: the rest after the last event, exactly once.
                try:
                    resp = await post(
                        flight, body, {**(extra_headers or {}), "last-event-id": rr.last_event_id}
                    )
                except NotFoundError:
                    kept.clear()  # expired there: continue by prefill instead
                else:
                    return Upstream(self._chunks(resp), resp.aclose, replayable=True, replay=True)
            elif plan.mode is ResumeMode.REPLAY:
                # llama-server keeps the conversation's stream: its bytes from where ours stopped.
                replayed = await self._replay_conversation(conv[0], rr.received_bytes, timeout)
                if replayed is not None:
                    return Upstream(
                        self._chunks(replayed),
                        replayed.aclose,
                        replay=True,
                        continues=True,
                        cancel=self._conversation_cancel(conv[0]),
                    )
            if conv:
                # Whatever is left of it stops generating. Best effort, as when the reader
                # leaves a kept stream (else the server's own timeout ends it): a failed stop
                # must not fail the stream, and a server that is really gone fails the
                # continuation below, through the retry policy.
                try:
                    await self._conversation_cancel(conv[0])()
                except Exception as e:
                    log.info(
                        "could not stop the kept stream before continuing it: %s: %s", type(e).__name__, e
                    )
                conv.clear()
            if model in self._refusals:
                raise IncompleteStreamError(refusal_reason(model), partial=rr.message)
            if thought(rr.message):
                raise IncompleteStreamError(
                    "a stream with extended thinking cannot be continued by prefill; "
                    f"it was {rr.cause.value}",
                    partial=rr.message,
                )
            echo = await self.echoes_prefill()
            cont = continuation(
                {**request, **self.resume_extra_body}, rr.prefill, echo=echo, used_tokens=rr.output_tokens
            )
            try:
                resp = await post(flight, backend.body(cont.params, stream=True), conversation_headers())
            except BadRequestError as e:
                if not refuses_prefill(e):
                    raise
                self._refusals.add(model)  # remembered: the next break fails at once
                raise IncompleteStreamError(refusal_reason(model, e), partial=rr.message) from e
            return Upstream(
                self._chunks(resp),
                resp.aclose,
                cont.repeat,
                replayable=keep(resp),
                cancel=self._conversation_cancel(conv[0]) if conv else None,
            )

        inner = MessageStream(
            open_,
            decoder=backend.decoder,
            flow=flow or self.flow,
            stall=stall,
            resume=resume,
            idle_timeout=self.idle_timeout,
            observer=_Observer(held),
        )
        return Stream(self, inner, held)

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
    ) -> MapRun:
        """Bulk work: ``async with c.map(requests) as results: async for r in results``.

        One :class:`~sdk.MapResult` per request (a mapping of :meth:`stream`'s keywords),
        in input order unless ``ordered=False``; errors are results, never the map's end.
        At most ``concurrency`` requests in flight and ``window`` (default 4 x
        ``concurrency``) results pending; ``on_progress`` is called with a
        :class:`~sdk.MapProgress` after each result; ``checkpoint`` (a JSON Lines file)
        lets a map started again skip what it finished before. See :mod:`sdk._map`."""
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

    @staticmethod
    def _chunks(resp: httpx2.Response) -> AsyncIterator[bytes]:
        return decoded_chunks(resp)

    async def _replay_conversation(
        self, conversation: str, offset: int, timeout: TimeoutArg
    ) -> httpx2.Response | None:
        """llama-server's kept stream of ``conversation`` from byte ``offset`` (``None``
        where it is not kept: expired, or a server without conversation streams)."""
        try:
            resp = await self._send(
                "GET",
                f"/v1/stream?conv_id={quote(conversation)}&from={offset}",
                timeout=timeout,
                stream=True,
                root=True,
            )
        except SDKError:  # not kept (404), or the server failed to replay: continue instead
            return None
        return resp

    def _conversation_cancel(self, conversation: str) -> Callable[[], Awaitable[None]]:
        """Stops llama-server's generation for ``conversation`` (``DELETE /v1/stream``): a
        kept stream goes on generating after its connection closes."""

        async def cancel() -> None:
            url = self._root() + f"/v1/stream?conv_id={quote(conversation)}"
            with anyio.fail_after(5.0):
                resp = await self._http.delete(url, headers=self._request_headers(None), timeout=5.0)
            await resp.aclose()

        return cancel

    def _root(self) -> str:
        return _root_of(self.base_url)

    async def echoes_prefill(self) -> bool:
        """Whether the server repeats an assistant prefill at the start of its answer
        (llama-server does): ``prefill_echo`` if given, else learnt once from the model list."""
        if self.prefill_echo is None:
            try:
                models = await self.models()
            except SDKError:
                models = []
            self.prefill_echo = any(m.owned_by == "llamacpp" for m in models)
        return self.prefill_echo

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
        request = self._request(params, extra_body, count=True)
        path = self._backend.count_tokens_path
        if path is not None and self._server_counts:
            body = self._backend.count_body(request)
            try:
                resp = await self._send("POST", path, body=body, headers=extra_headers, timeout=timeout)
            except NotFoundError:
                self._server_counts = False  # a Messages server without the endpoint: once
            else:
                n = _json(resp).get("input_tokens")
                if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                    raise StreamProtocolError(
                        f"the count_tokens answer (HTTP {resp.status_code}) has no input_tokens "
                        "count (a non-negative integer)"
                    )
                return TokenCount(n, "server")
        return TokenCount(_estimate(request), "estimate")

    async def tokenize(self, text: str, *, model: str | None = None, timeout: TimeoutArg = None) -> list[int]:
        """Token ids of ``text`` in the server's own tokenizer: ``/tokenize`` of llama-server,
        vLLM, or a seam scheduling server in front of either.

        No special tokens are added (no BOS), and where the server can (llama-server)
        special-token strings in ``text`` are ordinary text, as in :func:`sdk.count_tokens`.
        For many texts, or exact chunking budgets, use :class:`sdk.ServerTokenizer`."""
        ids, _ = await self._tokenize(text, model=model, pieces=False, timeout=timeout)
        return ids

    async def _tokenize(
        self,
        text: str,
        *,
        model: str | None,
        pieces: bool,
        timeout: TimeoutArg = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> tuple[list[int], list[str | list[int]] | None]:
        """Ids of ``text`` and, when ``pieces`` and the server gives them (llama-server),
        each token's piece: a string, or a list of byte values for part of a character."""
        text = checked_text(text, "tokenize()")
        if not text:
            return [], ([] if pieces else None)
        flavor = self._tokenize_flavor
        while True:
            # The first request carries both servers' fields; the answer says which it was.
            body: dict[str, Any] = {}
            if flavor != "vllm":  # llama-server's fields
                body.update(content=text, add_special=False, parse_special=False, with_pieces=pieces)
            if flavor != "llama":  # vLLM's
                body.update(prompt=text, add_special_tokens=False)
                if model is not None:
                    body["model"] = model
            try:
                resp = await self._send(
                    "POST", "/tokenize", body=body, headers=extra_headers, timeout=timeout, root=True
                )
            except (BadRequestError, UnprocessableEntityError):
                if flavor is None:
                    raise
                flavor = None  # another kind of server behind the same URL: ask with both
                continue
            except NotFoundError as e:
                e.message = (
                    f"{_root_of(self._shown_url)}/tokenize does not exist: counts from the server need "
                    f"llama-server, vLLM or a seam server in front of them ({e.message})"
                )
                raise
            data = _json(resp)
            if flavor == "vllm" and "max_model_len" not in data:
                # Not vLLM's answer: llama-server answers a body without ``content`` with
                # no tokens at all (200), so the count would be 0. Ask with both.
                flavor = None
                continue
            break
        if flavor is None:
            self._tokenize_flavor = flavor = "vllm" if "max_model_len" in data else "llama"
        return _tokens_from(data, resp.status_code, pieces=pieces and flavor == "llama")

    async def models(self, *, timeout: TimeoutArg = None) -> list[ModelInfo]:
        """The server's model list (``/v1/models`` or ``/models``)."""
        resp = await self._send("GET", self._backend.models_path, timeout=timeout)
        data = _json(resp).get("data")
        out: list[ModelInfo] = []
        for m in data if isinstance(data, list) else ():
            if isinstance(m, Mapping) and isinstance(m.get("id"), str):
                dn, ob = m.get("display_name"), m.get("owned_by")
                meta = m.get("meta")
                window = _positive(m.get("max_model_len")) or _positive(
                    meta.get("n_ctx") if isinstance(meta, Mapping) else None
                )
                out.append(
                    ModelInfo(
                        m["id"],
                        dn if isinstance(dn, str) else None,
                        ob if isinstance(ob, str) else None,
                        window,
                    )
                )
        return out

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
            try:
                with anyio.fail_after(10.0):
                    props = await self._get_small(self._root() + "/props", _PROBE_BYTES)
            except Exception:
                props = None
            settings = props.get("default_generation_settings") if isinstance(props, dict) else None
            n = _positive(settings.get("n_ctx")) if isinstance(settings, Mapping) else None
            if n:
                return n
        known = _known_window(model)
        if known is None and len(listed) == 1 and listed[0].context_window:
            return listed[0].context_window  # a server of one model, listed under another name
        return known


_MAX_HEADER_SECRETS = 32
# How long closing waits for open streams to stop their server-side generation.
_CLOSE_GRACE = 6.0
_SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key"})


def _not_found_hint(message: str, url: str, backend: str) -> str:
    other = "messages" if backend == "openai" else "openai"
    shape = "ends in /vN" if backend == "openai" else "does not end in /vN"
    return (
        f"{message} (POST {url} with backend={backend!r}: the base URL {shape}; if this server "
        f"speaks the other API, pass backend={other!r} or a base URL that points at it)"
    )


# Context windows of hosted models by name prefix (longest prefix first), for servers
# that do not say it.
_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4", 200_000),
)


def _known_window(model: str) -> int | None:
    for prefix, n in sorted(_WINDOWS, key=lambda p: -len(p[0])):
        if model.startswith(prefix):
            return n
    return None


def _positive(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _slots_from(props: object) -> int | None:
    n = props.get("total_slots") if isinstance(props, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 < n < 1_000_000 else None


def _request_id(response: httpx2.Response) -> str | None:
    return response.headers.get("request-id") or response.headers.get("x-request-id")


def _deadline(t: httpx2.Timeout) -> float | None:
    """How long a response head may take to arrive (and a non-streamed body, again):
    the connect and read timeouts together, however slowly its bytes come."""
    if t.connect is None or t.read is None:
        return None
    return t.connect + t.read


def _valid_stream_id(sid: str) -> bool:
    return 0 < len(sid) <= 128 and sid.isascii() and sid.isprintable() and ":" not in sid


class _Observer:
    """The stream's observer before its request is submitted: forwards to the flight."""

    __slots__ = ("_held",)

    def __init__(self, held: list[Flight]) -> None:
        self._held = held

    def output(self, n: int) -> None:
        if self._held:
            self._held[0].output(n)

    def released(self) -> None:
        if self._held:
            self._held[0].released()

    def ended(self, ok: bool) -> None:
        if self._held:
            self._held[0].ended(ok)


async def _cost(params: Mapping[str, Any]) -> Cost:
    """The scheduler's cost of a request: the local input estimate plus ``max_tokens``."""
    texts, n_messages = _texts(params)
    if sum(map(len, texts)) > _BIG_PROMPT:  # tens of milliseconds of encoding: off the event loop
        est = await anyio.to_thread.run_sync(_count, texts, n_messages)
    else:
        est = _count(texts, n_messages)
    mt = params.get("max_tokens")
    if mt is None:
        mt = params.get("max_completion_tokens")
    out = mt if isinstance(mt, int) and not isinstance(mt, bool) and mt > 0 else 0
    return Cost(est, out)


def _root_of(url: str) -> str:
    return url[:-3] if url.endswith("/v1") else url


def _without_userinfo(url: str) -> str:
    """``url`` with any ``user:password@`` before the host shown as ``***@``."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/?#]*@", r"\1***@", url, count=1)


def _is_event_stream(response: httpx2.Response) -> bool:
    """Whether a streamed answer is an event stream: ``text/event-stream``, with any
    parameters. llama-server sends it bare, vLLM (Starlette) and the hosted APIs with
    ``; charset=utf-8``; an answer that names no type is given the benefit of the doubt,
    an answer that names another (HTML, JSON) is not one."""
    ctype = response.headers.get("content-type", "")
    media = ctype.partition(";")[0].strip().lower()
    return not media or media == "text/event-stream"


# A broken answer's excerpt: this many characters, masked.
_EXCERPT = 2000
_EXCERPT_BYTES = _EXCERPT * 4  # UTF-8: at most four bytes a character


def _excerpt(raw: bytes) -> str:
    """The start of a broken answer, masked: ``raw`` is cut before masking (a little
    past the excerpt, so a key across the cut is still masked), since masking a whole
    32 MiB answer would hold the event loop for seconds."""
    head = raw[: _EXCERPT_BYTES + min(longest_secret(), 8192)]
    return redact(head.decode("utf-8", "replace"))[:_EXCERPT]


def _json(resp: httpx2.Response) -> dict[str, Any]:
    """A successful answer's JSON object. Anything else (HTML from a proxy, a truncated
    body, a list) is a broken answer, a :class:`StreamProtocolError` whose ``event`` is a
    masked excerpt: not an :class:`APIError`, whose 2xx status would read as the server's
    own answer (a scheduling server in front passed it on as a 200 with an error)."""
    try:
        body = _jsonexact.loads(resp.content)
    except orjson.JSONDecodeError:
        excerpt = _excerpt(resp.content)
        raise StreamProtocolError(
            f"the response (HTTP {resp.status_code}) is not JSON: {excerpt[:200]!r}", event=excerpt
        ) from None
    if not isinstance(body, dict):
        raise StreamProtocolError(
            f"the response (HTTP {resp.status_code}) is JSON but not an object ({type(body).__name__})"
        )
    return body


def _tokens_from(
    data: dict[str, Any], status: int, *, pieces: bool
) -> tuple[list[int], list[str | list[int]] | None]:
    """Ids (and pieces) from a ``/tokenize`` answer: ``{"tokens": [id, ...]}``, or with
    pieces ``{"tokens": [{"id": id, "piece": "text" | [byte, ...]}, ...]}``."""
    tokens = data.get("tokens")
    if not isinstance(tokens, list):
        raise StreamProtocolError(f"the /tokenize answer (HTTP {status}) has no list of tokens")
    ids: list[int] = []
    got: list[str | list[int]] = []
    for t in tokens:
        if isinstance(t, dict):
            i, piece = t.get("id"), t.get("piece")
            if isinstance(piece, str) or (
                isinstance(piece, list) and all(isinstance(b, int) and 0 <= b < 256 for b in piece)
            ):
                got.append(piece)
            else:
                raise StreamProtocolError(f"a /tokenize piece (HTTP {status}) is neither text nor bytes")
        else:
            i = t
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise StreamProtocolError(f"a /tokenize token id (HTTP {status}) is not a non-negative integer")
        ids.append(i)
    if pieces and len(got) == len(ids):
        return ids, got
    return ids, None


def _texts(params: Mapping[str, Any]) -> tuple[list[str], int]:
    """The request's text pieces (system, messages, tool inputs and results, tool
    definitions) and its message count. Shapes the API would refuse are skipped here:
    the server's answer reports them, an estimate must not fail."""
    texts: list[str] = []
    system = params.get("system")
    if isinstance(system, str):
        texts.append(system)
    elif isinstance(system, list):
        texts += [b["text"] for b in system if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
    messages = params.get("messages")
    n_messages = 0
    for m in messages if isinstance(messages, list | tuple) else ():
        if not isinstance(m, Mapping):
            continue
        n_messages += 1
        c = m.get("content")
        if isinstance(c, str):
            texts.append(c)
            continue
        for b in c if isinstance(c, list | tuple) else ():
            if not isinstance(b, Mapping):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
            elif b.get("type") in ("tool_use", "tool_result"):
                texts.append(orjson.dumps(b.get("input") or b.get("content") or "", default=str).decode())
    if params.get("tools"):
        texts.append(orjson.dumps(params["tools"], default=str).decode())
    return texts, n_messages


def _estimate(params: Mapping[str, Any]) -> int:
    """tiktoken o200k count of the request's text plus a few tokens per message."""
    return _count(*_texts(params))


def _count(texts: list[str], n_messages: int) -> int:
    return sum(count_tokens(t) for t in texts if t) + 4 * n_messages + 3
