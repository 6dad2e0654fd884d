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

Replicas that share state (``--state``, :mod:`._fleet`) keep the buckets in Valkey
(:class:`SharedQuotas`): one script refills, checks and takes both of a tenant's
buckets atomically, with the server's clock, so N replicas give a tenant its quota once.
While Valkey does not answer, each replica checks alone against its ``degraded_share``
of the quota.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from ..scheduler import TokenBucket
from ._fleet import FleetLink, FleetUnavailable

__all__ = ["Quotas", "SharedQuotas", "Verdict"]

log = logging.getLogger("sdk.server")


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
            b.rate = per_minute / 60.0  # a minute's allowance per minute
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
        standing = [
            (d, b.capacity, b.tokens, max(0.0, (b.capacity - b.tokens) / b.rate) if b.rate > 0 else 0.0)
            for d, b, _ in buckets
        ]
        return _verdict(ok, wait, standing, wall)


def _verdict(
    ok: bool, wait: float, standing: Iterable[tuple[str, float, float, float]], wall: float
) -> Verdict:
    """The answer and its headers from each bucket's (dimension, capacity, tokens left,
    seconds until full)."""
    headers: dict[str, str] = {}
    for dim, capacity, tokens, full_in in standing:
        remaining = max(0, math.floor(tokens))
        reset = datetime.fromtimestamp(wall + full_in, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        headers[f"x-ratelimit-limit-{dim}"] = f"{capacity:g}"
        headers[f"x-ratelimit-remaining-{dim}"] = str(remaining)
        headers[f"x-ratelimit-reset-{dim}"] = f"{math.ceil(full_in * 1000)}ms"
        headers[f"anthropic-ratelimit-{dim}-limit"] = f"{capacity:g}"
        headers[f"anthropic-ratelimit-{dim}-remaining"] = str(remaining)
        headers[f"anthropic-ratelimit-{dim}-reset"] = reset
    if not ok:
        headers["retry-after"] = str(max(1, math.ceil(wait)))
    return Verdict(ok, wait, headers)


# KEYS[1]: the tenant's bucket key prefix. ARGV: requests per minute, tokens per minute
# (0: none), the request's tokens. Each bucket is a hash (tokens, updated ms, capacity)
# that expires once it would be full again. Returns {ok, wait ms, then per dimension
# asked: tokens left, ms until full} (numbers as strings: Lua's replies truncate).
_TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local dims = {{'requests', tonumber(ARGV[1]), 1}, {'tokens', tonumber(ARGV[2]), tonumber(ARGV[3])}}
local state = {}
local wait = 0
for _, d in ipairs(dims) do
  local limit = d[2]
  if limit > 0 then
    local key = KEYS[1]..d[1]
    local v = redis.call('HMGET', key, 'tokens', 'updated')
    local tokens = tonumber(v[1] or limit)
    local updated = tonumber(v[2] or now)
    local rate = limit / 60000
    tokens = math.min(limit, tokens + math.max(0, now - updated) * rate)
    local cost = math.min(d[3], limit)
    if tokens < cost then wait = math.max(wait, (cost - tokens) / rate) end
    table.insert(state, {key, tokens, cost, limit, rate})
  end
end
local ok = wait <= 0
local out = {ok and '1' or '0', tostring(wait)}
for _, s in ipairs(state) do
  local tokens = s[2]
  if ok then tokens = tokens - s[3] end
  local full = (s[4] - tokens) / s[5]
  redis.call('HSET', s[1], 'tokens', tostring(tokens), 'updated', tostring(now))
  redis.call('PEXPIRE', s[1], math.ceil(full) + 1000)
  table.insert(out, tostring(tokens))
  table.insert(out, tostring(full))
end
return out
"""


class SharedQuotas:
    """The quotas in Valkey for replicas that share them; the local :class:`Quotas`,
    on ``degraded_share`` of each limit, while Valkey does not answer."""

    def __init__(self, link: FleetLink, *, degraded_share: float = 0.5) -> None:
        self.link = link
        self.degraded_share = degraded_share
        self.local = Quotas()
        self.degraded = 0  # checks made alone
        self._take = link.register(_TAKE)

    async def check(
        self, tenant: str, now: float, *, rpm: float | None, tpm: float | None, tokens: int
    ) -> Verdict:
        key = f"{self.link.prefix}quota:{tenant}:"
        args = [rpm or 0, tpm or 0, tokens]

        try:
            out = [
                bytes(x).decode() if isinstance(x, bytes) else str(x)
                for x in await self.link.run(lambda _: self._take(keys=[key], args=args), "quota")
            ]
        except FleetUnavailable as e:
            if not self.degraded:
                log.warning("shared quotas unreachable; each replica checks its share alone: %s", e)
            self.degraded += 1
            share = self.degraded_share
            return self.local.check(
                tenant,
                now,
                rpm=None if rpm is None else rpm * share,
                tpm=None if tpm is None else tpm * share,
                tokens=tokens,
            )
        ok, wait = out[0] == "1", float(out[1]) / 1000
        dims = [(d, lim) for d, lim in (("requests", rpm), ("tokens", tpm)) if lim]
        standing = [
            (d, float(lim), float(out[2 + 2 * i]), float(out[3 + 2 * i]) / 1000)
            for i, (d, lim) in enumerate(dims)
            if lim is not None
        ]
        return _verdict(ok, wait, standing, time.time())
