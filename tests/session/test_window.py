"""A session made without a context window learns it from the server where the server
says it (llama-server's per-slot n_ctx, vLLM's max_model_len, a table of hosted models),
and otherwise says what to pass."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from sdk import Client, SessionError
from sdk.session import Session
from tests.llama import LlamaServer

from .fakes import FakeClient, Reply

pytestmark = pytest.mark.anyio

GREEDY: dict[str, Any] = {"temperature": 0, "top_k": 1, "seed": 7}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_window_comes_from_llama_server(llama_server: LlamaServer) -> None:
    async with Client(base_url=llama_server.url) as c:
        assert await c.context_window(llama_server.model) == 1024  # n_ctx of one slot
        s = Session(c, model=llama_server.model)
        with pytest.raises(SessionError, match="context_window"):
            s.fit()  # not known before it is asked
        async with s.stream("A list of colours:\n1.", max_tokens=8, **GREEDY) as r:
            "".join([t async for t in r.text_deltas()])
        assert s.context_window == 1024 and s.reserve_output == 256  # a quarter of the window
        assert r.report is not None and r.report.budget == 1024 - 256


async def test_vllm_and_hosted_windows() -> None:
    def vllm(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/v1/models":
            return httpx2.Response(
                200,
                json={
                    "object": "list",
                    "data": [{"id": "Qwen/Qwen3-8B", "object": "model", "max_model_len": 32768}],
                },
            )
        return httpx2.Response(404, json={})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(vllm))
    async with Client(base_url="http://gpu:8000/v1", api_key="k-window", http_client=http) as c:
        assert await c.context_window("Qwen/Qwen3-8B") == 32768
        assert await c.context_window("claude-sonnet-4-5") == 200_000  # from the table
        assert await c.context_window("some-unknown-model") == 32768  # the server's only model


async def test_without_a_window_anywhere_the_session_says_what_to_pass() -> None:
    client = FakeClient(lambda req: Reply(["x"]))
    s = Session(client, model="mystery")
    with pytest.raises(SessionError, match=r"context_window=N"):
        async with s.stream("hello"):
            pass
    client.window = 4000
    async with s.stream("hello") as r:
        async for _ in r:
            pass
    assert s.context_window == 4000 and s.reserve_output == 1000


def test_an_explicit_reserve_must_fit_the_window() -> None:
    with pytest.raises(ValueError, match="reserve_output"):
        Session(None, model="m", context_window=1000, reserve_output=1000)
    s = Session(None, model="m", reserve_output=100)
    with pytest.raises(ValueError, match="reserve_output"):
        s.set_window(50)
