"""The client's scheduler against the real llama-server (2 slots): a batch map with
interactive requests arriving, preemption with an exact greedy resume, and a killed map
that restarts from its checkpoint."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from sdk import Client, RequestMetrics
from sdk.scheduler import Decisions, Scheduler, Ticket
from tests.llama import LlamaServer

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

GREEDY: dict[str, Any] = {"temperature": 0, "top_k": 1, "cache_prompt": False, "seed": 7}
ROOT = Path(__file__).resolve().parents[2]
ANIMALS = ["cats", "dogs", "birds", "fish", "horses", "cows", "bees", "frogs"]


def batch_requests(model: str, n: int, max_tokens: int = 12) -> list[dict[str, Any]]:
    """Text the base model continues: a list to extend."""
    return [
        {
            "model": model,
            "max_tokens": max_tokens,
            "messages": [
                {
                    "role": "user",
                    "content": f"A list of facts about {ANIMALS[i % len(ANIMALS)]}, number {i}:\n1.",
                }
            ],
            **GREEDY,
        }
        for i in range(n)
    ]


class Recording(Scheduler):
    """Checks, at every admission, that no batch request overtakes an interactive one that
    was submitted while the batch request waited."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.queued: dict[int, Ticket] = {}
        self.ahead: dict[int, set[int]] = {}  # interactive id -> batch ids queued at its arrival
        self.overtaken: list[tuple[Ticket, Ticket]] = []
        self.interactive_admitted = 0

    def submit(self, now: float, **kw: Any) -> Ticket:
        t = super().submit(now, **kw)
        if t.tier.name == "interactive":
            self.ahead[t.id] = {b.id for b in self.queued.values() if b.tier.name == "batch"}
        self.queued[t.id] = t
        return t

    def resume(self, ticket: Ticket, now: float) -> None:
        super().resume(ticket, now)
        self.queued[ticket.id] = ticket

    def requeue(self, ticket: Ticket, now: float) -> None:
        super().requeue(ticket, now)
        self.queued[ticket.id] = ticket

    def cancel(self, ticket: Ticket, now: float) -> None:
        super().cancel(ticket, now)
        self.queued.pop(ticket.id, None)

    def poll(self, now: float) -> Decisions:
        d = super().poll(now)
        for t in d.admit:
            self.queued.pop(t.id, None)
            if t.tier.name == "interactive":
                self.ahead.pop(t.id, None)
                self.interactive_admitted += 1
            elif t.tier.name == "batch":
                self.overtaken += [(self.queued[i], t) for i, queued in self.ahead.items() if t.id in queued]
        return d


async def test_batch_map_with_interactive_requests_arriving(llama_server: LlamaServer) -> None:
    sched = Recording(aging=600)  # no aging exception within this test, however slow the machine
    finished: list[RequestMetrics] = []
    n = 40
    reqs = batch_requests(llama_server.model, n)
    interactive: list[str] = []
    async with Client(base_url=llama_server.url, scheduler=sched, on_metrics=finished.append) as c:
        with anyio.fail_after(600):
            async with anyio.create_task_group() as tg:

                async def ask(i: int) -> None:
                    msg = await c.create(
                        model=llama_server.model,
                        max_tokens=6,
                        messages=[{"role": "user", "content": f"Colors of the rainbow, part {i}: red,"}],
                        priority="interactive",
                        **GREEDY,
                    )
                    interactive.append(msg.text)

                async def arrivals() -> None:
                    for i in range(5):
                        await anyio.sleep(1.0)
                        tg.start_soon(ask, i)

                tg.start_soon(arrivals)
                async with c.map(reqs, concurrency=8) as results:
                    out = [r async for r in results]
        assert c.scheduler.slots == 2  # learnt from /props
        preempted = [r for r in out if r.metrics is not None and r.metrics.preemptions]

    assert [r.index for r in out] == list(range(n))
    assert all(r.ok for r in out), [r.error for r in out if not r.ok]
    assert len(interactive) == 5
    # every interactive request was admitted before each batch request queued at its arrival
    assert sched.interactive_admitted == 5 and not sched.overtaken
    assert all(m.preemptions == 0 for m in finished if m.tier == "interactive")
    assert sched.stats().preempted >= 1 and preempted  # and every preempted stream completed
    assert len([m for m in finished if m.tier == "interactive"]) == 5


async def test_a_preempted_stream_resumes_equal_to_its_uninterrupted_greedy_output(
    llama_server: LlamaServer,
) -> None:
    """One request on the engine at a time (the client's own slot count is 1), so the
    engine's arithmetic does not depend on what else shares its batch: the preempted
    batch stream, continued by prefill, must end exactly as it does uninterrupted."""
    (req,) = batch_requests(llama_server.model, 1, max_tokens=40)
    sched = Scheduler(slots=1, min_run=0)
    async with Client(base_url=llama_server.url, scheduler=sched) as c:
        whole = await c.create(**req)
        texts: list[str] = []
        with anyio.fail_after(300):
            async with anyio.create_task_group() as tg:
                some = anyio.Event()

                async def batch() -> None:
                    async with c.stream(**req, priority="batch") as s:
                        async for t in s.text_deltas():
                            texts.append(t)
                            if len(texts) == 5:
                                some.set()
                        stats.append(s.statistics())
                        metrics.append(s.metrics())

                stats: list[Any] = []
                metrics: list[RequestMetrics] = []
                tg.start_soon(batch)
                await some.wait()
                urgent = await c.create(
                    model=llama_server.model,
                    max_tokens=4,
                    messages=[{"role": "user", "content": "Days of the week: Monday,"}],
                    priority="interactive",
                    **GREEDY,
                )
    assert urgent.text
    assert stats[0].preemptions == 1 and stats[0].resumes == 1 and metrics[0].preemptions == 1
    assert "".join(texts) == whole.text


async def test_a_killed_map_restarts_from_its_checkpoint(llama_server: LlamaServer, tmp_path: Path) -> None:
    path = tmp_path / "map.jsonl"
    n = 10
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.client.map_worker",
            llama_server.url,
            llama_server.model,
            str(path),
            str(n),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    done = 0
    while done < 4:
        line = child.stdout.readline()
        assert line and line != "done\n", "the child ended early"
        done += 1
    child.send_signal(signal.SIGKILL)
    child.wait()
    saved = len(path.read_bytes().splitlines())
    assert saved >= 4
    sent: list[RequestMetrics] = []
    reqs = batch_requests(llama_server.model, n)
    async with Client(base_url=llama_server.url, on_metrics=sent.append) as c:
        with anyio.fail_after(300):
            async with c.map(reqs, checkpoint=path, concurrency=2) as results:
                out = [r async for r in results]
        n_sent = len(sent)
        again = await c.create(**reqs[0])
    assert [r.index for r in out] == list(range(n)) and all(r.ok for r in out)
    restored = [r for r in out if r.from_checkpoint]
    assert len(restored) == saved
    assert n_sent == n - saved  # nothing finished before the kill was sent again
    assert out[0].message is not None and out[0].message.text == again.text
