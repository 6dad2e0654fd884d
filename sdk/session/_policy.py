"""Context policies: which turns of the log go into the next request.

The default keeps the system prompt, every pinned turn and the newest turns, and
replaces the oldest unpinned turns by one elision marker that says how many turns and
tokens were left out. It decides with one number, the *cut*: unpinned turns before it
are left out, everything from it on is kept. The cut moves only forward, only onto a
group boundary (a ``tool_use`` and its results are never separated), and in large
steps: when the history no longer fits, the cut jumps far enough to bring it down to a
low-water mark, so the following requests send the very same prefix and the server's
prompt cache keeps hitting.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from .._errors import SessionBudgetError
from ..tokens import EncodingSpec, count_tokens
from ._turns import MESSAGE_OVERHEAD, TurnLog

__all__ = ["ContextPolicy", "DefaultPolicy", "FitReport", "SessionBudgetError", "elision_marker"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FitReport:
    """What a fit kept and left out.

    ``kept`` and ``elided`` are turn ids (together: every turn of the log, once);
    ``tokens`` the local estimate of the whole request input (system and marker included),
    never over ``budget``; ``prefix_stable`` whether everything the previous request sent
    is again sent unchanged at the start of this one.
    """

    kept: tuple[int, ...]
    elided: tuple[int, ...]
    elided_tokens: int
    tokens: int
    budget: int
    cut: int
    turns: int
    epoch: int
    prefix_stable: bool
    marker: str | None = None
    summarized: bool = False


def elision_marker(turns: int, tokens: int) -> str:
    """The text that stands in for the left-out turns (so the model knows something is missing)."""
    s = "" if turns == 1 else "s"
    return f"[{turns} earlier turn{s} ({tokens} tokens) left out here to fit the context window.]"


@functools.cache
def _marker_bound_named(encoding: str) -> int:
    return count_tokens(elision_marker(10**12 - 1, 10**12 - 1), encoding) + MESSAGE_OVERHEAD


def _marker_bound(encoding: EncodingSpec) -> int:
    """Tokens of the longest marker (12-digit counts): a bound used while searching
    (cached for named encodings; a tokenizer object is counted each time)."""
    if isinstance(encoding, str):
        return _marker_bound_named(encoding)
    return count_tokens(elision_marker(10**12 - 1, 10**12 - 1), encoding) + MESSAGE_OVERHEAD


class ContextPolicy(Protocol):
    """Chooses the turns of the next request.

    ``budget`` is the input budget (window minus reserved output), ``fixed`` the tokens
    spent before any turn (system prompt, tools), ``extra`` tokens to reserve for text
    attached to the marker (a summary), ``previous`` the report of the previous fit of
    this log (``None`` at first). Raises :class:`SessionBudgetError` when nothing fits.
    """

    def fit(
        self, log: TurnLog, *, budget: int, fixed: int, extra: int = 0, previous: FitReport | None = None
    ) -> FitReport: ...


@dataclass(frozen=True, slots=True)
class DefaultPolicy:
    """Keep system, pins and the newest turns; elide the oldest down to ``low_water``.

    ``low_water`` is the fraction of the budget the request is brought down to when it
    overflows (lower: fewer cache misses, less history; 1.0 elides one step at a time).
    """

    low_water: float = 0.7

    def __post_init__(self) -> None:
        if not 0.0 < self.low_water <= 1.0:
            raise ValueError(f"low_water must be in (0, 1], got {self.low_water!r}")

    def fit(
        self, log: TurnLog, *, budget: int, fixed: int, extra: int = 0, previous: FitReport | None = None
    ) -> FitReport:
        if budget < 0 or fixed < 0 or extra < 0:
            raise ValueError(f"budget, fixed and extra must be >= 0, got {budget}, {fixed}, {extra}")
        n = len(log)
        marker_cost = _marker_bound(log.encoding) + extra

        def unmarked(c: int) -> int:
            # Everything from c on, plus the pinned turns before it: all kept.
            return fixed + log.pinned_tokens_before(c) + log.tokens(c, n)

        def elided_count(c: int) -> int:
            return c - log.pinned_count_before(c)

        def cost(c: int) -> int:
            return unmarked(c) + (marker_cost if elided_count(c) else 0)

        last = log.group_start(n - 1) if n else 0  # the newest group always stays
        if cost(last) > budget:
            raise SessionBudgetError(
                f"the system prompt, the pinned turns and the newest turn need {cost(last)} tokens "
                f"(estimate), over the input budget of {budget}",
                required=cost(last),
                budget=budget,
            )
        start = 0
        if previous is not None and previous.epoch == log.epoch and previous.turns <= n:
            start = log.group_start(previous.cut) if previous.cut < n else previous.cut
            start = min(start, last)
        if cost(start) <= budget:
            cut = start
        else:
            # One large step: the first boundary at or under the low-water mark, else
            # the first one under the budget (the low-water mark may be below the pins).
            target = min(budget, int(budget * self.low_water))
            found = self._first_fitting(log, start, last, target, cost)
            if found is None:
                found = self._first_fitting(log, start, last, budget, cost)
            assert found is not None  # cost(last) <= budget was checked above
            cut = found
        return self._report(log, cut, fixed, budget, extra, previous)

    @staticmethod
    def _first_fitting(log: TurnLog, lo: int, hi: int, limit: int, f: Callable[[int], int]) -> int | None:
        """Smallest boundary ``c`` in [lo, hi] with ``f(c) <= limit``.

        Called only when ``f(lo)`` is over, so the predicate is false then true along c
        (past the all-pinned head, where f is flat, f never grows with c).
        """
        if f(hi) > limit:
            return None
        a, b = lo, hi
        while a < b:  # invariant: f(b) <= limit
            mid = (a + b) // 2
            if f(mid) <= limit:
                b = mid
            else:
                a = mid + 1
        c = log.next_boundary(a)  # moving forward only removes tokens
        return min(c, hi)

    @staticmethod
    def _report(
        log: TurnLog, cut: int, fixed: int, budget: int, extra: int, previous: FitReport | None
    ) -> FitReport:
        n = len(log)
        pinned_before = [i for i in range(cut) if log.group_pinned(i)] if log.pinned_count_before(cut) else []
        if pinned_before:
            pinned_set = set(pinned_before)
            elided = tuple(i for i in range(cut) if i not in pinned_set)
        else:
            elided = tuple(range(cut))
        elided_tokens = log.tokens(0, cut) - log.pinned_tokens_before(cut)
        tokens = fixed + log.pinned_tokens_before(cut) + log.tokens(cut, n)
        marker = None
        if elided:
            marker = elision_marker(len(elided), elided_tokens)
            tokens += count_tokens(marker, log.encoding) + MESSAGE_OVERHEAD + extra
        stable = (
            previous is not None
            and previous.cut == cut
            and previous.epoch == log.epoch
            and previous.turns <= n
            and previous.marker == marker
        )
        return FitReport(
            kept=(*pinned_before, *range(cut, n)),
            elided=elided,
            elided_tokens=elided_tokens,
            tokens=tokens,
            budget=budget,
            cut=cut,
            turns=n,
            epoch=log.epoch,
            prefix_stable=stable,
            marker=marker,
        )


DEFAULT_POLICY = DefaultPolicy()
