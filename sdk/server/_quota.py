"""Per-tenant quotas: requests and tokens per minute, as token buckets.

A request that does not fit its tenant's buckets is answered 429 with ``retry-after``
before it is queued; every answer carries the tenant's standing in both header
families the SDK's scheduler reads (``x-ratelimit-{limit,remaining,reset}-{requests,
tokens}`` with durations, ``anthropic-ratelimit-*`` with RFC 3339 resets), so a client
paces itself instead of meeting the 429. The buckets refill continuously (a minute's
allowance per minute), start full, and are kept per tenant while the tenant exists in
the configuration. A tenant has one set of buckets, whichever of its keys a request
comes with: a limit that changes adjusts the bucket's size and rate and never adds to
what is left (the configuration refuses keys of one tenant that disagree; a fresh, full
bucket per change let two such keys refill each other's).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from ..scheduler import TokenBucket
from ..scheduler._limits import DEFAULT_PERIOD

__all__ = ["Quotas", "Verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    retry_after: float
    headers: dict[str, str]


class Quotas:
    def __init__(self) -> None:
        self._buckets: dict[tuple[str, str], TokenBucket] = {}

    def _bucket(self, tenant: str, dim: str, per_minute: float, now: float) -> TokenBucket:
        b = self._buckets.get((tenant, dim))
        if b is None:
            b = self._buckets[(tenant, dim)] = TokenBucket(per_minute, now)
        b.refill(now)
        if b.capacity != per_minute:  # resized, never refilled by the change
            b.capacity = per_minute
            b.rate = per_minute / DEFAULT_PERIOD
            b.tokens = min(b.tokens, per_minute)
        return b

    def check(self, tenant: str, now: float, *, rpm: float | None, tpm: float | None, tokens: int) -> Verdict:
        """Take one request of ``tokens`` from the tenant's buckets if both have room."""
        wall = time.time()
        wanted = [
            (d, lim, cost) for d, lim, cost in (("requests", rpm, 1.0), ("tokens", tpm, float(tokens))) if lim
        ]
        buckets = [(d, self._bucket(tenant, d, lim, now), cost) for d, lim, cost in wanted if lim is not None]
        wait = max((b.wait(min(cost, b.capacity)) for _, b, cost in buckets), default=0.0)
        ok = wait <= 0
        if ok:
            for _, b, cost in buckets:
                b.take(min(cost, b.capacity))  # a request above a whole minute's tokens still goes
        headers: dict[str, str] = {}
        for dim, b, _ in buckets:
            remaining = max(0, math.floor(b.tokens))
            full_in = max(0.0, (b.capacity - b.tokens) / b.rate) if b.rate > 0 else 0.0
            reset = datetime.fromtimestamp(wall + full_in, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            headers[f"x-ratelimit-limit-{dim}"] = f"{b.capacity:g}"
            headers[f"x-ratelimit-remaining-{dim}"] = str(remaining)
            headers[f"x-ratelimit-reset-{dim}"] = f"{math.ceil(full_in * 1000)}ms"
            headers[f"anthropic-ratelimit-{dim}-limit"] = f"{b.capacity:g}"
            headers[f"anthropic-ratelimit-{dim}-remaining"] = str(remaining)
            headers[f"anthropic-ratelimit-{dim}-reset"] = reset
        if not ok:
            headers["retry-after"] = str(max(1, math.ceil(wait)))
        return Verdict(ok, wait, headers)
