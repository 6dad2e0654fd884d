"""The simulated fleet (:mod:`tests.fleet.sim_fleet`): 8 replicas, 32 engines of 4
slots, two engine failures, a fixed seed; the replicas' real schedulers and fleet
members, the real scripts on a real Valkey/Redis server, a simulated clock.

Asserted: every request finishes; interactive and default requests get their first
token within a prefill and a few steps even while batch work fills the pool and engines
fail (they preempt batch streams, across replicas through ghosts); no more than one
stream is preempted per request of a better tier (a want is told to one holder, not
all); the pool stays busy; the leases never pass the pool but for the streams that
failed over when engines went down."""

from __future__ import annotations

import statistics

from tests.fleet.sim_fleet import ENGINES, SLOTS_PER_ENGINE, run


def test_a_simulated_fleet_of_8_replicas_and_32_engines(redis_url: str) -> None:
    r = run(redis_url, fleet_name="sim-test")
    print("\n" + r.table())
    assert r.finished == r.submitted
    for tier in ("interactive", "default"):
        p99 = statistics.quantiles(r.ttft[tier], n=100, method="inclusive")[98]
        assert p99 <= 0.2, (tier, p99)
    better = r.submitted["interactive"] + r.submitted["default"]
    assert 0 < r.preemptions <= better
    assert r.handoffs > 0
    assert r.utilisation >= 0.85
    assert r.max_held <= ENGINES * SLOTS_PER_ENGINE
    assert r.max_over <= 12 * SLOTS_PER_ENGINE  # at most the slots of the engines down at once
