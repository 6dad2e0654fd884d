"""Flow control: a byte-bounded buffer with watermarks, the stall policy, statistics.

The network reader puts decoded batches in; the consumer takes them out. When the
buffered wire bytes reach the high watermark the reader waits (so it stops reading the
socket and, over HTTP/1.1, the server's TCP window closes) until the consumer has taken
enough to go under the low watermark. While it waits, the stall policy may decide that
holding the server is worse than cancelling it (see :class:`StallPolicy`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Literal

import anyio

from ._events import Event

__all__ = ["FlowControl", "FlowNote", "StallPolicy", "StreamStatistics"]


@dataclass(frozen=True, slots=True)
class FlowControl:
    """Buffer bounds. The reader pauses at ``high_water_bytes`` (or ``max_events``) and
    resumes under ``low_water_bytes`` (default: half the high mark).

    The bound counts wire bytes of buffered events; client memory for a paused stream is
    this bound (plus the decoded form of those events) plus the kernel's socket buffer.
    """

    high_water_bytes: int = 1 << 20
    low_water_bytes: int | None = None
    max_events: int | None = None

    def __post_init__(self) -> None:
        if self.high_water_bytes <= 0:
            raise ValueError("high_water_bytes must be positive")
        low = self.low_water_bytes
        if low is not None and not 0 <= low <= self.high_water_bytes:
            raise ValueError("low_water_bytes must be between 0 and high_water_bytes")
        if self.max_events is not None and self.max_events <= 0:
            raise ValueError("max_events must be positive")

    @property
    def low(self) -> int:
        return self.high_water_bytes // 2 if self.low_water_bytes is None else self.low_water_bytes


@dataclass(frozen=True, slots=True)
class StallPolicy:
    """When to cancel the upstream request of a stream whose consumer has stopped.

    The reader is paused (buffer full) and either the consumer has taken nothing for
    ``stall_timeout`` seconds, or ``max_backlog_bytes`` are buffered: the stream closes the
    response (which frees the server's slot), keeps its cursor, and, when the consumer
    asks for more after draining the buffer, sends a continuation request through the
    resume hook (the text so far as an assistant prefill). The consumer sees one
    uninterrupted sequence of deltas.

    Defaults differ by backend: :meth:`self_hosted` enables it (a held slot blocks other
    users of a llama-server/vLLM box); :meth:`hosted` disables it (a resume re-bills the
    whole prompt on the hosted API) unless the caller opts in. A stream stalls only at a
    resumable point: between blocks or inside a text block, never inside a tool input or
    thinking (those cannot be prefilled); elsewhere it just stays paused.
    """

    enabled: bool = False
    stall_timeout: float = 5.0
    max_backlog_bytes: int | None = None
    max_resumes: int = 8

    def __post_init__(self) -> None:
        if self.stall_timeout < 0 or math.isnan(self.stall_timeout):
            raise ValueError("stall_timeout must be >= 0")
        if self.max_backlog_bytes is not None and self.max_backlog_bytes <= 0:
            raise ValueError("max_backlog_bytes must be positive")

    @classmethod
    def self_hosted(cls, stall_timeout: float = 5.0) -> StallPolicy:
        return cls(True, stall_timeout)

    @classmethod
    def hosted(cls) -> StallPolicy:
        return cls(False)


@dataclass(frozen=True, slots=True)
class FlowNote:
    """One pause, unpause, stall cancel or resume, with the buffer and cursor at that time."""

    kind: Literal["pause", "unpause", "cancel", "preempt", "resume"]
    at: float
    bytes_buffered: int
    events_delivered: int


@dataclass(frozen=True, slots=True)
class StreamStatistics:
    """Counters of one stream (all its upstreams, resumes included).

    ``*_buffered`` is what waits for the consumer now, ``high_water_*`` the most that ever
    did; ``paused_seconds`` sums the time the reader spent not reading; ``cancels`` counts
    stall-policy cancels, ``preemptions`` upstreams closed for a scheduler's preemption,
    ``resumes`` the continuations after either. ``notes`` lists each pause, unpause,
    cancel, preemption and resume in order (the last 1000; the counters are always exact).
    """

    bytes_received: int
    events_received: int
    bytes_buffered: int
    events_buffered: int
    high_water_bytes: int
    high_water_events: int
    events_delivered: int
    pauses: int
    paused_seconds: float
    cancels: int
    resumes: int
    invalid_utf8_replaced: int
    notes: tuple[FlowNote, ...]
    preemptions: int = 0


class _End:
    """The current upstream ended normally (``stalled``: because the policy cancelled it,
    or ``preempted``: the scheduler did)."""

    __slots__ = ("preempted", "stalled")

    def __init__(self, stalled: bool, preempted: bool = False) -> None:
        self.stalled = stalled
        self.preempted = preempted


Item = list[Event] | BaseException | _End


class FlowBuffer:
    """Single-producer single-consumer buffer of event batches, bounded in wire bytes."""

    def __init__(self, flow: FlowControl, stall: StallPolicy) -> None:
        self.flow = flow
        self.stall = stall
        self._items: deque[tuple[Item, int]] = deque()
        self._has_items = anyio.Event()
        self._drained: anyio.Event | None = None
        self.bytes = 0
        self.events = 0
        self.bytes_received = 0
        self.events_received = 0
        self.high_bytes = 0
        self.high_events = 0
        self.delivered = 0
        self.pauses = 0
        self.paused_seconds = 0.0
        self.cancels = 0
        self.preemptions = 0
        self.resumes = 0
        self.replaced = 0
        self.notes: deque[FlowNote] = deque(maxlen=1000)
        self.last_take = anyio.current_time()

    @property
    def paused(self) -> bool:
        """The reader is waiting for the consumer to drain the buffer."""
        return self._drained is not None

    def note(self, kind: Literal["pause", "unpause", "cancel", "preempt", "resume"]) -> None:
        self.notes.append(FlowNote(kind, anyio.current_time(), self.bytes, self.delivered))

    def _full(self) -> bool:
        cap = self.flow.max_events
        return self.bytes >= self.flow.high_water_bytes or (cap is not None and self.events >= cap)

    def _over_low(self) -> bool:
        cap = self.flow.max_events
        return self.bytes > self.flow.low or (cap is not None and self.events >= cap)

    def put_nowait(self, item: Item, size: int = 0) -> None:
        self._items.append((item, size))
        if isinstance(item, list):
            self.bytes += size
            self.events += len(item)
            self.bytes_received += size
            self.events_received += len(item)
            self.high_bytes = max(self.high_bytes, self.bytes)
            self.high_events = max(self.high_events, self.events)
        self._has_items.set()

    async def put(self, batch: list[Event], size: int, *, can_stall: bool) -> bool:
        """Append a batch; wait while the buffer is full. False: the policy says cancel."""
        self.put_nowait(batch, size)
        stall = self.stall
        backlog = stall.max_backlog_bytes
        if can_stall and stall.enabled and backlog is not None and self.bytes >= backlog:
            return False
        if not self._full():
            return True
        self.pauses += 1
        self.note("pause")
        started = anyio.current_time()
        try:
            while self._over_low():
                drained = self._drained = anyio.Event()
                if not (can_stall and stall.enabled):
                    await drained.wait()
                    continue
                idle_until = self.last_take + stall.stall_timeout
                with anyio.move_on_after(max(0.0, idle_until - anyio.current_time())):
                    await drained.wait()
                if not drained.is_set() and anyio.current_time() >= self.last_take + stall.stall_timeout:
                    return False
            return True
        finally:
            self._drained = None
            self.paused_seconds += anyio.current_time() - started
            self.note("unpause")

    async def get(self) -> Item:
        while not self._items:
            self._has_items = anyio.Event()
            await self._has_items.wait()
        item, size = self._items.popleft()
        if isinstance(item, list):
            self.bytes -= size
            self.events -= len(item)
            self.delivered += len(item)
        self.last_take = anyio.current_time()
        drained = self._drained
        if drained is not None and not self._over_low():
            drained.set()
        return item

    def statistics(self) -> StreamStatistics:
        return StreamStatistics(
            self.bytes_received,
            self.events_received,
            self.bytes,
            self.events,
            self.high_bytes,
            self.high_events,
            self.delivered,
            self.pauses,
            self.paused_seconds,
            self.cancels,
            self.resumes,
            self.replaced,
            tuple(self.notes),
            self.preemptions,
        )
