"""The scheduling server against llama-server directly, side by side in one run.

One llama-server (Gemma 3 270M on CPU, 2 slots) and one ``python -m sdk.server`` in
front of it, on loopback. Three measurements, each direct and through the server:

1. **QoS**: ``--batch-streams`` batch streams keep the slots busy (each restarts when it
   ends) while an interactive request arrives every ``--interval`` seconds; interactive
   TTFT p50/p95/p99 (through the server the batch streams carry ``seam-priority:
   batch`` and the interactive ones ``interactive``), and the batch output tokens/s.
2. **A client that stops reading** for ``--pause`` seconds after five events (its receive
   buffer is 4 KiB): the engine's decode steps during the pause (llama-server's
   ``llamacpp:n_decode_total``).
3. **The proxy's own cost**: the server process's CPU time per relayed SSE event, and
   TTFT on an idle engine, direct and through the server.

Run: ``python bench/server.py``. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdk.scheduler import Percentiles

MODEL = "gemma-3-270m"
GREEDY: dict[str, Any] = {"temperature": 0, "top_k": 1}
COUNT = [{"role": "user", "content": "The numbers from 1 to 1000: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,"}]


def decoded(engine: str) -> int:
    with urllib.request.urlopen(engine + "/metrics", timeout=10) as r:
        text = r.read().decode()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("llamacpp:n_decode_total")]
    return int(float(line.split()[-1]))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def stream(
    http: httpx2.AsyncClient, url: str, messages: list[dict[str, Any]], max_tokens: int, tier: str | None
) -> tuple[float | None, int]:
    """(seconds to the first text delta, events) of one streamed /v1/messages request."""
    body = {"model": MODEL, "max_tokens": max_tokens, "messages": messages, "stream": True, **GREEDY}
    headers = {"seam-priority": tier} if tier else {}
    t0 = time.perf_counter()
    first: float | None = None
    events = 0
    async with http.stream("POST", url + "/v1/messages", json=body, headers=headers) as r:
        async for line in r.aiter_lines():
            if line.startswith("data:"):
                events += 1
                if first is None and '"text_delta"' in line:
                    first = time.perf_counter() - t0
    return first, events


async def qos(url: str, args: argparse.Namespace, scheduled: bool) -> tuple[list[float], float]:
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=0)
    tokens = 0
    stop = asyncio.Event()
    async with httpx2.AsyncClient(timeout=600, limits=limits) as http:

        async def batch(i: int) -> None:
            nonlocal tokens
            while not stop.is_set():
                msgs = [{"role": "user", "content": f"A list of facts about animal number {i}:\n1."}]
                _, n = await stream(http, url, msgs, 64, "batch" if scheduled else None)
                tokens += max(0, n - 6)  # less the events that are not text
                i += args.batch_streams

        async def interactive(k: int) -> float | None:
            msgs = [{"role": "user", "content": f"The colors of the rainbow (note {k}): red, orange,"}]
            first, _ = await stream(http, url, msgs, 8, "interactive" if scheduled else None)
            return first

        workers = [asyncio.create_task(batch(i)) for i in range(args.batch_streams)]
        await asyncio.sleep(2.0)  # the slots fill
        t0 = time.perf_counter()
        asks = []
        for k in range(args.interactive):
            asks.append(asyncio.create_task(interactive(k)))
            await asyncio.sleep(args.interval)
        ttfts = [t for t in await asyncio.gather(*asks) if t is not None]
        elapsed = time.perf_counter() - t0
        stop.set()
        await asyncio.gather(*workers)
    return ttfts, tokens / elapsed


def pause_cost(url: str, engine: str, seconds: float) -> int:
    """Decode steps while a client with a 4 KiB receive buffer reads nothing."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps(
        {"model": MODEL, "max_tokens": 1000, "messages": COUNT, "stream": True, **GREEDY}
    ).encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    sock.sendall(
        f"POST /v1/messages HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode()
        + body
    )
    raw = b""
    with sock:
        while raw.count(b"text_delta") < 5:
            raw += sock.recv(1024)
        before = decoded(engine)
        time.sleep(seconds)
        during = decoded(engine) - before
    time.sleep(2.0)  # let the engine notice the closed connection
    return during


async def proxy_cost(url: str, pid: int | None, runs: int) -> tuple[float, float]:
    """(median idle TTFT, server CPU microseconds per relayed event)."""
    limits = httpx2.Limits(max_keepalive_connections=0)  # llama-server closes kept-alive ones
    async with httpx2.AsyncClient(timeout=120, limits=limits) as http:
        ttfts = []
        events = 0
        cpu0 = cpu_seconds(pid) if pid else 0.0
        for _ in range(runs):
            first, n = await stream(http, url, COUNT, 64, None)
            events += n
            if first is not None:
                ttfts.append(first)
        cpu = (cpu_seconds(pid) - cpu0) if pid else 0.0
    return sorted(ttfts)[len(ttfts) // 2], cpu / events * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch-streams", type=int, default=6)
    ap.add_argument("--interactive", type=int, default=20)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--pause", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    from tests.llama import free_port, running_server

    with running_server() as engine, tempfile.TemporaryDirectory() as d:
        cfg = Path(d) / "server.toml"
        cfg.write_text("[server]\nbuffer_bytes = 4096\nsocket_buffer_bytes = 4096\nstall_seconds = 1.0\n")
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sdk.server",
                "--upstream",
                engine.url,
                "--port",
                str(port),
                "--config",
                str(cfg),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        served = f"http://127.0.0.1:{port}"
        try:
            for _ in range(100):
                try:
                    with urllib.request.urlopen(served + "/health", timeout=2):
                        break
                except OSError:
                    time.sleep(0.1)
            rows = {}
            for name, url, sched in (
                ("llama-server directly", engine.url, False),
                ("through sdk.server", served, True),
            ):
                ttft, tps = asyncio.run(qos(url, args, sched))
                pause = pause_cost(url, engine.url, args.pause)
                idle, per_event = asyncio.run(proxy_cost(url, proc.pid if sched else None, args.runs))
                rows[name] = (Percentiles.of(ttft), tps, pause, idle, per_event)
        finally:
            proc.terminate()
            proc.wait()
    print(
        f"llama-server, Gemma 3 270M on CPU, 2 slots; {args.batch_streams} batch streams (64 tokens each, "
        f"restarting), an interactive request (8 tokens) every {args.interval:g} s, {args.interactive} of them; "
        f"a client pausing {args.pause:g} s with a 4 KiB receive buffer.\n"
    )
    print(
        "| path | interactive TTFT p50 | p95 | p99 | batch tokens/s | decode steps during the pause "
        "| idle TTFT | server CPU per event |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (p, tps, pause, idle, per_event) in rows.items():
        assert p is not None
        cost = f"{per_event:.0f} µs" if per_event else "-"
        print(
            f"| {name} | {p.p50 * 1000:.0f} ms | {p.p95 * 1000:.0f} ms | {p.p99 * 1000:.0f} ms | {tps:.0f} | "
            f"{pause} | {idle * 1000:.0f} ms | {cost} |"
        )


if __name__ == "__main__":
    main()
