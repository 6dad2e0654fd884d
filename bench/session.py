"""Per-turn cost of fitting a growing conversation to a context window, side by side.

A conversation grows to 1,000 turns (~1M tokens, turns of 100-2,500 tokens) and, after
every user turn, the history is fitted to the input budget of a 200k window:

* this SDK: ``Session`` (tokenizes the new turn once, then fits with running sums and
  renders the request: what a real request costs the client);
* LiteLLM ``trim_messages`` on the same messages (re-tokenizes the history on every
  call, and shortens a message by cutting out its middle);
* a naive trimmer written here, clearly not a library: re-count every message on every
  request with the same tokenizer as ours, drop the oldest until it fits.

Prompt caching: every request of ours is also served by a simulation of the hosted
API's prompt cache (``tests/session/prompt_cache.py``: at most four breakpoints, a
20-block lookback, the model's minimum length; ``claude-sonnet-4-5``'s 1,024 tokens) with
the breakpoints the session places (``cache="auto"``), side by side with the same
requests carrying one breakpoint on their last block only (what top-level automatic
caching does) and with none, with a system prompt of about 2,000 tokens: the fraction of input tokens that would be cache reads,
and the saving in plain input tokens (reads cost a tenth, writes a quarter more).

The contenders are timed at checkpoints (LiteLLM and the naive trimmer once per
checkpoint, being slow); ours is timed on every request and reported as the median of
the requests just before each checkpoint. The last table says what each one kept.

Run: ``python bench/session.py`` (``--quick`` for 300 turns and a 32k window).
LiteLLM is optional (``pip install litellm``); it is imported with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` so its import does not fetch the price list, and
its tokenizer files ship inside the wheel.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdk import count_tokens
from sdk.session import Session, min_cacheable_tokens
from tests.session.prompt_cache import PromptCache

_PROSE = (
    "the seam holds while the stream flows and every token counts because the window is finite "
    "so a careful client keeps what matters pins the rules and says what it left out when the "
    "conversation grows past what fits into one request data model cache prefix budget answer "
    "question tool result summary marker history resume cursor version file atomic rename"
)
WORDS = _PROSE.split(" ")


def make_turns(n: int, seed: int = 11) -> list[tuple[str, str]]:
    """(role, text) pairs, alternating user/assistant, 100-2,500 words each."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randint(100, 2500)
        out.append(("user" if i % 2 == 0 else "assistant", f"turn {i}: " + " ".join(rng.choices(WORDS, k=k))))
    return out


def naive_trim(messages: list[dict[str, str]], budget: int) -> list[dict[str, str]]:
    """Baseline written for this benchmark: count everything again, drop the oldest."""
    counts = [count_tokens(m["content"]) + 4 for m in messages]
    total = sum(counts)
    start = 1  # keep the system message
    while total > budget and start < len(messages) - 1:
        total -= counts[start]
        start += 1
    return [messages[0], *messages[start:]]


def load_litellm() -> Callable[..., Any] | None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from litellm.utils import trim_messages
    except Exception as e:  # not installed or broken: the table says so
        print(f"LiteLLM unavailable: {type(e).__name__}: {e}", file=sys.stderr)
        return None
    return trim_messages  # type: ignore[no-any-return]


def timed(f: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--window", type=int, default=200_000)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--cap", type=float, default=60.0, help="skip a contender's later checkpoints past this many s"
    )
    args = ap.parse_args()
    if args.quick:
        args.turns, args.window = 300, 32_000
    reserve = 4096
    budget = args.window - reserve
    turns = make_turns(args.turns)
    checkpoints = sorted({c for c in (10, 100, 250, 500, 1000, args.turns) if c <= args.turns})
    trim = load_litellm()
    # A system prompt of instructions, about 2,000 tokens, as an assistant with tools and
    # rules carries: over the cache's minimum, so its breakpoint is worth placing.
    system = "You are a careful assistant. " + " ".join(random.Random(3).choices(WORDS, k=2000))

    model = "claude-sonnet-4-5"
    session = Session(
        None, model=model, system=system, context_window=args.window, reserve_output=reserve, cache="auto"
    )
    sims = {name: PromptCache(min_cacheable_tokens(model)) for name in ("placed", "last", "none")}
    # The same session without breakpoints, timed side by side: what placing them costs.
    plain = Session(
        None, model=model, system=system, context_window=args.window, reserve_output=reserve, cache="off"
    )
    plain_times: list[float] = []
    messages: list[dict[str, str]] = [{"role": "system", "content": system}]
    ours: list[float] = []  # seconds per request: fit + render (what grows with the history, if anything)
    counting: list[float] = []  # seconds per request: the local estimate of the two new turns (once each)
    stable = 0
    rows: list[tuple[int, int, float, float, float | None, float | None]] = []
    spent = {"litellm": 0.0, "naive": 0.0}
    last: dict[str, Any] = {}
    count_tokens("warm up the encoder")
    if trim is not None:  # its first call loads its tokenizer: not part of fitting
        trim([{"role": "user", "content": "warm up"}], model="gpt-4o", max_tokens=100)
    for i, (role, text) in enumerate(turns):
        messages.append({"role": role, "content": text})
        if role == "assistant":
            plain.add_assistant(text)
            t0 = time.perf_counter()
            session.add_assistant(text)
            ours_append = time.perf_counter() - t0
            continue
        t0 = time.perf_counter()
        session.add_user(text)
        t1 = time.perf_counter()
        params, report = session.request()
        ours.append(time.perf_counter() - t1)
        plain.add_user(text)
        t2 = time.perf_counter()
        plain.request()
        plain_times.append(time.perf_counter() - t2)
        counting.append(t1 - t0 + (ours_append if i else 0.0))
        stable += report.prefix_stable
        for name, sim in sims.items():
            sim.serve(params if name == "placed" else breakpoints_at_last(params, name == "last"))
        n = i + 1
        if n in checkpoints or n + 1 in checkpoints:
            med = statistics.median(ours[-10:])
            med_count = statistics.median(counting[-10:])
            lit = nai = None
            if trim is not None and spent["litellm"] < args.cap:
                lit, out = timed(lambda: trim(messages, model="gpt-4o", max_tokens=budget))
                last["litellm"] = (out, n)
                spent["litellm"] += lit
            if spent["naive"] < args.cap:
                nai, out = timed(lambda: naive_trim(messages, budget))
                last["naive"] = (out, n)
                spent["naive"] += nai
            last["ours"] = (params, report)
            rows.append((n, session.log.total_tokens, med, med_count, lit, nai))
            print(f"  {n} turns measured", file=sys.stderr)

    print(f"\n### Fitting a growing history: {args.turns} turns, {args.window:,}-token window\n")
    print(
        "| turns in history | history tokens | seam-llm fit + render | seam-llm count 2 new turns "
        "| LiteLLM trim_messages | naive re-count (bench baseline) |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for n, tok, med, med_count, lit, nai in rows:
        base = med + med_count  # ours, all in: the ratios compare whole per-request costs

        def ms(v: float | None, base: float = base) -> str:
            if v is None:
                return "skipped (time cap)"
            return f"{v * 1e3:,.1f} ms ({v / base:,.0f}x)"

        print(f"| {n} | {tok:,} | {med * 1e3:.2f} ms | {med_count * 1e3:.2f} ms | {ms(lit)} | {ms(nai)} |")
    print(
        f"\nseam-llm fit + render per request over the whole run: median {statistics.median(ours) * 1e3:.2f} ms, "
        f"p95 {sorted(ours)[int(len(ours) * 0.95)] * 1e3:.2f} ms, max {max(ours) * 1e3:.2f} ms; counting the "
        f"new turns: median {statistics.median(counting) * 1e3:.2f} ms, max {max(counting) * 1e3:.2f} ms; "
        f"prefix identical to the previous request on {stable}/{len(ours) - 1} requests. "
        f"(With `cache=\"auto\"`, as timed above; the same session with `cache=\"off\"`, timed "
        f"side by side: median {statistics.median(plain_times) * 1e3:.2f} ms, so placing the "
        f"breakpoints costs {statistics.median(ours) / statistics.median(plain_times):.1f}x.)"
    )

    print("\n### Prompt cache: the same requests, three ways of placing breakpoints\n")
    print(
        "| breakpoints | input tokens that would be cache reads | written to the cache | saved (plain input tokens) |"
    )
    print("|---|---:|---:|---:|")
    for name, label in (
        ("placed", 'placed by the session (`cache="auto"`)'),
        ("last", "one on the last block"),
        ("none", "none"),
    ):
        sim = sims[name]
        read = sum(x.read for x in sim.served)
        written = sum(x.created for x in sim.served)
        total = read + written + sum(x.input for x in sim.served)
        saved = read * 0.9 - written * 0.25
        print(f"| {label} | {read / total:.1%} | {written / total:.1%} | {saved / total:.1%} of {total:,} |")

    print("\n### What each kept at its last checkpoint\n")
    print(
        "| | turns in history | turns sent | tokens sent (o200k) | over budget | cut in half | left out | left out, reported |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    originals = {m["content"] for m in messages}
    params, report = last["ours"]
    sent = sum(count_tokens(b["text"]) + 4 for m in params["messages"] for b in m["content"]) + count_tokens(
        system
    )
    print(
        f"| seam-llm | {report.turns} | {len(report.kept)} + marker | {sent:,} | "
        f"{'yes' if sent > budget else 'no'} | 0 | {len(report.elided)} | {len(report.elided)} (marker) |"
    )
    for name in ("litellm", "naive"):
        if name not in last:
            print(f"| {name} | skipped | | | | | | |")
            continue
        out, n_turns = last[name]
        cut = sum(1 for m in out if m["content"] not in originals)
        toks = sum(count_tokens(m["content"]) + 4 for m in out)
        kept_whole = sum(1 for m in out if m["content"] in originals) - 1
        label = "LiteLLM" if name == "litellm" else "naive (bench)"
        print(
            f"| {label} | {n_turns} | {len(out) - 1} | {toks:,} | {'yes' if toks > budget else 'no'} | {cut} | "
            f"{n_turns - kept_whole - cut} | 0 |"
        )


def breakpoints_at_last(params: dict[str, Any], last: bool) -> dict[str, Any]:
    """``params`` without the session's breakpoints; with ``last``, one on its last block."""
    messages = []
    for m in params["messages"]:
        content = [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]
        messages.append({**m, "content": content})
    if last and messages and messages[-1]["content"]:
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
    system = [{k: v for k, v in b.items() if k != "cache_control"} for b in params.get("system") or ()]
    return {**params, "system": system, "messages": messages}


if __name__ == "__main__":
    main()
