"""The scheduler: which waiting request goes next, which running stream to pause, when.

Sans-IO, in the manner of h11: the host (the client over its outgoing requests, the
server over engine slots) tells the :class:`Scheduler` what happened (:meth:`submit`,
:meth:`first_token`, :meth:`finished`, :meth:`paused`, :meth:`resume`,
:meth:`rate_limit`, :meth:`overloaded`, :meth:`cancel`), always with the current time,
and asks :meth:`poll` for decisions: tickets to admit, streams to preempt, tickets
rejected, and the time at which polling again may admit more. It owns no task, socket or
clock, so a simulated clock drives it deterministically.

The order of admission, first to last, by **level** (a tier's place in the rank order,
0 the best):

1. **Reserved shares**: a tier with ``min_share`` > 0 that runs fewer than
   ``floor(min_share * capacity)`` requests and has work waiting goes next; streams
   within that reservation are not preempted.
2. **Level**: otherwise the best level with work waiting; a request of a worse level is
   never admitted while one of a better level waits (but for 1). Inside a level,
   paused requests returning to the queue go first, then requests that aged into it,
   then its tier's own requests, tenants sharing by **deficit round robin** on token
   cost (input estimate plus ``max_tokens``): each visit gives a tenant ``quantum *
   weight`` tokens of credit, and its next request goes once the credit covers it, so
   one tenant's huge prompts cannot crowd out another's small ones and admitted tokens
   follow the weights.

**Aging** raises a waiting request one level for every ``aging`` seconds it waits (from
submission, or from its return to the queue after a pause), up to the second level and
never into the best one: a batch request that waited ``aging`` seconds goes before every
``default`` request that has not, but no amount of waiting batch work goes before a
fresh request of the best tier. Aging is a tier's protection against the tiers above it,
not an order inside the tier: a request that aged earns **its tier** a turn at the better
level, and which of the tier's requests takes the turn is the tier's deficit round robin
(the request that takes it and the one that earned it trade their waits), so tenants'
weights hold however long a tier's queue waits, and a tenant whose requests wait longer
because its weight is smaller does not win them back by aging. A request keeps the level
it was admitted at: it is preempted only for a request of a better level of another tier
(never for one of its own tier that aged), so aged work is never shielded from the best
tier. The bounds this gives:

- a request of the best tier waits only for requests of its own level ahead of it, for
  streams that may not be paused (a tier that is not ``preemptible``, a host that
  declined, a reserved share) and for ``min_run``; never for a preemptible stream of a
  worse tier to finish;
- a request of a worse tier earns its tier a turn at the second level after ``(level -
  1) * aging`` seconds, a turn that waits only for the best tier's requests and its new
  level's resumed and earlier aged ones; the tier's turns go to its tenants by their
  weights, the first tenant's in its order (one tenant alone: its oldest request first);
  under load of the best tier that fills every slot the tier progresses only through its
  ``min_share``.

A request is admitted when capacity allows (fewer running than the slot count and the
adaptive window), no ``retry-after`` hold is in force, and its cost fits every rate
bucket learnt from the headers (a cost larger than a bucket's whole capacity could never
fit and is rejected). When the head of the queue waits only for a slot and running
streams of a worse tier are preemptible, :meth:`poll` names victims (the worst tier
first, then a stream past its first token before one still in its prefill, then the
newest admitted, each having run ``min_run`` seconds), one per waiting
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
from collections.abc import Iterable, Iterator, Mapping
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
        "_aging_at",
        "_entry",
        "_lane",
        "_level",
        "_seq",
        "_settled",
        "_taken",
        "admitted_at",
        "cost",
        "finished_at",
        "first_admitted_at",
        "first_token_at",
        "id",
        "level_since",
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
        self.level_since = now  # since when it waits at its level (it entered or aged into it)
        self.admitted_at: float | None = None
        self.first_admitted_at: float | None = None
        self.first_token_at: float | None = None
        self.finished_at: float | None = None
        self.preemptions = 0
        self.reason: str | None = None
        self._seq = id
        self._admit_seq = 0
        self._lane: str | None = None  # "queue" (its tenant's) | "resumed" while waiting
        self._level = 0  # the level it waits at (or was admitted at): its tier's, or aged
        self._entry = 0  # its entry in the aged lane of its level (0: none)
        self._aging_at: float | None = None  # its next aging step
        self._settled = False
        self._taken: dict[Dimension, float] = {}

    def __repr__(self) -> str:
        return f"<Ticket {self.id} {self.tier.name} {self.tenant!r} {self.state.value}>"

    @property
    def resumed(self) -> bool:
        """Admitted before: an admission now is a resume, not a start."""
        return self.first_admitted_at is not None

    @property
    def level(self) -> int:
        """The level it waits at, or was admitted at (its tier's place in the rank order,
        0 the best; better than its tier's once it aged)."""
        return self._level


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
    """One level's lanes. ``resumed``: paused requests back in line at this level.
    ``aged``: the turns earned at this level by requests of worse tiers that aged into it
    (an entry names the request that earned it). ``tenants``, ``order``, ``deficit``:
    this tier's own requests (aged or not), its tenants' deficit round robin.
    ``waiting`` counts the waiting tickets at this level (``by_tier``: by their tier);
    ``own_waiting`` and ``running`` count this tier's tickets wherever they wait."""

    __slots__ = (
        "aged",
        "by_tier",
        "credited",
        "deficit",
        "level",
        "order",
        "own_waiting",
        "resumed",
        "running",
        "tenants",
        "tier",
        "waiting",
    )

    def __init__(self, tier: Tier, level: int) -> None:
        self.tier = tier
        self.level = level
        self.resumed: deque[Ticket] = deque()
        self.aged: deque[tuple[int, Ticket]] = deque()  # (entry, ticket), in aging order
        self.tenants: dict[str, deque[Ticket]] = {}
        self.order: deque[str] = deque()  # active tenants, round-robin order
        self.deficit: dict[str, float] = {}
        self.credited = False  # the head tenant has had its quantum for this visit
        self.waiting = 0
        self.by_tier: dict[str, int] = {}
        self.own_waiting = 0
        self.running = 0


# An entry in a lane is current while its ticket still waits there; one left behind by an
# admission, a cancellation, an aging step or a trade of waits is stale, skipped when met
# and dropped by compaction.


def _queued(t: Ticket) -> bool:
    """Current in its tenant's queue (of its tier, at whatever level it aged to)."""
    return t.state is TicketState.WAITING and t._lane == "queue"


def _resumed(t: Ticket, q: _TierQueue) -> bool:
    """Current in ``q``'s resumed lane (a resumed request that aged left it)."""
    return t.state is TicketState.WAITING and t._lane == "resumed" and t._level == q.level and not t._entry


def _aged(entry: tuple[int, Ticket]) -> bool:
    """A current entry of an aged lane."""
    n, t = entry
    return t.state is TicketState.WAITING and t._entry == n


class Scheduler:
    """See the module doc. ``slots``: concurrent requests the upstream takes (``None``:
    unknown, no limit but the adaptive window). ``aging``: seconds of waiting per level a
    request rises (``None`` disables aging). ``quantum``: tokens of credit per
    deficit-round-robin visit (small, so tenants alternate every few requests: a larger
    one lets a tenant of small requests take that many tokens' worth in a row; a request
    costing more waits for the rounds it needs, credited at once). ``min_run``: seconds
    a stream runs before it may be preempted. ``max_queue``: waiting requests in all; a
    submission beyond it pushes out the newest waiting request of a worse tier (or, in
    its own tier, of a tenant holding more of the queue), else it is rejected.
    ``max_hold``: the longest ``retry-after`` the scheduler obeys. ``tenant_weights``:
    fair-share weights by tenant (else the tier's ``weight``).
    """

    def __init__(
        self,
        tiers: Iterable[Tier] = DEFAULT_TIERS,
        *,
        slots: int | None = None,
        aging: float | None = 30.0,
        quantum: int = 128,
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
        self._share: int | None = None
        self.set_slots(slots)
        self._ordered = [_TierQueue(t, i) for i, t in enumerate(self.tiers)]
        self._queues = {q.tier.name: q for q in self._ordered}
        self._age_cap = min(1, len(self._ordered) - 1)  # aging stops at this level
        self._stale = 0  # queue entries of tickets that left the lane (skipped, then compacted)
        self.host: object = None  # the object that drives this scheduler (set by it)
        self._slack = 1024  # stale entries beyond the waiting ones before a compaction
        self._aging_heap: list[tuple[float, int, Ticket]] = []
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

    @property
    def share(self) -> int | None:
        return self._share

    def set_share(self, share: int | None) -> None:
        """The slots this host may use of the engines' slots it shares with others (a
        server replica's leases, :mod:`sdk.server`), 0 included; ``None``: all of them.
        A share smaller than what runs makes :meth:`poll` preempt the excess."""
        if share is not None and share < 0:
            raise ValueError("share must be >= 0 (or None)")
        self._share = share

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
        cap = max(cap, 1.0)
        return cap if self._share is None else min(cap, float(self._share))

    @property
    def running(self) -> int:
        return len(self._holding)

    @property
    def waiting(self) -> int:
        return self._waiting

    @property
    def preempting(self) -> int:
        """Streams asked to pause that still hold their slots."""
        return sum(t.state is TicketState.PREEMPTING for t in self._holding.values())

    def worst_preemptible(self) -> int | None:
        """The worst level among the running streams that may be preempted (None: none
        may)."""
        levels = [
            t._level for t in self._holding.values() if t.preemptible and t.state is TicketState.RUNNING
        ]
        return max(levels, default=None)

    def waiting_by_level(self) -> tuple[int, ...]:
        """Waiting requests at each level, the best first (aged ones at the level they
        rose to)."""
        return tuple(q.waiting for q in self._ordered)

    def waiting_at(self, level: int) -> Iterator[Ticket]:
        """The requests waiting at ``level`` (aged ones at the level they rose to), in no
        particular order: a scan of that level's lanes (a fleet member asks it for its
        longest wait there while it wants a lease)."""
        if not 0 <= level < len(self._ordered):
            return
        q = self._ordered[level]
        if q.waiting == 0:
            return
        for t in q.resumed:
            if _resumed(t, q):
                yield t
        for entry in q.aged:
            if _aged(entry):
                yield entry[1]
        for dq in q.tenants.values():
            for t in dq:
                if _queued(t) and t._level == level:
                    yield t

    def stats(self) -> SchedulerStats:
        return SchedulerStats(
            waiting={q.tier.name: q.own_waiting for q in self._ordered},
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
        t._level = self._queues[t.tier.name].level
        if self.max_queue is not None and self._waiting >= self.max_queue:
            victim = self._evictable(t)
            if victim is None:
                self._reject(t, "the queue is full")
                return t
            self._reject(
                victim, "the queue is full (pushed out by a request of a better tier or a smaller share)"
            )
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
    #
    # Every count is moved by exactly one thing: a ticket entering a lane (``_enqueue``,
    # an aging step) or leaving one (``_dequeue``, an aging step), and ``t._lane`` says
    # whether it is in one, so a ticket that never entered (a rejected submission) or
    # already left cannot move a count twice. ``check()`` recounts everything from the
    # lanes themselves; the property tests call it after every event.

    def _enqueue(self, t: Ticket, now: float, *, resumed: bool) -> None:
        if not resumed:
            t._level = self._queues[t.tier.name].level
        q = self._ordered[t._level]  # a paused request comes back at the level it ran at
        t.state = TicketState.WAITING
        t.waiting_since = t.level_since = now
        t._entry = 0
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
        self._count(t, 1)
        self._queues[t.tier.name].own_waiting += 1
        self._waiting += 1
        t._aging_at = None
        if self.aging is not None:
            self._age_at(t, now + self.aging)

    def _count(self, t: Ticket, n: int) -> None:
        """``t`` starts (1) or stops (-1) waiting at its level."""
        q = self._ordered[t._level]
        q.waiting += n
        k = q.by_tier.get(t.tier.name, 0) + n
        if k:
            q.by_tier[t.tier.name] = k
        else:
            del q.by_tier[t.tier.name]

    def _age_at(self, t: Ticket, deadline: float) -> None:
        if t._level <= self._age_cap:
            t._aging_at = None
            return
        t._aging_at = deadline
        t._seq = next(self._ids)
        heapq.heappush(self._aging_heap, (deadline, t._seq, t))
        if len(self._aging_heap) > 2 * self._waiting + self._slack:
            self._compact()

    def _entries(self, t: Ticket) -> int:
        """The current entries a waiting ticket has: its tenant's queue or the resumed
        lane (unless it aged out of it), and its aged lane's."""
        return (t._lane == "queue") + (t._lane == "resumed" and not t._entry) + (t._entry != 0)

    def _dequeue(self, t: Ticket, *, popped: int = 0) -> None:
        """Leave the queue. Its entries the caller did not pop (``popped`` of them) stay
        where they are as stale entries (skipped when met); when stale entries outnumber
        the waiting ones the queues are compacted, so cancellations cannot grow memory."""
        if t._lane is None:
            return  # in no lane: never queued (a rejected submission), or already left
        stale = self._entries(t) - popped
        self._count(t, -1)
        self._queues[t.tier.name].own_waiting -= 1
        self._waiting -= 1
        t._lane = None
        t._entry = 0
        t._aging_at = None
        if stale:
            self._stale_entry(stale)

    def _stale_entry(self, n: int = 1) -> None:
        self._stale += n
        if self._stale > self._waiting + self._slack:
            self._compact()

    def _compact(self) -> None:
        """Drop every stale entry from the lanes and the aging heap."""
        for q in self._ordered:
            for name in list(q.order):
                dq = q.tenants[name]
                live = deque(t for t in dq if _queued(t))
                if live:
                    q.tenants[name] = live
                else:
                    if q.order and q.order[0] == name:
                        q.credited = False
                    q.order.remove(name)
                    del q.tenants[name]
                    del q.deficit[name]
            q.resumed = deque(t for t in q.resumed if _resumed(t, q))
            q.aged = deque(e for e in q.aged if _aged(e))
        heap = self._aging_heap  # in place: _promote may be iterating it
        heap[:] = [e for e in heap if e[2].state is TicketState.WAITING and e[2]._seq == e[1]]
        heapq.heapify(heap)
        self._stale = 0

    def check(self) -> None:
        """Recount the queues and slots from the lanes themselves and compare them with
        the running counts (``AssertionError`` on a mismatch): a testing aid, O(queued)."""
        live: dict[int, Ticket] = {}
        entries = current = 0
        seen: dict[int, tuple[Ticket, int]] = {}
        for q in self._ordered:
            for name, dq in q.tenants.items():
                for t in dq:
                    entries += 1
                    if _queued(t):
                        assert t.tier is q.tier and t.tenant == name, f"{t!r} in the wrong queue"
                        assert t.id not in live, f"{t!r} is twice in its queue"
                        live[t.id] = t
                        current += 1
            for t in q.resumed:
                entries += 1
                if _resumed(t, q):
                    assert t.id not in live, f"{t!r} is in two lanes"
                    live[t.id] = t
                    current += 1
            for e in q.aged:
                entries += 1
                if _aged(e):
                    t = e[1]
                    assert t._level == q.level < self._queues[t.tier.name].level, f"{t!r} aged wrongly"
                    seen[t.id] = (t, seen.get(t.id, (t, 0))[1] + 1)
                    current += 1
            assert set(q.order) == set(q.tenants), "the round-robin order lost a tenant"
        for t, n in seen.values():
            assert n == 1, f"{t!r} has {n} turns"
            live.setdefault(t.id, t)  # a resumed request that aged: only its turn is current
        for t in live.values():
            assert (t.id in seen) == (t._entry != 0), f"{t!r}'s turn"
            if t._lane == "queue":
                assert (t._entry != 0) == (t._level < self._queues[t.tier.name].level), f"{t!r} aged"
        for q in self._ordered:
            here = [t for t in live.values() if t._level == q.level]
            assert len(here) == q.waiting, f"level {q.level}: {len(here)} waiting, counted {q.waiting}"
            by_tier: dict[str, int] = {}
            for t in here:
                by_tier[t.tier.name] = by_tier.get(t.tier.name, 0) + 1
            assert by_tier == q.by_tier, f"level {q.level}: {by_tier} by tier, counted {q.by_tier}"
            listed = sorted(t.id for t in self.waiting_at(q.level))
            assert listed == sorted(t.id for t in here), f"level {q.level}: waiting_at lists {listed}"
            for t in here:
                assert t.waiting_since <= t.level_since <= self._now, f"{t!r} waits at its level since"
        assert len(live) == self._waiting >= 0, f"{len(live)} waiting, counted {self._waiting}"
        assert entries - current == self._stale, f"{entries - current} stale, counted {self._stale}"
        for q in self._ordered:
            own = sum(1 for t in live.values() if t.tier is q.tier)
            run = sum(1 for t in self._holding.values() if t.tier is q.tier)
            assert own == q.own_waiting, f"{q.tier.name}: {own} waiting, counted {q.own_waiting}"
            assert run == q.running, f"{q.tier.name}: {run} running, counted {q.running}"
        for t in self._holding.values():
            assert t.state in _HOLDING and t._lane is None and not t._entry, f"{t!r} holds a slot"
        if self.max_queue is not None:  # paused streams come back whatever the bound
            fresh = sum(1 for t in live.values() if t.first_admitted_at is None)
            assert fresh <= self.max_queue, f"{fresh} new requests waiting over {self.max_queue}"

    def _evictable(self, new: Ticket) -> Ticket | None:
        """When the queue is full: the request ``new`` pushes out, or ``None``. The newest
        request of the worst tier waiting below ``new``'s, else, in ``new``'s own tier, the
        newest of the tenant holding the most of it, if that is more than ``new``'s tenant
        would. Resumed and aged requests are never pushed out: they have waited or run."""
        for q in reversed(self._ordered):
            if q.level < new._level:
                return None
            best: deque[Ticket] | None = None
            best_name = ""
            for name, dq in q.tenants.items():
                while dq and not _queued(dq[-1]):
                    dq.pop()
                    self._stale -= 1
                if dq and (best is None or len(dq) > len(best)):
                    best, best_name = dq, name
            if best is None:
                continue
            if q.level == new._level:
                mine = q.tenants.get(new.tenant)
                held = 0 if mine is None else sum(1 for t in mine if _queued(t))
                if best_name == new.tenant or sum(1 for t in best if _queued(t)) <= held + 1:
                    return None
            if best[-1]._entry:
                return None  # its newest has waited long enough to age: it stays
            victim = best.pop()
            self._dequeue(victim, popped=1)
            return victim
        return None

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
            while dq and not _queued(dq[0]):
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
            if not dq or not _queued(dq[0]):
                return  # a stale head: let the loop clean it first
            need = self._price(dq[0]) - q.deficit[name]
            rounds.append(math.ceil(need / (self.quantum * self._weight(q, name))))
        k = min(rounds) - 1
        if k > 0:
            for name in q.order:
                q.deficit[name] += k * self.quantum * self._weight(q, name)

    def _tier_head(self, q: _TierQueue) -> tuple[Ticket, Ticket | None] | None:
        """The request level ``q`` admits next, and the aged request whose turn it takes
        (``None``: its own place). Resumed requests first, then the turns earned by aged
        requests of worse tiers (each taken by its tier's round-robin head), then this
        tier's own requests by their tenants' round robin."""
        if q.waiting == 0:
            return None
        resumed = q.resumed
        while resumed and not _resumed(resumed[0], q):
            resumed.popleft()
            self._stale -= 1
        if resumed:
            return resumed[0], None
        aged = q.aged
        while aged and not _aged(aged[0]):
            aged.popleft()
            self._stale -= 1
        if aged:
            earner = aged[0][1]
            if earner._lane == "resumed":
                return earner, None  # a paused request's turn is its own
            head = self._drr_head(self._queues[earner.tier.name])
            assert head is not None  # the earner waits there
            return head, (None if head._level <= q.level else earner)
        head = self._drr_head(q)
        return None if head is None else (head, None)

    def _promote(self, now: float) -> float | None:
        """Raise requests whose wait ran out one level (each earns its tier a turn in the
        level's aged lane); the next such time."""
        heap = self._aging_heap
        while heap:
            deadline, seq, t = heap[0]
            if t.state is not TicketState.WAITING or t._seq != seq or t._lane is None:
                heapq.heappop(heap)  # admitted, cancelled or re-queued since
                continue
            if deadline > now:
                return deadline
            heapq.heappop(heap)
            if t._level <= self._age_cap:
                continue
            left = bool(t._entry) or t._lane == "resumed"  # an entry at the level it leaves
            self._count(t, -1)
            t._level -= 1
            t.level_since = deadline
            self._count(t, 1)
            t._entry = next(self._ids)
            self._ordered[t._level].aged.append((t._entry, t))
            if left:
                self._stale_entry()  # (after the move: a compaction now drops that entry)
            if self.aging is not None:
                self._age_at(t, deadline + self.aging)
        return None

    def _trade(self, earner: Ticket, taker: Ticket) -> None:
        """``taker`` (its tier's round-robin head) takes the turn ``earner`` (the aged lane's
        head, of the same tier) earned: they trade levels, waits and aging. The earner's
        entry is popped; the taker's old one, if it had aged, is stale and the earner gets
        a fresh entry at that level."""
        self._ordered[earner._level].aged.popleft()
        old = taker._entry
        earner._level, taker._level = taker._level, earner._level
        earner._aging_at, taker._aging_at = taker._aging_at, earner._aging_at
        since = earner.level_since  # the age at a level is traded too, never past a wait
        earner.level_since = max(earner.waiting_since, taker.level_since)
        taker.level_since = max(taker.waiting_since, since)
        taker._seq = next(self._ids)  # both heap entries go stale
        taker._entry = 0  # (the popped entry: it leaves at once)
        earner._entry = 0
        if old:
            self._stale_entry()
            earner._entry = next(self._ids)
            self._ordered[earner._level].aged.append((earner._entry, earner))
        earner._seq = next(self._ids)
        if earner._aging_at is not None:
            heapq.heappush(self._aging_heap, (earner._aging_at, earner._seq, earner))

    def _head(self, cap: float) -> tuple[Ticket, Ticket | None] | None:
        if math.isfinite(cap):
            for q in self._ordered:
                share = q.tier.min_share
                if share > 0 and q.own_waiting and q.running < math.floor(share * cap):
                    head = self._tier_head(q)
                    if head is not None and head[0].tier is q.tier and head[1] is None:
                        return head
        for q in self._ordered:
            head = self._tier_head(q)
            if head is not None:
                return head
        return None

    def _admit(self, t: Ticket, now: float, earner: Ticket | None = None) -> None:
        if earner is not None:
            self._trade(earner, t)
        if t._lane == "resumed":
            if t._entry:
                self._ordered[t._level].aged.popleft()  # a paused request's own turn
            else:
                self._ordered[t._level].resumed.popleft()
        else:  # the deficit-round-robin head: its tenant is first in its tier's round
            q = self._queues[t.tier.name]
            dq = q.tenants[t.tenant]
            dq.popleft()
            q.deficit[t.tenant] -= self._price(t)
            while dq and not _queued(dq[0]):
                dq.popleft()
                self._stale -= 1
            if not dq:  # an emptied tenant leaves the round and its credit lapses
                q.order.popleft()
                del q.tenants[t.tenant]
                del q.deficit[t.tenant]
                q.credited = False
        self._dequeue(t, popped=1)
        t.state = TicketState.RUNNING
        t.admitted_at = now
        t.first_token_at = None
        if t.first_admitted_at is None:
            t.first_admitted_at = now
        self._admits += 1
        t._admit_seq = self._admits
        self._holding[t.id] = t
        self._queues[t.tier.name].running += 1
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
            found = self._head(cap)
            if found is None:
                break
            head, earner = found
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
            self._admit(head, now, earner)
            admit.append(head)
        preempt: list[Ticket] = []
        if capacity_bound:
            preempt, ready_at = self._victims(now)
            if ready_at is not None:
                wake = min(wake, ready_at)
        if self._share is not None:
            preempt += self._shed()
        rejects, self._rejects = tuple(self._rejects), []
        return Decisions(tuple(admit), tuple(preempt), rejects, wake if math.isfinite(wake) else None)

    def _shed(self) -> list[Ticket]:
        """Preempt what runs beyond the share (it shrank): preemptible streams, the
        worst level first, then the newest; those that cannot be paused stay."""
        assert self._share is not None
        holding = list(self._holding.values())
        excess = sum(t.state is TicketState.RUNNING for t in holding) - self._share
        if excess <= 0:
            return []
        out: list[Ticket] = []
        holding.sort(key=lambda t: (t._level, t._admit_seq), reverse=True)
        for t in holding:
            if len(out) == excess:
                break
            if t.state is TicketState.RUNNING and t.preemptible:
                t.state = TicketState.PREEMPTING
                out.append(t)
        return out

    def _victims(self, now: float) -> tuple[list[Ticket], float | None]:
        """One victim per waiting request of a better level and of another tier (less
        those already being preempted): the worst level first, a decoding stream before
        one in its prefill, the newest first, each past ``min_run`` and none that would
        take its tier below its reserved share."""
        candidates: list[Ticket] = []
        ready_at: float | None = None
        covered = 0
        for t in self._holding.values():
            if t.state is TicketState.PREEMPTING:
                covered += 1
            elif t.preemptible:
                assert t.admitted_at is not None
                ready = t.admitted_at + self.min_run
                if ready <= now:
                    candidates.append(t)
                else:
                    ready_at = ready if ready_at is None else min(ready_at, ready)
        if not candidates:
            return [], ready_at
        # The worst level first; inside it a stream already past its first token (its
        # engine stops it at the next token) before one still in its prefill (a prefill
        # runs to its end whatever we close, so cutting it frees nothing sooner and wastes
        # it); then the newest.
        candidates.sort(key=lambda t: (t._level, t.first_token_at is not None, t._admit_seq), reverse=True)
        cap = self.capacity()
        kept = {
            q.tier.name: math.floor(q.tier.min_share * cap) if math.isfinite(cap) else 0
            for q in self._ordered
        }
        left = {q.tier.name: q.running for q in self._ordered}
        out: list[Ticket] = []
        taken = [False] * len(candidates)
        for q in self._ordered:
            # this level's own tier first (the best of those waiting here), then the tiers
            # whose requests aged into it: a request is never a victim for its own tier's
            for name, n in sorted(q.by_tier.items(), key=lambda kv: self._queues[kv[0]].level):
                if covered >= n:
                    covered -= n
                    continue
                n -= covered
                covered = 0
                for j, v in enumerate(candidates):
                    if not n or v._level <= q.level:
                        break
                    if taken[j] or v.tier.name == name or left[v.tier.name] <= kept[v.tier.name]:
                        continue  # taken, of the same tier, or within its tier's reserved share
                    taken[j] = True
                    left[v.tier.name] -= 1
                    v.state = TicketState.PREEMPTING
                    out.append(v)
                    n -= 1
        return out, ready_at
