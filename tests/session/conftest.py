from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Valkey or Redis server on a free loopback port, for the whole test run
    (no snapshots, no append-only file), stopped at the end."""
    binary = shutil.which("valkey-server") or shutil.which("redis-server")
    if binary is None:
        pytest.fail(
            "the session store tests need a Valkey or Redis server binary and found neither "
            "valkey-server nor redis-server on PATH: `make test` installs Debian's redis-server "
            "(as root: apt-get install redis-server)",
            pytrace=False,
        )
    workdir: Path = tmp_path_factory.mktemp("redis")
    for _attempt in range(5):  # another process may take the free port before the server does
        port = _free_port()
        log = workdir / f"server-{port}.log"
        args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        proc = subprocess.Popen(
            [binary, *args, "--dir", str(workdir), "--logfile", str(log)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline and not _answers_ping(port):
            time.sleep(0.05)
        if proc.poll() is None and _answers_ping(port):
            break
        proc.kill()
        proc.wait()
    else:
        text = log.read_text(errors="replace") if log.exists() else ""
        pytest.fail(f"{binary} did not start on a loopback port:\n{text[-2000:]}", pytrace=False)
    try:
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
