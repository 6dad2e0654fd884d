"""The seam-sdk demo: the four fixes, end to end, against a real self-hosted server.

1. Chunking: every file under corpora/ (prose in many scripts, code, JSON, Markdown,
   mixed), cut at safe seams within exact budgets; a table of files, chunk counts, token
   totals, and every oversize chunk; the contract is checked as it goes.
2. Streams: llama.cpp's llama-server (Gemma 3 270M on the CPU) started on a free
   loopback port; one answer streamed through each backend (Messages API and
   OpenAI-compatible); a slow reader with a small buffer (the reader pauses, memory stays
   bounded); a reader that stops long enough for the stall policy to free the server's
   slot and resume later, with nothing lost or repeated.
3. Sessions: a conversation longer than the window, fitted on purpose with every
   elision reported; saved atomically and loaded back.
4. Scheduling: a batch ``map`` over the server's two slots while interactive requests
   arrive (they go first, pausing a batch stream when they must), per-tier latency;
   then the scheduling server (``python -m sdk.server``) in front of llama-server, with
   anthropic-sdk-python streaming through it unchanged and its Prometheus metrics.

The model is Gemma 3 270M *base*: it continues text rather than following instructions,
so the prompts here are text to continue (a list to extend, a sentence to finish).

``python examples/demo.py --chunks-only`` runs part 1 only (no server needed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sdk import Client, Session, count_tokens
from sdk.chunking import Chunker, detect_kind
from sdk.stream import FlowControl, StallPolicy

ROOT = Path(__file__).resolve().parent.parent / "corpora"
GREEDY = {"temperature": 0, "top_k": 1, "cache_prompt": False, "seed": 7}


def chunk_corpus(budgets: list[int]) -> int:
    files = sorted(p for p in ROOT.rglob("*") if p.is_file() and "_snapshots" not in p.parts)
    chunkers = {b: Chunker(b) for b in budgets}
    header = f"{'file':48} {'kind':9} {'chars':>8} " + " ".join(f"{f'@{b}':>14}" for b in budgets)
    print(header)
    print("-" * len(header))
    problems = 0
    notes: list[str] = []
    started = time.perf_counter()
    for path in files:
        text = path.read_text(encoding="utf-8")
        name = str(path.relative_to(ROOT))
        kind, _why = detect_kind(text, filename=path.name)
        cells = []
        for budget, chunker in chunkers.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                chunks = chunker.chunk(text, kind="auto", filename=path.name)
            cells.append(f"{len(chunks):>5}ch {sum(c.tokens for c in chunks):>6}t")
            if "".join(c.text for c in chunks) != text:
                problems += 1
                notes.append(f"  !! {name} @{budget}: chunks do not tile the file")
            for c in chunks:
                if c.tokens != count_tokens(c.text) or (c.tokens > budget and not c.oversize):
                    problems += 1
                    notes.append(f"  !! {name} @{budget}: bad count at offset {c.start}")
                if c.oversize:
                    notes.append(
                        f"  oversize {name} @{budget}: offset {c.start}, {c.tokens} tokens, {c.text[:24]!r}"
                    )
        print(f"{name:48} {kind:9} {len(text):>8} " + " ".join(f"{cell:>14}" for cell in cells))
    print()
    print("\n".join(notes) if notes else "No oversize chunks.")
    elapsed = time.perf_counter() - started
    print(f"{len(files)} files x {len(budgets)} budgets in {elapsed:.2f}s; {problems} problems.")
    return problems


async def streams(url: str, model: str) -> None:
    ask = [{"role": "user", "content": "Name three primary colors, one per line."}]
    for backend, base in (("messages", url), ("openai", url + "/v1")):
        async with Client(base_url=base, backend=backend) as c:
            async with c.stream(model=model, max_tokens=40, messages=ask, **GREEDY) as s:
                print(f"[{backend}] ", end="")
                async for text in s.text_deltas():
                    print(text, end="", flush=True)
            msg = await s.final_message()
            stats = s.statistics()
            print(
                f"\n  -> stop={msg.stop_reason}, {msg.usage.output_tokens} tokens out, "
                f"{stats.events_received} events, {stats.bytes_received} bytes"
            )
            counted = await c.count_tokens(model=model, messages=ask)
            print(f"  count_tokens: {counted.input_tokens} ({counted.source})")

    print("\n[slow reader] 1 KiB buffer, 0.15 s per event:")
    async with Client(base_url=url, backend="messages") as c:
        flow = FlowControl(high_water_bytes=1024)
        story = [{"role": "user", "content": "Write a short story about a lighthouse keeper."}]
        async with c.stream(model=model, max_tokens=64, messages=story, flow=flow, **GREEDY) as s:
            got = []
            async for text in s.text_deltas():
                got.append(text)
                await anyio.sleep(0.15)
        st = s.statistics()
        print(
            f"  {len(''.join(got))} chars; reader paused {st.pauses} times ({st.paused_seconds:.2f} s); "
            f"buffer high-water {st.high_water_bytes} bytes (bound 1024 + one read)"
        )

        print("\n[stall policy] the reader stops for 3 s: the buffer fills, the stall policy frees the")
        print("server's slot, and the answer resumes when the reader is back:")
        reference = await c.create(model=model, max_tokens=160, messages=story, **GREEDY)
        stall = StallPolicy(enabled=True, stall_timeout=0.5)
        async with c.stream(
            model=model, max_tokens=160, messages=story, stall=stall, flow=flow, **GREEDY
        ) as s:
            parts = []
            async for text in s.text_deltas():
                parts.append(text)
                if len(parts) == 4:
                    await anyio.sleep(3.0)
        st = s.statistics()
        resumed = "".join(parts)
        whole = "".join(b.text for b in reference.content if hasattr(b, "text"))
        print(f"  cancels={st.cancels}, resumes={st.resumes}; {len(resumed)} chars received")
        prefix = min(len(resumed), len(whole))
        same = resumed[:prefix] == whole[:prefix]
        print(f"  text equals the uninterrupted greedy answer over their common length: {same}")


async def sessions(url: str, model: str) -> None:
    async with Client(base_url=url, backend="messages") as c:
        s = Session(
            c, model=model, system="You answer in one short sentence.", context_window=460, reserve_output=64
        )
        questions = [
            "What is a lighthouse? " + "Please be brief. " * 20,
            "Who keeps a lighthouse? " + "Please be brief. " * 20,
            "Why do ships need them? " + "Please be brief. " * 20,
            "Are they still used today? " + "Please be brief. " * 20,
            "What is the tallest one? " + "Please be brief. " * 20,
        ]
        for i, q in enumerate(questions, 1):
            async with s.stream(q, max_tokens=32, **GREEDY) as r:
                answer = "".join([t async for t in r.text_deltas()])
            rep = s.last_report
            assert rep is not None
            print(
                f"  turn {i}: kept {len(rep.kept)} turns, left out {len(rep.elided)} "
                f"({rep.elided_tokens} tokens), {rep.tokens}/{rep.budget} tokens, "
                f"prefix stable: {rep.prefix_stable}; answer: {answer.strip()[:40]!r}"
            )
            if rep.marker:
                print(f"          marker sent: {rep.marker}")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "chat.json"
            version = s.save(path)
            loaded = Session.load(path, c)
            print(f"  saved version {version} atomically; loaded back {len(loaded.log)} turns")


ANIMALS = [
    "cats",
    "dogs",
    "owls",
    "bees",
    "whales",
    "ants",
    "foxes",
    "crows",
    "frogs",
    "bats",
    "moles",
    "seals",
]


async def scheduling(url: str, model: str) -> None:
    reqs = [
        {
            "model": model,
            "max_tokens": 16,
            "messages": [{"role": "user", "content": f"Facts about {a}:\n1."}],
            **GREEDY,
        }
        for a in ANIMALS
    ]
    async with Client(base_url=url) as c:
        async with anyio.create_task_group() as tg:

            async def ask(k: int) -> None:
                await anyio.sleep(0.8 * (k + 1))
                prompt = [{"role": "user", "content": "The colors of the rainbow: red, orange,"}]
                async with c.stream(
                    model=model, max_tokens=6, messages=prompt, priority="interactive", **GREEDY
                ) as s:
                    text = "".join([t async for t in s.text_deltas()])
                m = s.metrics()
                ttft = (m.ttft or 0) * 1000
                print(f"  interactive {k}: queued {m.queue_time * 1000:.0f} ms, TTFT {ttft:.0f} ms: {text!r}")

            for k in range(3):
                tg.start_soon(ask, k)
            async with c.map(reqs, priority="batch") as results:
                async for r in results:
                    m = r.metrics
                    note = f", preempted {m.preemptions}x and resumed" if m and m.preemptions else ""
                    text = r.message.text if r.message else f"error: {r.error}"
                    print(f"  batch {r.index:2}: {text[:50]!r}{note}")
        print(
            f"  slots learnt from /props: {c.scheduler.slots}; preemptions: {c.scheduler.stats().preempted}"
        )
        for tier, tm in c.metrics().items():
            if tm.ttft is not None:
                p50, p99 = tm.ttft.p50 * 1000, tm.ttft.p99 * 1000
                print(f"  {tier:11} {tm.requests:2} requests, TTFT p50 {p50:.0f} ms, p99 {p99:.0f} ms")


async def scheduling_server(url: str, model: str) -> None:
    import socket
    import subprocess

    import anthropic
    import httpx2

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sdk.server",
            "--upstream",
            url,
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=root,
    )
    served = f"http://127.0.0.1:{port}"
    try:
        async with httpx2.AsyncClient() as http:
            for _ in range(100):
                try:
                    if (await http.get(served + "/health")).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                await anyio.sleep(0.1)
            print(f"  python -m sdk.server --upstream {url} --port {port}")
            client = anthropic.AsyncAnthropic(base_url=served, api_key="unused")
            prompt = [{"role": "user", "content": "A short poem about the sea:\n"}]
            async with client.messages.stream(
                model=model, max_tokens=24, messages=prompt, extra_body=GREEDY
            ) as st:
                text = "".join([t async for t in st.text_stream])
            await client.close()
            print(f"  anthropic-sdk-python through it: {text!r}")
            metrics = (await http.get(served + "/metrics")).text
            shown = [
                ln
                for ln in metrics.splitlines()
                if ln.startswith(("seam_requests_total", "seam_slots", "seam_ttft_seconds_count"))
            ]
            print("  /metrics: " + "; ".join(shown))
    finally:
        proc.terminate()
        proc.wait()


async def live(url: str, model: str) -> None:
    print("\n== 2. Streams against llama-server ==")
    await streams(url, model)
    print("\n== 3. Sessions ==")
    await sessions(url, model)
    print("\n== 4. Scheduling: batch work and interactive requests on two slots ==")
    await scheduling(url, model)
    print("\n== 4b. The scheduling server in front of llama-server ==")
    await scheduling_server(url, model)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--budgets", default="64,256,1024", help="comma-separated token budgets")
    parser.add_argument("--chunks-only", action="store_true", help="part 1 only (no server)")
    args = parser.parse_args()
    print("== 1. Chunking corpora/ ==")
    problems = chunk_corpus([int(b) for b in args.budgets.split(",")])
    if args.chunks_only:
        return 1 if problems else 0
    from tests.llama import running_server

    print("\nStarting llama-server (Gemma 3 270M, CPU) on a free loopback port...")
    with running_server() as server:
        anyio.run(live, server.url, server.model)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
