"""A client that goes away leaves no slot generating (real processes, a real llama-server).

On llama-server the client keeps each stream by conversation id, so a dropped
connection can be replayed; such a stream goes on generating after its connection
closes. So:

- a client interrupted (Ctrl-C) stops its kept stream on the way out;
- a client killed outright cannot; through the scheduling server its stream is
  stopped by the server (a stream nobody reads is paused by backpressure, then expires
  after ``replay_seconds``);
- a session's default ``max_tokens`` is bounded (at most 1024), which bounds what a
  killed client direct to llama-server leaves behind.

The engine's work is counted in its decode steps (``llamacpp:n_decode_total``), not timed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sdk import Session
from sdk.server import hash_key
from tests.fleet.worker import scrape
from tests.llama import LlamaServer, interruptible
from tests.server.conftest import launch

ROOT = Path(__file__).resolve().parents[2]
KEY = "abandon-key-3c8e1f"
# Far more than is read before the client goes: running on, the engine would decode up
# to its slot's window (1024 here, less the prompt; the session learns the window from
# llama-server, or from the scheduling server, which passes on its engines').
MAX_TOKENS = 1500

CHILD = """
import sys, anyio
from sdk import Client, Session

async def main() -> None:
    async with Client(base_url=sys.argv[1], api_key=sys.argv[2]) as c:
        s = Session(c, model="m")
        async with s.stream(
            "A long list of facts about the moon:\\n1.",
            max_tokens=int(sys.argv[3]),
            extra_body={"ignore_eos": True},  # llama-server: generate to max_tokens, whatever comes
        ) as r:
            async for text in r.text_deltas():
                print(text, end="", flush=True)

anyio.run(main)
"""


def decodes(llama: LlamaServer) -> float:
    return scrape(llama.url)["llamacpp:n_decode_total"]


def run_until_streaming(url: str, key: str) -> subprocess.Popen[bytes]:
    """A client process streaming a long answer, once it has printed some of it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-c", CHILD, url, key, str(MAX_TOKENS)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=ROOT,
        preexec_fn=interruptible,
    )
    assert p.stdout is not None
    got = b""
    while len(got) < 100:
        piece = p.stdout.read1(100)
        assert piece, "the client ended before it streamed"
        got += piece
    return p


def wait_idle(llama: LlamaServer) -> None:
    while llama.busy_slots():  # the test's own timeout bounds this
        time.sleep(0.1)


def test_an_interrupted_client_stops_its_kept_stream_on_llama_server(llama_server: LlamaServer) -> None:
    wait_idle(llama_server)
    before = decodes(llama_server)
    p = run_until_streaming(llama_server.url, "unused")
    assert p.poll() is None  # still streaming: ignore_eos holds it to max_tokens
    p.send_signal(signal.SIGINT)
    assert p.wait(60) != 0
    wait_idle(llama_server)
    assert decodes(llama_server) - before < 400


def test_a_killed_client_of_the_scheduling_server_leaves_no_slot_generating(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    config = f"""
[server]
stall_seconds = 1.0
replay_seconds = 3.0

[[keys]]
sha256 = "{hash_key(KEY)}"
tenant = "app"
"""
    with launch([llama_server.url], config, tmp_path) as (url, _proc, _log):
        wait_idle(llama_server)
        before = decodes(llama_server)
        p = run_until_streaming(url, KEY)
        p.kill()
        p.wait(60)
        wait_idle(llama_server)
        assert decodes(llama_server) - before < 400
        # kept for a reattach, then expired: nothing is held for a client that is gone
        while scrape(url)['seam_streams{client="gone"}'] or scrape(url)['seam_streams{client="attached"}']:
            time.sleep(0.2)


def test_a_sessions_default_answer_is_bounded() -> None:
    s = Session(None, model="m", context_window=32_768)
    assert s.reserve_output == 1024
    assert Session(None, model="m", context_window=2_048).reserve_output == 512
