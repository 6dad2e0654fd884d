"""The SDK against a real vLLM server (its OpenAI server, which also speaks the Messages
API): streamed and whole answers on ``/v1/messages`` and ``/v1/chat/completions``,
``/tokenize``, the client's priority field under ``--scheduling-policy priority``, and
the scheduling server (``python -m sdk.server``) in front of it.

These run where a vLLM server is: ``SEAM_VLLM_URL`` (its root, e.g.
``http://127.0.0.1:8000``) and ``SEAM_VLLM_MODEL`` (the served model name), as
``scripts/gpu-check.sh`` sets them after starting one (``make test-vllm`` runs them);
without them they are skipped. The server must run with ``--scheduling-policy
priority`` for the priority tests.
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


@needs_vllm
@pytest.mark.anyio
async def test_the_priority_field_is_taken_and_interactive_work_goes_first() -> None:
    """Under ``--scheduling-policy priority`` with long batch streams holding the engine,
    an interactive request is answered before the batch streams end."""
    async with Client(base_url=URL, api_key="none", engine="vllm-priority") as c:
        done: list[str] = []
        with anyio.fail_after(600):
            async with anyio.create_task_group() as tg:

                async def batch(i: int) -> None:
                    long = [{"role": "user", "content": f"Write a long story number {i} about a river."}]
                    await c.create(model=MODEL, max_tokens=400, messages=long, priority="batch", **GREEDY)
                    done.append(f"batch{i}")

                for i in range(4):
                    tg.start_soon(batch, i)
                await anyio.sleep(1.0)  # (the batch streams are running on the engine)
                await c.create(model=MODEL, max_tokens=8, messages=PROMPT, priority="interactive", **GREEDY)
                done.append("interactive")
    assert done.index("interactive") < 4, done


@pytest.fixture(scope="module")
def seam_in_front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = '[server]\nupstream_engine = "vllm-priority"\nslots = 4\n'
    with serving([URL], config, tmp_path_factory.mktemp("vllm-seam")) as (url, _log):
        yield url


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
    msg = sdk_client.messages.create(model=MODEL, max_tokens=16, messages=PROMPT, temperature=0)  # type: ignore[arg-type]
    assert msg.content and msg.content[0].type == "text" and msg.content[0].text == text


def test_the_gpu_script_is_executable_and_runs_these_tests() -> None:
    script = Path(__file__).resolve().parents[2] / "scripts" / "gpu-check.sh"
    assert os.access(script, os.X_OK)
    text = script.read_text()
    assert "tests/engines/test_vllm.py" in text and "--scheduling-policy priority" in text
