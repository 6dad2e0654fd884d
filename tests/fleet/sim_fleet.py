"""A simulated fleet: 8 replicas in front of 32 engines (4 slots each), driven by a
simulated clock, with engine failures.

What is real: each replica's :class:`~sdk.scheduler.Scheduler` and
:class:`~sdk.scheduler.FleetMember` (the code the server runs), and the shared state's
Lua scripts on a real Valkey/Redis server, given the simulated time instead of the
server's clock. What is simulated: the clients (Poisson arrivals per tier from a fixed
seed), the engines (a request takes its prefill, then a fixed time per token; the
engines' slots are one pool, since the server routes each request to any healthy one),
and the failures (engines go down and come back; their slots leave the pool, their
streams continue elsewhere, as the server's failover does).

Reported: TTFT per tier (submission to the first token) at p50/p90/p99, requests
finished, preemptions, and slot utilisation (busy slot-seconds over the pool's
slot-seconds, during the load). ``python -m tests.fleet.sim_fleet redis://...``
prints the table.
"""

from __future__ import annotations

import random
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

import redis

from sdk.scheduler import Cost, FleetMember, Scheduler, Ticket
from sdk.server._fleet import FleetLink

REPLICAS, ENGINES, SLOTS_PER_ENGINE = 8, 32, 4
DT = 0.02
PREFILL = 0.05
PER_TOKEN = 0.02
TTL = 3.0


@dataclass(frozen=True)
class Kind:
    tier: str
    rate: float  # arrivals per second per replica
    tokens: tuple[int, int]  # output tokens, uniform in this range


KINDS = (
    Kind("interactive", 1.5, (10, 30)),
    Kind("default", 0.4, (50, 150)),
    Kind("batch", 2.0, (200, 400)),
)


@dataclass
class Job:
    ticket: Ticket
    tokens: int
    submitted: float
    done_tokens: float = 0.0
    busy_until_first: float = 0.0  # the prefill of the current admission ends
    first_token: float | None = None
    finished: float | None = None


@dataclass
class Replica:
    name: str
    sched: Scheduler
    member: FleetMember
    link: FleetLink
    jobs: dict[int, Job] = field(default_factory=dict)
    running: set[int] = field(default_factory=set)


@dataclass
class Result:
    ttft: dict[str, list[float]]
    finished: dict[str, int]
    submitted: dict[str, int]
    preemptions: int
    utilisation: float
    max_over: int  # leases above the pool's slots, at worst (during failures only)
    max_held: int
    handoffs: int
    calls: int

    def table(self) -> str:
        rows = [
            "| tier | requests | finished | TTFT p50 | TTFT p90 | TTFT p99 |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for k in KINDS:
            t = sorted(self.ttft[k.tier])
            q = statistics.quantiles(t, n=100, method="inclusive") if len(t) > 1 else t * 99
            rows.append(
                f"| {k.tier} | {self.submitted[k.tier]} | {self.finished[k.tier]} | "
                f"{q[49] * 1000:.0f} ms | {q[89] * 1000:.0f} ms | {q[98] * 1000:.0f} ms |"
            )
        rows.append("")
        rows.append(
            f"Slot utilisation {self.utilisation:.1%}; preemptions {self.preemptions}; slots handed between "
            f"replicas {self.handoffs}; calls to Valkey {self.calls}; most leases held {self.max_held} "
            f"(pool {ENGINES * SLOTS_PER_ENGINE}), at most {self.max_over} above the pool during failures."
        )
        return "\n".join(rows)


@contextmanager
def fleet(url: str, fleet_name: str) -> Iterator[list[Replica]]:
    slots = ENGINES * SLOTS_PER_ENGINE
    out = []
    for i in range(REPLICAS):
        sched = Scheduler(slots=slots, aging=30.0, max_queue=100_000)
        link = FleetLink(url, fleet=fleet_name, replica=f"r{i}", timeout=5.0)
        out.append(Replica(f"r{i}", sched, FleetMember(sched, slots, ttl=TTL), link))
    try:
        yield out
    finally:
        for r in out:
            r.link.close()
        client = redis.Redis.from_url(url)
        for key in client.scan_iter(match=f"seam:fleet:{{{fleet_name}}}:*"):
            client.delete(key)
        client.close()


def run(url: str, *, seconds: float = 90.0, seed: int = 7, fleet_name: str = "sim") -> Result:
    rng = random.Random(seed)
    failures = [(30.0, 45.0, range(0, 4)), (55.0, 70.0, range(4, 12))]  # (down, up, engines)
    ttft: dict[str, list[float]] = {k.tier: [] for k in KINDS}
    finished = {k.tier: 0 for k in KINDS}
    submitted = {k.tier: 0 for k in KINDS}
    busy = 0.0
    offered = 0.0
    max_over = max_held = calls = 0
    r_client = redis.Redis.from_url(url)
    with fleet(url, fleet_name) as replicas:
        held_key = f"seam:fleet:{{{fleet_name}}}:held"
        step = 0
        t = 0.0
        drain_until = seconds + 120.0
        while t < drain_until:
            t = step * DT
            step += 1
            down = sum(len(engines) for a, b, engines in failures if a <= t < b)
            slots = (ENGINES - down) * SLOTS_PER_ENGINE
            dirty = False
            for r in replicas:
                r.member.slots = slots
                r.sched.set_slots(slots)
                # arrivals (none once the load ends: the rest drains)
                if t < seconds:
                    for k in KINDS:
                        if rng.random() < k.rate * DT:
                            tk = r.sched.submit(
                                t, tier=k.tier, tenant=f"{r.name}-{k.tier}", cost=Cost(50, 300)
                            )
                            r.jobs[tk.id] = Job(tk, rng.randint(*k.tokens), t)
                            submitted[k.tier] += 1
                # the engines' progress
                for tid in list(r.running):
                    job = r.jobs[tid]
                    if t < job.busy_until_first:
                        continue
                    if job.first_token is None:
                        job.first_token = t
                        ttft[job.ticket.tier.name].append(t - job.submitted)
                    job.done_tokens += DT / PER_TOKEN
                    if job.done_tokens >= job.tokens:
                        r.running.discard(tid)
                        r.sched.finished(job.ticket, t)
                        job.finished = t
                        finished[job.ticket.tier.name] += 1
                # the member's calls, answered by the real scripts at the simulated time
                for _ in range(16):
                    call = r.member.next_call(t)
                    if call is None:
                        break
                    result = r.link.script_now(call, slots, TTL, now=t)
                    calls += 1
                    dirty = True
                    r.member.answered(call, result, t)
                    _poll(r, t)
                _poll(r, t)
            if dirty:  # scripts leave messages: deliver them
                for r in replicas:
                    key = f"{r.link.prefix}inbox:{r.link.replica}"
                    msgs = cast("list[bytes]", r_client.lpop(key, 1000) or [])
                    for m in msgs:
                        r.member.message(m.decode(), t)
                    if msgs:
                        _poll(r, t)
                held = sum(int(v) for v in r_client.hvals(held_key))
                max_held = max(max_held, held)
                max_over = max(max_over, held - slots)
            if t < seconds:  # the load period: what the pool was busy with
                busy += min(slots, sum(len(r.running) for r in replicas)) * DT
                offered += slots * DT
            if t >= seconds and not any(r.running or r.sched.waiting for r in replicas):
                break
    r_client.close()
    preemptions = sum(r.sched.stats().preempted for r in replicas)
    handoffs = sum(r.member.handoffs for r in replicas)
    utilisation = busy / offered if offered else 0.0
    return Result(ttft, finished, submitted, preemptions, utilisation, max_over, max_held, handoffs, calls)


def _poll(r: Replica, t: float) -> None:
    """Poll the replica's scheduler and carry out its decisions, as the server's
    dispatcher does: admitted requests start (a prefill first), preempted ones pause at
    once and go back in line."""
    for _ in range(100):
        d = r.sched.poll(t)
        r.member.observe(d)
        for tk in d.admit:
            job = r.jobs.get(tk.id)
            if job is None:
                continue  # a ghost: the member hands it off
            r.running.add(tk.id)
            job.busy_until_first = t + PREFILL
        for tk in d.preempt:
            r.running.discard(tk.id)
            r.sched.paused(tk, t)
            r.sched.resume(tk, t)
        if not d.preempt:
            return


def main() -> None:
    print(run(sys.argv[1]).table())


if __name__ == "__main__":
    main()
