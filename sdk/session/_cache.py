"""Where a session puts its prompt-cache breakpoints (``Session(cache="auto")``).

The hosted Messages API caches the prompt up to each ``cache_control`` breakpoint: a
later request that starts with the same prefix reads it at a tenth of the input price
(a write costs a quarter more than plain input), and its first token comes sooner. The
API takes at most four breakpoints a request, looks back from each one at most 20 blocks
for a prefix it holds, and ignores one whose prefix is shorter than the model's
minimum. The session knows which part of its prompt is stable, so it places them:

- **system**: the end of the system prompt (the tool definitions come before it, so it
  covers them too; the last tool's when there is no system prompt);
- **head**: the end of the pinned turns before the elision marker, stable while the
  window slides over the turns after it;
- **stable**: the end of what the previous request sent, when this one starts with it
  unchanged (it reads there however many blocks the new turns added);
- **newest**: the end of the newest turn (written now, read by the next request).

A breakpoint is placed only where the prompt up to it holds at least the model's
minimum cacheable length (by the session's estimate, scaled by what the server
reported), never on a block the API cannot mark (thinking, an empty text).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CACHE_CONTROL",
    "MAX_BREAKPOINTS",
    "Breakpoint",
    "CacheMode",
    "CacheReport",
    "markable",
    "min_cacheable_tokens",
]

CACHE_CONTROL: Mapping[str, str] = {"type": "ephemeral"}
MAX_BREAKPOINTS = 4  # the Messages API's limit per request

CacheMode = Literal["auto", "off"]
Where = Literal["tools", "system", "head", "stable", "newest"]

# Prices of cached input as multiples of plain input (5-minute breakpoints).
READ_PRICE = 0.1
WRITE_PRICE = 1.25

# The minimum cacheable prompt by model, most specific name first (the API caches
# nothing shorter, silently). A model not listed gets the largest, so that no breakpoint
# is placed where it cannot work.
_MINIMUMS: tuple[tuple[str, int], ...] = (
    ("claude-opus-5", 512),
    ("claude-opus-4-8", 1024),
    ("claude-opus-4-7", 2048),
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-opus-4", 1024),
    ("claude-sonnet-5", 1024),
    ("claude-sonnet-4-6", 2048),
    ("claude-sonnet-4", 1024),
    ("claude-3-7-sonnet", 1024),
    ("claude-3-5-sonnet", 1024),
    ("claude-3-opus", 1024),
    ("claude-haiku-4-5", 4096),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
)
DEFAULT_MINIMUM = 4096

# Blocks the API does not take a breakpoint on.
_UNMARKABLE = frozenset({"thinking", "redacted_thinking"})


def min_cacheable_tokens(model: str) -> int:
    """The model's minimum cacheable prompt length in tokens (see the table above)."""
    name = model.lower()
    for prefix, n in _MINIMUMS:
        if name.startswith(prefix):
            return n
    return DEFAULT_MINIMUM


def markable(block: Mapping[str, Any]) -> bool:
    """Whether the API takes a ``cache_control`` breakpoint on ``block``."""
    kind = block.get("type")
    if kind in _UNMARKABLE:
        return False
    return not (kind == "text" and not block.get("text"))


def marked(block: Mapping[str, Any]) -> dict[str, Any]:
    return {**block, "cache_control": dict(CACHE_CONTROL)}


@dataclass(frozen=True, slots=True)
class Breakpoint:
    """One breakpoint of a request: ``where`` (see the module doc), the message and block
    it is on (``message`` -1: the system prompt or the tools), and the estimated tokens
    of the prompt up to it."""

    where: Where
    message: int
    block: int
    tokens: int


@dataclass(frozen=True, slots=True)
class CacheReport:
    """What the prompt cache did for a session's answers, from the server's usage reports.

    ``read_fraction``: the share of the input the cache served; ``saved_input_tokens``:
    the saving, in plain input tokens (reads at a tenth of the price, writes at a quarter
    more): multiply by the model's input price for money.
    """

    requests: int
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def read_fraction(self) -> float:
        total = self.total_input_tokens
        return self.cache_read_input_tokens / total if total else 0.0

    @property
    def saved_input_tokens(self) -> float:
        return self.cache_read_input_tokens * (1 - READ_PRICE) - self.cache_creation_input_tokens * (
            WRITE_PRICE - 1
        )
