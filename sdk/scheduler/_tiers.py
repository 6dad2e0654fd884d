"""Tiers (QoS classes) and how a request names one.

A tier is a class of service: ``rank`` orders tiers (lower first, the way vLLM's
``priority`` field orders requests), ``weight`` is the fair-share weight a tenant gets in
the tier unless it has its own, ``ttft_target`` is the time to first token the tier aims
at (adaptive concurrency backs off when the engine drifts far above it),
``preemptible`` says whether its running streams may be paused for a higher tier, and
``min_share`` reserves a fraction of the slots for the tier while it has work waiting.

A request names its tier by name (``"interactive"``) or by an integer priority: the tier
with the largest rank not above the priority (clamped to the first tier), so with the
defaults a negative priority is ``interactive``, ``0`` is ``default`` and a positive one
is ``batch``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import KW_ONLY, dataclass

from .._errors import UnknownTierError

__all__ = ["DEFAULT_TIERS", "Tier", "Tiers", "UnknownTierError"]


@dataclass(frozen=True, slots=True)
class Tier:
    name: str
    rank: int
    _: KW_ONLY  # the rest by keyword: Tier("batch", 1, preemptible=True)
    weight: float = 1.0
    ttft_target: float | None = None
    preemptible: bool = False
    min_share: float = 0.0

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a tier needs a name")
        if not (self.weight > 0 and math.isfinite(self.weight)):
            raise ValueError(f"tier {self.name!r}: weight must be a positive number")
        if self.ttft_target is not None and not (self.ttft_target > 0 and math.isfinite(self.ttft_target)):
            raise ValueError(f"tier {self.name!r}: ttft_target must be a positive number of seconds")
        if not 0.0 <= self.min_share <= 1.0:
            raise ValueError(f"tier {self.name!r}: min_share must be between 0 and 1")


DEFAULT_TIERS: tuple[Tier, ...] = (
    Tier("interactive", -1, ttft_target=2.0),
    Tier("default", 0, ttft_target=10.0),
    Tier("batch", 1, preemptible=True),
)


class Tiers:
    """An ordered, validated set of tiers (best rank first)."""

    __slots__ = ("_by_name", "_ordered")

    def __init__(self, tiers: Iterable[Tier] = DEFAULT_TIERS) -> None:
        ordered = sorted(tiers, key=lambda t: t.rank)
        if not ordered:
            raise ValueError("at least one tier is needed")
        names = [t.name for t in ordered]
        if len(set(names)) != len(names):
            raise ValueError("tier names must be unique")
        ranks = [t.rank for t in ordered]
        if len(set(ranks)) != len(ranks):
            raise ValueError("tier ranks must be unique")
        if sum(t.min_share for t in ordered) > 1.0:
            raise ValueError("the tiers' min_share values add up to more than 1")
        self._ordered = tuple(ordered)
        self._by_name = {t.name: t for t in ordered}

    def __iter__(self) -> Iterator[Tier]:
        return iter(self._ordered)

    def __len__(self) -> int:
        return len(self._ordered)

    def __repr__(self) -> str:
        return f"Tiers({', '.join(t.name for t in self._ordered)})"

    @property
    def default(self) -> Tier:
        """``default`` if there is a tier of that name, else the middle one."""
        return self._by_name.get("default") or self._ordered[len(self._ordered) // 2]

    def resolve(self, priority: str | int | Tier | None) -> Tier:
        """The tier a request asks for (see the module doc); ``None`` is the default tier."""
        if priority is None:
            return self.default
        if isinstance(priority, Tier):
            priority = priority.name
        if isinstance(priority, bool):
            raise UnknownTierError(f"priority must be a tier name or an integer, not {priority!r}")
        if isinstance(priority, int):
            best = self._ordered[0]
            for t in self._ordered:
                if t.rank <= priority:
                    best = t
            return best
        if isinstance(priority, str):
            tier = self._by_name.get(priority)
            if tier is None:
                known = ", ".join(repr(t.name) for t in self._ordered)
                raise UnknownTierError(f"unknown tier {priority!r} (known: {known})")
            return tier
        raise UnknownTierError(f"priority must be a tier name or an integer, not {type(priority).__name__}")
