"""What a connection to ``python -m sdk.server`` is held to, tried with raw sockets against
the real process (a fake engine behind it, :mod:`tests.server.http_engine`): a head
dribbled in, a body that stalls, a kept-alive connection left idle, an answer nobody reads,
and more connections than the cap. Each test waits for the event (the socket closed, the
answer), never for a time; ``GUARD`` only keeps a broken server from hanging the run."""

from __future__ import annotations

import os
import resource
import select
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from sdk.server import ConfigError, ServerConfig
from sdk.server.__main__ import main
from sdk.server._serve import default_max_connections
from tests.llama import free_port, stop

from .conftest import ROOT, serving
from .http_engine import http_engine

GUARD = 30.0  # seconds a socket waits for the event before the test fails

FAST = """
[server]
slots = 1
head_timeout = 1.0
body_timeout = 1.0
keepalive_timeout = 1.0
send_timeout = 1.0
socket_buffer_bytes = 4096
buffer_bytes = 4096
stall_seconds = 0.5
"""

CAPPED = """
[server]
slots = 1
max_connections = 8
"""


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    with http_engine() as url:
        yield url


@pytest.fixture(scope="module")
def fast(engine: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server with one-second head, body, send and keep-alive timeouts."""
    with serving([engine], FAST, tmp_path_factory.mktemp("fast")) as (url, _):
        yield url


@pytest.fixture(scope="module")
def capped(engine: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server that holds at most 8 connections (and the default timeouts)."""
    with serving([engine], CAPPED, tmp_path_factory.mktemp("capped")) as (url, _):
        yield url


def connect(url: str, *, rcvbuf: int | None = None) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    s = socket.socket()
    if rcvbuf is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(GUARD)
    s.connect((host, int(port)))
    return s


def read_to_end(s: socket.socket) -> bytes:
    """Everything until the server closes the connection (a reset counts as closed)."""
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    return out


def read_response(s: socket.socket) -> bytes:
    """One response with a content-length, and nothing after it."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        assert chunk, f"closed before a response: {buf!r}"
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += s.recv(65536)
    assert len(body) == length
    return head + b"\r\n\r\n" + body


def health(url: str) -> bytes:
    with connect(url) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nhost: seam\r\n\r\n")
        return read_response(s)


def wait_for_health(url: str) -> None:
    """Until ``/health`` answers 200 (the server may still be closing what went)."""
    deadline = time.monotonic() + GUARD
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=GUARD) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            if time.monotonic() > deadline:
                raise
        time.sleep(0.05)


# ---- timeouts --------------------------------------------------------------------------


def test_a_connection_that_sends_nothing_is_closed_after_the_head_timeout(fast: str) -> None:
    with connect(fast) as s:
        assert read_to_end(s) == b""


def test_a_head_dribbled_one_byte_at_a_time_is_closed_before_it_is_complete(fast: str) -> None:
    head = b"GET /health HTTP/1.1\r\nhost: seam\r\nuser-agent: one byte at a time\r\n\r\n"
    with connect(fast) as s:
        sent = 0
        for byte in head:
            try:
                s.sendall(bytes([byte]))
            except OSError:  # reset: closed
                break
            sent += 1
            readable, _, _ = select.select([s], [], [], 0.3)  # the pace of the dribble
            if readable:
                break
        assert read_to_end(s) == b"", "the server answered a head it should have given up on"
    assert sent < len(head)


def test_a_body_that_stalls_is_answered_408_and_closed(fast: str) -> None:
    with connect(fast) as s:
        s.sendall(
            b"POST /v1/messages HTTP/1.1\r\nhost: seam\r\ncontent-type: application/json\r\n"
            b'content-length: 200\r\n\r\n{"model": "ok", "max_tok'
        )
        answer = read_to_end(s)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"timeout_error" in answer and b"connection: close" in answer.lower()


@pytest.mark.parametrize("pieces", [1, 7])
def test_a_request_head_over_16_kib_is_431_whether_it_arrives_whole_or_in_pieces(
    fast: str, pieces: int
) -> None:
    head = b"GET /health HTTP/1.1\r\nhost: seam\r\n" + b"x-pad: " + b"a" * 20_000 + b"\r\n\r\n"
    with connect(fast) as s:
        step = -(-len(head) // pieces)
        try:
            for i in range(0, len(head), step):
                s.sendall(head[i : i + step])
        except OSError:  # reset once it was answered: closed
            pass
        answer = read_to_end(s)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
    # A head under the bound, then a second one on the same connection, are answered.
    with connect(fast) as s:
        for _ in range(2):
            s.sendall(b"GET /health HTTP/1.1\r\nhost: seam\r\nx-pad: " + b"a" * 15_000 + b"\r\n\r\n")
            assert read_response(s).startswith(b"HTTP/1.1 200 ")


def test_a_kept_alive_connection_left_idle_is_closed(fast: str) -> None:
    with connect(fast) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nhost: seam\r\n\r\n")
        assert read_response(s).startswith(b"HTTP/1.1 200 ")
        s.sendall(b"GET /health HTTP/1.1\r\nhost: seam\r\n\r\n")  # kept alive: a second request
        assert read_response(s).startswith(b"HTTP/1.1 200 ")
        assert read_to_end(s) == b""


def _server_side(url: str, s: socket.socket) -> str | None:
    """The state of the server's end of ``s`` (``/proc/net/tcp``): ``01`` while the
    server holds it open; once the server has let it go, ``04`` (FIN-WAIT-1: the kernel
    alone still offers the last unsent bytes) or ``None``."""
    server_port, client_port = int(url.rsplit(":", 1)[1]), s.getsockname()[1]
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if int(f[1].split(":")[1], 16) == server_port and int(f[2].split(":")[1], 16) == client_port:
            return f[3]
    return None


def _until_let_go(url: str, s: socket.socket) -> None:
    deadline = time.monotonic() + GUARD
    while _server_side(url, s) == "01":  # ESTABLISHED
        assert time.monotonic() < deadline, "the server still holds the connection"
        time.sleep(0.05)


def _post(s: socket.socket, body: bytes) -> None:
    s.sendall(
        b"POST /v1/messages HTTP/1.1\r\nhost: seam\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux's /proc/net/tcp")
def test_an_answer_nobody_reads_does_not_hold_its_connection(fast: str) -> None:
    """A 2 MiB answer to a client that reads none of it: the app has handed it all over,
    but most of it waits in the write buffer, and a plain close waits for it forever. The
    server aborts the connection once nothing has drained for the send timeout."""
    with connect(fast, rcvbuf=4096) as s:
        _post(s, b'{"model": "big", "max_tokens": 5, "messages": [{"role": "user", "content": "go"}]}')
        _until_let_go(fast, s)


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux's /proc/net/tcp")
def test_a_client_that_reads_nothing_of_its_stream_is_let_go(fast: str) -> None:
    """An endless stream whose client never reads: the server lets the connection go."""
    with connect(fast, rcvbuf=4096) as s:
        body = b'{"model": "endless", "max_tokens": 100000, "stream": true, '
        body += b'"messages": [{"role": "user", "content": "go"}]}'
        _post(s, body)
        _until_let_go(fast, s)


# ---- the connection cap ----------------------------------------------------------------


def test_an_idle_flood_takes_turns_and_health_still_answers(capped: str) -> None:
    """20 connections that send nothing, against a cap of 8: each new one takes the place
    of the longest-idle, so ``/health`` is answered while the flood holds its sockets."""
    with ExitStack() as stack:
        flood = [stack.enter_context(connect(capped)) for _ in range(20)]
        assert health(capped).startswith(b"HTTP/1.1 200 ")
        assert read_to_end(flood[0]) == b""  # the longest idle went first


def test_over_the_cap_with_every_connection_busy_a_new_one_gets_503(capped: str) -> None:
    """8 requests whose bodies have not arrived (each head seen: the server asked for the
    body with 100 Continue) fill the cap; a ninth connection is answered 503 and closed,
    and once the eight go the server answers again."""
    with ExitStack() as stack:
        busy = [stack.enter_context(connect(capped)) for _ in range(8)]
        for s in busy:
            s.sendall(
                b"POST /v1/messages HTTP/1.1\r\nhost: seam\r\ncontent-type: application/json\r\n"
                b"content-length: 200\r\nexpect: 100-continue\r\n\r\n"
            )
            assert s.recv(100).startswith(b"HTTP/1.1 100 ")
        with connect(capped) as extra:
            answer = read_to_end(extra)
        assert answer.startswith(b"HTTP/1.1 503 "), answer
        assert b"retry-after: 1" in answer.lower()
    wait_for_health(capped)


def test_the_default_cap_leaves_half_the_descriptors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 4096))
    assert default_max_connections() == 512
    assert ServerConfig().max_connections is None  # the default is derived when serving


@contextmanager
def _serving_with_descriptors(upstream: str, limit: int, d: Path) -> Iterator[str]:
    """``python -m sdk.server`` (default limits) in a process allowed ``limit`` descriptors."""
    port = free_port()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    log = d / "server.log"
    cmd = [sys.executable, "-m", "sdk.server", "--port", str(port), "--upstream", upstream]
    with log.open("ab") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard)),
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url)
        yield url
    finally:
        stop(proc)


def test_more_idle_connections_than_descriptors_do_not_silence_health(engine: str, tmp_path: Path) -> None:
    """The attack as found, scaled down: a process allowed 128 descriptors, 160 idle
    connections. The default cap (64) keeps descriptors free and ``/health`` answers."""
    with _serving_with_descriptors(engine, 128, tmp_path) as url, ExitStack() as stack:
        for _ in range(160):
            stack.enter_context(connect(url))
        assert health(url).startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize(
    "setting",
    [
        {"head_timeout": 0},
        {"body_timeout": -1.0},
        {"keepalive_timeout": float("inf")},
        {"max_connections": 0},
        {"max_connections": 2.5},
    ],
)
def test_a_limit_out_of_range_is_a_config_error(setting: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match=next(iter(setting))):
        ServerConfig.from_mapping({"server": setting})


def test_a_limit_flag_overrides_the_configuration_and_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--upstream", "http://127.0.0.1:9", "--head-timeout", "0"]) == 2
    assert "head_timeout" in capsys.readouterr().err
