"""Soak: hundreds of clients against a real ``python -m sdk.server`` process, then the
server must come back to idle.

Each client (:mod:`.soak_clients`) is a raw socket spoken with h11 (so it can leave at
any byte, reset the connection, stop reading with a small receive window, or send what no
HTTP library would), and a seeded ``random.Random`` picks its behaviour: a stream read to its end; a
request left while queued (some with bodies of up to 1.5 MiB); a stream left mid-way; a
stream left and reattached with ``Last-Event-ID`` (then read to its end, left again, or
left before the reattach's head), or reattached with another tenant's key; a client that
stops reading for up to twice ``send_timeout``; a head or a body dribbled and abandoned;
a whole answer of 2 MiB never read; priority escalation; gateway tenants; and malformed
requests, each of which must get its 4xx (never a 5xx).

While the clients run, ``/metrics`` is polled: no sample may ever be negative. Afterwards
the server must return to its idle values, awaited as an event (polled until equal;
``IDLE_GUARD`` only keeps a hang from stalling the run): every load gauge of
``/metrics`` (queue depth, running, and whatever else it reports: streams kept,
in-flight per upstream) as before the soak, the router's in-flight counts on ``/health``
zero, the server's asyncio task count no higher than before (:mod:`.soak_serve` reports
it), its open descriptors and RSS back near the values measured after a warm-up round
(RSS with glibc's mmap threshold fixed: see ``ALLOCATOR``), and the engine with nothing
open (the fake engine's handler threads, llama-server's slots). The server's log must
hold no traceback.

Replay: every client's behaviour is drawn from ``SEED``; run with ``SEAM_SOAK_SEED=<n>``
to replay another draw (a failure message names the seed and the client).
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from sdk.server import hash_key
from tests.llama import LlamaServer

from .http_engine import http_engine
from .soak_clients import ALICE, BOB, CAROL, FAKE_MIX, GATE, LLAMA_MIX, Behaviour, Run, clients
from .soak_serve import Process, serving_counted

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

SEED = int(os.environ.get("SEAM_SOAK_SEED", "4040"))
CLIENTS = 300  # the main round against the fake engine (after a warm-up round of WARMUP)
WARMUP = 150  # as many as the high-water marks of RSS need to be reached before it is measured
WIDTH = 48  # clients at once
IDLE_GUARD = 60.0  # seconds the server may take to come back to idle before the test fails
RSS_SLACK_KIB = 32 << 10  # what RSS may stay above its post-warm-up value (allocator noise)
FD_SLACK = 4  # descriptors above the post-warm-up count (a kept-alive engine connection)


KEYS = f"""
[[keys]]
sha256 = "{hash_key(ALICE)}"
tenant = "alice"
tier = "interactive"

[[keys]]
sha256 = "{hash_key(BOB)}"
tenant = "bob"
tier = "batch"
max_tier = "default"

[[keys]]
sha256 = "{hash_key(CAROL)}"
tenant = "carol"
requests_per_minute = 30

[[keys]]
sha256 = "{hash_key(GATE)}"
tenant = "gate"
gateway = true
"""

# Small bounds so that what the clients abandon expires within the test.
FAKE_CONFIG = (
    """
[server]
slots = 2
max_queue = 40
max_body_bytes = 2097152
buffer_bytes = 4096
socket_buffer_bytes = 4096
stall_seconds = 0.5
replay_seconds = 2.0
replay_bytes = 65536
replay_total_bytes = 8388608
replay_max_streams = 64
send_timeout = 2.0
head_timeout = 2.0
body_timeout = 2.0
keepalive_timeout = 2.0
"""
    + KEYS
)

LLAMA_CONFIG = FAKE_CONFIG.replace("max_queue = 40", "max_queue = 16")

# glibc's malloc raises its mmap threshold to the size of the largest block freed (up to
# 32 MiB), so after the first 1 MiB body every later one comes from the heap, whose freed
# space it keeps: RSS then grows with the bodies seen, whatever the server still holds
# (bodies of 0.25-1 MiB: 445 MiB after 200 clients and 678 MiB after 1,200, against a
# plateau of 145-167 MiB with the threshold fixed). A fixed threshold returns each freed
# body to the system, so RSS measures what the server holds.
ALLOCATOR = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}

# Gauges that are configuration or adaptation, not load: they need not return to a value.
# (Nor do the ``*_created`` timestamps prometheus-client writes as gauges beside counters.)
STATIC = {"seam_slots", "seam_window", "seam_upstream_healthy"}


# ---- the server's state ----------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    gauges: dict[str, float]  # load gauges of /metrics, by sample name and labels
    in_flight: tuple[int, ...]  # /health: routes open on each upstream
    tasks: int
    task_names: tuple[str, ...]
    rss_kib: int
    fds: int
    threads: int
    engine_open: int  # what the engine still has open for the server

    def summary(self) -> str:
        return (
            f"{self.tasks} tasks, RSS {self.rss_kib >> 10} MiB, {self.fds} descriptors, "
            f"{self.threads} threads"
        )

    def differences(self, idle: Snapshot) -> list[str]:
        """What keeps this from being idle (``idle``: the values measured when it was)."""
        out = [
            f"{k} = {v:g} (idle {idle.gauges.get(k, 0.0):g})"
            for k, v in sorted(self.gauges.items())
            if v != idle.gauges.get(k, 0.0)
        ]
        out += [f"{k} = 0 (idle {v:g})" for k, v in sorted(idle.gauges.items()) if k not in self.gauges and v]
        if any(self.in_flight):
            out.append(f"/health in_flight = {self.in_flight}")
        if self.tasks > idle.tasks:
            left = Counter(self.task_names) - Counter(idle.task_names)
            out.append(f"asyncio tasks = {self.tasks} (idle {idle.tasks}; more: {dict(left)})")
        if self.fds > idle.fds + FD_SLACK:
            out.append(f"descriptors = {self.fds} (idle {idle.fds} + {FD_SLACK})")
        if self.rss_kib > idle.rss_kib + RSS_SLACK_KIB and idle.rss_kib:
            out.append(
                f"RSS = {self.rss_kib >> 10} MiB (idle {idle.rss_kib >> 10} MiB + {RSS_SLACK_KIB >> 10})"
            )
        if self.engine_open:
            out.append(f"engine still open: {self.engine_open}")
        return out


def samples(text: str) -> Iterator[tuple[str, str, float]]:
    """(family type, sample key, value) for every sample of a /metrics page; the type as
    its ``# TYPE`` line says."""
    types = {
        f[2]: f[3]
        for f in (line.split() for line in text.splitlines())
        if f[:2] == ["#", "TYPE"] and len(f) > 3
    }
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            yield types.get(s.name, "sample"), f"{s.name}{{{labels}}}", s.value


def proc_status(pid: int) -> tuple[int, int, int]:
    """RSS (KiB), threads and open descriptors of a process, from /proc."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    rss = int(fields["VmRSS"].split()[0])
    threads = int(fields["Threads"])
    return rss, threads, len(os.listdir(f"/proc/{pid}/fd"))


class Watch:
    """The server under test: snapshots, and the watch for negative samples."""

    def __init__(self, proc: Process, engine_open: Callable[[], int]) -> None:
        self.proc = proc
        self.engine_open = engine_open
        self.http = httpx2.AsyncClient(base_url=proc.url, timeout=30.0)
        self.negative: list[str] = []
        self.max_depth = 0.0
        self.scrapes = 0

    async def metrics(self) -> str:
        r = await self.http.get("/metrics")
        assert r.status_code == 200
        text = r.text
        self.scrapes += 1
        for kind, key, v in samples(text):
            if v < 0:
                self.negative.append(f"{key} = {v:g} ({kind})")
            if key.startswith("seam_queue_depth{"):
                self.max_depth = max(self.max_depth, v)
        return text

    async def snapshot(self) -> Snapshot:
        text = await self.metrics()
        gauges = {
            key: v
            for kind, key, v in samples(text)
            if kind == "gauge" and key.split("{", 1)[0] not in STATIC and "_created{" not in key
        }
        health = (await self.http.get("/health")).json()
        rss, threads, fds = proc_status(self.proc.pid)
        count, *names = self.proc.tasks.read_text().splitlines()
        return Snapshot(
            gauges=gauges,
            in_flight=tuple(u["in_flight"] for u in health["upstreams"]),
            tasks=int(count),
            task_names=tuple(names),
            rss_kib=rss,
            fds=fds,
            threads=threads,
            engine_open=self.engine_open(),
        )

    async def poll(self) -> None:
        """Scrape /metrics until cancelled: every sample is checked for a negative value."""
        while True:
            await self.metrics()
            await anyio.sleep(0.1)

    async def until_idle(self, idle: Snapshot | None) -> Snapshot:
        """Wait for the idle state (``idle``: the one to return to; ``None``: the first
        state with nothing in flight, to measure it), under ``IDLE_GUARD``."""
        last: Snapshot | None = None
        try:
            with anyio.fail_after(IDLE_GUARD):
                while True:
                    last = await self.snapshot()
                    ref = idle or _zero(last)
                    if not last.differences(ref):
                        return last
                    await anyio.sleep(0.1)
        except TimeoutError:
            diff = last.differences(idle or _zero(last)) if last else ["no snapshot"]
            pytest.fail(f"not idle {IDLE_GUARD:g} s after the soak (seed {SEED}): " + "; ".join(diff))


def _zero(s: Snapshot) -> Snapshot:
    """Idle as far as load goes (for the first measurement): no gauge above zero, nothing
    in flight; the process's own numbers as they are."""
    return Snapshot(
        gauges={k: 0.0 for k in s.gauges},
        in_flight=(),
        tasks=s.tasks,
        task_names=s.task_names,
        rss_kib=s.rss_kib,
        fds=s.fds,
        threads=s.threads,
        engine_open=0,
    )


async def soak(
    watch: Watch, run: Run, mix: list[tuple[Behaviour, int]], *, warmup: int, main: int, width: int
) -> tuple[Snapshot, Snapshot]:
    """A warm-up round, the idle state after it, the main round (``/metrics`` polled all
    along), and the idle state after that; both idle states."""
    await clients(run, SEED, warmup, mix, width)
    assert not run.failures, "\n".join(run.failures)
    first = await watch.until_idle(None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch.poll)
        await clients(run, SEED + 1, main, mix, width)
        after = await watch.until_idle(first)
        tg.cancel_scope.cancel()
    assert not run.failures, f"{len(run.failures)} clients failed:\n" + "\n".join(run.failures[:30])
    assert not watch.negative, f"negative samples on /metrics (seed {SEED}): {watch.negative[:10]}"
    log = watch.proc.log.read_text(errors="replace")
    assert "Traceback" not in log, f"the server logged a traceback (seed {SEED}); see {watch.proc.log}"
    return first, after


def engine_threads() -> int:
    """Requests the fake engine (threads of this process) is still answering."""
    return sum("process_request_thread" in t.name for t in threading.enumerate())


async def test_soak_against_the_fake_engine(tmp_path: Path) -> None:
    with http_engine() as engine, serving_counted([engine], FAKE_CONFIG, tmp_path, ALLOCATOR) as proc:
        watch = Watch(proc, engine_threads)
        run = Run(proc.url, model="ok", endless="endless", max_tokens=64, max_pad=1536 << 10)
        try:
            first, after = await soak(watch, run, FAKE_MIX, warmup=WARMUP, main=CLIENTS, width=WIDTH)
        finally:
            await watch.http.aclose()
        print(f"\nseed {SEED}: {dict(sorted(run.tally.items()))}")
        print(f"idle after the warm-up: {first.summary()}; after the soak: {after.summary()}")
        print(f"/metrics scraped {watch.scrapes} times, deepest queue {watch.max_depth:g}")
    assert watch.max_depth > 0, "no request ever waited: the soak did not load the server"
    assert run.tally["reattached, read to the end"] + run.tally["reattached, left again"] > 0


async def test_soak_against_llama_server(llama_server: LlamaServer, tmp_path: Path) -> None:
    await llama_server.idle()
    with serving_counted([llama_server.url], LLAMA_CONFIG, tmp_path, ALLOCATOR) as proc:
        watch = Watch(proc, llama_server.busy_slots)
        run = Run(proc.url, model=llama_server.model, endless=llama_server.model, max_tokens=8)
        try:
            first, after = await soak(watch, run, LLAMA_MIX, warmup=4, main=20, width=4)
        finally:
            await watch.http.aclose()
        print(f"\nseed {SEED}: {dict(sorted(run.tally.items()))}")
        print(f"idle after the warm-up: {first.summary()}; after the soak: {after.summary()}")
