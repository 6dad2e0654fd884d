"""A request's tier on the wire: to a scheduling server as the ``seam-priority`` header,
to vLLM (when it is named as running the priority policy) as its ``priority`` field,
and to nothing else. A fault server records what each engine would receive."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from sdk import Client, RetryPolicy
from sdk.client import EngineProfile, engine_profile

from .fault_server import FaultServer, Reply, Request, fault_server
from .test_scheduling import answer as answer_pieces

pytestmark = pytest.mark.anyio

KEY = "sk-wire-0123456789abcdef"
MSG = [{"role": "user", "content": "hi"}]
SEAM = {"object": "seam.server", "schedules": True, "slots": 2, "tenant": "t", "gateway": False}


async def answer(req: Request, reply: Reply) -> None:
    await answer_pieces(req, reply, ["o", "k"])


async def one_of_each(c: Client) -> None:
    await c.create(model="m", max_tokens=5, messages=MSG, priority="interactive")
    async with c.stream(model="m", max_tokens=5, messages=MSG, priority="batch") as s:
        async for _ in s:
            pass
    async with c.map([{"model": "m", "max_tokens": 5, "messages": MSG}]) as results:  # batch by default
        async for r in results:
            assert r.ok


def posts(server: FaultServer) -> list[Request]:
    return [r for r in server.requests if r.method == "POST"]


async def test_a_scheduling_server_gets_each_requests_tier_in_a_header() -> None:
    async with fault_server(answer) as server:
        server.seam = SEAM
        server.props = {"total_slots": 1}  # not asked: the scheduling server decides admission
        async with Client(base_url=server.url, api_key=KEY) as c:
            await one_of_each(c)
            assert c.engine is not None and c.engine.name == "seam" and c.engine.schedules
            assert c.scheduler.slots is None  # no slot count it cannot know holds requests back
    got = posts(server)
    assert [r.headers.get("seam-priority") for r in got] == ["interactive", "batch", "batch"]
    assert all("priority" not in r.json() for r in got)
    assert [p.path for p in server.probes] == ["/v1/models", "/v1/seam"]  # known by its header, then asked
    assert all("seam-tenant" not in r.headers for r in got)  # not a gateway key


async def test_a_tier_the_caller_did_not_name_stays_off_the_wire() -> None:
    """Without ``priority=`` a scheduling server gives the key's own tier: the client's
    stand-in default must not override it (a batch key's unnamed requests became default
    work, which is not preemptible)."""
    async with fault_server(answer) as server:
        server.seam = SEAM
        async with Client(base_url=server.url, api_key=KEY) as c:
            await c.create(model="m", max_tokens=5, messages=MSG)
            async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
                async for _ in s:
                    pass
            await c.create(model="m", max_tokens=5, messages=MSG, priority="default")
    assert [r.headers.get("seam-priority") for r in posts(server)] == [None, None, "default"]


async def test_a_gateway_key_names_the_end_tenant() -> None:
    async with fault_server(answer) as server:
        server.seam = {**SEAM, "gateway": True}
        async with Client(base_url=server.url, api_key=KEY) as c:
            await c.create(model="m", max_tokens=5, messages=MSG, tenant="acme")
            await c.create(model="m", max_tokens=5, messages=MSG)
    got = posts(server)
    assert [r.headers.get("seam-tenant") for r in got] == ["acme", None]


async def test_vllm_gets_the_priority_field_only_when_named_as_running_the_priority_policy() -> None:
    async with (
        fault_server(answer) as server,
        Client(base_url=server.url, api_key=KEY, engine="vllm-priority") as c,
    ):
        await one_of_each(c)
        assert c.engine == engine_profile("vllm-priority")
    got = posts(server)
    assert [r.json().get("priority") for r in got] == [-1, 1, 1]  # lower first, as vLLM orders
    assert all("seam-priority" not in r.headers for r in got)
    assert server.probes == [] or all(p.path == "/props" for p in server.probes)


@pytest.mark.parametrize("engine", [None, "vllm", "llama-server", "self-hosted", "hosted"])
async def test_no_other_engine_gets_a_tier_on_the_wire(engine: Any) -> None:
    """llama-server (learnt from /props, or named), plain vLLM (which refuses the field
    unless it runs the priority policy), an unknown server and the hosted API."""
    async with fault_server(answer) as server:
        server.props = {"total_slots": 2}
        async with Client(base_url=server.url, api_key=KEY, engine=engine) as c:
            await one_of_each(c)
            if engine is None:
                assert c.engine == engine_profile("llama-server")
    got = posts(server)
    assert len(got) == 3
    for r in got:
        assert (
            "priority" not in r.json() and "seam-priority" not in r.headers and "seam-tenant" not in r.headers
        )


async def test_a_full_scheduling_server_requeues_the_request_never_fails_it() -> None:
    """503 with retry-after from a scheduling server: back in the client's queue and
    sent again after the delay, however many times, with no retries left in the policy."""
    refusals = 5

    async def full_then_ok(req: Request, reply: Reply) -> None:
        if len(posts(server)) <= refusals:
            await reply.respond(
                503,
                {"type": "error", "error": {"type": "overloaded_error", "message": "the queue is full"}},
                {"retry-after": "0"},
            )
            return
        await answer(req, reply)

    async with fault_server(full_then_ok) as server:
        server.seam = SEAM
        async with Client(base_url=server.url, api_key=KEY, retry=RetryPolicy(max_retries=0)) as c:
            with anyio.fail_after(20):
                msg = await c.create(model="m", max_tokens=5, messages=MSG, priority="batch")
            assert msg.text == "ok"
            assert c.scheduler.running == 0 and c.scheduler.waiting == 0
    assert len(posts(server)) == refusals + 1


def test_profiles_are_named_or_given() -> None:
    p = EngineProfile("vllm", priority="body")
    assert engine_profile(p) is p
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        engine_profile("tgi")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown engine"):
        Client(base_url="http://127.0.0.1:9", engine="tgi")  # type: ignore[arg-type]
