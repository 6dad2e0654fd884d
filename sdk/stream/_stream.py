"""The message stream: flow-controlled reading, accumulation, stall/resume, cleanup.

The HTTP part is injected: ``open`` is a coroutine function returning an
:class:`Upstream` (an async iterator of body bytes and a way to close it), and the
optional ``resume`` hook returns the :class:`Upstream` of a continuation request.
A background task reads the body into a bounded :class:`~._flow.FlowBuffer`; the
consumer's ``async for`` takes events out, folds them into the state and raises
mid-stream errors as typed errors carrying the partial message.

Recovery lives here, not in the client: with a resume hook, a stall cancel, a dropped
connection, an idle timeout or a body cut short continue the message with a prefilled
continuation (at a resumable point, within ``StallPolicy.max_resumes``); before the
first event the request is simply sent again. An ``error`` event or a protocol error is
an answer and is never resumed.

Use it only as an async context manager: leaving the block early, an exception in the
consumer or a cancelled task closes the response under a shielded scope.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import NoReturn, Protocol

import anyio
from anyio.abc import TaskGroup

from .._errors import (
    APIConnectionError,
    APITimeoutError,
    IncompleteStreamError,
    SDKError,
    StreamProtocolError,
    error_from_transport,
)
from ._accumulate import Message, MessageState, apply, error_from_event
from ._events import (
    AnthropicEventDecoder,
    ContentBlockDeltaEvent,
    ContentBlockStartEvent,
    ContentBlockStopEvent,
    ErrorEvent,
    Event,
    MessageDeltaEvent,
    MessageStartEvent,
    MessageStopEvent,
    PingEvent,
    TextBlock,
    TextDelta,
    Usage,
)
from ._flow import FlowBuffer, FlowControl, StallPolicy, StreamStatistics, _End

__all__ = ["EventDecoder", "MessageStream", "ResumeHook", "ResumeRequest", "Upstream"]


class EventDecoder(Protocol):
    """A sans-IO bytes -> events decoder (:class:`AnthropicEventDecoder`, ...)."""

    def feed(self, chunk: bytes) -> list[Event]: ...

    def flush(self) -> list[Event]: ...


@dataclass(frozen=True, slots=True)
class Upstream:
    """An open response body.

    ``repeat``: text the new stream is expected to repeat at its start (for example the
    trailing whitespace a prefill had to drop); it is removed once if it does come back.
    """

    chunks: AsyncIterator[bytes]
    aclose: Callable[[], Awaitable[None]]
    repeat: str = ""


@dataclass(frozen=True, slots=True)
class ResumeRequest:
    """What a resume hook needs: the message received so far and its text (the prefill).

    ``state.open`` is ``None`` (the cut fell between blocks) or an open text block.
    ``output_tokens`` is a lower bound of the tokens already generated: the larger of the
    output the server reported and the text deltas handed out (many servers report
    output only at the end), so a continuation can lower ``max_tokens`` by it.
    """

    message: Message
    prefill: str
    attempt: int
    state: MessageState
    output_tokens: int = 0


ResumeHook = Callable[[ResumeRequest], Awaitable[Upstream]]


class _Splicer:
    """Re-indexes a continuation stream so it extends the interrupted message seamlessly."""

    def __init__(self, state: MessageState, repeat: str) -> None:
        self.base_usage = state.usage
        self.usage = Usage()
        self.open_index = state.open.index if state.open is not None else None
        self.offset = state.next_index
        self.repeat = repeat
        self.joined = False  # the continuation's first text block merged into the open one

    def _map(self, index: int) -> int:
        if self.open_index is not None and self.joined:
            return index + self.open_index
        return index + self.offset

    def __call__(self, events: list[Event]) -> list[Event]:
        out: list[Event] = []
        for ev in events:
            if isinstance(ev, MessageStartEvent):
                self.usage = ev.usage
                out.append(MessageDeltaEvent(None, None, self.base_usage.plus(ev.usage)))
            elif (
                isinstance(ev, MessageDeltaEvent | MessageStopEvent)
                and self.open_index is not None
                and not self.joined
            ):
                out.append(ContentBlockStopEvent(self.open_index))
                self.offset = self.open_index + 1
                self.open_index = None
                out += self([ev])
            elif isinstance(ev, MessageDeltaEvent):
                self.usage = self.usage.merged(ev.usage)  # cumulative within this segment
                out.append(
                    MessageDeltaEvent(ev.stop_reason, ev.stop_sequence, self.base_usage.plus(self.usage))
                )
            elif isinstance(ev, ContentBlockStartEvent):
                if self.open_index is not None and not self.joined:
                    if ev.index == 0 and isinstance(ev.block, TextBlock):
                        self.joined = True
                        if ev.block.text:
                            out += self._text(self.open_index, ev.block.text)
                        continue
                    out.append(ContentBlockStopEvent(self.open_index))
                    self.offset = self.open_index + 1
                    self.open_index = None
                out.append(ContentBlockStartEvent(self._map(ev.index), ev.block))
            elif isinstance(ev, ContentBlockDeltaEvent):
                idx = self._map(ev.index)
                if isinstance(ev.delta, TextDelta) and self.repeat:
                    out += self._text(idx, ev.delta.text)
                else:
                    out.append(ContentBlockDeltaEvent(idx, ev.delta))
            elif isinstance(ev, ContentBlockStopEvent):
                out.append(ContentBlockStopEvent(self._map(ev.index)))
            else:
                out.append(ev)
        return out

    def _text(self, index: int, text: str) -> list[Event]:
        if self.repeat:
            n = 0
            while n < len(text) and n < len(self.repeat) and text[n] == self.repeat[n]:
                n += 1
            if n < len(self.repeat) and n < len(text):
                self.repeat = ""  # it did not come back: keep everything
            else:
                self.repeat = self.repeat[n:]
                text = text[n:]
        return [ContentBlockDeltaEvent(index, TextDelta(text))] if text else []


class _Source:
    """One upstream body: read by the background reader, or inline by the consumer while
    the reader is parked (never both at once)."""

    __slots__ = ("decoder", "finished", "inline", "result", "resumable", "splice", "upstream")

    def __init__(
        self, upstream: Upstream, decoder: EventDecoder, splice: _Splicer | None, inline: bool
    ) -> None:
        self.upstream = upstream
        self.decoder = decoder
        self.splice = splice
        self.inline = inline  # the consumer may read it itself
        self.resumable = True  # between blocks or inside a text block: a prefill can continue it
        self.finished = False
        self.result: BaseException | bool | None = None  # how an inline read ended the body


INLINE_GRACE = 0.05  # a consumer away this long (at most twice this) hands reading back
_SMALL_BATCH = 4  # events of one read; more means the network is ahead of the consumer
_BIG_READ = 16384


class MessageStream:
    """``async with MessageStream(open) as s: async for event in s: ...``

    ``state`` is what the consumer has been handed (the cursor); ``statistics()`` reports
    buffering, every pause, stall cancel and resume. ``idle_timeout``: seconds without a
    non-ping event from the server (pings and SSE comments keep a connection alive but
    are not progress; time paused for a slow consumer does not count) before the read
    ends in :class:`APITimeoutError`, which a resume hook then recovers from.

    Who reads: a background task reads ahead into the bounded buffer (so a consumer that
    is away makes the reader pause, and the stall policy can act). A consumer that keeps
    finding the buffer empty (the network is the slower side, one event per read, the
    usual case for a model server) reads the socket itself in ``__anext__`` while the
    reader is parked, which saves a task switch per event; a consumer away for
    ``INLINE_GRACE`` hands reading back to the task, and so does a read that brings many
    events at once (the network got ahead). Not with a backlog limit: that policy is
    about read-ahead.
    """

    def __init__(
        self,
        open: Callable[[], Awaitable[Upstream]],
        *,
        decoder: Callable[[], EventDecoder] = AnthropicEventDecoder,
        flow: FlowControl | None = None,
        stall: StallPolicy | None = None,
        resume: ResumeHook | None = None,
        idle_timeout: float | None = None,
    ) -> None:
        stall = stall or StallPolicy()
        if stall.enabled and resume is None:
            raise ValueError("an enabled StallPolicy needs a resume hook")
        flow = flow or FlowControl()
        if stall.max_backlog_bytes is not None and stall.max_backlog_bytes > flow.high_water_bytes:
            raise ValueError("max_backlog_bytes above high_water_bytes could never be reached")
        if idle_timeout is not None and not idle_timeout > 0:
            raise ValueError("idle_timeout must be positive (or None)")
        self._open = open
        self._decoder = decoder
        self._flow = flow
        self._stall = stall
        self._resume = resume
        self._idle_timeout = idle_timeout
        grace = min(INLINE_GRACE, stall.stall_timeout / 2) if stall.enabled else INLINE_GRACE
        backlog = stall.enabled and stall.max_backlog_bytes is not None
        self._grace = 0.0 if grace < 0.005 or backlog else grace  # 0: never read inline
        self._tg: TaskGroup | None = None
        self._buf: FlowBuffer | None = None
        self._batch: list[Event] = []
        self._pos = 0
        self._state = MessageState()
        self._done = False
        self._attempts = 0
        self._deltas = 0  # text deltas handed out: a lower bound of the output tokens
        self._reader: anyio.CancelScope | None = None  # the running reader's scope
        self._progress = 0  # reads that brought a non-ping event (the idle watch's clock)
        self._idle_fired = False
        self._aborted: BaseException | None = None
        self._src: _Source | None = None
        self._inline_ok = False  # the consumer asked to read itself
        self._parked: anyio.Event | None = None  # set: the parked reader takes over again
        self._inline_reading = False
        self._inline_scope: anyio.CancelScope | None = None
        self._read_done: anyio.Event | None = None
        self._park_signal: anyio.Event | None = None
        self._inline_reads = 0
        self._waits = 0  # consecutive times the consumer found the buffer empty

    @property
    def state(self) -> MessageState:
        return self._state

    def statistics(self) -> StreamStatistics:
        if self._buf is None:
            raise RuntimeError("the stream is not open")
        return self._buf.statistics()

    async def __aenter__(self) -> MessageStream:
        try:
            upstream = await self._open()
        except Exception as e:
            err = error_from_transport(e)
            if err is None or err is e:
                raise
            raise err from e
        self._buf = FlowBuffer(self._flow, self._stall)
        tg = anyio.create_task_group()
        try:
            await tg.__aenter__()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await upstream.aclose()
            raise
        self._tg = tg
        self._start(upstream, None)
        if self._idle_timeout is not None or self._grace:
            tg.start_soon(self._mind)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        tg, self._tg = self._tg, None
        if tg is None:
            return None
        tg.cancel_scope.cancel()
        if isinstance(exc, Exception):
            # The reader never raises, so the consumer's own error propagates unwrapped.
            await tg.__aexit__(None, None, None)
            return None
        return await tg.__aexit__(exc_type, exc, tb)

    def abort(self, exc: BaseException) -> None:
        """End the stream from outside (a client closing): the consumer's next
        ``__anext__`` raises ``exc`` (with the partial message when it is an
        :class:`SDKError`), nothing resumes, and the reader closes its response under a
        shielded scope. A stream that has already ended is left as it is."""
        if self._done or self._aborted is not None:
            return
        self._aborted = exc
        for scope in (self._reader, self._inline_scope):
            if scope is not None:
                scope.cancel()
        if self._buf is not None:
            self._buf.put_nowait(_End(stalled=False))  # wakes a consumer waiting for events

    def _start(self, upstream: Upstream, splice: _Splicer | None) -> None:
        tg = self._tg
        assert tg is not None
        src = self._src = _Source(upstream, self._decoder(), splice, self._grace > 0)
        tg.start_soon(self._pump, src)

    async def _mind(self) -> None:
        """Hand reading back to the reader when an inline consumer has been away, and
        cancel a read that brought nothing but pings for ``idle_timeout``.

        It sleeps on an event or a timer, never on a per-event signal, and compares
        counters, so the hot path pays no clock read or timer per event; the idle timeout
        fires between ``limit`` and 1.25 x ``limit`` after the last progress. While the
        consumer waits in a read it does not tick at all (it waits for that read to end).
        """
        limit = self._idle_timeout
        seen = seen_reads = -1
        since = anyio.current_time()
        while True:
            if self._parked is not None and self._inline_reading:
                done = self._read_done = anyio.Event()
                wait = math.inf if limit is None else max(0.0, since + limit - anyio.current_time())
                with anyio.move_on_after(wait):
                    await done.wait()
                if done.is_set():  # look again a step later, not at every read
                    await anyio.sleep(self._grace)
            elif self._parked is not None:
                await anyio.sleep(self._grace)  # the consumer is between reads, or away
            elif limit is not None:
                await anyio.sleep(limit / 4)
            else:
                signal = self._park_signal = anyio.Event()
                await signal.wait()  # nothing to mind until the reader parks
                continue
            now = anyio.current_time()
            parked = self._parked
            if parked is not None and not self._inline_reading:
                if self._inline_reads == seen_reads:  # no inline read for a whole step
                    self._inline_ok = False
                    self._waits = 0
                    self._parked = None
                    parked.set()
                seen_reads = self._inline_reads
            if limit is None:
                continue
            # The read to time out: the consumer's own, else the reader's unless parked.
            target = self._inline_scope or (self._reader if self._parked is None else None)
            buf = self._buf
            if self._progress != seen or target is None or buf is None or buf.paused:
                seen, since = self._progress, now  # progress, no read going on, or our pause
            elif now - since >= limit:
                self._idle_fired = True
                target.cancel()
                since = now

    def _ingest(self, src: _Source, chunk: bytes) -> list[Event]:
        events = src.decoder.feed(chunk)
        if not events:
            return events
        if src.splice is not None:
            events = src.splice(events)
        progress = False
        for ev in events:
            if isinstance(ev, PingEvent):
                continue
            progress = True
            if isinstance(ev, ContentBlockStartEvent):
                src.resumable = isinstance(ev.block, TextBlock)
            elif isinstance(ev, ContentBlockStopEvent):
                src.resumable = True
            elif isinstance(ev, MessageStopEvent | ErrorEvent) or (
                isinstance(ev, MessageDeltaEvent) and ev.stop_reason is not None
            ):
                src.finished = True
        if progress:
            self._progress += 1
        return events

    def _idle_error(self) -> APITimeoutError:
        return APITimeoutError(f"no stream event but pings for {self._idle_timeout:g} s (idle timeout)")

    async def _pump(self, src: _Source) -> None:
        """Read one upstream into the buffer. Never raises: failures go to the consumer."""
        buf = self._buf
        assert buf is not None
        it = src.upstream.chunks
        pending = 0
        end: _End | BaseException | None = None
        scope = self._reader = anyio.CancelScope()
        self._idle_fired = False
        try:
            with scope:
                while True:
                    if self._inline_ok and src.inline:
                        parked = self._parked = anyio.Event()
                        # a consumer already waiting looks again (and reads); it carries
                        # the bytes read so far that made no event yet
                        buf.put_nowait([], pending)
                        pending = 0
                        signal, self._park_signal = self._park_signal, None
                        if signal is not None:
                            signal.set()
                        await parked.wait()
                        if src.result is True:
                            break
                        if isinstance(src.result, BaseException):
                            raise src.result
                        continue
                    try:
                        chunk = await it.__anext__()
                    except StopAsyncIteration:
                        break
                    pending += len(chunk)
                    events = self._ingest(src, chunk)
                    if not events:
                        continue
                    can_stall = (
                        src.resumable and not src.finished and self._attempts < self._stall.max_resumes
                    )
                    ok = await buf.put(events, pending, can_stall=can_stall)
                    pending = 0
                    if not ok:
                        buf.cancels += 1
                        buf.note("cancel")
                        end = _End(stalled=True)
                        return
                tail = src.decoder.flush()
                if tail:
                    buf.put_nowait(src.splice(tail) if src.splice is not None else tail, pending)
                end = _End(stalled=False)
            if scope.cancelled_caught:  # the idle watch or abort() stopped this read
                end = self._idle_error() if self._idle_fired else _End(stalled=False)
        except Exception as e:
            end = error_from_transport(e) or e
        finally:
            if self._reader is scope:
                self._reader = None
            self._parked = None
            replaced = getattr(getattr(src.decoder, "sse", None), "replaced", 0)
            buf.replaced += replaced if isinstance(replaced, int) else 0
            with anyio.CancelScope(shield=True):
                try:
                    closer = getattr(it, "aclose", None)
                    # an async generator left early: finalize it now (not while the
                    # consumer is inside it: then closing the response is what ends it)
                    if closer is not None and not self._inline_reading:
                        await closer()
                    await src.upstream.aclose()
                except Exception as e:  # closing a broken connection may fail; report it
                    if isinstance(end, _End) and not end.stalled:
                        end = error_from_transport(e) or e
            if end is not None:  # None: cancelled, nobody is reading any more
                buf.put_nowait(end)

    def _hand_back(self, src: _Source, result: BaseException | bool) -> None:
        """An inline read ended the body: the parked reader finishes it (flush, close,
        the end item) exactly as if it had read that end itself."""
        src.result = result
        parked, self._parked = self._parked, None
        if parked is not None:
            parked.set()

    def __aiter__(self) -> MessageStream:
        return self

    async def __anext__(self) -> Event:
        while True:
            if self._aborted is not None:
                if self._done:
                    raise StopAsyncIteration
                self._fail(self._aborted)
            if self._pos < len(self._batch):
                ev = self._batch[self._pos]
                self._pos += 1
                if self._stall.enabled and self._buf is not None:
                    self._buf.last_take = anyio.current_time()  # idle time counts per event
                try:
                    self._state = apply(self._state, ev)
                except StreamProtocolError:
                    self._done = True
                    raise
                if type(ev) is ContentBlockDeltaEvent:
                    if type(ev.delta) is TextDelta:
                        self._deltas += 1
                elif isinstance(ev, ErrorEvent):
                    self._done = True
                    raise error_from_event(ev, self._state)
                return ev
            if self._done:
                raise StopAsyncIteration
            buf = self._buf
            if buf is None:
                raise RuntimeError("iterate a MessageStream inside `async with`")
            if buf.empty:
                src = self._src
                if self._parked is not None and src is not None:
                    await self._read_inline(buf, src)
                    continue
                item = await buf.get()
                # Waited for a small batch: the network is the slower side. Twice in a
                # row, and the reader parks after the read it is in.
                if isinstance(item, list) and len(item) <= _SMALL_BATCH:
                    self._waits += 1
                    if self._waits >= 2 and not buf.paused and src is not None and src.inline:
                        self._inline_ok = True
                else:
                    self._waits = 0
            else:
                self._waits = 0
                item = await buf.get()
            if self._aborted is not None:
                continue
            if isinstance(item, list):
                self._batch, self._pos = item, 0
            elif isinstance(item, _End):
                if item.stalled:
                    await self._resume_upstream()
                elif self._state.stopped:
                    self._done = True
                    raise StopAsyncIteration
                else:
                    err = IncompleteStreamError(
                        "the stream ended before message_stop", partial=self._state.message()
                    )
                    if not self._may_resume():
                        self._fail(err)
                    await self._recover(err)
            elif isinstance(item, APIConnectionError) and self._may_resume():
                await self._recover(item)
            else:
                self._fail(item)

    async def _read_inline(self, buf: FlowBuffer, src: _Source) -> None:
        """One socket read by the consumer itself (the reader is parked). Its cancel
        scope lets abort() and the idle watch end a read that is waiting."""
        scope = self._inline_scope = anyio.CancelScope()
        self._inline_reading = True
        try:
            with scope:
                chunk = await src.upstream.chunks.__anext__()
        except StopAsyncIteration:
            self._hand_back(src, True)
            return
        except Exception as e:
            self._hand_back(src, e)
            return
        finally:
            self._inline_reading = False
            self._inline_scope = None
            done = self._read_done
            if done is not None:  # the minder waits for this read to end
                self._read_done = None
                done.set()
        if scope.cancelled_caught:
            if self._idle_fired:
                self._idle_fired = False
                self._hand_back(src, self._idle_error())
            else:  # abort(): the loop raises its error; the reader closes the response
                self._hand_back(src, True)
            return
        self._inline_reads += 1
        events = self._ingest(src, chunk)
        buf.account(len(events), len(chunk))
        self._batch, self._pos = events, 0
        if len(events) > _SMALL_BATCH or len(chunk) >= _BIG_READ:  # the network got ahead:
            self._inline_ok = False  # read ahead in the background again
            self._waits = 0
            parked, self._parked = self._parked, None
            if parked is not None:
                parked.set()

    def _fail(self, err: BaseException) -> NoReturn:
        self._done = True
        if isinstance(err, SDKError) and err.partial is None:
            err.partial = self._state.message()
        raise err

    def _may_resume(self) -> bool:
        """A broken upstream is continued only with a hook, at a resumable point (between
        blocks or inside a text block) and within the policy's ``max_resumes``."""
        st = self._state
        open_ = st.open
        return (
            self._resume is not None
            and self._aborted is None
            and not st.stopped
            and (open_ is None or isinstance(open_.start, TextBlock))
            and self._attempts < self._stall.max_resumes
        )

    async def _recover(self, cause: SDKError) -> None:
        """Continue after ``cause``: a prefilled continuation, or before the first event
        the same request again (there is nothing to splice yet)."""
        if self._state.started:
            await self._resume_upstream()
            return
        tg = self._tg
        assert tg is not None
        self._attempts += 1
        try:
            upstream = await self._open()
        except Exception as e:
            self._done = True
            err = error_from_transport(e)
            if err is None:
                raise
            raise err from cause
        self._start(upstream, None)

    async def _resume_upstream(self) -> None:
        hook, buf, tg = self._resume, self._buf, self._tg
        assert hook is not None and buf is not None and tg is not None
        self._attempts += 1
        state = self._state
        reported = state.usage.output_tokens or 0
        request = ResumeRequest(
            state.message(), state.text(), self._attempts, state, max(reported, self._deltas)
        )
        try:
            upstream = await hook(request)
        except Exception as e:
            self._done = True
            err = error_from_transport(e, partial=state.message())
            if err is None:
                raise
            raise err from e
        buf.resumes += 1
        buf.note("resume")
        self._start(upstream, _Splicer(state, upstream.repeat))

    async def get_final_message(self) -> Message:
        """Consume the rest of the stream and return the accumulated message."""
        async for _ in self:
            pass
        return self._state.message()

    async def text_deltas(self) -> AsyncIterator[str]:
        """The text deltas only (thinking, tool input and other events are still accumulated)."""
        async for ev in self:
            if isinstance(ev, ContentBlockDeltaEvent) and isinstance(ev.delta, TextDelta):
                yield ev.delta.text
