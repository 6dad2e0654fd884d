"""Several engines behind the server: a stream whose engine is killed mid-answer ends on
another engine, equal to its uninterrupted greedy output, and the dead engine's slots
stop being handed out."""

from __future__ import annotations

import os
import re
import signal
import urllib.request
import zlib
from collections.abc import Iterator
from typing import Any

import anthropic
import anyio
import orjson
import pytest

from sdk import Client
from tests.llama import LlamaServer, running_server

from .conftest import ALICE, config_text, serving

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

GREEDY: dict[str, Any] = {"temperature": 0, "top_k": 1, "cache_prompt": False, "seed": 7}
LIST = [{"role": "user", "content": "A list of facts about cats:\n1."}]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        body: bytes = r.read()
        return body


def _metric(url: str, name: str) -> float:
    text = _get(url + "/metrics").decode()
    m = re.search(rf"^{name} ([0-9.e+]+)$", text, re.M)
    assert m, f"{name} not in /metrics"
    return float(m.group(1))


def _conversation_for(index: int, engines: int) -> str:
    """A conversation id whose home (by the server's affinity) is engine ``index``."""
    n = 0
    while zlib.crc32(f"conv-{n}".encode()) % engines != index:
        n += 1
    return f"conv-{n}"


@pytest.fixture(scope="module")
def victim() -> Iterator[LlamaServer]:
    """A second engine, one slot, killed by the test."""
    with running_server(parallel=1) as server:
        yield server


@pytest.fixture(scope="module")
def pair(
    llama_server: LlamaServer, victim: LlamaServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    d = tmp_path_factory.mktemp("seam-failover")
    with serving([llama_server.url, victim.url], config_text(None), d) as (url, _log):
        yield url


async def test_a_stream_whose_engine_is_killed_ends_on_the_other(
    llama_server: LlamaServer, victim: LlamaServer, pair: str
) -> None:
    model = llama_server.model
    req: dict[str, Any] = {"model": model, "max_tokens": 120, "messages": LIST, "extra_body": GREEDY}
    slots = _metric(pair, "seam_slots")
    assert slots == 3  # 2 + 1, learnt from both engines' /props

    direct = anthropic.AsyncAnthropic(base_url=llama_server.url, api_key="unused")
    whole = await direct.messages.create(**req)
    expected = whole.content[0].text  # type: ignore[union-attr]
    await direct.close()

    proxied = anthropic.AsyncAnthropic(
        base_url=pair,
        api_key=ALICE,
        default_headers={"x-conversation-id": _conversation_for(1, 2)},  # the victim's
    )
    texts: list[str] = []
    killed = False
    with anyio.fail_after(300):
        async with proxied.messages.stream(**req) as s:
            async for t in s.text_stream:
                texts.append(t)
                if len(texts) == 5 and not killed:
                    assert victim.busy_slots() == 1  # the victim is generating this answer
                    os.kill(victim.pid, signal.SIGKILL)
                    killed = True
            final = await s.get_final_message()
    await proxied.close()
    assert killed
    assert "".join(texts) == expected  # one stream, nothing repeated or lost
    assert final.stop_reason == whole.stop_reason
    assert _metric(pair, "seam_upstream_failovers_total") == 1

    health = orjson.loads(_get(pair + "/health"))
    assert [u["healthy"] for u in health["upstreams"]] == [True, False]
    assert _metric(pair, "seam_slots") == 2  # the dead engine's slot is not handed out

    # New work goes to the live engine, the conversation's home being dead.
    async with Client(base_url=pair, api_key=ALICE) as c:
        msg = await c.create(
            model=model,
            max_tokens=8,
            messages=LIST,
            extra_headers={"x-conversation-id": _conversation_for(1, 2)},
            **GREEDY,
        )
    assert msg.content
