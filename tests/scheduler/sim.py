"""A simulated host for the scheduler: a clock, jobs that hold a slot for a while, and a
record of every decision, so properties can be checked event by event."""

from __future__ import annotations

from dataclasses import dataclass, field

from sdk.scheduler import Cost, Decisions, Scheduler, Ticket, TicketState


@dataclass
class Admission:
    at: float
    ticket: Ticket
    waiting: list[Ticket]  # what still waited just before it (in this poll's order)
    resumed: bool


@dataclass
class Sim:
    sched: Scheduler
    now: float = 0.0
    durations: dict[int, float] = field(default_factory=dict)
    ends: dict[int, float] = field(default_factory=dict)  # running ticket id -> end time
    waiting: dict[int, Ticket] = field(default_factory=dict)
    running: dict[int, Ticket] = field(default_factory=dict)
    admissions: list[Admission] = field(default_factory=list)
    # (time, victims, the streams that held a slot then: (ticket, its admission number))
    preemptions: list[tuple[float, tuple[Ticket, ...], list[tuple[Ticket, int]]]] = field(
        default_factory=list
    )
    rejected: list[Ticket] = field(default_factory=list)
    comply: bool = True  # pause preempted streams at once

    def submit(
        self, tier: str | int, tenant: str = "", cost: Cost | None = None, duration: float = 1.0
    ) -> Ticket:
        t = self.sched.submit(self.now, tier=tier, tenant=tenant, cost=cost)
        self.durations[t.id] = duration
        self.waiting[t.id] = t
        return t

    def poll(self) -> Decisions:
        d = self.sched.poll(self.now)
        self.sched.check()  # every count agrees with the lanes, after every decision
        for t in d.admit:
            waiting = [w for w in self.waiting.values() if w.id != t.id]
            self.admissions.append(Admission(self.now, t, waiting, t.preemptions > 0))
            del self.waiting[t.id]
            self.running[t.id] = t
            self.ends[t.id] = self.now + self.durations[t.id]
        for t in d.reject:
            self.waiting.pop(t.id, None)
            self.rejected.append(t)
        if d.preempt:
            victims_were = [
                (r, r._admit_seq)
                for r in self.running.values()
                if r.state is not TicketState.PREEMPTING or r in d.preempt
            ]
            self.preemptions.append((self.now, d.preempt, victims_were))
            if self.comply:
                for v in d.preempt:
                    self.pause(v)
                    self.sched.resume(v, self.now)
                    self.waiting[v.id] = v
                self.poll()
        return d

    def pause(self, t: Ticket) -> None:
        left = self.ends.pop(t.id) - self.now
        self.durations[t.id] = max(left, 0.0)
        del self.running[t.id]
        self.sched.paused(t, self.now)

    def finish_due(self) -> None:
        for tid, end in sorted(self.ends.items(), key=lambda kv: kv[1]):
            if end <= self.now:
                t = self.running.pop(tid)
                del self.ends[tid]
                self.sched.finished(t, self.now)

    def advance(self, dt: float) -> None:
        """Move time forward event by event (job ends, wake-ups), polling at each."""
        target = self.now + dt
        while True:
            self.finish_due()
            d = self.poll()
            times = [e for e in self.ends.values() if e > self.now]
            if d.wake_at is not None and d.wake_at > self.now:
                times.append(d.wake_at)
            self.now = min([*times, target])
            if self.now >= target:
                self.finish_due()
                self.poll()
                return
