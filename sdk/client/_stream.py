"""What :meth:`sdk.Client.stream` returns: the async context manager around a
:class:`~sdk.stream.MessageStream` that ties it to its scheduler flight and to the
client's life."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING

from .._errors import OverloadedError, RateLimitError, SDKError
from ..scheduler import Flight, RequestMetrics, TicketState
from ..stream import Message, MessageState, MessageStream, StreamStatistics
from ..telemetry import RequestTrace

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["Stream"]


class Stream:
    """``async with client.stream(...) as s``: the request is queued and sent on entry.

    ``async for event in s`` yields the neutral events, ``s.text_deltas()`` only the
    text, ``await s.final_message()`` the accumulated message (after the block: what
    was received, a snapshot if the stream was left early). ``s.metrics()``: queue time,
    TTFT, ITL, TPOT and E2EL of this request.
    """

    def __init__(
        self, client: Client, inner: MessageStream, flight: list[Flight], trace: RequestTrace | None = None
    ) -> None:
        self._client = client
        self._trace = trace
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
        self._client._sender.check_open()
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
            if self._trace is not None:
                self._trace.finish(message=None, metrics=None, error=exc)
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
        trace = self._trace
        if trace is not None:
            try:
                resumes = self._inner.statistics().resumes
            except RuntimeError:  # it never opened
                resumes = 0
            trace.finish(
                message=st.message(),
                metrics=flight.metrics(),
                error=exc,
                resumes=resumes,
            )

    def __aiter__(self) -> MessageStream:
        return self._inner  # no wrapper per event: the client adds no cost to the hot path

    def text_deltas(self) -> AsyncIterator[str]:
        return self._inner.text_deltas()

    async def final_message(self) -> Message:
        if self._open:
            return await self._inner.get_final_message()
        return self._inner.state.message()

    def preempt(self) -> bool:
        """Give the request's slot up: the upstream is closed at the next resumable point
        (between blocks or inside a text block), and the stream continues when it is
        read on, re-admitted by the scheduler (see :meth:`MessageStream.preempt`). False,
        and nothing changes, where it holds no slot (paused already, or ended) or cannot
        resume."""
        if not self.holds_slot:
            return False
        return self._inner.preempt()

    def hold_resumes(self, gate: Callable[[], Awaitable[None]] | None) -> None:
        """Before each resume (after a preemption, a stall or a break), wait for
        ``gate()`` (see :meth:`MessageStream.hold_resumes`)."""
        self._inner.hold_resumes(gate)

    @property
    def holds_slot(self) -> bool:
        """The request is admitted and holds its scheduler slot now (not queued, paused
        or ended)."""
        return bool(self._flight) and self._flight[0].ticket.state is TicketState.RUNNING

    def _abort(self, err: SDKError) -> None:
        """Client closing: the consumer's next step raises ``err``; no resume follows."""
        self._inner.abort(err)

    async def _closed(self) -> None:
        """Client closing: wait until the reader has closed its response (and stopped a
        kept stream's generation)."""
        await self._inner.reader_closed()
