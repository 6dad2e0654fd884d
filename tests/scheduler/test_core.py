"""The scheduler core, event by event with a simulated clock."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdk.scheduler import (
    AIMD,
    DEFAULT_TIERS,
    Cost,
    Decisions,
    Scheduler,
    Ticket,
    TicketState,
    Tier,
    Tiers,
    UnknownTierError,
)

from .sim import Sim

RANK = {t.name: t.rank for t in DEFAULT_TIERS}
TIER_NAMES = [t.name for t in DEFAULT_TIERS]


# ---- tiers ----------------------------------------------------------------------------


def test_tiers_resolve_names_and_integer_priorities() -> None:
    tiers = Tiers()
    assert tiers.resolve("batch").name == "batch"
    assert tiers.resolve(None).name == "default"
    assert tiers.resolve(-5).name == "interactive"
    assert tiers.resolve(-1).name == "interactive"
    assert tiers.resolve(0).name == "default"
    assert tiers.resolve(7).name == "batch"
    with pytest.raises(UnknownTierError, match="unknown tier 'urgent'"):
        tiers.resolve("urgent")
    with pytest.raises(UnknownTierError):
        tiers.resolve(True)


@pytest.mark.parametrize(
    "tiers",
    [
        [],
        [Tier("a", 0), Tier("a", 1)],
        [Tier("a", 0), Tier("b", 0)],
        [Tier("a", 0, min_share=0.6), Tier("b", 1, min_share=0.6)],
    ],
)
def test_tiers_are_validated(tiers: list[Tier]) -> None:
    with pytest.raises(ValueError):
        Tiers(tiers)


def test_tier_fields_are_validated() -> None:
    for bad in (dict(weight=0), dict(ttft_target=-1.0), dict(min_share=1.5), dict(weight=math.inf)):
        with pytest.raises(ValueError):
            Tier("x", 0, **bad)  # type: ignore[arg-type]


# ---- ordering -------------------------------------------------------------------------


def test_higher_tier_goes_first_and_fifo_inside_a_tenant() -> None:
    sim = Sim(Scheduler(slots=1, aging=None, min_run=100))  # no preemption here
    first = sim.submit("batch")
    sim.poll()
    b = [sim.submit("batch") for _ in range(3)]
    i = sim.submit("interactive")
    d = sim.submit("default")
    sim.advance(10)
    order = [a.ticket for a in sim.admissions]
    assert order == [first, i, d, *b]


def test_a_queued_request_can_be_cancelled() -> None:
    sim = Sim(Scheduler(slots=1, aging=None))
    sim.submit("default")
    sim.poll()
    gone = sim.submit("interactive")
    kept = sim.submit("default")
    sim.sched.cancel(gone, sim.now)
    del sim.waiting[gone.id]
    sim.advance(5)
    assert gone.state is TicketState.CANCELLED
    assert gone not in [a.ticket for a in sim.admissions]
    assert kept.state is TicketState.DONE
    assert sim.sched.waiting == 0


def test_a_request_that_ends_while_back_in_line_leaves_the_queue() -> None:
    s = Scheduler(slots=1)
    a = s.submit(0.0)
    s.poll(0.0)
    s.requeue(a, 1.0)  # a 429: back in line
    s.finished(a, 1.0, ok=False)
    assert a.state is TicketState.DONE and s.waiting == 0
    b = s.submit(2.0)
    assert s.poll(2.0).admit == (b,)


def test_cancelling_a_running_request_frees_its_slot() -> None:
    s = Scheduler(slots=1)
    a = s.submit(0.0)
    b = s.submit(0.0)
    assert s.poll(0.0).admit == (a,)
    s.cancel(a, 1.0)
    assert s.poll(1.0).admit == (b,)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(TIER_NAMES), st.integers(0, 3), st.floats(0.05, 3.0), st.floats(0, 1.5)),
        min_size=1,
        max_size=60,
    ),
    st.integers(1, 4),
)
def test_never_admits_a_lower_tier_while_a_higher_one_waits(
    jobs: list[tuple[str, int, float, float]], slots: int
) -> None:
    sim = Sim(Scheduler(slots=slots, aging=None))
    for tier, tenant, duration, gap in jobs:
        sim.submit(tier, f"t{tenant}", Cost(100, 100), duration)
        sim.advance(gap)
    sim.advance(1000)
    assert not sim.waiting and not sim.running
    for a in sim.admissions:
        assert all(RANK[w.tier.name] >= RANK[a.ticket.tier.name] for w in a.waiting), a


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(TIER_NAMES), st.floats(0.05, 2.0), st.floats(0, 1.0)), max_size=50),
    st.floats(1.0, 10.0),
)
def test_aging_never_puts_a_lower_tier_before_the_best_one(
    jobs: list[tuple[str, float, float]], aging: float
) -> None:
    """Aging raises a request a level per ``aging`` seconds, but never into the best
    tier's: an admission while an interactive request waits is an interactive one, and a
    batch request goes before a waiting ``default`` one only once it has waited."""
    sim = Sim(Scheduler(slots=2, aging=aging, min_run=1000))  # no preemption here
    for tier, duration, gap in jobs:
        sim.submit(tier, "", Cost(10, 10), duration)
        sim.advance(gap)
    sim.advance(1000)
    assert not sim.waiting and not sim.running
    for a in sim.admissions:
        if a.resumed:
            continue
        if any(w.tier.name == "interactive" and not w.resumed for w in a.waiting):
            assert a.ticket.tier.name == "interactive", a
        if a.ticket.tier.name == "batch" and any(w.tier.name == "default" for w in a.waiting):
            assert a.at - a.ticket.waiting_since >= aging - 1e-9


@settings(max_examples=30, deadline=None)
@given(st.floats(0.2, 2.0), st.integers(1, 3), st.floats(2.0, 20.0))
def test_a_lower_tier_ages_past_a_middle_tiers_load(duration: float, slots: int, aging: float) -> None:
    """A steady stream of ``default`` requests, always more than the slots: the batch
    request rises to their level after ``aging`` seconds and goes before every one that
    has not waited as long: within max(aging, the service time of those already waiting
    when it came) plus one job's duration."""
    sim = Sim(Scheduler(slots=slots, aging=aging))
    for _ in range(slots * 3):
        sim.submit("default", "", None, duration)
    sim.poll()
    ahead = sim.sched.waiting
    batch = sim.submit("batch", "", None, duration)
    while batch.state is TicketState.WAITING:
        assert sim.now < 10 * aging + 100
        for _ in range(slots):
            sim.submit("default", "", None, duration)
        sim.advance(duration / 2)
    assert batch.first_admitted_at is not None
    bound = max(aging, math.ceil(ahead / slots) * duration) + duration
    assert batch.first_admitted_at - batch.submitted_at <= bound + 1e-9


def test_an_aged_batch_stream_is_preempted_by_a_fresh_interactive_request() -> None:
    """No amount of waiting makes batch work unpreemptible: the interactive request gets
    the slot of the batch stream that aged in, at once."""
    s = Scheduler(slots=1, aging=5.0, min_run=0)
    d = s.submit(0.0, tier="default")
    s.poll(0.0)
    b = s.submit(0.0, tier="batch")
    for t in range(1, 30):
        s.submit(float(t), tier="default")  # a middle tier's steady load
    s.finished(d, 30.0)
    assert s.poll(30.0).admit == (b,)  # aged past the default requests
    urgent = s.submit(31.0, tier="interactive")
    assert s.poll(31.0).preempt == (b,)
    s.paused(b, 31.0)
    assert s.poll(31.0).admit == (urgent,)
    s.resume(b, 31.0)
    s.finished(urgent, 32.0)
    assert s.poll(32.0).admit == (b,)  # back at the level it had earned, before the defaults
    s.check()


def test_a_reserved_share_keeps_batch_moving_under_interactive_load() -> None:
    """Under interactive load that fills every slot, batch progresses through its
    ``min_share``, and the reserved stream is not preempted."""
    tiers = [
        Tier("interactive", -1),
        Tier("default", 0),
        Tier("batch", 1, preemptible=True, min_share=0.25),
    ]
    sim = Sim(Scheduler(tiers, slots=4, aging=None, min_run=0))
    batch = [sim.submit("batch", "", None, 3.0) for _ in range(3)]
    for _ in range(40):
        for _ in range(4):
            sim.submit("interactive", "", None, 1.0)
        sim.advance(1.0)
        if any(t.state is not TicketState.DONE for t in batch):
            assert sim.sched.stats().running["batch"] >= 1  # its reserved slot, always held
    assert all(t.state is TicketState.DONE for t in batch)


@settings(max_examples=20, deadline=None)
@given(
    st.lists(st.sampled_from([1.0, 1.5, 2.0, 3.0]), min_size=2, max_size=4),
    st.lists(st.sampled_from([100, 1000, 5000]), min_size=4, max_size=4),
)
def test_tenant_shares_follow_their_weights(weights: list[float], sizes: list[int]) -> None:
    """Backlogged tenants with different request sizes: admitted tokens within 10% of
    the weights over a long run (long against the round-robin's granularity: each
    tenant's share is off by at most one request plus one quantum)."""
    s = Scheduler(slots=1, aging=None, quantum=1000)
    for i, w in enumerate(weights):
        s.set_tenant_weight(f"t{i}", w)
    admitted = [0.0] * len(weights)
    queued = [0] * len(weights)
    now = 0.0
    running = None
    while sum(admitted) < 800_000:
        for i in range(len(weights)):
            while queued[i] < 3:
                s.submit(now, tier="default", tenant=f"t{i}", cost=Cost(sizes[i], 0))
                queued[i] += 1
        if running is not None:
            s.finished(running, now)
        (running,) = s.poll(now).admit
        i = int(running.tenant[1:])
        queued[i] -= 1
        admitted[i] += running.cost.tokens
        now += 1.0
    total_w = sum(weights)
    total = sum(admitted)
    for w, a in zip(weights, admitted):
        assert a / total == pytest.approx(w / total_w, rel=0.10)


def test_tenants_alternate_within_a_few_requests_by_default() -> None:
    """Weights 2:1, small requests: every window of three admissions is two and one (with
    a quantum of 4096 tokens the first tenant took 34 requests of 120 tokens in a row)."""
    s = Scheduler(slots=1, aging=None, tenant_weights={"a": 2.0, "b": 1.0})
    t = [s.submit(0.0, tier="batch", tenant=n, cost=Cost(20, 100)) for n in "ab" * 12]
    order = []
    for k in range(24):
        (admitted,) = s.poll(float(k)).admit
        order.append(admitted.tenant)
        s.finished(admitted, float(k) + 0.5)
    assert len(t) == 24
    for i in range(1, 17):  # while both have work: never more than a request from 2:1
        a = order[:i].count("a")
        assert abs(a - 2 * (i - a)) <= 2, order


def _backlogged_share(sched: Scheduler, duration: float, n: int, default_load: bool) -> dict[str, int]:
    """Tenants ``a`` and ``b`` each keep 8 batch requests in flight (``n`` in all, each
    holding a slot ``duration`` seconds), with a steady ``default`` load beside them or
    not: the batch requests each tenant completed by the time the first of them has
    completed all of its own."""
    now = 0.0
    sent = dict.fromkeys("ab", 0)
    done = dict.fromkeys("ab", 0)
    running: dict[int, tuple[Ticket, float]] = {}
    while max(done.values()) < n:
        for k in "ab":
            while sent[k] - done[k] < 8 and sent[k] < n:
                sched.submit(now, tier="batch", tenant=k, cost=Cost(20, 100))
                sent[k] += 1
        if default_load and sched.stats().waiting["default"] < 4:
            sched.submit(now, tier="default", cost=Cost(20, 100))
        for t in sched.poll(now).admit:
            running[t.id] = (t, now + duration)
        sched.check()
        tid, (t, end) = min(running.items(), key=lambda kv: kv[1][1])
        now = end
        del running[tid]
        sched.finished(t, now)
        if t.tier.name == "batch":
            done[t.tenant] += 1
    return done


@pytest.mark.parametrize("duration", [2.0, 8.0, 20.0])
def test_tenant_weights_hold_however_long_the_tier_waits(duration: float) -> None:
    """Weights 2:1 in one tier, both backlogged: the shares follow the weights whether
    the requests wait less than ``aging`` or far longer. (When an aged request went first
    by itself, the tenant with the smaller weight, whose requests wait longer, won back
    what its weight denied it: 24 against 17 here once the waits passed 30 s.)"""
    s = Scheduler(slots=2, aging=30.0, tenant_weights={"a": 2.0, "b": 1.0})
    done = _backlogged_share(s, duration, 24, default_load=False)
    assert done["a"] == 24
    assert done["a"] / (done["a"] + done["b"]) == pytest.approx(2 / 3, rel=0.1), done


def test_a_tiers_aged_turns_go_to_its_tenants_by_their_weights() -> None:
    """A steady ``default`` load fills the slots, so batch work moves only by the turns
    its requests earn by aging: those turns go to batch's tenants 2:1 as well."""
    s = Scheduler(slots=2, aging=10.0, tenant_weights={"a": 2.0, "b": 1.0})
    done = _backlogged_share(s, 4.0, 30, default_load=True)
    assert done["a"] / (done["a"] + done["b"]) == pytest.approx(2 / 3, rel=0.1), done


def test_an_aged_request_does_not_preempt_its_own_tiers_streams() -> None:
    """Aging protects a tier from the tiers above it: a batch request that aged past the
    batch streams running does not take their slots (they would only trade places), but
    a ``default`` request still preempts them."""
    s = Scheduler(slots=1, aging=5.0, min_run=0)
    first = s.submit(0.0, tier="batch", tenant="a")
    assert s.poll(0.0).admit == (first,)
    s.submit(0.0, tier="batch", tenant="b")
    assert s.poll(60.0) == Decisions()
    assert first.state is TicketState.RUNNING
    s.submit(60.0, tier="default")
    assert s.poll(60.0).preempt == (first,)
    s.check()


def test_one_tenants_huge_prompts_do_not_crowd_out_small_ones() -> None:
    s = Scheduler(slots=1, aging=None, quantum=1000)
    now = 0.0
    for _ in range(20):
        s.submit(now, tenant="big", cost=Cost(100_000, 0))
        s.submit(now, tenant="small", cost=Cost(100, 0))
    order = []
    running = None
    for _ in range(20):
        if running is not None:
            s.finished(running, now)
        (running,) = s.poll(now).admit
        order.append(running.tenant)
        now += 1
    # 100k tokens of credit buys one big prompt or a thousand small ones
    assert order.count("small") >= 19


def test_deficit_round_robin_skips_fruitless_rounds_in_bounded_work() -> None:
    class Counting(Scheduler):
        visits = 0

        def _weight(self, q, tenant):  # type: ignore[no-untyped-def]
            Counting.visits += 1
            return super()._weight(q, tenant)

    s = Counting(slots=1, aging=None, quantum=1)
    for i in range(5):
        s.submit(0.0, tenant=f"t{i}", cost=Cost(10**12, 0))
    assert len(s.poll(0.0).admit) == 1
    assert Counting.visits < 50


# ---- rate limits ----------------------------------------------------------------------


def _anthropic_headers(remaining: int, limit: int, reset: str) -> dict[str, str]:
    return {
        "anthropic-ratelimit-requests-limit": str(limit),
        "anthropic-ratelimit-requests-remaining": str(remaining),
        "anthropic-ratelimit-requests-reset": reset,
    }


def test_rate_limit_headers_pace_admissions() -> None:
    s = Scheduler()
    first = s.submit(0.0)
    s.poll(0.0)
    # 10 requests a minute, none left, full again in 60 s: one every 6 s
    s.rate_limit(0.0, _anthropic_headers(0, 10, "2026-12-01T00:01:00Z"), ticket=first, wall=1796083200.0)
    for _ in range(5):
        s.submit(0.0)
    times = []
    now = 0.0
    for _ in range(100):
        d = s.poll(now)
        times += [now] * len(d.admit)
        if d.wake_at is None:
            break
        now = d.wake_at
    assert len(times) == 5
    assert times == pytest.approx([6.0, 12.0, 18.0, 24.0, 30.0])


def test_a_cost_above_a_buckets_capacity_is_rejected_not_stuck() -> None:
    s = Scheduler()
    s.rate_limit(0.0, {"x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "1000"})
    big = s.submit(0.0, cost=Cost(900, 200))
    small = s.submit(0.0, cost=Cost(10, 10))
    d = s.poll(0.0)
    assert d.reject == (big,) and d.admit == (small,)
    assert big.state is TicketState.REJECTED
    assert "tokens (1100) exceed the rate limit's whole capacity (1000)" in (big.reason or "")


def test_retry_after_holds_every_admission() -> None:
    s = Scheduler()
    s.rate_limit(0.0, {"retry-after": "3"})
    t = s.submit(0.0)
    d = s.poll(0.0)
    assert d.admit == () and d.wake_at == 3.0
    assert s.poll(3.0).admit == (t,)


def test_max_hold_caps_a_huge_retry_after() -> None:
    s = Scheduler(max_hold=10)
    s.overloaded(0.0, retry_after=86_400)
    t = s.submit(0.0)
    assert s.poll(0.0).wake_at == 10.0
    assert s.poll(10.0).admit == (t,)


def test_unused_output_reservation_is_given_back() -> None:
    s = Scheduler()
    s.rate_limit(
        0.0,
        {
            "x-ratelimit-limit-tokens": "1000",
            "x-ratelimit-remaining-tokens": "1000",
            "x-ratelimit-reset-tokens": "60s",
        },
    )
    a = s.submit(0.0, cost=Cost(100, 800))
    assert s.poll(0.0).admit == (a,)
    b = s.submit(0.0, cost=Cost(100, 700))
    assert s.poll(0.0).admit == ()  # 100 left
    s.finished(a, 0.0, input_tokens=100, output_tokens=20)  # 780 back: 880
    assert s.poll(0.0).admit == (b,)


def test_a_reading_discounts_admissions_the_server_had_not_seen() -> None:
    s = Scheduler()
    s.rate_limit(0.0, {"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "10"})
    a = s.submit(0.0)
    s.poll(0.0)
    later = [s.submit(0.0) for _ in range(3)]
    assert len(s.poll(0.0).admit) == 3
    # the answer to `a` reports 9 left: the three admitted after it are not counted yet
    s.rate_limit(0.0, {"x-ratelimit-limit-requests": "10", "x-ratelimit-remaining-requests": "9"}, ticket=a)
    assert s.stats().buckets["requests"][0] == pytest.approx(6.0)
    assert later


@settings(max_examples=40, deadline=None)
@given(
    st.integers(5, 50),
    st.floats(5.0, 120.0),
    st.lists(st.tuples(st.integers(1, 400), st.integers(0, 400), st.floats(0, 2.0)), min_size=1, max_size=80),
)
def test_no_rate_bucket_is_ever_overdrawn(
    limit_k: int, period: float, jobs: list[tuple[int, int, float]]
) -> None:
    """Whatever the arrivals, admitted tokens over any interval stay within what a
    bucket of that capacity and rate allows (the burst plus the refill)."""
    limit = limit_k * 100
    s = Scheduler()
    s.rate_limit(
        0.0,
        {
            "x-ratelimit-limit-tokens": str(limit),
            "x-ratelimit-remaining-tokens": str(limit),
            "x-ratelimit-limit-requests": "30",
            "x-ratelimit-remaining-requests": "30",
            "x-ratelimit-reset-requests": "0s",
        },
    )
    rate = limit / 60.0
    sim = Sim(s)
    for inp, out, gap in jobs:
        sim.submit("default", "", Cost(inp, out), 0.5)
        sim.advance(gap)
        assert all(b[0] >= -1e-6 for b in s.stats().buckets.values())
    sim.advance(10_000)
    events = [(a.at, a.ticket.cost.tokens) for a in sim.admissions]
    for i, (t0, _) in enumerate(events):
        used = 0
        for t1, c in events[i:]:
            used += c
            assert used <= limit + rate * (t1 - t0) + 1e-6
    assert period  # the period only varies the arrival pattern's scale


# ---- adaptive concurrency -------------------------------------------------------------


def test_one_burst_of_overloads_is_one_decrease_and_the_window_recovers() -> None:
    s = Scheduler(slots=8)
    ts = [s.submit(0.0) for _ in range(8)]
    assert len(s.poll(0.0).admit) == 8
    for t in ts:  # every request of the burst answers 529
        s.overloaded(1.0, ticket=t)
        s.requeue(t, 1.0)
    assert s.window == 4.0 and s.stats().decreases == 1
    now = 1.0
    for _ in range(200):
        d = s.poll(now)
        assert s.running <= math.floor(s.window or 8)
        for t in d.admit:
            s.finished(t, now)
            s.submit(now)
        now += 0.1
    assert s.window == 8.0


def test_ttft_far_above_the_tiers_target_backs_off() -> None:
    s = Scheduler(slots=4, tiers=[Tier("chat", 0, ttft_target=1.0)])
    ts = [s.submit(0.0) for _ in range(4)]
    s.poll(0.0)
    s.first_token(ts[0], 0.5)
    assert s.window is None
    s.first_token(ts[1], 10.0)  # 10 s against a 1 s target
    assert s.window == 2.0


def test_a_long_prompt_may_take_longer_to_its_first_token() -> None:
    s = Scheduler(slots=4, tiers=[Tier("chat", 0, ttft_target=1.0)])
    long = s.submit(0.0, cost=Cost(80_000, 100))  # about ten times the prefill of a short one
    s.poll(0.0)
    s.first_token(long, 10.0)
    assert s.window is None


def test_aimd_can_be_disabled() -> None:
    s = Scheduler(slots=4, aimd=AIMD(enabled=False))
    t = s.submit(0.0)
    s.poll(0.0)
    s.overloaded(0.0, ticket=t)
    assert s.window is None and s.capacity() == 4


# ---- preemption -----------------------------------------------------------------------


def test_preemption_picks_the_newest_stream_of_the_lowest_tier() -> None:
    tiers = [
        Tier("interactive", 0),
        Tier("default", 1, preemptible=True),
        Tier("batch", 2, preemptible=True),
    ]
    s = Scheduler(tiers, slots=3, min_run=0)
    old_batch = s.submit(0.0, tier="batch")
    s.poll(0.0)
    new_batch = s.submit(1.0, tier="batch")
    s.poll(1.0)
    default = s.submit(2.0, tier="default")
    s.poll(2.0)
    urgent = s.submit(3.0, tier="interactive")
    d = s.poll(3.0)
    assert d.preempt == (new_batch,) and d.admit == ()
    assert new_batch.state is TicketState.PREEMPTING
    assert s.poll(3.0).preempt == ()  # already covered by the pause under way
    s.paused(new_batch, 3.5)
    assert s.poll(3.5).admit == (urgent,)
    assert new_batch.preemptions == 1 and old_batch.state is TicketState.RUNNING
    s.resume(new_batch, 3.5)
    s.finished(default, 4.0)
    d = s.poll(4.0)
    assert d.admit == (new_batch,) and new_batch.resumed


def test_a_decoding_stream_is_preempted_before_one_still_in_its_prefill() -> None:
    """Closing a stream in its prefill frees its slot no sooner (the engine runs the
    prefill to its end) and wastes it: the decoding one goes, though older."""
    s = Scheduler(slots=2, min_run=0)
    older = s.submit(0.0, tier="batch")
    s.poll(0.0)
    s.first_token(older, 1.0)
    newer = s.submit(2.0, tier="batch")
    s.poll(2.0)  # admitted, prefilling: no token yet
    s.submit(3.0, tier="interactive")
    assert s.poll(3.0).preempt == (older,)
    s.first_token(newer, 3.5)
    s.submit(3.5, tier="interactive")
    assert s.poll(3.5).preempt == (newer,)  # now both decode: the newest


def test_preemption_needs_a_worse_tier_min_run_and_the_tiers_consent() -> None:
    s = Scheduler(slots=2, min_run=2.0)  # default tiers: only batch is preemptible
    d1 = s.submit(0.0, tier="default")
    b1 = s.submit(0.0, tier="batch")
    s.poll(0.0)
    s.submit(1.0, tier="interactive")
    d = s.poll(1.0)
    assert d.preempt == () and d.wake_at == 2.0  # b1 has run 1 s of its 2
    assert s.poll(2.0).preempt == (b1,)
    assert d1.state is TicketState.RUNNING
    # a batch request never preempts a batch stream
    s2 = Scheduler(slots=1, min_run=0)
    s2.submit(0.0, tier="batch")
    s2.poll(0.0)
    s2.submit(1.0, tier="batch")
    assert s2.poll(1.0).preempt == ()
    # the host can refuse pauses for a request it cannot resume
    s3 = Scheduler(slots=1, min_run=0)
    s3.submit(0.0, tier="batch", preemptible=False)
    s3.poll(0.0)
    s3.submit(1.0, tier="interactive")
    assert s3.poll(1.0).preempt == ()


def test_one_victim_per_waiting_request() -> None:
    s = Scheduler(slots=4, min_run=0)
    for _ in range(4):
        s.submit(0.0, tier="batch")
    s.poll(0.0)
    s.submit(1.0, tier="interactive")
    s.submit(1.0, tier="default")
    d = s.poll(1.0)
    assert len(d.preempt) == 2
    assert len(s.poll(1.0).preempt) == 0


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(TIER_NAMES), st.floats(0.1, 3.0), st.floats(0, 1.0)), max_size=50),
    st.integers(1, 3),
)
def test_preemption_victims_match_the_rule(jobs: list[tuple[str, float, float]], slots: int) -> None:
    sim = Sim(Scheduler(slots=slots, aging=None, min_run=0.0))
    for tier, duration, gap in jobs:
        sim.submit(tier, "", None, duration)
        sim.advance(gap)
    sim.advance(1000)
    assert not sim.waiting and not sim.running
    for _at, victims, running in sim.preemptions:
        # the worst tier first, the newest admitted first
        pre = sorted(((r.tier.rank, seq), r) for r, seq in running if r.tier.preemptible)
        assert list(victims) == [r for _, r in pre[::-1][: len(victims)]]


def test_full_queue_rejects() -> None:
    s = Scheduler(slots=1, max_queue=2)
    s.submit(0.0)
    s.submit(0.0)
    third = s.submit(0.0)
    d = s.poll(0.0)
    assert d.reject == (third,) and third.reason == "the queue is full"


def test_rejections_of_a_full_queue_leave_the_counts_true() -> None:
    """A rejected submission was never counted: it must not be uncounted either (it
    drove the waiting count negative, so ``max_queue`` bounded nothing)."""
    s = Scheduler(slots=1, max_queue=2, min_run=0)
    s.submit(0.0, tier="batch")
    s.poll(0.0)
    for _ in range(100):
        s.submit(0.0, tier="batch")
        s.check()
    assert s.waiting == 2 and all(n >= 0 for n in s.stats().waiting.values())
    assert s.poll(0.0).reject and s.waiting == 2
    urgent = s.submit(1.0, tier="interactive")  # pushes out a batch request, then preempts
    d = s.poll(1.0)
    assert len(d.preempt) == 1 and s.waiting == 2
    s.paused(d.preempt[0], 1.0)
    assert s.poll(1.0).admit == (urgent,)
    s.check()


def test_a_full_queue_pushes_out_the_worst_tier_first() -> None:
    s = Scheduler(slots=1, max_queue=3, aging=None)
    s.submit(0.0)
    s.poll(0.0)
    batch = [s.submit(0.0, tier="batch") for _ in range(3)]
    urgent = s.submit(1.0, tier="interactive")
    assert urgent.state is TicketState.WAITING
    assert batch[2].state is TicketState.REJECTED and "queue is full" in (batch[2].reason or "")
    d = s.poll(1.0)
    assert d.reject == (batch[2],)
    # nothing worse waits than a batch request: another batch request is refused itself
    late = s.submit(2.0, tier="batch")
    assert late.state is TicketState.REJECTED and batch[1].state is TicketState.WAITING
    s.check()


def test_a_full_queue_is_shared_between_the_tenants_of_a_tier() -> None:
    s = Scheduler(slots=1, max_queue=4, aging=None)
    s.submit(0.0)
    s.poll(0.0)
    hog = [s.submit(0.0, tier="batch", tenant="hog") for _ in range(4)]
    mine = s.submit(0.0, tier="batch", tenant="small")
    assert mine.state is TicketState.WAITING and hog[3].state is TicketState.REJECTED
    second = s.submit(0.0, tier="batch", tenant="small")
    assert second.state is TicketState.WAITING and hog[2].state is TicketState.REJECTED
    third = s.submit(0.0, tier="batch", tenant="small")  # 2 against 2: no longer pushes out
    assert third.state is TicketState.REJECTED
    s.check()


_EVENTS = st.lists(
    st.tuples(
        st.sampled_from(
            ["submit", "submit", "submit", "poll", "finish", "cancel", "pause", "requeue", "tick"]
        ),
        st.integers(0, 4),
        st.integers(0, 2),
        st.integers(0, 50),
    ),
    max_size=120,
)
# five levels: a request ages through several, and a turn is traded between levels
FIVE_TIERS = (Tier("now", -2), Tier("soon", -1), Tier("normal", 0), Tier("later", 1), Tier("bulk", 2))


@settings(max_examples=300, deadline=None)
@given(
    _EVENTS,
    st.integers(1, 3),
    st.sampled_from([None, 0, 1, 3]),
    st.sampled_from([None, 1.0, 4.0]),
    st.sampled_from([DEFAULT_TIERS, FIVE_TIERS]),
    st.sampled_from([0, 1024]),
)
def test_the_counts_hold_after_every_event(
    events: list[tuple[str, int, int, int]],
    slots: int,
    max_queue: int | None,
    aging: float | None,
    tiers: tuple[Tier, ...],
    slack: int,
) -> None:
    """Random submit/reject/cancel/admit/pause/resume/requeue/finish sequences over
    several tenants and tiers, with aging (turns earned and traded): after every event
    the counts agree with the lanes, no gauge is negative, the queue holds at most
    ``max_queue`` and at most ``slots`` hold a slot. ``slack`` 0 compacts the lanes at
    every stale entry, wherever in a step that happens."""
    s = Scheduler(tiers, slots=slots, max_queue=max_queue, aging=aging, min_run=0, tenant_weights={"t0": 3.0})
    s._slack = slack
    names = [t.name for t in tiers]
    now = 0.0
    tickets = []
    for kind, tier, tenant, pick in events:
        if kind == "submit":
            tickets.append(
                s.submit(now, tier=names[tier % len(names)], tenant=f"t{tenant}", cost=Cost(10, pick))
            )
        elif kind == "tick":
            now += pick / 10
        elif kind == "poll":
            d = s.poll(now)
            for v in d.preempt:  # the host complies: pauses, then comes back
                s.paused(v, now)
                s.resume(v, now)
        elif tickets:
            t = tickets[pick % len(tickets)]
            if kind == "finish":
                s.finished(t, now)
            elif kind == "cancel":
                s.cancel(t, now)
            elif kind == "pause":
                s.paused(t, now)
                s.resume(t, now)
            elif kind == "requeue":
                s.requeue(t, now)
        s.check()
        for t in tickets:  # no request is older than its own wait (turns trade waits, never add)
            if aging is not None and t.state is TicketState.WAITING and t.first_admitted_at is None:
                risen = s._queues[t.tier.name].level - t.level
                assert risen <= (now - t.submitted_at) / aging + 1e-9, (t, risen, now)
        stats = s.stats()
        assert all(n >= 0 for n in (*stats.waiting.values(), *stats.running.values()))
        assert s.running <= slots
        assert s.waiting == sum(stats.waiting.values())


def test_time_never_runs_backwards_and_must_be_finite() -> None:
    s = Scheduler()
    t = s.submit(10.0)
    s.poll(5.0)  # an earlier time is read as 10.0
    assert t.admitted_at == 10.0
    with pytest.raises(ValueError):
        s.poll(math.nan)


def test_cancelled_requests_do_not_pile_up_behind_a_waiting_head() -> None:
    s = Scheduler(slots=1)
    s.submit(0.0)
    s.poll(0.0)
    s.submit(0.0, tenant="a")  # a live head that waits
    for _ in range(50_000):
        t = s.submit(0.0, tenant="a")
        s.cancel(t, 0.0)
    entries = sum(len(dq) for q in s._ordered for dq in q.tenants.values())
    assert s.waiting == 1 and entries < 3000 and len(s._aging_heap) < 3000


def test_an_interactive_request_that_waited_longer_goes_before_an_aged_batch_one() -> None:
    """Aging stops below the best tier."""
    s = Scheduler(slots=1, aging=10.0, min_run=1000)
    first = s.submit(0.0, tier="default")
    s.poll(0.0)
    urgent = s.submit(1.0, tier="interactive")
    bulk = s.submit(5.0, tier="batch")
    s.finished(first, 40.0)
    assert s.poll(40.0).admit == (urgent,)
    assert bulk.state is TicketState.WAITING


def test_a_refused_request_is_charged_once() -> None:
    s = Scheduler()
    s.rate_limit(0.0, {"x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "3"})
    a = s.submit(0.0)
    assert s.poll(0.0).admit == (a,)
    s.requeue(a, 0.0)  # a 429 without headers: the server did not count it
    assert s.stats().buckets["requests"][0] == pytest.approx(3.0)
    assert s.poll(0.0).admit == (a,)
    b = s.submit(0.0)
    assert s.poll(0.0).admit == (b,)
    # a 429 with a reading: the reading says what the server counted, nothing is given back
    s.rate_limit(0.0, {"x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0"}, ticket=b)
    s.requeue(b, 0.0)
    assert s.stats().buckets["requests"][0] == pytest.approx(0.0)
