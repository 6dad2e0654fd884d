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

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
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
from ._resume import RepeatFilter, ResumeCause

log = logging.getLogger("sdk.stream")

__all__ = ["EventDecoder", "MessageStream", "ResumeHook", "ResumeRequest", "StreamObserver", "Upstream"]


class EventDecoder(Protocol):
    """A sans-IO bytes -> events decoder (:class:`AnthropicEventDecoder`, ...)."""

    def feed(self, chunk: bytes) -> list[Event]: ...

    def flush(self) -> list[Event]: ...


@dataclass(frozen=True, slots=True)
class Upstream:
    """An open response body.

    ``repeat``: text the new stream is expected to repeat at its start (for example the
    trailing whitespace a prefill had to drop); it is removed once if it does come back.
    ``replayable``: the server keeps this stream and can continue it after any event it
    sent (SSE ids and ``Last-Event-ID``), so it may be cut anywhere, even inside a tool
    input. ``replay``: this body is such a continuation: the events after the last one
    received, of the same message, so nothing is spliced. ``continues``: this body is the
    previous one's bytes from where they stopped (llama-server's ``from=<byte>``), so it
    is fed to the same decoder. ``cancel``: stops the generation on the server when the
    body is left before the message ended (a server that keeps streams keeps generating
    after a disconnect; closing the connection is not enough there), and before the
    request is sent again when it broke before its first event. A ``replayable`` body is
    cancelled only when nobody will come back for it (the consumer left, or the stream
    was aborted): after a stall, a preemption or an idle timeout it is reattached.
    """

    chunks: AsyncIterator[bytes]
    aclose: Callable[[], Awaitable[None]]
    repeat: str = ""
    replayable: bool = False
    replay: bool = False
    continues: bool = False
    cancel: Callable[[], Awaitable[None]] | None = None


@dataclass(frozen=True, slots=True)
class ResumeRequest:
    """What a resume hook needs: the message received so far and its text (the prefill).

    ``state.open`` is ``None`` (the cut fell between blocks) or an open text block.
    ``last_event_id`` is the SSE id of the last event received (all of them reach the
    consumer before the resume), for a server that replays from it.
    ``output_tokens`` is a lower bound of the tokens already generated: the larger of the
    output the server reported and the text deltas handed out (many servers report
    output only at the end), so a continuation can lower ``max_tokens`` by it.
    ``cause`` is why the stream broke; ``received_bytes`` how many bytes of the current
    body (and the bodies it continues) were fed to the decoder, for a byte-offset replay.
    """

    message: Message
    prefill: str
    attempt: int
    state: MessageState
    output_tokens: int = 0
    last_event_id: str = ""
    cause: ResumeCause = ResumeCause.DROPPED
    received_bytes: int = 0


ResumeHook = Callable[[ResumeRequest], Awaitable[Upstream]]


class StreamObserver(Protocol):
    """What a host (the client's scheduler) learns from a running stream. Called from
    the reader task; must not block."""

    def output(self, n: int) -> None:
        """``n`` output deltas (text, thinking, tool input) arrived in one read."""

    def released(self) -> None:
        """The upstream was closed to pause the stream (a stall cancel or a preemption):
        the server's slot is free until the stream continues."""

    def ended(self, ok: bool) -> None:
        """The upstream sent the whole message (``ok``: without an ``error`` event) and was
        closed: the server's slot is free, whenever the consumer reads the rest."""


class Splicer:
    """Re-indexes a continuation stream so it extends the interrupted message seamlessly."""

    def __init__(self, state: MessageState, repeat: str, output_tokens: int = 0) -> None:
        # What the interrupted segment produced: the server may not have reported its
        # output yet (many report it only at the end), so the deltas handed out count.
        base = state.usage
        if output_tokens > (base.output_tokens or 0):
            base = replace(base, output_tokens=output_tokens)
        self.base_usage = base
        self.usage = Usage()
        self.open_index = state.open.index if state.open is not None else None
        self.offset = state.next_index
        self.repeat = RepeatFilter((repeat,))
        self.held_at = -1  # the block index of text the repeat filter holds back
        self.joined = False  # the continuation's first text block merged into the open one

    def _map(self, index: int) -> int:
        if self.open_index is not None and self.joined:
            return index + self.open_index
        return index + self.offset

    def __call__(self, events: list[Event]) -> list[Event]:
        out: list[Event] = []
        for ev in events:
            if self.held_at >= 0 and not (
                isinstance(ev, ContentBlockDeltaEvent) and isinstance(ev.delta, TextDelta)
            ):
                # the text held back as a possible repeat was not one: hand it out first
                held = self.repeat.flush()
                if held:
                    out.append(ContentBlockDeltaEvent(self.held_at, TextDelta(held)))
                self.held_at = -1
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
                if isinstance(ev.delta, TextDelta) and not self.repeat.done:
                    out += self._text(idx, ev.delta.text)
                else:
                    out.append(ContentBlockDeltaEvent(idx, ev.delta))
            elif isinstance(ev, ContentBlockStopEvent):
                out.append(ContentBlockStopEvent(self._map(ev.index)))
            else:
                out.append(ev)
        return out

    def _text(self, index: int, text: str) -> list[Event]:
        """Text of the continuation, less what it repeats of the prefill (held back while
        it may still be a repeat; handed out whole if it turns out not to be one)."""
        if not self.repeat.done:
            text = self.repeat.feed(text)
            self.held_at = -1 if self.repeat.done else index
        return [ContentBlockDeltaEvent(index, TextDelta(text))] if text else []


class MessageStream:
    """``async with MessageStream(open) as s: async for event in s: ...``

    ``state`` is what the consumer has been handed (the cursor); ``statistics()`` reports
    buffering, every pause, stall cancel and resume. ``idle_timeout``: seconds without a
    non-ping event from the server (pings and SSE comments keep a connection alive but
    are not progress; time paused for a slow consumer does not count) before the read
    ends in :class:`APITimeoutError`, which a resume hook then recovers from.
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
        observer: StreamObserver | None = None,
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
        self._tg: TaskGroup | None = None
        self._buf: FlowBuffer | None = None
        self._batch: list[Event] = []
        self._pos = 0
        self._state = MessageState()
        self._done = False
        self._attempts = 0  # resumes that spend the policy's max_resumes (all but preemptions)
        self._resumes = 0  # every resume, preemptions included
        self._deltas = 0  # text deltas handed out: a lower bound of the output tokens
        self._reader: anyio.CancelScope | None = None  # the running reader's scope
        self._progress = 0  # reads that brought a non-ping event (the idle watch's clock)
        self._idle_fired = False
        self._aborted: BaseException | None = None
        self._observer = observer
        self._preempt_asked = False  # a scheduler wants the slot: cut at a resumable point
        self._preempt_cut = False  # preempt() cancelled a blocked reader
        self._cut_ok = True  # the reader is at a resumable point of an unfinished message
        self._replayable = False  # the current upstream can be continued after any event
        # A thinking block or a tool call was generated: a prefill cannot carry it (it must
        # start with the thinking block and its signature; it holds text only, so the call
        # would be made again), so from then on only a replay continues this message.
        # Decided by what came, not by the request's ``thinking`` field: an engine that
        # ignores the field stays resumable, and a caller cannot turn preemption off.
        self._thought = False
        self._upstream_done = False  # the upstream sent the whole message
        self._last_event_id = ""  # the SSE id of the last event received
        self._decoder_now: EventDecoder | None = None  # the current body's decoder
        self._fed = 0  # bytes of the current body (and those it continues) fed to it
        self._orphan: Callable[[], Awaitable[None]] | None = None  # stops a broken kept stream
        self._pump_done: anyio.Event | None = None  # set when the current reader has cleaned up
        self._gate: Callable[[], Awaitable[None]] | None = None  # awaited before each resume

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
        tg.start_soon(self._pump, upstream, None)
        if self._idle_timeout is not None:
            tg.start_soon(self._watch_idle, self._idle_timeout)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        tg, self._tg = self._tg, None
        if tg is None:
            return None
        tg.cancel_scope.cancel()
        try:
            if isinstance(exc, Exception):
                # The reader never raises, so the consumer's own error propagates unwrapped.
                await tg.__aexit__(None, None, None)
                return None
            return await tg.__aexit__(exc_type, exc, tb)
        finally:
            # Left after a break that nothing resumed: the generation the server kept for
            # the broken body stops (nobody will come back for it).
            await self._stop_orphan()

    def abort(self, exc: BaseException) -> None:
        """End the stream from outside (a client closing): the consumer's next
        ``__anext__`` raises ``exc`` (with the partial message when it is an
        :class:`SDKError`), nothing resumes, and the reader closes its response under a
        shielded scope. A stream that has already ended is left as it is."""
        if self._done or self._aborted is not None:
            return
        self._aborted = exc
        if self._reader is not None:
            self._reader.cancel()
        if self._buf is not None:
            self._buf.put_nowait(_End(stalled=False))  # wakes a consumer waiting for events

    async def reader_closed(self) -> None:
        """Wait until the reader has closed its response and, for a server that keeps
        streams, stopped the generation there (after :meth:`abort`: the client waits for
        this before closing the connection pool those requests need)."""
        done = self._pump_done
        if done is not None:
            await done.wait()

    def preempt(self) -> bool:
        """Pause for a scheduler that needs the slot: the reader closes the upstream at
        the next resumable point (between blocks or inside a text block; at once if it is
        waiting at one), :meth:`StreamObserver.released` reports the free slot, and the
        consumer, once it has taken what was buffered, continues through the resume hook
        (which waits for re-admission). False, and nothing changes, if this stream cannot
        resume (no hook, resumes spent, already ended)."""
        if (
            self._done
            or self._upstream_done
            or self._aborted is not None
            or self._resume is None
            or self._state.stopped
            or self._attempts >= self._stall.max_resumes
            or (self._thought and not self._replayable)
        ):
            return False
        self._preempt_asked = True
        reader = self._reader
        if reader is not None and self._cut_ok:
            self._preempt_cut = True
            reader.cancel()
        return True

    async def _watch_idle(self, limit: float) -> None:
        """Cancel a read that brought nothing but pings for ``limit`` seconds.

        It wakes four times per ``limit`` and compares a counter, so the hot path pays no
        clock read or timer per event. The timeout fires between ``limit`` and 1.25 x
        ``limit`` after the last progress, plus however late the event loop runs the
        watch (wakes are set at absolute times from the last progress seen, so a late
        wake does not push the next ones back: on a starved CPU the lateness of one wake
        is added, not of four).
        """
        step = limit / 4
        seen = -1
        since = anyio.current_time()
        k = 0
        while True:
            k += 1
            await anyio.sleep_until(since + k * step)
            now = anyio.current_time()
            buf, reader = self._buf, self._reader
            if self._progress != seen or reader is None or buf is None or buf.paused:
                seen, since, k = self._progress, now, 0  # progress, no read going on, or our pause
            elif now - since >= limit:
                self._idle_fired = True
                reader.cancel()
                since, k = now, 0

    async def _pump(self, upstream: Upstream, splice: Splicer | None) -> None:
        """Read one upstream into the buffer. Never raises: failures go to the consumer."""
        buf = self._buf
        assert buf is not None
        decoder = self._decoder_now
        if decoder is None or not upstream.continues:
            # A replay of the events after the last one received is the same message in a
            # new body: a decoder that keeps state across events (OpenAI's chunks, whose
            # translation opens the message once) goes on from where it was.
            for_replay = getattr(decoder, "for_replay", None) if upstream.replay else None
            decoder = self._decoder_now = for_replay() if for_replay is not None else self._decoder()
            self._fed = 0
        observer = self._observer
        pending = 0
        resumable = True  # between blocks or inside a text block: a prefill can continue it
        finished = False
        errored = False
        stopped = False  # message_stop arrived: the message is whole
        end: _End | BaseException | None = None
        done = self._pump_done = anyio.Event()
        scope = self._reader = anyio.CancelScope()
        self._idle_fired = False
        self._preempt_cut = False
        self._cut_ok = True
        replayable = self._replayable = upstream.replayable
        try:
            with scope:
                async for chunk in upstream.chunks:
                    if self._preempt_asked and resumable and not finished:
                        end = self._preempted(buf)  # this read is dropped: the resume regenerates it
                        return
                    events = decoder.feed(chunk)
                    self._fed += len(chunk)
                    pending += len(chunk)
                    if not events:
                        continue
                    if splice is not None:
                        events = splice(events)
                    progress = False
                    out = 0
                    for ev in events:
                        if type(ev) is ContentBlockDeltaEvent:
                            out += 1
                            continue
                        if isinstance(ev, PingEvent):
                            continue
                        progress = True
                        if isinstance(ev, ContentBlockStartEvent):
                            if not isinstance(ev.block, TextBlock):
                                self._thought = True  # thinking or a tool call: no prefill carries it
                            resumable = replayable or not self._thought
                        elif isinstance(ev, ContentBlockStopEvent):
                            resumable = replayable or not self._thought
                        elif isinstance(ev, MessageStopEvent | ErrorEvent) or (
                            isinstance(ev, MessageDeltaEvent) and ev.stop_reason is not None
                        ):
                            finished = True
                            errored = errored or isinstance(ev, ErrorEvent)
                            stopped = stopped or isinstance(ev, MessageStopEvent)
                    if out or progress:
                        self._progress += 1
                    if out and observer is not None:
                        observer.output(out)
                    self._cut_ok = resumable and not finished
                    if self._preempt_asked and self._cut_ok:
                        buf.put_nowait(events, pending)
                        end = self._preempted(buf)
                        return
                    can_stall = resumable and not finished and self._attempts < self._stall.max_resumes
                    ok = await buf.put(events, pending, can_stall=can_stall)
                    pending = 0
                    if not ok:
                        buf.cancels += 1
                        buf.note("cancel")
                        log.info(
                            "stream stalled: the consumer stopped reading; the upstream request is cancelled"
                        )
                        end = _End(stalled=True)
                        return
                # A body that ends inside an event: the event is incomplete, and a server
                # that keeps the stream replays from the bytes received, completing it in
                # this decoder. (A lenient server's last event, unterminated, still counts.)
                tail = [] if upstream.cancel is not None and not finished else decoder.flush()
                if tail:
                    buf.put_nowait(splice(tail) if splice is not None else tail, pending)
                end = _End(stalled=False)
            if scope.cancelled_caught:  # the idle watch, abort() or preempt() stopped this read
                if self._preempt_cut and self._aborted is None:
                    # preempt() cuts only a reader waiting at a resumable point, and no read
                    # is processed after the cut (checked at the top of the loop)
                    end = (
                        self._preempted(buf)
                        if resumable and not finished
                        else APIConnectionError("the stream was preempted at a point it cannot resume from")
                    )
                elif self._idle_fired:
                    end = APITimeoutError(
                        f"no stream event but pings for {self._idle_timeout:g} s (idle timeout)"
                    )
                else:
                    end = _End(stalled=False)
        except Exception as e:
            end = error_from_transport(e) or e
            if stopped and isinstance(end, APIConnectionError | APITimeoutError):
                # The message was whole (message_stop arrived); only the body's own end,
                # its last chunk, was lost: nothing is missing.
                end = _End(stalled=False)
        finally:
            if self._reader is scope:
                self._reader = None
            sse = getattr(decoder, "sse", None)
            replaced = getattr(sse, "replaced", 0)
            buf.replaced += replaced if isinstance(replaced, int) else 0
            last_id = getattr(sse, "last_event_id", "")
            if isinstance(last_id, str) and last_id:
                self._last_event_id = last_id
            with anyio.CancelScope(shield=True):
                try:
                    closer = getattr(upstream.chunks, "aclose", None)
                    if closer is not None:  # an async generator left early: finalize it now
                        await closer()
                    await upstream.aclose()
                except Exception as e:  # closing a broken connection may fail; report it
                    if isinstance(end, _End) and not end.stalled and not stopped:
                        end = error_from_transport(e) or e
                # We left the body (a stall cut, a preemption, the idle timeout, an abort, the
                # consumer gone): a server that keeps streams would go on generating. A broken
                # or cut-short body is not ours to cancel: a replay may continue it.
                left = (
                    end is None or isinstance(end, APITimeoutError) or (isinstance(end, _End) and end.stalled)
                )
                left = left or (isinstance(end, _End) and scope.cancelled_caught)
                if upstream.replayable and end is not None and self._aborted is None:
                    left = False  # a stall, a preemption or a timeout: it is reattached
                generating = False  # the server may still be generating for this request
                if upstream.cancel is not None and not finished and left:
                    with contextlib.suppress(Exception):  # best effort: else the server's own timeout
                        await upstream.cancel()  # a server that keeps streams: stop it there
                elif upstream.cancel is not None and not finished:
                    self._orphan = upstream.cancel  # broken: a resume continues it, or stops it
                    generating = True
            done.set()
            if isinstance(end, _End) and observer is not None:
                if end.stalled:
                    observer.released()
                elif finished:
                    self._upstream_done = True
                    observer.ended(not errored)
            elif isinstance(end, BaseException) and observer is not None and not finished and not generating:
                # Broken, and nothing generates for it any more: its slot is free now, not
                # when a consumer (who may never come) reads the error. A resume is
                # re-admitted; a failure ends the request where it is.
                observer.released()
            if end is not None:  # None: cancelled, nobody is reading any more
                buf.put_nowait(end)

    def _preempted(self, buf: FlowBuffer) -> _End:
        self._preempt_asked = False
        buf.preemptions += 1
        buf.note("preempt")
        log.info("stream preempted (its slot is wanted); it continues when re-admitted")
        return _End(stalled=True, preempted=True)

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
            if self._buf is None:
                raise RuntimeError("iterate a MessageStream inside `async with`")
            item = await self._buf.get()
            if self._aborted is not None:
                continue
            if isinstance(item, list):
                self._batch, self._pos = item, 0
            elif isinstance(item, _End):
                if item.stalled:
                    await self._continue(why=ResumeCause.PREEMPTED if item.preempted else ResumeCause.STALLED)
                elif self._state.stopped:
                    self._done = True
                    raise StopAsyncIteration
                else:
                    err = IncompleteStreamError(
                        "the stream ended before message_stop", partial=self._state.message()
                    )
                    if not self._may_resume():
                        await self._stop_orphan()
                        self._fail(err)
                    await self._recover(err)
            elif isinstance(item, APIConnectionError) and self._may_resume():
                await self._recover(item)
            else:
                await self._stop_orphan()
                self._fail(item)

    async def _stop_orphan(self) -> None:
        """The stream ends broken: a server that keeps streams would go on generating."""
        cancel, self._orphan = self._orphan, None
        if cancel is not None:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await cancel()

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
            and (open_ is None or isinstance(open_.start, TextBlock) or self._replayable)
            and self._attempts < self._stall.max_resumes
        )

    async def _recover(self, cause: SDKError) -> None:
        """Continue after ``cause``: a prefilled continuation, or before the first event
        the same request again (there is nothing to splice yet)."""
        why = ResumeCause.TIMEOUT if isinstance(cause, APITimeoutError) else ResumeCause.DROPPED
        await self._continue(cause, why)

    def hold_resumes(self, gate: Callable[[], Awaitable[None]] | None) -> None:
        """Before each resume (a continuation, a replay or the request sent again), wait
        for ``gate()``: a consumer that reads for someone else (a server's kept stream,
        read for a client that may come back) holds a paused stream's re-admission until
        that someone is there. ``None``: resume at once."""
        self._gate = gate

    async def _continue(self, cause: SDKError | None = None, why: ResumeCause = ResumeCause.DROPPED) -> None:
        if self._gate is not None:
            await self._gate()
        if self._state.started:
            await self._resume_upstream(why)
            return
        tg = self._tg
        assert tg is not None
        self._count_resume(why)
        # Nothing arrived to continue from: the request goes again, so a server that kept
        # the broken one (llama-server's conversation) is told to stop it first, or two
        # generations would hold two slots for one answer.
        await self._stop_orphan()
        try:
            upstream = await self._open()
        except Exception as e:
            self._done = True
            err = error_from_transport(e)
            if err is None:
                raise
            raise err from cause
        tg.start_soon(self._pump, upstream, None)

    def _count_resume(self, why: ResumeCause) -> None:
        self._resumes += 1
        if why is not ResumeCause.PREEMPTED:
            # A preemption is the scheduler's decision, bounded by its own rules: it spends
            # none of the budget that bounds failures. Counted, a batch stream preempted
            # max_resumes times could no longer be paused, and held its slot against every
            # interactive request until it ended.
            self._attempts += 1

    async def _resume_upstream(self, why: ResumeCause) -> None:
        hook, buf, tg = self._resume, self._buf, self._tg
        assert hook is not None and buf is not None and tg is not None
        self._count_resume(why)
        state = self._state
        reported = state.usage.output_tokens or 0
        request = ResumeRequest(
            state.message(),
            state.text(),
            self._resumes,
            state,
            max(reported, self._deltas),
            self._last_event_id,
            why,
            self._fed,
        )
        try:
            upstream = await hook(request)
        except Exception as e:
            self._done = True
            err = error_from_transport(e, partial=state.message())
            if err is None:
                # Not the transport's and not ours (a fault the resume met on the way):
                # the stream broke and could not go on, with what arrived kept.
                broke = f"the stream broke and its resume failed: {type(e).__name__}: {e}"
                err = IncompleteStreamError(broke, partial=state.message())
            if err.partial is None:  # the hook's own error (its request's answer): what arrived
                err.partial = state.message()
            if err is e:
                raise
            raise err from e
        # The hook took the broken stream over (a replay of it, or stopped): until it
        # returned, a consumer that left stops it (__aexit__).
        self._orphan = None
        buf.resumes += 1
        buf.note("resume")
        splice = None if upstream.replay else Splicer(state, upstream.repeat, request.output_tokens)
        tg.start_soon(self._pump, upstream, splice)

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
