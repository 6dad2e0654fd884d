"""Bulk work two ways, side by side in one run: ``client.map(requests)`` (one stream per
request) and ``client.map(requests, via="batches")`` (message batches), on the same
requests against local servers that answer at once: the streaming server of the client
tests and the fake of the Messages API's batch endpoints (``tests/client/batch_server.py``).

Reported for each: what the work costs at the list price (its token usage, as the
servers report it, at Claude Haiku 4.5's $1 / $5 per million input / output tokens;
batches at half of that, as the API bills them), the HTTP requests the client made, the
CPU time per request (the client and the local server together: they share the
process) and the peak memory growth (``tracemalloc``) while the map ran. The servers answer at once, so wall time says nothing about a real batch
(answered within 24 hours): it is the client's own cost that is measured.

Run: ``python bench/batches.py`` (``--requests N``, default 5,000; ``--quick``: 500).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from typing import Any

import anyio

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdk import BatchPolling, Client
from tests.client.batch_server import FakeBatches
from tests.client.fault_server import Reply, Request, fault_server, messages_events

PRICE_IN, PRICE_OUT = 1.0, 5.0  # dollars per million tokens, Claude Haiku 4.5's list price
BATCH_DISCOUNT = 0.5


def requests(n: int) -> list[dict[str, Any]]:
    return [
        {
            "model": "claude-haiku-4-5",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": f"question {i}"}],
        }
        for i in range(n)
    ]


async def stream_handler(req: Request, reply: Reply) -> None:
    text = req.json()["messages"][0]["content"]
    await reply.start()
    for ev in messages_events(["answer ", "to ", text], usage={"input_tokens": 7}):  # the batch fake's usage
        await reply.chunk(ev)
    await reply.end()


async def run(via: str, n: int) -> dict[str, float]:
    fake = FakeBatches(polls_to_end=2)
    handler: Any = fake if via == "batches" else stream_handler
    async with fault_server(handler) as server:
        async with Client(base_url=server.url, api_key="sk-ant-bench-0123456789") as c:
            kw: dict[str, Any] = {"via": via} if via == "batches" else {"concurrency": 64}
            if via == "batches":
                kw["polling"] = BatchPolling(first=0.05, maximum=0.5)
            tracemalloc.start()
            cpu = time.process_time()
            tokens_in = tokens_out = ok = 0
            async with c.map(requests(n), **kw) as results:
                async for r in results:
                    if r.ok:
                        ok += 1
                        tokens_in += r.message.usage.input_tokens or 0
                        tokens_out += r.message.usage.output_tokens or 0
            cpu = time.process_time() - cpu
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        http = len(server.requests) + len(server.probes)
    price = (tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1e6
    if via == "batches":
        price *= BATCH_DISCOUNT
    return {"ok": ok, "price": price, "http": http, "cpu_ms": cpu * 1e3 / n, "peak_mb": peak / 2**20}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    n = 500 if args.quick else args.requests
    rows = {via: anyio.run(run, via, n) for via in ("streams", "batches")}
    print(f"\n### Bulk work: {n:,} requests, one stream each against message batches\n")
    print("| way | answered | price at list | HTTP requests | CPU per request | peak memory |")
    print("|---|---:|---:|---:|---:|---:|")
    for via, r in rows.items():
        label = "`c.map(requests)`" if via == "streams" else '`c.map(requests, via="batches")`'
        print(
            f"| {label} | {r['ok']:,.0f} | ${r['price']:.4f} | {r['http']:,.0f} | "
            f"{r['cpu_ms']:.2f} ms | {r['peak_mb']:.1f} MB |"
        )
    saved = 1 - rows["batches"]["price"] / rows["streams"]["price"]
    print(
        f"\nThe same answers for {saved:.0%} less; {rows['streams']['http'] / rows['batches']['http']:.0f}x fewer HTTP requests."
    )


if __name__ == "__main__":
    main()
