"""The fleet's shared state, script by script, against a real Valkey/Redis server: the
leases' count never passes the slots, free leases go to the best want (level, then the
age of its oldest request), a want is told to the holders, a handoff moves a lease to
the wanter, a replica that stops beating loses its leases, a re-join writes the true
count; and the shared quota lets exactly its allowance through however many take at
once."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
import redis

from sdk.scheduler import Call
from sdk.scheduler._fleet import Script
from sdk.server._fleet import FleetLink
from sdk.server._quota import SharedQuotas

SLOTS, TTL = 2, 5.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fleet(redis_url: str) -> Iterator[str]:
    name = "t" + secrets.token_hex(4)
    yield name
    r = redis.Redis.from_url(redis_url)
    for key in r.scan_iter(match=f"seam:fleet:{{{name}}}:*"):
        r.delete(key)
    r.close()


def link(url: str, fleet: str, replica: str) -> FleetLink:
    return FleetLink(url, fleet=fleet, replica=replica, timeout=2.0)


def held(url: str, fleet: str) -> dict[str, int]:
    r = redis.Redis.from_url(url)
    try:
        got = r.hgetall(f"seam:fleet:{{{fleet}}}:held")
        return {k.decode(): int(v) for k, v in got.items() if int(v)}  # replicas holding leases
    finally:
        r.close()


async def run(
    lk: FleetLink,
    name: Script,
    held: int,
    *args: int,
    ttl: float = TTL,
    worst: int = -1,
    depth: tuple[int, ...] = (),
    now: float | None = None,
    waited: float = 0.0,
) -> Any:
    """One script for ``lk``'s replica, which holds ``held`` leases, runs a preemptible
    stream of level ``worst`` at worst, has ``depth`` requests waiting per level and the
    oldest request of its want waiting ``waited`` seconds; at ``now`` (seconds) instead
    of the server's clock where given."""
    call = Call(name, held, args, worst=worst, depth=depth, waited=waited)
    if now is None:
        return await lk.script(call, SLOTS, ttl)
    return await anyio.to_thread.run_sync(lambda: lk.script_now(call, SLOTS, ttl, now=now))


async def inbox(lk: FleetLink) -> list[str]:
    lk.listen_timeout = 0.05
    return await lk.inbox()


@pytest.mark.anyio
async def test_leases_never_pass_the_slots_and_a_want_is_told_to_the_holders(
    redis_url: str, fleet: str
) -> None:
    a, b = link(redis_url, fleet, "a"), link(redis_url, fleet, "b")
    assert await run(a, "acquire", 0, 2) == 1
    assert await run(a, "acquire", 0, 2) == 1
    assert await run(b, "acquire", 0, 0) == 0  # both taken
    assert held(redis_url, fleet) == {"a": 2}
    assert await inbox(a) == ["want:0"]
    assert await run(b, "acquire", 0, 0) == 0
    assert await inbox(a) == []  # told once per level
    # the holder's ghost of level 0 was admitted: its lease goes to b
    assert await run(a, "handoff", 0, 0) == 1
    assert await inbox(b) == ["grant"]
    assert held(redis_url, fleet) == {"a": 1, "b": 1}
    # nobody wants now: a ghost admitted late hands nothing off
    assert await run(a, "handoff", 0, 2) == 0
    assert held(redis_url, fleet) == {"a": 1, "b": 1}


@pytest.mark.anyio
async def test_a_want_is_told_to_the_one_holder_most_likely_to_free_a_slot(
    redis_url: str, fleet: str
) -> None:
    a, b, c = (link(redis_url, fleet, x) for x in "abc")
    assert await run(a, "acquire", 0, 2, worst=2) == 1  # a runs a batch stream
    assert await run(c, "acquire", 0, 0, worst=-1) == 1  # c an interactive one
    assert await run(b, "acquire", 0, 0) == 0
    assert await inbox(a) == ["want:0"]  # a's batch stream can be paused for it
    assert await inbox(c) == []
    # a want at batch's level: nobody runs worse, so the holder of the most leases
    await run(c, "acquire", 1, 0)  # c wants another (recorded, not granted)
    assert await run(c, "release", 1, 1, -1) == 0  # c gives one up, clears its want
    assert await inbox(b) == ["grant"]  # b's interactive want gets it
    d = link(redis_url, fleet, "d")
    await run(a, "beat", 1, 1, -1, 0, worst=2)
    assert await run(d, "acquire", 0, 2) == 0
    msgs = await inbox(a) + await inbox(b) + await inbox(c)
    assert msgs.count("want:2") == 1


@pytest.mark.anyio
async def test_a_ghost_of_a_worse_level_does_not_take_a_lease_for_a_better_want(
    redis_url: str, fleet: str
) -> None:
    a, b = link(redis_url, fleet, "a"), link(redis_url, fleet, "b")
    for _ in range(SLOTS):
        assert await run(a, "acquire", 0, 0) == 1
    assert await run(b, "acquire", 0, 2) == 0  # b's batch want
    # a ghost of level 1 (its want gone since) keeps its lease from a level-2 want
    assert await run(a, "handoff", 0, 1) == 0
    assert held(redis_url, fleet) == {"a": SLOTS}
    # one of level 2 gives it
    assert await run(a, "handoff", 0, 2) == 1
    assert held(redis_url, fleet) == {"a": SLOTS - 1, "b": 1}


@pytest.mark.anyio
async def test_free_leases_go_to_the_best_level_then_the_oldest_want(redis_url: str, fleet: str) -> None:
    a, b, c, d = (link(redis_url, fleet, x) for x in "abcd")
    for _ in range(SLOTS):
        assert await run(a, "acquire", 0, 2) == 1
    assert await run(b, "acquire", 0, 2) == 0  # batch, first
    assert await run(c, "acquire", 0, 1) == 0  # default
    assert await run(d, "acquire", 0, 2) == 0  # batch, later
    # a gives one back (it has nothing waiting): the default want gets it
    assert await run(a, "release", 0, 1, -1) == 0
    assert await inbox(c) == ["grant"]
    # then the older batch want
    assert await run(a, "release", 0, 1, -1) == 0
    assert await inbox(b) == ["grant"]
    assert await inbox(d) == []
    assert held(redis_url, fleet) == {"b": 1, "c": 1}
    # a new want of a better level goes before d's even though d waited longer
    assert await run(a, "acquire", 0, 0) == 0
    assert await run(c, "release", 0, 1, -1) == 0
    assert (await inbox(a))[-1] == "grant"  # after what it was told as a holder
    assert await inbox(d) == []


@pytest.mark.anyio
async def test_at_one_level_the_longest_wait_goes_first_whenever_its_replica_asked(
    redis_url: str, fleet: str
) -> None:
    a, b, c = (link(redis_url, fleet, x) for x in "abc")
    for _ in range(SLOTS):
        assert await run(a, "acquire", 0, 0, now=100.0) == 1
    assert await run(b, "acquire", 0, 0, now=100.0) == 0  # b asks first: a request since 100
    assert await run(c, "acquire", 0, 0, now=101.0, waited=3.0) == 0  # c's waits since 98
    # b's oldest was admitted meanwhile (by a grant not shown); its next waits since 102
    assert await run(b, "acquire", 0, 0, now=102.5, waited=0.5) == 0
    # a frees a lease: c's want is the older, though b asked first and wanted since
    assert await run(a, "release", 2, 1, -1, now=103.0) == 0
    assert await inbox(c) == ["grant"]
    assert await inbox(b) == []
    # a wants again for a request waiting since 101; its ghost for b's want (since 102)
    # is admitted: a's own want is the older, so a keeps the lease
    assert await run(a, "acquire", 1, 0, now=103.0, waited=2.0) == 0
    assert await run(a, "handoff", 1, 0, now=103.5) == 0
    assert held(redis_url, fleet) == {"a": 1, "c": 1}
    assert await inbox(b) == []


@pytest.mark.anyio
async def test_a_replica_that_stops_beating_loses_its_leases_within_the_ttl(
    redis_url: str, fleet: str
) -> None:
    a, b = link(redis_url, fleet, "a"), link(redis_url, fleet, "b")
    t = 1_000_000.0  # the scripts' clock, passed in: a loaded machine cannot expire a early
    for _ in range(SLOTS):
        assert await run(a, "acquire", 0, 2, ttl=0.3, now=t) == 1
    assert await run(b, "acquire", 0, 0, now=t + 0.1) == 0
    assert held(redis_url, fleet) == {"a": SLOTS}  # a, alive until t + 0.3, keeps them
    # a, killed, beats no more: the next script of anyone's after t + 0.3 drops a and
    # hands its leases to the wants
    r = await run(b, "beat", 0, 0, 0, 0, now=t + 0.4)
    assert int(r[0]) == 1 and int(r[2]) == 1 and int(r[3]) == 1  # granted to b; b alone
    assert held(redis_url, fleet) == {"b": 1}


@pytest.mark.anyio
async def test_a_rejoin_writes_the_true_count_and_the_slots_bound_what_follows(
    redis_url: str, fleet: str
) -> None:
    a, b = link(redis_url, fleet, "a"), link(redis_url, fleet, "b")
    ttl = 2.0  # the settling mark expires on the server's own clock, so this one is real
    # Valkey came back empty; each replica runs one request (its degraded share)
    await run(a, "beat", 1, 1, -1, 2, ttl=ttl)  # the first re-join writes the epoch: the fleet settles
    await run(b, "beat", 1, 1, -1, 2, ttl=ttl)
    assert held(redis_url, fleet) == {"a": 1, "b": 1}
    assert await run(a, "acquire", 0, 0, ttl=ttl) == 0  # nothing beyond the slots
    assert await run(b, "release", 0, 1, -1, ttl=ttl) == 0
    assert await inbox(a) == []  # settling: no lease handed out for a lease's time
    await anyio.sleep(ttl + 0.1)
    r = await run(a, "beat", 1, 1, 0, 0, ttl=ttl)  # a holds 1 by its count
    assert int(r[0]) == 1  # settled: the free lease goes to a's want
    assert held(redis_url, fleet) == {"a": 2}  # a, late, taken back with its count; b dropped
    # a re-join with the epoch in place does not settle again
    await run(b, "beat", 0, 0, -1, 2, ttl=ttl)
    assert await run(a, "release", 2, 1, -1, ttl=ttl) == 0
    assert await run(b, "acquire", 0, 1, ttl=ttl) == 1


@pytest.mark.anyio
async def test_a_new_fleet_hands_out_leases_at_once(redis_url: str, fleet: str) -> None:
    a = link(redis_url, fleet, "a")
    await run(a, "beat", 0, 0, -1, 1)  # a first join: no epoch yet, nothing to settle
    assert await run(a, "acquire", 0, 0) == 1


@pytest.mark.anyio
async def test_a_beat_answers_the_fleets_queue_depth_per_level(redis_url: str, fleet: str) -> None:
    a, b = link(redis_url, fleet, "a"), link(redis_url, fleet, "b")
    await run(a, "beat", 0, 0, -1, 1, depth=(1, 0, 5))
    r = await run(b, "beat", 0, 0, -1, 1, depth=(2, 3, 0))
    assert [int(x) for x in r[5]] == [3, 3, 5]
    await run(a, "leave", 0)
    r = await run(b, "beat", 0, 0, -1, 0, depth=(0, 1, 0))
    assert [int(x) for x in r[5]] == [0, 1, 0]  # a's counts went with it


@pytest.mark.anyio
async def test_leaving_gives_the_leases_back_at_once(redis_url: str, fleet: str) -> None:
    a, b = link(redis_url, fleet, "a"), link(redis_url, fleet, "b")
    for _ in range(SLOTS):
        assert await run(a, "acquire", 0, 2) == 1
    assert await run(b, "acquire", 0, 1) == 0
    await run(a, "leave", 0)
    assert await inbox(b) == ["grant"]
    assert held(redis_url, fleet) == {"b": 1}


def test_the_shared_quota_lets_its_allowance_through_however_many_take_at_once(
    redis_url: str, fleet: str
) -> None:
    """40 takers at once, in threads (each its own connection), of a 20 a minute quota,
    20 times over: exactly 20 pass each time."""

    def take(tenant: str, barrier: threading.Barrier, passed: list[bool]) -> None:
        q = SharedQuotas(link(redis_url, fleet, "x"))
        barrier.wait()
        v = anyio.run(lambda: q.check(tenant, 0.0, rpm=20, tpm=None, tokens=5))
        passed.append(v.ok)
        q.link.close()

    for round_ in range(20):
        passed: list[bool] = []
        barrier = threading.Barrier(40)
        args = (f"tenant-{round_}", barrier, passed)
        threads = [threading.Thread(target=take, args=args) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(passed) == [False] * 20 + [True] * 20, round_


@pytest.mark.anyio
async def test_the_shared_quota_answers_with_the_standing_and_refills(redis_url: str, fleet: str) -> None:
    q = SharedQuotas(link(redis_url, fleet, "x"))
    v = await q.check("t", 0.0, rpm=600, tpm=1000, tokens=400)
    assert v.ok and v.headers["x-ratelimit-remaining-requests"] == "599"
    assert v.headers["x-ratelimit-remaining-tokens"] == "600"
    v = await q.check("t", 0.0, rpm=600, tpm=1000, tokens=700)
    assert not v.ok and int(v.headers["retry-after"]) >= 1  # 100 tokens missing: 6 s at 1000/min
    assert 5.0 < v.retry_after < 7.0
    time.sleep(0.2)
    v = await q.check("t", 0.0, rpm=600, tpm=1000, tokens=1)
    assert v.ok and int(v.headers["x-ratelimit-remaining-tokens"]) >= 600


@pytest.mark.anyio
async def test_a_followed_mark_that_is_not_a_time_reads_as_never(redis_url: str, fleet: str) -> None:
    """The sweeper reads these marks every second: a value it did not write (a store
    shared with something else, a damaged key) must not stop it."""
    from sdk.server._shared import SharedStreams

    lk = link(redis_url, fleet, "a")
    try:
        streams = SharedStreams(lk, seconds=10)
        await streams.seen("s1")
        r = redis.Redis.from_url(redis_url)
        r.hset(f"{lk.prefix}m:s2", "seen", "not-a-time")
        r.hset(f"{lk.prefix}m:s3", "seen", "12e400")
        r.close()
        assert await streams.followed(["s1", "s2", "s3", "s4"]) == {"s1"}
    finally:
        lk.close()
