"""The one packing engine.

Format splitters only say where a section may be cut (``Splitter.split``); this module
decides which cuts to use: take the sections of the highest level, merge neighbours
greedily up to the budget, and descend into a section only when it does not fit.

Exact budgets, cheaply: the parts of a range are encoded once each (together one
encode pass of the range); prefix sums of their counts estimate any run of parts by
bisection. The sum is exact when every junction inside the run is *additive* (see
``additive_*``); otherwise the candidate is encoded once more to verify, stepping back
one part if it is over. Every emitted count is therefore exact. A range that cannot
fit (more characters than ``budget`` tokens of the longest token could cover) is cut
without being counted at all.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from sdk._tokens import get_encoding, token_byte_lengths

from ._junctions import ADDITIVE, next_additive, prev_additive
from ._types import Section

__all__ = ["Engine", "RawChunk", "Sizer"]


def _never(text: str, p: int) -> bool:
    return False


class Sizer:
    """Exact token counts for one encoding (the ChunkSizer of this engine)."""

    __slots__ = ("_encode", "_lengths", "additive", "max_token_chars", "name")

    def __init__(self, encoding: str) -> None:
        enc = get_encoding(encoding)
        self.name = encoding
        self._encode = enc.encode_ordinary
        # No token holds more characters than bytes, so a range longer than
        # ``budget * max_token_chars`` characters cannot fit and need not be counted.
        self._lengths = token_byte_lengths(encoding)
        self.max_token_chars = max(self._lengths)
        self.additive: Callable[[str, int], bool] = ADDITIVE.get(encoding, _never)

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
    sticky_end: bool = False  # ends with a part that should open the next chunk
    partial: bool = False  # holds part of a value its format treats as one


class Engine:
    """Packs the sections of one text into chunks of at most ``budget`` tokens."""

    __slots__ = ("ascii", "budget", "out", "sizer", "text")

    def __init__(self, text: str, budget: int, sizer: Sizer) -> None:
        self.text = text
        self.budget = budget
        self.sizer = sizer
        self.out: list[RawChunk] = []
        self.ascii = text.isascii()

    def run(self, root: Section) -> list[RawChunk]:
        if root.start < root.end:
            self._place(root, None)
        return self._merge_neighbours(self.out)

    def _merge_neighbours(self, chunks: list[RawChunk]) -> list[RawChunk]:
        """Join neighbouring chunks that fit together.

        Packing never leaves two mergeable chunks side by side within one level; they
        appear only around a part that had to be cut (its first pieces could have
        joined the chunk before it). Merging removes cuts, never adds one.
        """
        text = self.text
        budget = self.budget
        additive = self.sizer.additive
        out: list[RawChunk] = []
        last = len(chunks) - 1
        for index, c in enumerate(chunks):
            if out:
                prev = out[-1]
                if (
                    not prev.oversize
                    and not c.oversize
                    and (not c.sticky_end or index == last)  # a lone heading waits for its section
                    and (prev.first.kind == c.first.kind or prev.sticky_end)
                    and prev.tokens + c.tokens <= budget + 2
                ):
                    if additive(text, c.start):
                        n = prev.tokens + c.tokens
                    else:
                        n = self.sizer.count(text[prev.start : c.end])
                    if n <= budget:
                        out[-1] = RawChunk(
                            prev.start,
                            c.end,
                            n,
                            prev.first,
                            sticky_end=c.sticky_end,
                            partial=prev.partial or c.partial,
                        )
                        continue
            out.append(c)
        return out

    def _place(self, section: Section, tokens: list[int] | None, lead: RawChunk | None = None) -> None:
        """Emit ``section`` whole if it fits, else cut it and pack its parts.

        ``tokens``, when given, is the exact encoding of the section; it is reused
        to size the parts so no character is encoded twice on the way down.
        ``lead`` is a chunk that must not end where it does (it ends with a sticky
        part, a heading): the start of this section joins it if it can.
        """
        text = self.text
        if tokens is None and section.end - section.start <= self.budget * self.sizer.max_token_chars:
            tokens = self.sizer.encode(text[section.start : section.end])
        if tokens is not None and len(tokens) <= self.budget:
            if lead is not None:
                joined = self._join(lead, section, len(tokens))
                if joined is not None:
                    self.out[-1] = joined
                    return
            if lead is None or section.kind != "markdown" or section.splitter is None:
                # Fits alone: whole (a fenced block that fits is never cut for a heading).
                self.out.append(
                    RawChunk(
                        section.start,
                        section.end,
                        len(tokens),
                        section,
                        sticky_end=section.sticky,
                        partial=section.partial,
                    )
                )
                return
        parts = section.splitter.split(text, section) if section.splitter is not None else ()
        if len(parts) < 2:
            n = len(tokens) if tokens is not None else self.sizer.count(text[section.start : section.end])
            self.out.append(
                RawChunk(
                    section.start, section.end, n, section, oversize=n > self.budget, partial=section.partial
                )
            )
            return
        self._pack(parts, tokens, lead)

    def _join(self, lead: RawChunk, section: Section, n: int) -> RawChunk | None:
        if self.sizer.additive(self.text, section.start):
            total = lead.tokens + n
        else:
            total = self.sizer.count(self.text[lead.start : section.end])
        if total > self.budget:
            return None
        return RawChunk(
            lead.start,
            section.end,
            total,
            lead.first,
            sticky_end=section.sticky,
            partial=lead.partial or section.partial,
        )

    def _pack(self, parts: Sequence[Section], tokens: list[int] | None, lead: RawChunk | None = None) -> None:
        text = self.text
        sizer = self.sizer
        count = sizer.count
        budget = self.budget
        k = len(parts)
        additive = sizer.additive
        # part_tokens(i): the exact encoding of part i when it is known for free.
        if tokens is None:
            # One encode of the whole range costs what one per part would, and its
            # token ends make any run's count exact from the run's two edges alone.
            tokens = sizer.encode(text[parts[0].start : parts[-1].end])
        # The range's token ends size every run of parts; a run's count is exact when
        # both of its edges are additive (the range's own edges always are).
        ends = sizer.byte_ends(tokens)
        start = parts[0].start
        ascii_range = self.ascii or text[start : parts[-1].end].isascii()
        if ascii_range:
            offsets = [p.start - start for p in parts]
            offsets.append(parts[-1].end - start)
        else:
            offsets, acc = [], 0
            for p in parts:
                offsets.append(acc)
                acc += len(text[p.start : p.end].encode("utf-8"))
            offsets.append(acc)
        prefix = [bisect_right(ends, b) for b in offsets]
        prefix[-1] = len(tokens)
        whole = tokens
        # Whether part boundary m is additive; asked only at candidate chunk edges.
        edges: dict[int, bool] = {0: True, k: True}

        def edge(m: int) -> bool:
            known = edges.get(m)
            if known is None:
                known = edges[m] = additive(text, parts[m].start)
            return known

        def width(a: int, b: int) -> int:
            return b - a if ascii_range else len(text[a:b].encode("utf-8"))

        def run_count(i: int, j: int) -> int:
            # Exact count of parts i..j-1. An edge that is not additive is moved
            # to the nearest additive position inside the run, and only the
            # stretch between is encoded again.
            a, b = parts[i].start, parts[j - 1].end
            lo, hi, extra, r = prefix[i], prefix[j], 0, a
            if not edge(i):
                found = next_additive(additive, text, a, b)
                if found is None:
                    return count(text[a:b])
                r = found
                extra += count(text[a:r])
                lo = bisect_right(ends, offsets[i] + width(a, r))
            if not edge(j):
                back = prev_additive(additive, text, b, r - 1)
                if back is None:
                    return count(text[a:b])
                extra += count(text[back:b])
                hi = bisect_right(ends, offsets[j] - width(back, b))
            return extra + hi - lo

        def part_tokens(i: int) -> list[int] | None:
            return whole[prefix[i] : prefix[i + 1]] if edge(i) and edge(i + 1) else None

        # ``open_`` is the last chunk emitted from a part that had to be cut: the parts
        # after it may join it while they fit (left-to-right greedy, like text-splitter).
        open_: RawChunk | None = lead
        i = 0
        while i < k:
            if open_ is not None:
                base, origin, first = open_.tokens, open_.start, open_.first
                joined_exactly = additive(text, parts[i].start)
            else:
                base, origin, first = 0, parts[i].start, parts[i]
                joined_exactly = True
            j = bisect_right(prefix, prefix[i] + budget - base, i + 1) - 1
            n = -1
            while j > i:
                if open_ is None:
                    n = run_count(i, j)
                elif joined_exactly:
                    n = base + run_count(i, j)
                else:
                    n = count(text[origin : parts[j - 1].end])
                if n <= budget:
                    break
                # Over: step back at least one part, more if the estimate was low.
                low_by = n - (base + prefix[j] - prefix[i])
                j = min(j - 1, bisect_right(prefix, prefix[i] + budget - base - low_by, i + 1) - 1)
            if j > i + 1 and parts[j - 1].sticky:
                # A sticky part (a heading) opens the next chunk instead of ending this one.
                j -= 1
                n = base + run_count(i, j) if (open_ is None or joined_exactly) else -1
                if n < 0:
                    n = count(text[origin : parts[j - 1].end])
            if j <= i:
                if open_ is not None and not open_.sticky_end:
                    open_ = None
                    continue
                # The part does not fit (after a heading, or at all): cut it; its first
                # pieces join a heading that must not end a chunk.
                self._place(parts[i], part_tokens(i), open_)
                last = self.out[-1]
                open_ = None if last.oversize else last
                i += 1
                continue
            made = RawChunk(
                origin,
                parts[j - 1].end,
                n,
                first,
                sticky_end=parts[j - 1].sticky,
                partial=(open_ is not None and open_.partial) or parts[i].partial or parts[j - 1].partial,
            )
            if open_ is not None:
                self.out[-1] = made
            else:
                self.out.append(made)
            open_ = made if made.sticky_end else None
            i = j
