"""What a client learns from the scheduling server: ``GET /v1/seam``, and who a gateway
key acts for.

An SDK :class:`~sdk.Client` asks ``GET /v1/seam`` once, before its first request
(:mod:`sdk.client`). The answer says that this server schedules for its clients, so the
client sends each request's tier (``seam-priority``) and does not count slots it cannot
know; it also tells the caller its standing: the tenant, the tier its requests get by
default and the best one it may ask for, the quota, the server's slots and tiers and
how full the queue is.

A key marked ``gateway = true`` (an application's backend that serves many end users
through one key) may name the end tenant it acts for in a ``seam-tenant`` header. The
scheduler then shares fairly between end tenants (their weights in ``[tenants]``), under
the name ``<key's tenant>/<end tenant>`` so a gateway cannot pass for another key's
tenant; quotas stay the key's own, so naming tenants gives no more of them. An ordinary
key that names a tenant is refused (403): its tenant is its own.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ..client import PRIORITY_HEADER, TENANT_HEADER
from ..scheduler import Scheduler
from ._config import Principal, ServerConfig
from ._http import HTTPError

__all__ = ["acting_for", "capabilities"]

_TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+-]{0,63}")


def acting_for(who: Principal, named: str | None) -> Principal:
    """``who``, or the end tenant a gateway key names (see the module doc)."""
    if named is None:
        return who
    if not who.gateway:
        raise HTTPError(403, "permission_error", f"this key may not name a tenant ({TENANT_HEADER})")
    if not _TENANT.fullmatch(named):
        raise HTTPError(
            400,
            "invalid_request_error",
            f"{TENANT_HEADER}: 1 to 64 letters, digits and ._:@+- (starting with a letter or digit)",
        )
    return dataclasses.replace(who, tenant=f"{who.account}/{named}")


def capabilities(config: ServerConfig, scheduler: Scheduler, who: Principal) -> dict[str, Any]:
    """The ``GET /v1/seam`` document for ``who``."""
    return {
        "object": "seam.server",
        "schedules": True,
        "priority_header": PRIORITY_HEADER,
        "tenant_header": TENANT_HEADER,
        "tenant": who.tenant,
        "gateway": who.gateway,
        "tier": who.tier.name,
        "max_tier": who.max_tier.name,
        "quota": {
            "requests_per_minute": who.requests_per_minute,
            "tokens_per_minute": who.tokens_per_minute,
        },
        "slots": scheduler.slots,
        "tiers": [
            {
                "name": t.name,
                "rank": t.rank,
                "preemptible": t.preemptible,
                "ttft_target": t.ttft_target,
                "min_share": t.min_share,
            }
            for t in scheduler.tiers
        ],
        "queue": {"waiting": scheduler.waiting, "running": scheduler.running, "max": config.max_queue},
        "aging_seconds": config.aging_seconds,
    }
