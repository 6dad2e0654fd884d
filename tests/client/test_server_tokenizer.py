"""Exact counts from the server's own tokenizer: ``Client.tokenize``, ``ServerTokenizer``
and ``Chunker.achunk`` against the real llama-server (Gemma 3's tokenizer, which no
local encoding matches), and the answers a broken or hostile server may give."""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import anyio.from_thread
import httpx2
import pytest

from sdk import (
    Client,
    NotFoundError,
    ServerTokenizer,
    StreamProtocolError,
    acount_tokens,
    count_tokens,
)
from sdk.chunking import Chunker, chunk
from sdk.tokens import WorkerEncoder
from tests.corpus import corpus_files
from tests.invariants import grapheme_starts, watch_encoder
from tests.llama import LlamaServer

pytestmark = pytest.mark.anyio

# A few files of every kind; the start of each keeps the test short on a 2-core machine.
_FILES = [
    "prose/en_harbor_log_longform.txt",
    "prose/ja_dialogue_kinsoku.txt",
    "prose/emoji_sequences.txt",
    "prose/zh_hans_long_paragraph.txt",
    "code/shapes.py",
    "code/lib.rs",
    "json/cjk_product.json",
    "jsonl/chat_turns.jsonl",
    "markdown/ja_readme.md",
    "mixed/incident-chat",
]
_HEAD = 5000


def _corpus() -> list[tuple[str, str, str]]:
    files = {cf.name: cf for cf in corpus_files()}
    out = []
    for name in _FILES:
        cf = files[name]
        text = cf.read()[:_HEAD]
        kind = cf.kind
        if kind in ("json", "jsonl"):
            kind = "text"  # a cut-off document is no longer JSON
        out.append((name, text, kind))
    return out


async def _check(tok: ServerTokenizer, text: str, chunks: list[Any], budget: int) -> None:
    """Tiling, exact server counts, budgets, never inside a grapheme."""
    assert "".join(c.text for c in chunks) == text
    starts = grapheme_starts(text)
    pos = 0
    for c in chunks:
        assert c.start == pos and text[c.start : c.end] == c.text
        assert c.start in starts
        assert c.oversize == (c.tokens > budget)
        pos = c.end
    assert await tok.count_many([c.text for c in chunks]) == [c.tokens for c in chunks]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_every_invariant_holds_in_the_servers_tokens(llama_server: LlamaServer) -> None:
    async with Client(base_url=llama_server.url, api_key="unused") as client:
        tok = ServerTokenizer(client)
        over_locally = 0
        for budget in (16, 64, 256):
            chunker = Chunker(budget, encoding=tok)
            for name, text, kind in _corpus():
                chunks = await chunker.achunk(text, kind=kind, filename=name)
                await _check(tok, text, chunks, budget)
                assert not any(c.oversize for c in chunks), name
                # The same budget in a local encoding is not a budget in Gemma's tokens.
                local = chunk(text, budget, kind=kind, filename=name)
                sizes = await tok.count_many([c.text for c in local])
                over_locally += sum(n > budget for n in sizes)
        assert over_locally > 0


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_overlap_and_heading_trails_are_counted_by_the_server(llama_server: LlamaServer) -> None:
    files = {cf.name: cf for cf in corpus_files()}
    md = files["markdown/zh_rate_limiter_article.md"].read()[:6000]
    prose = files["prose/en_harbor_log_longform.txt"].read()[:6000]
    async with Client(base_url=llama_server.url, api_key="unused") as client:
        tok = ServerTokenizer(client)
        with_overlap = await Chunker(96, encoding=tok, overlap=24).achunk(prose, kind="text")
        assert len(with_overlap) > 2
        assert await tok.count_many([c.text for c in with_overlap]) == [c.tokens for c in with_overlap]
        assert all(c.tokens <= 96 for c in with_overlap)
        assert any(c.start < prev.end for prev, c in itertools.pairwise(with_overlap))
        trails = await Chunker(128, encoding=tok).achunk(md, kind="markdown", heading_context=True)
        assert any(c.context for c in trails)
        assert await tok.count_many([c.text for c in trails]) == [c.tokens for c in trails]
        assert all(c.tokens <= 128 for c in trails)


async def test_tokenize_adds_no_special_tokens_and_reads_their_strings_as_text(
    llama_server: LlamaServer,
) -> None:
    async with Client(base_url=llama_server.url, api_key="unused") as client:
        plain = await client.tokenize("Hello world")
        assert len(plain) == 2  # no BOS added
        special = await client.tokenize("<bos>")
        assert len(special) > 1  # the string "<bos>", not the BOS token
        assert await client.tokenize("") == []
        tok = ServerTokenizer(client)
        assert await acount_tokens("Hello <bos> world", tok) == len(
            await client.tokenize("Hello <bos> world")
        )
        # A cut inside a character: the ends stay in order, within the text.
        text = "ユーザー名 😀👍🏽 naïve"
        ends = await tok.encode_ends(text, 10)
        assert len(ends) == len(await tok.encode(text))
        assert ends == sorted(ends) and ends[-1] == 10 + len(text.encode("utf-8"))


async def test_many_counts_go_side_by_side_within_the_limit(llama_server: LlamaServer) -> None:
    in_flight = peak = 0

    class Counting(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            try:
                return await self.inner.handle_async_request(request)
            finally:
                in_flight -= 1

        async def aclose(self) -> None:
            await self.inner.aclose()

    texts = [f"Line {i}: the harbour master logged {i * 7} crates." for i in range(30)]
    async with (
        httpx2.AsyncClient(transport=Counting()) as http,
        Client(base_url=llama_server.url, api_key="unused", http_client=http) as client,
    ):
        tok = ServerTokenizer(client, concurrency=3)
        counts = await tok.count_many(texts)
        assert counts == [len(await client.tokenize(t)) for t in texts]  # in order
        assert peak == 3
        assert tok.requests == len(texts)


async def test_cancelling_achunk_stops_its_requests(llama_server: LlamaServer) -> None:
    text = corpus_files(("prose",))[3].read() * 4
    async with Client(base_url=llama_server.url, api_key="unused") as client:
        tok = ServerTokenizer(client)
        with anyio.move_on_after(0.3) as scope:
            await Chunker(24, encoding=tok).achunk(text, kind="text")
        assert scope.cancelled_caught
        sent = tok.requests
        assert sent > 0
        await anyio.wait_all_tasks_blocked()
        await anyio.sleep(0.2)  # a worker thread still running would have asked again by now
        assert tok.requests == sent


async def test_sync_entry_points_refuse_an_async_tokenizer_with_the_way_to_go() -> None:
    async with Client(base_url="http://127.0.0.1:9", api_key="unused") as client:
        tok = ServerTokenizer(client)
        with pytest.raises(TypeError, match="achunk"):
            Chunker(64, encoding=tok).chunk("some text")
        with pytest.raises(TypeError, match="acount_tokens"):
            count_tokens("some text", tok)  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            ServerTokenizer(client, concurrency=0)
        assert "k" not in repr(tok).replace("ServerTokenizer", "")  # no key, just the URL


async def test_achunk_with_a_local_encoding_equals_chunk() -> None:
    text = corpus_files(("prose",))[0].read()
    chunker = Chunker(64)
    assert await chunker.achunk(text) == chunker.chunk(text)
    many = await chunker.achunk_many([text[:500], text[500:2000], ""])
    assert many == [chunker.chunk(text[:500]), chunker.chunk(text[500:2000]), []]
    for bad in (0, True, 1.5):
        with pytest.raises(ValueError, match="concurrency"):
            await chunker.achunk_many([text], concurrency=bad)  # type: ignore[arg-type]


async def test_cancelling_achunk_with_a_local_encoding_ends_the_work() -> None:
    """The engine runs in a worker thread: it now looks for the caller's cancellation
    before each encode, so a cancelled ``achunk`` stops (it ran to the end of the text,
    20 MB a second past its deadline)."""
    text = ("word " * 200 + "\n\n") * 2000  # 2 MB
    chunker = Chunker(16)
    assert chunker.sizer is not None
    started = anyio.Event()
    seen = [0]

    def seen_text(s: str) -> None:
        seen[0] += len(s)
        if seen[0] > 200_000 and not started.is_set():
            anyio.from_thread.run_sync(started.set)

    undo = watch_encoder(chunker.sizer, seen_text)
    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:

                async def cancel_when_started() -> None:
                    await started.wait()
                    scope.cancel()

                tg.start_soon(cancel_when_started)
                await chunker.achunk(text)
    finally:
        undo()
    assert scope.cancelled_caught
    assert seen[0] < len(text) // 2, (seen[0], len(text))
    assert await chunker.achunk(text[:5000]) == chunker.chunk(text[:5000])  # and it still works


def _answering(
    answer: Any, status: int = 200, seen: list[dict[str, Any]] | None = None
) -> httpx2.AsyncClient:
    def handler(request: httpx2.Request) -> httpx2.Response:
        if seen is not None:
            seen.append(json.loads(request.content))
        body = answer(len(seen or ())) if callable(answer) else answer
        return httpx2.Response(status, json=body)

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handler))


@pytest.mark.parametrize(
    "answer",
    [
        {"tokens": "1 2 3"},
        {"tokens": [1, -2]},
        {"tokens": [1, True]},
        {"tokens": [{"id": 1, "piece": {"x": 1}}]},
        {"tokens": [{"id": 1, "piece": [300]}]},
        {"no": "tokens"},
        [1, 2, 3],
    ],
)
async def test_a_malformed_tokenize_answer_is_a_typed_error(answer: Any) -> None:
    async with Client(base_url="http://server.test", api_key="unused", http_client=_answering(answer)) as c:
        with pytest.raises(StreamProtocolError):  # a broken answer, not the server's refusal
            await ServerTokenizer(c).encode_ends("some text")


async def test_a_server_without_tokenize_says_what_is_needed() -> None:
    http = _answering({"error": {"type": "not_found_error", "message": "File Not Found"}}, 404)
    async with Client(base_url="http://server.test", api_key="unused", http_client=http) as c:
        with pytest.raises(NotFoundError, match="llama-server, vLLM"):
            await c.tokenize("text")


async def test_vllm_answers_are_learnt_from_the_first_and_then_asked_in_its_shape() -> None:
    # vLLM's /tokenize answer shape: count, max_model_len, tokens (no pieces).
    seen: list[dict[str, Any]] = []
    http = _answering({"count": 3, "max_model_len": 4096, "tokens": [11, 12, 13]}, 200, seen)
    async with Client(base_url="http://server.test/v1", api_key="unused", http_client=http) as c:
        tok = ServerTokenizer(c, model="qwen")
        assert await tok.encode_ends("abcdef", 4) == [6, 8, 10]  # spread evenly without pieces
        assert await tok.count("abcdef") == 3
    assert "content" in seen[0] and "prompt" in seen[0]
    assert seen[1] == {"prompt": "abcdef", "add_special_tokens": False, "model": "qwen"}


def test_one_tokenizer_serves_one_event_loop_after_another() -> None:
    # Its request limiter belongs to the loop it was made in: each loop gets its own.
    http = _answering({"tokens": [5, 6]})
    client = Client(base_url="http://server.test", api_key="unused", http_client=http)
    tok = ServerTokenizer(client, concurrency=2)
    counts = [anyio.run(tok.count, "ab", backend=b) for b in ("asyncio", "trio", "asyncio")]
    assert counts == [2, 2, 2] and tok.requests == 3


def test_the_bridge_remembers_counts_it_was_given() -> None:
    class Tok:
        calls = 0

        async def encode(self, text: str) -> list[int]:
            Tok.calls += 1
            return list(range(len(text.split())))

    async def main() -> list[int]:
        bridge = WorkerEncoder(Tok(), "words")

        def work() -> list[int]:
            return [bridge.count("a b c"), bridge.count("a b c"), len(bridge.encode_ends("a b", 0))]

        return await anyio.to_thread.run_sync(work)

    assert anyio.run(main) == [3, 3, 2]
    assert Tok.calls == 2


async def test_many_achunks_side_by_side_leave_the_default_threads_to_the_tokenizer() -> None:
    # Each achunk's engine waits in a worker thread for its tokenizer; the tokenizer's
    # own work may need a worker thread too (trio resolves a host name in one, a local
    # tokenizer may encode in one). Engines holding every default thread deadlocked.
    class Threaded:
        name = "threaded"

        async def encode(self, text: str) -> list[int]:
            return await anyio.to_thread.run_sync(lambda: list(range(len(text.split()))))

    chunker = Chunker(8, encoding=Threaded())
    texts = [f"text {i} " + "word " * 40 for i in range(50)]
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            for t in texts:
                tg.start_soon(chunker.achunk, t)
        many = await chunker.achunk_many(texts, concurrency=50)
    assert all(sum(c.tokens for c in cs) == len(t.split()) for cs, t in zip(many, texts, strict=True))


async def test_credentials_in_the_base_url_never_show() -> None:
    secret = "s3cret-Pass-42"
    http = _answering({"error": {"type": "not_found_error", "message": "File Not Found"}}, 404)
    async with Client(
        base_url=f"http://alice:{secret}@server.test:8080", api_key="unused", http_client=http
    ) as c:
        tok = ServerTokenizer(c, model="m")
        shown = [repr(c), repr(tok), tok.name]
        with pytest.raises(NotFoundError) as e:
            await tok.count("text")
        shown += [str(e.value), repr(e.value), e.value.message]
        for s in shown:
            assert secret not in s, s
        assert "server.test:8080" in tok.name and "alice" not in tok.name


async def test_a_llama_server_behind_a_url_learnt_as_vllm_is_asked_again() -> None:
    # One URL, other servers behind it (a router over mixed engines, a restart): a body in
    # vLLM's shape alone gets {"tokens": []} from llama-server, a count of 0.
    seen: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        seen.append(body)
        if len(seen) == 1:
            return httpx2.Response(200, json={"count": 2, "max_model_len": 99, "tokens": [5, 6]})
        if "content" not in body:
            return httpx2.Response(200, json={"tokens": []})  # what llama-server answers
        return httpx2.Response(200, json={"tokens": [7, 8, 9]})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    async with Client(base_url="http://server.test", api_key="unused", http_client=http) as c:
        assert await c.tokenize("first") == [5, 6]
        assert await c.tokenize("three tokens here") == [7, 8, 9]
        assert await c.tokenize("again") == [7, 8, 9]
    assert "content" in seen[2] and "prompt" in seen[2]
    assert "prompt" not in seen[3]  # learnt again: llama-server


async def test_texts_that_cannot_be_sent_are_refused_before_a_request() -> None:
    seen: list[dict[str, Any]] = []
    async with Client(
        base_url="http://server.test", api_key="unused", http_client=_answering({"tokens": [1]}, 200, seen)
    ) as c:
        tok = ServerTokenizer(c)
        for bad in (None, b"", 0, b"bytes"):
            with pytest.raises(TypeError):
                await tok.encode(bad)  # type: ignore[arg-type]
            with pytest.raises(TypeError):
                await tok.encode_ends(bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="lone surrogate U\\+D800 at offset 1"):
            await c.tokenize("a\ud800b")
        with pytest.raises(ValueError, match="lone surrogate"):
            await tok.encode_ends("a\ud800b")
    assert seen == []


async def test_a_huge_answer_that_is_not_json_is_cut_before_it_is_masked(monkeypatch: Any) -> None:
    import sdk.client._send

    masked: list[int] = []
    real = sdk.client._send.redact

    def redact(text: str) -> str:
        masked.append(len(text))
        return real(text)

    monkeypatch.setattr(sdk.client._send, "redact", redact)

    def handler(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=b"<html>" + b"x" * (8 << 20))

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    async with Client(base_url="http://server.test", api_key="unused", http_client=http) as c:
        with pytest.raises(StreamProtocolError, match="not JSON") as e:
            await c.tokenize("text")
    assert len(str(e.value.event)) <= 2000
    assert masked and max(masked) < 1 << 16
