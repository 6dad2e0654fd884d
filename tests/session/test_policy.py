"""The default context policy: properties over random logs, the head+tail truncation bug,
and a 1,000-turn replay that measures how often the cached prefix survives."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk import count_tokens
from sdk.session import DefaultPolicy, FitReport, Session, SessionBudgetError, TurnLog, render_messages
from sdk.session._policy import _marker_bound
from sdk.session._turns import MESSAGE_OVERHEAD

# ---- building logs -----------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One exchange: a user turn and an answer, or a tool call and its result."""

    tool: bool
    sizes: tuple[int, int]
    pins: tuple[bool, bool]


steps = st.builds(
    Step,
    tool=st.booleans(),
    sizes=st.tuples(st.integers(1, 3000), st.integers(1, 3000)),
    pins=st.tuples(*[st.sampled_from([False] * 6 + [True])] * 2),  # about one turn in seven pinned
)


def add_step(log: TurnLog, step: Step) -> None:
    n = len(log)
    if step.tool:
        tid = f"toolu_{n}"
        log.append(
            "assistant",
            [{"type": "tool_use", "id": tid, "name": "f", "input": {}}],
            pinned=step.pins[0],
            estimate=step.sizes[0],
        )
        log.append(
            "user",
            [{"type": "tool_result", "tool_use_id": tid, "content": "r"}],
            pinned=step.pins[1],
            estimate=step.sizes[1],
        )
    else:
        log.append("user", f"u{n}", pinned=step.pins[0], estimate=step.sizes[0])
        log.append("assistant", f"a{n}", pinned=step.pins[1], estimate=step.sizes[1])


def pairs(log: TurnLog) -> list[tuple[int, int]]:
    calls = {tid: t.id for t in log for tid in t.tool_use_ids}
    return [(calls[tid], t.id) for t in log for tid in t.tool_result_ids if tid in calls]


def must_stay(log: TurnLog) -> set[int]:
    """Pinned turns, with the partners of pinned pair members, and the newest exchange."""
    keep = {t.id for t in log if t.pinned}
    for a, b in pairs(log):
        if a in keep or b in keep:
            keep |= {a, b}
    if len(log):
        keep.add(len(log) - 1)
        for a, b in pairs(log):
            if b == len(log) - 1:
                keep.add(a)
    return keep


def check(log: TurnLog, report: FitReport, fixed: int, budget: int) -> None:
    n = len(log)
    kept, elided = list(report.kept), list(report.elided)
    # every turn is either kept or reported as left out, once
    assert sorted(kept + elided) == list(range(n))
    assert kept == sorted(kept)
    # never over budget, and the reported tokens are the real sum
    marker_tokens = count_tokens(report.marker) + MESSAGE_OVERHEAD if report.marker else 0
    assert report.tokens == fixed + sum(log[i].estimate for i in kept) + marker_tokens
    assert report.tokens <= budget
    # pins, their partners and the newest turn stay
    assert must_stay(log) <= set(kept)
    # pairs move together
    ks = set(kept)
    for a, b in pairs(log):
        assert (a in ks) == (b in ks), (a, b)
    # the marker accounts for every left-out turn and token
    assert report.elided_tokens == sum(log[i].estimate for i in elided)
    if elided:
        assert report.marker is not None
        assert (
            f"[{len(elided)} earlier turn" in report.marker
            and f"({report.elided_tokens} tokens)" in report.marker
        )
    else:
        assert report.marker is None
    # and the rendered request holds exactly the kept turns (plus the marker), in order
    _, messages = render_messages(log, report, marker=report.marker)
    blocks = [b for m in messages for b in m["content"]]
    expected = [b for i in kept for b in log[i].content]
    if report.marker is not None:
        assert {"type": "text", "text": report.marker} in blocks
        blocks.remove({"type": "text", "text": report.marker})
    assert blocks == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    history=st.lists(steps, min_size=1, max_size=40),
    budget=st.integers(0, 40_000),
    fixed=st.integers(0, 2_000),
    low_water=st.sampled_from([0.5, 0.7, 0.9, 1.0]),
    unpin_at=st.integers(0, 80),
)
def test_policy_properties(
    history: list[Step], budget: int, fixed: int, low_water: float, unpin_at: int
) -> None:
    """Growing log, one fit per exchange with the previous report, a pin dropped midway."""
    policy = DefaultPolicy(low_water)
    log = TurnLog()
    previous: FitReport | None = None
    for k, step in enumerate(history):
        add_step(log, step)
        if k == len(history) // 2 and unpin_at < len(log) and log[unpin_at].pinned:
            log.set_pinned(unpin_at, False)
        stay = must_stay(log)
        # what must stay, plus the marker (at its largest) when anything has to go
        need = (
            fixed
            + sum(log[i].estimate for i in stay)
            + (_marker_bound("o200k_base") if len(stay) < len(log) else 0)
        )
        try:
            report = policy.fit(log, budget=budget, fixed=fixed, previous=previous)
        except SessionBudgetError as e:
            assert need > budget  # only when what must stay cannot fit
            assert e.required > e.budget == budget
            continue
        check(log, report, fixed, budget)
        if previous is not None and report.prefix_stable:
            assert report.cut == previous.cut
        previous = report


@settings(max_examples=60, deadline=None)
@given(history=st.lists(steps, min_size=2, max_size=30), budget=st.integers(3_000, 30_000))
def test_the_cut_only_moves_forward_while_the_pins_stay(history: list[Step], budget: int) -> None:
    log = TurnLog()
    previous: FitReport | None = None
    for step in history:
        add_step(log, step)
        try:
            report = DefaultPolicy().fit(log, budget=budget, fixed=0, previous=previous)
        except SessionBudgetError:
            continue
        if previous is not None and previous.epoch == report.epoch:
            assert report.cut >= previous.cut
        previous = report


def test_pinned_turns_sit_before_the_marker_and_the_cut_lands_on_a_pair_boundary() -> None:
    log = TurnLog()
    log.append("user", "pinned", pinned=True, estimate=10)
    log.append("assistant", "a", estimate=500)
    log.append("assistant", [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}], estimate=300)
    log.append("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}], estimate=300)
    log.append("user", "newest", estimate=50)
    report = DefaultPolicy(low_water=0.9).fit(log, budget=800, fixed=0)
    assert report.kept == (0, 4) or report.kept == (0, 2, 3, 4)
    assert 2 not in report.elided or 3 in report.elided
    _, messages = render_messages(log, report, marker=report.marker)
    assert messages[0]["content"][0]["text"] == "pinned"
    assert messages[0]["content"][1]["text"] == report.marker


def test_overflow_names_what_must_stay() -> None:
    log = TurnLog()
    log.append("user", "x", pinned=True, estimate=900)
    log.append("user", "newest", estimate=200)
    with pytest.raises(SessionBudgetError, match="1100 tokens"):
        DefaultPolicy().fit(log, budget=1000, fixed=0)


def test_a_budget_that_can_never_go_negative() -> None:
    """The session's budget is clamped at zero: a huge scale or a tiny window gives an
    overflow, never a negative remainder that a slice would read from the other end."""
    s = Session(None, model="m", context_window=100, reserve_output=99)
    s.scale = 1e9
    assert s.budget == 0
    s.add_user("hi")
    with pytest.raises(SessionBudgetError):
        s.fit()


# ---- the classic head+tail truncation bug --------------------------------------------


def naive_head_tail(estimates: list[int], budget: int, head: int = 1) -> list[int]:
    """Keep the first ``head`` turns and as many newest turns as fit: the common pattern,
    with the common bug (no guard on the remainder, and ``[-0:]`` is the whole list)."""
    ids = list(range(len(estimates)))
    remaining = budget - sum(estimates[:head])
    tail_len, used = 0, 0
    for e in reversed(estimates[head:]):
        used += e
        if used > remaining:
            break
        tail_len += 1
    return ids[:head] + ids[-tail_len:]


def test_naive_head_tail_loses_middle_turns_silently_and_ours_cannot() -> None:
    estimates = [100, 400, 400, 400, 400, 100]
    budget = 700
    naive = naive_head_tail(estimates, budget)
    # the middle turns are simply gone: nothing says so
    assert naive == [0, 4, 5]
    assert set(range(6)) - set(naive) == {1, 2, 3}

    log = TurnLog()
    for i, e in enumerate(estimates):
        log.append("user" if i % 2 == 0 else "assistant", f"t{i}", pinned=i == 0, estimate=e)
    report = DefaultPolicy().fit(log, budget=budget, fixed=0)
    assert set(report.kept) | set(report.elided) == set(range(6))
    assert report.marker is not None and f"[{len(report.elided)} earlier turns" in report.marker
    assert report.tokens <= budget


def test_naive_head_tail_with_a_big_newest_turn_sends_everything() -> None:
    """When nothing fits after the head, tail_len is 0 and ``ids[-0:]`` keeps the whole
    list: the request goes out over budget (and turn 0 twice). Ours refuses up front."""
    estimates = [300, 100, 100, 900]
    budget = 1000
    naive = naive_head_tail(estimates, budget)
    assert naive == [0, 0, 1, 2, 3]
    assert sum(estimates[i] for i in naive) > budget

    log = TurnLog()
    for i, e in enumerate(estimates):
        log.append("user", f"t{i}", pinned=i == 0, estimate=e)
    with pytest.raises(SessionBudgetError):
        DefaultPolicy().fit(log, budget=budget, fixed=0)
    log.set_pinned(0, False)
    report = DefaultPolicy().fit(log, budget=budget, fixed=0)
    assert report.kept == (3,) and report.elided == (0, 1, 2)


# ---- the 1,000-turn replay ---------------------------------------------------------


def _flat(messages: list[dict[str, Any]]) -> list[bytes]:
    out = []
    for m in messages:
        for b in m["content"]:
            out.append(
                orjson.dumps(
                    {"role": m["role"], **{k: v for k, v in b.items() if k != "cache_control"}},
                    option=orjson.OPT_SORT_KEYS,
                )
            )
    return out


def test_thousand_turn_replay_keeps_the_cached_prefix() -> None:
    """1,000 turns (~1M tokens) through a 200k window: every request fits, every turn is
    accounted for, and the prefix the server cached is sent again unchanged on at least
    90% of consecutive requests (checked on the rendered blocks, not only the flag)."""
    rng = random.Random(7)
    s = Session(
        None, model="m", system="You are a careful assistant.", context_window=200_000, reserve_output=4096
    )
    s.cache = "auto"
    prev_blocks: list[bytes] | None = None
    stable_claimed = stable_real = requests = 0
    for i in range(500):
        if i % 10 == 3:
            tid = f"toolu_{i}"
            s.log.append(
                "assistant",
                [{"type": "tool_use", "id": tid, "name": "search", "input": {"q": i}}],
                estimate=rng.randint(50, 300),
            )
            s.log.append(
                "user",
                [{"type": "tool_result", "tool_use_id": tid, "content": "hits"}],
                estimate=rng.randint(500, 6000),
            )
        else:
            s.log.append("user", f"question {i}", estimate=rng.randint(20, 1500), pinned=i == 0)
        params, report = s.request()
        requests += 1
        assert report.tokens <= report.budget
        assert len(report.kept) + len(report.elided) == len(s.log)
        assert 0 in report.kept
        blocks = _flat(params["messages"])
        real = prev_blocks is not None and blocks[: len(prev_blocks)] == prev_blocks
        if report.prefix_stable:
            assert real, f"request {i} claims a stable prefix that changed"
        stable_claimed += report.prefix_stable
        stable_real += real
        prev_blocks = blocks
        s.log.append("assistant", f"answer {i}", estimate=rng.randint(100, 2500))
    assert len(s.log) >= 1000
    assert s.log.total_tokens > 1_000_000
    assert stable_real == stable_claimed
    print(f"prefix stable on {stable_real}/{requests - 1} consecutive requests")
    assert stable_real >= 0.9 * (requests - 1), (stable_real, requests)


def test_prefix_stability_with_low_water_one_is_worse() -> None:
    """The low-water step is what keeps the prefix: eliding one turn at a time (1.0)
    changes the prefix on almost every request once the window is full."""

    def replay(low_water: float) -> int:
        rng = random.Random(3)
        log = TurnLog()
        prev: FitReport | None = None
        stable = 0
        for i in range(300):
            log.append("user", f"q{i}", estimate=rng.randint(100, 1000))
            prev = DefaultPolicy(low_water).fit(log, budget=20_000, fixed=0, previous=prev)
            stable += prev.prefix_stable
            log.append("assistant", f"a{i}", estimate=rng.randint(100, 1000))
        return stable

    assert replay(0.7) > replay(1.0) + 100


def test_breakpoints_mark_the_system_the_pinned_head_and_the_newest_message() -> None:
    log = TurnLog()
    log.append("user", "rules", pinned=True, estimate=10)
    log.append("assistant", "ok", pinned=True, estimate=10)
    for i in range(10):
        log.append("user", f"q{i}", estimate=100)
        log.append("assistant", f"a{i}", estimate=100)
    report = DefaultPolicy().fit(log, budget=800, fixed=5)
    assert report.elided
    system, messages = render_messages(
        log, report, marker=report.marker, system=[{"type": "text", "text": "sys"}], cache_breakpoints=True
    )
    marked = [
        (m, b["text"]) for m, msg in enumerate(messages) for b in msg["content"] if "cache_control" in b
    ]
    assert system is not None and system[-1]["cache_control"] == {"type": "ephemeral"}
    # the pinned head ends with the pinned answer, just before the marker; the newest is last
    assert marked == [(1, "ok"), (len(messages) - 1, log[len(log) - 1].text)]
    assert messages[2]["content"][0]["text"] == report.marker
    assert all("cache_control" not in b for t in log for b in t.content)


def test_a_question_the_window_cannot_hold_can_be_taken_back() -> None:
    from sdk.session import SessionError

    s = Session(None, model="m", context_window=200, reserve_output=50)
    s.add_user("a short question")
    s.add_assistant("a short answer")
    before = s.fit()
    s.add_user("word " * 400)
    with pytest.raises(SessionBudgetError):
        s.fit()
    taken = s.pop_turn()
    assert taken.text == "word " * 400  # the caller's data comes back
    assert [t.text for t in s.log] == ["a short question", "a short answer"]
    assert s.fit().tokens == before.tokens
    s.pending = None
    s.add_user("next")
    from sdk.session._answer import PendingAnswer

    s.pending = PendingAnswer(after=2)
    with pytest.raises(SessionError, match="pending"):
        s.pop_turn()
