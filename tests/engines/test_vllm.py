"""The SDK against a real vLLM server (its OpenAI server, which also speaks the Messages
API): streamed and whole answers on ``/v1/messages`` and ``/v1/chat/completions``,
``/tokenize``, the client's priority field under ``--scheduling-policy priority``, and
the scheduling server (``python -m sdk.server``) in front of it.

These run where a vLLM server is: ``SEAM_VLLM_URL`` (its root, e.g.
``http://127.0.0.1:8000``) and ``SEAM_VLLM_MODEL`` (the served model name), as
``scripts/gpu-check.sh`` and ``scripts/vllm-cpu-check.sh`` set them after starting
one (``make test-vllm``, ``make test-vllm-cpu``); without them they are skipped. The
server must run with ``--scheduling-policy priority`` (the priority tests) and
``--enable-prompt-tokens-details`` (the prefix cache's report), as the scripts start it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from sdk import Client, ServerTokenizer
from tests.server.conftest import serving

URL = os.environ.get("SEAM_VLLM_URL", "")
MODEL = os.environ.get("SEAM_VLLM_MODEL", "")

needs_vllm = pytest.mark.skipif(
    not URL or not MODEL, reason="SEAM_VLLM_URL and SEAM_VLLM_MODEL name a vLLM server"
)
GREEDY: dict[str, Any] = {"temperature": 0}
PROMPT = [{"role": "user", "content": "Count from one to ten in words: one, two,"}]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@needs_vllm
@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["messages", "openai"])
async def test_whole_and_streamed_answers_agree(backend: str) -> None:
    base = URL if backend == "messages" else URL + "/v1"
    async with Client(base_url=base, backend=backend, api_key="none", engine="vllm") as c:  # type: ignore[arg-type]
        whole = await c.create(model=MODEL, max_tokens=24, messages=PROMPT, **GREEDY)
        async with c.stream(model=MODEL, max_tokens=24, messages=PROMPT, **GREEDY) as s:
            text = "".join([t async for t in s.text_deltas()])
        streamed = await s.final_message()
    assert whole.text and whole.text == text
    assert streamed.usage.output_tokens == whole.usage.output_tokens
    assert whole.stop_reason in ("end_turn", "max_tokens")


@needs_vllm
@pytest.mark.anyio
async def test_tokenize_counts_what_the_engine_counts() -> None:
    async with Client(base_url=URL, api_key="none", engine="vllm") as c:
        ids = await c.tokenize("one two three four", model=MODEL)
        tok = ServerTokenizer(c, model=MODEL)
        assert len(ids) == await tok.count("one two three four")
        whole = await c.create(model=MODEL, max_tokens=1, messages=PROMPT, **GREEDY)
    assert 0 < len(ids) < 10 and whole.usage.input_tokens


async def interactive_place(c: Client) -> list[str]:
    """Twelve batch requests of 120 tokens, then (two seconds on, with them on the engine
    and in its queue) one interactive request: the order they finished in."""
    done: list[str] = []
    with anyio.fail_after(900):
        async with anyio.create_task_group() as tg:

            async def batch(i: int) -> None:
                long = [{"role": "user", "content": f"Story number {i}: once upon a time, a river"}]
                await c.create(model=MODEL, max_tokens=120, messages=long, priority="batch", **GREEDY)
                done.append(f"batch{i}")

            for i in range(12):
                tg.start_soon(batch, i)
            await anyio.sleep(2.0)
            await c.create(model=MODEL, max_tokens=8, messages=PROMPT, priority="interactive", **GREEDY)
            done.append("interactive")
    return done


@needs_vllm
@pytest.mark.anyio
@pytest.mark.parametrize(
    "backend",
    [
        "openai",
        pytest.param(
            "messages",
            marks=pytest.mark.xfail(
                reason="vLLM's /v1/messages drops the priority field (vLLM 0.32)", strict=False
            ),
        ),
    ],
)
async def test_the_priority_field_is_taken_and_interactive_work_goes_first(backend: str) -> None:
    """Under ``--scheduling-policy priority`` (``--max-num-seqs 4``), twelve batch requests
    hold the engine three rounds deep; an interactive request sent after them is taken
    at the first free slot, so it ends with the first round, not after the last (where
    first-come-first-served would put it)."""
    base = URL if backend == "messages" else URL + "/v1"
    async with Client(base_url=base, backend=backend, api_key="none", engine="vllm-priority") as c:  # type: ignore[arg-type]
        done = await interactive_place(c)
    assert done.index("interactive") < 8, done


@needs_vllm
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_sessions_report_shows_vllms_prefix_cache() -> None:
    """vLLM caches prompt prefixes by itself (and says so with
    ``--enable-prompt-tokens-details``): a session's later turns read the earlier ones
    from it, and the session's report adds that up."""
    from sdk import Session

    async with Client(base_url=URL, api_key="none", engine="vllm") as c:
        s = Session(c, model=MODEL, system="Lists, continued.", context_window=2048, reserve_output=16)
        assert s.cache_mode == "off"  # no breakpoints: vLLM needs none
        s.add_user(
            "Colors: red, green, blue, yellow, purple, orange, pink, brown, black, white. " * 8, pin=True
        )
        s.add_assistant("More colors: gray, cyan, magenta.", pin=True)
        for fruit in ("apple", "pear", "plum"):
            async with s.stream(f"Fruits: {fruit},", max_tokens=8, **GREEDY) as r:
                async for _ in r.text_deltas():
                    pass
    report = s.cache_report
    assert report.requests == 3 and report.cache_read_input_tokens > 0, report


@pytest.fixture(scope="module")
def seam_in_front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = '[server]\nupstream_engine = "vllm-priority"\nslots = 4\n'
    with serving([URL], config, tmp_path_factory.mktemp("vllm-seam")) as (url, _log):
        yield url


@pytest.fixture(scope="module")
def seam_over_vllm_queue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server admitting more than the engine runs (16 against ``--max-num-seqs 4``):
    the engine's own queue orders what waits there, by the priority the server sends."""
    config = '[server]\nupstream_engine = "vllm-priority"\nslots = 16\n'
    with serving([URL], config, tmp_path_factory.mktemp("vllm-seam-16")) as (url, _log):
        yield url


@needs_vllm
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_server_passes_the_tier_on_as_vllms_priority(seam_over_vllm_queue: str) -> None:
    """As the priority test above, through the scheduling server: it admits all thirteen
    at once, so only vLLM's queue can put the interactive one first."""
    async with Client(base_url=seam_over_vllm_queue, api_key="none") as c:
        done = await interactive_place(c)
    assert done.index("interactive") < 8, done


@needs_vllm
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_scheduling_server_in_front_of_vllm(seam_in_front: str) -> None:
    import anthropic

    async with (
        Client(base_url=seam_in_front, api_key="none") as c,
        c.stream(model=MODEL, max_tokens=16, messages=PROMPT, **GREEDY) as s,
    ):
        text = "".join([t async for t in s.text_deltas()])
    assert text
    sdk_client = anthropic.Anthropic(base_url=seam_in_front, api_key="none")
    msg = sdk_client.messages.create(
        model=MODEL,
        max_tokens=16,
        messages=PROMPT,  # type: ignore[arg-type]
        extra_body=GREEDY,  # (anthropic-sdk-python 2 takes no sampling keywords)
    )
    assert msg.content and msg.content[0].type == "text" and msg.content[0].text == text


def test_the_scripts_are_executable_and_run_these_tests() -> None:
    scripts = Path(__file__).resolve().parents[2] / "scripts"
    for name in ("gpu-check.sh", "vllm-cpu-check.sh", "vllm-serve-and-test.sh"):
        assert os.access(scripts / name, os.X_OK), name
    for name in ("gpu-check.sh", "vllm-cpu-check.sh"):
        assert "scripts/vllm-serve-and-test.sh" in (scripts / name).read_text(), name
    shared = (scripts / "vllm-serve-and-test.sh").read_text()
    assert "tests/engines/test_vllm.py" in shared and "--scheduling-policy priority" in shared
