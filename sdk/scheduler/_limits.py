"""Rate limits: what servers say in their headers, and token buckets that pace requests.

Two header families are read (case-insensitively, as any ``Mapping[str, str]``):

- the hosted Messages API: ``anthropic-ratelimit-{requests,tokens,input-tokens,
  output-tokens}-{limit,remaining,reset}``, where ``reset`` is an RFC 3339 time at which
  the bucket is full again;
- OpenAI-style servers: ``x-ratelimit-{limit,remaining,reset}-{requests,tokens,
  input-tokens,output-tokens}``, where ``reset`` is a duration (``1s``, ``6m0s``,
  ``12ms``, ``1h2m3.5s``) or a number of seconds;

plus ``retry-after-ms``/``retry-after`` (seconds or an HTTP date). An absolute reset time
becomes a delay against ``wall`` (the host's wall clock, epoch seconds), else against the
response's own ``date`` header, so the parser reads no clock. A malformed value is
ignored, never an error: headers come from the network.

:class:`TokenBucket` is one dimension's bucket: it refills continuously at the rate the
headers imply (the missing tokens arrive by the reset time), a request takes its cost
when admitted, and the unused part of an output reservation is given back at the end.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ..http import http_date

__all__ = [
    "DIMENSIONS",
    "Cost",
    "Dimension",
    "LimitReading",
    "RateLimitInfo",
    "TokenBucket",
    "parse_duration",
    "parse_rate_limit_headers",
]

Dimension = Literal["requests", "tokens", "input_tokens", "output_tokens"]
DIMENSIONS: tuple[Dimension, ...] = ("requests", "tokens", "input_tokens", "output_tokens")
_HEADER_DIM: dict[str, Dimension] = {
    "requests": "requests",
    "tokens": "tokens",
    "input-tokens": "input_tokens",
    "output-tokens": "output_tokens",
}
DEFAULT_PERIOD = 60.0  # the window a bare limit is assumed to refill over (per minute)
_MAX_DELAY = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Cost:
    """What a request is expected to take: its input tokens (a local estimate) and
    ``max_tokens`` of output. ``tokens`` is the sum, which the combined buckets charge."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __post_init__(self) -> None:
        if self.input_tokens < 0 or self.output_tokens < 0:
            raise ValueError("token costs must be >= 0")

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def of(self, dim: Dimension) -> float:
        if dim == "requests":
            return 1.0
        if dim == "tokens":
            return float(self.tokens)
        if dim == "input_tokens":
            return float(self.input_tokens)
        return float(self.output_tokens)


@dataclass(frozen=True, slots=True)
class LimitReading:
    """One dimension as a response reported it; ``reset_after`` in seconds from then."""

    dimension: Dimension
    limit: float | None = None
    remaining: float | None = None
    reset_after: float | None = None


@dataclass(frozen=True, slots=True)
class RateLimitInfo:
    readings: tuple[LimitReading, ...] = ()
    retry_after: float | None = None

    def __bool__(self) -> bool:
        return bool(self.readings) or self.retry_after is not None


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def parse_duration(text: str) -> float | None:
    """``"12ms"``, ``"1.5s"``, ``"6m0s"``, ``"1h2m3.5s"`` or a bare number of seconds."""
    s = text.strip().lower()
    if not s or len(s) > 64:
        return None
    try:
        value = float(s)
    except ValueError:
        pass
    else:
        return value if 0 <= value <= _MAX_DELAY else None
    pos = 0
    total = 0.0
    for m in _DURATION.finditer(s):
        if m.start() != pos:
            return None
        pos = m.end()
        n = float(m.group(1))
        unit = m.group(2)
        total += n / 1000.0 if unit == "ms" else n * {"h": 3600.0, "m": 60.0, "s": 1.0}[unit]
    if pos != len(s) or pos == 0:
        return None
    return total if total <= _MAX_DELAY else None


def _epoch(text: str) -> float | None:
    """An RFC 3339 time (``2026-12-01T08:00:00Z``) or an HTTP date as epoch seconds."""
    s = text.strip()
    if not s or len(s) > 64:
        return None
    iso = s[:-1] + "+00:00" if s[-1:] in "zZ" else s
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        return http_date(s)
    if dt.tzinfo is None:
        return None  # a local time without an offset is not RFC 3339
    try:
        return dt.timestamp()
    except (ValueError, OverflowError):
        return None


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        v = float(text.strip())
    except ValueError:
        return None
    return v if v >= 0 and math.isfinite(v) else None


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in headers.items():
        if isinstance(k, str) and isinstance(v, str):
            k = k.lower()
            if k.startswith(("anthropic-ratelimit-", "x-ratelimit-", "retry-after", "date")):
                out[k] = v
    return out


def _retry_after(h: Mapping[str, str], ref: float | None) -> float | None:
    ms = _number(h.get("retry-after-ms"))
    if ms is not None and ms / 1000.0 <= _MAX_DELAY:
        return ms / 1000.0
    raw = h.get("retry-after")
    if raw is None:
        return None
    secs = _number(raw)
    if secs is not None:
        return secs if secs <= _MAX_DELAY else None
    at = _epoch(raw)
    if at is None or ref is None:
        return None
    return min(max(0.0, at - ref), _MAX_DELAY)


def parse_rate_limit_headers(headers: Mapping[str, str], *, wall: float | None = None) -> RateLimitInfo:
    """Every rate-limit dimension the headers report, and the server's requested delay.

    ``wall``: the wall-clock time (epoch seconds) the response arrived, to turn an
    absolute reset time into a delay; without it the response's ``date`` header serves.
    """
    h = _lower(headers)
    ref = wall
    if ref is None and "date" in h:
        ref = _epoch(h["date"])
    readings: list[LimitReading] = []
    for name, dim in _HEADER_DIM.items():
        a = f"anthropic-ratelimit-{name}-"
        x = "x-ratelimit-{}-" + name
        limit = _number(h.get(a + "limit")) if a + "limit" in h else _number(h.get(x.format("limit")))
        remaining = (
            _number(h.get(a + "remaining")) if a + "remaining" in h else _number(h.get(x.format("remaining")))
        )
        reset_after: float | None = None
        if a + "reset" in h:
            at = _epoch(h[a + "reset"])
            if at is not None and ref is not None:
                reset_after = min(max(0.0, at - ref), _MAX_DELAY)
        elif x.format("reset") in h:
            raw = h[x.format("reset")]
            reset_after = parse_duration(raw)
            if reset_after is None:
                at = _epoch(raw)
                if at is not None and ref is not None:
                    reset_after = min(max(0.0, at - ref), _MAX_DELAY)
        if limit is None and remaining is None:
            continue
        readings.append(LimitReading(dim, limit, remaining, reset_after))
    return RateLimitInfo(tuple(readings), _retry_after(h, ref))


class TokenBucket:
    """One dimension's bucket. ``tokens`` may not go below zero by an admission: a
    request is admitted only when its cost fits (:meth:`fits`). ``taken`` counts every
    token ever taken, so a reading can be matched to the admissions it had not seen."""

    __slots__ = ("capacity", "rate", "taken", "tokens", "updated")

    def __init__(self, capacity: float, now: float, *, rate: float | None = None) -> None:
        self.capacity = capacity
        self.tokens = capacity
        self.rate = rate if rate is not None else capacity / DEFAULT_PERIOD
        self.updated = now
        self.taken = 0.0

    def __repr__(self) -> str:
        return f"TokenBucket({self.tokens:.1f}/{self.capacity:g}, +{self.rate:.3g}/s)"

    def refill(self, now: float) -> None:
        if now > self.updated:
            self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
            self.updated = now

    def fits(self, cost: float) -> bool:
        return cost <= self.tokens + 1e-9

    def wait(self, cost: float) -> float:
        """Seconds until ``cost`` fits (``inf`` if it never will)."""
        missing = cost - self.tokens
        if missing <= 1e-9:
            return 0.0
        if cost > self.capacity or self.rate <= 0:
            return math.inf
        return missing / self.rate

    def take(self, cost: float) -> None:
        self.tokens -= cost
        self.taken += cost

    def give_back(self, amount: float) -> None:
        """Return (or, negative, charge more of) a reservation once the real use is known.

        A charge leaves at most one bucket's worth of debt: a count a server got wrong (or
        made up) delays the next admissions by one refill of the bucket at most, never
        for as long as the count says."""
        self.tokens = max(-self.capacity, min(self.capacity, self.tokens + amount))
        self.taken -= amount

    def observe(self, reading: LimitReading, now: float, unseen: float) -> None:
        """Adopt a server reading. ``unseen``: tokens taken by admissions the server had
        not counted yet when it answered (admitted after the request it answered)."""
        self.refill(now)
        if reading.limit is not None and reading.limit > 0:
            self.capacity = reading.limit
        if reading.remaining is not None:
            self.tokens = max(-self.capacity, min(self.capacity, reading.remaining - unseen))
        if reading.reset_after is not None and reading.reset_after > 0:
            missing = self.capacity - (reading.remaining if reading.remaining is not None else self.tokens)
            if missing > 0:  # the missing tokens are back by the reset time
                self.rate = missing / reading.reset_after
        elif reading.reset_after is None and reading.limit is not None and reading.limit > 0:
            self.rate = self.capacity / DEFAULT_PERIOD
