"""One application process of a fleet test or benchmark, using the public API only.

``python -m tests.fleet.worker batch URL KEY OUT --batch-n 16 --batch-tokens 300``
runs ``Client.map(..., priority="batch", concurrency=--concurrency)`` over
``--batch-n`` list-extending prompts and writes
each result (text, output tokens, end time) to ``OUT`` as JSON.

``python -m tests.fleet.worker interactive URL KEY OUT --n 8 --interval 1``
sends ``--n`` short ``priority="interactive"`` streams, one every ``--interval``
seconds, and writes each one's time to first text (submission to the first delta), in
the order they end. ``--warmup``: the first runs alone to its end (it also loads the
tokenizer and learns the engine), the others from ``--at`` (a wall-clock time, so that
processes interleave as planned).

``both`` does the two in one process with one client, the interactive streams starting
``--delay`` seconds after the batch job (``--batch-n`` requests).

No header is set by hand: the tier travels as the SDK sends it. ``--tenant`` names a
tenant (sent by a gateway key to a scheduling server).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import orjson

from sdk import Client

GREEDY: dict[str, Any] = {"temperature": 0, "top_k": 1, "cache_prompt": False}
ANIMALS = ["cats", "dogs", "birds", "fish", "horses", "cows", "bees", "frogs"]
MODEL = "gemma-3-270m"


def batch_request(i: int, tokens: int) -> dict[str, Any]:
    """A prompt the base model extends for as long as it is let (a numbered list)."""
    animal = ANIMALS[i % len(ANIMALS)]
    return {
        "model": MODEL,
        "max_tokens": tokens,
        "messages": [{"role": "user", "content": f"A long list of facts about {animal}, number {i}:\n1."}],
        **GREEDY,
    }


def interactive_request(k: int, tokens: int) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": tokens,
        "messages": [
            {"role": "user", "content": f"The colors of the rainbow, in order (note {k}): red, orange,"}
        ],
        **GREEDY,
    }


async def batch(args: argparse.Namespace, client: Client | None = None) -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    t0 = time.monotonic()
    async with Client(base_url=args.url, api_key=args.key) if client is None else _borrowed(client) as c:
        reqs = [batch_request(i + args.offset, args.batch_tokens) for i in range(args.batch_n)]
        async with c.map(
            reqs,
            priority="batch",
            tenant=args.tenant,
            concurrency=args.concurrency,
            ordered=not args.unordered,
        ) as results:
            async for r in results:
                msg = r.message
                out.append(
                    {
                        "index": r.index + args.offset,
                        "ok": r.ok,
                        "error": None if r.error is None else f"{type(r.error).__name__}: {r.error}",
                        "text": msg.text if msg is not None else "",
                        "output_tokens": msg.usage.output_tokens if msg is not None else 0,
                        "end": time.monotonic() - t0,
                        "at": time.time(),  # the wall clock, comparable between processes
                    }
                )
        engine = c.engine.name if c.engine is not None else None
    return {"results": out, "seconds": time.monotonic() - t0, "engine": engine}


async def interactive(args: argparse.Namespace, client: Client | None = None) -> dict[str, Any]:
    ttft: list[float | None] = []
    errors: list[str] = []
    async with Client(base_url=args.url, api_key=args.key) if client is None else _borrowed(client) as c:

        async def one(k: int) -> None:
            t = time.monotonic()
            first: float | None = None
            try:
                async with c.stream(
                    priority="interactive", tenant=args.tenant, **interactive_request(k, args.tokens)
                ) as s:
                    async for _ in s.text_deltas():
                        if first is None:
                            first = time.monotonic() - t
            except Exception as e:  # recorded: the test fails on it with its text
                errors.append(f"{type(e).__name__}: {e}")
            ttft.append(first)

        first = 0
        if args.warmup:  # the first loads the tokenizer and learns the engine, alone
            await one(args.offset)
            first = 1
        if args.at is not None:
            await anyio.sleep(max(0.0, args.at - time.time()))
        async with anyio.create_task_group() as tg:
            for k in range(first, args.n):
                tg.start_soon(one, k + args.offset)
                if k + 1 < args.n:
                    await anyio.sleep(args.interval)
        engine = c.engine.name if c.engine is not None else None
    return {"ttft": ttft, "errors": errors, "engine": engine}


@asynccontextmanager
async def _borrowed(client: Client) -> AsyncIterator[Client]:
    yield client


async def both(args: argparse.Namespace) -> dict[str, Any]:
    got: dict[str, Any] = {}
    async with Client(base_url=args.url, api_key=args.key) as c, anyio.create_task_group() as tg:

        async def run_batch() -> None:
            got["batch"] = await batch(args, c)

        tg.start_soon(run_batch)
        await anyio.sleep(args.delay)
        got["interactive"] = await interactive(args, c)
    got["client_preemptions"] = c.scheduler.stats().preempted
    return got


def config(
    batch_key: str, interactive_key: str, gateway_key: str = "", weights: dict[str, float] | None = None
) -> str:
    """A scheduling server's configuration for a fleet run: a batch application's key
    (tier batch) and a web application's key whose requests are ``default`` unless they
    ask for better (up to interactive): an interactive request is one only if the SDK
    sent the tier it was given. ``gateway_key``: a batch gateway key (tenant ``gw``)
    whose end tenants have ``weights``."""
    from sdk.server import hash_key

    gateway = ""
    if gateway_key:
        gateway = f"""
[[keys]]
sha256 = "{hash_key(gateway_key)}"
tenant = "gw"
tier = "batch"
gateway = true

[tenants]
""" + "".join(f'"gw/{name}" = {w}\n' for name, w in (weights or {}).items())
    return (
        gateway
        + f"""
[server]
stall_seconds = 5.0

[[keys]]
sha256 = "{hash_key(batch_key)}"
tenant = "batch-app"
tier = "batch"

[[keys]]
sha256 = "{hash_key(interactive_key)}"
tenant = "web-app"
tier = "default"
max_tier = "interactive"
"""
    )


def spawn(mode: str, url: str, key: str, out: Path, *extra: str) -> subprocess.Popen[bytes]:
    """This module as a process of its own (an application process of the fleet)."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [sys.executable, "-m", "tests.fleet.worker", mode, url, key, str(out), *extra]
    return subprocess.Popen(cmd, cwd=root, env=env)


def collect(proc: subprocess.Popen[bytes], out: Path, timeout: float | None = None) -> dict[str, Any]:
    """A spawned worker's result, once it has exited cleanly."""
    if proc.wait(timeout) != 0:
        raise RuntimeError(f"the worker {proc.args!r} failed")
    data: dict[str, Any] = orjson.loads(out.read_bytes())
    return data


def idle_ttft(url: str, key: str, d: Path) -> float:
    """The median interactive TTFT through ``url`` with nothing else running (5 streams,
    the first, a warm-up, left out: it also loads the tokenizer and asks ``GET /v1/seam``)."""
    run = spawn(
        "interactive", url, key, d / "idle.json", "--n", "5", "--interval", "1", "--offset", "50", "--warmup"
    )
    idle = collect(run, d / "idle.json", 120)
    if idle["errors"] or idle["engine"] != "seam":
        raise RuntimeError(f"the idle run failed: {idle}")
    return float(statistics.median(idle["ttft"][1:]))


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def scrape(url: str) -> dict[str, float]:
    """A server's ``/metrics``, each sample by its name and labels."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fleet.worker")
    ap.add_argument("mode", choices=["batch", "interactive", "both"])
    ap.add_argument("url")
    ap.add_argument("key")
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=16, help="interactive max_tokens")
    ap.add_argument("--batch-n", type=int, default=16)
    ap.add_argument("--batch-tokens", type=int, default=300)
    ap.add_argument("--delay", type=float, default=4.0)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--offset", type=int, default=0, help="the first prompt's number")
    ap.add_argument("--warmup", action="store_true", help="the first interactive stream runs alone, first")
    ap.add_argument("--at", type=float, default=None, help="the wall-clock time of the next stream")
    ap.add_argument("--tenant", default=None)
    ap.add_argument("--unordered", action="store_true", help="map results as they finish")
    args = ap.parse_args(argv)
    run = {"batch": batch, "interactive": interactive, "both": both}[args.mode]
    result = anyio.run(run, args)
    Path(args.out).write_bytes(orjson.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
