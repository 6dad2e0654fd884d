"""The one packing engine.

Format splitters only say where a section may be cut (``Splitter.split``); this module
decides which cuts to use: take the sections of the highest level, merge neighbours
greedily up to the budget, and descend into a section only when it does not fit.

Exact budgets, cheaply: a parent range is encoded once; the token ends of that
encoding give every candidate chunk an estimate by bisection. The estimate is exact
when both edges of the candidate are *additive junctions* (see ``_Sizer.additive``);
otherwise the candidate is encoded once more to verify, stepping back one section
if it is over. Every emitted count is therefore exact.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from sdk._tokens import get_encoding, token_byte_lengths

from ._types import Section

__all__ = ["Engine", "RawChunk", "Sizer"]


def _additive_o200k(text: str, p: int) -> bool:
    # o200k's pre-tokenizer: a piece holding a line break can only run on over
    # whitespace, or over "/" (`` ?[^\s\p{L}\p{N}]+[\r\n/]*``); no alternative looks
    # behind. So a cut after CR/LF and before a non-space, non-"/" character is a
    # pre-tokenizer piece boundary in any context: counts on both sides add up.
    b = text[p]
    return text[p - 1] in "\r\n" and not b.isspace() and b != "/"


def _additive_cl100k(text: str, p: int) -> bool:
    return text[p - 1] in "\r\n" and not text[p].isspace()


_ADDITIVE: dict[str, Callable[[str, int], bool]] = {
    "o200k_base": _additive_o200k,
    "cl100k_base": _additive_cl100k,
}


def _never(text: str, p: int) -> bool:
    return False


class Sizer:
    """Exact token counts for one encoding (the ChunkSizer of this engine)."""

    __slots__ = ("_encode", "_lengths", "additive", "name")

    def __init__(self, encoding: str) -> None:
        enc = get_encoding(encoding)
        self.name = encoding
        self._encode = enc.encode_ordinary
        self._lengths = token_byte_lengths(encoding)
        self.additive: Callable[[str, int], bool] = _ADDITIVE.get(encoding, _never)

    def count(self, text: str) -> int:
        return len(self._encode(text))

    def encode(self, text: str) -> list[int]:
        return self._encode(text)

    def byte_ends(self, tokens: list[int]) -> list[int]:
        """Cumulative UTF-8 byte end of each token."""
        return list(accumulate(map(self._lengths.__getitem__, tokens)))


@dataclass(frozen=True, slots=True)
class RawChunk:
    start: int
    end: int
    tokens: int
    first: Section
    oversize: bool = False


class Engine:
    """Packs the sections of one text into chunks of at most ``budget`` tokens."""

    __slots__ = ("budget", "out", "sizer", "text")

    def __init__(self, text: str, budget: int, sizer: Sizer) -> None:
        self.text = text
        self.budget = budget
        self.sizer = sizer
        self.out: list[RawChunk] = []

    def run(self, root: Section) -> list[RawChunk]:
        if root.start == root.end:
            return []
        tokens = self.sizer.encode(self.text[root.start : root.end])
        self._place(root, tokens)
        return self.out

    def _place(self, section: Section, tokens: list[int]) -> None:
        """Emit ``section`` whole if it fits, else cut it and pack its parts."""
        n = len(tokens)
        if n <= self.budget:
            self.out.append(RawChunk(section.start, section.end, n, section))
            return
        parts = section.splitter.split(self.text, section) if section.splitter is not None else ()
        if len(parts) < 2:
            self.out.append(RawChunk(section.start, section.end, n, section, oversize=True))
            return
        self._pack(section.start, section.end, parts, tokens)

    def _pack(self, start: int, end: int, parts: Sequence[Section], tokens: list[int]) -> None:
        text = self.text
        sizer = self.sizer
        budget = self.budget
        k = len(parts)
        # Byte offset (relative to ``start``) of every part boundary.
        if text[start:end].isascii():
            offsets = [p.start - start for p in parts]
            offsets.append(end - start)
        else:
            offsets = [0]
            acc = 0
            for p in parts:
                acc += len(text[p.start : p.end].encode("utf-8"))
                offsets.append(acc)
        ends = sizer.byte_ends(tokens)
        prefix = [bisect_right(ends, b) for b in offsets]
        prefix[-1] = len(tokens)
        additive = sizer.additive
        exact_edge = [True]
        exact_edge.extend(additive(text, p.start) for p in parts[1:])
        exact_edge.append(True)

        # ``open_`` is the last chunk emitted from a part that had to be cut: the parts
        # after it may join it while they fit (left-to-right greedy, like text-splitter).
        open_: RawChunk | None = None
        i = 0
        while i < k:
            if open_ is not None:
                base, origin, first = open_.tokens, open_.start, open_.first
            else:
                base, origin, first = 0, parts[i].start, parts[i]
            j = bisect_right(prefix, prefix[i] + budget - base, i + 1) - 1
            n = -1
            while j > i:
                if exact_edge[i] and exact_edge[j]:
                    n = base + prefix[j] - prefix[i]
                    if n <= budget:
                        break
                else:
                    n = sizer.count(text[origin : parts[j - 1].end])
                    if n <= budget:
                        break
                j -= 1
            if j <= i:
                if open_ is not None:
                    open_ = None
                    continue
                # The first part alone is over the estimate: count it, then cut it.
                part = parts[i]
                self._place(part, sizer.encode(text[part.start : part.end]))
                last = self.out[-1]
                open_ = None if last.oversize else last
                i += 1
                continue
            made = RawChunk(origin, parts[j - 1].end, n, first)
            if open_ is not None:
                self.out[-1] = made
                open_ = None
            else:
                self.out.append(made)
            i = j
