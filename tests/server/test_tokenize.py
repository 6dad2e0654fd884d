"""``/tokenize`` through the scheduling server: an engine's tokenizer for clients that
chunk or count in the served model's own tokens."""

from __future__ import annotations

import httpx2
import pytest

from sdk import AuthenticationError, BadRequestError, Client, ServerTokenizer
from sdk.chunking import Chunker

from .conftest import ALICE, Served

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

TEXT = (
    "The harbour master counted the crates twice. ユーザー名は「山田」です。 "
    "Ships from the north came late; the ones from the south did not come at all. 😀👍🏽\n\n"
) * 12


async def test_counts_through_the_server_equal_the_engines_own(served: Served) -> None:
    async with (
        Client(base_url=served.upstream.url, api_key="unused") as direct,
        Client(base_url=served.url, api_key=ALICE) as proxied,
    ):
        assert await proxied.tokenize(TEXT) == await direct.tokenize(TEXT)
        tok = ServerTokenizer(proxied)
        ends = await tok.encode_ends(TEXT)
        assert ends == await ServerTokenizer(direct).encode_ends(TEXT)  # the engine's pieces, passed on
        chunks = await Chunker(48, encoding=tok).achunk(TEXT)
        assert "".join(c.text for c in chunks) == TEXT
        assert [c.tokens for c in chunks] == await ServerTokenizer(direct).count_many(
            [c.text for c in chunks]
        )
        assert all(c.tokens <= 48 for c in chunks)


async def test_tokenize_is_authenticated_and_checks_its_body(served: Served) -> None:
    async with Client(base_url=served.url, api_key="not-a-key") as stranger:
        with pytest.raises(AuthenticationError):
            await stranger.tokenize("text")
    async with httpx2.AsyncClient() as http:
        r = await http.post(served.url + "/tokenize", json={"content": 5}, headers={"x-api-key": ALICE})
        assert r.status_code == 400 and "content" in r.json()["error"]["message"]
        r = await http.post(
            served.url + "/tokenize", json={"prompt": "Hello world"}, headers={"x-api-key": ALICE}
        )
        assert r.status_code == 200 and r.json()["count"] == 2  # vLLM's request shape too
    async with Client(base_url=served.url, api_key=ALICE) as c:
        with pytest.raises(BadRequestError):
            await c._sender.send("POST", "/tokenize", body={"content": ["a", 1]}, root=True)


async def test_official_sdks_retrieve_a_model_by_id(served: Served) -> None:
    import anthropic
    import openai

    model = served.upstream.model
    a = anthropic.AsyncAnthropic(base_url=served.url, api_key=ALICE)
    o = openai.AsyncOpenAI(base_url=served.url + "/v1", api_key=ALICE)
    try:
        got = await a.models.retrieve(model)
        assert got.id == model and got.type == "model"
        assert (await o.models.retrieve(model)).id == model
        with pytest.raises(anthropic.NotFoundError):
            await a.models.retrieve("no-such-model")
        with pytest.raises(openai.NotFoundError):
            await o.models.retrieve("org/no-such-model")
    finally:
        await a.close()
        await o.close()
