"""What a client learns from the scheduling server (``GET /v1/seam``), and gateway keys
naming the end tenant they act for (``seam-tenant``)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from sdk import Client
from sdk.server import ConfigError, ServerApp, ServerConfig, hash_key

pytestmark = pytest.mark.anyio

ALICE, GATEWAY = "alice-key-5e1f", "gateway-key-93ac"


def config(**server: Any) -> ServerConfig:
    return ServerConfig.from_mapping(
        {
            "server": {"slots": 2, **server},
            "keys": [
                {"sha256": hash_key(ALICE), "tenant": "alice", "tier": "interactive"},
                {
                    "sha256": hash_key(GATEWAY),
                    "tenant": "gw",
                    "tier": "batch",
                    "gateway": True,
                    "requests_per_minute": 600,
                },
            ],
            "tenants": {"gw/acme": 3.0, "gw/globex": 1.0},
        }
    )


def http(app: ServerApp) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app), base_url="http://seam")


async def test_the_capabilities_say_the_server_schedules_and_who_is_asking() -> None:
    app = ServerApp(["http://127.0.0.1:9"], config())
    async with http(app) as h:
        r = await h.get("/v1/seam", headers={"x-api-key": ALICE})
        assert r.status_code == 200
        doc = r.json()
        assert doc["object"] == "seam.server" and doc["schedules"] is True
        assert (doc["tenant"], doc["tier"], doc["max_tier"], doc["gateway"]) == (
            "alice",
            "interactive",
            "interactive",
            False,
        )
        assert doc["slots"] == 2 and [t["name"] for t in doc["tiers"]] == ["interactive", "default", "batch"]
        assert (await h.get("/v1/seam")).status_code == 401


async def test_a_gateway_key_names_its_end_tenant_and_an_ordinary_key_may_not() -> None:
    app = ServerApp(["http://127.0.0.1:9"], config())
    async with http(app) as h:
        r = await h.get("/v1/seam", headers={"x-api-key": GATEWAY, "seam-tenant": "acme"})
        assert r.status_code == 200 and r.json()["tenant"] == "gw/acme" and r.json()["gateway"] is True
        r = await h.get("/v1/seam", headers={"x-api-key": ALICE, "seam-tenant": "acme"})
        assert r.status_code == 403 and "may not name a tenant" in r.json()["error"]["message"]
        for bad in ("", "a/b", "x" * 65, "../alice", " x"):
            r = await h.get("/v1/seam", headers={"x-api-key": GATEWAY, "seam-tenant": bad})
            assert r.status_code == 400, bad
    assert app.scheduler.tenant_weights["gw/acme"] == 3.0


async def test_an_sdk_client_learns_that_the_server_schedules() -> None:
    app = ServerApp(["http://127.0.0.1:9"], config())
    async with Client(base_url="http://seam", api_key=GATEWAY, http_client=http(app)) as c:
        await c._learn_slots()
        assert c.engine is not None and c.engine.name == "seam" and c.engine.schedules
        assert c.server_info is not None and c.server_info["gateway"] is True
        assert c.scheduler.slots is None


def test_gateway_flags_and_tenant_weights_are_checked() -> None:
    with pytest.raises(ConfigError, match="gateway must be true or false"):
        ServerConfig.from_mapping({"keys": [{"sha256": hash_key("k"), "tenant": "t", "gateway": "yes"}]})
    with pytest.raises(ConfigError, match="weight must be a positive number"):
        ServerConfig.from_mapping({"tenants": {"t/a": 0}})
    with pytest.raises(ConfigError, match="upstream_engine"):
        ServerConfig.from_mapping({"server": {"upstream_engine": "tgi"}})
