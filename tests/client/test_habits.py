"""What application developers do first: test their code with httpx2's MockTransport,
configure by environment, point a client at the wrong kind of server, read
``status_code``, and read the ``sdk`` logger."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import httpx2
import orjson
import pytest

from sdk import Client, NotFoundError, RateLimitError, RetryPolicy

from .fault_server import messages_events

pytestmark = pytest.mark.anyio

MSG = [{"role": "user", "content": "hi"}]
KEY = "habit-key-8d1f2c0e9b"
ANSWER = {
    "id": "m",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "content": [{"type": "text", "text": "hello"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


def mock(handler: Any) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


async def test_a_mock_transport_with_content_bytes_works() -> None:
    """A response built with content= arrives already read: the client uses it as is."""

    def handler(req: httpx2.Request) -> httpx2.Response:
        if orjson.loads(req.content).get("stream"):
            return httpx2.Response(
                200,
                headers={"content-type": "text/event-stream"},
                content=b"".join(messages_events(["hel", "lo"])),
            )
        return httpx2.Response(200, json=ANSWER)

    async with Client(base_url="http://test", api_key=KEY, http_client=mock(handler)) as c:
        assert (await c.create(model="m", max_tokens=5, messages=MSG)).text == "hello"
        async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
            assert "".join([t async for t in s.text_deltas()]) == "hello"


def test_an_httpx_client_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match=r"httpx2\.AsyncClient"):
        Client(base_url="http://test", http_client=httpx.AsyncClient())  # type: ignore[arg-type]


def test_the_openai_backend_reads_its_own_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gpu-box:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "from-the-environment")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://elsewhere:9000")
    c = Client(backend="openai")
    assert c.base_url == "http://gpu-box:8000/v1" and c.backend_name == "openai"
    assert c._sender.credentials.key.value == "from-the-environment"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert Client(backend="openai").base_url == "https://api.openai.com/v1"
    assert Client().base_url == "http://elsewhere:9000"


async def test_a_404_names_the_url_and_the_backend() -> None:
    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(404, json={"error": {"type": "not_found_error", "message": "File Not Found"}})

    async with Client(base_url="http://llama:8080/v1", api_key=KEY, http_client=mock(handler)) as c:
        with pytest.raises(NotFoundError) as e:
            await c.create(model="m", max_tokens=5, messages=MSG)
    text = str(e.value)
    assert "http://llama:8080/v1/chat/completions" in text and "backend='openai'" in text
    assert "backend='messages'" in text  # what to try instead
    assert e.value.status_code == 404


async def test_a_404_from_a_doubled_v1_says_to_drop_it() -> None:
    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(404, json={"error": {"type": "not_found_error", "message": "File Not Found"}})

    http = mock(handler)
    async with Client(
        base_url="http://llama:8080/v1", backend="messages", api_key=KEY, http_client=http
    ) as c:
        with pytest.raises(NotFoundError) as e:
            await c.create(model="m", max_tokens=5, messages=MSG)
    text = str(e.value)
    assert "http://llama:8080/v1/v1/messages" in text and "drop /v1 from base_url" in text


async def test_the_sdk_logger_records_requests_and_retries_but_no_key_or_body(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def handler(req: httpx2.Request) -> httpx2.Response:
        if req.method != "POST":
            return httpx2.Response(404, json={})  # the slot probe: not llama-server
        calls.append(1)
        if len(calls) == 1:
            return httpx2.Response(429, headers={"retry-after": "0", "request-id": "req-1"}, json={})
        return httpx2.Response(200, headers={"request-id": "req-2"}, json=ANSWER)

    secret_text = "a very private question"
    caplog.set_level(logging.DEBUG, logger="sdk")
    async with Client(
        base_url="http://test", api_key=KEY, http_client=mock(handler), retry=RetryPolicy(max_retries=2)
    ) as c:
        await c.create(model="m", max_tokens=5, messages=[{"role": "user", "content": secret_text}])
    records = [r for r in caplog.records if r.name.startswith("sdk")]
    text = "\n".join(r.getMessage() for r in records)
    assert "POST /v1/messages -> 429 (request id req-1, attempt 1)" in text
    assert "POST /v1/messages -> 200 (request id req-2, attempt 2)" in text
    assert any(r.levelno == logging.INFO and "429" in r.getMessage() for r in records)  # the retry
    assert KEY not in text and secret_text not in text and "hello" not in text


async def test_status_code_on_every_api_error() -> None:
    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(429, json={"error": {"type": "rate_limit_error", "message": "slow down"}})

    async with Client(
        base_url="http://test", api_key=KEY, http_client=mock(handler), retry=RetryPolicy(max_retries=0)
    ) as c:
        with pytest.raises(RateLimitError) as e:
            await c.create(model="m", max_tokens=5, messages=MSG)
    assert e.value.status_code == 429 == e.value.status


def test_a_hosted_api_without_a_key_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    from sdk import ConfigError, SyncClient

    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        Client()
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        Client(backend="openai")
    with pytest.raises(ConfigError, match="api_key="):
        SyncClient()
    assert Client(base_url="http://127.0.0.1:8080").base_url  # a self-hosted server needs none


async def test_a_context_window_past_any_real_one_is_not_taken() -> None:
    """A model list that states a window of 10**30 tokens (kept exact by the JSON reader)
    gives no window: a scheduling server passing it on would fail to write it."""

    def handler(req: httpx2.Request) -> httpx2.Response:
        if req.url.path.endswith("/models"):
            body = b'{"data": [{"id": "m", "max_model_len": 1000000000000000000000000000000}]}'
            return httpx2.Response(200, content=body, headers={"content-type": "application/json"})
        return httpx2.Response(404, json={})

    async with Client(base_url="http://test", api_key=KEY, http_client=mock(handler)) as c:
        assert (await c.models())[0].context_window is None
        assert await c.context_window("m") is None
