"""The hosted Messages API's prompt cache, simulated for the tests and the session bench.

What it enforces and reports, as the API documents it: at most four ``cache_control``
blocks a request (more is a 400), none on a thinking block; the cache key of a
breakpoint is the whole prompt up to it (tools, then system, then messages); a
breakpoint whose prefix is shorter than the model's minimum is ignored; a request
reads the longest prefix it finds cached, looking back from each breakpoint at most
20 blocks; every (valid) breakpoint's prefix is written. The usage it answers splits the
input as the API does: ``cache_read_input_tokens``, ``cache_creation_input_tokens`` (from
the read point to the last breakpoint) and ``input_tokens`` (the rest).

Tokens are counted as the session estimates them (``o200k_base``: a text block by its
text, any other block by its JSON, a tool by its JSON, four more per message), so the
checks on lengths hold the session to its own numbers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from sdk import count_tokens
from sdk.session._turns import MESSAGE_OVERHEAD, block_tokens

LOOKBACK = 20
MAX_BREAKPOINTS = 4


class CacheRequestError(ValueError):
    """What the API answers 400 to."""


@dataclass
class Block:
    data: Mapping[str, Any]
    tokens: int
    marked: bool
    where: str  # "tools", "system" or "messages"
    message: int = -1


@dataclass
class Served:
    """One request as the cache saw it."""

    blocks: list[Block]
    breakpoints: list[int]  # block indexes with cache_control
    prefix: list[int]  # tokens up to and including each block
    hashes: list[str]
    read: int
    created: int
    input: int


@dataclass
class PromptCache:
    minimum: int
    entries: dict[str, int] = field(default_factory=dict)
    served: list[Served] = field(default_factory=list)
    _counts: dict[bytes, int] = field(default_factory=dict)  # block tokens by the block's JSON

    def _count(self, block: Mapping[str, Any], how: Any) -> int:
        key = orjson.dumps(block, option=orjson.OPT_SORT_KEYS)
        n = self._counts.get(key)
        if n is None:
            n = self._counts[key] = how(block)
        return n

    def blocks(self, body: Mapping[str, Any]) -> list[Block]:
        out: list[Block] = []
        for tool in body.get("tools") or ():
            plain = {k: v for k, v in tool.items() if k != "cache_control"}
            out.append(
                Block(plain, count_tokens(orjson.dumps(plain).decode()), "cache_control" in tool, "tools")
            )
        system = body.get("system") or ()
        if isinstance(system, str):
            system = [{"type": "text", "text": system}]
        for b in system:
            plain = {k: v for k, v in b.items() if k != "cache_control"}
            out.append(Block(plain, self._count(plain, block_tokens), "cache_control" in b, "system"))
        for m, msg in enumerate(body.get("messages") or ()):
            content = msg["content"]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            for k, b in enumerate(content):
                plain = {kk: v for kk, v in b.items() if kk != "cache_control"}
                if "cache_control" in b and b.get("type") in ("thinking", "redacted_thinking"):
                    raise CacheRequestError("thinking blocks cannot be marked with cache_control")
                tokens = self._count(plain, block_tokens) + (MESSAGE_OVERHEAD if k == 0 else 0)
                out.append(Block({"role": msg["role"], **plain}, tokens, "cache_control" in b, "messages", m))
        return out

    def serve(self, body: Mapping[str, Any]) -> dict[str, int]:
        """The usage the API would answer ``body`` with; raises :class:`CacheRequestError`."""
        blocks = self.blocks(body)
        marks = [i for i, b in enumerate(blocks) if b.marked]
        if len(marks) > MAX_BREAKPOINTS:
            raise CacheRequestError(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided"
            )
        prefix: list[int] = []
        hashes: list[str] = []
        h = hashlib.sha256()
        total = 0
        for b in blocks:
            total += b.tokens
            prefix.append(total)
            h.update(orjson.dumps(b.data, option=orjson.OPT_SORT_KEYS))
            hashes.append(h.copy().hexdigest())
        valid = [i for i in marks if prefix[i] >= self.minimum]
        read_at = -1
        for i in valid:
            for j in range(i, max(-1, i - LOOKBACK), -1):
                if hashes[j] in self.entries:
                    read_at = max(read_at, j)
                    break
        read = prefix[read_at] if read_at >= 0 else 0
        last = max(valid, default=-1)
        created = prefix[last] - read if last > read_at else 0
        for i in valid:
            self.entries[hashes[i]] = prefix[i]
        usage = {
            "input_tokens": total - read - created,
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": read,
        }
        self.served.append(Served(blocks, marks, prefix, hashes, read, created, usage["input_tokens"]))
        return usage

    @property
    def read_fraction(self) -> float:
        total = sum(s.read + s.created + s.input for s in self.served)
        return sum(s.read for s in self.served) / total if total else 0.0


def hash_of(blocks: Sequence[Block]) -> str:
    h = hashlib.sha256()
    for b in blocks:
        h.update(orjson.dumps(b.data, option=orjson.OPT_SORT_KEYS))
    return h.hexdigest()
