"""From a fit to request messages.

Rendering merges neighbouring turns of the same role into one message (chat templates
such as Gemma's refuse two user messages in a row; the Messages API merges them
anyway), puts the elision marker where the left-out run ended (after the pinned turns
that precede it, so a moving cut leaves the pinned head of the prompt cached) and, for
the hosted API, places ``cache_control`` breakpoints on the stable prefix
(:mod:`._cache`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._cache import MAX_BREAKPOINTS, Breakpoint, Where, markable, marked
from ._policy import FitReport
from ._turns import MESSAGE_OVERHEAD, TurnLog

__all__ = ["Rendered", "render", "render_messages"]


@dataclass(slots=True)
class Rendered:
    """The request's ``system`` and ``messages``, and where each kept turn ended: for the
    ``k``-th kept turn (``turns[k]``), the message holding it (``message[k]``), the index
    in that message of its last block (``last[k]``), its number of blocks
    (``blocks[k]``) and the estimated tokens of the
    prompt up to its end (``tokens[k]``); ``head`` is the ``k`` of the turn just before
    the elision marker (-1: no marker, or nothing before it)."""

    system: list[dict[str, Any]] | None
    messages: list[dict[str, Any]]
    turns: Sequence[int] = ()
    message: list[int] = field(default_factory=list)
    last: list[int] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)
    tokens: list[float] = field(default_factory=list)
    head: int = -1
    fixed: int = 0  # the estimated tokens before the messages (system prompt and tools)

    def _end(self, where: Where, k: int) -> Breakpoint | None:
        """A breakpoint at the end of the ``k``-th kept turn: on its last block the API
        takes one on (None: it has none)."""
        content = self.messages[self.message[k]]["content"]
        for b in range(self.last[k], self.last[k] - self.blocks[k], -1):
            if markable(content[b]):
                return Breakpoint(where, self.message[k], b, int(self.tokens[k]))
        return None

    def breakpoints(
        self,
        *,
        minimum: int,
        stable_turn: int | None = None,
        tools: bool = False,
    ) -> list[Breakpoint]:
        """The breakpoints to place (see :mod:`._cache`): the system prompt's (or the
        tools'), the pinned head's, the previous request's end (``stable_turn``) and the
        newest turn's, each only where the prompt up to it holds ``minimum`` tokens."""
        out: list[Breakpoint] = []
        if self.fixed >= minimum and (self.system or tools):
            out.append(Breakpoint("system" if self.system else "tools", -1, -1, self.fixed))
        picks: list[tuple[Where, int]] = []
        if self.head >= 0:
            picks.append(("head", self.head))
        if stable_turn is not None:
            k = bisect_left(self.turns, stable_turn)  # kept turns are in order
            if k < len(self.turns) and self.turns[k] == stable_turn:
                picks.append(("stable", k))
        if self.turns:
            picks.append(("newest", len(self.turns) - 1))
        seen: set[tuple[int, int]] = set()
        for where, k in picks:
            if self.tokens[k] < minimum:
                continue
            bp = self._end(where, k)
            if bp is None or (bp.message, bp.block) in seen:
                continue
            seen.add((bp.message, bp.block))
            out.append(bp)
        return out[:MAX_BREAKPOINTS]

    def place(self, breakpoints: Sequence[Breakpoint], tools: list[dict[str, Any]] | None = None) -> None:
        """Mark the blocks ``breakpoints`` name (copies: the log's blocks stay unmarked)."""
        for bp in breakpoints:
            if bp.where == "system" and self.system:
                self.system[-1] = marked(self.system[-1])
            elif bp.where == "tools" and tools:
                tools[-1] = marked(tools[-1])
            elif bp.message >= 0:
                content = self.messages[bp.message]["content"]
                content[bp.block] = marked(content[bp.block])


def render(
    log: TurnLog,
    report: FitReport,
    *,
    marker: str | None,
    system: Sequence[Mapping[str, Any]] = (),
    fixed: int = 0,
    marker_tokens: int = 0,
    scale: float = 1.0,
    track: bool = True,
) -> Rendered:
    """The request's messages for ``report``. Blocks are shared with the log, not copied
    (only those that get a breakpoint are); callers must not mutate them. With
    ``track``, where each turn ends: ``fixed``, ``marker_tokens`` and ``scale`` make the
    prompt's estimated length there (system and tools, the marker, the turns' estimates)."""
    messages: list[dict[str, Any]] = []
    out = Rendered([dict(b) for b in system] if system else None, messages, report.kept, fixed=fixed)
    at_message, at_last, at_blocks, at_tokens = out.message, out.last, out.blocks, out.tokens
    tokens = float(fixed)
    merged = MESSAGE_OVERHEAD * scale  # the overhead a turn merged into the message before it does not add
    role = ""  # of the last message
    content: list[Any] = []
    cut = report.cut if marker is not None else -1
    for i in report.kept:
        if cut >= 0 and i >= cut:
            out.head = len(at_tokens) - 1
            tokens += marker_tokens * scale
            if role == "user":
                content.append({"type": "text", "text": marker})
                tokens -= merged
            else:
                role, content = "user", [{"type": "text", "text": marker}]
                messages.append({"role": role, "content": content})
            cut = -1
        turn = log[i]
        if turn.role == role:
            content.extend(turn.content)
            tokens -= merged
        else:
            role, content = turn.role, list(turn.content)
            messages.append({"role": role, "content": content})
        if track:
            tokens += turn.estimate * scale
            at_message.append(len(messages) - 1)
            at_last.append(len(content) - 1)
            at_blocks.append(len(turn.content))
            at_tokens.append(tokens)
    if cut >= 0:
        out.head = len(report.kept) - 1
        if role == "user":
            content.append({"type": "text", "text": marker})
        else:
            messages.append({"role": "user", "content": [{"type": "text", "text": marker}]})
    if not track:
        out.turns, out.head = (), -1
    return out


def render_messages(
    log: TurnLog,
    report: FitReport,
    *,
    marker: str | None,
    system: Sequence[Mapping[str, Any]] = (),
    cache_breakpoints: bool = False,
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """``(system, messages)`` for the request; with ``cache_breakpoints``, marked at the
    end of the system prompt, of the pinned head and of the newest turn, whatever their
    length (a :class:`~sdk.Session` places them by the model's minimum: :mod:`._cache`)."""
    out = render(log, report, marker=marker, system=system)
    if cache_breakpoints:
        out.place(out.breakpoints(minimum=0))
    return out.system, out.messages
