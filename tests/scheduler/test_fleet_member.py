"""A scheduler's fleet membership, event by event with a simulated clock: the calls it
makes to the shared state and what it does with the answers (the answers here are what
the shared state's scripts return; tests/server/test_fleet_state.py runs those scripts
on a real server)."""

from __future__ import annotations

from sdk.scheduler import GHOST_TENANT, Cost, FleetMember, Scheduler, TicketState

SLOTS = 2


def joined(slots: int = SLOTS) -> tuple[Scheduler, FleetMember]:
    sched = Scheduler(slots=slots, aging=None)
    m = FleetMember(sched, slots, ttl=30.0, degraded_share=0.5)  # a beat every 10 s
    call = m.next_call(0.0)
    assert call is not None and call.script == "beat" and call.args == (0, -1, 1)  # a first join
    m.answered(call, [0, -1, 0, 1, []], 0.0)
    assert not m.degraded and m.held == 0 and sched.share == 0
    return sched, m


def test_a_member_starts_alone_on_its_degraded_share_until_it_joins() -> None:
    sched = Scheduler(slots=4)
    m = FleetMember(sched, 4, degraded_share=0.5)
    assert m.degraded and sched.share == 2
    assert m.next_call(0.0) is not None
    assert m.next_call(0.0) is None  # one call at a time


def test_a_request_waiting_for_a_slot_asks_for_a_lease_and_runs_when_granted() -> None:
    sched, m = joined()
    t = sched.submit(1.0, tier="batch", cost=Cost(10, 100))
    assert sched.poll(1.0).admit == ()  # no lease: it waits
    call = m.next_call(1.0)
    assert call is not None and call.script == "acquire" and call.args == (2,)  # batch's level
    m.answered(call, 1, 1.0)
    assert m.held == 1 and sched.poll(1.0).admit == (t,)
    assert m.next_call(1.0) is None  # nothing more waits
    # it ends; nothing local waits: the lease goes back at once
    sched.finished(t, 2.0)
    call = m.next_call(2.0)
    assert call is not None and call.script == "release" and call.args == (1, -1) and call.held == 1
    assert m.held == 0 and sched.share == 0  # taken from the scheduler before the answer
    m.answered(call, 0, 2.0)
    assert m.held == 0


def test_a_want_is_recorded_again_with_its_age_when_its_oldest_request_is_admitted() -> None:
    sched, m = joined()
    first = sched.submit(1.0, tier="interactive")
    second = sched.submit(2.0, tier="interactive")
    sched.poll(3.0)
    call = m.next_call(3.0)
    assert call is not None and call.script == "acquire" and call.args == (0,)
    assert (call.since, call.waited) == (1.0, 2.0)  # the oldest's wait at its level
    m.answered(call, 0, 3.0)
    assert m.next_call(3.5) is None  # the same want, the same age: not asked again
    m.message("want:0", 3.6)  # (no lease held: no ghost, so nothing else changes)
    m.message("grant", 4.0)
    assert sched.poll(4.0).admit == (first,)
    call = m.next_call(4.0)  # still wanting at level 0, for a younger request
    assert call is not None and call.script == "acquire" and (call.since, call.waited) == (2.0, 2.0)
    m.answered(call, 0, 4.0)
    # a ghost (another member's want) at the level does not make the member's want older
    m.message("want:0", 4.5)
    assert any(g.tenant == GHOST_TENANT for g in sched.waiting_at(0))
    assert m.next_call(4.6) is None
    assert second.state is TicketState.WAITING


def test_a_grant_ends_the_recorded_want_so_a_request_still_waiting_asks_again() -> None:
    """The shared state drops a member's want when it grants it a lease; the member
    must record it again for what still waits, not wait for its next beat."""
    sched, m = joined()
    for at in (1.0, 2.0):
        sched.submit(at, tier="interactive")
    sched.poll(2.0)
    call = m.next_call(2.0)
    assert call is not None and call.script == "acquire"
    m.answered(call, 0, 2.0)
    assert m.next_call(2.1) is None
    m.message("grant", 3.0)
    sched.poll(3.0)  # the oldest runs; the other still waits
    call = m.next_call(3.0)
    assert call is not None and call.script == "acquire" and call.since == 2.0
    # a beat that is granted a lease ends the want the same way
    m.answered(call, 0, 3.0)
    beat = m.next_call(10.0)
    assert beat is not None and beat.script == "beat"
    m.answered(beat, [1, -1, 2, 1, []], 10.0)
    assert m.next_call(10.0) is None  # the lease took the last request: nothing to ask


def test_a_tenant_named_like_the_ghosts_is_still_the_members_own() -> None:
    sched, m = joined()
    t = sched.submit(1.0, tier="interactive", tenant=GHOST_TENANT)
    sched.poll(2.0)
    call = m.next_call(2.0)
    assert call is not None and call.script == "acquire" and (call.since, call.waited) == (1.0, 1.0)
    assert t.state is TicketState.WAITING


def test_an_aged_request_wants_with_its_age_at_the_level_it_rose_to() -> None:
    sched = Scheduler(slots=SLOTS, aging=10.0)
    m = FleetMember(sched, SLOTS, ttl=30.0)
    call = m.next_call(0.0)
    assert call is not None
    m.answered(call, [0, -1, 0, 1, []], 0.0)
    t = sched.submit(1.0, tier="batch")
    sched.poll(12.0)  # waited 11 s: one level up (batch -> default) at 11.0
    assert t.level == 1 and t.level_since == 11.0
    call = m.next_call(12.0)
    assert call is not None and call.args == (1,) and (call.since, call.waited) == (11.0, 1.0)


def test_a_refused_want_is_asked_once_and_waits_for_a_grant() -> None:
    sched, m = joined()
    t = sched.submit(1.0, tier="interactive")
    sched.poll(1.0)
    call = m.next_call(1.0)
    assert call is not None and call.script == "acquire" and call.args == (0,)
    m.answered(call, 0, 1.0)
    assert m.next_call(1.1) is None  # recorded: no second ask for the same level
    m.message("grant", 1.2)
    assert m.held == 1 and m.grants == 1 and sched.poll(1.2).admit == (t,)


def test_another_members_want_preempts_a_worse_stream_through_a_ghost() -> None:
    sched, m = joined()
    b = [sched.submit(1.0, tier="batch") for _ in range(2)]
    for _ in range(2):
        call = m.next_call(1.0)
        assert call is not None and call.script == "acquire"
        m.answered(call, 1, 1.0)
        sched.poll(1.0)
    assert [t.state for t in b] == [TicketState.RUNNING] * 2
    m.message("want:0", 2.0)  # an interactive request waits at another member
    d = sched.poll(2.0)
    assert len(d.preempt) == 1 and d.preempt[0] in b  # the ghost's victim
    sched.paused(d.preempt[0], 2.1)
    d = sched.poll(2.1)
    assert len(d.admit) == 1 and d.admit[0].tenant == GHOST_TENANT
    m.observe(d)
    call = m.next_call(2.1)
    assert call is not None and call.script == "handoff" and call.args == (0,)
    m.answered(call, 1, 2.1)
    assert m.held == 1 and m.handoffs == 1 and sched.share == 1
    assert sched.running == 1  # the ghost ended; the other batch stream runs on
    paused = next(t for t in b if t.state is TicketState.PAUSED)
    sched.resume(paused, 2.2)
    assert sched.poll(2.2).admit == ()  # the paused one waits for a lease again


def test_a_ghost_no_want_justifies_is_dropped_at_the_beat() -> None:
    sched, m = joined()
    sched.submit(1.0, tier="default")
    call = m.next_call(1.0)
    assert call is not None
    m.answered(call, 1, 1.0)
    sched.poll(1.0)
    m.message("want:1", 1.5)  # same level: the ghost waits its turn, nothing preempted
    assert sched.poll(1.5).preempt == ()
    assert sched.waiting == 1
    call = m.next_call(10.0)  # the beat: nobody else wants any more
    assert call is not None and call.script == "beat"
    m.answered(call, [0, -1, 1, 2, []], 10.0)
    assert sched.waiting == 0


def test_a_failed_call_degrades_to_the_share_and_preempts_the_excess_then_rejoins() -> None:
    sched, m = joined(slots=4)
    ts = [sched.submit(1.0, tier="batch") for _ in range(4)]
    for _ in range(4):
        call = m.next_call(1.0)
        assert call is not None
        m.answered(call, 1, 1.0)
        sched.poll(1.0)
    assert sched.running == 4
    call = m.next_call(10.0)
    assert call is not None and call.script == "beat"
    assert m.failed(10.0, call) is True
    assert m.degraded and m.held == 2 and sched.share == 2
    d = sched.poll(10.0)
    assert len(d.preempt) == 2 and m.running() == 2  # the excess is on its way out
    m.message("grant", 10.1)  # void while degraded
    assert m.held == 2
    assert m.next_call(10.5) is None  # the next try after a second
    for t in d.preempt:
        sched.paused(t, 10.6)
    call = m.next_call(11.0)
    assert call is not None and call.script == "beat" and call.args == (2, -1, 2)  # a re-join, 2 running
    m.answered(call, [0, -1, 2, 1, []], 11.0)
    assert not m.degraded and m.held == 2 and m.degraded_time(19.0) == 1.0
    assert all(t.state in (TicketState.RUNNING, TicketState.PAUSED) for t in ts)


def test_nothing_is_admitted_while_a_join_that_reports_the_running_count_is_out() -> None:
    """The join writes the member's running count over the stored one: a request admitted
    while it is out would run on a slot the fleet does not count."""
    sched, m = joined(slots=4)
    call = m.next_call(10.0)
    assert call is not None and m.failed(10.0, call) is True
    assert sched.share == 2
    call = m.next_call(11.0)
    assert call is not None and call.script == "beat" and call.args == (0, -1, 2)
    assert sched.share == 0  # frozen at what it reported
    t = sched.submit(11.1, tier="interactive")
    assert sched.poll(11.1).admit == ()
    assert m.failed(11.5, call) is False  # still away: the degraded share again
    assert sched.share == 2 and sched.poll(11.5).admit == (t,)
    call = m.next_call(12.5)
    assert call is not None and call.args == (1, -1, 2) and sched.share == 1
    m.answered(call, [0, -1, 1, 2, []], 12.5)
    assert not m.degraded and m.held == 1 and m.running() == 1
