"""One real Valkey or Redis server for the tests (the session stores, the server
replicas' shared state): Debian's ``redis-server`` or a ``valkey-server``, on a free
loopback port, with no snapshots and no append-only file. Tests that take it away
(:meth:`ValkeyServer.kill`) bring it back on the same port (:meth:`ValkeyServer.start`),
empty, as a restarted server without persistence is."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.llama import free_port


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class ValkeyServer:
    def __init__(self, binary: str, workdir: Path) -> None:
        self.binary = binary
        self.workdir = workdir
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server: on a free port the first time, on the same one after."""
        for _attempt in range(5):  # another process may take a free port before the server does
            port = self.port or free_port()
            log = self.workdir / f"server-{port}.log"
            args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            proc = subprocess.Popen(
                [self.binary, *args, "--dir", str(self.workdir), "--logfile", str(log)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
            deadline = time.monotonic() + 30
            while proc.poll() is None and time.monotonic() < deadline and not _answers_ping(port):
                time.sleep(0.05)
            if proc.poll() is None and _answers_ping(port):
                self.port, self.proc = port, proc
                return
            proc.kill()
            proc.wait()
            time.sleep(0.2)
        text = log.read_text(errors="replace") if log.exists() else ""
        raise RuntimeError(f"{self.binary} did not start on a loopback port:\n{text[-2000:]}")

    def kill(self) -> None:
        """SIGKILL: gone at once, its data with it."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


def binary() -> str | None:
    return shutil.which("valkey-server") or shutil.which("redis-server")


MISSING = (
    "these tests need a Valkey or Redis server binary and found neither valkey-server nor "
    "redis-server on PATH: `make test` installs Debian's redis-server (as root: apt-get "
    "install redis-server)"
)


@contextmanager
def running_valkey(workdir: Path) -> Iterator[ValkeyServer]:
    found = binary()
    if found is None:
        raise RuntimeError(MISSING)
    server = ValkeyServer(found, workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop()
