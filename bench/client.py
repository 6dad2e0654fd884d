"""The client's own overhead against the real llama-server, side by side in one run.

Four readers of the same ``/v1/messages`` stream (Gemma 3 270M on CPU, greedy, prompt
cache on so the server's share is steady), interleaved run by run:

* raw httpx2: ``client.stream(...)`` + ``aiter_lines()``, no parsing beyond spotting the
  first ``text_delta`` line (the floor);
* the streaming core alone: ``MessageStream`` over an httpx2 response (what the client
  builds on: its reader task, bounded buffer, decoder and accumulator);
* this SDK: ``Client.stream`` -> typed events folded into the message (the client's own
  share is the difference from the row above);
* anthropic-sdk-python: ``AsyncAnthropic(base_url=...).messages.stream`` -> its events.

Reported per reader (medians over the runs): wall time to the first text delta (TTFT,
mostly the server's prompt time: compare the differences), the client process's CPU
time until that delta, and its CPU time per SSE event after it (the steady state).
Each reader is built once; every request opens a fresh loopback connection.
The server runs in another process, so process CPU time is the client's own work.

Run: ``python bench/client.py`` (``--runs N``, ``--max-tokens N``, ``--base-url URL`` to
use a running llama-server instead of starting one). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdk import Client
from sdk.stream import ContentBlockDeltaEvent, MessageStream, Upstream

PROMPT = [{"role": "user", "content": "Continue the list: 1, 2, 3, 4, 5,"}]

Sample = tuple[float, float, float, int]  # ttft wall, cpu to first delta, cpu after it, events after it
Reader = Callable[[int], Awaitable[Sample]]


def body(max_tokens: int) -> dict[str, Any]:
    return {
        "model": "gemma-3-270m",
        "max_tokens": max_tokens,
        "messages": PROMPT,
        "temperature": 0,
        "top_k": 1,
        "seed": 1,
    }


class _Clock:
    """Wall and process-CPU time at the start, at the first text delta, at the end."""

    def __init__(self) -> None:
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        self.ttft = self.cpu_first = -1.0
        self.c_first = 0.0
        self.after = 0

    def event(self, first_delta: bool) -> None:
        if self.ttft < 0:
            if first_delta:
                self.c_first = time.process_time()
                self.ttft, self.cpu_first = time.perf_counter() - self.t0, self.c_first - self.c0
        else:
            self.after += 1

    def sample(self) -> Sample:
        return self.ttft, self.cpu_first, time.process_time() - self.c_first, self.after


async def measure(url: str, runs: int, max_tokens: int) -> dict[str, list[Sample]]:
    import anthropic

    def fresh() -> httpx2.AsyncClient:
        # llama-server drops idle kept-alive connections after a few seconds, so every
        # reader opens a new loopback connection per request: the same cost for all.
        return httpx2.AsyncClient(timeout=120, limits=httpx2.Limits(max_keepalive_connections=0))

    async with (
        fresh() as http,
        fresh() as core_http,
        Client(base_url=url, api_key="unused", http_client=fresh()) as client,
        anthropic.AsyncAnthropic(
            base_url=url, api_key="unused", max_retries=0, http_client=fresh()
        ) as peer_client,
    ):

        async def raw(n: int) -> Sample:
            clock = _Clock()
            async with http.stream("POST", url + "/v1/messages", json={**body(n), "stream": True}) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data:"):
                        clock.event('"text_delta"' in line)
            return clock.sample()

        async def core(n: int) -> Sample:
            async def open_() -> Upstream:
                req = core_http.build_request("POST", url + "/v1/messages", json={**body(n), "stream": True})
                resp = await core_http.send(req, stream=True)
                return Upstream(resp.aiter_raw(), resp.aclose)

            clock = _Clock()
            async with MessageStream(open_) as s:
                async for ev in s:
                    clock.event(isinstance(ev, ContentBlockDeltaEvent))
            return clock.sample()

        async def ours(n: int) -> Sample:
            clock = _Clock()
            async with client.stream(**body(n)) as s:
                async for ev in s:
                    clock.event(isinstance(ev, ContentBlockDeltaEvent))
            return clock.sample()

        async def peer(n: int) -> Sample:
            clock = _Clock()
            b = body(n)
            core = {k: b.pop(k) for k in ("model", "max_tokens", "messages")}
            # its typed signature has no temperature/top_k/seed: they go through extra_body
            async with peer_client.messages.stream(**core, extra_body=b) as s:
                async for ev in s:
                    if ev.type in ("text", "input_json", "thinking", "signature", "citation"):
                        continue  # the helper's derived events: not on the wire
                    clock.event(ev.type == "content_block_delta")
            return clock.sample()

        readers: dict[str, Reader] = {
            "raw httpx2 (aiter_lines)": raw,
            "sdk.stream.MessageStream (no Client)": core,
            "seam-llm Client.stream": ours,
            "anthropic-sdk-python": peer,
        }
        out: dict[str, list[Sample]] = {name: [] for name in readers}
        for fn in readers.values():  # warm-up: imports, first connection, prompt cache
            await fn(max_tokens)
        for _ in range(runs):
            for name, fn in readers.items():
                out[name].append(await fn(max_tokens))
        return out


def table(results: dict[str, list[Sample]]) -> list[str]:
    rows = [
        "| reader | TTFT wall (ms, median) | CPU to first token (ms) | CPU per event (µs) | events |",
        "|---|---:|---:|---:|---:|",
    ]
    base_ttft = base_cpu = base_ev = 0.0
    for i, (name, samples) in enumerate(results.items()):
        ttft = statistics.median(s[0] for s in samples) * 1e3
        cpu_first = statistics.median(s[1] for s in samples) * 1e3
        per_event = statistics.median(s[2] / s[3] for s in samples) * 1e6
        events = samples[0][3] + 1
        if i == 0:
            base_ttft, base_cpu, base_ev = ttft, cpu_first, per_event
            rows.append(f"| {name} | {ttft:.1f} | {cpu_first:.2f} | {per_event:.1f} | {events} |")
        else:
            rows.append(
                f"| {name} | {ttft:.1f} ({ttft - base_ttft:+.1f}) | {cpu_first:.2f} ({cpu_first - base_cpu:+.2f})"
                f" | {per_event:.1f} ({per_event - base_ev:+.1f}) | {events} |"
            )
    return rows


def start_server() -> tuple[Any, str]:
    from sdk.cli._llama import start

    llama = start(parallel=1)
    return llama.proc, llama.url


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--base-url", default=None, help="a running llama-server (default: start one)")
    args = ap.parse_args()
    proc = None
    url = args.base_url
    if url is None:
        proc, url = start_server()
    try:
        results = anyio.run(measure, url, args.runs, args.max_tokens)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
    print(
        f"llama-server, Gemma 3 270M Q4_K_M, {args.max_tokens} tokens, {args.runs} interleaved runs per reader"
    )
    print("(in parentheses: the difference from raw httpx2)\n")
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
