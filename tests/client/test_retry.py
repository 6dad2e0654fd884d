"""The retry policy without I/O: which answers are retried, and after how long."""

from __future__ import annotations

import email.utils
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdk.http import RetryBudget, RetryPolicy, parse_retry_after, retry_decision

NOW = 1_800_000_000.0
P = RetryPolicy(max_retries=3, initial_delay=0.5, max_delay=8.0, jitter=0.25)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "0"}, 0.0),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after": email.utils.formatdate(NOW + 12, usegmt=True)}, 12.0),
        ({"retry-after": email.utils.formatdate(NOW - 30, usegmt=True)}, 0.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "junk", "retry-after": "3"}, 3.0),
        ({"retry-after-ms": "-5", "retry-after": "3"}, 3.0),
        ({"retry-after": "61"}, None),  # not sane: fall back to our backoff
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529, None])
def test_retryable(status: int | None) -> None:
    assert retry_decision(status, {"retry-after-ms": "10"}, 0, P) == 0.01


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_never_retried_not_even_when_the_server_says_so(status: int) -> None:
    assert retry_decision(status, {"x-should-retry": "true"}, 0, P) is None


def test_x_should_retry() -> None:
    assert retry_decision(529, {"x-should-retry": "false"}, 0, P) is None
    assert retry_decision(418, {}, 0, P) is None
    assert retry_decision(418, {"x-should-retry": "true", "retry-after": "1"}, 0, P) == 1.0


def test_attempts_are_capped() -> None:
    assert retry_decision(529, {}, 2, P) is not None
    assert retry_decision(529, {}, 3, P) is None
    assert retry_decision(529, {}, 0, RetryPolicy(max_retries=0)) is None


@given(st.integers(0, 20), st.integers(0, 2**32))
def test_backoff_is_exponential_capped_and_jittered_down(attempt: int, seed: int) -> None:
    base = min(P.max_delay, P.initial_delay * 2**attempt)
    d = P.backoff(attempt, random.Random(seed))
    assert base * (1 - P.jitter) <= d <= base


def test_budget_refills_per_request_and_caps() -> None:
    b = RetryBudget(ratio=0.5, capacity=2.0)
    assert b.withdraw() and b.withdraw() and not b.withdraw()
    b.deposit()
    assert not b.withdraw()
    b.deposit()
    assert b.withdraw()
    for _ in range(10):
        b.deposit()
    assert b.tokens == 2.0


def test_policy_validation() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError):
        RetryPolicy(initial_delay=5, max_delay=1)
    with pytest.raises(ValueError):
        RetryPolicy(jitter=2)
