"""The client's host for :mod:`sdk.scheduler`: it feeds the scheduler what the client
sees and carries out what the scheduler decides.

There is no background task. A request waiting for admission polls the scheduler and
sleeps on its own event, with a timeout at the scheduler's ``wake_at`` (a rate bucket
refilling, a hold ending); every event that can free capacity (a request finishing, a
stream pausing, a cancellation) polls again, which wakes the admitted waiters and asks
the named streams to pause. A waiter cancelled in the queue leaves it.

:class:`Flight` is one request's link: it is the stream's
:class:`~sdk.stream.StreamObserver` (output arrivals feed the metrics and the
scheduler's first token; a pause for a stall or a preemption frees the slot), and it
reports the end with the real token counts.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping

import anyio

from .._errors import RequestRejectedError
from ._core import Decisions, Scheduler, Ticket, TicketState
from ._limits import Cost
from ._metrics import MetricsHook, MetricsWindow, RequestMetrics, RequestTimer, TierMetrics
from ._tiers import Tier

__all__ = ["Dispatcher", "Flight"]

log = logging.getLogger("sdk")

_HOLDING = (TicketState.RUNNING, TicketState.PREEMPTING)


class Dispatcher:
    """The one host of a :class:`Scheduler`: clients that share a scheduler share its
    dispatcher (:meth:`of`; it is kept on the scheduler, so both go when neither is
    used), and a decision made while serving one client's request wakes a waiter of
    another's."""

    def __init__(self, scheduler: Scheduler, *, window: MetricsWindow | None = None) -> None:
        self.scheduler = scheduler
        self.window = window or MetricsWindow()
        self.hooks: list[MetricsHook] = []
        self.observers: list[Callable[[Decisions], None]] = []  # see every poll's decisions
        self._events: dict[int, anyio.Event] = {}
        self._wake_at: float | None = None
        self._preempt: dict[int, Callable[[], bool]] = {}

    @classmethod
    def of(cls, scheduler: Scheduler, *, window: int = 1000) -> Dispatcher:
        """The scheduler's dispatcher, made on first use."""
        d = scheduler.host
        if not isinstance(d, Dispatcher):
            d = cls(scheduler, window=MetricsWindow(window))
            scheduler.host = d
        return d

    @staticmethod
    def now() -> float:
        return anyio.current_time()

    def flight(
        self, *, priority: str | int | Tier | None, tenant: str | None, cost: Cost, preemptible: bool
    ) -> Flight:
        """Submit a request; the :class:`Flight` waits for its admission."""
        now = self.now()
        t = self.scheduler.submit(now, tier=priority, tenant=tenant or "", cost=cost, preemptible=preemptible)
        return Flight(self, t, RequestTimer(now, t.tier.name, t.tenant))

    def drive(self) -> None:
        """Poll the scheduler and carry out its decisions."""
        sched = self.scheduler
        for _ in range(1000):  # a declined preemption lets the next poll pick another victim
            now = self.now()
            d = sched.poll(now)
            for observe in self.observers:
                observe(d)
            for t in (*d.admit, *d.reject):
                ev = self._events.pop(t.id, None)
                if ev is not None:
                    ev.set()
            declined = False
            for t in d.preempt:
                hook = self._preempt.get(t.id)
                if hook is None or not hook():
                    sched.decline(t, now)
                    declined = True
            earlier = d.wake_at is not None and (self._wake_at is None or d.wake_at < self._wake_at)
            self._wake_at = d.wake_at
            if earlier:  # sleepers timed for a later wake-up must look again
                for ev in self._events.values():
                    ev.set()
                self._events.clear()
            if not declined:
                return

    async def admit(self, t: Ticket) -> None:
        """Wait until ``t`` holds a slot (a paused ticket is put back in line first).
        Raises :class:`RequestRejectedError` if the scheduler refused it; a cancelled
        wait takes the ticket out of the queue."""
        sched = self.scheduler
        if t.state is TicketState.PAUSED:
            sched.resume(t, self.now())
        try:
            while t.state is TicketState.WAITING:
                self.drive()
                if t.state is not TicketState.WAITING:
                    break
                ev = self._events.get(t.id)
                if ev is None:
                    ev = self._events[t.id] = anyio.Event()
                delay = math.inf if self._wake_at is None else max(0.0, self._wake_at - self.now())
                with anyio.move_on_after(delay):
                    await ev.wait()
        except BaseException:
            self._events.pop(t.id, None)
            sched.cancel(t, self.now())
            self.drive()
            raise
        if t.state is TicketState.REJECTED:
            raise RequestRejectedError(t.reason or "rejected by the scheduler")
        if t.state not in _HOLDING:
            raise RequestRejectedError(f"the request is {t.state.value}")

    def metrics(self) -> Mapping[str, TierMetrics]:
        return self.window.summary()


class Flight:
    """One request's link to the scheduler (see the module doc)."""

    __slots__ = ("_ended_at", "_metrics", "asked", "dispatcher", "pauses", "ticket", "timer")

    def __init__(self, dispatcher: Dispatcher, ticket: Ticket, timer: RequestTimer) -> None:
        self.dispatcher = dispatcher
        self.ticket = ticket
        self.timer = timer
        self.asked = True  # the caller named the tier (else the default stands in for it)
        self.pauses = 0
        self._metrics: RequestMetrics | None = None
        self._ended_at: float | None = None

    def __repr__(self) -> str:
        return f"<Flight {self.ticket!r}>"

    def on_preempt(self, hook: Callable[[], bool]) -> None:
        """``hook`` pauses the stream for a preemption (False: it cannot)."""
        self.dispatcher._preempt[self.ticket.id] = hook

    async def admit(self) -> None:
        await self.dispatcher.admit(self.ticket)
        self.timer.admitted(self.dispatcher.now())

    def response(self, status: int, headers: Mapping[str, str]) -> None:
        """A response's head: adopt its rate limits (and ``retry-after``); a 429/529 is an
        overload."""
        d = self.dispatcher
        now = d.now()
        try:
            d.scheduler.rate_limit(now, headers, ticket=self.ticket, wall=time.time())
        except Exception:  # headers come from the network: never fail the request on them
            log.exception("rate-limit headers could not be used")
        if status in (429, 529):
            d.scheduler.overloaded(now, ticket=self.ticket)

    def overloaded(self) -> None:
        """A mid-stream ``overloaded_error``/``rate_limit_error`` event."""
        d = self.dispatcher
        d.scheduler.overloaded(d.now(), ticket=self.ticket)

    def requeue(self, hold: float) -> None:
        """Refused for now (429/529): back in line, every admission held ``hold`` s."""
        d = self.dispatcher
        now = d.now()
        d.scheduler.overloaded(now, ticket=self.ticket, retry_after=hold)
        d.scheduler.requeue(self.ticket, now)

    # StreamObserver
    def output(self, n: int) -> None:
        d = self.dispatcher
        now = d.now()
        self.timer.arrived(now, n)
        if self.ticket.first_token_at is None:
            d.scheduler.first_token(self.ticket, now)

    def released(self) -> None:
        d = self.dispatcher
        self.pauses += 1
        d.scheduler.paused(self.ticket, d.now())
        d.drive()

    def ended(self, ok: bool) -> None:
        """The upstream sent everything: free the slot now, not when the caller's block
        ends (a caller may make its next request inside it)."""
        d = self.dispatcher
        self._ended_at = now = d.now()
        d.scheduler.finished(self.ticket, now, ok=ok)
        d.drive()

    def finish(self, *, ok: bool, input_tokens: int | None = None, output_tokens: int | None = None) -> None:
        """The request ended (once; later calls are ignored): the scheduler settles its
        token counts, the metrics are recorded."""
        if self._metrics is not None:
            return
        d = self.dispatcher
        now = d.now()
        d._preempt.pop(self.ticket.id, None)
        d.scheduler.finished(self.ticket, now, ok=ok, input_tokens=input_tokens, output_tokens=output_tokens)
        end = self._ended_at if self._ended_at is not None else now
        self._metrics = m = self.timer.finish(
            end, ok=ok, output_tokens=output_tokens, preemptions=self.ticket.preemptions, pauses=self.pauses
        )
        d.window.add(m)
        d.drive()
        for hook in d.hooks:
            try:
                hook(m)
            except Exception:  # the application's telemetry must not break its requests
                log.exception("an on_metrics hook raised")

    def metrics(self) -> RequestMetrics:
        """The finished request's metrics, or a snapshot of the running one."""
        if self._metrics is not None:
            return self._metrics
        return self.timer.finish(
            self.dispatcher.now(), ok=False, preemptions=self.ticket.preemptions, pauses=self.pauses
        )
