"""Markdown: heading sections > blocks > lines > prose, each part by its own rules.

The whole document is scanned once with compiled patterns (C speed) for fences and
headings only; block structure (paragraphs, lists, tables, quotes, fences, HTML,
indented code) is read line by line, and only inside a section that does not fit.
A fenced block that fits is never cut; one that does not is handed to the code or
JSON splitter for its info-string language. A heading is never separated from the
first line of its section. ``Chunk.path`` is the heading trail (``Setup > Linux``).
"""

from __future__ import annotations

import itertools
import re
import warnings
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, TypeAlias, TypeVar, cast, overload

from . import _accel
from ._code import code_kind_root
from ._engine import _refines, flat_state
from ._json import json_root, jsonl_root
from ._languages import GrammarUnavailable, UnknownLanguage, known_language
from ._prose import PROSE
from ._types import ChunkingWarning, Section

__all__ = ["MarkdownSplitter", "markdown_kind_root", "markdown_root"]

_EOL = r"(?:\r\n|\r|\n|$)"
# Matched at a line's start (of _LINE: after "\n", "\r\n" or a lone "\r").
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})([^\r\n]*)" + _EOL)
# The optional closing run of "#" counts only after a space or tab ("## C#" keeps its "#").
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+([^\r\n]*?))??(?:[ \t]+#*)?[ \t]*" + _EOL)
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*" + _EOL)
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_FRONT_MATTER = re.compile(r"\A(---|\+\+\+)[ \t]*\r?\n.*?^\1[ \t]*" + _EOL, re.M | re.S)

_BLANK = re.compile(r"[ \t]*(?:\r\n|\r|\n)?$")
_LIST_ITEM = re.compile(r"( {0,3})(?:[-*+]|\d{1,9}[.)])(?:[ \t]+|(?:\r\n|\r|\n)?$)")
_QUOTE = re.compile(r" {0,3}>")
_HR = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*(?:\r\n|\r|\n)?$")
_HTML = re.compile(r" {0,3}<(?:[A-Za-z][A-Za-z0-9-]*|/[A-Za-z]|!--|\?|![A-Z])")
# A match's (start, end), called by ``map`` in C: a line's span without Python code per line.
_SPAN = re.Match.span
_INDENTED = re.compile(r"(?: {4}|\t)")
_TABLE_DELIM = re.compile(r" {0,3}\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*(?:\r\n|\r|\n)?$")
_ATX_LINE = re.compile(r" {0,3}#{1,6}(?:[ \t]|\r|\n|$)")
_FENCE_LINE = re.compile(r" {0,3}(?:`{3,}|~{3,})")

# A line's classes (a set of flags per line, from native.md_lines or _line_flags_python).
_F_BLANK = 1 << 0
_F_ATX = 1 << 1
_F_FENCE = 1 << 2
_F_QUOTE = 1 << 3
_F_HR = 1 << 4
_F_LIST = 1 << 5
_F_LIST0 = 1 << 6  # a list item with no indentation
_F_HTML = 1 << 7
_F_INDENTED = 1 << 8
_F_DELIM = 1 << 9  # a table's delimiter row
_F_PIPE = 1 << 10
_F_SETEXT = 1 << 11
_F_HEADING = 1 << 12  # a heading (of _scan_headings) starts here
_F_LEAD = 1 << 13  # starts with a space or a tab
_F_INTERRUPT = 1 << 14  # ends a paragraph before it
_F_CHECK = 1 << 15  # (the kernel's only) perhaps a list item of digits past ASCII
_ENDS_PARAGRAPH = _F_BLANK | _F_ATX | _F_FENCE | _F_QUOTE | _F_HR | _F_HEADING | _F_LIST0


class _Heading(NamedTuple):
    start: int
    level: int
    title: str


_Item = TypeVar("_Item")


def _offset_code(text: str) -> str:
    """The array type of offsets into ``text``: 4 bytes while they fit."""
    return "i" if len(text) < 2**31 - 1 else "q"


class _Compact(Sequence[_Item]):
    """A sequence held as arrays (one entry per item in ``starts``), its items made
    when asked for."""

    __slots__ = ()
    starts: array[int]

    def _item(self, i: int) -> _Item:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, i: int) -> _Item: ...
    @overload
    def __getitem__(self, i: slice) -> list[_Item]: ...
    def __getitem__(self, i: int | slice) -> _Item | list[_Item]:
        if isinstance(i, slice):
            return [self._item(k) for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._item(i)


class _Headings(_Compact[_Heading]):
    """The document's headings in order, held compactly: a start, a level and the span
    of the title's text per heading (its end negated, less one, for a setext heading,
    whose title is its whole paragraph). A title is made from the text when asked (a
    _Heading per heading held 96 bytes for the 4 of "a\n=\n")."""

    __slots__ = ("levels", "starts", "text", "title_ends", "title_starts")

    def __init__(self, text: str) -> None:
        self.text = text
        code = _offset_code(text)
        self.starts: array[int] = array(code)
        self.levels = bytearray()
        self.title_starts: array[int] = array(code)
        self.title_ends: array[int] = array(code)

    def sort(self) -> None:
        """In the order of their starts (for a scan that did not find them in it)."""
        starts, code = self.starts, self.starts.typecode
        order = sorted(range(len(starts)), key=starts.__getitem__)
        self.starts = array(code, [starts[i] for i in order])
        self.levels = bytearray(self.levels[i] for i in order)
        self.title_starts = array(code, [self.title_starts[i] for i in order])
        self.title_ends = array(code, [self.title_ends[i] for i in order])

    def title(self, i: int) -> str:
        a, b = self.title_starts[i], self.title_ends[i]
        if b >= 0:
            return self.text[a:b].strip()
        # A setext heading's text is the whole paragraph above the underline.
        return " ".join(self.text[a : -1 - b].split())

    def _item(self, i: int) -> _Heading:
        return _Heading(self.starts[i], self.levels[i], self.title(i))


class _Fence(NamedTuple):
    start: int
    body: int  # first character after the opening line
    close: int  # first character of the closing line (== end if unclosed)
    end: int
    info: str


class _Fences(_Compact[_Fence]):
    """The document's fences in order, held compactly: four offsets and the span of
    the info string per fence (a _Fence is made when asked for; one per fence held
    about 180 bytes, 26 a character of a run of empty fences)."""

    __slots__ = ("bodies", "closes", "ends", "info_ends", "info_starts", "starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        code = _offset_code(text)
        self.starts: array[int] = array(code)
        self.bodies: array[int] = array(code)
        self.closes: array[int] = array(code)
        self.ends: array[int] = array(code)
        self.info_starts: array[int] = array(code)
        self.info_ends: array[int] = array(code)

    def add(self, start: int, body: int, close: int, end: int, info: tuple[int, int]) -> None:
        self.starts.append(start)
        self.bodies.append(body)
        self.closes.append(close)
        self.ends.append(end)
        self.info_starts.append(info[0])
        self.info_ends.append(info[1])

    def _item(self, i: int) -> _Fence:
        info = self.text[self.info_starts[i] : self.info_ends[i]].strip()
        return _Fence(self.starts[i], self.bodies[i], self.closes[i], self.ends[i], info)

    def inside(self, pos: int) -> bool:
        """Whether ``pos`` is inside a fence (its lines included)."""
        k = bisect_right(self.starts, pos) - 1
        return k >= 0 and pos < self.ends[k]


class _Sec(NamedTuple):
    """A heading section (``level`` 0: the document) with its heading trail."""

    level: int
    trail: tuple[str, ...]


class _Blocks(NamedTuple):
    trail: tuple[str, ...]


@flat_state
class _BlockRun(NamedTuple):
    """A run of a section's blocks (the blocks of its span), under ``trail``. Flat:
    packed as if its blocks stood in its place."""

    trail: tuple[str, ...]


@flat_state
class _Subs(NamedTuple):
    """A run of sibling heading sections: the headings of level ``level`` among
    headings ``first`` to ``stop - 1`` (indices into the document's), under ``trail``;
    with ``last``, the run holds the parent's last subsection; ``front``, the part
    before the first subsection, leads the first run. Flat: packed as if its
    sections stood in its place (a Section, a state and a trail per heading held about
    350 bytes a heading whatever its length)."""

    first: int
    stop: int
    level: int
    trail: tuple[str, ...]
    last: bool
    front: Section | None = None  # (the parent's blocks before its first subsection)


class _Glued(NamedTuple):
    """A part whose front carries text its own splitter does not know (a heading)."""

    inner: Section


class _Shifted(NamedTuple):
    """A section of a separate text (a fence body) seen ``base`` characters later.

    (The states are named tuples: one is made per fence part and per block, and a
    frozen dataclass sets each field through ``object.__setattr__``. ``split`` tells
    them apart by class before it takes a plain tuple for a table or a list.)"""

    inner: Section
    body: str
    base: int
    path: str | None
    kind: str
    language: str | None


class _FencePart(NamedTuple):
    """A part of a fence cut as plain offsets (``MarkdownSplitter.split_edges``):
    ``template`` is the body's parts' template (shifted, spanning the body from ``body``
    to ``close``); the first part also holds the opening line, the last the closing
    one, glued to it."""

    template: Section
    body: int
    close: int


# A named tuple made as ``tuple.__new__`` makes it, without the class's own __new__ (a
# Python function a call): one is made per block and per fence part.
_new = tuple.__new__


# Past this many sibling heading sections, they are handed in flat runs (_Subs).
_RUN = 512


def _path(trail: tuple[str, ...]) -> str | None:
    return " > ".join(trail) if trail else None


class _Rows:
    """The splitter of a document's tables and lists (state ``("table" | "list",
    trail, the document's MarkdownSplitter)``): their rows or items as plain offsets,
    the engine's uniform parts. (Apart from MarkdownSplitter, whose other sections the
    engine then never asks for edges; one for every document, so that no document's
    splitter is in a reference cycle that only the collector would free.)"""

    __slots__ = ()

    def split_edges(self, text: str, section: Section) -> tuple[Sequence[int], Section]:
        what, trail, md = cast("tuple[str, tuple[str, ...], MarkdownSplitter]", section.state)
        return md._row_edges(section, what, trail)

    def split(self, text: str, section: Section) -> Sequence[Section]:
        what, trail, md = cast("tuple[str, tuple[str, ...], MarkdownSplitter]", section.state)
        return md._split_rows(section, what, trail)


_ROWS = _Rows()


class _Shift:
    """The splitter of a fence's parts (state a :class:`_Shifted`): the parts its body's
    own splitter cuts it into, seen ``base`` characters later; as plain offsets where
    that splitter gives them (prose, JSON strings), so a Section is made only for a part
    that must descend (a Section and a state per word of a fenced text held 96 bytes a
    byte). A part the engine makes from the template carries the template's state: the
    inner section is taken at the part's own span."""

    __slots__ = ()

    def split_edges(self, text: str, section: Section) -> tuple[Sequence[int], Section] | None:
        state = cast("_Shifted", section.state)
        inner = _inner(section, state)
        cut = getattr(inner.splitter, "split_edges", None)
        found = cut(state.body, inner) if cut is not None else None
        if found is None:
            return None
        edges, template = found
        if len(edges) < 3:
            return (), section
        base = state.base
        shifted = array("i" if base + len(state.body) < 1 << 31 else "q", map(base.__add__, edges))
        return shifted, _shift(template, state.body, base, state.path, state.kind, state.language)

    def split(self, text: str, section: Section) -> list[Section]:
        state = cast("_Shifted", section.state)
        inner = _inner(section, state)
        if inner.splitter is None:
            return []
        parts = inner.splitter.split(state.body, inner)
        while len(parts) == 1 and _refines(parts[0], inner):
            # The same span seen another way (a JSON body that is one value): cut in
            # its stead, as the engine does.
            inner = parts[0]
            if inner.splitter is None:
                return []
            parts = inner.splitter.split(state.body, inner)
        body, base, path, kind, language = state.body, state.base, state.path, state.kind, state.language
        return [_shift(p, body, base, path, kind, language) for p in parts]


_SHIFTED = _Shift()


def _inner(section: Section, state: _Shifted) -> Section:
    """The section of the fence body that ``section`` is, shifted."""
    inner, base = state.inner, state.base
    if inner.start + base == section.start and inner.end + base == section.end:
        return inner
    return _spanned(inner, section.start - base, section.end - base)


def _spanned(s: Section, a: int, b: int) -> Section:
    """``s`` but for its span, ``[a, b)`` (a Section built directly: ``_replace`` goes
    through ``_make`` and a dict)."""
    return Section(a, b, s.splitter, s.state, s.kind, s.language, s.path, s.partial, s.sticky)


def _shift(
    inner: Section, body: str, base: int, path: str | None, kind: str, language: str | None
) -> Section:
    # Pieces of a fence keep the fence's kind and language, whatever rules cut them
    # (JSON that fails to parse is cut by prose rules, yet it is still a json fence).
    return _new(
        Section,
        (
            inner.start + base,
            inner.end + base,
            _SHIFTED if inner.splitter is not None else None,
            _new(_Shifted, (inner, body, base, path, kind, language)),
            kind,
            language,
            path,
            inner.partial,
            False,
        ),
    )


class MarkdownSplitter:
    """Splitter for one Markdown document (holds its fence and heading index)."""

    __slots__ = (
        "_at",
        "_fence_root",
        "_fence_starts",
        "_flags",
        "fences",
        "heading_starts",
        "headings",
        "text",
    )

    def __init__(self, text: str) -> None:
        self.text = text
        # Every line's start and classes, once: the scans for fences and headings look
        # only at the lines that may be one, and a section's blocks are read from them.
        at, flags, marks = _document_lines(text)
        self.fences = _scan_fences(text, at, flags, marks)
        self.headings = _scan_headings(text, self.fences, at, flags, marks)
        self.heading_starts = self.headings.starts
        for h in self.heading_starts:
            i = bisect_left(at, h)
            if i < len(flags) and at[i] == h:
                flags[i] |= _F_HEADING | _F_INTERRUPT
        self._at, self._flags = at, flags
        # The fences' starts, walked forward with the lines by the block scanner.
        self._fence_starts = self.fences.starts
        self._fence_root: tuple[int, Section] | None = None  # the last fence body's root

    # -- the engine's entry point -------------------------------------------------
    def split_edges(self, text: str, section: Section) -> tuple[Sequence[int], Section] | None:
        """A fence's parts as plain offsets, where its body's splitter gives them (text
        or a JSON string cut at words: a Section per word held 96 bytes a byte of a
        fenced line); None for every other section (``split`` gives those parts)."""
        state = section.state
        if isinstance(state, _FencePart):
            if section.start < state.body or section.end > state.close:
                return None  # with a fence line glued to it (``split``)
            return _SHIFTED.split_edges(text, _spanned(state.template, section.start, section.end))
        if not isinstance(state, _Fence):
            return None
        body_start, body_end = state.body, min(state.close, section.end)
        if body_end <= body_start:
            return None
        shifted = self._fence_body(section, state)
        found = _SHIFTED.split_edges(text, shifted) if shifted.splitter is not None else None
        if found is None or len(found[0]) < 3:
            return None  # (the root is kept for ``split``)
        self._fence_root = None
        edges, t = found
        edges = array(edges.typecode if isinstance(edges, array) else "q", edges)
        edges[0], edges[-1] = section.start, section.end
        part = _new(_FencePart, (t, body_start, body_end))
        return edges, Section(section.start, section.end, self, part, t.kind, t.language, t.path, t.partial)

    def split(self, text: str, section: Section) -> Sequence[Section]:
        state = section.state
        if isinstance(state, _FencePart):
            return self._split_fence_part(text, section, state)
        if isinstance(state, _Sec):
            return self._split_section(section, state)
        if isinstance(state, (_Blocks, _BlockRun)):
            return self._split_blocks(section, state.trail)
        if isinstance(state, _Subs):
            return self._subsections(state, section.end)
        if isinstance(state, _Glued):
            return self._split_glued(text, section, state)
        if isinstance(state, _Fence):
            return self._split_fence(section, state)
        if isinstance(state, tuple):  # ("table" | "list", trail, self)
            return self._split_rows(section, state[0], state[1])
        return ()

    def root(self) -> Section:
        # Whole, the document's path is that of its first line: a heading's title, if any.
        first = self.headings[0] if self.headings else None
        front = _FRONT_MATTER.match(self.text)
        opens = first is not None and first.start == (front.end() if front else 0)
        path = first.title if opens and first is not None else None
        return Section(0, len(self.text), self, _Sec(0, ()), "markdown", None, path)

    # -- heading sections ---------------------------------------------------------
    def _split_section(self, section: Section, sec: _Sec) -> list[Section]:
        headings = self.headings
        starts, levels = headings.starts, headings.levels
        lo = bisect_left(starts, section.start)
        hi = bisect_left(starts, section.end)
        own = sec.level != 0 and lo < hi and starts[lo] == section.start
        first = lo + 1 if own else lo
        # (the highest level below the section's: a search per level, in C)
        top = next((v for v in range(sec.level + 1, 7) if levels.find(v, first, hi) >= 0), 0)
        if not top:
            return self._split_blocks(section, sec.trail)
        # (the subsections' headings, as indices: one per heading of a long run)
        subs: array[int] = array("q")
        i = levels.find(top, first, hi)
        while i >= 0:
            subs.append(i)
            i = levels.find(top, i + 1, hi)
        pre: Section | None = None  # what comes before the first subsection
        if starts[subs[0]] > section.start:
            pre = Section(
                section.start, starts[subs[0]], self, _Blocks(sec.trail), "markdown", None, _path(sec.trail)
            )
            if own and self._only_heading(pre.start, pre.end):
                # A section holding only its heading before the subsections: the
                # heading opens the chunk of the first subsection, it never ends a chunk.
                pre = pre._replace(splitter=PROSE, state=2, sticky=True)
        count = len(subs)
        if count <= _RUN + 1:
            parts = self._subsections(_Subs(subs[0], hi, top, sec.trail, True, pre), section.end)
            return parts if len(parts) > 1 else list(self.split(self.text, parts[0]))
        # Runs of subsections, each cut into its sections only when it must be (the
        # first with what comes before the first subsection).
        size = max(_RUN, -(-count // _RUN))

        def bare(k: int) -> bool:  # subsection k holds only its heading
            return self._only_heading(starts[subs[k]], starts[subs[k + 1]])

        parts = []
        r = 0
        while r < count:
            stop = min(r + size, count)
            # A run neither ends nor starts with a bare heading (up to twice its size):
            # the heading would end the chunk before it, where packed with its next
            # section it opens that one's chunk.
            while (
                stop < count and stop < r + 2 * size and (bare(stop - 1) or (stop + 1 < count and bare(stop)))
            ):
                stop += 1
            if count - stop == 1:
                stop = count  # (no run of one)
            front = pre if r == 0 else None
            run = _Subs(subs[r], subs[stop] if stop < count else hi, top, sec.trail, stop == count, front)
            end = starts[run.stop] if stop < count else section.end
            sticky = stop < count and bare(stop - 1)
            # (whole, a run is its first section's chunk: it has that one's path)
            path = front.path if front is not None else _path((*sec.trail, headings.title(run.first)))
            a = front.start if front is not None else starts[run.first]
            parts.append(Section(a, end, self, run, "markdown", None, path, sticky=sticky))
            r = stop
        return parts

    def _subsections(self, run: _Subs, end: int) -> list[Section]:
        """The sections of ``run``'s headings (the last ends at ``end``)."""
        headings = self.headings
        starts, levels, top = headings.starts, headings.levels, run.level
        subs: list[int] = []
        i = levels.find(top, run.first, run.stop)
        while i >= 0:
            subs.append(i)
            i = levels.find(top, i + 1, run.stop)
        parts: list[Section] = [] if run.front is None else [run.front]
        for k, i in enumerate(subs):
            nxt = subs[k + 1] if k + 1 < len(subs) else -1
            trail = (*run.trail, headings.title(i))
            a, b = starts[i], starts[nxt] if nxt >= 0 else end
            # An empty section opens the next one's chunk.
            sticky = (nxt >= 0 or not run.last) and self._only_heading(a, b)
            parts.append(
                _new(
                    Section,
                    (a, b, self, _new(_Sec, (top, trail)), "markdown", None, _path(trail), False, sticky),
                )
            )
        return parts

    def _only_heading(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` holds nothing but its heading (and blank lines)."""
        at: Sequence[int] = self._at
        flags: Sequence[int] = self._flags
        i = bisect_left(at, start)
        if i < len(flags) and at[i] == start:
            lines = range(i, bisect_left(at, end, i))
        else:  # (not at a line of the document)
            flags = self._lines(start, end)[1]
            lines = range(len(flags))
        seen = 0
        for k in lines:  # (only until a second line neither blank nor an underline)
            if not flags[k] & (_F_BLANK | _F_SETEXT):
                seen += 1
                if seen > 1:
                    return False
        return True

    # -- blocks ---------------------------------------------------------------------
    def _split_blocks(self, section: Section, trail: tuple[str, ...]) -> list[Section]:
        # A heading is a sticky part: the engine never ends a chunk with it while
        # what follows can join it, yet a block that fits is never cut for its sake.
        blocks = self._blocks(section.start, section.end, trail, type(section.state) is not _BlockRun)
        if blocks and type(blocks[0].state) is _BlockRun:
            return blocks
        if len(blocks) == 1:
            only = blocks[0]
            if only.splitter is None:
                return []
            if only.start == section.start and only.end == section.end:
                # One block: handed as the section's refinement, for the engine to
                # cut as that block (a paragraph's words or a list's items as offsets:
                # a Section each held 150 bytes a character of a line of "|").
                return [only]
            return list(only.splitter.split(self.text, only))
        return blocks

    def _lines(self, start: int, end: int) -> tuple[Sequence[int], Sequence[int]]:
        """The lines of ``[start, end)``: where each starts (and ``end`` after the last),
        and the classes of each (``_F_`` flags)."""
        at = self._at
        i = bisect_left(at, start)
        j = bisect_left(at, end, i)
        if i < len(at) and at[i] == start and j < len(at) and at[j] == end:
            return at[i : j + 1], self._flags[i:j]
        # (a range that does not start and end at lines of the document)
        found = _lines_of(self.text, start, end, self.heading_starts)
        return found[0], found[1]

    def _blocks(self, start: int, end: int, trail: tuple[str, ...], runs: bool = False) -> list[Section]:
        """The blocks of ``[start, end)``; with ``runs``, flat runs of them (_BlockRun)
        when there are more than ``_RUN`` (each cut into its blocks only when it must
        be: a Section per block held 63 bytes a character of a run of 5-byte blocks)."""
        at, flags = self._lines(start, end)
        front_end = self._front_end(start, end)
        first = bisect_left(at, front_end) if front_end else 0
        if not runs or len(flags) <= _RUN:
            return self._scan_blocks(at, flags, first, end, front_end, trail, 0)
        found = self._scan_blocks(at, flags, first, end, front_end, trail, _RUN)
        if not found or found[-1].end >= end:
            return found  # (all of them)
        path = _path(trail)
        out: list[Section] = []
        a = start
        while True:
            stop = found[-1].end if found else end
            if stop >= end and len(found) <= 1 and out:
                # (no run of one block: handed alone, it would be placed as that block,
                # cut to fill the chunk before it where in place it starts its own)
                out[-1] = out[-1]._replace(end=end)
                return out
            # (whole, a run is its first block's chunk: that one's kind and language)
            kind, language = (found[0].kind, found[0].language) if found else ("markdown", None)
            out.append(Section(a, stop, self, _BlockRun(trail), kind, language, path))
            if stop >= end:
                return out
            a, first = stop, bisect_left(at, stop, first)
            found = self._scan_blocks(at, flags, first, end, 0, trail, _RUN)

    def _front_end(self, start: int, end: int) -> int:
        """Where YAML/TOML front matter (a block, not Markdown) ends; 0 if none."""
        front = _FRONT_MATTER.match(self.text) if start == 0 else None
        return front.end() if front is not None and front.end() <= end else 0

    def _scan_blocks(
        self,
        at: Sequence[int],
        flags: Sequence[int],
        first: int,
        end: int,
        front_end: int,
        trail: tuple[str, ...],
        limit: int = 0,
    ) -> list[Section]:
        """The blocks from line ``first`` (with ``limit``, to the first line after that many
        that starts a block whatever comes before it)."""
        path = _path(trail)
        # Each block as [start, end, splitter, state, kind, language, sticky], made into
        # a Section at the end (blank lines move the end of the block before them).
        out: list[list[Any]] = []
        i = first
        n = len(flags)

        def add(
            a: int,
            b: int,
            splitter: object,
            state: object,
            kind: str = "markdown",
            language: str | None = None,
        ) -> None:
            out.append([a, b, splitter, state, kind, language, False])

        # Blocks that are only a thematic break or blank lines: indented code may follow.
        # They are cut with prose rules when they do not fit (a run of blank lines, a
        # rule of a thousand dashes), never one unit.
        breaks: set[int] = set()
        if front_end:
            add(0, front_end, PROSE, 1)
        starts = self._fence_starts
        fk = 0  # the first fence at or after the line looked at: the lines only go forward
        while i < n:
            a, b, f = at[i], at[i + 1], flags[i]
            if limit and len(out) >= limit and not f & (_F_BLANK | _F_INDENTED) and not out[-1][6]:
                break  # enough blocks, and line i starts one whatever came before it
            if f & _F_BLANK:
                # Blank lines trail the block before them.
                if out:
                    out[-1][1] = b
                else:
                    add(a, b, PROSE, 1)
                    breaks.add(len(out) - 1)
                i += 1
                continue
            while fk < len(starts) and starts[fk] < a:
                fk += 1
            if fk < len(starts) and starts[fk] == a:
                fence = self.fences[fk]
                stop = min(fence.end, end)
                kind, lang = _fence_kind(fence)
                add(a, stop, self, fence, kind, lang)
                while i < n and at[i] < stop:
                    i += 1
                continue
            if f & (_F_ATX | _F_HEADING):
                j = i + 1
                if f & _F_HEADING and not f & _F_ATX:
                    # A setext heading: its lines to the underline.
                    k = i + 1
                    while k < n and not flags[k] & _F_SETEXT:
                        k += 1
                    j = max(j, min(k + 1, n))
                add(a, at[j], PROSE, 2, "markdown")
                out[-1][6] = True
                i = j
                continue
            j = i + 1
            if f & _F_PIPE and i + 1 < n and flags[i + 1] & _F_DELIM:
                while j < n and flags[j] & (_F_PIPE | _F_BLANK) == _F_PIPE:
                    j += 1
                add(a, at[j], _ROWS, ("table", trail, self))
            elif f & _F_LIST:
                j = self._list_end(flags, i)
                add(a, at[j], _ROWS, ("list", trail, self))
            elif f & _F_QUOTE:
                while j < n and not flags[j] & _F_BLANK:
                    j += 1
                add(a, at[j], PROSE, 1)
            elif f & _F_HR:
                add(a, b, PROSE, 1)
                breaks.add(len(out) - 1)
            elif f & _F_HTML:
                while j < n and not flags[j] & _F_BLANK:
                    j += 1
                add(a, at[j], PROSE, 1)
            elif f & _F_INDENTED and (
                not out or len(out) - 1 in breaks or (i > 0 and flags[i - 1] & _F_BLANK)
            ):
                # (after a blank line: the block before ends with line i - 1)
                while j < n and flags[j] & (_F_INDENTED | _F_BLANK):
                    j += 1
                add(a, at[j], PROSE, 1, "code")
            else:
                while j < n and not flags[j] & _F_INTERRUPT:
                    j += 1
                add(a, at[j], PROSE, 1)
            i = j
        return [
            _new(Section, (a, b, by, state, kind, lang, path, False, sticky))
            for a, b, by, state, kind, lang, sticky in out
        ]

    @staticmethod
    def _list_end(flags: Sequence[int], i: int) -> int:
        """The line after the list that starts at line ``i``."""
        j = i + 1
        n = len(flags)
        while j < n:
            f = flags[j]
            if f & _F_BLANK:
                # A blank line stays in the list if the list goes on after it.
                k = j
                while k < n and flags[k] & _F_BLANK:
                    k += 1
                if k < n and flags[k] & (_F_LIST | _F_LEAD):
                    j = k
                    continue
                return j
            if f & (_F_FENCE | _F_ATX | _F_HR):
                return j
            j += 1
        return j

    # -- inside blocks --------------------------------------------------------------
    def _split_rows(self, section: Section, what: str, trail: tuple[str, ...]) -> list[Section]:
        edges, t = self._row_edges(section, what, trail)
        s = (t.splitter, t.state, t.kind, t.language, t.path, t.partial, t.sticky)
        return [_new(Section, (a, b, *s)) for a, b in itertools.pairwise(edges)]

    def _row_edges(
        self, section: Section, what: str, trail: tuple[str, ...]
    ) -> tuple[Sequence[int], Section]:
        text = self.text
        start, end = section.start, section.end
        whole = Section(start, end, PROSE, 1, "markdown", None, _path(trail))
        # The lines from the document's index (a list of spans per line held 48 bytes
        # a character of a list of one-character items).
        at, flags = self._lines(start, end)
        edges = array(at.typecode if isinstance(at, array) else "q", [start])
        if what == "table":
            # Header and delimiter rows stay together; then one part per row.
            edges.extend(at[2:-1])
        else:
            first = text[at[0] : at[1]]
            base = len(first) - len(first.lstrip(" "))
            for i in range(1, len(flags)):
                if flags[i] & _F_LIST:
                    m = _LIST_ITEM.match(text, at[i], at[i + 1])
                    if m is not None and len(m.group(1)) <= base:
                        edges.append(at[i])
        edges.append(end)
        if len(edges) < 3:
            return PROSE.split_edges(text, whole)
        return edges, whole

    def _split_fence(self, section: Section, fence: _Fence) -> list[Section]:
        body_start, body_end = fence.body, min(fence.close, section.end)
        if body_end <= body_start:
            return self._fence_as_lines(section)
        shifted = self._fence_body(section, fence)
        self._fence_root = None
        body, kind, language = cast("_Shifted", shifted.state).body, section.kind, section.language
        parts = _SHIFTED.split(self.text, shifted) if shifted.splitter is not None else []
        if len(parts) < 2:
            lines = Section(0, len(body), PROSE, 1, kind, language, None)
            parts = [
                _shift(p, body, body_start, section.path, kind, language) for p in PROSE.split(body, lines)
            ]
        if len(parts) < 2:
            return self._fence_as_lines(section)
        # The opening line goes with the first part, the closing line with the last.
        parts[0] = self._glue(parts[0], start=section.start)
        parts[-1] = self._glue(parts[-1], end=section.end)
        return parts

    def _fence_body(self, section: Section, fence: _Fence) -> Section:
        """The root of a fence's body, by its own rules, shifted into the document (the
        last one made is kept: the engine asks for edges, then, where there are none,
        for parts)."""
        body_start, body_end = fence.body, min(fence.close, section.end)
        kept = self._fence_root
        if kept is not None and kept[0] == body_start and kept[1].end == body_end:
            return kept[1]
        body = self.text[body_start:body_end]
        kind, language = section.kind, section.language
        shifted = _shift(_body_root(body, language, kind), body, body_start, section.path, kind, language)
        self._fence_root = (body_start, shifted)
        return shifted

    def _split_fence_part(self, text: str, section: Section, part: _FencePart) -> Sequence[Section]:
        lo, hi = max(section.start, part.body), min(section.end, part.close)
        inner = _spanned(part.template, lo, hi)
        if lo == section.start and hi == section.end:
            return _SHIFTED.split(text, inner)
        return self._split_glued(text, section, _Glued(inner))

    def _fence_as_lines(self, section: Section) -> list[Section]:
        """A fence with no body to cut (empty, or one line that does not fit), with its
        fence lines: by prose rules, from lines down to graphemes, as any text that
        does not fit (a line of 101 backticks was one oversize chunk). One part, the
        fence seen as prose, which the engine places in its stead: prose cuts are
        offsets (a Section per backtick of a 1 MB line held 196 bytes a byte)."""
        return [Section(section.start, section.end, PROSE, 1, section.kind, section.language, section.path)]

    # -- glue -------------------------------------------------------------------------
    def _glue(self, part: Section, start: int | None = None, end: int | None = None) -> Section:
        """``part`` widened to ``[start, end)``; its own rules still cut the inside."""
        lo = part.start if start is None else min(start, part.start)
        hi = part.end if end is None else max(end, part.end)
        if lo == part.start and hi == part.end:
            return part
        # Always splittable: even an indivisible part can shed the lines glued to it.
        return Section(lo, hi, self, _Glued(part), part.kind, part.language, part.path, part.partial)

    def _split_glued(self, text: str, section: Section, state: _Glued) -> list[Section]:
        inner = state.inner
        parts = list(inner.splitter.split(text, inner)) if inner.splitter is not None else []
        if len(parts) >= 2:
            parts[0] = self._glue(parts[0], start=section.start)
            parts[-1] = self._glue(parts[-1], end=section.end)
            return parts
        # The inner part cannot be cut: cut off the glued lines instead (a fence line
        # with a long info string), never leave an avoidable oversize unit.
        pieces = [
            Section(section.start, inner.start, PROSE, 1, inner.kind, inner.language, inner.path),
            inner,
            Section(inner.end, section.end, PROSE, 1, inner.kind, inner.language, inner.path),
        ]
        return [p for p in pieces if p.start < p.end]


def _fence_kind(fence: _Fence) -> tuple[str, str | None]:
    """A fence's kind (``json`` for JSON and JSON Lines, else ``code``) and the language
    its info string names."""
    lang = _fence_language(fence.info)
    return ("json" if lang in ("json", "jsonl") else "code"), lang


_INFO_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+#.-]{0,31}")


def _fence_language(info: str) -> str | None:
    """The language an info string names, normalized where known (``py`` -> ``python``).

    An info string that is not a plain word (flattened prose glued to a fence) names none.
    """
    words = info.split()
    word = words[0].strip("{}.") if words else ""
    if not _INFO_WORD.fullmatch(word):
        return None
    lowered = word.lower()
    if lowered in ("json", "json5", "jsonc"):
        return "json"
    if lowered in ("jsonl", "ndjson", "jsonlines"):
        return "jsonl"
    return known_language(lowered) or lowered


# A fence of JSON is cut by the JSON rules of its info string's kind.
_JSON_ROOTS = {"json": json_root, "jsonl": jsonl_root}


def _body_root(body: str, language: str | None, kind: str) -> Section:
    """The root section of a fence body, by the rules of its info-string language."""
    if language:
        if kind == "json":
            factory = _JSON_ROOTS.get(language)
            if factory is not None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ChunkingWarning)  # invalid JSON: prose rules
                    return factory(body, None, None)
        elif known_language(language) is not None:  # (a fence of "text", "yaml", "mermaid": prose)
            try:
                return code_kind_root(body, language, None)
            except (UnknownLanguage, GrammarUnavailable):
                pass
    return Section(0, len(body), PROSE, 1, kind, language, None)


def _scan_fences(text: str, at: array[int], flags: array[int], marks: array[int]) -> _Fences:
    fences = _Fences(text)
    # (start, body, char, length, info span)
    open_: tuple[int, int, str, int, tuple[int, int]] | None = None
    for a in _line_starts(at, flags, marks, _F_FENCE):
        m = _FENCE.match(text, a)
        if m is None:
            continue
        marker, info = m.group(1), m.group(2)
        if open_ is None:
            if marker[0] == "`" and "`" in info:
                continue  # not a fence: backtick fences take no backticks in the info string
            open_ = (m.start(), m.end(), marker[0], len(marker), m.span(2))
        elif marker[0] == open_[2] and len(marker) >= open_[3] and not info.strip():
            fences.add(open_[0], open_[1], m.start(), m.end(), open_[4])
            open_ = None
    if open_ is not None:
        fences.add(open_[0], open_[1], len(text), len(text), open_[4])
    return fences


# The classes a line has when its pattern matches at its start.
_CLASSES = (
    (_INDENTED, _F_INDENTED),
    (_TABLE_DELIM, _F_DELIM),
    (_ATX_LINE, _F_ATX),
    (_FENCE_LINE, _F_FENCE),
    (_QUOTE, _F_QUOTE),
    (_HR, _F_HR),
    (_HTML, _F_HTML),
    (_SETEXT, _F_SETEXT),
)


def _line_classes(line: str) -> int:
    """The ``_F_`` flags of one line (its line break included) but for _F_HEADING and
    _F_INTERRUPT."""
    f = 0
    if _BLANK.match(line):
        f |= _F_BLANK
    if line[:1] in (" ", "\t"):
        f |= _F_LEAD
    if "|" in line:
        f |= _F_PIPE
    for pattern, flag in _CLASSES:
        if pattern.match(line):
            f |= flag
    item = _LIST_ITEM.match(line)
    if item is not None:
        f |= _F_LIST | (0 if item.group(1) else _F_LIST0)
    return f


_Lines: TypeAlias = "tuple[array[int], array[int], array[int]]"


def _lines_of(text: str, start: int, end: int, heading_starts: Sequence[int]) -> _Lines:
    """The lines of ``[start, end)``: where each starts (and ``end`` after the last),
    the classes of each, and the indices of those that may open a fence or be (or
    underline) a heading."""
    kernels = _accel.kernels
    if _accel.OFF and not _accel.on("md_lines"):
        kernels = None  # type: ignore[assignment]
    if kernels is not None:
        # In C: a Python step and up to a dozen regex matches per line were most of
        # the Markdown splitter's own time.
        heads = heading_starts if isinstance(heading_starts, array) else array("q", heading_starts)
        code = _offset_code(text)
        units, kind = _accel.units(text)
        spans, classes, marked = kernels.md_lines(units, kind, start, end, heads, 4 if code == "i" else 8)
        at: array[int] = array(code)  # 4 bytes a line while offsets fit
        flags: array[int] = array("H")
        marks: array[int] = array("q")
        at.frombytes(spans)
        flags.frombytes(classes)
        marks.frombytes(marked)
        if kind and flags and max(flags) >= _F_CHECK:
            _check_list_items(text, at, flags)
        return at, flags, marks
    return _line_flags_python(text, start, end, frozenset(heading_starts))


def _check_list_items(text: str, at: array[int], flags: array[int]) -> None:
    """Decide the lines the kernel left to Python: a list item's number of digits
    past ASCII (a regex's ``\\d``, which the limited API cannot tell)."""
    for i, f in enumerate(flags):
        if f & _F_CHECK:
            f &= ~_F_CHECK
            item = _LIST_ITEM.match(text[at[i] : at[i + 1]])
            if item is not None:
                f |= _F_LIST
                if not item.group(1):
                    f |= _F_LIST0 | _F_INTERRUPT
            flags[i] = f


def _document_lines(text: str) -> _Lines:
    # A byte order mark is no part of the first line (``\ufeff# Title`` is a heading):
    # the lines start after it, and it goes with what follows.
    return _lines_of(text, 1 if text.startswith("\ufeff") else 0, len(text), [])


def _line_flags_python(text: str, start: int, end: int, headings: frozenset[int]) -> _Lines:
    """``kernels.md_lines`` in Python (its reference)."""
    at: array[int] = array(_offset_code(text))
    flags: array[int] = array("H")
    for m in _LINE.finditer(text, start, end):
        at.append(m.start())
        flags.append(_line_classes(m.group()) | (_F_HEADING if m.start() in headings else 0))
    at.append(end)
    n = len(flags)
    for i in range(n):
        f = flags[i]
        ends = bool(f & _ENDS_PARAGRAPH)
        if not ends and f & _F_PIPE:
            # A table's delimiter row next (read in the whole text, past ``end`` too).
            if i + 1 < n:
                nxt = flags[i + 1]
            else:
                line = _LINE.match(text, at[n])
                nxt = _line_classes(line.group()) if line is not None else 0
            ends = nxt & (_F_DELIM | _F_PIPE) == _F_DELIM | _F_PIPE
        if ends:
            flags[i] = f | _F_INTERRUPT
    marks = array("q", [i for i, f in enumerate(flags) if f & (_F_ATX | _F_FENCE | _F_SETEXT)])
    return at, flags, marks


def _line_starts(
    at: array[int], flags: array[int], marks: array[int], want: int, skip_to: int = 0
) -> Iterator[int]:
    """The starts of the marked lines with a class in ``want``, from ``skip_to``."""
    for i in marks:
        a = at[i]
        if flags[i] & want and a >= skip_to:
            yield a


def _not_paragraph(line: str) -> bool:
    return bool(
        _ATX_LINE.match(line)
        or _LIST_ITEM.match(line)
        or _QUOTE.match(line)
        or _INDENTED.match(line)
        or _HR.match(line)
        or _FENCE_LINE.match(line)
        or _HTML.match(line)
        or "|" in line
    )


# An HTML comment block (CommonMark's HTML block of type 2): from a line that opens with
# "<!--" (up to three spaces in) to the end of the line that holds "-->", or to the end
# of the document. A heading line inside it is no heading (a section commented out).
_COMMENT_OPEN = re.compile(r"^ {0,3}<!--", re.M)


def _comment_spans(text: str, fences: _Fences) -> tuple[list[int], list[int]]:
    """The starts and ends of the document's HTML comment blocks, in one pass."""
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    while (m := _COMMENT_OPEN.search(text, pos)) is not None:
        a = m.start()
        if fences.inside(a):
            pos = m.end()
            continue
        close = text.find("-->", m.end() - 2)  # ("<!-->" closes on its own line)
        if close < 0:
            end = len(text)
        else:
            nl = text.find("\n", close)
            end = len(text) if nl < 0 else nl + 1
        starts.append(a)
        ends.append(end)
        pos = end
    return starts, ends


def _scan_headings(
    text: str, fences: _Fences, at: array[int], flags: array[int], marks: array[int]
) -> _Headings:
    in_fence = fences.inside
    if "<!--" in text:
        c_starts, c_ends = _comment_spans(text, fences)

        def inside(pos: int) -> bool:
            k = bisect_right(c_starts, pos) - 1
            return (k >= 0 and pos < c_ends[k]) or in_fence(pos)
    else:
        inside = in_fence
    found = _Headings(text)
    front = _FRONT_MATTER.match(text)
    skip_to = front.end() if front else 0
    # A setext heading's underline ends its paragraph: the next heading's paragraph starts
    # after it (read through it, "Title\n=====\nSub\n---" made a second heading at 0
    # titled "Title ===== Sub", and every heading of a run of them walked back to the
    # first: quadratic).
    floor = skip_to
    starts, levels = found.starts, found.levels
    title_starts, title_ends = found.title_starts, found.title_ends
    last = -1  # (the last start found: they come in order, checked)
    ordered = True
    for a in _line_starts(at, flags, marks, _F_ATX | _F_SETEXT, skip_to):
        m = _ATX.match(text, a)
        if m is not None:
            if not inside(a):
                ordered = ordered and a > last
                last = a
                starts.append(a)
                levels.append(len(m.group(1)))
                title_starts.append(max(m.start(2), 0))
                title_ends.append(max(m.end(2), 0))
            continue
        m = _SETEXT.match(text, a)
        if m is None or a == 0 or inside(a):
            continue
        prev_end = a
        prev_start = at[bisect_left(at, prev_end) - 1]  # (the line before, from the index)
        prev = text[prev_start:prev_end]
        if not prev.strip() or prev_start < floor or inside(prev_start) or _not_paragraph(prev):
            continue
        # A setext heading's text is the whole paragraph above the underline (a line
        # that is not a paragraph's, an ATX heading's among them, ends it: the headings
        # come in order).
        while prev_start > floor:
            above = at[bisect_left(at, prev_start) - 1]
            line = text[above:prev_start]
            if not line.strip() or _not_paragraph(line) or inside(above):
                break
            prev_start = above
        ordered = ordered and prev_start > last
        last = prev_start
        starts.append(prev_start)
        levels.append(1 if m.group(1)[0] == "=" else 2)
        title_starts.append(prev_start)
        title_ends.append(-1 - prev_end)
        floor = m.end()
    if not ordered:
        found.sort()
    if starts and starts[0] == 1 and text.startswith("\ufeff"):
        starts[0] = 0  # (the first heading's section holds the byte order mark before it)
    return found


def markdown_root(text: str) -> Section:
    return MarkdownSplitter(text).root()


def markdown_kind_root(text: str, language: str | None, filename: str | None) -> Section:
    return markdown_root(text)
