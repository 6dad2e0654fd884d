"""One scheduler, two hosts: tiers, fair sharing, rate limits, adaptive concurrency and
preemption, decided sans-IO.

The :class:`Scheduler` is told what happened, with the time, and answers with
:class:`Decisions`; the client drives it over its outgoing requests and the self-hosted
server over its engine slots. :class:`RequestTimer` and :class:`MetricsWindow` compute
the serving metrics (queue time, TTFT, TPOT, ITL, E2EL) from times the host passes in.

The one module here that does I/O is the async host both use, :class:`Dispatcher`
(each request's link to it is a :class:`Flight`): it reads the clock, drives the
scheduler and wakes the tasks it admits, on asyncio or trio. A host of its own (the
server's fleet admission) drives the same scheduler through it.
"""

from ._core import AIMD, Decisions, Scheduler, SchedulerStats, Ticket, TicketState
from ._dispatch import Dispatcher, Flight
from ._fleet import GHOST_TENANT, Call, FleetMember, FleetStanding
from ._limits import (
    Cost,
    LimitReading,
    RateLimitInfo,
    TokenBucket,
    parse_duration,
    parse_rate_limit_headers,
)
from ._metrics import MetricsHook, MetricsWindow, Percentiles, RequestMetrics, RequestTimer, TierMetrics
from ._tiers import DEFAULT_TIERS, Tier, Tiers, UnknownTierError

__all__ = [
    "AIMD",
    "DEFAULT_TIERS",
    "GHOST_TENANT",
    "Call",
    "Cost",
    "Decisions",
    "Dispatcher",
    "FleetMember",
    "FleetStanding",
    "Flight",
    "LimitReading",
    "MetricsHook",
    "MetricsWindow",
    "Percentiles",
    "RateLimitInfo",
    "RequestMetrics",
    "RequestTimer",
    "Scheduler",
    "SchedulerStats",
    "Ticket",
    "TicketState",
    "Tier",
    "TierMetrics",
    "Tiers",
    "TokenBucket",
    "UnknownTierError",
    "parse_duration",
    "parse_rate_limit_headers",
]
