"""Request metrics with the names vLLM's serving benchmark uses, and their percentiles.

Per request (:class:`RequestTimer` is fed times by the host, so it reads no clock):

- ``queue_time``: submission to (first) admission;
- ``ttft``: submission to the first output event (what the caller waits, queue included);
- ``itl``: each gap between output arrivals (events that arrive in one network read
  have a gap of 0 after the first);
- ``e2el``: submission to the end;
- ``tpot``: ``(e2el - ttft) / (output_tokens - 1)``, the time per output token after
  the first;
- ``tokens_per_second``: output tokens over ``e2el``.

:class:`MetricsWindow` keeps the last ``size`` requests per tier (their ITL gaps capped
at ``max_itl`` per tier) and reports p50/p90/p95/p99 of each metric with linear
interpolation between ranks (numpy's default, which the benchmark uses).
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

__all__ = ["MetricsHook", "MetricsWindow", "Percentiles", "RequestMetrics", "RequestTimer", "TierMetrics"]


@dataclass(frozen=True, slots=True)
class RequestMetrics:
    tier: str
    tenant: str
    ok: bool
    queue_time: float
    ttft: float | None
    e2el: float
    output_tokens: int
    itl: tuple[float, ...]
    preemptions: int = 0
    pauses: int = 0

    @property
    def tpot(self) -> float | None:
        if self.ttft is None or self.output_tokens < 2:
            return None
        return (self.e2el - self.ttft) / (self.output_tokens - 1)

    @property
    def tokens_per_second(self) -> float | None:
        return self.output_tokens / self.e2el if self.e2el > 0 and self.output_tokens else None


MetricsHook = Callable[[RequestMetrics], None]


class RequestTimer:
    """Times of one request, fed by the host. ``arrived(now, n)``: ``n`` output events
    came in one read. ``finish`` returns the :class:`RequestMetrics`."""

    __slots__ = ("_gaps", "_last", "admitted_at", "events", "first_at", "submitted_at", "tenant", "tier")

    def __init__(self, submitted_at: float, tier: str, tenant: str) -> None:
        self.submitted_at = submitted_at
        self.tier = tier
        self.tenant = tenant
        self.admitted_at: float | None = None
        self.first_at: float | None = None
        self.events = 0
        self._last: float | None = None
        self._gaps = array("d")

    def admitted(self, now: float) -> None:
        if self.admitted_at is None:
            self.admitted_at = now

    def arrived(self, now: float, n: int = 1) -> bool:
        """Record ``n`` output events; True if they are the first."""
        if n <= 0:
            return False
        first = self.first_at is None
        if first:
            self.first_at = now
        else:
            assert self._last is not None
            self._gaps.append(max(0.0, now - self._last))
        if n > 1:
            self._gaps.extend([0.0] * (n - 1))
        self._last = now
        self.events += n
        return first

    def finish(
        self, now: float, *, ok: bool, output_tokens: int | None = None, preemptions: int = 0, pauses: int = 0
    ) -> RequestMetrics:
        start = self.submitted_at
        admitted = self.admitted_at if self.admitted_at is not None else now
        return RequestMetrics(
            tier=self.tier,
            tenant=self.tenant,
            ok=ok,
            queue_time=max(0.0, admitted - start),
            ttft=None if self.first_at is None else max(0.0, self.first_at - start),
            e2el=max(0.0, now - start),
            output_tokens=output_tokens if output_tokens is not None else self.events,
            itl=tuple(self._gaps),
            preemptions=preemptions,
            pauses=pauses,
        )


@dataclass(frozen=True, slots=True)
class Percentiles:
    count: int
    mean: float
    p50: float
    p90: float
    p95: float
    p99: float

    @classmethod
    def of(cls, values: Iterable[float]) -> Percentiles | None:
        xs = sorted(values)
        if not xs:
            return None
        return cls(len(xs), math.fsum(xs) / len(xs), _pct(xs, 50), _pct(xs, 90), _pct(xs, 95), _pct(xs, 99))


def _pct(xs: list[float], p: float) -> float:
    k = (len(xs) - 1) * p / 100.0
    lo = math.floor(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


@dataclass(frozen=True, slots=True)
class TierMetrics:
    """One tier over the window: request counts and p50/p90/p99 of each metric."""

    requests: int
    errors: int
    preemptions: int
    queue_time: Percentiles | None
    ttft: Percentiles | None
    tpot: Percentiles | None
    itl: Percentiles | None
    e2el: Percentiles | None
    output_tokens: int
    tokens_per_second: float | None  # output tokens over the window's summed E2EL


class MetricsWindow:
    """The last ``size`` finished requests per tier."""

    def __init__(self, size: int = 1000, max_itl: int = 100_000) -> None:
        if size < 1 or max_itl < 1:
            raise ValueError("size and max_itl must be >= 1")
        self.size = size
        self.max_itl = max_itl
        self._requests: dict[str, deque[RequestMetrics]] = {}
        self._itl: dict[str, deque[float]] = {}

    def add(self, m: RequestMetrics) -> None:
        self._itl.setdefault(m.tier, deque(maxlen=self.max_itl)).extend(m.itl)
        # the gaps are kept (capped) above; the request's own copy would hold them all
        self._requests.setdefault(m.tier, deque(maxlen=self.size)).append(replace(m, itl=()))

    def summary(self) -> Mapping[str, TierMetrics]:
        out: dict[str, TierMetrics] = {}
        for tier, ms in self._requests.items():
            e2el = math.fsum(m.e2el for m in ms)
            tokens = sum(m.output_tokens for m in ms if m.ok)
            out[tier] = TierMetrics(
                requests=len(ms),
                errors=sum(1 for m in ms if not m.ok),
                preemptions=sum(m.preemptions for m in ms),
                queue_time=Percentiles.of(m.queue_time for m in ms),
                ttft=Percentiles.of(m.ttft for m in ms if m.ttft is not None),
                tpot=Percentiles.of(t for m in ms if (t := m.tpot) is not None),
                itl=Percentiles.of(self._itl.get(tier, ())),
                e2el=Percentiles.of(m.e2el for m in ms),
                output_tokens=tokens,
                tokens_per_second=tokens / e2el if e2el > 0 else None,
            )
        return out
