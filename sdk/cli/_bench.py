"""``seam bench latency``: a workload of mixed priorities through :class:`sdk.Client`.

Requests are given tiers by ``--priority-mix`` (spread evenly through the run, not
drawn at random, so two runs send the same sequence) and sent with at most
``--concurrency`` in flight; the client's scheduler orders whatever waits among them
by tier, so a higher tier's request overtakes queued lower-tier work (and, on a
self-hosted server, may pause a preemptible stream for its slot). The table is the
client's own per-tier metrics (TTFT, TPOT, ITL, E2EL, named as in vLLM's serving
benchmark); ``--plot`` draws each request's TTFT against the time it was sent,
coloured by tier, next to each tier's TTFT distribution.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from rich.table import Table

from .._errors import SDKError
from ..client import BackendName, Client
from ..scheduler import RequestMetrics, TierMetrics

__all__ = [
    "BenchOptions",
    "BenchResult",
    "latency_table",
    "parse_mix",
    "plot_latency",
    "result_title",
    "run_latency",
    "spread",
]

# Text to continue: a small base model extends a started list sensibly, where a question
# makes it repeat the prompt or ramble.
LISTS = (
    ("fruits", "Apple"),
    ("planets", "Mercury"),
    ("vegetables", "Carrot"),
    ("sports", "Football"),
    ("metals", "Iron"),
    ("musical instruments", "Piano"),
    ("colors", "Red"),
    ("trees", "Oak"),
    ("spices", "Pepper"),
    ("shapes", "Circle"),
)


def prompt(i: int) -> str:
    """The ``i``-th request's text: the start of a list."""
    what, first = LISTS[i % len(LISTS)]
    return f"Here is a list of {what}:\n1. {first}\n2."


def parse_mix(text: str) -> dict[str, float]:
    """``interactive=0.2,batch=0.8`` -> shares that sum to 1 (raises ValueError)."""
    mix: dict[str, float] = {}
    for part in text.split(","):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"expected tier=share, got {part.strip()!r}")
        try:
            share = float(value)
        except ValueError:
            raise ValueError(f"the share of {name!r} is not a number: {value.strip()!r}") from None
        if not share >= 0 or share == float("inf"):
            raise ValueError(f"the share of {name!r} must be a finite number >= 0, got {value.strip()}")
        mix[name] = mix.get(name, 0.0) + share
    total = sum(mix.values())
    if total <= 0:
        raise ValueError("the shares add up to 0")
    return {k: v / total for k, v in mix.items() if v > 0}


def spread(n: int, mix: Mapping[str, float]) -> list[str]:
    """``n`` tiers in the proportions of ``mix``, each as evenly spaced through the run as it can be."""
    counts = dict.fromkeys(mix, 0)
    out = []
    for i in range(n):
        # The tier furthest behind its share so far; ties go to the order given.
        name = max(mix, key=lambda k: (i + 1) * mix[k] - counts[k])
        counts[name] += 1
        out.append(name)
    return out


@dataclass(frozen=True, slots=True)
class BenchOptions:
    base_url: str | None
    backend: BackendName | None
    model: str | None
    requests: int
    concurrency: int
    mix: Mapping[str, float]
    max_tokens: int
    interval: float
    sampling: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Sample:
    """One finished request: ``sent`` seconds after the run began."""

    sent: float
    metrics: RequestMetrics


@dataclass(frozen=True, slots=True)
class BenchResult:
    model: str
    slots: int | None
    seconds: float
    samples: tuple[Sample, ...]
    tiers: Mapping[str, TierMetrics]
    errors: tuple[str, ...]


async def run_latency(opts: BenchOptions, *, on_done: Callable[[], None] | None = None) -> BenchResult:
    """Send the workload; ``on_done`` is called after each request (for a progress bar)."""
    samples: list[Sample] = []
    errors: list[str] = []
    t0 = time.monotonic()  # reset when the first request is sent

    def hook(m: RequestMetrics) -> None:
        samples.append(Sample(max(0.0, time.monotonic() - t0 - m.e2el), m))

    async with Client(base_url=opts.base_url, backend=opts.backend, on_metrics=hook) as client:
        for name in opts.mix:
            client.scheduler.tiers.resolve(name)  # an unknown tier fails before anything is sent
        model = opts.model or await _first_model(client)
        tiers = spread(opts.requests, opts.mix)
        limiter = anyio.CapacityLimiter(opts.concurrency)

        async def one(i: int, tier: str) -> None:
            try:
                async with (
                    limiter,
                    client.stream(
                        model=model,
                        max_tokens=opts.max_tokens,
                        messages=[{"role": "user", "content": prompt(i)}],
                        priority=tier,
                        **opts.sampling,
                    ) as s,
                ):
                    async for _ in s.text_deltas():
                        pass
            except SDKError as e:
                errors.append(f"request {i} ({tier}): {type(e).__name__}: {e}")
            if on_done is not None:
                on_done()

        t0 = time.monotonic()
        async with anyio.create_task_group() as tg:
            for i, tier in enumerate(tiers):
                tg.start_soon(one, i, tier)
                if opts.interval:
                    await anyio.sleep(opts.interval)
                else:
                    await anyio.sleep(0)  # start them in order
        seconds = time.monotonic() - t0
        return BenchResult(
            model,
            client.scheduler.slots,
            seconds,
            tuple(sorted(samples, key=lambda s: s.sent)),
            dict(client.metrics()),
            tuple(errors),
        )


async def _first_model(client: Client) -> str:
    models = await client.models()
    if not models:
        raise SDKError("the server lists no models; pass --model")
    return models[0].id


_METRICS = ("ttft", "tpot", "itl", "e2el")


def latency_table(tiers: Mapping[str, TierMetrics], order: Sequence[str], title: str = "") -> Table:
    """Per tier: requests, errors, preemptions, tokens/s and p50/p90/p99 of each metric in ms."""
    table = Table(title=title or None, title_justify="left")
    table.add_column("tier")
    table.add_column("requests", justify="right")
    table.add_column("errors", justify="right")
    table.add_column("preempted", justify="right")
    table.add_column("tokens/s", justify="right")
    table.add_column("metric")
    for p in ("p50", "p90", "p99"):
        table.add_column(f"{p} ms", justify="right")
    names = [t for t in order if t in tiers] + [t for t in tiers if t not in order]
    for n, tier in enumerate(names):
        tm = tiers[tier]
        if n:
            table.add_section()
        for k, metric in enumerate(_METRICS):
            pct = getattr(tm, metric)
            head = (
                [tier, str(tm.requests), str(tm.errors), str(tm.preemptions), _rate(tm.tokens_per_second)]
                if k == 0
                else ["", "", "", "", ""]
            )
            cells = (
                ["-", "-", "-"]
                if pct is None
                else [f"{pct.p50 * 1000:.0f}", f"{pct.p90 * 1000:.0f}", f"{pct.p99 * 1000:.0f}"]
            )
            table.add_row(*head, metric.upper(), *cells)
    return table


def result_title(result: BenchResult) -> str:
    slots = f" ({result.slots} slots)" if result.slots else ""
    return f"{len(result.samples)} requests in {result.seconds:.1f} s to {result.model}{slots}"


def _rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


_COLORS = ("#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def plot_latency(result: BenchResult, path: str | Path, order: Sequence[str]) -> None:
    """TTFT of each request against when it was sent, by tier; and each tier's TTFT spread."""
    from matplotlib.figure import Figure  # imported only to plot: it takes a while

    tiers = [t for t in order if any(s.metrics.tier == t for s in result.samples)]
    tiers += sorted({s.metrics.tier for s in result.samples} - set(tiers))
    fig = Figure(figsize=(11, 4.6), layout="constrained")
    over_time, spread_ax = fig.subplots(1, 2, width_ratios=(3, 1))
    data: list[list[float]] = []
    for i, tier in enumerate(tiers):
        pts = [
            (s.sent, s.metrics.ttft * 1000)
            for s in result.samples
            if s.metrics.tier == tier and s.metrics.ttft is not None
        ]
        data.append([y for _, y in pts])
        if pts:
            xs, ys = zip(*pts)
            over_time.scatter(
                xs, ys, s=22, color=_COLORS[i % len(_COLORS)], label=f"{tier} ({len(pts)})", alpha=0.85
            )
    over_time.set_xlabel("sent at (s since start)")
    over_time.set_ylabel("time to first token (ms)")
    over_time.set_title(f"TTFT per request: {result.model}, {len(result.samples)} requests")
    over_time.grid(True, alpha=0.3)
    if tiers:
        over_time.legend(title="tier")
    shown = [(t, d) for t, d in zip(tiers, data) if d]
    if shown:
        parts = spread_ax.boxplot([d for _, d in shown], showfliers=True, patch_artist=True)
        for i, box in enumerate(parts["boxes"]):
            box.set_facecolor(_COLORS[tiers.index(shown[i][0]) % len(_COLORS)])
            box.set_alpha(0.6)
        spread_ax.set_xticks(range(1, len(shown) + 1), [t for t, _ in shown])
    spread_ax.set_title("TTFT by tier")
    spread_ax.set_ylabel("ms")
    spread_ax.grid(True, axis="y", alpha=0.3)
    fig.savefig(path, dpi=100)
