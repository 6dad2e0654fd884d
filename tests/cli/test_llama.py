"""``seam llama``: llama-server with the packaged model, started as a user would start it.

It prints a base URL that answers, with the chat template that makes ``/v1/messages``
work for a base model, and stops the server on Ctrl-C. Also a session through it whose
context window is learnt (``seam chat`` without ``--context-window``)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import anyio
import pexpect
import pytest

from sdk import Client
from tests.llama import interruptible

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_seam_llama_serves_the_packaged_model_until_stopped(stop: signal.Signals, tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen(
        [sys.executable, "-m", "sdk", "llama", "--port", "0", "--parallel", "1", "--context", "1024"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        preexec_fn=interruptible,
    )
    url = ""
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        m = re.match(r"llama-server: (http://127\.0\.0\.1:\d+)", line)
        assert m, line + (p.stderr.read() if p.stderr and p.poll() is not None else "")
        url = m.group(1)

        async def ask() -> tuple[str, int | None]:
            async with Client(base_url=url) as c:
                msg = await c.create(
                    model="m",
                    max_tokens=8,
                    messages=[{"role": "user", "content": "The capital of France is"}],
                    temperature=0,
                    top_k=1,
                )
                return msg.text, await c.context_window("m")

        text, window = anyio.run(ask)
        assert text.strip() and "<|im_start|>" not in text  # the template, not chatml
        assert window == 1024
    finally:
        p.send_signal(stop)
        p.wait(30)
    assert p.returncode == 0
    with pytest.raises(OSError):  # the server stopped with it (SIGTERM too)
        urllib.request.urlopen(url + "/health", timeout=5)


def test_seam_chat_learns_the_context_window(tmp_path: Path) -> None:
    from tests.llama import running_server

    with running_server(parallel=1) as server:
        env = {**os.environ, "TERM": "dumb", "NO_COLOR": "1", "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
        args = ["-m", "sdk", "chat", "--base-url", server.url, "--max-tokens", "8", "--temperature", "0"]
        child = pexpect.spawn(sys.executable, args, env=env, cwd=str(tmp_path), encoding="utf-8", timeout=120)
        child.expect(r"\n")
        child.sendline("Once upon a time")
        child.expect(r"\[context\][^\n]*of (\d+) tokens")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
