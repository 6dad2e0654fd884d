"""An engine not named is known by one ``GET`` of its model list, a path every server of
the API has, and is asked nothing else unless the answer shows what it is (issue: a
client sent ``GET /props`` to the root of an unknown OpenAI ``/v1`` server)."""

from __future__ import annotations

import pytest

from sdk import Client
from sdk.client._engine import engine_from

from .fault_server import Reply, Request, fault_server
from .test_priority_wire import KEY, MSG, answer

pytestmark = pytest.mark.anyio

LLAMA_LIST = {"object": "list", "data": [{"id": "g", "object": "model", "owned_by": "llamacpp"}]}
VLLM_LIST = {
    "object": "list",
    "data": [{"id": "q", "object": "model", "owned_by": "vllm", "max_model_len": 4096}],
}


@pytest.mark.parametrize(
    ("headers", "models", "engine"),
    [
        ({"server": "llama.cpp"}, None, "llama-server"),
        ({"server": "llama.cpp/b6000"}, None, "llama-server"),
        ({"server": "nginx"}, LLAMA_LIST, "llama-server"),  # a proxy rewrote the header
        ({"server": "uvicorn"}, VLLM_LIST, "vllm"),
        # the scheduling server lists its engines' models as they own them: its header wins
        ({"seam-server": "1", "server": "llama.cpp"}, LLAMA_LIST, "seam"),
        (
            {"server": "uvicorn"},
            {"object": "list", "data": [{"id": "x", "owned_by": "openai"}]},
            "self-hosted",
        ),
        ({}, None, "self-hosted"),  # too long to read, or not JSON
        ({}, {"data": "not a list"}, "self-hosted"),
        ({}, [1, 2], "self-hosted"),
        ({}, {"data": [1, None, {"owned_by": ["vllm"]}]}, "self-hosted"),
    ],
)
def test_the_model_lists_answer_names_the_engine(
    headers: dict[str, str], models: object, engine: str
) -> None:
    assert engine_from(headers, models) == engine


async def chat_answer(req: Request, reply: Reply) -> None:
    choice = {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    await reply.respond(200, {"id": "c1", "object": "chat.completion", "model": "m", "choices": [choice]})


async def test_an_unknown_v1_server_is_asked_its_model_list_once_and_nothing_at_its_root() -> None:
    async with fault_server(chat_answer) as server, Client(base_url=server.url + "/v1", api_key=KEY) as c:
        for _ in range(3):
            await c.create(model="m", max_tokens=5, messages=MSG)
        assert c.engine is not None and c.engine.name == "self-hosted"
        assert c.scheduler.slots is None
        assert await c.context_window("m") is None  # and no /props for it either
    assert [p.path for p in server.probes] == ["/v1/models", "/v1/models"]  # the engine's; the window's
    assert [r.path for r in server.requests] == ["/v1/chat/completions"] * 3


async def test_llama_server_is_known_by_its_header_and_then_asked_its_slots() -> None:
    async with fault_server(answer) as server:
        server.props = {"total_slots": 3, "default_generation_settings": {"n_ctx": 2048}}
        async with Client(base_url=server.url, api_key=KEY) as c:
            await c.create(model="m", max_tokens=5, messages=MSG)
            assert c.engine is not None and c.engine.name == "llama-server"
            assert c.scheduler.slots == 3
            assert await c.context_window("m") == 2048  # its /props, where the list says nothing
    assert [p.path for p in server.probes] == ["/v1/models", "/props", "/v1/models", "/props"]


async def test_a_server_that_fails_the_probe_is_served_all_the_same() -> None:
    async def broken_list(req: Request, reply: Reply) -> None:
        if req.path == "/v1/models":
            await reply.stream.send(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{not json")
            return
        await answer(req, reply)

    async with fault_server(broken_list) as server:
        server.models_to_handler = True
        async with Client(base_url=server.url, api_key=KEY) as c:
            msg = await c.create(model="m", max_tokens=5, messages=MSG)
            assert msg.text == "ok" and c.engine is not None and c.engine.name == "self-hosted"


async def test_a_seam_header_without_the_capabilities_is_not_taken_for_a_scheduler() -> None:
    async with fault_server(answer) as server:
        server.seam = {"object": "something.else"}  # the header, but no scheduler's answer
        async with Client(base_url=server.url, api_key=KEY) as c:
            await c.create(model="m", max_tokens=5, messages=MSG)
            assert c.engine is not None and c.engine.name == "self-hosted" and c.server_info is None
        async with Client(base_url=server.url, api_key=KEY, engine="seam") as c:
            await c.create(model="m", max_tokens=5, messages=MSG)
            assert c.engine is not None and c.engine.name == "seam"  # named: kept
