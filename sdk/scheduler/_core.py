"""The scheduler: which waiting request goes next, which running stream to pause, when.

Sans-IO, in the manner of h11: the host (the client over its outgoing requests, the
server over engine slots) tells the :class:`Scheduler` what happened (:meth:`submit`,
:meth:`first_token`, :meth:`finished`, :meth:`paused`, :meth:`resume`,
:meth:`rate_limit`, :meth:`overloaded`, :meth:`cancel`), always with the current time,
and asks :meth:`poll` for decisions: tickets to admit, streams to preempt, tickets
rejected, and the time at which polling again may admit more. It owns no task, socket or
clock, so a simulated clock drives it deterministically.

The order of admission, first to last:

1. **Aged** requests: a request that has waited ``aging`` seconds (from submission, or
   from its return to the queue after a pause) goes before every request that has not,
   in the order their waits ran out. This is the starvation bound: under any load of
   higher tiers, a request is admitted at the first admission opportunity (a freed slot,
   a refilled rate bucket) after ``aging`` seconds of waiting, behind only requests
   whose own waits ran out earlier, and a request admitted this way is not preempted
   in that run.
2. **Reserved shares**: a tier with ``min_share`` > 0 that runs fewer than
   ``floor(min_share * capacity)`` requests and has work waiting goes next.
3. **Rank**: otherwise the best-ranked tier with work waiting; a lower tier is never
   admitted while a higher one waits (but for 1 and 2). Inside a tier, paused requests
   returning to the queue go first, then tenants share by **deficit round robin** on
   token cost (input estimate plus ``max_tokens``): each visit gives a tenant
   ``quantum * weight`` tokens of credit, and its next request goes once the credit
   covers it, so one tenant's huge prompts cannot crowd out another's small ones and
   admitted tokens follow the weights.

A request is admitted when capacity allows (fewer running than the slot count and the
adaptive window), no ``retry-after`` hold is in force, and its cost fits every rate
bucket learnt from the headers (a cost larger than a bucket's whole capacity could never
fit and is rejected). When the head of the queue waits only for a slot and running
streams of a worse tier are preemptible, :meth:`poll` names victims (the worst tier
first, the newest admitted first, each having run ``min_run`` seconds), one per waiting
request of a better tier; the host pauses each and reports :meth:`paused`, and
:meth:`resume` puts it back in line (ahead of its tier's new requests).

Adaptive concurrency is additive-increase, multiplicative-decrease: a 429/529/overload,
or a time to first token above ``ttft_drift`` times the tier's target (scaled with the
prompt's length, since prefill time grows with it), multiplies the window by
``decrease``; each success after that adds ``increase / window``. Only signals from
requests admitted after the last decrease count, so one burst of errors is one decrease.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ._limits import Cost, Dimension, RateLimitInfo, TokenBucket, parse_rate_limit_headers
from ._tiers import DEFAULT_TIERS, Tier, Tiers

__all__ = ["AIMD", "Decisions", "Scheduler", "SchedulerStats", "Ticket", "TicketState"]


class TicketState(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    PREEMPTING = "preempting"  # asked to pause; still holds its slot until paused()
    PAUSED = "paused"  # holds no slot; back in line after resume()
    DONE = "done"
    CANCELLED = "cancelled"
    REJECTED = "rejected"


_HOLDING = (TicketState.RUNNING, TicketState.PREEMPTING)


class Ticket:
    """One request as the scheduler sees it. The host reads these attributes; only the
    scheduler changes them."""

    __slots__ = (
        "_admit_seq",
        "_lane",
        "_seq",
        "_settled",
        "_shielded",
        "_taken",
        "admitted_at",
        "cost",
        "finished_at",
        "first_admitted_at",
        "first_token_at",
        "id",
        "preemptible",
        "preemptions",
        "reason",
        "state",
        "submitted_at",
        "tenant",
        "tier",
        "waiting_since",
    )

    def __init__(self, id: int, tier: Tier, tenant: str, cost: Cost, preemptible: bool, now: float) -> None:
        self.id = id
        self.tier = tier
        self.tenant = tenant
        self.cost = cost
        self.preemptible = preemptible
        self.state = TicketState.WAITING
        self.submitted_at = now
        self.waiting_since = now
        self.admitted_at: float | None = None
        self.first_admitted_at: float | None = None
        self.first_token_at: float | None = None
        self.finished_at: float | None = None
        self.preemptions = 0
        self.reason: str | None = None
        self._seq = id
        self._admit_seq = 0
        self._lane: str | None = None  # "queue" | "resumed" | "aged" while waiting
        self._shielded = False
        self._settled = False
        self._taken: dict[Dimension, float] = {}

    def __repr__(self) -> str:
        return f"<Ticket {self.id} {self.tier.name} {self.tenant!r} {self.state.value}>"

    @property
    def resumed(self) -> bool:
        """Admitted before: an admission now is a resume, not a start."""
        return self.first_admitted_at is not None


@dataclass(frozen=True, slots=True)
class AIMD:
    """Adaptive concurrency. ``enabled=False`` keeps the window at the slot count."""

    enabled: bool = True
    decrease: float = 0.5
    increase: float = 1.0
    min_window: float = 1.0
    ttft_drift: float = 4.0
    prompt_scale: int = 8192  # the TTFT target grows by itself per this many input tokens

    def __post_init__(self) -> None:
        if not 0 < self.decrease < 1:
            raise ValueError("decrease must be between 0 and 1")
        if self.increase <= 0 or self.min_window < 1 or self.ttft_drift <= 1 or self.prompt_scale < 1:
            raise ValueError("need increase > 0, min_window >= 1, ttft_drift > 1, prompt_scale >= 1")

    def ttft_limit(self, target: float, input_tokens: int) -> float:
        """The TTFT past which the engine counts as overloaded: ``ttft_drift`` times the
        tier's target, scaled with the prompt (prefill time grows with it)."""
        return self.ttft_drift * target * (1.0 + input_tokens / self.prompt_scale)


@dataclass(frozen=True, slots=True)
class Decisions:
    """What :meth:`Scheduler.poll` decided. ``wake_at``: poll again then (a rate bucket
    refills, a hold ends, a wait ages, a victim has run long enough), or ``None``: only
    when something happens."""

    admit: tuple[Ticket, ...] = ()
    preempt: tuple[Ticket, ...] = ()
    reject: tuple[Ticket, ...] = ()
    wake_at: float | None = None


@dataclass(frozen=True, slots=True)
class SchedulerStats:
    waiting: Mapping[str, int]
    running: Mapping[str, int]
    slots: int | None
    window: float | None
    hold_until: float | None
    admitted: int
    preempted: int
    rejected: int
    decreases: int
    buckets: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # dim -> (tokens, capacity)


class _TierQueue:
    __slots__ = ("credited", "deficit", "order", "resumed", "running", "tenants", "tier", "waiting")

    def __init__(self, tier: Tier) -> None:
        self.tier = tier
        self.resumed: deque[Ticket] = deque()
        self.tenants: dict[str, deque[Ticket]] = {}
        self.order: deque[str] = deque()  # active tenants, round-robin order
        self.deficit: dict[str, float] = {}
        self.credited = False  # the head tenant has had its quantum for this visit
        self.waiting = 0
        self.running = 0


def _live(t: Ticket, lane: str) -> bool:
    return t.state is TicketState.WAITING and t._lane == lane


class Scheduler:
    """See the module doc. ``slots``: concurrent requests the upstream takes (``None``:
    unknown, no limit but the adaptive window). ``aging``: seconds after which a waiting
    request goes first (``None`` disables aging). ``quantum``: tokens of credit per
    deficit-round-robin visit. ``min_run``: seconds a stream runs before it may be
    preempted. ``max_queue``: waiting requests beyond which a submission is rejected.
    ``max_hold``: the longest ``retry-after`` the scheduler obeys. ``tenant_weights``:
    fair-share weights by tenant (else the tier's ``weight``).
    """

    def __init__(
        self,
        tiers: Iterable[Tier] = DEFAULT_TIERS,
        *,
        slots: int | None = None,
        aging: float | None = 30.0,
        quantum: int = 4096,
        min_run: float = 0.0,
        max_queue: int | None = None,
        max_hold: float = 60.0,
        aimd: AIMD | None = None,
        tenant_weights: Mapping[str, float] | None = None,
    ) -> None:
        self.tiers = tiers if isinstance(tiers, Tiers) else Tiers(tiers)
        if aging is not None and not aging > 0:
            raise ValueError("aging must be positive (or None)")
        if quantum <= 0 or min_run < 0 or max_hold < 0:
            raise ValueError("need quantum > 0, min_run >= 0, max_hold >= 0")
        if max_queue is not None and max_queue < 0:
            raise ValueError("max_queue must be >= 0")
        self.aging = aging
        self.quantum = quantum
        self.min_run = min_run
        self.max_queue = max_queue
        self.max_hold = max_hold
        self.aimd = aimd or AIMD()
        self.tenant_weights: dict[str, float] = {}
        for k, w in (tenant_weights or {}).items():
            self.set_tenant_weight(k, w)
        self._slots: int | None = None
        self._window: float | None = None
        self.set_slots(slots)
        self._queues = {t.name: _TierQueue(t) for t in self.tiers}
        self._ordered = [self._queues[t.name] for t in self.tiers]
        self._stale = 0  # queue entries of tickets that left the lane (skipped, then compacted)
        self.host: object = None  # the object that drives this scheduler (set by it)
        self._aging_heap: list[tuple[float, int, Ticket]] = []
        self._aged: deque[Ticket] = deque()
        self._holding: dict[int, Ticket] = {}
        self._buckets: dict[Dimension, TokenBucket] = {}
        self._hold_until = -math.inf
        self._rejects: list[Ticket] = []
        self._ids = itertools.count(1)
        self._admits = 0
        self._last_decrease = 0
        self._now = -math.inf
        self._waiting = 0
        self._preempted = 0
        self._rejected = 0
        self._decreases = 0

    # ---- configuration -------------------------------------------------------------

    @property
    def slots(self) -> int | None:
        return self._slots

    def set_slots(self, slots: int | None) -> None:
        """The upstream's slot count, learnt from the server or configured."""
        if slots is not None and slots < 1:
            raise ValueError("slots must be >= 1 (or None)")
        self._slots = slots
        if slots is not None and self._window is not None:
            self._window = min(self._window, float(slots))

    def set_tenant_weight(self, tenant: str, weight: float) -> None:
        if not (weight > 0 and math.isfinite(weight)):
            raise ValueError("a tenant's weight must be a positive number")
        self.tenant_weights[tenant] = weight

    @property
    def window(self) -> float | None:
        """The adaptive concurrency window (``None`` until the first overload)."""
        return self._window

    def capacity(self) -> float:
        """Requests that may hold a slot at once now."""
        cap = math.inf if self._slots is None else float(self._slots)
        if self._window is not None:
            cap = min(cap, math.floor(self._window))
        return max(cap, 1.0)

    @property
    def running(self) -> int:
        return len(self._holding)

    @property
    def waiting(self) -> int:
        return self._waiting

    def stats(self) -> SchedulerStats:
        return SchedulerStats(
            waiting={q.tier.name: q.waiting for q in self._ordered},
            running={q.tier.name: q.running for q in self._ordered},
            slots=self._slots,
            window=self._window,
            hold_until=self._hold_until if self._hold_until > self._now else None,
            admitted=self._admits,
            preempted=self._preempted,
            rejected=self._rejected,
            decreases=self._decreases,
            buckets={d: (b.tokens, b.capacity) for d, b in self._buckets.items()},
        )

    # ---- events from the host ------------------------------------------------------

    def _clock(self, now: float) -> float:
        if not math.isfinite(now):
            raise ValueError("now must be a finite number")
        if now > self._now:
            self._now = now
        return self._now  # time never runs backwards here, whatever the host's clock did

    def submit(
        self,
        now: float,
        *,
        tier: str | int | Tier | None = None,
        tenant: str = "",
        cost: Cost | None = None,
        preemptible: bool = True,
    ) -> Ticket:
        """A new request. ``preemptible=False``: the host cannot pause this one (the
        tier's own flag must allow it too). A full queue rejects it at the next poll."""
        now = self._clock(now)
        t = Ticket(next(self._ids), self.tiers.resolve(tier), tenant, cost or Cost(), False, now)
        t.preemptible = preemptible and t.tier.preemptible
        if self.max_queue is not None and self._waiting >= self.max_queue:
            self._reject(t, "the queue is full")
            return t
        self._enqueue(t, now, resumed=False)
        return t

    def cancel(self, ticket: Ticket, now: float) -> None:
        """The host gave up on a request (waiting, running or paused)."""
        now = self._clock(now)
        st = ticket.state
        if st is TicketState.WAITING:
            self._dequeue(ticket)
        elif st in _HOLDING:
            self._release(ticket)
        elif st is not TicketState.PAUSED:
            return
        ticket.state = TicketState.CANCELLED
        ticket.finished_at = now

    def paused(self, ticket: Ticket, now: float) -> None:
        """The host closed a running request's upstream at a resumable point (for a
        preemption it was asked for, or on its own, a stalled reader): its slot is free.
        It waits outside the queue until :meth:`resume`."""
        now = self._clock(now)
        if ticket.state not in _HOLDING:
            return
        if ticket.state is TicketState.PREEMPTING:
            ticket.preemptions += 1
            self._preempted += 1
        self._release(ticket)
        ticket.state = TicketState.PAUSED

    def resume(self, ticket: Ticket, now: float) -> None:
        """A paused request wants to continue: back in line, ahead of its tier's new ones."""
        now = self._clock(now)
        if ticket.state is TicketState.PAUSED:
            self._enqueue(ticket, now, resumed=True)

    def requeue(self, ticket: Ticket, now: float) -> None:
        """A running request was refused for now (a 429 before its first byte): free
        its slot and put it back in line at once, ahead of its tier's new ones."""
        if ticket.state in _HOLDING:
            # The server did not count it: give back what it took from buckets no reading
            # has reconciled since (a reading already tells what the server counted).
            for dim, _ in ticket._taken.items():
                b = self._buckets.get(dim)
                if b is not None:
                    b.refill(now)
                    b.give_back(ticket.cost.of(dim))
            ticket._taken.clear()
            ticket.state = TicketState.RUNNING  # a requeue is not a preemption
            self.paused(ticket, now)
            self.resume(ticket, now)

    def decline(self, ticket: Ticket, now: float) -> None:
        """The host cannot pause a stream it was asked to preempt (it cannot resume it):
        it keeps its slot and is not asked again."""
        self._clock(now)
        if ticket.state is TicketState.PREEMPTING:
            ticket.state = TicketState.RUNNING
        ticket.preemptible = False

    def first_token(self, ticket: Ticket, now: float) -> None:
        """The first output arrived (once per admission; later calls are ignored)."""
        now = self._clock(now)
        if ticket.state not in _HOLDING or ticket.admitted_at is None:
            return
        first = ticket.first_token_at is None
        if first:
            ticket.first_token_at = now
        target = ticket.tier.ttft_target
        if target is not None and now - ticket.admitted_at > self.aimd.ttft_limit(
            target, ticket.cost.input_tokens
        ):
            self._decrease(ticket)
        elif first:
            self._increase(ticket)

    def finished(
        self,
        ticket: Ticket,
        now: float,
        *,
        ok: bool = True,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> None:
        """The request ended (``ok``: it succeeded): its slot is free. Real token counts,
        when known (now or in a second call once they are), replace the estimate in the
        rate buckets (unused output is given back)."""
        now = self._clock(now)
        st = ticket.state
        if st in (*_HOLDING, TicketState.PAUSED, TicketState.WAITING):
            if st in _HOLDING:
                self._release(ticket)
            elif st is TicketState.WAITING:  # ended while back in line (a requeue)
                self._dequeue(ticket)
            ticket.state = TicketState.DONE
            ticket.finished_at = now
            if ok and ticket.first_token_at is None:
                self._increase(ticket)
        elif st is not TicketState.DONE:
            return
        if ticket._settled or (input_tokens is None and output_tokens is None):
            return
        ticket._settled = True  # the slot may be freed first, the counts known later: once
        adjust: dict[Dimension, float] = {}
        if input_tokens is not None:
            adjust["input_tokens"] = ticket.cost.input_tokens - input_tokens
        if output_tokens is not None:
            adjust["output_tokens"] = ticket.cost.output_tokens - output_tokens
        adjust["tokens"] = sum(adjust.values())
        for dim, amount in adjust.items():
            b = self._buckets.get(dim)
            if b is not None and amount:
                b.refill(now)
                b.give_back(amount)

    def rate_limit(
        self,
        now: float,
        headers: Mapping[str, str] | RateLimitInfo,
        *,
        ticket: Ticket | None = None,
        wall: float | None = None,
    ) -> RateLimitInfo:
        """Headers of a response (any status): adopt the limits they report. ``ticket``:
        the request they answer, so admissions made after it are not counted twice."""
        now = self._clock(now)
        info = headers if isinstance(headers, RateLimitInfo) else parse_rate_limit_headers(headers, wall=wall)
        for r in info.readings:
            b = self._buckets.get(r.dimension)
            if b is None:
                if r.limit is None or r.limit <= 0:
                    continue
                b = self._buckets[r.dimension] = TokenBucket(r.limit, now)
                unseen = 0.0
                if ticket is not None:  # what was admitted after it, from its own record on
                    unseen = sum(
                        t.cost.of(r.dimension)
                        for t in self._holding.values()
                        if t._admit_seq > ticket._admit_seq
                    )
            else:
                seen = ticket._taken.pop(r.dimension, None) if ticket is not None else None
                unseen = b.taken - seen if seen is not None else 0.0
            b.observe(r, now, max(0.0, unseen))
        if info.retry_after is not None:
            self._hold(now, info.retry_after)
        return info

    def overloaded(
        self, now: float, *, ticket: Ticket | None = None, retry_after: float | None = None
    ) -> None:
        """A 429, 529 or ``overloaded_error``: back off (once per burst) and hold
        admissions for ``retry_after`` seconds if the server named a delay."""
        now = self._clock(now)
        self._decrease(ticket)
        if retry_after is not None:
            self._hold(now, retry_after)

    def _hold(self, now: float, seconds: float) -> None:
        if seconds > 0 and math.isfinite(seconds):
            self._hold_until = max(self._hold_until, now + min(seconds, self.max_hold))

    # ---- adaptive window -------------------------------------------------------------

    def _decrease(self, ticket: Ticket | None) -> None:
        if not self.aimd.enabled:
            return
        seq = ticket._admit_seq if ticket is not None else self._admits
        if seq <= self._last_decrease:
            return  # this burst was already answered
        base = self._window if self._window is not None else float(max(len(self._holding), 1))
        if self._slots is not None:
            base = min(base, float(self._slots))
        self._window = max(self.aimd.min_window, base * self.aimd.decrease)
        self._last_decrease = self._admits
        self._decreases += 1

    def _increase(self, ticket: Ticket) -> None:
        w = self._window
        if w is None or ticket._admit_seq <= self._last_decrease:
            return
        w += self.aimd.increase / w
        if self._slots is not None:
            w = min(w, float(self._slots))
        self._window = w

    # ---- queues ----------------------------------------------------------------------

    def _enqueue(self, t: Ticket, now: float, *, resumed: bool) -> None:
        q = self._queues[t.tier.name]
        t.state = TicketState.WAITING
        t.waiting_since = now
        if resumed:
            t._lane = "resumed"
            q.resumed.append(t)
        else:
            t._lane = "queue"
            dq = q.tenants.get(t.tenant)
            if dq is None:
                dq = q.tenants[t.tenant] = deque()
                q.order.append(t.tenant)
                q.deficit[t.tenant] = 0.0
            dq.append(t)
        q.waiting += 1
        self._waiting += 1
        if self.aging is not None:  # every tier: aged requests go in the order their waits ran out
            t._seq = next(self._ids)
            heapq.heappush(self._aging_heap, (now + self.aging, t._seq, t))
            if len(self._aging_heap) > 2 * self._waiting + 1024:
                self._compact()

    def _dequeue(self, t: Ticket, *, popped: bool = False) -> None:
        """Leave the queue. Unless the entry was ``popped``, it stays where it is as a
        stale entry (skipped when met); when stale entries outnumber the waiting ones the
        queues are compacted, so cancellations cannot grow memory."""
        q = self._queues[t.tier.name]
        q.waiting -= 1
        self._waiting -= 1
        t._lane = None
        if not popped:
            self._stale_entry()

    def _stale_entry(self) -> None:
        self._stale += 1
        if self._stale > self._waiting + 1024:
            self._compact()

    def _compact(self) -> None:
        """Drop every stale entry from the lanes and the aging heap."""
        for q in self._ordered:
            for name in list(q.order):
                dq = q.tenants[name]
                live = deque(t for t in dq if _live(t, "queue"))
                if live:
                    q.tenants[name] = live
                else:
                    if q.order and q.order[0] == name:
                        q.credited = False
                    q.order.remove(name)
                    del q.tenants[name]
                    del q.deficit[name]
            q.resumed = deque(t for t in q.resumed if _live(t, "resumed"))
        self._aged = deque(t for t in self._aged if _live(t, "aged"))
        heap = self._aging_heap  # in place: _promote may be iterating it
        heap[:] = [e for e in heap if e[2].state is TicketState.WAITING and e[2]._seq == e[1]]
        heapq.heapify(heap)
        self._stale = 0

    def _release(self, t: Ticket) -> None:
        del self._holding[t.id]
        self._queues[t.tier.name].running -= 1

    def _reject(self, t: Ticket, reason: str) -> None:
        if t.state is TicketState.WAITING:
            self._dequeue(t)
        t.state = TicketState.REJECTED
        t.reason = reason
        t.finished_at = self._now
        self._rejects.append(t)
        self._rejected += 1

    def _weight(self, q: _TierQueue, tenant: str) -> float:
        return self.tenant_weights.get(tenant, q.tier.weight)

    @staticmethod
    def _price(t: Ticket) -> float:
        return float(max(1, t.cost.tokens))

    def _drr_head(self, q: _TierQueue) -> Ticket | None:
        """The tenant whose credit covers its next request, by deficit round robin.
        Idempotent until that request is admitted (the credit stays in place), and
        bounded: after a full round in which nobody was served, the rounds nobody could
        be served in are credited at once instead of one by one."""
        fruitless = 0
        while q.order:
            name = q.order[0]
            dq = q.tenants[name]
            while dq and not _live(dq[0], "queue"):
                dq.popleft()
                self._stale -= 1
            if not dq:
                q.order.popleft()
                del q.tenants[name]
                del q.deficit[name]
                q.credited = False
                fruitless = 0
                continue
            head = dq[0]
            if not q.credited:
                q.deficit[name] += self.quantum * self._weight(q, name)
                q.credited = True
            if q.deficit[name] >= self._price(head):
                return head
            q.order.rotate(-1)
            q.credited = False
            fruitless += 1
            if fruitless >= len(q.order):
                self._skip_rounds(q)
                fruitless = 0
        return None

    def _skip_rounds(self, q: _TierQueue) -> None:
        rounds: list[int] = []
        for name in q.order:
            dq = q.tenants[name]
            if not dq or not _live(dq[0], "queue"):
                return  # a stale head: let the loop clean it first
            need = self._price(dq[0]) - q.deficit[name]
            rounds.append(math.ceil(need / (self.quantum * self._weight(q, name))))
        k = min(rounds) - 1
        if k > 0:
            for name in q.order:
                q.deficit[name] += k * self.quantum * self._weight(q, name)

    def _tier_head(self, q: _TierQueue) -> Ticket | None:
        if q.waiting == 0:
            return None
        while q.resumed and not _live(q.resumed[0], "resumed"):
            q.resumed.popleft()
            self._stale -= 1
        if q.resumed:
            return q.resumed[0]
        return self._drr_head(q)

    def _promote(self, now: float) -> float | None:
        """Move requests whose wait ran out to the aged lane; the next such time."""
        heap = self._aging_heap
        while heap:
            deadline, seq, t = heap[0]
            if t.state is not TicketState.WAITING or t._seq != seq:
                heapq.heappop(heap)  # admitted, cancelled or re-queued since
                continue
            if deadline > now:
                return deadline
            heapq.heappop(heap)
            if t._lane == "resumed" or t._lane == "queue":
                t._lane = "aged"
                self._aged.append(t)
                self._stale_entry()  # its entry in the tenant's or the resumed lane
        return None

    def _head(self, cap: float) -> Ticket | None:
        while self._aged and not _live(self._aged[0], "aged"):
            self._aged.popleft()
            self._stale -= 1
        if self._aged:
            return self._aged[0]
        if math.isfinite(cap):
            for q in self._ordered:
                share = q.tier.min_share
                if share > 0 and q.waiting and q.running < math.floor(share * cap):
                    head = self._tier_head(q)
                    if head is not None:
                        return head
        for q in self._ordered:
            head = self._tier_head(q)
            if head is not None:
                return head
        return None

    def _admit(self, t: Ticket, now: float) -> None:
        q = self._queues[t.tier.name]
        lane = t._lane
        t._shielded = lane == "aged"  # admitted by aging: not preempted in this run
        if lane == "aged":
            self._aged.popleft()
        elif lane == "resumed":
            q.resumed.popleft()
        else:  # the deficit-round-robin head: its tenant is first in the round
            dq = q.tenants[t.tenant]
            dq.popleft()
            q.deficit[t.tenant] -= self._price(t)
            while dq and not _live(dq[0], "queue"):
                dq.popleft()
                self._stale -= 1
            if not dq:  # an emptied tenant leaves the round and its credit lapses
                q.order.popleft()
                del q.tenants[t.tenant]
                del q.deficit[t.tenant]
                q.credited = False
        self._dequeue(t, popped=True)
        t.state = TicketState.RUNNING
        t.admitted_at = now
        t.first_token_at = None
        if t.first_admitted_at is None:
            t.first_admitted_at = now
        self._admits += 1
        t._admit_seq = self._admits
        self._holding[t.id] = t
        q.running += 1
        for dim, b in self._buckets.items():
            b.take(t.cost.of(dim))
            t._taken[dim] = b.taken

    # ---- decisions -------------------------------------------------------------------

    def poll(self, now: float) -> Decisions:
        """Admit what may go now; name streams to preempt; report rejections."""
        now = self._clock(now)
        wake = math.inf
        next_aging = self._promote(now)
        if next_aging is not None:
            wake = next_aging
        for b in self._buckets.values():
            b.refill(now)
        admit: list[Ticket] = []
        capacity_bound = False
        cap = self.capacity()
        while True:
            head = self._head(cap)
            if head is None:
                break
            if len(self._holding) >= cap:
                capacity_bound = True
                break
            if now < self._hold_until:
                wake = min(wake, self._hold_until)
                break
            wait = 0.0
            too_big: Dimension | None = None
            for dim, b in self._buckets.items():
                c = head.cost.of(dim)
                if c > b.capacity:
                    too_big = dim
                    break
                wait = max(wait, b.wait(c))
            if too_big is not None:
                cap_ = self._buckets[too_big].capacity
                self._reject(
                    head,
                    f"its {too_big.replace('_', ' ')} ({head.cost.of(too_big):g}) exceed the rate "
                    f"limit's whole capacity ({cap_:g})",
                )
                continue
            if wait > 0:
                wake = min(wake, now + wait)
                break
            self._admit(head, now)
            admit.append(head)
        preempt: list[Ticket] = []
        if capacity_bound:
            preempt, ready_at = self._victims(now)
            if ready_at is not None:
                wake = min(wake, ready_at)
        rejects, self._rejects = tuple(self._rejects), []
        return Decisions(tuple(admit), tuple(preempt), rejects, wake if math.isfinite(wake) else None)

    def _victims(self, now: float) -> tuple[list[Ticket], float | None]:
        """One victim per waiting request of a better tier (less those already being
        preempted): the worst tier first, the newest first, each past ``min_run``."""
        candidates: list[Ticket] = []
        ready_at: float | None = None
        covered = 0
        for t in self._holding.values():
            if t.state is TicketState.PREEMPTING:
                covered += 1
            elif t.preemptible and not t._shielded:
                assert t.admitted_at is not None
                ready = t.admitted_at + self.min_run
                if ready <= now:
                    candidates.append(t)
                else:
                    ready_at = ready if ready_at is None else min(ready_at, ready)
        if not candidates:
            return [], ready_at
        candidates.sort(key=lambda t: (t.tier.rank, t._admit_seq), reverse=True)
        out: list[Ticket] = []
        i = 0
        for q in self._ordered:
            for _ in range(q.waiting):
                if covered:
                    covered -= 1
                    continue
                if i >= len(candidates) or candidates[i].tier.rank <= q.tier.rank:
                    return out, ready_at
                v = candidates[i]
                i += 1
                v.state = TicketState.PREEMPTING
                out.append(v)
        return out, ready_at
