"""Prometheus metrics of the scheduling server (``/metrics``), through prometheus-client.

Histograms per tier fed by each finished request's :class:`~sdk.scheduler.RequestMetrics`
(the names of vLLM's serving benchmark: TTFT, TPOT, ITL, E2EL, plus queue time), counters
of requests by outcome, preemptions, backpressure pauses and rejections, and gauges read
from the scheduler at scrape time (queue depth and running requests per tier, slots, the
adaptive window, upstream health, failovers, each upstream's requests in flight, the
streams kept for a client and what those with no client hold). Upstreams are labelled by
their index, never their URL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ..scheduler import RequestMetrics, Scheduler
from ._fleet import FleetAdmission

__all__ = ["CONTENT_TYPE", "ServerMetrics", "StreamGauges"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_LATENCY = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
_TOKEN = (0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


@dataclass(frozen=True, slots=True)
class StreamGauges:
    """The server's tables at one moment: what must come back to zero when it is idle."""

    attached: int = 0  # streams with a client attached (or waiting for them)
    detached: int = 0  # streams kept with no client, for a reattach
    held_bytes: int = 0  # what the streams with no client hold
    in_flight: tuple[int, ...] = ()  # routes open on each upstream


class _SchedulerCollector(Collector):
    def __init__(
        self,
        scheduler: Scheduler,
        health: Callable[[], Sequence[bool]],
        failovers: Callable[[], int],
        streams: Callable[[], StreamGauges],
        fleet: Callable[[], FleetAdmission | None],
    ) -> None:
        self.scheduler = scheduler
        self.health = health
        self.failovers = failovers
        self.streams = streams
        self.fleet = fleet

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        st = self.scheduler.stats()
        depth = GaugeMetricFamily("seam_queue_depth", "Requests waiting for admission", labels=["tier"])
        running = GaugeMetricFamily("seam_running", "Requests holding a slot", labels=["tier"])
        for tier, n in st.waiting.items():
            depth.add_metric([tier], n)
        for tier, n in st.running.items():
            running.add_metric([tier], n)
        yield depth
        yield running
        yield CounterMetricFamily(
            "seam_admissions", "Requests admitted to a slot (a resumed stream again)", value=st.admitted
        )
        yield GaugeMetricFamily("seam_slots", "Upstream slots (0: unknown)", value=st.slots or 0)
        yield GaugeMetricFamily(
            "seam_window", "Adaptive concurrency window (0: not limiting)", value=st.window or 0
        )
        up = GaugeMetricFamily(
            "seam_upstream_healthy", "1 if the upstream answered its health check", labels=["upstream"]
        )
        for i, ok in enumerate(self.health()):
            up.add_metric([str(i)], 1 if ok else 0)
        yield up
        yield CounterMetricFamily(
            "seam_upstream_failovers",
            "Requests moved to another upstream after theirs failed",
            value=self.failovers(),
        )
        g = self.streams()
        flying = GaugeMetricFamily(
            "seam_upstream_in_flight", "Requests routed to the upstream and not over", labels=["upstream"]
        )
        for i, n in enumerate(g.in_flight):
            flying.add_metric([str(i)], n)
        yield flying
        kept = GaugeMetricFamily(
            "seam_streams", "Streams the server keeps, by whether a client is attached", labels=["client"]
        )
        kept.add_metric(["attached"], g.attached)
        kept.add_metric(["gone"], g.detached)
        yield kept
        yield GaugeMetricFamily(
            "seam_stream_held_bytes",
            "What the streams with no client attached hold (bounded by replay_total_bytes)",
            value=g.held_bytes,
        )
        f = self.fleet()
        if f is not None:
            yield from _fleet_metrics(f, [t.name for t in self.scheduler.tiers])


def _fleet_metrics(
    f: FleetAdmission, tiers: Sequence[str]
) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
    """The replica's share of the fleet, and the fleet's totals as of its last beat."""
    m = f.member
    yield GaugeMetricFamily(
        "seam_fleet_degraded",
        "1 while the shared state does not answer (admitting alone)",
        value=int(m.degraded),
    )
    yield CounterMetricFamily(
        "seam_fleet_degraded_seconds",
        "Time spent admitting alone, the shared state away",
        value=f.degraded_time(),
    )
    yield GaugeMetricFamily("seam_fleet_leases", "Engine slots this replica holds", value=m.held)
    yield GaugeMetricFamily(
        "seam_fleet_running",
        "This replica's requests running (not being paused): at most its leases,"
        " except, while it runs alone, streams that could not be paused when its share shrank",
        value=m.running(),
    )
    yield GaugeMetricFamily(
        "seam_fleet_leases_total", "Engine slots the fleet's replicas hold", value=m.standing.held
    )
    yield GaugeMetricFamily("seam_fleet_replicas", "Replicas alive in the fleet", value=m.standing.members)
    wants = GaugeMetricFamily(
        "seam_fleet_waiting_replicas",
        "Replicas whose best waiting request waits for a slot, by its tier",
        labels=["tier"],
    )
    depth = GaugeMetricFamily(
        "seam_fleet_queue_depth",
        "Requests waiting for admission at all replicas, by tier (aged ones at the tier they rose to)",
        labels=["tier"],
    )
    for level, name in enumerate(tiers):
        wants.add_metric([name], m.standing.wants.get(level, 0))
        depth.add_metric([name], m.standing.waiting[level] if level < len(m.standing.waiting) else 0)
    yield wants
    yield depth
    trips = CounterMetricFamily(
        "seam_fleet_round_trips",
        "Calls to the shared state by purpose: admission (lease scripts, inbox messages), quota, "
        "stream (storing, reading)",
        labels=["kind"],
    )
    for kind, n in f.link.round_trips.items():
        trips.add_metric([kind], n)
    yield trips
    yield CounterMetricFamily(
        "seam_fleet_handoffs", "Slots given to another replica's request", value=m.handoffs
    )
    yield CounterMetricFamily("seam_fleet_grants", "Slots received from another replica", value=m.grants)


class ServerMetrics:
    def __init__(
        self,
        scheduler: Scheduler,
        health: Callable[[], Sequence[bool]],
        failovers: Callable[[], int] = lambda: 0,
        streams: Callable[[], StreamGauges] = StreamGauges,
        fleet: Callable[[], FleetAdmission | None] = lambda: None,
    ) -> None:
        r = self.registry = CollectorRegistry()
        self.ttft = Histogram(
            "seam_ttft_seconds", "Time to first token", ["tier"], buckets=_LATENCY, registry=r
        )
        self.tpot = Histogram(
            "seam_tpot_seconds", "Time per output token", ["tier"], buckets=_TOKEN, registry=r
        )
        self.itl = Histogram("seam_itl_seconds", "Inter-token latency", ["tier"], buckets=_TOKEN, registry=r)
        self.e2el = Histogram(
            "seam_e2el_seconds", "End-to-end latency", ["tier"], buckets=_LATENCY, registry=r
        )
        self.queue = Histogram(
            "seam_queue_seconds", "Time waiting for admission", ["tier"], buckets=_LATENCY, registry=r
        )
        self.requests = Counter("seam_requests", "Finished requests", ["tier", "outcome"], registry=r)
        self.preemptions = Counter(
            "seam_preemptions", "Streams paused for a higher tier", ["tier"], registry=r
        )
        self.pauses = Counter(
            "seam_backpressure_pauses",
            "Upstreams paused for a client that stopped reading",
            ["tier"],
            registry=r,
        )
        self.rejected = Counter("seam_rejected", "Requests refused before admission", ["reason"], registry=r)
        self.deleted = Counter(
            "seam_streams_deleted", "Kept streams ended by their client (DELETE /v1/streams/<id>)", registry=r
        )
        self.reattached = Counter(
            "seam_reattached", "Streams continued after a dropped connection", registry=r
        )
        r.register(_SchedulerCollector(scheduler, health, failovers, streams, fleet))

    def observe(self, m: RequestMetrics) -> None:
        t = m.tier
        self.requests.labels(t, "ok" if m.ok else "error").inc()
        self.queue.labels(t).observe(m.queue_time)
        self.e2el.labels(t).observe(m.e2el)
        if m.ttft is not None:
            self.ttft.labels(t).observe(m.ttft)
        tpot = m.tpot
        if tpot is not None:
            self.tpot.labels(t).observe(tpot)
        itl = self.itl.labels(t)
        for gap in m.itl:
            itl.observe(gap)
        if m.preemptions:
            self.preemptions.labels(t).inc(m.preemptions)
        if m.pauses > m.preemptions:
            self.pauses.labels(t).inc(m.pauses - m.preemptions)

    def render(self) -> bytes:
        return generate_latest(self.registry)
