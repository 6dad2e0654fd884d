"""Rate-limit headers of both families, durations, resets and token buckets."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdk.scheduler import LimitReading, TokenBucket, parse_duration, parse_rate_limit_headers

WALL = 1796083200.0  # 2026-12-01T00:00:00Z


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("12ms", 0.012),
        ("1s", 1.0),
        ("1.5s", 1.5),
        ("6m0s", 360.0),
        ("1h2m3.5s", 3723.5),
        ("20", 20.0),
        ("0.25", 0.25),
        (" 7s ", 7.0),
    ],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "1x", "-1s", "1s2", "abc", "ms", "1" * 100, "nan", "inf", "-3"])
def test_malformed_durations_are_none(text: str) -> None:
    assert parse_duration(text) is None


@given(st.text(max_size=40))
def test_duration_parser_never_raises(text: str) -> None:
    v = parse_duration(text)
    assert v is None or (0 <= v <= 86_400 and math.isfinite(v))


def test_anthropic_headers_with_rfc3339_resets() -> None:
    info = parse_rate_limit_headers(
        {
            "Anthropic-RateLimit-Requests-Limit": "50",
            "anthropic-ratelimit-requests-remaining": "49",
            "anthropic-ratelimit-requests-reset": "2026-12-01T00:00:01Z",
            "anthropic-ratelimit-input-tokens-limit": "30000",
            "anthropic-ratelimit-input-tokens-remaining": "29000",
            "anthropic-ratelimit-input-tokens-reset": "2026-12-01T00:00:02.500+00:00",
            "anthropic-ratelimit-output-tokens-limit": "8000",
            "anthropic-ratelimit-output-tokens-remaining": "8000",
            "anthropic-ratelimit-output-tokens-reset": "2026-12-01T00:00:00Z",
            "anthropic-ratelimit-tokens-limit": "38000",
            "anthropic-ratelimit-tokens-remaining": "37000",
            "anthropic-ratelimit-tokens-reset": "garbage",
            "retry-after": "4",
        },
        wall=WALL,
    )
    by = {r.dimension: r for r in info.readings}
    assert by["requests"] == LimitReading("requests", 50, 49, 1.0)
    assert by["input_tokens"] == LimitReading("input_tokens", 30000, 29000, 2.5)
    assert by["output_tokens"].reset_after == 0.0
    assert by["tokens"].reset_after is None and by["tokens"].limit == 38000
    assert info.retry_after == 4.0


def test_reset_against_the_date_header_without_a_wall_clock() -> None:
    info = parse_rate_limit_headers(
        {
            "date": "Tue, 01 Dec 2026 00:00:00 GMT",
            "anthropic-ratelimit-requests-limit": "10",
            "anthropic-ratelimit-requests-remaining": "0",
            "anthropic-ratelimit-requests-reset": "2026-12-01T00:00:30Z",
        }
    )
    assert info.readings[0].reset_after == 30.0


def test_openai_headers_with_durations() -> None:
    info = parse_rate_limit_headers(
        {
            "x-ratelimit-limit-requests": "60",
            "x-ratelimit-remaining-requests": "59",
            "x-ratelimit-reset-requests": "1s",
            "x-ratelimit-limit-tokens": "150000",
            "x-ratelimit-remaining-tokens": "149984",
            "x-ratelimit-reset-tokens": "6m0s",
            "retry-after-ms": "1500",
        }
    )
    by = {r.dimension: r for r in info.readings}
    assert by["requests"] == LimitReading("requests", 60, 59, 1.0)
    assert by["tokens"] == LimitReading("tokens", 150000, 149984, 360.0)
    assert info.retry_after == 1.5


@pytest.mark.parametrize(
    "headers",
    [
        {"x-ratelimit-limit-requests": "-5", "x-ratelimit-remaining-requests": "nan"},
        {"anthropic-ratelimit-requests-limit": "inf"},
        {"retry-after": "soon"},
        {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"},  # a date without a reference is ignored
        {"x-ratelimit-reset-tokens": "1s"},  # a reset with no limit or remaining says nothing
    ],
)
def test_malformed_headers_are_ignored(headers: dict[str, str]) -> None:
    assert not parse_rate_limit_headers(headers)


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "retry-after",
                "x-ratelimit-limit-tokens",
                "x-ratelimit-remaining-tokens",
                "x-ratelimit-reset-tokens",
                "anthropic-ratelimit-requests-reset",
                "anthropic-ratelimit-requests-limit",
                "date",
            ]
        ),
        st.text(max_size=30),
    )
)
def test_header_parser_never_raises(headers: dict[str, str]) -> None:
    parse_rate_limit_headers(headers, wall=WALL)


def test_bucket_refills_at_the_rate_the_reset_implies() -> None:
    b = TokenBucket(100, 0.0)
    b.observe(LimitReading("tokens", 100, 40, 30.0), 0.0, unseen=0)
    assert b.tokens == 40 and b.rate == pytest.approx(2.0)  # 60 missing in 30 s
    assert b.wait(50) == pytest.approx(5.0)
    b.refill(5.0)
    assert b.fits(50)
    assert b.wait(101) == math.inf
    b.refill(1000.0)
    assert b.tokens == 100


@pytest.mark.parametrize(
    "headers",
    [
        {
            "date": "Tue, 01 Dec 99999 00:00:00 GMT",
            "anthropic-ratelimit-tokens-limit": "100",
            "anthropic-ratelimit-tokens-reset": "2026-12-01T00:00:00Z",
        },
        {"retry-after": "Wed, 01 Jan 99999 00:00:00 GMT"},
        {
            "anthropic-ratelimit-requests-limit": "10",
            "anthropic-ratelimit-requests-reset": "9999-12-31T23:59:59-23:59",
        },
    ],
)
def test_out_of_range_dates_are_ignored(headers: dict[str, str]) -> None:
    parse_rate_limit_headers(headers)
    parse_rate_limit_headers(headers, wall=WALL)
