"""The seam-llm demo: the four fixes, end to end, with the ``seam`` command line.

1. Chunking: ``seam chunk`` over corpora/ (prose in many scripts, code, JSON,
   Markdown, mixed), cut at safe seams within exact budgets: the summary table and a
   self-contained HTML page showing every chunk; the contract (chunks tile each file,
   counts exact, within budget) is checked at three budgets as it goes. Then, once
   llama-server runs, the same budget in the served model's own tokens: chunks cut in
   ``o200k_base`` overflow in Gemma's tokenizer, chunks counted by the server do not.
2. Streams: llama.cpp's llama-server (Gemma 3 270M on the CPU) started on a free
   loopback port; one answer streamed through each backend (Messages API and
   OpenAI-compatible); a slow reader with a small buffer (the reader pauses, memory stays
   bounded); a reader that stops long enough for the stall policy to free the server's
   slot and resume later, with nothing lost or repeated.
3. Sessions: ``seam chat`` with a session file and a small window, two turns; started
   again it resumes the conversation, and when the window fills it says which turns it
   left out.
4. Scheduling: a batch ``map`` over the server's two slots while interactive requests
   arrive (they go first, pausing a batch stream when they must), with the per-tier
   latency table; ``seam bench latency`` with its chart; then ``seam serve`` (the
   scheduling server) in front of llama-server, with anthropic-sdk-python streaming
   through it unchanged and its Prometheus metrics.

The model is Gemma 3 270M *base*: it continues text rather than following instructions,
so the prompts here are text to continue (a list to extend, a sentence to finish).

``python examples/demo.py --chunks-only`` runs part 1 only (no server needed). What the
demo writes (the HTML page, the session file, the chart) goes to build/demo/.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import warnings
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rich.console import Console

from sdk import Client, ServerTokenizer, count_tokens
from sdk.chunking import Chunker
from sdk.cli._bench import latency_table, prompt
from sdk.stream import FlowControl, StallPolicy

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "corpora"
OUT = REPO / "build" / "demo"
GREEDY = {"temperature": 0, "top_k": 1, "cache_prompt": False, "seed": 7}
SAMPLING = ["--temperature", "0", "--top-k", "1"]
TIERS = ["interactive", "default", "batch"]


def seam(*args: str, stdin: str | None = None, shown: list[str] | None = None) -> int:
    """Run ``seam ARGS`` as a user would (``python -m sdk``), showing the command first."""
    print("\n$ seam " + " ".join(shown if shown is not None else args), flush=True)
    done = subprocess.run([sys.executable, "-m", "sdk", *args], cwd=REPO, input=stdin, text=True)
    return done.returncode


def check_corpus(budgets: list[int]) -> int:
    """The chunking contract over every file at each budget: tiles, exact counts, within budget."""
    files = sorted(p for p in ROOT.rglob("*") if p.is_file() and "_snapshots" not in p.parts)
    problems = 0
    oversize = 0
    started = time.perf_counter()
    for budget in budgets:
        chunker = Chunker(budget)
        for path in files:
            text = path.read_text(encoding="utf-8")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                chunks = chunker.chunk(text, kind="auto", filename=path.name)
            if "".join(c.text for c in chunks) != text:
                problems += 1
                print(f"  !! {path.relative_to(ROOT)} @{budget}: chunks do not tile the file")
            for c in chunks:
                oversize += c.oversize
                if c.tokens != count_tokens(c.text) or (c.tokens > budget and not c.oversize):
                    problems += 1
                    print(f"  !! {path.relative_to(ROOT)} @{budget}: bad count at offset {c.start}")
    elapsed = time.perf_counter() - started
    print(
        f"\nContract checked: {len(files)} files x budgets {', '.join(map(str, budgets))} "
        f"in {elapsed:.1f} s: "
        f"every file tiled exactly, every count exact; {oversize} oversize chunks (single units); "
        f"{problems} problems."
    )
    return problems


def chunking(budgets: list[int]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    page = OUT / "chunks.html"
    folders = [
        str(p.relative_to(REPO)) for p in sorted(ROOT.iterdir()) if p.is_dir() and p.name != "_snapshots"
    ]
    status = seam("chunk", *folders, "--max-tokens", "256", "--html", str(page.relative_to(REPO)))
    if status not in (0, 3):  # 3: some chunk is one unit over the budget (reported above)
        return 1
    print(f"Open {page} in a browser: every chunk is a coloured span; hover one for its size and offsets.")
    return check_corpus(budgets)


async def streams(url: str, model: str) -> None:
    ask = [{"role": "user", "content": "Here is a list of primary colors:\n1. Red\n2."}]
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
        story = [{"role": "user", "content": "Once upon a time, in a small village by the sea, there lived"}]
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
        # Where the continuation took over: the events handed out when it began (less the
        # message and block starts), as text deltas.
        resume = next((n for n in st.notes if n.kind == "resume"), None)
        cut = len("".join(parts[: max(0, resume.events_delivered - 2)])) if resume else len(resumed)
        same = next((i for i, (a, b) in enumerate(zip(resumed, whole, strict=False)) if a != b), None)
        agree = min(len(resumed), len(whole)) if same is None else same
        print(
            f"  the {cut} chars before the cut are the uninterrupted answer's: {resumed[:cut] == whole[:cut]}"
        )
        print(f"  the continuation agrees with it for {max(0, agree - cut)} more chars", end="")
        if agree < min(len(resumed), len(whole)):
            print(
                ", then takes another word:\n"
                "  llama.cpp reads a prompt (the continuation's prefill) in batches and writes an answer\n"
                "  token by token, and the two sums can break a near-tie the other way; nothing is lost\n"
                "  or repeated at the cut"
            )
        else:
            print(" (all of it)")


async def server_tokens(url: str) -> None:
    """The same budget in the served model's own tokens, counted by llama-server itself."""
    budget = 128
    async with Client(base_url=url) as c:
        tok = ServerTokenizer(c)
        for name in ("code/lib.rs", "json/openapi_petstore.json"):
            text = (ROOT / name).read_text(encoding="utf-8")
            local = Chunker(budget).chunk(text, filename=name)
            sizes = await tok.count_many([ch.text for ch in local])
            over = sum(n > budget for n in sizes)
            exact = await Chunker(budget, encoding=tok).achunk(text, filename=name)
            top = max(ch.tokens for ch in exact)
            print(
                f"  {name}: in o200k_base {len(local)} chunks, {over} over {budget} in Gemma's tokens "
                f"(largest {max(sizes)}); with ServerTokenizer {len(exact)} chunks, largest {top}"
            )
        print(f"  ({tok.requests} /tokenize requests in all)")


def chat(url: str) -> None:
    """Two runs of ``seam chat`` on one session file; the window is small on purpose."""
    session = OUT / "chat.json"
    session.unlink(missing_ok=True)
    args = ["chat", "--base-url", url, "--session", str(session.relative_to(REPO))]
    args += ["--max-tokens", "24", "--context-window", "160", "--stats", *SAMPLING]
    first = "Once upon a time, in a small village by the sea, there lived\nOne day, the boy found\n"
    seam(*args, stdin=first, shown=[*args, "<<< two lines"])
    print("\nStarted again with the same file: the conversation resumes, and when the window is")
    print("full the context report says which turns were left out (an elision marker takes their place).")
    again = "He walked along the beach and saw\nThe end of the story:\n"
    seam(*args, stdin=again, shown=[*args, "<<< two more lines"])


async def scheduling(url: str, model: str) -> None:
    reqs = [
        {
            "model": model,
            "max_tokens": 16,
            "messages": [{"role": "user", "content": prompt(i)}],
            **GREEDY,
        }
        for i in range(12)
    ]
    async with Client(base_url=url) as c:
        async with anyio.create_task_group() as tg:

            async def ask(k: int) -> None:
                await anyio.sleep(0.8 * (k + 1))
                ask = [{"role": "user", "content": "Here is a list of primary colors:\n1. Red\n2."}]
                async with c.stream(
                    model=model, max_tokens=6, messages=ask, priority="interactive", **GREEDY
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
        title = "The client's per-tier metrics (c.metrics()):"
        console = Console(highlight=False)
        if not console.is_terminal:
            console.width = 120
        console.print(latency_table(c.metrics(), TIERS, title))


def bench(url: str) -> None:
    chart = OUT / "latency.png"
    seam(
        "bench", "latency", "--base-url", url, "--requests", "10", "--concurrency", "5",
        "--max-tokens", "8", "--priority-mix", "interactive=0.3,batch=0.7", *SAMPLING,
        "--plot", str(chart.relative_to(REPO)),
    )  # fmt: skip


async def scheduling_server(url: str, model: str) -> None:
    import socket

    import anthropic
    import httpx2

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = REPO
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sdk",
            "serve",
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
            print(f"$ seam serve --upstream {url} --port {port}")
            client = anthropic.AsyncAnthropic(base_url=served, api_key="unused")
            prompt = [
                {"role": "user", "content": "Things to pack for a trip to the beach:\n1. Sunscreen\n2."}
            ]
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
    print("\n== 1b. Budgets in the served model's own tokens: ServerTokenizer ==")
    await server_tokens(url)
    print("\n== 2. Streams against llama-server ==")
    await streams(url, model)
    print("\n== 3. A chat kept in a session: seam chat ==")
    await anyio.to_thread.run_sync(chat, url)
    print("\n== 4. Scheduling: batch work and interactive requests on two slots ==")
    await scheduling(url, model)
    await anyio.to_thread.run_sync(bench, url)
    print("\n== 4b. The scheduling server in front of llama-server: seam serve ==")
    await scheduling_server(url, model)
    print(
        f"\nWritten to {OUT}: chunks.html (the chunk view), chat.json (the session), latency.png (the chart)."
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--budgets", default="64,256,1024", help="comma-separated token budgets")
    parser.add_argument("--chunks-only", action="store_true", help="part 1 only (no server)")
    args = parser.parse_args()
    print("== 1. Chunking corpora/: seam chunk ==")
    problems = chunking([int(b) for b in args.budgets.split(",")])
    if args.chunks_only:
        return 1 if problems else 0
    from tests.llama import running_server

    print("\nStarting llama-server (Gemma 3 270M, CPU) on a free loopback port...")
    with running_server() as server:
        anyio.run(live, server.url, server.model)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
