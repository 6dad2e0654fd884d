"""A scheduler's membership in a fleet that shares its engines' slots, decided sans-IO.

Several schedulers (one per server replica) share the slots of the same engines. The
shared count lives elsewhere (Valkey, where :mod:`sdk.server` keeps it in scripts run
atomically); this :class:`FleetMember` decides what one scheduler asks of it and what it
does with the answers, and owns no socket or clock, like the :class:`Scheduler` it wraps:
the host asks :meth:`FleetMember.next_call` for the next :class:`Call`, runs it, and
reports :meth:`~FleetMember.answered` (or :meth:`~FleetMember.failed`); it passes on the
messages the shared state leaves for it (:meth:`~FleetMember.message`) and every poll's
:class:`Decisions` (:meth:`~FleetMember.observe`). A simulation drives it with a
simulated clock exactly as the server drives it with the real one.

How the member behaves:

- The scheduler may run as many requests as the member holds **leases**
  (:meth:`Scheduler.set_share`).
- When a request of its own waits only for a slot, the member asks for a lease at that
  request's level (``acquire``), with the want's **age**: how long its oldest request
  there has waited at that level. The shared state grants it if one is free and no other
  member wants one more urgently (a better level, or an older want at the same level),
  else records the want and tells the members holding leases. The member records the
  want again whenever its age changes (its oldest request there was admitted), so at one
  level the fleet admits the longest wait first, whichever member it waits at.
- A member told of a want puts a **ghost** in its scheduler: a request of the want's
  level, of the tenant :data:`GHOST_TENANT`, that never runs. Its scheduler preempts a
  worse stream for it, or gives it its fair turn at the same level; once it is admitted
  the member hands the lease over (``handoff``) and the ghost ends.
- Leases nobody local waits for go back at once (``release``); a ``beat`` every third
  of the lease time keeps them (a member that misses ``ttl`` of beats loses them).
- A call that fails puts the member in **degraded** mode: its scheduler runs alone on
  ``degraded_share`` of the slots (what runs beyond is preempted), and it tries to
  re-join every ``retry`` seconds with its true count of running requests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ._core import Decisions, Scheduler, Ticket, TicketState
from ._limits import Cost

__all__ = ["GHOST_TENANT", "Call", "FleetMember", "FleetStanding"]

GHOST_TENANT = "(fleet)"  # ghosts are told apart by identity, whatever a tenant is named

_HOLDING = (TicketState.RUNNING, TicketState.PREEMPTING)

Script = Literal["acquire", "release", "handoff", "beat", "leave"]


@dataclass(frozen=True, slots=True)
class Call:
    """One call to the shared state: the script, the leases the member holds by its own
    count (sent with every call, so a member dropped for a late beat is taken back with
    it), the script's own arguments, and the worst level the member runs that it could
    preempt (sent with every call: the shared state tells a want to the holder most
    likely to free a slot for it)."""

    script: Script
    held: int
    args: tuple[int, ...] = ()
    ghost: Ticket | None = None
    worst: int = -1  # the worst level among the member's preemptible running streams
    depth: tuple[int, ...] = ()  # a beat's: the member's own requests waiting per level
    # The want's age: since when (the member's clock) its oldest request of its own has
    # waited at the want's level, and for how long when the call was made (the shared
    # state keeps ``its clock - waited``, so members' clocks need not agree)
    since: float | None = None
    waited: float = 0.0


@dataclass(frozen=True, slots=True)
class FleetStanding:
    """The fleet as of the member's last beat."""

    held: int = 0  # leases held by all members
    members: int = 0  # members alive
    wants: Mapping[int, int] = field(default_factory=dict)  # level -> members wanting at it
    waiting: tuple[int, ...] = ()  # requests waiting per level, all members together


class FleetMember:
    """See the module doc. ``slots``: the engines' slot count (the host updates it when
    an engine's health changes)."""

    def __init__(
        self,
        scheduler: Scheduler,
        slots: int,
        *,
        ttl: float = 3.0,
        degraded_share: float = 0.5,
        retry: float = 1.0,
    ) -> None:
        if not (ttl > 0 and retry > 0 and 0 < degraded_share <= 1):
            raise ValueError("need ttl > 0, retry > 0 and 0 < degraded_share <= 1")
        self.scheduler = scheduler
        self.slots = slots
        self.ttl = ttl
        self.degraded_share = degraded_share
        self.retry = retry
        self.held = 0
        self.degraded = True  # until the first beat answers
        self.joined = False
        self.degraded_since: float | None = None
        self.degraded_seconds = 0.0
        self.standing = FleetStanding()
        self.handoffs = 0  # leases given to other members' requests
        self.grants = 0  # leases received from other members
        self._asked: int | None = None  # the want last recorded in the shared state
        self._asked_since: float | None = None  # and its age (see :class:`Call`)
        self._ghosts: dict[int, Ticket] = {}
        self._handoffs: list[Ticket] = []
        self._pending: Call | None = None
        self._last_beat = -math.inf
        self.scheduler.set_share(self.degraded_slots())

    # ---- what the scheduler shows ----------------------------------------------------

    def degraded_slots(self) -> int:
        return max(1, math.floor(self.degraded_share * max(1, self.slots)))

    def holding(self) -> int:
        """Requests of the member's own that hold a slot (being paused included)."""
        ghosts = sum(t.state in _HOLDING for t in self._ghosts.values())
        return self.scheduler.running - ghosts

    def running(self) -> int:
        """Requests of the member's own that run and are not being paused: never more
        than :attr:`held` (one asked to pause is on its way out)."""
        ghosts = sum(t.state is TicketState.RUNNING for t in self._ghosts.values())
        return self.scheduler.running - self.scheduler.preempting - ghosts

    def waiting(self) -> tuple[int, ...]:
        """Requests of the member's own waiting, per level (ghosts excluded)."""
        levels = list(self.scheduler.waiting_by_level())
        for g in self._ghosts.values():
            if g.state is TicketState.WAITING and g.level < len(levels):
                levels[g.level] -= 1
        return tuple(levels)

    def want(self) -> int | None:
        """The level of the best request of the member's own that waits only for a slot."""
        sched = self.scheduler
        best = next((i for i, n in enumerate(self.waiting()) if n > 0), None)
        if best is None or sched.running < sched.capacity():
            return None
        return best

    def degraded_time(self, now: float) -> float:
        extra = now - self.degraded_since if self.degraded and self.degraded_since is not None else 0.0
        return self.degraded_seconds + extra

    def wake_at(self) -> float:
        """When :meth:`next_call` has a beat (or a re-join) due, if nothing comes first."""
        return self._last_beat + (self.retry if self.degraded else self.ttl / 3)

    # ---- events ----------------------------------------------------------------------

    def observe(self, d: Decisions) -> None:
        """A poll's decisions: admitted ghosts are handed off."""
        for t in d.admit:
            if t.tenant == GHOST_TENANT and t.id in self._ghosts:
                self._handoffs.append(t)

    def message(self, msg: str, now: float) -> None:
        """A message the shared state left: ``grant`` (a lease is ours), ``want:<level>``
        (another member wants one). Void while degraded: the re-join recounts."""
        if self.degraded:
            return
        if msg == "grant":
            self.held += 1
            self.grants += 1
            self._asked = self._asked_since = None  # a grant ends the want: asked again if need be
            self.scheduler.set_share(self.held)
        elif msg.startswith("want:") and msg[5:].isdigit():
            self._ghost(int(msg[5:]), now)

    def next_call(self, now: float) -> Call | None:
        """The next call to make now (one at a time), or None."""
        if self._pending is not None:
            return None
        if self.degraded:
            if now - self._last_beat >= self.retry:
                running = self.holding()
                flag = 2 if self.joined else 1
                # the join tells the shared state ``running``: nothing more is admitted
                # until it answers (or fails, giving the degraded share back)
                self.scheduler.set_share(min(running, self.degraded_slots()))
                want = self.want()
                return self._issue(
                    Call("beat", running, (running, self._code(want), flag), depth=self.waiting()), want, now
                )
            return None
        while self._handoffs:
            g = self._handoffs.pop(0)
            if g.state in _HOLDING:
                return self._issue(Call("handoff", self.held, (g.level,), ghost=g))
            self._ghosts.pop(g.id, None)
        want = self.want()
        sched = self.scheduler
        idle = self.held - sched.running if sched.waiting == 0 else 0
        if idle > 0 or (want is None and self._asked is not None):
            idle = max(0, idle)
            self.held -= idle  # before the call: the scheduler must not use them meanwhile
            sched.set_share(self.held)
            return self._issue(Call("release", self.held + idle, (idle, self._code(want))), want, now)
        # A want is recorded again when its level or its age changes (its oldest request
        # was admitted): across members, one level's leases go to the longest wait
        since = None if want is None else self._since(want)
        if want is not None and (want != self._asked or since != self._asked_since):
            return self._issue(Call("acquire", self.held, (want,)), want, now, since)
        if now >= self.wake_at():
            return self._issue(
                Call("beat", self.held, (self.holding(), self._code(want), 0), depth=self.waiting()),
                want,
                now,
                since,
            )
        return None

    def leave(self) -> Call | None:
        """The call that gives every lease back at once (None while degraded)."""
        return None if self.degraded else self._issue(Call("leave", self.held))

    def answered(self, call: Call, result: Any, now: float) -> None:
        """The shared state's answer to ``call``."""
        if call is self._pending:
            self._pending = None
        if self.degraded and not (call.script == "beat" and call.args[2] != 0):
            return  # it went down meanwhile: the re-join recounts
        if call.script == "acquire":
            got = int(result) > 0
            self._asked, self._asked_since = (None, None) if got else (call.args[0], call.since)
            if got:
                self.held += 1
        elif call.script == "release":
            granted = int(result)  # (a lease granted back ended the want)
            self._asked = None if call.args[1] < 0 or granted else call.args[1]
            self._asked_since = None if self._asked is None else call.since
            self.held += granted
        elif call.script == "handoff":
            if int(result):
                self.held = max(0, self.held - 1)
                self.handoffs += 1
            if call.ghost is not None:
                self._end_ghost(call.ghost, now)
        elif call.script == "beat":
            self._beaten(call, result, now)
        self.scheduler.set_share(self.held)

    def _beaten(self, call: Call, result: Sequence[Any], now: float) -> None:
        mine, other, total, alive, flat = (
            int(result[0]),
            int(result[1]),
            int(result[2]),
            int(result[3]),
            result[4],
        )
        self._last_beat = now
        wants = {int(flat[i]): int(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}
        waiting = tuple(int(x) for x in result[5]) if len(result) > 5 else ()
        self.standing = FleetStanding(total, alive, wants, waiting)
        rejoin = call.args[2] != 0
        if rejoin:
            if self.degraded_since is not None:
                self.degraded_seconds += now - self.degraded_since
            self.degraded = False
            self.degraded_since = None
            self.joined = True
            self.held = call.args[0]
        want = call.args[1]
        # (a lease granted here ended the want: it is asked again if need be)
        self._asked, self._asked_since = (None, None) if want < 0 or mine else (want, call.since)
        self.held += mine
        if other < 0:
            self._drop_ghosts(None, now)
        else:
            self._drop_ghosts(other, now)
            self._ghost(other, now)

    def failed(self, now: float, call: Call | None = None) -> bool:
        """``call`` (or the host's wait for messages) did not answer: degraded (True when
        this starts it)."""
        if call is not None and call is self._pending:
            self._pending = None
        self._last_beat = now  # the next try after ``retry``
        if self.degraded:
            if self.degraded_since is None:  # it never joined
                self.degraded_since = now
            self.scheduler.set_share(self.held)  # a join that failed: the degraded share
            return False
        self.degraded = True
        self.degraded_since = now
        for g in list(self._ghosts.values()):
            self._end_ghost(g, now)
        self._handoffs.clear()
        self._asked = self._asked_since = None
        self.held = self.degraded_slots()
        self.scheduler.set_share(self.held)  # what runs beyond the share is preempted
        return True

    # ---- ghosts ----------------------------------------------------------------------

    def _issue(
        self, call: Call, want: int | None = None, now: float = 0.0, since: float | None = None
    ) -> Call:
        """``call`` with what every call carries; ``since``: the want's age if the caller
        has it already (one scan of the level, not two)."""
        worst = self.scheduler.worst_preemptible()
        if since is None and want is not None:
            since = self._since(want)
        waited = 0.0 if since is None else max(0.0, now - since)
        self._pending = call = replace(call, worst=-1 if worst is None else worst, since=since, waited=waited)
        return call

    def _since(self, level: int) -> float | None:
        """Since when the oldest request of the member's own has waited at ``level``."""
        return min(
            (t.level_since for t in self.scheduler.waiting_at(level) if t.id not in self._ghosts),
            default=None,
        )

    @staticmethod
    def _code(level: int | None) -> int:
        return -1 if level is None else level

    def _ghost(self, level: int, now: float) -> None:
        """A want at ``level`` elsewhere: one waiting ghost at that level or better."""
        if self.degraded or self.held == 0 or level < 0:
            return
        if any(g.state is TicketState.WAITING and g.level <= level for g in self._ghosts.values()):
            return
        tiers = list(self.scheduler.tiers)
        tier = tiers[min(level, len(tiers) - 1)]
        t = self.scheduler.submit(now, tier=tier, tenant=GHOST_TENANT, cost=Cost(), preemptible=False)
        self._ghosts[t.id] = t

    def _drop_ghosts(self, worse_than: int | None, now: float) -> None:
        """Cancel the waiting ghosts no want justifies: better than the best want
        (all of them with None)."""
        for g in list(self._ghosts.values()):
            if g.state is TicketState.WAITING and (worse_than is None or g.level < worse_than):
                self.scheduler.cancel(g, now)
            if g.state not in (TicketState.WAITING, *_HOLDING):
                del self._ghosts[g.id]

    def _end_ghost(self, g: Ticket, now: float) -> None:
        self._ghosts.pop(g.id, None)
        if g.state in (*_HOLDING, TicketState.WAITING):
            self.scheduler.finished(g, now, ok=True)
