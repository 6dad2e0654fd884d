"""What the client sends (headers, body pass-through, per-call options), secrecy of the
key, sharing between tasks and closing with streams in flight, against the loopback server."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import httpx2
import pytest

from sdk import Client, ModelInfo
from sdk._errors import APIConnectionError, APITimeoutError, AuthenticationError
from sdk.stream import StallPolicy

from .fault_server import Reply, Request, events_for, fault_server
from .test_faults import KEY, MSG, PIECES, TEXT, client, ok_body

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["messages", "openai"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def echo_ok(backend: str) -> Any:
    async def handler(req: Request, reply: Reply) -> None:
        if req.body and req.json().get("stream"):
            await reply.start()
            for ev in events_for(backend, PIECES):
                await reply.chunk(ev)
            await reply.end()
        else:
            await reply.respond(200, ok_body(backend))

    return handler


async def test_default_headers_and_auth_per_backend(backend: str) -> None:
    async with fault_server(await echo_ok(backend)) as server:
        async with client(server, backend, default_headers={"x-team": "a"}) as c:
            await c.create(model="m", max_tokens=5, messages=MSG, extra_headers={"x-call": "1"})
        h = server.requests[0].headers
    assert h["user-agent"].startswith("seam-llm/") and h["x-team"] == "a" and h["x-call"] == "1"
    assert h["content-type"] == "application/json"
    if backend == "messages":
        assert server.requests[0].path == "/v1/messages"
        assert h["x-api-key"] == KEY and h["anthropic-version"] == "2023-06-01"
        assert "authorization" not in h
    else:
        assert server.requests[0].path == "/v1/chat/completions"
        assert h["authorization"] == f"Bearer {KEY}" and "x-api-key" not in h


async def test_typed_fields_and_extra_body_go_into_the_body_unchanged(backend: str) -> None:
    """(An unknown keyword is refused before sending, with a did-you-mean: test_typed.py;
    a field the SDK does not type, a future one, goes in extra_body.)"""
    async with fault_server(await echo_ok(backend)) as server, client(server, backend) as c:
        async with c.stream(
            model="m",
            max_tokens=5,
            messages=MSG,
            temperature=0,
            top_k=1,
            cache_prompt=False,
            seed=7,
            extra_body={"n_probs": 2, "future_field": {"nested": [1, 2]}},
        ) as s:
            msg = await s.final_message()
        body = server.requests[0].json()
    assert msg.text == TEXT
    for key, value in {"temperature": 0, "top_k": 1, "cache_prompt": False, "seed": 7, "n_probs": 2}.items():
        assert body[key] == value
    assert body["future_field"] == {"nested": [1, 2]} and body["stream"] is True
    if backend == "openai":
        assert body["stream_options"] == {"include_usage": True}


async def test_key_never_in_repr_errors_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        # a server that echoes the key back in its error message
        msg = f"invalid x-api-key: {req.headers['x-api-key']}"
        await reply.respond(401, {"type": "error", "error": {"type": "authentication_error", "message": msg}})

    caplog.set_level(logging.DEBUG)
    async with fault_server(handler) as server, client(server, "messages") as c:
        assert KEY not in repr(c) and "api key" in repr(c)
        with pytest.raises(AuthenticationError) as info:
            await c.create(model="m", max_tokens=5, messages=MSG)
    err = info.value
    assert server.requests[0].headers["x-api-key"] == KEY  # it was sent ...
    for text in (repr(err), str(err), repr(err.body), caplog.text):
        assert KEY not in text  # ... and is shown nowhere


async def test_per_call_timeout_overrides_the_clients() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await anyio.sleep_forever()  # never answers

    async with fault_server(handler) as server, client(server, "messages", retry=None) as c:
        with anyio.fail_after(20), pytest.raises(APITimeoutError):
            await c.create(model="m", max_tokens=5, messages=MSG, timeout=0.2)
    assert len(server.requests) == 3  # a timeout is a connection error: retried twice


async def test_models_and_estimated_count_for_openai() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.respond(200, {"object": "list", "data": [{"id": "a", "owned_by": "me"}, {"id": "b"}]})

    async with fault_server(handler) as server, client(server, "openai") as c:
        server.models_to_handler = True
        models = await c.models()
        count = await c.count_tokens(model="m", messages=[{"role": "user", "content": "hello world " * 10}])
    assert models == [ModelInfo("a", None, "me"), ModelInfo("b")]
    assert server.requests[0].path == "/v1/models" and len(server.requests) == 1  # no count endpoint
    assert count.source == "estimate" and 20 <= count.input_tokens <= 40


async def test_one_client_shared_by_many_tasks(backend: str) -> None:
    async with fault_server(await echo_ok(backend)) as server, client(server, backend) as c:
        texts: list[str] = []

        async def one() -> None:
            async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
                texts.append("".join([t async for t in s.text_deltas()]))

        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(one)
    assert texts == [TEXT] * 8 and len(server.requests) == 8


async def test_aclose_ends_streams_in_flight(backend: str) -> None:
    started = anyio.Event()

    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        for ev in events_for(backend, PIECES)[:4]:
            await reply.chunk(ev)
        started.set()
        await anyio.sleep_forever()

    async with fault_server(handler) as server:
        c = client(server, backend, idle_timeout=None)
        errors: list[BaseException] = []

        async def consume() -> None:
            try:
                async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
                    async for _ in s:
                        pass
            except APIConnectionError as e:
                errors.append(e)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                await started.wait()
                await anyio.wait_all_tasks_blocked()
                await c.aclose()
        assert len(errors) == 1 and "closed" in str(errors[0]) and len(server.requests) == 1
        with pytest.raises(RuntimeError):
            await c.create(model="m", max_tokens=5, messages=MSG)


async def test_an_applications_own_http_client_is_used_and_left_open() -> None:
    async with fault_server(await echo_ok("messages")) as server, httpx2.AsyncClient() as http:
        async with Client(base_url=server.url, api_key=KEY, http_client=http, prefill_echo=False) as c:
            await c.create(model="m", max_tokens=5, messages=MSG)
        assert not http.is_closed
        r = await http.post(server.url + "/v1/messages", json={"messages": MSG})
        assert r.status_code == 200


async def test_hosted_defaults_and_backend_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    async with Client() as c:
        assert c.base_url == "https://api.anthropic.com" and c.backend_name == "messages"
        assert c.stall == StallPolicy.hosted() and KEY not in repr(c)
    async with Client(base_url="http://gpu-box:8000/v1") as c:
        assert c.backend_name == "openai" and c.stall.enabled
    async with Client(base_url="http://gpu-box:8000") as c:
        assert c.backend_name == "messages" and c.stall.enabled
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://proxy:9000/")
    async with Client() as c:
        assert c.base_url == "http://proxy:9000"


async def test_stream_events_are_the_same_vocabulary_for_both_backends() -> None:
    kinds: dict[str, list[str]] = {}
    for backend in ("messages", "openai"):
        async with (
            fault_server(await echo_ok(backend)) as server,
            client(server, backend) as c,
            c.stream(model="m", max_tokens=5, messages=MSG) as s,
        ):
            kinds[backend] = [type(ev).__name__ for ev in [e async for e in s]]
    # the OpenAI stream has no separate usage-only delta in the Messages one: compare the shape
    assert [k for k in kinds["openai"] if k != "MessageDeltaEvent"] == [
        k for k in kinds["messages"] if k != "MessageDeltaEvent"
    ]


async def test_count_tokens_falls_back_to_an_estimate_once_the_server_lacks_it() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.respond(
            404, {"type": "error", "error": {"type": "not_found_error", "message": "no route"}}
        )

    async with fault_server(handler) as server, client(server, "messages") as c:
        first = await c.count_tokens(model="m", messages=MSG)
        second = await c.count_tokens(model="m", messages=MSG)
    assert first == second and first.source == "estimate"
    assert [r.path for r in server.requests] == ["/v1/messages/count_tokens"]  # asked once
