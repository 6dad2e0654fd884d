"""Retries before the first response byte: which answers to retry, how long to wait.

Sans-IO: :func:`retry_decision` looks at a status and headers and returns a delay or
``None``; the client sleeps and re-sends. After the first byte of a response nothing is
retried here: a broken stream is resumed by :class:`~sdk.stream.MessageStream`.

Order of precedence: 400, 401, 403, 404, 413 and 422 are never retried (not even with
``x-should-retry: true``: the request itself is wrong); ``x-should-retry: false`` never
retries and ``true`` may retry any other status; otherwise 408, 409, 429, 5xx and 529
retry; the server's ``retry-after-ms`` or ``retry-after``
(seconds or an HTTP date) sets the delay when it is sane (0 to 60 s), otherwise capped
exponential backoff with jitter. A :class:`RetryBudget` shared by one client bounds the
retries of all its requests together, so an outage does not multiply the load.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["RetryBudget", "RetryPolicy", "is_retryable_status", "parse_retry_after", "retry_decision"]

_RETRY_STATUS = frozenset({408, 409, 429, 529})
_NEVER_STATUS = frozenset({400, 401, 403, 404, 413, 422})
_MAX_SERVER_DELAY = 60.0


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how long to wait. ``max_retries=0`` disables retries.

    The delay for retry ``n`` (0-based) is ``min(max_delay, initial_delay * 2**n)``
    reduced by up to ``jitter`` of itself at random, unless the server named one.
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    jitter: float = 0.25

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if not (0 <= self.initial_delay <= self.max_delay) or math.isnan(self.max_delay):
            raise ValueError("need 0 <= initial_delay <= max_delay")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be between 0 and 1")

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        base = min(self.max_delay, self.initial_delay * (2.0**attempt))
        r = (rng or random).random()
        return base * (1.0 - self.jitter * r)


class RetryBudget:
    """A token bucket shared by a client's requests: each request deposits ``ratio``
    tokens (up to ``capacity``), each retry withdraws one. With the defaults at most
    about one request in five is a retry once the initial reserve is spent.
    """

    __slots__ = ("_tokens", "capacity", "ratio")

    def __init__(self, ratio: float = 0.2, capacity: float = 10.0) -> None:
        if ratio < 0 or capacity < 0:
            raise ValueError("ratio and capacity must be >= 0")
        self.ratio = ratio
        self.capacity = capacity
        self._tokens = capacity

    @property
    def tokens(self) -> float:
        return self._tokens

    def deposit(self) -> None:
        self._tokens = min(self.capacity, self._tokens + self.ratio)

    def withdraw(self) -> bool:
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    def __repr__(self) -> str:
        return f"RetryBudget(tokens={self._tokens:.1f}, ratio={self.ratio}, capacity={self.capacity})"


def http_date(text: str) -> float | None:
    """An HTTP date (``Wed, 21 Oct 2026 07:28:00 GMT``) as epoch seconds, or ``None``
    where it is not one or out of range (a server's year 99999)."""
    try:
        parsed = email.utils.parsedate_tz(text)
        return None if parsed is None else float(email.utils.mktime_tz(parsed))
    except (ValueError, OverflowError, TypeError):
        return None


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The server's requested delay in seconds, or ``None`` (absent, malformed, or over 60 s)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
        except ValueError:
            value = math.nan
        if 0 <= value <= _MAX_SERVER_DELAY:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        at = http_date(raw)
        if at is None:
            return None
        value = at - (time.time() if now is None else now)
        value = max(value, 0.0)
    if 0 <= value <= _MAX_SERVER_DELAY:
        return value
    return None


def is_retryable_status(status: int) -> bool:
    if status in _NEVER_STATUS:
        return False
    return status in _RETRY_STATUS or status >= 500


def retry_decision(
    status: int | None,
    headers: Mapping[str, str],
    attempt: int,
    policy: RetryPolicy,
    *,
    rng: random.Random | None = None,
    now: float | None = None,
) -> float | None:
    """Seconds to wait before retry number ``attempt`` (0-based), or ``None``: do not retry.

    ``status`` is ``None`` for a connection error (no response): retried like a 5xx.
    """
    if attempt >= policy.max_retries:
        return None
    if status is not None and status in _NEVER_STATUS:
        return None  # a validation error stays one, whatever a header says
    should = headers.get("x-should-retry")
    if should == "false":
        return None
    if should != "true" and status is not None and not is_retryable_status(status):
        return None
    server = parse_retry_after(headers, now)
    return server if server is not None else policy.backoff(attempt, rng)
