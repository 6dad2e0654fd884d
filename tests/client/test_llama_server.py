"""What the real llama-server speaks, read with raw httpx2 (no SDK code in the way), so a
change of the server build shows up here first rather than as a client failure."""

from __future__ import annotations

import httpx2
import orjson
import pytest

from tests.llama import LlamaServer

pytestmark = pytest.mark.anyio

PROMPT = [{"role": "user", "content": "Name three colors."}]
GREEDY = {"temperature": 0, "top_k": 1, "cache_prompt": False}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_server_endpoints(llama_server: LlamaServer) -> None:
    url = llama_server.url
    # no keep-alive: llama-server may close a kept-alive connection after a stream
    async with httpx2.AsyncClient(timeout=60, limits=httpx2.Limits(max_keepalive_connections=0)) as http:
        body = {"model": llama_server.model, "max_tokens": 3, "messages": PROMPT, **GREEDY}
        r = await http.post(url + "/v1/messages", json=body)
        assert r.status_code == 200
        msg = r.json()
        assert msg["type"] == "message" and msg["content"][0]["type"] == "text"
        assert msg["stop_reason"] == "max_tokens" and msg["usage"]["output_tokens"] == 3

        async with http.stream("POST", url + "/v1/messages", json={**body, "stream": True}) as s:
            assert s.headers["content-type"].startswith("text/event-stream")
            raw = b"".join([c async for c in s.aiter_raw()])
        kinds = [line[7:] for line in raw.decode().splitlines() if line.startswith("event: ")]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        assert "content_block_delta" in kinds and "message_delta" in kinds

        r = await http.post(url + "/v1/messages/count_tokens", json={"model": "m", "messages": PROMPT})
        assert r.status_code == 200 and r.json()["input_tokens"] == msg["usage"]["input_tokens"] + (
            msg["usage"].get("cache_read_input_tokens") or 0
        )

        chat = {"model": llama_server.model, "max_tokens": 3, "messages": PROMPT, **GREEDY}
        r = await http.post(url + "/v1/chat/completions", json=chat)
        assert r.status_code == 200
        assert r.json()["choices"][0]["message"]["content"] == msg["content"][0]["text"]
        opts = {"stream": True, "stream_options": {"include_usage": True}}
        async with http.stream("POST", url + "/v1/chat/completions", json={**chat, **opts}) as s:
            raw = b"".join([c async for c in s.aiter_raw()])
        datas = [line[6:] for line in raw.decode().splitlines() if line.startswith("data: ")]
        assert datas[-1] == "[DONE]"
        assert orjson.loads(datas[-2])["usage"]["completion_tokens"] == 3

        models = (await http.get(url + "/v1/models")).json()["data"]
        assert models[0]["owned_by"] == "llamacpp"  # how the client recognises llama-server
        slots = (await http.get(url + "/slots")).json()
        assert len(slots) == 2 and all("is_processing" in s for s in slots)
