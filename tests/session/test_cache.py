"""Prompt-cache breakpoints placed by the session (``Session(cache="auto")``): through the
real client against a server that simulates the hosted API's prompt cache
(:mod:`tests.session.prompt_cache`), over a 200-turn conversation whose window slides,
and against the real llama-server, whose prefix cache the report shows."""

from __future__ import annotations

import random
from typing import Any

import anyio
import orjson
import pytest

from sdk import Client
from sdk.session import CacheReport, Session, min_cacheable_tokens
from tests.client.fault_server import Reply, Request, fault_server, messages_events
from tests.llama import LlamaServer

from .prompt_cache import CacheRequestError, PromptCache, hash_of

pytestmark = pytest.mark.anyio

KEY = "sk-ant-cache-0123456789abcdef"
MODEL = "claude-sonnet-4-5"
MINIMUM = min_cacheable_tokens(MODEL)
WORDS = ["river", "stone", "lantern", "orchard", "copper", "meadow", "harbor", "violet", "thunder", "marble"]


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def handler_for(cache: PromptCache, answers: list[str]) -> Any:
    async def handler(req: Request, reply: Reply) -> None:
        body = req.json()
        try:
            usage = cache.serve(body)
        except CacheRequestError as e:
            await reply.respond(
                400, {"type": "error", "error": {"type": "invalid_request_error", "message": str(e)}}
            )
            return
        text = answers[len(cache.served) % len(answers)]
        await reply.start()
        for ev in messages_events([text], model=MODEL, usage={k: v for k, v in usage.items()}):
            await reply.chunk(ev)
        await reply.end()

    return handler


async def test_two_hundred_turns_through_a_sliding_window_read_most_of_their_input_from_the_cache(
    anyio_backend: str,
) -> None:
    rng = random.Random(11)
    cache = PromptCache(MINIMUM)
    answers = [sentence(rng, 60) for _ in range(7)]
    system = "You answer questions about the archive. " + sentence(rng, 1400)
    async with (
        fault_server(handler_for(cache, answers)) as server,
        Client(base_url=server.url, api_key=KEY) as c,
    ):
        s = Session(c, model=MODEL, system=system, context_window=24_000, reserve_output=512, cache="auto")
        s.add_user("Rules: answer in one paragraph. " + sentence(rng, 300), pin=True)
        s.add_assistant("Understood.", pin=True)
        slid = 0
        with anyio.fail_after(120):
            for i in range(200):
                async with s.stream(f"Question {i}: " + sentence(rng, rng.randint(40, 400))) as r:
                    async for _ in r.text_deltas():
                        pass
                assert r.report is not None
                slid += bool(r.report.elided)
    assert len(cache.served) == 200
    assert slid > 100  # the window slid for most of the conversation
    previous = None
    for n, served in enumerate(cache.served):
        marks = served.breakpoints
        assert 1 <= len(marks) <= 4
        # never where the prompt up to it is under the model's minimum
        assert all(served.prefix[i] >= MINIMUM for i in marks), n
        blocks = served.blocks
        system_end = max(i for i, b in enumerate(blocks) if b.where == "system")
        assert system_end in marks  # the system prompt is over the minimum
        assert len(blocks) - 1 in marks  # the newest turn
        marker = [i for i, b in enumerate(blocks) if "left out here" in str(b.data.get("text", ""))]
        if marker:
            assert marker[0] - 1 in marks  # the pinned head
        others = set(marks) - {system_end, len(blocks) - 1, *(m - 1 for m in marker)}
        if previous is not None and others:
            # the one left is where the previous request's prompt ended, unchanged
            (stable,) = others
            assert hash_of(blocks[: stable + 1]) == previous
        previous = hash_of(served.blocks)
    # nearly every request after the first reads the system prompt and the head at least
    assert sum(1 for x in cache.served[1:] if x.read > 0) == 199
    assert cache.read_fraction > 0.8
    report = s.cache_report
    assert isinstance(report, CacheReport) and report.requests == 200
    assert report.cache_read_input_tokens == sum(x.read for x in cache.served)
    assert report.cache_creation_input_tokens == sum(x.created for x in cache.served)
    assert report.read_fraction == pytest.approx(cache.read_fraction)
    assert report.saved_input_tokens > 0.6 * report.total_input_tokens
    assert s.last_breakpoints and s.last_breakpoints[-1].where == "newest"


async def test_breakpoints_follow_the_rules_for_short_prompts_thinking_and_tools() -> None:
    s = Session(None, model=MODEL, system="Be brief.", context_window=50_000, cache="auto")
    s.add_user("hi")
    params, _ = s.request()
    # nothing reaches the minimum: no breakpoint at all
    assert "cache_control" not in orjson.dumps(params).decode()
    long = sentence(random.Random(1), 1500)
    s = Session(
        None,
        model=MODEL,
        context_window=50_000,
        tools=[{"name": "search", "description": long, "input_schema": {"type": "object"}}],
        cache="auto",
    )
    s.add_user("question " + long)
    s.add_assistant([{"type": "thinking", "thinking": "hm", "signature": "x"}, {"type": "text", "text": ""}])
    s.add_user("and then?")
    params, _ = s.request()
    assert params["tools"][-1]["cache_control"] == {"type": "ephemeral"}  # no system: the tools'
    assert "cache_control" not in orjson.dumps(s.tools).decode()  # the session's own copy is untouched
    marked = [
        (m, b["type"])
        for m, msg in enumerate(params["messages"])
        for b in msg["content"]
        if "cache_control" in b
    ]
    # the assistant turn has no block the API can mark: the breakpoints skip it
    assert marked == [(2, "text")]
    assert [bp.where for bp in s.last_breakpoints] == ["tools", "newest"]
    PromptCache(MINIMUM).serve(params)  # the API would take it


async def test_cache_off_and_the_default_by_server() -> None:
    long = sentence(random.Random(2), 2000)
    for cache, hosted, want in (("off", True, False), (None, False, False), (None, True, True)):
        client: Any = type("C", (), {"hosted": hosted})()
        s = Session(client, model=MODEL, system=long, context_window=50_000, cache=cache)
        s.add_user("question")
        params, _ = s.request()
        assert ("cache_control" in orjson.dumps(params).decode()) is want, (cache, hosted)
    with pytest.raises(ValueError):
        Session(None, model=MODEL, cache="always")  # type: ignore[arg-type]


def test_the_minimum_by_model() -> None:
    assert min_cacheable_tokens("claude-sonnet-4-5-20250929") == 1024
    assert min_cacheable_tokens("claude-opus-4-5") == 4096
    assert min_cacheable_tokens("claude-haiku-4-5-20251001") == 4096
    assert min_cacheable_tokens("claude-3-5-haiku-latest") == 2048
    assert min_cacheable_tokens("some-local-model") == 4096  # unknown: the largest


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_report_shows_llama_servers_prefix_cache(llama_server: LlamaServer) -> None:
    """llama-server keeps a conversation on the slot whose cached prompt it shares most
    (its slot affinity), and reports the tokens it reused: the report adds them up."""
    async with Client(base_url=llama_server.url, api_key=KEY) as c:
        s = Session(
            c, model=llama_server.model, system="Continue the list.", context_window=1024, reserve_output=16
        )
        assert s.cache_mode == "off"  # no breakpoints for a self-hosted engine
        s.add_user("Colors: red, green, blue, yellow, purple, orange, pink, brown, black, white.", pin=True)
        s.add_assistant("More colors: gray, cyan, magenta.", pin=True)
        for i in range(3):
            async with s.stream(f"Fruits number {i}: apple, pear, plum,", max_tokens=8, temperature=0) as r:
                async for _ in r.text_deltas():
                    pass
    report = s.cache_report
    assert report.requests == 3
    assert report.cache_read_input_tokens > 0  # the later requests reused the earlier prompt
    assert 0 < report.read_fraction < 1
