"""The router under the server's engine client, event by event: routes, affinity,
failover on a broken or unreachable engine, the internal header never leaving."""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator

import httpx2
import pytest

from sdk import Client
from sdk.server._route import ROUTE_HEADER, Engine, Router

pytestmark = pytest.mark.anyio


class Broken(httpx2.AsyncByteStream):
    """A body that breaks off after its first part, as a killed process's does."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b"partial"
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")


def engines(n: int) -> list[Engine]:
    return [
        Engine(i, f"http://10.0.0.{i + 1}:80{i}/prefix{i}", Client(base_url="http://x")) for i in range(n)
    ]


def recorder(
    seen: list[httpx2.Request], fail: set[str] | None = None, down: set[str] | None = None
) -> httpx2.MockTransport:
    def handle(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        host = request.url.host
        if down and host in down:
            raise httpx2.ConnectError("connection refused", request=request)
        if fail and host in fail:
            return httpx2.Response(200, stream=Broken())
        return httpx2.Response(200, json={"ok": host})

    return httpx2.MockTransport(handle)


async def test_a_route_sends_to_its_engine_with_its_path_and_host() -> None:
    seen: list[httpx2.Request] = []
    es = engines(2)
    router = Router(es, recorder(seen))
    rid = router.open()
    engine = router.engine_of(rid)
    assert engine is not None and engine.in_flight == 1
    async with httpx2.AsyncClient(transport=router) as http:
        r = await http.post("http://engine/v1/messages?x=1", headers={ROUTE_HEADER: rid}, content=b"{}")
    assert r.status_code == 200
    req = seen[0]
    assert req.url.host == f"10.0.0.{engine.index + 1}"
    assert req.url.port == 800 + engine.index
    assert req.url.path == f"/prefix{engine.index}/v1/messages"
    assert req.url.query == b"x=1"
    assert req.headers["host"] == f"10.0.0.{engine.index + 1}:{800 + engine.index}"
    assert ROUTE_HEADER not in req.headers  # internal: never sent upstream
    router.close(rid)
    assert engine.in_flight == 0
    router.close(rid)  # closing twice is harmless
    assert engine.in_flight == 0


async def test_least_loaded_and_affinity_within_one() -> None:
    es = engines(2)
    router = Router(es, recorder([]))
    a, b = router.open(), router.open()
    assert {router.engine_of(a), router.engine_of(b)} == set(es)  # spread
    conv = "conv-1"
    home = es[zlib.crc32(conv.encode()) % 2]
    c = router.open(conv)
    assert router.engine_of(c) is home  # loads 1/1: home is within one of the least
    assert router.engine_of(router.open(conv)) is home  # home 2, other 1: within one
    assert router.engine_of(router.open(conv)) is not home  # home 3, other 1: too busy


async def test_a_body_that_breaks_moves_the_route_and_marks_the_engine_down() -> None:
    seen: list[httpx2.Request] = []
    es = engines(2)
    changed: list[bool] = []
    router = Router(es, recorder(seen, fail={"10.0.0.1"}), on_health=lambda: changed.append(True))
    rid = router.open()
    if router.engine_of(rid) is not es[0]:
        router.close(rid)
        rid = router.open()
    assert router.engine_of(rid) is es[0]
    async with httpx2.AsyncClient(transport=router) as http:
        async with http.stream("POST", "http://engine/v1/messages", headers={ROUTE_HEADER: rid}) as r:
            with pytest.raises(httpx2.RemoteProtocolError):
                await r.aread()
        assert es[0].healthy is False and changed
        assert router.engine_of(rid) is es[1]
        assert (es[0].in_flight, es[1].in_flight) == (0, 1)
        assert router.failovers == 1
        r2 = await http.post("http://engine/v1/messages", headers={ROUTE_HEADER: rid})
    assert r2.json() == {"ok": "10.0.0.2"}
    # New routes avoid the engine that is down.
    assert all(router.engine_of(router.open()) is es[1] for _ in range(3))


async def test_an_unreachable_engine_fails_over_on_the_retry() -> None:
    seen: list[httpx2.Request] = []
    es = engines(2)
    router = Router(es, recorder(seen, down={"10.0.0.1"}))
    rid = router.open()
    if router.engine_of(rid) is not es[0]:
        router.close(rid)
        rid = router.open()
    async with httpx2.AsyncClient(transport=router) as http:
        with pytest.raises(httpx2.ConnectError):
            await http.get("http://engine/v1/models", headers={ROUTE_HEADER: rid})
        r = await http.get("http://engine/v1/models", headers={ROUTE_HEADER: rid})
    assert r.json() == {"ok": "10.0.0.2"}
    assert [q.url.host for q in seen] == ["10.0.0.1", "10.0.0.2"]


async def test_a_timeout_moves_the_route_but_keeps_the_engine_up() -> None:
    def handle(request: httpx2.Request) -> httpx2.Response:
        if request.url.host == "10.0.0.1":
            raise httpx2.ReadTimeout("slow", request=request)
        return httpx2.Response(200)

    es = engines(2)
    router = Router(es, httpx2.MockTransport(handle))
    rid = router.open()
    if router.engine_of(rid) is not es[0]:
        router.close(rid)
        rid = router.open()
    async with httpx2.AsyncClient(transport=router) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await http.get("http://engine/v1/models", headers={ROUTE_HEADER: rid})
    assert es[0].healthy and router.engine_of(rid) is es[1]


async def test_with_every_engine_down_a_route_stays_and_is_tried_again() -> None:
    es = engines(1)
    router = Router(es, recorder([], down={"10.0.0.1"}))
    rid = router.open()
    async with httpx2.AsyncClient(transport=router) as http:
        for _ in range(2):
            with pytest.raises(httpx2.ConnectError):
                await http.get("http://engine/x", headers={ROUTE_HEADER: rid})
    assert router.engine_of(rid) is es[0] and es[0].in_flight == 1 and router.failovers == 0


async def test_an_unknown_route_goes_to_a_healthy_engine() -> None:
    seen: list[httpx2.Request] = []
    es = engines(2)
    es[0].healthy = False
    router = Router(es, recorder(seen))
    async with httpx2.AsyncClient(transport=router) as http:
        await http.get("http://engine/v1/models", headers={ROUTE_HEADER: "nonesuch"})
        await http.get("http://engine/v1/models")
    assert [q.url.host for q in seen] == ["10.0.0.2", "10.0.0.2"]


async def test_with_every_engine_down_retries_go_round_them() -> None:
    seen: list[httpx2.Request] = []
    es = engines(3)
    router = Router(es, recorder(seen, down={"10.0.0.1", "10.0.0.2", "10.0.0.3"}))
    rid = router.open()
    async with httpx2.AsyncClient(transport=router) as http:
        for _ in range(6):
            with pytest.raises(httpx2.ConnectError):
                await http.get("http://engine/x", headers={ROUTE_HEADER: rid})
    assert {q.url.host for q in seen} == {"10.0.0.1", "10.0.0.2", "10.0.0.3"}
    assert sum(e.in_flight for e in es) == 1


async def test_a_health_answer_from_before_a_failure_does_not_mark_the_engine_up() -> None:
    """The health loop's probe may be answered (200) just before the engine dies, and
    land after traffic marked it down: that answer is stale and is ignored."""
    es = engines(2)
    router = Router(es, recorder([], down={"10.0.0.1"}))
    probe = es[0].failures  # the health loop sends its probe...
    rid = router.open()
    if router.engine_of(rid) is not es[0]:
        router.close(rid)
        rid = router.open()
    async with httpx2.AsyncClient(transport=router) as http:
        with pytest.raises(httpx2.ConnectError):  # ...traffic finds the engine dead...
            await http.get("http://engine/v1/models", headers={ROUTE_HEADER: rid})
    assert es[0].healthy is False
    router.set_health(es[0], True, probed_at=probe)  # ...and the earlier 200 lands
    assert es[0].healthy is False
    router.set_health(es[0], True, probed_at=es[0].failures)  # a probe sent since then
    assert es[0].healthy is True
    router.set_health(es[0], False, probed_at=probe)  # a failed probe always counts
    assert es[0].healthy is False
