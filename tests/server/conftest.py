"""The scheduling server as a real process (``python -m sdk.server``) in front of the real
llama-server, with a configuration of two tenants."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from sdk.server import hash_key
from tests.llama import LlamaServer, free_port, stop

ROOT = Path(__file__).resolve().parents[2]
ALICE = "alice-key-7f3a9c"  # interactive tenant
BOB = "bob-key-41d2e8"  # batch tenant: may not ask for interactive
CAROL = "carol-key-90b1"  # a quota of two requests a minute


@dataclass(frozen=True)
class Served:
    url: str
    upstream: LlamaServer
    log: Path


def config_text(slots: int | None) -> str:
    """Three keys; ``slots`` (``None``: learnt from the engines' ``/props``)."""
    line = "" if slots is None else f"slots = {slots}"
    return f"""
[server]
{line}
max_body_bytes = 65536
buffer_bytes = 4096
socket_buffer_bytes = 4096
stall_seconds = 1.0

[[keys]]
sha256 = "{hash_key(ALICE)}"
tenant = "alice"
tier = "interactive"

[[keys]]
sha256 = "{hash_key(BOB)}"
tenant = "bob"
tier = "batch"
max_tier = "default"

[[keys]]
sha256 = "{hash_key(CAROL)}"
tenant = "carol"
requests_per_minute = 2
tokens_per_minute = 100000
"""


@contextmanager
def launch(
    upstreams: list[str],
    config: str,
    d: Path,
    *,
    module: str = "sdk.server",
    first: Sequence[str] = (),
    env: dict[str, str] | None = None,
    ready: Callable[[], bool] = lambda: True,
) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """``python -m <module> <first...> --port ... --config ... --upstream ...`` (the
    scheduling server, or a module that serves it), healthy and ``ready``: its URL,
    process and log; stopped on exit."""
    cfg = d / "server.toml"
    cfg.write_text(config)
    log = d / "server.log"
    port = free_port()
    environ = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", module, *first, "--port", str(port), "--config", str(cfg)]
    for u in upstreams:
        cmd += ["--upstream", u]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=environ, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited at start-up; see {log}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as r:
                    if r.status == 200 and ready():
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not become healthy; see {log}")
            time.sleep(0.1)
        yield url, proc, log
    finally:
        stop(proc)


@contextmanager
def serving(upstreams: list[str], config: str, d: Path) -> Iterator[tuple[str, Path]]:
    """``python -m sdk.server`` in front of ``upstreams``, healthy; its URL and log."""
    with launch(upstreams, config, d) as (url, _proc, log):
        yield url, log


@pytest.fixture(scope="session")
def served(llama_server: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One request at a time on the engine (slots = 1): the engine's arithmetic then does
    not depend on what shares its batch, so greedy outputs can be compared exactly."""
    d = tmp_path_factory.mktemp("seam-server")
    with serving([llama_server.url], config_text(1), d) as (url, log):
        yield Served(url, llama_server, log)
