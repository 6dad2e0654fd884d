"""A session against the real llama-server (Gemma 3 270M, 1024 tokens per slot): a
conversation several times longer than the server's context still works, reports its
elisions, and an answer cut off mid-stream is completed by ``resume()``."""

from __future__ import annotations

from typing import Any

import pytest

from sdk import Client
from sdk.session import Session
from tests.llama import LlamaServer

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

GREEDY: dict[str, Any] = {"temperature": 0, "top_k": 1, "seed": 7}
KEY = "sk-test-abcdefghijklmnop"
FILLER = "The river was calm and the boats were slow that day. " * 24


async def test_a_conversation_longer_than_the_servers_context(llama_server: LlamaServer) -> None:
    async with Client(base_url=llama_server.base_url("messages"), api_key=KEY) as c:
        s = Session(
            c,
            model=llama_server.model,
            system="Reply with one short sentence.",
            context_window=1024,
            reserve_output=48,
        )
        s.add_user("Remember: the password is PLUM.", pin=True)
        s.add_assistant("Understood: PLUM.", pin=True)
        for i in range(4):
            async with s.stream(f"Note {i}: {FILLER}", max_tokens=16, **GREEDY) as r:
                text = "".join([t async for t in r.text_deltas()])
            assert r.report is not None and r.report.tokens <= r.report.budget
            assert s.pending is None and s.turns[-1].text == text
            assert s.turns[-1].usage is not None and s.turns[-1].usage.total_input > 0
        assert s.log.total_tokens > 1024  # the history is over the window
        assert r.report.elided and r.report.marker is not None
        assert 0 in r.report.kept and 1 in r.report.kept  # the pinned exchange stays


async def test_resume_after_the_connection_dies_mid_answer(llama_server: LlamaServer) -> None:
    """Greedy decoding: the answer cut after a few words and resumed equals the answer
    given in one go (as far as both go), so nothing was repeated or lost at the seam."""
    greedy = {**GREEDY, "cache_prompt": False}
    question = "Continue the list: 1, 2, 3, 4, 5,"
    async with Client(base_url=llama_server.base_url("messages"), api_key=KEY) as c:
        await llama_server.idle()  # nothing else in the batch: greedy answers repeat exactly
        whole = Session(c, model=llama_server.model, context_window=1024, reserve_output=40)
        async with whole.stream(question, **greedy) as r:
            await r.final_message()
        reference = whole.turns[-1].text

        s = Session(c, model=llama_server.model, context_window=1024, reserve_output=40)
        seen: list[str] = []
        async with s.stream(question, **greedy) as r:
            async for t in r.text_deltas():
                seen.append(t)
                if len("".join(seen)) > 10:
                    break  # the consumer goes away mid-answer (the connection is closed)
        cut = len("".join(seen))
        assert s.pending is not None and s.pending.text == "".join(seen)
        await llama_server.idle()  # the answer given up on, if the server went on with it
        async with s.resume(**greedy) as r:
            async for t in r.text_deltas():
                seen.append(t)
        assert s.pending is None
        answer = s.turns[-1].text
        assert answer == "".join(seen)
        # Across the seam and well past it, the answer is the one given in one go. Much
        # further on, a near tie may break the other way: the resumed prompt is evaluated
        # as one batch and the reference token by token, and their float sums differ in
        # the last bits (seen in a full run, 45 characters in, the seam at 11).
        n = cut + 24
        assert len(answer) >= n and answer[:n] == reference[:n], (answer, reference)
