"""The three ways a broken stream ends: replayed by the server that keeps it (the real
llama-server's conversation streams), continued by prefill (the real llama-server, when
its copy of the stream is gone), or, for a model that refuses a prefill (the hosted
API's 400 on Claude 4.6 and later, played by the fault server), an
``IncompleteStreamError`` with the partial message and the reason."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest

from sdk import Client, IncompleteStreamError, RetryPolicy
from tests.llama import LlamaServer

from .fault_server import Reply, Request, fault_server, messages_events, prefill_of
from .proxy import proxy

pytestmark = pytest.mark.anyio

GREEDY: dict[str, Any] = {"temperature": 0, "top_k": 1, "cache_prompt": False}
LIST = [{"role": "user", "content": "A list of facts about cats:\n1."}]


def one_request_per_connection() -> httpx2.AsyncClient:
    """So the proxy sees each request's head (it reads one request per connection)."""
    return httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0))


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_dropped_connection_is_replayed_by_llama_server(llama_server: LlamaServer) -> None:
    req = {"model": llama_server.model, "max_tokens": 48, "messages": LIST, **GREEDY}
    async with Client(base_url=llama_server.url) as direct:
        whole = await direct.create(**req)
    async with proxy(llama_server.url) as p:
        p.cut_after = 1500  # inside the stream, after a few deltas
        async with Client(base_url=p.url, http_client=one_request_per_connection()) as c:
            with anyio.fail_after(120):
                async with c.stream(**req) as s:
                    text = "".join([t async for t in s.text_deltas()])
                    stats = s.statistics()
    assert p.cuts == 1 and stats.resumes == 1
    assert text == whole.text
    assert any(h.startswith(b"GET /v1/stream?conv_id=") for h in p.heads)  # replayed
    assert sum(h.startswith(b"POST /v1/messages") for h in p.heads) == 1  # one engine request


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_without_the_kept_stream_a_drop_is_continued_by_prefill(llama_server: LlamaServer) -> None:
    req = {"model": llama_server.model, "max_tokens": 48, "messages": LIST, **GREEDY}
    async with Client(base_url=llama_server.url) as direct:
        whole = await direct.create(**req)
    async with proxy(llama_server.url) as p:
        p.cut_after = 1500
        p.refuse_if = lambda head: head.startswith(b"GET /v1/stream")  # as if it had expired
        async with Client(base_url=p.url, http_client=one_request_per_connection()) as c:
            with anyio.fail_after(120):
                async with c.stream(**req) as s:
                    text = "".join([t async for t in s.text_deltas()])
                    stats = s.statistics()
    assert p.cuts == 1 and stats.resumes == 1
    assert text == whole.text
    assert sum(h.startswith(b"POST /v1/messages") for h in p.heads) == 2  # the continuation
    assert any(h.startswith(b"DELETE /v1/stream?conv_id=") for h in p.heads)  # the old one stopped


REFUSAL = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "This model does not support assistant message prefill. "
        "The conversation must end with a user message.",
    },
}


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_model_that_refuses_a_prefill_ends_with_the_partial_message(anyio_backend: str) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        if prefill_of(req):
            await reply.respond(400, REFUSAL)
            return
        await reply.start()
        for chunk in messages_events(["Once upon", " a time"])[:-3]:
            await reply.chunk(chunk)
        # the connection drops here, mid-answer

    async with (
        fault_server(handler) as server,
        Client(
            base_url=server.url, api_key="k-test-key", prefill_echo=False, retry=RetryPolicy(max_retries=0)
        ) as c,
    ):
        for _attempt in range(2):
            texts: list[str] = []
            with pytest.raises(IncompleteStreamError) as e:
                async with c.stream(model="claude-x", max_tokens=50, messages=LIST) as s:
                    async for t in s.text_deltas():
                        texts.append(t)
            assert "".join(texts) == "Once upon a time"
            assert e.value.partial is not None and e.value.partial.text == "Once upon a time"
            assert "refuses an assistant prefill" in str(e.value) and "claude-x" in str(e.value)
            continuations = [r for r in server.requests if prefill_of(r)]
            assert len(continuations) == 1  # tried once; the second time the refusal is known
