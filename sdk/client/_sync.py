"""A blocking client for scripts, notebooks and WSGI applications.

``SyncClient`` runs one event loop in a background thread (an anyio blocking portal)
and one :class:`~sdk.Client` inside it, so every call shares one connection pool and
one scheduler, however many calls and threads use it; a call blocks its own thread
only. It takes the same arguments and gives the same values and errors::

    with SyncClient(base_url="http://127.0.0.1:8080") as c:
        print(c.create(model="m", max_tokens=64, messages=[...]).text)
        with c.stream(model="m", max_tokens=64, messages=[...]) as s:
            for text in s.text_deltas():
                print(text, end="")

Not for use from inside a running event loop (use :class:`~sdk.Client` there).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any, TypeVar, Unpack

import anyio
import sniffio
from anyio.from_thread import BlockingPortal

from .._errors import APIConnectionError, SDKError
from ..scheduler import TierMetrics
from ..stream import (
    ContentBlockDeltaEvent,
    Event,
    FlowControl,
    Message,
    StallPolicy,
    StreamStatistics,
    TextDelta,
)
from ._catalog import ModelInfo, TokenCount
from ._client import Client, Priority, TimeoutArg
from ._params import CountTokensParams, CreateParams
from ._stream import Stream

__all__ = ["SyncClient", "SyncStream"]

T = TypeVar("T")


class SyncStream:
    """A stream read from a thread: ``for event in s``, ``s.text_deltas()``,
    ``s.final_message()``, ``s.statistics()``."""

    def __init__(self, owner: SyncClient, portal: BlockingPortal, stream: Stream) -> None:
        self._owner = owner
        self._portal = portal
        self._stream = stream
        self._events = stream.__aiter__()

    def __iter__(self) -> Iterator[Event]:
        while True:
            try:
                yield self._portal.call(self._events.__anext__)
            except StopAsyncIteration:
                return
            except (Exception, asyncio.CancelledError) as e:  # the portal's loop is asyncio
                if self._owner._closed and not isinstance(e, SDKError):
                    raise APIConnectionError("the client was closed") from None
                raise

    def text_deltas(self) -> Iterator[str]:
        for ev in self:
            if isinstance(ev, ContentBlockDeltaEvent) and isinstance(ev.delta, TextDelta):
                yield ev.delta.text

    def final_message(self) -> Message:
        return self._portal.call(self._stream.final_message)

    def statistics(self) -> StreamStatistics:
        return self._stream.statistics()


class _StreamContext(AbstractContextManager[SyncStream]):
    def __init__(self, owner: SyncClient, portal: BlockingPortal, stream: Stream) -> None:
        self._owner = owner
        self._portal = portal
        self._cm = portal.wrap_async_context_manager(stream)

    def __enter__(self) -> SyncStream:
        try:
            inner = self._cm.__enter__()
        except (Exception, asyncio.CancelledError) as e:  # the portal's loop is asyncio
            if self._owner._closed and not isinstance(e, SDKError):
                raise APIConnectionError("the client was closed") from None
            raise
        return SyncStream(self._owner, self._portal, inner)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        if self._owner._closed:
            return None  # the client was closed meanwhile: the stream went with it
        return self._cm.__exit__(exc_type, exc, tb)


class SyncClient:
    """The blocking counterpart of :class:`~sdk.Client`; the same keyword arguments."""

    def __init__(self, **options: Any) -> None:
        self._lock = threading.Lock()
        self._portal, self._thread = _start_portal()
        try:
            self._client: Client = self._portal.call(_make, options)
        except BaseException:
            _stop_portal(self._portal, self._thread)
            raise
        self._closed = False

    def __repr__(self) -> str:
        return f"Sync{self._client!r}"

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the client and stop its event loop thread (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._portal.call(self._client.aclose)
        finally:
            _stop_portal(self._portal, self._thread)

    @property
    def client(self) -> Client:
        """The async client inside (for its attributes: ``base_url``, ``scheduler``, ...)."""
        return self._client

    def _call(self, func: Callable[..., Any], *args: Any) -> Any:
        if self._closed:
            raise RuntimeError("the client is closed")
        _not_in_a_loop()
        return self._portal.call(func, *args)

    def create(
        self,
        *,
        priority: Priority = None,
        tenant: str | None = None,
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: TimeoutArg = None,
        **params: Unpack[CreateParams],
    ) -> Message:
        """As :meth:`sdk.Client.create`, blocking."""

        async def run() -> Message:
            return await self._client.create(
                priority=priority,
                tenant=tenant,
                extra_headers=extra_headers,
                extra_body=extra_body,
                timeout=timeout,
                **params,
            )

        result: Message = self._call(run)
        return result

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
    ) -> AbstractContextManager[SyncStream]:
        """As :meth:`sdk.Client.stream`: ``with c.stream(...) as s: for t in s.text_deltas()``."""
        if self._closed:
            raise RuntimeError("the client is closed")
        _not_in_a_loop()
        s = self._client.stream(
            priority=priority,
            tenant=tenant,
            extra_headers=extra_headers,
            extra_body=extra_body,
            timeout=timeout,
            stall=stall,
            flow=flow,
            **params,
        )
        return _StreamContext(self, self._portal, s)

    def count_tokens(
        self,
        *,
        extra_headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        timeout: TimeoutArg = None,
        **params: Unpack[CountTokensParams],
    ) -> TokenCount:
        async def run() -> TokenCount:
            return await self._client.count_tokens(
                extra_headers=extra_headers, extra_body=extra_body, timeout=timeout, **params
            )

        result: TokenCount = self._call(run)
        return result

    def models(self, *, timeout: TimeoutArg = None) -> list[ModelInfo]:
        async def run() -> list[ModelInfo]:
            return await self._client.models(timeout=timeout)

        result: list[ModelInfo] = self._call(run)
        return result

    def tokenize(self, text: str, *, model: str | None = None, timeout: TimeoutArg = None) -> list[int]:
        """The server's token ids of ``text`` (see :meth:`sdk.Client.tokenize`)."""

        async def run() -> list[int]:
            return await self._client.tokenize(text, model=model, timeout=timeout)

        result: list[int] = self._call(run)
        return result

    def metrics(self) -> Mapping[str, TierMetrics]:
        return self._client.metrics()


def _start_portal() -> tuple[BlockingPortal, threading.Thread]:
    """An event loop in a daemon thread (a client left unclosed does not hold up the
    interpreter's exit) and the portal other threads call into it through."""
    holder: list[BlockingPortal] = []
    failure: list[BaseException] = []
    ready = threading.Event()

    async def main() -> None:
        async with BlockingPortal() as portal:
            holder.append(portal)
            ready.set()
            await portal.sleep_until_stopped()

    def run() -> None:
        try:
            anyio.run(main)
        except BaseException as e:  # reported to the thread that waits for the start
            failure.append(e)
            ready.set()

    thread = threading.Thread(target=run, name="seam-llm-sync-client", daemon=True)
    thread.start()
    ready.wait()
    if not holder:
        raise RuntimeError("the sync client's event loop did not start") from (
            failure[0] if failure else None
        )
    return holder[0], thread


def _stop_portal(portal: BlockingPortal, thread: threading.Thread) -> None:
    portal.call(portal.stop, True)  # cancel what is left (a stream still open somewhere)
    thread.join()


def _not_in_a_loop() -> None:
    try:
        sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return
    raise RuntimeError("SyncClient blocks its thread: inside an event loop, use sdk.Client")


def _make(options: dict[str, Any]) -> Client:
    anyio.get_current_task()  # made inside the portal's event loop, which its pool then belongs to
    return Client(**options)
