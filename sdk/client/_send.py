"""Sending: one request with retries until its response head is in, the typed error for
an error status, and bounded reads of what comes back.

:class:`Sender` owns the client's HTTP pool, its headers and credentials; what decides
retries and timeouts (``timeout``, ``idle_timeout``, ``retry``, ``retry_budget``) and
how a request's tier goes on the wire (``engine``, ``server_info``) are read from the
client's settings at each send (:class:`Settings`), so changing them on a live client
takes effect. Transport exceptions become SDK errors only through
:func:`sdk._errors.error_from_transport`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import anyio
import httpx2
import orjson

from .._errors import (
    APIError,
    APITimeoutError,
    RedirectError,
    ResponseTooLargeError,
    StreamProtocolError,
    api_error_from_body,
    error_from_transport,
    longest_secret,
    redact,
)
from ..http import (
    MAX_ERROR_BODY,
    MAX_RESPONSE_BODY,
    RetryBudget,
    RetryPolicy,
    decoded_chunks,
    loads_exact,
    parse_retry_after,
    read_bounded,
    retry_decision,
)
from ..scheduler import Flight
from ._backends import Backend, BackendName
from ._profile import PRIORITY_HEADER, TENANT_HEADER, EngineProfile
from ._secrets import Credentials

__all__ = ["Sender", "Settings", "TimeoutArg", "json_object", "root_of", "tenant_header"]

log = logging.getLogger("sdk")

TimeoutArg = float | httpx2.Timeout | None

# A broken answer's excerpt: this many characters, masked.
_EXCERPT = 2000
_EXCERPT_BYTES = _EXCERPT * 4  # UTF-8: at most four bytes a character


class Settings(Protocol):
    """What a send reads from the client each time (its public settings)."""

    timeout: httpx2.Timeout
    idle_timeout: float | None
    retry: RetryPolicy
    retry_budget: RetryBudget

    @property
    def server_info(self) -> Mapping[str, Any] | None: ...

    @property
    def engine(self) -> EngineProfile | None: ...


class Sender:
    """See the module doc. ``base_url``: where the API's paths go; ``root``: the server's
    root (the base URL without a trailing ``/v1``), where engine endpoints such as
    ``/tokenize`` live; ``shown_url``: the base URL as messages show it (no password)."""

    def __init__(
        self,
        settings: Settings,
        http: httpx2.AsyncClient,
        *,
        base_url: str,
        shown_url: str,
        backend: Backend,
        backend_name: BackendName,
        credentials: Credentials,
        headers: Mapping[str, str],
    ) -> None:
        self.settings = settings
        self.http = http
        self.base_url = base_url
        self.root = root_of(base_url)
        self.shown_url = shown_url
        self.backend = backend
        self.backend_name = backend_name
        self.credentials = credentials
        self.headers = dict(headers)
        credentials.register_headers(self.headers)
        self.closed = False
        self.rng = random.Random()

    def check_open(self) -> None:
        if self.closed:
            raise RuntimeError("the client is closed")

    def request_headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        h = dict(self.headers)
        key = self.credentials.key.value
        if key:
            h.update(self.backend.headers(key))
        if extra:
            self.credentials.register_headers(extra)
            h.update(extra)
        return h

    async def send(
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
        content: bytes | None = None,
        events: bool = True,
    ) -> httpx2.Response:
        """Send with retries until the response headers are in; raise the typed error for
        an error status. With ``stream`` the body is left unread for the caller, and a 2xx
        must be an event stream (:func:`_is_event_stream`) unless ``events`` is false.
        ``content``: a JSON body already serialized (instead of ``body``). With a
        ``flight`` every response's rate-limit headers go to the scheduler, and a 429 or
        529 that the retry policy would retry sends the request back to the scheduler's
        queue instead of sleeping (the scheduler holds all admissions for the delay).
        ``root``: ``path`` is under the server's root, not the base URL."""
        self.check_open()
        settings = self.settings
        hdrs = self.request_headers(headers)
        profile = settings.engine
        if flight is not None and profile is not None:
            if flight.asked:
                # The tier the caller named travels with the request, to an engine that
                # honours it and only there (unnamed, a scheduling server gives the key's).
                tier = flight.ticket.tier
                if profile.priority == "header":
                    hdrs[PRIORITY_HEADER] = tier.name
                elif profile.priority == "body" and body is not None and "priority" not in body:
                    body = {**body, "priority": tier.rank}
            hdrs.update(tenant_header(settings, flight))
        if content is None and body is not None:
            content = orjson.dumps(body)
        if content is not None:
            hdrs.setdefault("content-type", "application/json")
        t: httpx2.Timeout = settings.timeout
        if timeout is not None:
            t = timeout if isinstance(timeout, httpx2.Timeout) else httpx2.Timeout(timeout)
        elif flight is not None and profile is not None and profile.schedules:
            # A scheduling server answers when it admits the request: the wait for the head
            # is its queue, as long as the load makes it. The body is still watched: a
            # stream's idle timeout ends one that brings nothing but pings.
            t = httpx2.Timeout(connect=t.connect, read=None, write=t.write, pool=t.pool)
        elif stream and settings.idle_timeout is not None:
            t = httpx2.Timeout(connect=t.connect, read=settings.idle_timeout, write=t.write, pool=t.pool)
        hdrs["accept-encoding"] = "identity" if stream else "gzip, deflate"  # what sdk.http reads
        backend_path = self.backend.create_path
        deadline = _deadline(t)
        settings.retry_budget.deposit()
        attempt = 0
        while True:
            request = self.http.build_request(
                method,
                (self.root if root else self.base_url) + path,
                content=content,
                headers=hdrs,
                timeout=t,
            )
            try:
                with anyio.fail_after(deadline):  # the head, whatever the pace of its bytes
                    response = await self.http.send(request, stream=True)
            except Exception as e:
                err = error_from_transport(e)
                if err is None:
                    raise
                delay = retry_decision(None, {}, attempt, settings.retry, rng=self.rng)
                if delay is None or not settings.retry_budget.withdraw():
                    raise err from e
                if attempt == 0 and not isinstance(err, APITimeoutError):
                    # At once: through a pool that is not ours (an http_client passed in),
                    # most often a kept-alive connection the server had closed; our own pool
                    # sends those again by itself, spending no retry (sdk.http._transport).
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
                    return await _whole(response, deadline)
                if events and not _is_event_stream(response):
                    raise await _not_a_stream(response, deadline)
                return response
            err = await _error(response, deadline)
            if status == 404 and method == "POST" and path == backend_path:
                err.message = _not_found_hint(err.message, self.shown_url + path, self.backend_name)
            if flight is not None and status == 503 and profile is not None and profile.schedules:
                # A scheduling server's queue is full: back in our own queue for its
                # retry-after, however often (never a failure); our window shrinks meanwhile.
                wait = parse_retry_after(response.headers)
                wait = wait if wait is not None else settings.retry.backoff(min(attempt, 8), self.rng)
                log.info("%s %s: 503, back in the scheduler's queue for %.2f s", method, path, wait)
                attempt += 1
                flight.requeue(hold=0.0)
                await anyio.sleep(min(wait, 60.0))
                await flight.admit()
                continue
            delay = retry_decision(status, response.headers, attempt, settings.retry, rng=self.rng)
            if flight is not None and status in (429, 529) and delay is not None:
                log.info("%s %s: %d, back in the scheduler's queue for %.2f s", method, path, status, delay)
                attempt += 1
                flight.requeue(hold=delay)  # back in line; every admission waits out the delay
                await flight.admit()
                continue
            if delay is None or not settings.retry_budget.withdraw():
                raise err
            log.info("%s %s: %d, retry %d in %.2f s", method, path, status, attempt + 1, delay)
            attempt += 1
            await anyio.sleep(delay)

    async def get_small(self, url: str, limit: int) -> object:
        """A small JSON document: ``None`` unless a 200 of at most ``limit`` bytes."""
        return (await self.peek(url, limit))[1]

    async def peek(self, url: str, limit: int) -> tuple[dict[str, str], object]:
        """``GET url``: the answer's headers (names in lower case), and its JSON body where
        it is a 200 of at most ``limit`` bytes that parses (else ``None``)."""
        async with self.http.stream(
            "GET", url, headers={**self.request_headers(None), "accept-encoding": "identity"}, timeout=5.0
        ) as resp:
            headers = {k.lower(): v for k, v in resp.headers.items()}
            if resp.status_code != 200:
                return headers, None
            raw, more = await read_bounded(resp, limit)
        if more:
            return headers, None
        try:
            return headers, orjson.loads(raw)
        except orjson.JSONDecodeError:
            return headers, None

    async def delete(
        self, url: str, *, headers: Mapping[str, str] | None = None, timeout: float = 5.0
    ) -> None:
        """``DELETE url`` once (no retries), the answer discarded."""
        with anyio.fail_after(timeout):
            resp = await self.http.delete(url, headers=self.request_headers(headers), timeout=timeout)
        await resp.aclose()

    @staticmethod
    def chunks(resp: httpx2.Response) -> AsyncIterator[bytes]:
        """A streamed response's body, decoded in bounded pieces."""
        return decoded_chunks(resp)


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


def json_object(resp: httpx2.Response) -> dict[str, Any]:
    """A successful answer's JSON object. Anything else (HTML from a proxy, a truncated
    body, a list) is a broken answer, a :class:`StreamProtocolError` whose ``event`` is a
    masked excerpt: not an :class:`APIError`, whose 2xx status would read as the server's
    own answer (a scheduling server in front passed it on as a 200 with an error)."""
    try:
        body = loads_exact(resp.content)
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


def tenant_header(settings: Settings, flight: Flight) -> dict[str, str]:
    """To a scheduling server, through a gateway key: the end tenant a request is for
    (its stream belongs to that tenant, so a later request about it names it too)."""
    profile, info = settings.engine, settings.server_info
    gateway = info is not None and info.get("gateway") is True
    if profile is not None and profile.schedules and flight.ticket.tenant and gateway:
        return {TENANT_HEADER: flight.ticket.tenant}
    return {}


def root_of(url: str) -> str:
    """A server's root: ``url`` without a trailing ``/v1``."""
    return url[:-3] if url.endswith("/v1") else url


def _not_found_hint(message: str, url: str, backend: str) -> str:
    """What a 404 on the create path most likely means, said with the URL that was asked."""
    if backend == "messages" and "/v1/v1/" in url:
        # base_url ".../v1" with the Messages API, whose paths start with /v1/messages
        return (
            f"{message} (POST {url}: the base URL ends in /v1 and the Messages API's paths "
            "start with /v1/messages; drop /v1 from base_url, or pass backend='openai' "
            "for chat completions)"
        )
    other = "messages" if backend == "openai" else "openai"
    shape = "ends in /vN" if backend == "openai" else "does not end in /vN"
    return (
        f"{message} (POST {url} with backend={backend!r}: the base URL {shape}; if this server "
        f"speaks the other API, pass backend={other!r} or a base URL that points at it)"
    )


def _request_id(response: httpx2.Response) -> str | None:
    """The server's request id, redacted (a server may put anything there, the key too)."""
    found = response.headers.get("request-id") or response.headers.get("x-request-id")
    return None if found is None else redact(found)


def _deadline(t: httpx2.Timeout) -> float | None:
    """How long a response head may take to arrive (and a non-streamed body, again):
    the connect and read timeouts together, however slowly its bytes come."""
    if t.connect is None or t.read is None:
        return None
    return t.connect + t.read


def _is_event_stream(response: httpx2.Response) -> bool:
    """Whether a streamed answer is an event stream: ``text/event-stream``, with any
    parameters. llama-server sends it bare, vLLM (Starlette) and the hosted APIs with
    ``; charset=utf-8``; an answer that names no type is given the benefit of the doubt,
    an answer that names another (HTML, JSON) is not one."""
    ctype = response.headers.get("content-type", "")
    media = ctype.partition(";")[0].strip().lower()
    return not media or media == "text/event-stream"


def _excerpt(raw: bytes) -> str:
    """The start of a broken answer, masked: ``raw`` is cut before masking (a little
    past the excerpt, so a key across the cut is still masked), since masking a whole
    32 MiB answer would hold the event loop for seconds."""
    head = raw[: _EXCERPT_BYTES + min(longest_secret(), 8192)]
    return redact(head.decode("utf-8", "replace"))[:_EXCERPT]
