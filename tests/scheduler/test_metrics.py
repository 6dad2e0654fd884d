"""Request metrics (vLLM's names) and their per-tier percentiles."""

from __future__ import annotations

import pytest

from sdk.scheduler import MetricsWindow, Percentiles, RequestTimer


def test_request_metrics_from_fed_times() -> None:
    t = RequestTimer(10.0, "interactive", "u1")
    t.admitted(10.5)
    assert t.arrived(11.0, 1)  # first token
    assert not t.arrived(11.2, 3)  # three events in one read
    t.arrived(11.6, 1)
    m = t.finish(12.0, ok=True)
    assert m.queue_time == pytest.approx(0.5)
    assert m.ttft == pytest.approx(1.0)
    assert m.e2el == pytest.approx(2.0)
    assert m.output_tokens == 5
    assert m.itl == pytest.approx((0.2, 0.0, 0.0, 0.4))
    assert m.tpot == pytest.approx((2.0 - 1.0) / 4)
    assert m.tokens_per_second == pytest.approx(2.5)
    assert t.finish(12.0, ok=True, output_tokens=9).output_tokens == 9  # the server's count wins


def test_a_request_without_output_has_no_ttft_or_tpot() -> None:
    m = RequestTimer(0.0, "batch", "").finish(3.0, ok=False)
    assert m.ttft is None and m.tpot is None and m.tokens_per_second is None and m.queue_time == 3.0


def test_percentiles_interpolate_like_numpy() -> None:
    p = Percentiles.of(float(x) for x in range(1, 101))
    assert p is not None
    assert p.p50 == pytest.approx(50.5) and p.p90 == pytest.approx(90.1) and p.p99 == pytest.approx(99.01)
    assert p.p95 == pytest.approx(95.05)
    assert Percentiles.of([]) is None
    one = Percentiles.of([3.0])
    assert one is not None and one.p99 == 3.0


def test_window_keeps_the_last_requests_per_tier() -> None:
    w = MetricsWindow(size=3, max_itl=4)
    for i in range(5):
        t = RequestTimer(0.0, "batch", "")
        t.arrived(float(i + 1), 1)
        t.arrived(float(i + 2), 2)
        w.add(t.finish(float(i + 3), ok=True))
    t = RequestTimer(0.0, "interactive", "")
    w.add(t.finish(1.0, ok=False))
    s = w.summary()
    assert s["batch"].requests == 3
    assert s["batch"].ttft is not None and s["batch"].ttft.p50 == 4.0  # requests 3, 4, 5
    assert s["batch"].itl is not None and s["batch"].itl.count == 4
    assert s["interactive"].errors == 1 and s["interactive"].ttft is None


def test_the_window_keeps_itl_gaps_once_and_capped() -> None:
    w = MetricsWindow(size=10, max_itl=50)
    for _ in range(10):
        t = RequestTimer(0.0, "batch", "")
        t.arrived(0.1, 1)
        for k in range(1000):
            t.arrived(0.1 + k * 0.01, 1)
        w.add(t.finish(20.0, ok=True))
    assert sum(len(m.itl) for m in w._requests["batch"]) == 0  # the requests keep no copy
    s = w.summary()["batch"]
    assert s.itl is not None and s.itl.count == 50
