"""The turn log: every turn once, its token estimate counted once.

Fitting a long history to a window must not cost more as the history grows, so the
log keeps running sums (all tokens, pinned tokens, pinned turns) that make "how many
tokens are left if everything before index ``c`` that is not pinned goes" an O(1)
question, and it remembers which turns must move together (a ``tool_use`` and the
``tool_result`` turns that answer it) as contiguous groups.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from typing import Any, Literal

import orjson

from .._models import Usage
from ..tokens import DEFAULT_ENCODING, EncodingSpec, count_tokens
from ._schema import DocumentError, check_block

__all__ = ["MESSAGE_OVERHEAD", "Turn", "TurnKind", "TurnLog", "block_tokens"]

TurnKind = Literal["user", "assistant", "tool_use", "tool_result"]

MESSAGE_OVERHEAD = 4
"""Tokens added per message for the role and framing (what chat templates spend)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of the conversation, as wire content blocks.

    ``estimate`` is the local token estimate of this message (counted once, on append).
    For answers, ``usage`` is what the server reported for the request(s) that produced
    it and ``request_estimate`` the local estimate of that request's input before sending.
    """

    id: int
    kind: TurnKind
    content: tuple[Mapping[str, Any], ...]
    estimate: int
    _: KW_ONLY
    pinned: bool = False
    usage: Usage | None = None
    request_estimate: int | None = None

    @property
    def role(self) -> str:
        return "assistant" if self.kind in ("assistant", "tool_use") else "user"

    @property
    def text(self) -> str:
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    @property
    def tool_use_ids(self) -> tuple[str, ...]:
        return tuple(str(b["id"]) for b in self.content if b.get("type") == "tool_use" and "id" in b)

    @property
    def tool_result_ids(self) -> tuple[str, ...]:
        return tuple(
            str(b["tool_use_id"])
            for b in self.content
            if b.get("type") == "tool_result" and "tool_use_id" in b
        )


def block_tokens(block: Mapping[str, Any], encoding: EncodingSpec = DEFAULT_ENCODING) -> int:
    """Local estimate of one content block (text as text, anything else as its JSON)."""
    kind = block.get("type")
    if kind == "text":
        return count_tokens(str(block.get("text", "")), encoding)
    if kind == "tool_use":
        return count_tokens(str(block.get("name", "")), encoding) + count_tokens(
            orjson.dumps(block.get("input")).decode(), encoding
        )
    if kind == "tool_result":
        inner = block.get("content", "")
        if isinstance(inner, str):
            return count_tokens(inner, encoding) + 2
        return sum(block_tokens(b, encoding) for b in inner if isinstance(b, Mapping)) + 2
    if kind == "thinking":
        return count_tokens(str(block.get("thinking", "")), encoding)
    if kind == "image":
        # The API scales an image to about 1.15 megapixels at most and charges a token a
        # 750 pixels: its base64 says nothing of that, and counted as text it came to about
        # 500 times the cost (a 1 MB image, 910,000 tokens).
        return IMAGE_TOKENS
    if kind == "document":
        source = block.get("source")
        if isinstance(source, Mapping):
            if source.get("type") == "text":
                return count_tokens(str(source.get("data", "")), encoding)
            pages = _pdf_pages(source)
            if pages:
                return pages * PDF_PAGE_TOKENS
    return count_tokens(orjson.dumps(block, option=orjson.OPT_SORT_KEYS).decode(), encoding)


# Bounds on what the Messages API charges for an image (its largest size, 1.15
# megapixels, at 750 pixels a token) and for a PDF page (its text and its picture).
IMAGE_TOKENS = 1600
PDF_PAGE_TOKENS = 3200


def _pdf_pages(source: Mapping[str, Any]) -> int:
    """The pages of a base64 PDF (its ``/Type /Page`` objects), 0 where it is not one."""
    data = source.get("data")
    if source.get("type") != "base64" or not isinstance(data, str):
        return 0
    try:
        raw = base64.b64decode(data, validate=False)
    except ValueError:
        return 0
    if not raw.startswith(b"%PDF"):
        return 0
    return len(_PDF_PAGE.findall(raw))


_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")


def check_text(text: str, what: str) -> None:
    """A ``ValueError`` where ``text`` holds a lone surrogate: no API takes it and no store
    can save it, so it is refused when it is added, not at the next save."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{what} holds a lone surrogate at offset {e.start}: it is not UTF-8") from None


def normalize_content(content: str | Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """A string becomes one text block; blocks are copied so later edits by the caller
    cannot change the log behind its estimates."""
    if isinstance(content, str):
        check_text(content, "the text")
        return ({"type": "text", "text": content},)
    blocks = []
    for i, b in enumerate(content):
        if not isinstance(b, Mapping) or not isinstance(b.get("type"), str):
            # (Its type only: a block may hold a key, or megabytes.)
            raise TypeError(
                f"content[{i}]: a content block is a mapping with a 'type' string, not {type(b).__name__}"
            )
        try:
            copy = orjson.loads(orjson.dumps(b))  # deep copy, and proof it serializes
        except TypeError as e:  # (orjson's message names the problem, never the value)
            raise TypeError(f"content[{i}]: {e}") from None
        try:
            check_block(copy, f"content[{i}]")  # what a saved session is checked against on load
        except DocumentError as e:
            raise TypeError(f"bad content block: {e}") from None
        blocks.append(copy)
    if not blocks:
        raise ValueError("a turn needs at least one content block")
    return tuple(blocks)


def kind_of(role: str, content: Sequence[Mapping[str, Any]]) -> TurnKind:
    types = {b.get("type") for b in content}
    if role == "assistant":
        return "tool_use" if "tool_use" in types else "assistant"
    if role == "user":
        return "tool_result" if "tool_result" in types else "user"
    raise ValueError(f"role must be 'user' or 'assistant', got {role!r}")


class TurnLog:
    """Append-only list of turns (a turn's id is its index) with running sums.

    ``epoch`` changes whenever something other than an append changes what a fit of the
    existing turns would keep (a pin, a group merge across old turns), so a policy can
    tell a stable prefix from a changed one without comparing content.
    """

    def __init__(self, encoding: EncodingSpec = DEFAULT_ENCODING) -> None:
        self.encoding = encoding
        self.epoch = 0
        self._turns: list[Turn] = []
        self._cum = [0]  # _cum[i]: tokens of turns[:i]
        self._pcum = [0]  # tokens of the turns in turns[:i] whose group is pinned
        self._pn = [0]  # count of those turns
        self._gstart: list[int] = []  # index of the first turn of each turn's group
        self._tool_at: dict[str, int] = {}  # tool_use id -> index of its turn

    # ---- reading --------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._turns)

    def __getitem__(self, i: int) -> Turn:
        return self._turns[i]

    def __iter__(self) -> Any:
        return iter(self._turns)

    @property
    def total_tokens(self) -> int:
        return self._cum[-1]

    def tokens(self, start: int, stop: int) -> int:
        """Tokens of ``turns[start:stop]``."""
        return self._cum[stop] - self._cum[start]

    def pinned_tokens_before(self, c: int) -> int:
        return self._pcum[c]

    def pinned_count_before(self, c: int) -> int:
        return self._pn[c]

    def group_start(self, i: int) -> int:
        return self._gstart[i]

    def is_boundary(self, c: int) -> bool:
        """May a cut fall before turn ``c`` without splitting a group?"""
        return c >= len(self._turns) or self._gstart[c] == c

    def next_boundary(self, c: int) -> int:
        n = len(self._turns)
        while c < n and self._gstart[c] != c:
            c += 1
        return c

    def group_pinned(self, i: int) -> bool:
        """Whether the group of turn ``i`` is pinned (a pin on one member holds them all)."""
        s = self._gstart[i]
        return self._pn[s + 1] - self._pn[s] == 1

    # ---- writing --------------------------------------------------------------------
    def append(
        self,
        role: str,
        content: str | Sequence[Mapping[str, Any]],
        *,
        pinned: bool = False,
        usage: Usage | None = None,
        request_estimate: int | None = None,
        estimate: int | None = None,
    ) -> Turn:
        """Add a turn; its estimate is counted here, once (or taken from ``estimate``)."""
        blocks = normalize_content(content)
        kind = kind_of(role, blocks)
        if estimate is None:
            estimate = MESSAGE_OVERHEAD + sum(block_tokens(b, self.encoding) for b in blocks)
        elif isinstance(estimate, bool) or not isinstance(estimate, int) or estimate < 0:
            raise ValueError(f"estimate must be a non-negative int, got {estimate!r}")
        turn = Turn(
            id=len(self._turns),
            kind=kind,
            content=blocks,
            estimate=estimate,
            pinned=pinned,
            usage=usage,
            request_estimate=request_estimate,
        )
        self._push(turn)
        return turn

    def _push(self, turn: Turn) -> None:
        i, estimate, pinned = turn.id, turn.estimate, turn.pinned
        self._turns.append(turn)
        self._cum.append(self._cum[-1] + estimate)
        self._gstart.append(i)
        self._pcum.append(self._pcum[-1] + (estimate if pinned else 0))
        self._pn.append(self._pn[-1] + (1 if pinned else 0))
        for tid in turn.tool_use_ids:
            self._tool_at[tid] = i
        # A result joins the group of the call it answers, and everything in between.
        owners = [self._tool_at[t] for t in turn.tool_result_ids if t in self._tool_at]
        if owners:
            start = min(self._gstart[j] for j in owners)
            if start < i:
                self._regroup(start, i)

    def pop(self) -> Turn:
        """Remove the last turn and return it. The groups and sums are rebuilt from the
        turns that stay (a tool result merged its call's group; without it they part)."""
        if not self._turns:
            raise IndexError("pop from an empty turn log")
        last = self._turns[-1]
        kept = self._turns[:-1]
        self._turns, self._cum, self._pcum, self._pn = [], [0], [0], [0]
        self._gstart, self._tool_at = [], {}
        for t in kept:
            self._push(t)
        self.epoch += 1
        return last

    def set_pinned(self, turn_id: int, pinned: bool = True) -> Turn:
        turn = self._turns[turn_id]
        if turn.pinned != pinned:
            self._turns[turn_id] = replace(turn, pinned=pinned)
            s = self._gstart[turn_id]
            self._recount(s)
            self.epoch += 1
        return self._turns[turn_id]

    def _regroup(self, start: int, end: int) -> None:
        s = self._gstart[start]
        for k in range(s, end + 1):
            self._gstart[k] = s
        self._recount(s)
        if any(t.pinned for t in self._turns[s : end + 1]):
            self.epoch += 1  # pinned sums of older turns changed

    def _recount(self, s: int) -> None:
        """Recompute the pinned sums from index ``s`` (rare: pins and merges only)."""
        n = len(self._turns)
        k = s
        while k < n:
            g = k
            e = self.next_boundary(k + 1)
            pinned = any(self._turns[j].pinned for j in range(g, e))
            for j in range(g, e):
                est = self._turns[j].estimate
                self._pcum[j + 1] = self._pcum[j] + (est if pinned else 0)
                self._pn[j + 1] = self._pn[j] + (1 if pinned else 0)
            k = e

    def replace_usage(self, turn_id: int, usage: Usage | None, request_estimate: int | None) -> None:
        self._turns[turn_id] = replace(self._turns[turn_id], usage=usage, request_estimate=request_estimate)
