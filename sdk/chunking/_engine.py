"""The one packing engine.

Format splitters only say where a section may be cut (``Splitter.split``); this module
decides which cuts to use: take the sections of the highest level, merge neighbours
greedily up to the budget, and descend into a section only when it does not fit.

Exact budgets, cheaply: a range is encoded once, and that encoding (a ``_View``: the
UTF-8 end offset of every token) serves every level of the descent below it. Any run
of parts is sized from it by bisection; the count is exact between positions where
tiktoken's pre-tokenizer cuts in any context (*additive* ones, see ``_junctions``) and
at the view's own edges. (For a tokenizer other than tiktoken's, no position is
proven additive: a view's token ends are only estimates, and every count the engine
reports is a fresh encode of exactly that text.) A chunk edge that is neither is moved to the nearest additive
position inside, and only that short stretch is encoded again, so every emitted count
is exact. A range that cannot fit (more characters than ``budget`` tokens of the
longest token could cover) is cut without being counted at all. A long range is
encoded a segment at a time, cut at additive positions, or at a *seam* inside a piece
that has none for thousands of characters; a count across a seam is made afresh. After packing,
neighbours that fit together are joined (they appear only around a part that had to
be cut), and sticky parts (headings, keys, leading comments) open the chunk of what
follows them instead of ending one.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from sdk.tokens import Encoder, EncodingSpec, token_byte_lengths, token_counter

from . import _accel, _prose
from ._junctions import _REACH, ADDITIVE, _cl100k, _o200k, next_additive, prev_additive
from ._types import Section

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from typing_extensions import Buffer

__all__ = ["Engine", "RawChunk", "Sizer", "flat_state"]


def _never(text: str, p: int) -> bool:
    return False


# The junction rules the native pass knows, by its numbers for them (the same rules in
# C; a rule wrapped or replaced, as tests do, is asked from Python).
_RULES: dict[Callable[[str, int], bool], int] = {_o200k: 1, _cl100k: 2}


# Characters per encode call on a long range: the encoder returns a list of Python ints
# (36 bytes a token; a flag is two or three tokens), so a whole 16 MB text at once would
# cost more than the text. Inside one pre-tokenizer piece, shorter: tiktoken takes about
# 50 bytes a byte to encode one.
_SEGMENT = 1 << 16
_PIECE_SEGMENT = 1 << 14
_ENDS_BLOCK = 1 << 15
# Parts of one packing up to this many are sized with Python lists (bisected one by
# one up to _FEWER_PARTS, by numpy past it); more, into machine integers by numpy.
_FEWER_PARTS = 8
_FEW_PARTS = 512
_DTYPES = {"i": "int32", "q": "int64"}

# No bound is known for other tokenizers: a normalizer may drop characters, and an
# unknown-word token may stand for a whole word.
_UNBOUNDED = 1 << 62

# Stretches up to this many characters are counted once per engine by their text.
_SHORT = 32

# The memos are emptied when one holds this many entries: packing asks about the edges
# near the chunk it is making, and a memo of every edge of a run of flags (an edge
# every 8 bytes) would hold more than the text.
_MEMO = 1 << 12


class Sizer:
    """Exact token counts for one encoding (the ChunkSizer of this engine).

    ``encoding`` is a tiktoken name, a ``tokenizers.Tokenizer``, a path to a
    ``tokenizer.json`` or an object with ``encode(str)`` (see ``sdk.count_tokens``).
    """

    __slots__ = (
        "_byte_len",
        "_encode",
        "_ids",
        "_len32",
        "_lengths",
        "_other",
        "additive",
        "max_token_bytes",
        "max_token_chars",
        "name",
        "tiktoken",
    )

    def __init__(self, encoding: EncodingSpec) -> None:
        counter = token_counter(encoding)
        self.name = counter.name
        # Exact like tiktoken's encode_ordinary, and safe on any input (long runs of
        # whitespace make tiktoken itself panic).
        self._encode = counter.encode
        # The ids of a whole section, for ``char_ends``: from tiktoken, a buffer of
        # 4-byte ids, which no Python int is made for (``_encode``'s lists count chunks).
        self._ids: Callable[[str], Sequence[int] | Buffer] = counter.encode
        self.tiktoken = isinstance(counter, Encoder)
        if isinstance(counter, Encoder):
            # No token holds more characters than bytes, so a range longer than
            # ``budget * max_token_chars`` characters cannot fit and need not be counted.
            self._lengths: tuple[int, ...] = token_byte_lengths(counter.name)
            # As 4-byte integers, for the native pass; as a numpy array (``_byte_len``)
            # only once the fallback needs one, so numpy (0.16 s to import) is not
            # loaded where the native passes run.
            self._len32 = array("i", self._lengths).tobytes()
            self._ids = counter.encode_ids
            self._byte_len: npt.NDArray[np.int64] | None = None
            self.max_token_bytes = self.max_token_chars = max(self._lengths)
            self.additive: Callable[[str, int], bool] = ADDITIVE.get(counter.name, _never)
        else:
            # Additivity is proven only for tiktoken's pre-tokenizers.
            self._lengths = ()
            self._byte_len = None
            self.max_token_bytes = self.max_token_chars = _UNBOUNDED
            self.additive = _never
            # Their UTF-8 token ends (estimates), which ``char_ends`` maps to characters.
            self._other = counter.encode_ends

    def count(self, text: str) -> int:
        return len(self._encode(text))

    def encode(self, text: str) -> list[int]:
        return self._encode(text)

    def char_ends(self, text: str, start: int = 0, code: str = "q") -> array[int]:
        """The end of each token of ``text`` in characters (code points), counted from
        ``start``, as an ``array(code)``; a token that ends inside a character's UTF-8
        bytes ends after that character.

        So the tokens ending at or before a position between two characters are those
        whose end is at most that position, exactly as with UTF-8 ends, and the engine
        works in the text's own offsets: no UTF-8 width is ever measured per part.
        Exact for tiktoken; for other tokenizers exact in number and estimated in place.
        Walked in C beside the token lengths by a kernel; without it, gathered
        and summed by numpy (Python's ``map`` and ``accumulate`` over the ids cost
        about half as much as the encode itself). The engine hands it at most
        ``_SEGMENT`` characters at a time, so its temporaries stay small.
        """
        kernels = _accel.kernels
        if _accel.OFF and not _accel.on("char_ends"):
            kernels = None  # type: ignore[assignment]
        if self.tiktoken and kernels is not None:
            # One walk over the text's UTF-8 beside the token lengths, in C: the UTF-8
            # the encoder made and the str keeps, read in place (no copy of the text,
            # no numpy temporaries: about 20% of an encode pass, and as much again in
            # fixed costs on short texts, before).
            ids = self._ids(text)
            out = array(code)
            out.frombytes(kernels.char_ends(text, ids, self._len32, start, code == "q"))
            return out
        import numpy as np

        ends: npt.NDArray[np.int64]
        if self.tiktoken:
            lengths = self._byte_len
            if lengths is None:
                lengths = self._byte_len = np.asarray(self._lengths, dtype=np.int64)
            ends = np.cumsum(lengths[np.frombuffer(array("q", self._encode(text)), dtype=np.int64)])
        else:
            ends = np.asarray(self._other(text, 0), dtype=np.int64)
        if not text.isascii():
            # The characters that start before each UTF-8 offset: a running count of the
            # bytes that start a character.
            data = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
            before = np.zeros(len(data) + 1, dtype=np.int64)
            np.cumsum((data & 0xC0) != 0x80, out=before[1:])
            ends = before[np.clip(ends, 0, len(data))]
        ends += start
        out = array(code)
        out.frombytes(ends.astype(_DTYPES[code], copy=False).tobytes())
        return out


def _numpy(values: Sequence[int]) -> npt.NDArray[np.integer[Any]]:
    """``values`` as a numpy array, without a copy when they are machine integers."""
    import numpy as np

    if isinstance(values, array) and values.typecode in _DTYPES:
        return np.frombuffer(values, dtype=_DTYPES[values.typecode])
    return np.asarray(values, dtype=np.int64)


def _zeros(n: int) -> tuple[array[int], npt.NDArray[np.int64]]:
    """``n`` zeros as an ``array('q')`` (indexed from Python at a list's speed) and a
    numpy view of the same memory, to fill it."""
    import numpy as np

    out = array("q", [0]) * n
    return out, np.frombuffer(out, dtype=np.int64)


_new_section = tuple.__new__

_T = TypeVar("_T", bound=type)

# The types of the states of flat sections (see ``flat_state``).
_FLAT: tuple[type, ...] = ()


def flat_state(cls: _T) -> _T:
    """Register ``cls`` as the state of *flat* sections (a class decorator).

    A flat section is a run of sibling parts that a splitter hands as one section so
    that thousands of siblings need no Section each until one must be looked at (the
    members of a large JSON array, the values of a long JSON Lines file). The engine
    packs it as if its parts stood in its place: one that does not fit with the chunk
    before it is cut, so that its first parts fill that chunk, even when it would fit
    alone.
    """
    global _FLAT
    if cls not in _FLAT:
        _FLAT = (*_FLAT, cls)
        if _accel.native is not None:
            _accel.native.flat_setup(_FLAT)
    return cls


def _refines(part: Section, section: Section) -> bool:
    """Whether ``part``, the only part a splitter gave for ``section``, is the same
    span seen another way: by another splitter, or by the same one in a state of
    another type (a Markdown section that is one table). It is placed in the
    section's stead; a part in the section's own splitter and type of state could be
    handed back forever."""
    return (
        isinstance(part, Section)
        and part.splitter is not None
        and (part.splitter is not section.splitter or type(part.state) is not type(section.state))
        and part.start == section.start
        and part.end == section.end
    )


def _meta(section: Section) -> Section:
    """``section`` as a chunk's metadata (its kind, language and path): without its
    splitter and state, which may hold a whole parse (a fenced block's syntax tree)
    that the chunk must not keep alive. (Built as a tuple: ``_replace`` costs a
    Python call per field, once per chunk.)"""
    if section.splitter is None and section.state is None:
        return section
    light: Section = _new_section(
        Section,
        (section.start, section.end, None, None, section.kind, section.language, section.path, False, False),
    )
    return light


class RawChunk(NamedTuple):
    """A chunk as the engine makes it: a span, its exact count, and the metadata of
    its first part. (A named tuple: the native passes make one as ``tuple.__new__``
    does, without a Python call, and the engine makes one or more per chunk.)"""

    start: int
    end: int
    tokens: int
    first: Section
    oversize: bool = False
    sticky_end: bool = False  # ends with a part that should open the next chunk
    partial: bool = False  # holds part of a value its format treats as one


@dataclass(frozen=True, slots=True)
class _View:
    """One encoding of ``text[lo:hi]``: where each of its tokens ends in the whole text
    (a character offset; see ``Sizer.char_ends``).

    Every part inside ``[lo, hi)`` is sized from it: counts taken from it are exact
    between additive positions and at ``lo``/``hi`` themselves.
    """

    ends: Sequence[int]
    lo: int
    hi: int
    # Where it was encoded in separate segments at positions that are not additive (a
    # run with no additive position, such as a megabyte of "[" or of letters, is one
    # pre-tokenizer piece: encoding it whole takes about 50 bytes of the tokenizer's
    # memory per input byte). Counts from the view are exact only within one segment.
    seams: tuple[int, ...] = ()

    def seam_inside(self, a: int, b: int) -> bool:
        """Whether a seam lies strictly between ``a`` and ``b``."""
        seams = self.seams
        if not seams:
            return False
        i = bisect_right(seams, a)
        return i < len(seams) and seams[i] < b


class Engine:
    """Packs the sections of one text into chunks of at most ``budget`` tokens."""

    __slots__ = (
        "_back",
        "_head",
        "_junction",
        "_prose",
        "_short",
        "_tail",
        "_to",
        "_view_los",
        "_views",
        "budget",
        "code",
        "out",
        "sizer",
        "text",
    )

    def __init__(self, text: str, budget: int, sizer: Sizer) -> None:
        self.text = text
        self.budget = budget
        self.sizer = sizer
        self.out: list[RawChunk] = []
        # Token ends are character offsets in the text: 4-byte integers hold them
        # unless the text has 2**31 characters or more.
        self.code = "i" if len(text) < 1 << 31 else "q"
        # Memos by position (packing asks about the same chunk edge several times):
        # the additive position at or after it / at or before it (-1: none near),
        # and the exact count of the stretch up to / back to it.
        self._to: dict[int, int] = {}
        self._back: dict[int, int] = {}
        self._head: dict[int, int] = {}
        self._tail: dict[int, int] = {}
        # Counts of short stretches by their text: the stretches re-counted at chunk
        # edges that are not additive are mostly the same few strings (an indentation,
        # ``if``, ``)``), so most are a dict hit instead of an encoder call.
        self._short: dict[str, int] = {}
        # Every encoding made, in text order (they do not overlap): a stretch that
        # joins two chunks is counted from the one covering it.
        self._views: list[_View] = []
        self._view_los: list[int] = []
        # What the native pack needs to cut prose parts itself (see ``_prose_args``).
        self._prose: tuple[object, ...] | None = None
        # The junction table, filled for the text on first use (the additive scans').
        self._junction: bytearray | None = None

    def _forward(self, p: int) -> int:
        """``p`` if additive, else the first additive position after it within reach, else -1."""
        found = self._to.get(p)
        if found is None:
            additive = self.sizer.additive
            text = self.text
            kernels = _accel.kernels
            if _accel.OFF and not _accel.on("additive"):
                kernels = None  # type: ignore[assignment]
            rule = _RULES.get(additive)
            if kernels is not None and rule is not None:
                found = kernels.additive(*_accel.reader(text), p, rule, 1, self._classes())
            elif additive(text, p):
                found = p
            elif additive is _never:
                found = -1
            else:
                q = next_additive(additive, text, p, len(text))
                found = -1 if q is None else q
            if len(self._to) >= _MEMO:
                self._to.clear()
            self._to[p] = found
        return found

    def _backward(self, p: int) -> int:
        """``p`` if additive, else the last additive position before it within reach
        (down to 0), else -1."""
        found = self._back.get(p)
        if found is None:
            additive = self.sizer.additive
            text = self.text
            kernels = _accel.kernels
            if _accel.OFF and not _accel.on("additive"):
                kernels = None  # type: ignore[assignment]
            rule = _RULES.get(additive)
            if kernels is not None and rule is not None:
                found = kernels.additive(*_accel.reader(text), p, rule, -1, self._classes())
            elif additive(text, p):
                found = p
            else:
                limit = max(-1, p - _REACH)
                start = p
                if p > 0 and text[p - 1] in " \t":
                    # No position right after a space or a tab is additive (a pattern
                    # takes one space with what follows it, or the whole run): step over
                    # an indentation at once instead of asking at each of its positions.
                    start = len(text[limit + 1 : p].rstrip(" \t")) + limit + 2
                q = prev_additive(additive, text, start, limit)
                found = -1 if q is None else q
            if len(self._back) >= _MEMO:
                self._back.clear()
            self._back[p] = found
        return found

    def _classes(self) -> bytearray:
        """The junction table, filled for the text (once per engine)."""
        classes = self._junction
        if classes is None:
            classes = self._junction = _prose.tables(self.text)[0]
        return classes

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
        budget = self.budget
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
                    n = self._joined_count(prev, c.start, c.end, c.tokens)
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

    def _count(self, a: int, b: int) -> int:
        """Exact count of ``text[a:b]``, by its text when it is short."""
        piece = self.text[a:b]
        if b - a > _SHORT:
            return self.sizer.count(piece)
        n = self._short.get(piece)
        if n is None:
            if len(self._short) >= _MEMO:
                self._short.clear()
            n = self._short[piece] = self.sizer.count(piece)
        return n

    def _covering(self, a: int, b: int) -> _View | None:
        """An encoding that covers ``[a, b)``, if one was made."""
        i = bisect_right(self._view_los, a) - 1
        if i >= 0:
            view = self._views[i]
            if b <= view.hi:
                return view
        return None

    def _exact(self, view: _View, a: int, b: int) -> int:
        """Exact count of ``text[a:b]`` from ``view`` (which covers it).

        Counts of the view are exact between positions where the pre-tokenizer cuts in
        any context (additive ones) or at the view's own edges. An edge that is neither
        is moved to the nearest additive position inside, and only the stretch between
        is encoded again.
        """
        ends = view.ends
        if view.seam_inside(a, b):
            return self._count(a, b)
        if a == view.lo and b == view.hi:
            return len(ends)
        if self.sizer.additive is _never:
            return self._count(a, b)
        extra = 0
        r = a
        if a != view.lo:
            r = self._forward(a)
            if r != a:
                if r < 0 or r >= b:
                    return self._count(a, b)
                head = self._head.get(a)
                if head is None:
                    if len(self._head) >= _MEMO:
                        self._head.clear()
                    head = self._head[a] = self._count(a, r)
                extra += head
        if b != view.hi:
            back = self._backward(b)
            if back != b:
                if back < r:
                    return self._count(a, b)
                tail = self._tail.get(b)
                if tail is None:
                    if len(self._tail) >= _MEMO:
                        self._tail.clear()
                    tail = self._tail[b] = self._count(back, b)
                extra += tail
                b = back
        return extra + bisect_right(ends, b) - bisect_right(ends, r)

    def _encode(self, start: int, end: int) -> _View:
        sizer = self.sizer
        if end - start <= _SEGMENT or sizer.additive is _never:
            # (A tokenizer other than tiktoken's gets one encode: every count the engine
            # reports for it is a fresh one anyway, and segments would only add calls.)
            whole = sizer.char_ends(self.text[start:end], start, self.code)
            return self._keep(_View(whole, start, end))
        # A long range is encoded in segments, so the encoder's list of token ids and its
        # working memory stay bounded. Segments are cut at additive positions (the
        # tokens are those of one encode); where none is near, at a seam, and counts
        # across a seam are made afresh (see ``_View.seams``).
        ends: array[int] = array(self.code)
        seams: list[int] = []
        pos = start
        while pos < end:
            target = pos + _SEGMENT
            if target >= end - _SEGMENT // 4:
                cut = end
            else:
                cut = self._additive_near(target, end)
                if cut < 0:
                    # Inside one long piece, it seems: a shorter segment (the tokenizer
                    # takes about 50 bytes a byte for one piece), at a seam if no
                    # additive position is near its end either.
                    cut = self._additive_near(pos + _PIECE_SEGMENT, end)
                    if cut < 0:
                        cut = pos + _PIECE_SEGMENT
                        seams.append(cut)
            ends.extend(sizer.char_ends(self.text[pos:cut], pos, self.code))
            pos = cut
        return self._keep(_View(ends, start, end, tuple(seams)))

    def _keep(self, view: _View) -> _View:
        if not self._view_los or view.lo >= self._views[-1].hi:
            self._views.append(view)
            self._view_los.append(view.lo)
        return view

    def _additive_near(self, target: int, end: int) -> int:
        """An additive position in ``[target, target + 1024)`` before ``end``, else -1."""
        for probe in range(target, min(target + 1024, end), 64):
            found = self._forward(probe)
            if 0 <= found < end:
                return found
        return -1

    def _place(self, section: Section, view: _View | None, lead: RawChunk | None = None) -> None:
        """Emit ``section`` whole if it fits, else cut it and pack its parts.

        ``view`` is an encoding covering the section (one encode serves every level
        of the descent).
        ``lead`` is a chunk that must not end where it does (it ends with a sticky
        part, a heading): the start of this section joins it if it can.
        """
        text = self.text
        n: int | None = None
        if section.end - section.start > self.budget * self.sizer.max_token_chars:
            pass  # cannot fit: cut without counting
        elif view is not None:
            n = self._exact(view, section.start, section.end)
        else:
            view = self._encode(section.start, section.end)
            n = len(view.ends) if not view.seams else self.sizer.count(text[section.start : section.end])
        if n is not None and n <= self.budget:
            if lead is not None:
                joined = self._join(lead, section, n)
                if joined is not None:
                    self.out[-1] = joined
                    return
            if (
                lead is None
                or (section.kind != "markdown" and type(section.state) not in _FLAT)
                or section.splitter is None
            ):
                # Fits alone: whole (a fenced block that fits is never cut for a heading;
                # a flat run is, so that its first parts fill the chunk before it).
                self.out.append(
                    RawChunk(
                        section.start,
                        section.end,
                        n,
                        _meta(section),
                        sticky_end=section.sticky,
                        partial=section.partial,
                    )
                )
                return
        splitter = section.splitter
        edges: Sequence[int] = ()
        parts: Sequence[Section] | None = None
        template = section
        if splitter is not None:
            cut = getattr(splitter, "split_edges", None)
            found = cut(text, section) if cut is not None else None
            if found is not None:
                # Uniform parts as plain offsets: a Section is made only for a part
                # that must descend.
                edges, template = found
            else:
                parts = splitter.split(text, section)
                if len(parts) == 1 and _refines(parts[0], section):
                    # The same span seen by another splitter (a Markdown section that
                    # is one paragraph): placed in the section's stead, so that its
                    # splitter's edges serve (a Section per part of a 1 MB line of
                    # "|" held 150 bytes a character).
                    self._place(parts[0], view, lead)
                    return
                if len(parts) >= 2:
                    edges = [p.start for p in parts]
                    edges.append(parts[-1].end)
        if len(edges) < 3:
            if n is None:
                n = self.sizer.count(text[section.start : section.end])
            self.out.append(
                RawChunk(
                    section.start,
                    section.end,
                    n,
                    _meta(section),
                    oversize=n > self.budget,
                    partial=section.partial,
                )
            )
            return
        self._pack(edges, parts, template, view, lead)

    def tokens_inside(self, a: int, b: int) -> int:
        """How many tokens of an encoding that covers ``text[a:b]`` lie inside it: its
        count but for the tokens next to its edges. The encoding is the first one made
        around it (a caller that sizes nested ranges, the outermost first, encodes the
        outermost once, not each level again)."""
        view = self._covering(a, b)
        if view is None:
            view = self._encode(a, b)
        ends = view.ends
        return max(0, bisect_right(ends, b) - bisect_right(ends, a) - 1)

    def _joined_count(self, head: RawChunk, start: int, end: int, tokens: int) -> int:
        """Exact count of ``head`` joined with the ``tokens``-long stretch ``[start, end)`` after it."""
        if self._forward(start) == start:
            return head.tokens + tokens
        return self._span(head.start, end)

    def _span(self, a: int, c: int) -> int:
        """Exact count of ``text[a:c]``.

        From the encoding that covers it when there is one (only the stretches next to
        its edges are encoded again), else by encoding it whole.
        """
        view = self._covering(a, c) if self.sizer.additive is not _never else None
        if view is None:
            return self.sizer.count(self.text[a:c])
        return self._exact(view, a, c)

    def _join(self, lead: RawChunk, section: Section, n: int) -> RawChunk | None:
        total = self._joined_count(lead, section.start, section.end, n)
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

    def _many_prefix(self, edges: Sequence[int], view: _View) -> array[int]:
        """How many of ``view``'s tokens end at or before each of many ``edges``:
        computed by numpy a block at a time into 8-byte machine integers (a run of flags
        has a part every two characters; a list would hold 36 bytes a part)."""
        import numpy as np

        at = _numpy(edges)
        ends = _numpy(view.ends)
        prefix, prefix_np = _zeros(len(edges))
        for b in range(0, len(edges), _ENDS_BLOCK):
            # (In the ends' own type: searchsorted would otherwise convert all of them.)
            wanted = at[b : b + _ENDS_BLOCK].astype(ends.dtype, copy=False)
            prefix_np[b : b + _ENDS_BLOCK] = np.searchsorted(ends, wanted, "right")
        return prefix

    def _prose_args(self) -> tuple[object, ...]:
        """For the native pack: a prose part that does not fit is cut and packed there,
        level by level, as ``_place`` would (the splitter's class, the prose flag table
        filled for the text, the levels below the word, and the bound on a token's
        characters)."""
        args = self._prose
        if args is None:
            args = self._prose = (
                _prose.ProseSplitter,
                _prose.tables(self.text)[1],
                _prose.boundaries,
                self.sizer.max_token_chars,
            )
        return args

    def _pack(
        self,
        edges: Sequence[int],
        parts: Sequence[Section] | None,
        template: Section,
        view: _View | None,
        lead: RawChunk | None = None,
    ) -> None:
        """Pack the parts between ``edges`` greedily, descending into those that do not fit.

        ``parts`` are the splitter's sections; ``None`` when the parts are uniform (all
        like ``template``, none sticky), and made only when one must descend.
        """
        text = self.text
        count = self.sizer.count
        budget = self.budget
        k = len(edges) - 1
        lo_edge, hi_edge = edges[0], edges[k]
        if view is None:
            # One encode of the whole range costs what one per part would, and serves
            # every level below it.
            view = self._encode(lo_edge, hi_edge)
        native = _accel.native
        if _accel.OFF and not _accel.on("pack"):
            native = None  # type: ignore[assignment]
        rule = _RULES.get(self.sizer.additive)
        if native is not None and rule is not None:
            # The same loop in C (counts from the view, the junction rules and the
            # memos alike); a part that does not fit comes back to _place.
            native.pack(
                self,
                edges,
                parts,
                template,
                view,
                lead,
                _meta(template),
                _meta,
                RawChunk,
                rule,
                self._classes(),
                self._prose_args(),
            )
            return
        # How many of the view's tokens end at or before each edge (estimates, exact at
        # exact edges).
        prefix: Sequence[int]
        kernels = _accel.kernels
        if _accel.OFF and not _accel.on("prefix_counts"):
            kernels = None  # type: ignore[assignment]
        if kernels is not None:
            # Bisected in C: into a list for a few parts, into machine integers for many.
            if k <= _FEW_PARTS:
                prefix = kernels.prefix_counts(view.ends, edges, None)
            else:
                prefix = array("q", [0]) * (k + 1)
                kernels.prefix_counts(view.ends, edges, prefix)
        elif k <= _FEWER_PARTS:
            prefix = list(map(bisect_right, repeat(view.ends, k + 1), edges))
        elif k <= _FEW_PARTS:
            # numpy's searchsorted, once its call costs less than bisecting each edge
            prefix = self._many_prefix(edges, view).tolist()
        else:
            prefix = self._many_prefix(edges, view)
        shared = view
        exact = self._exact
        forward = self._forward

        def size(i: int, j: int, joined: bool | None, base: int, origin: int) -> int:
            """Exact count of parts i..j-1, after the open chunk when ``joined`` is not None."""
            if joined is None:
                return exact(shared, edges[i], edges[j])
            if joined:
                return base + exact(shared, edges[i], edges[j])
            if origin >= shared.lo:
                # Counted from the shared encoding: only the stretches next to the
                # chunk's edges are encoded again.
                return exact(shared, origin, edges[j])
            return count(text[origin : edges[j]])

        uniform = parts is None
        t_partial = template.partial

        def part(i: int) -> Section:
            if parts is not None:
                return parts[i]
            t = template
            return Section(edges[i], edges[i + 1], t.splitter, t.state, t.kind, t.language, t.path, t.partial)

        def flat(i: int) -> bool:
            return type((template if parts is None else parts[i]).state) in _FLAT

        # ``open_`` is the last chunk emitted from a part that had to be cut: the parts
        # after it may join it while they fit (left-to-right greedy, like text-splitter).
        open_: RawChunk | None = lead
        light = _meta(template)
        i = 0
        while i < k:
            joined: bool | None
            if open_ is not None:
                base, origin, first = open_.tokens, open_.start, open_.first
                joined = forward(edges[i]) == edges[i]
            else:
                base, origin = 0, edges[i]
                first = light if uniform else _meta(parts[i])  # type: ignore[index]
                joined = None

            j = bisect_right(prefix, prefix[i] + budget - base, i + 1) - 1
            n = -1
            stepped_back = False
            while j > i:
                n = size(i, j, joined, base, origin)
                if n <= budget:
                    break
                # Over: step back at least one part, more if the estimate was low.
                low_by = n - (base + prefix[j] - prefix[i])
                j = min(j - 1, bisect_right(prefix, prefix[i] + budget - base - low_by, i + 1) - 1)
                stepped_back = True
            if stepped_back and j > i:
                # The correction may have stepped back too far: take the next parts back
                # while they still fit (a few exact checks, each local).
                for _ in range(4):
                    if j >= k:
                        break
                    m = size(i, j + 1, joined, base, origin)
                    if m > budget:
                        break
                    j, n = j + 1, m
            if not uniform and j > i + 1 and parts[j - 1].sticky:  # type: ignore[index]
                # A sticky part (a heading) opens the next chunk instead of ending this one.
                j -= 1
                n = size(i, j, joined, base, origin)
            if j <= i:
                if open_ is not None and not open_.sticky_end and not flat(i):
                    open_ = None
                    continue
                # The part does not fit (after a heading, or at all): cut it; its first
                # pieces join a heading that must not end a chunk.
                self._place(part(i), shared, open_)
                last = self.out[-1]
                open_ = None if last.oversize else last
                i += 1
                continue
            if uniform:
                sticky_end = False
                partial = (open_ is not None and open_.partial) or t_partial
            else:
                sticky_end = parts[j - 1].sticky  # type: ignore[index]
                partial = (
                    (open_ is not None and open_.partial)
                    or parts[i].partial  # type: ignore[index]
                    or parts[j - 1].partial  # type: ignore[index]
                )
            made = RawChunk(origin, edges[j], n, first, sticky_end=sticky_end, partial=partial)
            if open_ is not None:
                self.out[-1] = made
            else:
                self.out.append(made)
            # Before a flat part that did not fit, the chunk stays open: its first
            # parts fill it (as if they stood here).
            open_ = made if sticky_end or (j < k and flat(j)) else None
            i = j
