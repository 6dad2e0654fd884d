"""Interactive latency and batch throughput under load: the real llama-server (2 slots),
three ways on the same workload, side by side in one run.

Workload: a saturating batch job (``--batch`` requests, each a list for the base model to
extend, ``--batch-tokens`` tokens) submitted at once, and one interactive request every
``--interval`` seconds while the batch job runs (a short sentence to continue,
``--interactive-tokens`` tokens, streamed). The three ways:

* **unscheduled**: plain ``asyncio.gather`` over raw httpx2 streams, the batch behind a
  semaphore of ``--semaphore`` requests, interactive requests sent straight away (the
  server's own queue decides: first come, first served);
* **LiteLLM Router** with its ``priority`` argument and the deployment capped at the
  server's slot count (``bench/_litellm_router.py``);
* **seam-llm**: ``Client.map(..., priority="batch")`` for the batch job and
  ``Client.stream(..., priority="interactive")`` for the rest; the client learns the
  slot count from ``/props`` and preempts a batch stream for an interactive request.

Reported: interactive TTFT (submission to the first text) p50/p99, against the same
request's TTFT on an idle server (median of 5, measured first); batch throughput
(requests/s and output tokens/s, until the last batch request ends) as a share of the
unscheduled run; preemptions. Targets: interactive TTFT p99 at most 1.5x idle; batch
throughput at least 90% of unscheduled.

Run: ``python bench/scheduler.py`` (``--base-url URL`` to use a running llama-server,
which must have 2 slots). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import httpx2
import orjson

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdk import Client
from sdk.scheduler import DEFAULT_TIERS, Percentiles, Scheduler

MODEL = "gemma-3-270m"
GREEDY: dict[str, Any] = {"temperature": 0, "top_k": 1}
ANIMALS = ["cats", "dogs", "birds", "fish", "horses", "cows", "bees", "frogs"]


def batch_messages(n: int) -> list[list[dict[str, Any]]]:
    return [
        [{"role": "user", "content": f"A list of facts about {ANIMALS[i % len(ANIMALS)]}, number {i}:\n1."}]
        for i in range(n)
    ]


def interactive_messages(k: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"The colors of the rainbow, in order (note {k}): red, orange,"}]


class Result:
    def __init__(self) -> None:
        self.ttft: list[float] = []
        self.batch_done = 0
        self.batch_tokens = 0
        self.batch_seconds = 0.0
        self.preemptions = 0
        self.failed = 0  # requests that never succeeded (interactive or batch)
        self.cpu = 0.0  # the client process's CPU seconds for the run


async def arrivals(interval: float, done: asyncio.Event, send: Callable[[int], Awaitable[None]]) -> None:
    """One interactive request every ``interval`` s until the batch job is done."""
    tasks: list[asyncio.Task[None]] = []
    k = 0
    while not done.is_set():
        try:
            await asyncio.wait_for(done.wait(), interval)
        except TimeoutError:
            tasks.append(asyncio.create_task(send(k)))
            k += 1
    await asyncio.gather(*tasks)


# ---- raw httpx2 ---------------------------------------------------------------------------


async def raw_stream(
    http: httpx2.AsyncClient, url: str, messages: list[dict[str, Any]], max_tokens: int
) -> tuple[float | None, int]:
    """Stream one /v1/messages request; (seconds to the first text delta, output tokens)."""
    body = {"model": MODEL, "max_tokens": max_tokens, "messages": messages, "stream": True, **GREEDY}
    t0 = time.perf_counter()
    first: float | None = None
    out = 0
    async with http.stream("POST", url + "/v1/messages", content=orjson.dumps(body)) as r:
        async for line in r.aiter_lines():
            if first is None and '"text_delta"' in line:
                first = time.perf_counter() - t0
            if line.startswith("data:") and '"message_delta"' in line:
                usage = orjson.loads(line[5:]).get("usage") or {}
                out = int(usage.get("output_tokens") or 0)
    return first, out


async def idle_ttft(url: str, tokens: int) -> float:
    limits = httpx2.Limits(max_keepalive_connections=0)
    async with httpx2.AsyncClient(timeout=120, limits=limits) as http:
        samples = []
        for k in range(6):
            first, _ = await raw_stream(http, url, interactive_messages(k), tokens)
            assert first is not None
            samples.append(first)
    return statistics.median(samples[1:])  # the first warms the server up


async def unscheduled(url: str, args: argparse.Namespace) -> Result:
    res = Result()
    done = asyncio.Event()
    sem = asyncio.Semaphore(args.semaphore)
    # A fresh connection per request: llama-server closes kept-alive connections after a
    # few requests, and a bare client does not retry the request that meets the closed one.
    limits = httpx2.Limits(max_connections=None, max_keepalive_connections=0)
    async with httpx2.AsyncClient(timeout=600, limits=limits) as http:

        async def one_batch(messages: list[dict[str, Any]]) -> None:
            async with sem:
                try:
                    _, out = await raw_stream(http, url, messages, args.batch_tokens)
                except httpx2.HTTPError:
                    res.failed += 1
                    return
            res.batch_done += 1
            res.batch_tokens += out

        async def one_interactive(k: int) -> None:
            try:
                first, _ = await raw_stream(http, url, interactive_messages(k), args.interactive_tokens)
            except httpx2.HTTPError:
                res.failed += 1
                return
            if first is not None:
                res.ttft.append(first)

        async def batch_job() -> None:
            t0 = time.perf_counter()
            await asyncio.gather(*(one_batch(m) for m in batch_messages(args.batch)))
            res.batch_seconds = time.perf_counter() - t0
            done.set()

        await asyncio.gather(batch_job(), arrivals(args.interval, done, one_interactive))
    return res


async def seam(url: str, args: argparse.Namespace, *, preempt: bool = True) -> Result:
    res = Result()
    done = asyncio.Event()
    tiers = [t if preempt else replace(t, preemptible=False) for t in DEFAULT_TIERS]
    async with Client(base_url=url, scheduler=Scheduler(tiers)) as c:

        async def one_interactive(k: int) -> None:
            t0 = time.perf_counter()
            async with c.stream(
                model=MODEL,
                max_tokens=args.interactive_tokens,
                messages=interactive_messages(k),
                priority="interactive",
                **GREEDY,
            ) as s:
                first = None
                async for _ in s.text_deltas():
                    if first is None:
                        first = time.perf_counter() - t0
            if first is not None:
                res.ttft.append(first)

        async def batch_job() -> None:
            t0 = time.perf_counter()
            reqs = [
                {"model": MODEL, "max_tokens": args.batch_tokens, "messages": m, **GREEDY}
                for m in batch_messages(args.batch)
            ]
            async with c.map(reqs, concurrency=args.semaphore) as results:
                async for r in results:
                    if r.ok and r.message is not None:
                        res.batch_done += 1
                        res.batch_tokens += r.message.usage.output_tokens or 0
            res.batch_seconds = time.perf_counter() - t0
            done.set()

        await asyncio.gather(batch_job(), arrivals(args.interval, done, one_interactive))
        res.preemptions = c.scheduler.stats().preempted
    return res


async def litellm(url: str, args: argparse.Namespace) -> Result | str:
    try:
        from _litellm_router import litellm_router_run  # type: ignore[import-not-found]
    except ImportError as e:
        return f"not run: {e}"
    try:
        out = await litellm_router_run(
            url + "/v1",
            MODEL,
            batch_messages(args.batch),
            [interactive_messages(k) for k in range(10_000)],
            max_tokens=args.batch_tokens,
            interactive_tokens=args.interactive_tokens,
            slots=2,
            interval=args.interval,
        )
    except Exception as e:  # report why, keep the other rows
        return f"not run: {type(e).__name__}: {e}"
    res = Result()
    res.ttft = list(out["interactive_ttft"])
    res.batch_done = int(out["batch_done"])
    res.batch_seconds = float(out["batch_seconds"])
    res.batch_tokens = int(out["batch_tokens"])
    res.failed = int(out["batch_failed"]) + int(out["interactive_failed"])
    return res


async def timed(run: Awaitable[Result | str]) -> Result | str:
    cpu = time.process_time()
    r = await run
    if isinstance(r, Result):
        r.cpu = time.process_time() - cpu
    return r


def row(name: str, r: Result | str, idle: float, base: Result | None) -> str:
    if isinstance(r, str):
        return f"| {name} | {r} | | | | | | | | |"
    p = Percentiles.of(r.ttft)
    rps = r.batch_done / r.batch_seconds if r.batch_seconds else 0.0
    tps = r.batch_tokens / r.batch_seconds if r.batch_seconds else 0.0
    share = ""
    if base is not None and base.batch_seconds:
        share = f"{100 * rps / (base.batch_done / base.batch_seconds):.0f}%"
    if p is None:
        return (
            f"| {name} | no interactive request finished | | | {rps:.2f} | {tps:.0f} | {share} | "
            f"| {r.failed} | {r.cpu:.1f} |"
        )
    return (
        f"| {name} | {p.count} | {p.p50 * 1000:.0f} ms ({p.p50 / idle:.1f}x) | "
        f"{p.p99 * 1000:.0f} ms ({p.p99 / idle:.1f}x) | {rps:.2f} | {tps:.0f} | {share} | {r.preemptions} "
        f"| {r.failed} | {r.cpu:.1f} |"
    )


async def main_async(args: argparse.Namespace) -> None:
    url = args.base_url
    stop = None
    if url is None:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
        from tests.llama import running_server

        cm = running_server()
        server = cm.__enter__()
        url, stop = server.url, cm
    try:
        idle = await idle_ttft(url, args.interactive_tokens)
        results: list[tuple[str, Result | str]] = []
        base = await timed(unscheduled(url, args))
        results.append(("unscheduled (gather + semaphore)", base))
        results.append(("LiteLLM Router, priority", await timed(litellm(url, args))))
        results.append(("seam-llm scheduler", await timed(seam(url, args))))
        results.append(("seam-llm, batch not preemptible", await timed(seam(url, args, preempt=False))))
    finally:
        if stop is not None:
            stop.__exit__(None, None, None)
    print(
        f"Workload: {args.batch} batch requests of {args.batch_tokens} tokens at once, one interactive "
        f"request ({args.interactive_tokens} tokens) every {args.interval:g} s; llama-server, 2 slots, CPU.\n"
        f"Interactive TTFT on an idle server: {idle * 1000:.0f} ms.\n"
    )
    print(
        "| way | interactive requests | TTFT p50 (x idle) | TTFT p99 (x idle) | batch req/s "
        "| batch tokens/s | batch vs unscheduled | preemptions | failed requests | client CPU s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in results:
        print(row(name, r, idle, base))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", default=None)
    ap.add_argument("--batch", type=int, default=40)
    ap.add_argument("--batch-tokens", type=int, default=32)
    ap.add_argument("--interactive-tokens", type=int, default=8)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--semaphore", type=int, default=8)
    args = ap.parse_args()
    sys.path.insert(0, os.path.dirname(__file__))
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
