"""From a fit to request messages.

Rendering merges neighbouring turns of the same role into one message (chat templates
such as Gemma's refuse two user messages in a row; the Messages API merges them
anyway), puts the elision marker where the left-out run ended (after the pinned turns
that precede it, so a moving cut leaves the pinned head of the prompt cached) and, for
the hosted API, places ``cache_control`` breakpoints on the stable prefix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._policy import FitReport
from ._turns import TurnLog

__all__ = ["CACHE_CONTROL", "render_messages"]

CACHE_CONTROL: Mapping[str, str] = {"type": "ephemeral"}


def _mark(block: Mapping[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": dict(CACHE_CONTROL)}


def render_messages(
    log: TurnLog,
    report: FitReport,
    *,
    marker: str | None,
    system: Sequence[Mapping[str, Any]] = (),
    cache_breakpoints: bool = False,
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """``(system, messages)`` for the request. Blocks are shared with the log, not copied
    (only the few that get a breakpoint are); callers must not mutate them."""
    messages: list[dict[str, Any]] = []
    marker_at = -1  # index of the message holding the marker

    def add(role: str, blocks: Sequence[Mapping[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": list(blocks)})

    placed = marker is None
    for i in report.kept:
        if not placed and i >= report.cut:
            add("user", [{"type": "text", "text": marker}])
            marker_at = len(messages) - 1
            placed = True
        turn = log[i]
        add(turn.role, turn.content)
    if not placed:
        add("user", [{"type": "text", "text": marker}])
        marker_at = len(messages) - 1
    sys_out: list[dict[str, Any]] | None = [dict(b) for b in system] if system else None
    if cache_breakpoints:
        if sys_out:
            sys_out[-1] = _mark(sys_out[-1])
        # the end of the pinned head (stable while the cut moves), and the newest message
        # (the next request reads the cache up to it)
        targets = {len(messages) - 1}
        if marker_at > 0:
            targets.add(marker_at - 1)
        for m in targets:
            if m >= 0 and messages[m]["content"]:
                content = messages[m]["content"]
                content[-1] = _mark(content[-1])
    return sys_out, messages
