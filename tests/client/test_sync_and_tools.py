"""The blocking client and a tool-use round trip against the real llama-server."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sdk import Message, SyncClient, TextBlock, ToolUseBlock, Usage
from tests.llama import LlamaServer

GREEDY: dict[str, Any] = {"temperature": 0, "top_k": 1, "cache_prompt": False}
LIST = [{"role": "user", "content": "A list of facts about cats:\n1."}]


def test_the_sync_client_streams_creates_and_counts(llama_server: LlamaServer) -> None:
    req: dict[str, Any] = {"model": llama_server.model, "max_tokens": 16, "messages": LIST, **GREEDY}
    with SyncClient(base_url=llama_server.url) as c:
        whole = c.create(**req)
        with c.stream(**req) as s:
            text = "".join(s.text_deltas())
            final = s.final_message()
            stats = s.statistics()
        assert text == whole.text and final.text == text and stats.pauses >= 0
        assert c.count_tokens(model=llama_server.model, messages=LIST).input_tokens > 0  # type: ignore[arg-type]
        assert [m.id for m in c.models()] == [llama_server.model]
        assert len(c.tokenize("Hello world")) == 2  # the server's own tokens, no BOS

        # Threads share the client: one loop, one pool, one scheduler.
        results: list[str] = []
        errors: list[BaseException] = []

        def worker() -> None:
            try:
                results.append(c.create(**req).text)
            except BaseException as e:
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors and len(results) == 4 and all(results)  # (batched: greedy text may differ)
        pool = c.client._sender.http  # one httpx2 pool for every call
        assert pool is c.client._sender.http
    with pytest.raises(RuntimeError):
        c.create(**req)  # closed


def test_a_tool_call_goes_back_to_the_server_as_the_api_takes_it(llama_server: LlamaServer) -> None:
    """The assistant's tool call (from ``to_param``) and the tool's result, sent back: the
    server accepts them and answers the next turn."""
    call = Message(
        id="msg_1",
        model=llama_server.model,
        role="assistant",
        content=(
            TextBlock("Let me look that up."),
            ToolUseBlock("toolu_1", "get_weather", {"city": "Paris"}, '{"city": "Paris"}'),
        ),
        stop_reason="tool_use",
        stop_sequence=None,
        usage=Usage(10, 5),
    )
    param = call.to_param()
    assert param == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look that up."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
        ],
    }
    tools = [
        {
            "name": "get_weather",
            "description": "The weather in a city",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ]
    messages: list[Any] = [
        {"role": "user", "content": "What is the weather in Paris?"},
        param,
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "Sunny, 21 degrees."}],
        },
    ]
    with SyncClient(base_url=llama_server.url) as c:
        answer = c.create(model=llama_server.model, max_tokens=12, messages=messages, tools=tools, **GREEDY)
    assert answer.role == "assistant" and answer.stop_reason in ("end_turn", "max_tokens", "tool_use")
    assert answer.content


def test_to_param_sends_only_what_the_api_takes() -> None:
    from sdk.stream import RedactedThinkingBlock as Redacted
    from sdk.stream import ThinkingBlock, UnknownBlock

    msg = Message(
        id="m",
        model="x",
        role="assistant",
        content=(
            ThinkingBlock("hmm", "sig"),
            Redacted("opaque"),
            TextBlock("hi", ({"type": "char_location", "cited_text": "x"},)),
            ToolUseBlock("t1", "f", None, '{"a": ', "invalid JSON"),
            UnknownBlock(
                "server_tool_use", {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}}
            ),
        ),
        stop_reason="tool_use",
        stop_sequence=None,
        usage=Usage(1, 1),
    )
    assert msg.to_param() == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "hi", "citations": [{"type": "char_location", "cited_text": "x"}]},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
            {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {}},
        ],
    }


def _slow_server() -> Any:
    import anyio
    import httpx2

    from .fault_server import messages_events

    events = messages_events([f"t{i} " for i in range(200)])

    class Slow(httpx2.AsyncByteStream):
        async def __aiter__(self) -> Any:
            for e in events:
                yield e
                await anyio.sleep(0.01)

    def handler(request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST":
            return httpx2.Response(404, json={})
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Slow())

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


def test_closing_the_sync_client_inside_its_own_stream_returns() -> None:
    c = SyncClient(base_url="http://test", api_key="k-sync-close", http_client=_slow_server())
    with c.stream(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]) as s:
        assert next(iter(s.text_deltas()))
        c.close()  # the stream is still open, in this thread
    c.close()  # idempotent


def test_closing_the_sync_client_from_another_thread_ends_its_readers() -> None:
    from sdk import APIConnectionError

    c = SyncClient(base_url="http://test", api_key="k-sync-close", http_client=_slow_server())
    errors: list[BaseException] = []
    started = threading.Event()

    def reader() -> None:
        try:
            with c.stream(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]) as s:
                for _ in s.text_deltas():
                    started.set()
        except BaseException as e:
            errors.append(e)

    t = threading.Thread(target=reader)
    t.start()
    assert started.wait(30)
    c.close()
    t.join(30)
    assert not t.is_alive() and len(errors) == 1 and isinstance(errors[0], APIConnectionError)


def test_the_sync_client_refuses_a_running_event_loop() -> None:
    import anyio

    c = SyncClient(base_url="http://test", api_key="k-sync-loop", http_client=_slow_server())
    try:

        async def inside() -> None:
            with pytest.raises(RuntimeError, match="event loop"):
                c.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])

        anyio.run(inside)
    finally:
        c.close()
