"""One scheduler for several processes: interactive latency and batch throughput when the
work comes from two application processes, three ways on the same workload and the same
real llama-server (2 slots), side by side in one run.

Workload: a batch job (``Client.map`` over ``--batch`` list-extending prompts of
``--batch-tokens`` tokens, concurrency ``--concurrency``) and, ``--delay`` seconds after
it starts, ``--interactive`` short interactive streams, one every ``--interval`` seconds.
The ways:

* **one process** holds all the work: one ``Client`` runs the map and the streams (its
  own scheduler preempts a batch stream for an interactive one: bench/scheduler.py's way);
* **two processes through sdk.server**: a batch process and an interactive process, each
  a plain ``Client`` pointed at ``python -m sdk.server`` in front of the engine. The
  clients learn that the server schedules and send each request's tier; no header is
  set by hand;
* **two processes direct**: the same two processes pointed at llama-server itself: each
  client schedules only its own process's requests;
* **through 1 replica / 2 replicas sharing state**: ``python -m sdk.server --state
  redis://...`` with a real Valkey/Redis server: one replica, then two replicas in front
  of the same engine, the batch process on replica 1 and the interactive one on replica 2
  (so every interactive admission takes a slot from the other replica).

Reported: interactive TTFT (submission to the first text) p50/p90/p99 and its multiple of
the idle TTFT (median of 5 on the idle engine, measured first), batch throughput (output
tokens/s until the last batch result), batch requests that failed; for the servers,
admissions per second (a resumed stream is admitted again) and, with shared state, the
round trips to Valkey per request: for admission (lease scripts, inbox messages, beats,
the quota check) and for storing the stream's events (one pipeline per batch of events).

Run: ``python bench/fleet.py`` (about 15 minutes on 2 cores). Prints a Markdown table.
``--ways replicas --repeat 2`` runs only the 2-replica way, twice (for comparing two
builds of the fleet scheduler on the same machine).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sdk.scheduler import Percentiles  # noqa: E402
from tests.fleet.worker import collect, config, scrape, spawn  # noqa: E402
from tests.llama import running_server  # noqa: E402
from tests.server.conftest import launch, serving  # noqa: E402
from tests.valkey import running_valkey  # noqa: E402

BATCH_KEY, INTERACTIVE_KEY = "fleet-batch-key-0b1d", "fleet-interactive-key-77a2"


WAYS = ("one", "server", "direct", "replica", "replicas")


def batch_args(a: argparse.Namespace) -> list[str]:
    return [
        "--batch-n", str(a.batch), "--batch-tokens", str(a.batch_tokens), "--concurrency", str(a.concurrency),
    ]  # fmt: skip


def interactive_args(a: argparse.Namespace, offset: int) -> list[str]:
    return [
        "--n", str(a.interactive), "--interval", str(a.interval), "--tokens", str(a.interactive_tokens),
        "--offset", str(offset),
    ]  # fmt: skip


def two_processes(
    url: str,
    keys: tuple[str, str],
    a: argparse.Namespace,
    d: Path,
    offset: int,
    *,
    interactive_url: str | None = None,
    servers: tuple[str, ...] = (),
) -> dict[str, Any]:
    before = [scrape(u) for u in servers]
    t0 = time.monotonic()
    pb = spawn("batch", url, keys[0], d / "batch.json", *batch_args(a))
    time.sleep(a.delay)
    pi = spawn("interactive", interactive_url or url, keys[1], d / "inter.json", *interactive_args(a, offset))
    inter = collect(pi, d / "inter.json")
    out = {"batch": collect(pb, d / "batch.json"), "interactive": inter, "seconds": time.monotonic() - t0}
    if servers:
        after = [scrape(u) for u in servers]

        def delta(name: str) -> float:
            return sum(b.get(name, 0.0) - a_.get(name, 0.0) for a_, b in zip(before, after, strict=True))

        out["admissions"] = delta("seam_admissions_total")
        out["admission_trips"] = delta('seam_fleet_round_trips_total{kind="admission"}') + delta(
            'seam_fleet_round_trips_total{kind="quota"}'
        )
        out["stream_trips"] = delta('seam_fleet_round_trips_total{kind="stream"}')
        names = {n for m in after for n in m if n.startswith("seam_requests_total{")}
        out["requests"] = sum(delta(n) for n in names)
    return out


def one_process(url: str, a: argparse.Namespace, d: Path, offset: int) -> dict[str, Any]:
    p = spawn("both", url, "none", d / "both.json", *batch_args(a), *interactive_args(a, offset),
               "--delay", str(a.delay))  # fmt: skip
    return collect(p, d / "both.json")


def row(name: str, r: dict[str, Any], idle: float) -> str:
    ttft = [t for t in r["interactive"]["ttft"] if t is not None]
    failed_i = len(r["interactive"]["ttft"]) - len(ttft)
    results = r["batch"]["results"]
    tokens = sum(x["output_tokens"] for x in results)
    failed_b = sum(not x["ok"] for x in results)
    seconds = max((x["end"] for x in results), default=0.0)
    p = Percentiles.of(ttft)
    if p is None:
        lat = "no interactive request finished | | "
    else:
        lat = " | ".join(f"{v * 1000:.0f} ms ({v / idle:.1f}x)" for v in (p.p50, p.p90, p.p99))
    admits = f"{r['admissions'] / r['seconds']:.2f}" if "admissions" in r else "–"
    per = max(1.0, r.get("requests", 0.0))
    trips = f"{r['admission_trips'] / per:.1f}" if r.get("admission_trips") else "–"
    stream = f"{r['stream_trips'] / per:.0f}" if r.get("stream_trips") else "–"
    return (
        f"| {name} | {lat} | {tokens / seconds if seconds else 0:.1f} | {failed_b} | {failed_i} "
        f"| {admits} | {trips} | {stream} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--batch-tokens", type=int, default=300)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--interactive", type=int, default=8)
    ap.add_argument("--interactive-tokens", type=int, default=16)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--delay", type=float, default=4.0)
    ap.add_argument(
        "--ways",
        nargs="+",
        choices=WAYS,
        default=list(WAYS),
        help="only these ways",
    )
    ap.add_argument("--repeat", type=int, default=1, help="run each way this many times")
    a = ap.parse_args()
    ways = set(a.ways)
    d = Path(tempfile.mkdtemp(prefix="seam-fleet-"))
    rows: list[tuple[str, dict[str, Any]]] = []
    with (
        running_server(2) as llama,
        serving([llama.url], config(BATCH_KEY, INTERACTIVE_KEY), d) as (seam_url, _log),
    ):
        idle_run = spawn("interactive", llama.url, "none", d / "idle.json", "--n", "6", "--interval", "1.0",
                          "--tokens", str(a.interactive_tokens), "--offset", "1000")  # fmt: skip
        idle_ttft = [t for t in collect(idle_run, d / "idle.json")["ttft"][1:] if t is not None]
        idle = statistics.median(idle_ttft)
        keys = (BATCH_KEY, INTERACTIVE_KEY)
        for n in range(a.repeat):
            # (each repeat's interactive prompts are others: none is answered from a cache;
            # the idle run takes 1000 on)
            o = 2000 * n
            if "one" in ways:
                rows.append(("one process, direct to llama-server", one_process(llama.url, a, d, o)))
            if "server" in ways:
                got = two_processes(seam_url, keys, a, d, o + 100, servers=(seam_url,))
                rows.append(("two processes through sdk.server", got))
            if "direct" in ways:
                got = two_processes(llama.url, ("none", "none"), a, d, o + 200)
                rows.append(("two processes, direct to llama-server", got))
        if ways & {"replica", "replicas"}:
            cfg = config(BATCH_KEY, INTERACTIVE_KEY)
            with running_valkey(d) as valkey, ExitStack() as stack:
                urls = []
                for i in range(2):
                    sub = d / f"replica-{i + 1}"
                    sub.mkdir()
                    url, _p, _log = stack.enter_context(
                        launch([llama.url], cfg, sub, first=["--state", valkey.url])
                    )
                    urls.append(url)
                    if i == 0 and "replica" in ways:
                        for n in range(a.repeat):
                            got = two_processes(url, keys, a, d, 2000 * n + 300, servers=(url,))
                            rows.append(("two processes through 1 replica with shared state", got))
                if "replicas" in ways:
                    for n in range(a.repeat):
                        got = two_processes(
                            urls[0], keys, a, d, 2000 * n + 400, interactive_url=urls[1], servers=tuple(urls)
                        )
                        rows.append(("two processes through 2 replicas (batch on 1, interactive on 2)", got))
    print(
        f"Workload: {a.batch} batch requests of {a.batch_tokens} tokens (map, concurrency {a.concurrency}), "
        f"{a.interactive} interactive streams of {a.interactive_tokens} tokens one every {a.interval:g} s from "
        f"{a.delay:g} s on; llama-server, 2 slots, CPU.\nInteractive TTFT on the idle engine: {idle * 1000:.0f} ms.\n"
    )
    print(
        "| way | TTFT p50 (x idle) | TTFT p90 (x idle) | TTFT p99 (x idle) | batch tokens/s | batch failed "
        "| interactive failed | admissions/s | Valkey round trips/request: admission | : stream storage |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r in rows:
        print(row(name, r, idle))


if __name__ == "__main__":
    main()
