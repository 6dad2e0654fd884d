"""The three ways a broken stream ends: replayed by the server that keeps it (the real
llama-server's conversation streams), continued by prefill (the real llama-server, when
its copy of the stream is gone), or, for a model that refuses a prefill (the hosted
API's 400 on Claude 4.6 and later, played by the fault server), an
``IncompleteStreamError`` with the partial message and the reason."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import httpx2
import pytest

from sdk import APIConnectionError, Client, IncompleteStreamError, RetryPolicy
from tests.llama import LlamaServer

from .fault_server import Reply, Request, fault_server, messages_events, prefill_of, sse
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


@pytest.mark.parametrize(
    ("message", "refusal"),
    [
        (
            "This model does not support assistant message prefill. "
            "The conversation must end with a user message.",
            True,
        ),
        ("Assistant response prefill is incompatible with enable_thinking.", True),
        (
            "messages: When thinking is enabled, a final assistant message must start with a thinking block",
            True,
        ),
        ("max_tokens: 0 cannot be used with a prefill", False),
        ("messages.1.content: text content blocks must be non-empty", False),
    ],
)
def test_what_counts_as_a_refusal_of_a_prefill(message: str, refusal: bool) -> None:
    from sdk import BadRequestError
    from sdk.stream._resume import refuses_prefill

    assert refuses_prefill(BadRequestError(message, status=400)) is refusal


def test_a_continuation_keeps_its_rules() -> None:
    from sdk.stream._resume import continuation

    base = {"model": "m", "max_tokens": 100, "max_completion_tokens": 100, "messages": LIST}
    c = continuation(base, "Once upon a time ", echo=False, used_tokens=30)
    assert c.params["messages"][-1] == {"role": "assistant", "content": "Once upon a time"}
    assert c.repeat == " " and c.params["max_tokens"] == 70 and c.params["max_completion_tokens"] == 70
    c = continuation(base, "Once upon a time ", echo=True, used_tokens=30)
    assert c.prefill == c.repeat == "Once upon a time "
    c = continuation(base, "   ", echo=False)  # only white space: the same request, its repeat dropped
    assert c.params["messages"] == LIST and c.repeat == "   "


def _thinking_then_text(text: Sequence[str]) -> list[bytes]:
    """A message that starts with a thinking block, then ``text``, cut before its end."""
    events = messages_events(text)
    thinking = [
        sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            },
        ),
        sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "hm"},
            },
        ),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ]
    renumbered = [
        e.replace(b'"index": 0', b'"index": 1').replace(b'"index":0', b'"index":1') for e in events[1:]
    ]
    return [events[0], *thinking, *renumbered][:-3]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_stream_that_generated_thinking_is_not_continued_and_a_drop_ends_it_clearly() -> None:
    """Whether a stream can be continued is decided by what it generated (a thinking
    block a prefill cannot carry), not by the request's ``thinking`` field: its stall
    policy stays on, and a drop after the thinking block ends it with the partial
    message, sending no continuation."""

    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        for chunk in _thinking_then_text(["Let me", " think"]):
            await reply.chunk(chunk)

    no_retry = RetryPolicy(max_retries=0)
    async with (
        fault_server(handler) as server,
        Client(base_url=server.url, api_key="k-think", retry=no_retry) as c,
    ):
        stream = c.stream(
            model="m", max_tokens=3000, messages=LIST, thinking={"type": "enabled", "budget_tokens": 2048}
        )
        assert stream._inner._stall.enabled is True  # a request field cannot switch it off
        with pytest.raises(IncompleteStreamError, match="a thinking block") as e:
            async with stream as s:
                async for _ in s:
                    pass
            assert not s._inner.preempt()  # nothing a prefill could continue
    assert e.value.partial is not None and e.value.partial.text == "Let me think"
    assert e.value.partial.content[0].type == "thinking"
    assert len(server.requests) == 1  # no continuation was sent


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_stream_that_made_a_tool_call_is_not_continued_by_prefill() -> None:
    """A prefill carries text only: a stream cut after a tool call, continued by it, made
    the call a second time (two tool_use blocks with one id). A drop after the call ends
    the stream with the partial message, the call in it once, and nothing is sent again;
    nor can a scheduler preempt it there."""
    text = messages_events(["Checking."])
    call = [
        sse(
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}},
            },
        ),
        sse(
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"q": "cats"}'},
            },
        ),
        sse("content_block_stop", {"type": "content_block_stop", "index": 1}),
    ]
    body = [*text[:-2], *call]  # the text block whole, the call whole, then the drop

    async def handler(req: Request, reply: Reply) -> None:
        await reply.start()
        for chunk in body:
            await reply.chunk(chunk)

    async with (
        fault_server(handler) as server,
        Client(base_url=server.url, api_key="k-tool", retry=RetryPolicy(max_retries=0)) as c,
    ):
        with pytest.raises(IncompleteStreamError, match="a tool call") as e:
            async with c.stream(model="m", max_tokens=300, messages=LIST) as s:
                async for _ in s:
                    pass
                assert not s.preempt()
    partial = e.value.partial
    assert partial is not None and [b.type for b in partial.content] == ["text", "tool_use"]
    assert len(server.requests) == 1  # no continuation was sent


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_thinking_field_an_engine_ignores_does_not_stop_a_continuation() -> None:
    """llama-server takes and ignores ``thinking``: its text-only stream is continued by
    prefill after a drop like any other (the field once made streams unpreemptible, so a
    batch key could hold every slot by adding it)."""
    calls: list[Request] = []

    async def handler(req: Request, reply: Reply) -> None:
        calls.append(req)
        await reply.start()
        if len(calls) == 1:
            for chunk in messages_events(["Let me", " think"])[:-3]:
                await reply.chunk(chunk)
        else:
            for chunk in messages_events([" more."]):
                await reply.chunk(chunk)
            await reply.end()

    no_retry = RetryPolicy(max_retries=0)
    async with (
        fault_server(handler) as server,
        Client(base_url=server.url, api_key="k-think", retry=no_retry, prefill_echo=False) as c,
        c.stream(
            model="m", max_tokens=3000, messages=LIST, thinking={"type": "enabled", "budget_tokens": 2048}
        ) as s,
    ):
        text = "".join([t async for t in s.text_deltas()])
    assert text == "Let me think more."
    assert len(calls) == 2 and prefill_of(calls[1]) == "Let me think"


def test_hosted_apis_are_known_by_host() -> None:
    for url in ("https://api.openai.com/v1", "https://api.anthropic.com", "https://api.anthropic.com/v1"):
        c = Client(base_url=url, api_key="k-hosted")
        assert c.stall.enabled is False and c._engine.slots_known, url
    assert Client(base_url="https://api.anthropic.com/v1", api_key="k").hosted
    assert not Client(base_url="http://127.0.0.1:8080", api_key="k")._engine.slots_known


async def _idle(server: LlamaServer, seconds: float) -> None:
    with anyio.fail_after(seconds):
        while server.busy_slots():
            await anyio.sleep(0.05)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_closing_the_client_stops_its_open_stream_on_the_engine(llama_server: LlamaServer) -> None:
    """llama-server keeps a conversation stream generating after its connection closes;
    closing the client stops it there before the connection pool goes."""
    await _idle(llama_server, 60)  # nothing left over from an earlier test
    req = {"model": llama_server.model, "max_tokens": 1500, "messages": LIST, **GREEDY}
    c = Client(base_url=llama_server.url)
    s = c.stream(**req)
    await s.__aenter__()
    with anyio.fail_after(60):
        async for _ in s.text_deltas():
            break  # generation is under way: 1500 tokens would take minutes here
    assert llama_server.busy_slots() == 1
    await c.aclose()
    await _idle(llama_server, 5)
    with pytest.raises(APIConnectionError, match="closed"):
        await s.final_message()
    await s.__aexit__(None, None, None)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_stream_cancelled_while_its_answer_is_in_flight_stops_on_the_engine(
    llama_server: LlamaServer,
) -> None:
    """Cancelled before the answer's head arrived: llama-server has the request and goes
    on generating for its conversation, so the client stops it there (the generation
    would hold the slot for minutes)."""
    await _idle(llama_server, 60)
    req = {"model": llama_server.model, "max_tokens": 1500, "messages": LIST, **GREEDY}
    async with proxy(llama_server.url) as p:
        p.held = anyio.Event()  # the answer is held back: its head never arrives
        fresh = httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0), timeout=60)
        async with (
            Client(base_url=p.url, http_client=fresh) as c,  # a connection per request
            anyio.create_task_group() as tg,
        ):

            async def start() -> None:
                async with c.stream(**req) as s:
                    async for _ in s:
                        pass

            tg.start_soon(start)
            with anyio.fail_after(60):
                while not llama_server.busy_slots():
                    await anyio.sleep(0.05)  # the engine is generating for it
            tg.cancel_scope.cancel()
        await _idle(llama_server, 5)
        p.held.set()
