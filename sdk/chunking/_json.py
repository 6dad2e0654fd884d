"""JSON and JSON Lines: cut only between values; split documents into valid JSON pieces.

``chunk(kind="json")`` cuts between the members/elements of a container (after the
comma, whitespace kept), highest level first: a container is opened only when it
does not fit. A string over the budget is cut inside at line (``\\n`` escapes),
sentence, word and grapheme boundaries, never inside an escape sequence (a surrogate
pair ``\\ud83d\\ude00`` is one unit); its chunks are marked ``partial``. Numbers and
literals are never cut; whitespace between values is, by prose rules, where it does
not fit (see :class:`_Gaps`). Below depth 64 a container that does not fit is cut at
every value edge of its subtree at once, found by one scan of its text (so depth costs
neither recursion nor memory); those chunks carry the pointer of that depth-64
container.

Several top-level values (JSON Lines, concatenated JSON) are the elements of a
virtual array: the pointer of value ``i`` is ``/i``. Malformed input warns with a
:class:`ChunkingWarning`; the complete members before the error (in every container
still open there) are chunked as JSON, the unparseable rest with prose rules (for
``kind="jsonl"``: to the end of the bad line only). ``NaN``/``Infinity`` are accepted
here as indivisible literals; duplicate keys are chunked as they are.

:func:`json_pieces` is the strict side: it raises :class:`JSONChunkError` on any
malformed input, on ``NaN``/``Infinity`` and on duplicate keys (which no value could
hold back), and returns pieces of this shape (compact, slices of the input kept
verbatim so non-ASCII stays readable)::

    {"path":[...],"value":V}                      the whole value at path
    {"path":[...],"index":I,"elements":[...]}     elements I, I+1, ... of the array at path
    {"path":[...],"members":{...}}                some members of the object at path
    {"path":[...],"text":"..."}                   the next part of the string at path

``path`` holds object keys (strings) and array indices (integers), so it also says
which containers to build; ``{"json":"compact"}`` or ``{"json":"spaced"}`` in a path
steps into a string holding JSON (``expand_embedded=True``). :func:`merge_pieces`
rebuilds the value exactly (several top-level values come back as a list).
"""

from __future__ import annotations

import itertools
import json
import re
import warnings
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Sequence, Set
from typing import Any, NamedTuple

import regex

from . import _accel
from ._engine import flat_state
from ._jsontok import (
    _STRING_TOKEN,
    Child,
    JSONChunkError,
    JSONEvent,
    JSONPath,
    JSONProgress,
    JSONTokenizer,
    Structure,
    decode_key,
    escape_pointer,
)
from ._prose import _GRAPHEME_LEVEL, LEVELS, PROSE, allowed_cut, boundaries
from ._types import ChunkingWarning, Section, caller_level

__all__ = [
    "JSONChunkError",
    "JSONEvent",
    "JSONPath",
    "JSONProgress",
    "JSONSplitter",
    "JSONTokenizer",
    "json_root",
    "jsonl_root",
]

_FLAT_DEPTH = 64
# A container of more members is cut into runs of this many first, and a run into its
# members only when it does not fit: the sections of an array of a million numbers are
# made a run at a time (a section, value and pointer per member were 500 bytes each).
_RUN = 512
_DIGITS = "0123456789"


# -- validation ---------------------------------------------------------------------


def _ignore(_: object) -> None:
    return None


_LENIENT = json.JSONDecoder(
    parse_float=_ignore, parse_int=_ignore, parse_constant=_ignore, object_pairs_hook=_ignore
)


class _Duplicate(Exception):
    pass


class _Constant(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> None:
    if len({k for k, _ in pairs}) != len(pairs):
        raise _Duplicate


def _no_constant(_: str) -> None:
    raise _Constant


_STRICT = json.JSONDecoder(
    parse_float=_ignore, parse_int=_ignore, parse_constant=_no_constant, object_pairs_hook=_no_duplicates
)


_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, pos: int) -> int:
    return _WS.match(text, pos).end()  # type: ignore[union-attr]


def _decode_one(decoder: json.JSONDecoder, text: str, pos: int) -> int:
    """End of the value at ``pos``; raises ``ValueError`` (or ``RecursionError``)."""
    _, end = decoder.raw_decode(text, pos)
    # raw_decode reads ``01`` as two values; JSON has no leading zeros.
    if end < len(text) and text[end] in _DIGITS and text[pos] in "-0123456789":
        raise json.JSONDecodeError("leading zero", text, end)
    return int(end)


class _LineError(ValueError):
    """A JSON error found within one line (``pos`` in the whole text)."""

    def __init__(self, msg: str, pos: int) -> None:
        super().__init__(f"{msg} (offset {pos})")
        self.msg = msg
        self.pos = pos


class _LineEnds:
    """The first line break at or after a position, searched for once for the many
    values one line may hold (a search per value from each to the end of its line was
    quadratic in the values of a line)."""

    __slots__ = ("base", "eol", "searched", "text", "window")

    def __init__(self, text: str) -> None:
        self.text = text
        self.searched = -1
        self.eol = -1
        self.window = ""
        self.base = -1

    def window_of(self, pos: int, hi: int) -> tuple[str, int]:
        """``text[base:hi]`` for some ``base <= pos``, and ``base``: one slice serves the
        many values of one line (a slice per value from each to the end of its line was
        quadratic in the values of a line)."""
        if not (0 <= self.base <= pos and self.base + len(self.window) == hi):
            self.window = self.text[pos:hi]
            self.base = pos
        return self.window, self.base

    def after(self, pos: int) -> int:
        if self.searched < 0 or pos < self.searched or 0 <= self.eol < pos:
            self.eol = self.text.find("\n", pos)
            self.searched = pos
        return self.eol


def _decode_in_line(text: str, pos: int, ends: _LineEnds | None = None) -> int:
    """:func:`_decode_one` with the lenient decoder, for JSON Lines.

    The value is read within its own line first, then within windows of lines twice as
    long: the parse reads left to right, so an error before the end of a window is the
    error the whole text gives, and only a value that runs past the window is read
    again. (json's errors count the lines before them: read from the whole text, a file
    of bad lines took quadratic time.)
    """
    n = len(text)
    size = 0
    if ends is None:
        ends = _LineEnds(text)
    while True:
        eol = ends.after(min(pos + size, n))
        hi = n if eol < 0 else eol + 1
        window, base = ends.window_of(pos, hi)
        try:
            return base + _decode_one(_LENIENT, window, pos - base)
        except json.JSONDecodeError as exc:
            if exc.pos < len(window) or hi >= n:
                raise _LineError(exc.msg, base + exc.pos) from None
        size = max(64, 2 * (hi - pos))


def _lenient_end(text: str, pos: int, lines: bool, ends: _LineEnds) -> int:
    """The end of the value at ``pos`` as the lenient decoder finds it, or its error.

    The native scan checks the value without building it (the decoder makes every key,
    string and container and calls a hook per number and object: a tenth of an encode
    pass on ordinary JSON); where the scan finds no valid value, the decoder runs to
    say why. JSON Lines are scanned in :func:`_decode_in_line`'s windows, so a file of
    bad lines stays linear.
    """
    kernels = _accel.kernels
    if _accel.OFF and not _accel.on("json_value_end"):
        kernels = None  # type: ignore[assignment]
    if kernels is not None:
        units, kind = _accel.units(text)
        n = len(text)
        size = 0
        while True:
            hi = n
            if lines:
                eol = ends.after(min(pos + size, n))
                hi = n if eol < 0 else eol + 1
            end: int = kernels.json_value_end(units, kind, pos, hi)
            if end >= 0:
                if end < n and text[end] in _DIGITS and text[pos] in "-0123456789":
                    break  # a leading zero: the decoder says so
                return end
            if end == -1 or hi >= n:
                break
            size = max(64, 2 * (hi - pos))
    return _decode_in_line(text, pos, ends) if lines else _decode_one(_LENIENT, text, pos)


def _deep_value_end(text: str, pos: int) -> tuple[int | None, int, str]:
    """The end of the value at ``pos`` read by the tokenizer, which takes any depth
    (where the decoder's recursion ends): ``(end, 0, "")``, or ``(None, offset,
    reason)`` where it fails. Only containers deeper than the recursion limit get here:
    the native scan takes them as it takes any other value, and so does this."""
    kernels = _accel.kernels
    if _accel.OFF and not _accel.on("json_value_end"):
        kernels = None  # type: ignore[assignment]
    if kernels is not None:
        # The compiled scan, where it can answer: the tokenizer keeps a path per open
        # container (300 bytes a byte of ``[`` repeated and cut short).
        units, kind = _accel.units(text)
        end = kernels.json_value_end(units, kind, pos, len(text))
        if end >= 0:
            return end, 0, ""
        if end == -2:  # runs into the end (a number cut short reads so too)
            return None, len(text), "unexpected end of input"
    tok = JSONTokenizer(allow_nan=True)
    n, at, size = len(text), pos, 4096
    try:
        while at < n:
            hi = min(n, at + size)
            try:
                events = tok.feed(text[at:hi])
            except JSONChunkError as exc:
                # What fails may be what follows the value: the value read up to there.
                events = JSONTokenizer(allow_nan=True).feed(text[pos : pos + exc.offset])
                for e in events:
                    if e.depth == 0 and e.type not in ("start_object", "start_array", "key"):
                        return pos + e.end, 0, ""
                raise
            for e in events:
                if e.depth == 0 and e.type not in ("start_object", "start_array", "key"):
                    return pos + e.end, 0, ""
            # (windows of at most 64K: a window's events, paths included, are held at
            # once, and doubling to the end held those of half the text)
            at, size = hi, min(2 * size, 1 << 16)
        tok.close()
    except JSONChunkError as exc:
        return None, pos + exc.offset, exc.reason
    return None, n, "unexpected end of input"  # pragma: no cover - close raised


def _tokenizer_docs(
    text: str, start: int, *, allow_nan: bool, duplicates: bool
) -> tuple[list[tuple[int, int]], JSONChunkError | None]:
    """Top-level values from ``start`` by the state machine (deep or malformed input)."""
    tok = JSONTokenizer(allow_nan=allow_nan)
    docs: list[tuple[int, int]] = []
    keys: list[set[str] | None] = []
    error: JSONChunkError | None = None
    try:
        if start:
            tok.feed(" " * start)  # keep offsets, lines and columns of the whole text
        events = tok.feed(text[start:]) if start else tok.feed(text)
        events += tok.close()
    except JSONChunkError as exc:
        events, error = _events_before_error(text, start, allow_nan), exc
    for e in events:
        if duplicates:
            if e.type == "start_object":
                keys.append(set())
            elif e.type == "start_array":
                keys.append(None)
            elif e.type in ("end_object", "end_array"):
                keys.pop()
            elif e.type == "key":
                seen = keys[-1]
                assert seen is not None and e.path is not None
                key = e.path.segment
                assert isinstance(key, str)
                if key in seen:
                    line = text.count("\n", 0, e.start) + 1
                    column = e.start - (text.rfind("\n", 0, e.start) + 1) + 1
                    return docs, JSONChunkError(f"duplicate key {key!r}", e.start, line, column)
                seen.add(key)
        if e.depth == 0 and e.type not in ("start_object", "start_array"):
            docs.append((e.start, e.end))
    return docs, error


def _events_before_error(text: str, start: int, allow_nan: bool) -> list[JSONEvent]:
    tok = JSONTokenizer(allow_nan=allow_nan)
    out: list[JSONEvent] = []
    if start:
        tok.feed(" " * start)
    # Feed line by line: the events of the lines before the error are kept.
    for line in text[start:].splitlines(keepends=True):
        try:
            out += tok.feed(line)
        except JSONChunkError:
            break
    return out


def _strict_docs(text: str) -> list[tuple[int, int]]:
    """Top-level values of ``text``, or :class:`JSONChunkError` for anything not strict JSON."""
    pos = 1 if text.startswith("\ufeff") else 0
    docs: list[tuple[int, int]] = []
    while True:
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            break
        try:
            end = _decode_one(_STRICT, text, pos)
        except (ValueError, _Duplicate, _Constant, RecursionError):
            found, error = _tokenizer_docs(text, 0, allow_nan=False, duplicates=True)
            if error is not None:
                raise error from None
            return found
        docs.append((pos, end))
        pos = end
    if not docs:
        raise JSONChunkError("no JSON value", len(text), text.count("\n") + 1, 1)
    return docs


class _Open(Set[int]):
    """The starts of a front's open containers, sorted, as machine integers (a set
    that answers ``in`` by bisection): a frozenset of those of ``[`` repeated a
    hundred thousand times held 74 bytes a byte."""

    __slots__ = ("starts",)

    def __init__(self, starts: array[int]) -> None:
        self.starts = starts

    def __contains__(self, x: object) -> bool:
        if not isinstance(x, int):
            return False
        starts = self.starts
        i = bisect_left(starts, x)
        return i < len(starts) and starts[i] == x

    def __iter__(self) -> Iterator[int]:
        return iter(self.starts)

    def __len__(self) -> int:
        return len(self.starts)

    __hash__ = Set._hash

    def __repr__(self) -> str:
        return f"_Open({list(self.starts)!r})"


class _Item(NamedTuple):
    """A top-level value (``json``), an unparseable stretch, or the complete front of a
    value cut short (``open``: the starts of its containers still open at ``end``).
    A named tuple: JSON Lines make one per line, in C where the native passes run."""

    start: int
    end: int
    json: bool
    open: Set[int] = frozenset()


_ITEM_NO_OPEN: Set[int] = _Item._field_defaults["open"]
_NATIVE_VALUES = 1 << 15  # values the native scan gives at a time


class _Items:
    """The top-level items, in order, as offsets: a start and an end each in ``spans``
    (machine integers), a byte each in ``json`` (1: a value, 0: an unparseable stretch),
    and for each value cut short (its readable front), its index in ``fronts`` and the
    starts of its open containers in ``open_at`` (from ``open_from[k]`` to
    ``open_from[k + 1]`` for the k-th front).

    A JSON Lines file of tiny values has an item every few bytes, and one of broken
    lines a front every line: a named tuple (or a frozenset) each took about 60 (or 10)
    times the text.
    """

    __slots__ = ("fronts", "json", "open_at", "open_from", "spans")

    def __init__(self, size: int) -> None:
        code = "i" if size < 2**31 else "q"
        self.spans = array(code)
        self.json = bytearray()
        self.fronts = array(code)
        self.open_from = array(code, [0])
        self.open_at = array(code)

    def append(self, item: _Item) -> None:
        if item.open:
            self.fronts.append(len(self.json))
            self.open_at.extend(item.open.starts if isinstance(item.open, _Open) else sorted(item.open))
            self.open_from.append(len(self.open_at))
        self.spans.append(item.start)
        self.spans.append(item.end)
        self.json.append(item.json)

    def add_values(self, packed: bytes) -> None:
        """Values as ``kernels.json_values`` packs them (a start and an end each)."""
        before = len(self.spans)
        self.spans.frombytes(packed)
        self.json += b"\x01" * ((len(self.spans) - before) // 2)

    def open_of(self, i: int) -> Set[int]:
        """The open containers of item ``i`` (none but for a value cut short)."""
        k = bisect_left(self.fronts, i)
        if k == len(self.fronts) or self.fronts[k] != i:
            return _ITEM_NO_OPEN
        return _Open(self.open_at[self.open_from[k] : self.open_from[k + 1]])

    def __len__(self) -> int:
        return len(self.json)

    def __getitem__(self, i: int) -> _Item:
        if i < 0:
            i += len(self.json)
        spans = self.spans
        return _Item(spans[2 * i], spans[2 * i + 1], bool(self.json[i]), self.open_of(i))

    def __iter__(self) -> Iterator[_Item]:
        return map(self.__getitem__, range(len(self.json)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Items):
            return NotImplemented
        return list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"_Items({list(self)!r})"


_SALVAGE_WINDOW = 1 << 13


def _salvage(text: str, start: int, bad: int) -> _Item | None:
    """The front of the value at ``start`` that holds only complete members, or None.

    ``text[start:bad]`` is a valid prefix of JSON (the decoder stopped at ``bad``); the
    front ends after the last complete child of the innermost open container.
    """
    found = _front(text, start, bad)
    if found is None:
        return None
    opened, end = found
    inner = opened[-1]
    safe = _skip_ws(text, inner + 1)
    if end > inner:  # the innermost container's last child
        after = _skip_ws(text, end)
        comma = after < bad and text[after] == ","
        safe = _soft(text, after + 1, _skip_ws(text, after + 1)) if comma else end
    safe = min(safe, bad)
    return _Item(start, safe, True, _Open(opened))


def _front(text: str, start: int, bad: int) -> tuple[array[int], int] | None:
    """The open containers' starts of ``text[start:bad]`` (sorted) and the end of the
    innermost one's last complete child (-1 for none), or None (not a valid front of a
    value)."""
    code = "i" if len(text) < 1 << 31 else "q"
    kernels = _accel.kernels
    if _accel.OFF and not _accel.on("json_front"):
        kernels = None  # type: ignore[assignment]
    if kernels is not None:
        # The same walk in C (the tokenizer took 2.7 s a MB of an array cut short).
        found = kernels.json_front(*_accel.units(text), start, bad)
        if found is not None:
            packed = array("q")
            packed.frombytes(found[0])
            return (packed if code == "q" else array(code, packed)), found[1]
    tok = JSONTokenizer(allow_nan=True)
    # Fed a window at a time, keeping only the last complete value at each depth: the
    # events of the whole front at once took 250 bytes a byte of an array cut short.
    last: dict[int, int] = {}
    try:
        for a in range(start, bad, _SALVAGE_WINDOW):
            for e in tok.feed(text[a : min(a + _SALVAGE_WINDOW, bad)]):
                if e.type not in ("key", "start_object", "start_array"):
                    last[e.depth] = e.end + start
    except JSONChunkError:
        return None
    opened = array(code, [o[1] + start for o in tok.open_containers()])
    if not opened:
        return None
    end = last.get(len(opened), -1)
    # (a value at that depth ending before the innermost container opened is not its child)
    return opened, end if end > opened[-1] else -1


_GRAPHEME = regex.compile(r"\X")
_JOINED = "a character that joins the value's last one follows it"


def _splits_cluster(text: str, end: int) -> bool:
    """Whether ``end``, the end of a value or of its readable front, falls inside a cluster.

    Such an end is an ASCII character, so only what follows can join it (a combining
    mark, a zero-width joiner): then the value is no value of its own and goes with the
    unparseable text after it, which prose rules cut at graphemes.
    """
    if end >= len(text) or text[end] < "\u0300":  # nothing below U+0300 joins what precedes it
        return False
    return _GRAPHEME.match(text, end - 1).end() > end  # type: ignore[union-attr]


def _cluster_start(text: str, pos: int, items: _Items) -> int:
    """Where the unparseable stretch at ``pos`` starts: ``pos``, or, where the character
    there joins the whitespace before it (a combining mark after a space), that
    whitespace character's offset; the whitespace was skipped as the previous value's,
    and the stretch starting on the mark was a cut inside a grapheme."""
    floor = items.spans[-1] if len(items) else 0
    return pos - 1 if pos - 1 >= floor and _splits_cluster(text, pos) else pos


def _lenient_items(text: str, lines: bool) -> tuple[_Items, str | None]:
    """Values and unparseable stretches, in order, and a warning for the first failure."""
    items = _Items(len(text))
    pos = 1 if text.startswith("\ufeff") else 0
    note: str | None = None
    n = len(text)
    kernels = _accel.kernels
    if _accel.OFF and not _accel.on("json_values"):
        kernels = None  # type: ignore[assignment]
    if kernels is not None:
        units, kind = _accel.units(text)
    ends = _LineEnds(text)
    while True:
        while kernels is not None:
            # The values up to the first one the decoder must look at, found in C.
            found, pos = kernels.json_values(units, kind, pos, lines, items.spans.itemsize, _NATIVE_VALUES)
            items.add_values(found)
            if len(found) < 2 * items.spans.itemsize * _NATIVE_VALUES:
                break
        pos = _skip_ws(text, pos)
        if pos >= n:
            return items, note
        try:
            end = _lenient_end(text, pos, lines, ends)
        except RecursionError:
            deep, bad, message = _deep_value_end(text, pos)
            if deep is not None:
                if not _splits_cluster(text, deep):
                    items.append(_Item(pos, deep, True))
                    pos = deep
                    continue
                bad, message = pos, _JOINED
        except ValueError as exc:
            bad = getattr(exc, "pos", pos)
            message = getattr(exc, "msg", str(exc))
        else:
            if not _splits_cluster(text, end):
                items.append(_Item(pos, end, True))
                pos = end
                continue
            bad, message = pos, _JOINED
        if note is None:  # where the first failure is (counting lines costs O(offset))
            line = text.count("\n", 0, bad) + 1
            column = bad - (text.rfind("\n", 0, bad) + 1) + 1
            note = f"{message} (line {line}, column {column}, offset {bad})"
        stop = n
        if lines:
            nl = text.find("\n", bad)
            stop = n if nl < 0 else nl + 1
        front = _salvage(text, pos, bad) if bad > pos else None
        if front is not None and front.end > pos and not _splits_cluster(text, front.end):
            items.append(front)
            pos = front.end
        if pos < stop:
            items.append(_Item(_cluster_start(text, pos, items), stop, False))
        pos = stop


# -- the splitter ---------------------------------------------------------------------


class _Value(NamedTuple):
    """A value node: its span, depth, pointer and the span of its key (if a member).

    A named tuple: the splitter makes one per child it hands to the engine.
    """

    start: int
    end: int
    depth: int
    pointer: str
    key_start: int = 0
    key_end: int = 0
    open: Set[int] = frozenset()  # for the front of a value cut short: open containers
    peeled: bool = False  # a member's value, its key already apart


_NO_OPEN: Set[int] = _Value._field_defaults["open"]


class _Text(NamedTuple):
    """The inner span of a string (between the quotes) and the next cut level to try."""

    start: int
    end: int
    level: int


class _Prefix(NamedTuple):
    """The text before a container's first child when it holds a key: cut first before
    the bracket, then after the key, then inside the key. (A named tuple: the native
    split makes one per member it peels.)"""

    key_start: int
    key_end: int
    value_start: int


@flat_state
class _Run(NamedTuple):
    """Members ``first`` to ``first + size - 1`` of the complete container opening at
    ``start`` (the first of them begins at ``begin``), at ``depth``, under the
    container's ``pointer``. Flat: packed as if its members stood in its place."""

    start: int
    depth: int
    pointer: str
    first: int
    begin: int
    size: int


@flat_state
class _Top(NamedTuple):
    """Items ``first`` to ``stop - 1`` of the top level, the first value among them
    value number ``number`` (with ``numbered``, several values: value i has pointer /i).
    Flat: a run of them is packed as if they stood in its place."""

    items: _Items
    first: int
    stop: int
    number: int
    numbered: bool


# One escape sequence; a surrogate pair is one unit.
_ESCAPE = re.compile(
    r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)", re.S
)
_SENTENCE = next(i for i, (name, _) in enumerate(LEVELS) if name == "sentence")
_STRING_LEVELS = 2 + len(LEVELS) - _SENTENCE  # \n\n runs, \n runs, then prose from sentences


def string_cuts(text: str, lo: int, hi: int, level: int) -> tuple[int, Sequence[int]]:
    """Cuts strictly inside ``(lo, hi)``, a span of raw string content, at ``level`` or below.

    ``lo`` must not be inside an escape. Levels: runs of two or more ``\\n`` escapes,
    runs of line-break escapes, then the prose levels from sentences down to
    graphemes; no cut is inside an escape sequence. Returns the level found.

    The escapes are kept as arrays of their starts and ends (a tuple per escape and a
    set of every position inside one held 108 bytes a byte of a string of ``\\u0000``).
    The prose levels are prose's own :func:`boundaries` (native where it can be), so a
    run of glued graphemes is cut every ``KINSOKU_RUN_MAX`` as in prose; a cut they find
    inside an escape is dropped, or, at the grapheme level, moved to the escape's start.
    """
    code = "i" if len(text) < 1 << 31 else "q"
    starts = array(code)
    ends = array(code)
    breaks = bytearray()  # per escape: 1 for \n, 2 for \r, 0 for any other
    for m in _ESCAPE.finditer(text, lo, hi):
        a, b = m.span()
        starts.append(a)
        ends.append(b)
        breaks.append(1 if text[a + 1] == "n" else 2 if text[a + 1] == "r" else 0)
    if level <= 1 and breaks.count(0) < len(breaks):
        run_ends = array("q")  # runs of \n / \r escapes: their ends and counts of \n
        run_counts = array("q")
        for i, kind in enumerate(breaks):
            if not kind:
                continue
            if run_ends and run_ends[-1] == starts[i]:
                run_ends[-1] = ends[i]
                run_counts[-1] += kind == 1
            else:
                run_ends.append(ends[i])
                run_counts.append(kind == 1)
        for lev, need in ((0, 2), (1, 1)):
            if lev < level:
                continue
            cuts = array(
                "q",
                (
                    p
                    for p, count in zip(run_ends, run_counts)
                    if count >= need and lo < p < hi and allowed_cut(text, p)
                ),
            )
            if cuts:
                return lev, cuts
        del run_ends, run_counts
    del breaks
    lev = max(level, 2)
    while lev < _STRING_LEVELS:
        index, found = boundaries(text, lo, hi, _SENTENCE + lev - 2)
        if not found:
            break
        lev = index - _SENTENCE + 2
        if starts:
            found = _outside_escapes(text, found, starts, ends, lo, index == _GRAPHEME_LEVEL)
        if found:
            return lev, found
        lev += 1
    return _STRING_LEVELS, array("q")


def _outside_escapes(
    text: str, cuts: array[int], starts: array[int], ends: array[int], lo: int, move: bool
) -> array[int]:
    """``cuts`` (sorted, inside ``(lo, ...)``) less those strictly inside an escape, or,
    with ``move``, with those moved to the escape's start (dropped where that is ``lo``,
    a cut is there already, or a cut there is refused: inside a grapheme, or after a
    zero-width joiner)."""
    out = array(cuts.typecode)
    i, n = 0, len(starts)
    for p in cuts:
        while i < n and ends[i] <= p:
            i += 1
        if i < n and starts[i] < p:  # (the escapes are sorted and apart)
            if not move:
                continue
            p = starts[i]
            if p <= lo or (out and out[-1] >= p) or not allowed_cut(text, p):
                continue  # (not after a character that joins the escape: a prepended mark, a ZWJ)
        out.append(p)
    return out


class _Flat(NamedTuple):
    """State of the pieces of a container flattened below ``_FLAT_DEPTH``: the offsets
    where the pieces that hold a string of some length begin (sorted), and that string's
    content, a start and an end each in ``spans``. A piece that holds a key and a string
    value has both: the key at the piece's start, the value at its own (the piece is cut
    between them first, where it does not fit)."""

    begins: array[int]
    spans: array[int]


# What the scan of a flattened container steps on: a bracket, a comma or a string.
_FLAT_TOKEN = re.compile(rf"[\[\]{{}},]|{_STRING_TOKEN.pattern}", re.S)


def _flat_cuts(
    text: str, start: int, stop: int, lo: int, hi: int
) -> tuple[array[int], array[int], array[int]]:
    """``lo`` and the value edges inside ``(lo, hi)`` of the container opening at
    ``start`` (valid JSON up to ``stop``): where each child begins (after an opening
    bracket or a comma and the whitespace after it) and where each container with
    children closes; and, as in :class:`_Flat`, the pieces holding a string.
    The open containers are a byte each (whether they hold a child), and the edges
    4-byte integers where they fit (a cut every byte or two of ``[[[...]]]``)."""
    cuts: array[int] = array("i" if len(text) < 1 << 31 else "q", [lo])
    begins: array[int] = array("q")
    spans: array[int] = array("q")
    holds = bytearray()
    skip = _WS.match
    search = _FLAT_TOKEN.search
    pos = start
    begin = start
    keyed = -1  # the begin of the piece whose key was recorded
    while True:
        m = search(text, pos, stop)
        if m is None:
            break
        p, pos = m.span()
        c = text[p]
        if c == '"':
            after = skip(text, pos, stop).end()  # type: ignore[union-attr]
            if pos - p > 2:
                if after < stop and text[after] == ":":  # a key: its piece begins with it
                    keyed = begin
                    begins.append(begin)
                elif keyed == begin:  # a value after its recorded key: at its own start
                    begins.append(p)
                else:
                    begins.append(begin)
                spans.append(p + 1)
                spans.append(pos - 1)
        elif c == "[" or c == "{":
            b = skip(text, pos, stop).end()  # type: ignore[union-attr]
            full = b < stop and text[b] not in "]}"
            holds.append(full)
            if full:
                begin = b
                if cuts[-1] < b < hi:
                    cuts.append(b)
        elif c == ",":
            begin = skip(text, pos, stop).end()  # type: ignore[union-attr]
            if cuts[-1] < begin < hi:
                cuts.append(begin)
        else:  # a closing bracket
            if holds.pop() and cuts[-1] < p < hi:
                cuts.append(p)
            if not holds:
                break
    return cuts, begins, spans


# Whitespace after a value is cut apart from it only when it is longer than this.
_SHORT_GAP = 32
# A run of JSON's whitespace, or a string (passed over whole: its spaces are no gap).
_GAP = re.compile(r'[ \t\n\r]+|"(?:[^"\\]|\\.)*"?', re.S)


class _Gaps:
    """The splitter of a JSON section that no value edge cuts: a scalar with the white
    space around it, an empty container, brackets and separators, a key's colon. When
    one does not fit, it is cut before each stretch of what is not whitespace (outside
    strings), a stretch keeping the whitespace after it; then, where that does not fit
    either and the whitespace is long, between the stretch and its whitespace
    (``Section.state``: where that whitespace starts), which prose rules cut further
    (lines, then characters). Values, strings and punctuation stay whole: ``[1``, a
    megabyte of spaces and ``]`` was one chunk of thousands of tokens."""

    __slots__ = ()

    def split(self, text: str, section: Section) -> Sequence[Section]:
        ws = section.state
        if isinstance(ws, int):
            s = section
            return [
                Section(s.start, ws, None, None, "json", None, s.path, s.partial, s.sticky),
                _blank(ws, s.end, s.path),
            ]
        return _gap_parts(text, section)


_GAPS = _Gaps()


def _blank(a: int, b: int, path: str | None) -> Section:
    """Whitespace between values, cut by prose rules."""
    return Section(a, b, PROSE, 0, "json", None, path)


def _parts(edges: Sequence[int], template: Section) -> list[Section]:
    """A section like ``template`` (all but its span) for each piece between ``edges``."""
    t = template
    return [
        Section(a, b, t.splitter, t.state, t.kind, t.language, t.path, t.partial)
        for a, b in itertools.pairwise(edges)
    ]


def _gap_parts(text: str, section: Section, inside: _Text | None = None) -> list[Section]:
    """``section`` cut before each stretch that is not whitespace outside strings (nor
    inside ``inside``, the string it holds a piece of), the whitespace before the first
    a part of its own; none where it has no such cut, and for whitespace alone, the
    same span cut by prose rules. The splitter's second level is :class:`_Gaps`'s."""
    a, b = section.start, section.end
    spans = [(a, b)]
    if inside is not None:  # the string's content and quotes are no gap
        lo, hi = max(a, inside.start - 1), min(b, inside.end + 1)
        if lo < hi:
            spans = [(a, lo), (hi, b)]
    runs: list[tuple[int, int]] = []
    for lo, hi in spans:
        for m in _GAP.finditer(text, lo, hi):
            if m.group()[0] != '"':
                runs.append(m.span())
    if not runs:
        return []
    path, sticky = section.path, section.sticky
    if runs == [(a, b)]:  # all whitespace: prose rules, in the section's stead
        return [_blank(a, b, path)]
    string = inside if section.partial else None
    parts: list[Section] = []
    if runs[0][0] == a:  # whitespace first
        parts.append(_blank(a, runs[0][1], path))
        runs = runs[1:]
    pos = parts[-1].end if parts else a
    runs.append((b, b))
    for lo, hi in runs:
        if pos >= b:
            break
        held = string is not None and pos < string.end and lo > string.start
        # (Short whitespace stays with what it follows: cut off, it would open the next
        # member's chunk under this member's pointer.)
        state = lo if hi - lo > _SHORT_GAP else None
        parts.append(Section(pos, hi, _GAPS if state else None, state, "json", None, path, held, sticky))
        pos = hi
    if len(parts) == 1:  # one stretch and its whitespace: cut between them
        return list(_GAPS.split(text, parts[0])) if parts[0].state is not None else []
    return parts


class JSONSplitter:
    """Splitter for one JSON text; ``Section.state`` is a value node, a string span or the top."""

    __slots__ = ("structure",)

    def __init__(self, structure: Structure) -> None:
        self.structure = structure

    def split(self, text: str, section: Section) -> Sequence[Section]:
        native = _accel.native
        if _accel.OFF and not _accel.on("json_split"):
            native = None  # type: ignore[assignment]
        if native is not None:
            # Members peeled and containers opened in C (the engine's native pack calls
            # it without this frame); every other state comes back to ``_split``.
            found: Sequence[Section] = native.json_split(self, text, section)
            return found
        return self._split(text, section)

    def split_edges(self, text: str, section: Section) -> tuple[Sequence[int], Section] | None:
        """A string's cuts as plain offsets (the engine's uniform parts: a Section is
        made only for a part that must descend), for a string value and its pieces, and
        every value edge of a container at depth ``_FLAT_DEPTH`` or more (see ``_flat``);
        None for every other state (``split`` gives those parts). A string of 200,000
        words cut at words held a Section per word: 39 bytes a byte of input."""
        state = section.state
        if isinstance(state, _Value):
            c = text[state.start]
            if (c == "[" or c == "{") and state.depth >= _FLAT_DEPTH:
                return self._flat(text, section, state)
            if c != '"' or _peels(state):
                return None
            if section.start < state.start or state.end < section.end:
                return None  # the string apart from what is around it first (``split``)
            state = _Text(state.start + 1, state.end - 1, 0)
        elif not isinstance(state, _Text):
            return None
        found = self._text_edges(text, section, state)
        # Where the string cannot be cut, ``split`` cuts the whitespace around it.
        return found if found[0] else None

    def _text_edges(self, text: str, section: Section, span: _Text) -> tuple[Sequence[int], Section]:
        """The edges of ``span``'s pieces within ``section`` (none where it cannot be
        cut) and a section each piece is like but for its span."""
        lo, hi = max(section.start, span.start), min(section.end, span.end)
        level, cuts = string_cuts(text, lo, hi, span.level)
        if not cuts:
            return (), section
        edges = array("q", cuts)
        edges.insert(0, section.start)
        edges.append(section.end)
        nxt = _Text(span.start, span.end, level + 1)
        s = section
        return edges, Section(s.start, s.end, self, nxt, "json", None, s.path, True)

    def _split(self, text: str, section: Section) -> Sequence[Section]:
        """``split`` in Python: the reference for the native one, and its other states."""
        state = section.state
        if isinstance(state, _Text):
            return self._split_text(text, section, state)
        if isinstance(state, _Top):
            return self._split_top(text, section, state)
        if isinstance(state, _Prefix):
            return self._split_prefix(text, section, state)
        if isinstance(state, _Run):
            return self._split_run(text, section, state)
        if isinstance(state, _Flat):  # a piece of a flattened container
            begins = state.begins
            i = bisect_left(begins, section.start)
            if i < len(begins) and begins[i] == section.start:
                if i + 1 < len(begins) and section.start < begins[i + 1] < section.end:
                    # a key and its string value: apart first, as a member is peeled
                    at, path = begins[i + 1], section.path
                    return [
                        Section(section.start, at, self, state, "json", None, path, True, True),
                        Section(at, section.end, self, state, "json", None, path),
                    ]
                span = _Text(state.spans[2 * i], state.spans[2 * i + 1], 0)
                return self._split_text(text, section, span)
            return _gap_parts(text, section)
        if not isinstance(state, _Value):
            return ()
        c = text[state.start]
        if _peels(state):
            return self._peel(text, section, state)
        if c == '"':
            return self._string_value(text, section, state)
        if c == "{" or c == "[":
            return self._split_container(text, section, state)
        return _gap_parts(text, section)

    def _string_value(self, text: str, section: Section, node: _Value) -> Sequence[Section]:
        """A string value and what is around it in its section (indentation before it,
        the separator and line end after it): the string apart first, so that one that
        fits is not cut for their sake (it was, at the budget of its own count); then,
        where it does not fit, inside."""
        a, b = section.start, section.end
        span = _Text(node.start + 1, node.end - 1, 0)
        if a >= node.start and b <= node.end:
            return self._split_text(text, section, span)
        path = section.path
        parts = []
        if a < node.start:  # (a key's colon and space, or indentation: they open its chunk)
            parts.append(Section(a, node.start, _GAPS, None, "json", None, path, False, True))
        parts.append(Section(max(a, node.start), min(b, node.end), self, span, "json", None, path))
        if node.end < b:
            parts.append(Section(node.end, b, _GAPS, None, "json", None, path))
        return parts

    def _peel(self, text: str, section: Section, node: _Value) -> Sequence[Section]:
        """A member apart: its key (to the colon), then its value with the separator.

        So a value that fits (with its comma) is never opened for the sake of its key,
        and in pretty-printed JSON both edges stay additive junctions for the engine.
        """
        colon = text.find(":", node.key_end, node.start) + 1
        path = section.path
        prefix = _Prefix(node.key_start, node.key_end, colon)
        value = node._replace(peeled=True)
        # The key opens the chunk of the value's first piece: for a string cut inside,
        # that chunk holds part of it, so the key part carries the ``partial`` mark.
        partial = text[node.start] == '"'
        return [
            Section(section.start, colon, self, prefix, "json", None, path, partial, True),
            Section(colon, section.end, self, value, "json", None, path),
        ]

    def _split_text(self, text: str, section: Section, span: _Text) -> Sequence[Section]:
        edges, t = self._text_edges(text, section, span)
        if not edges:
            return _gap_parts(text, section, span)
        return _parts(edges, t)

    def _split_prefix(self, text: str, section: Section, prefix: _Prefix) -> Sequence[Section]:
        path = section.path
        start, end = section.start, section.end
        for cut in (prefix.value_start, prefix.key_end):
            if start < cut < end:
                head = Section(start, cut, self, prefix, "json", None, path)
                return [head, Section(cut, end, _GAPS, None, "json", None, path)]
        key = _Text(prefix.key_start + 1, prefix.key_end - 1, 0)
        if start < prefix.key_start < end:  # indentation before the key
            tail = Section(prefix.key_start, end, self, key, "json", None, path)
            return [Section(start, prefix.key_start, _GAPS, None, "json", None, path), tail]
        return self._split_text(text, section, key)

    def _split_top(self, text: str, section: Section, top: _Top) -> Sequence[Section]:
        count = top.stop - top.first
        if count > _RUN + 1:
            # Runs of items (at most _RUN of them at a level), each cut into its items
            # only when it does not fit: a file of tiny values makes no Section, value
            # and pointer per value at once.
            size = max(_RUN, -(-count // _RUN))
            return self._top_parts(text, section, top, [top.first + i for i, _ in _runs(count, size)], True)
        return self._top_parts(text, section, top, range(top.first, top.stop), False)

    def _top_parts(
        self, text: str, section: Section, top: _Top, starts: Sequence[int], runs: bool
    ) -> Sequence[Section]:
        """A section per item of ``top`` at ``starts`` (``runs``: per run of items from
        each start to the next), each from its first item's start to the next one's (the
        first from the section's start, the last to its end: the white space between
        goes before)."""
        items = top.items
        is_json = items.json
        spans = items.spans
        fronts = items.fronts
        numbered = top.numbered
        stops = [*starts[1:], top.stop]
        if runs:
            edges = [section.start, *(spans[2 * i] for i in starts[1:]), section.end]
        else:
            edges = [section.start, *spans[2 * top.first + 2 : 2 * top.stop : 2], section.end]
        sections: list[Section] = []
        index = top.number
        for i, j, a, b in zip(starts, stops, edges, edges[1:]):
            pointer = f"/{index}" if numbered else ""
            if runs:
                run = _Top(items, i, j, index, numbered)
                if is_json[i]:
                    sections.append(Section(a, b, self, run, "json", None, pointer))
                else:
                    sections.append(Section(a, b, self, run, "text", None, None))
                index += is_json.count(1, i, j)
            elif is_json[i]:
                front = items.open_of(i) if fronts else _NO_OPEN
                node = _Value(spans[2 * i], spans[2 * i + 1], 0, pointer, 0, 0, front)
                sections.append(Section(a, b, self, node, "json", None, pointer))
                index += 1
            else:
                sections.append(Section(a, b, PROSE, 0, "text", None, None))
        # One item alone (a single value, or one unparseable stretch) is handed back as
        # it is: the engine places it in the section's stead, so that its parts are
        # offsets where its splitter gives them (an unterminated string cut by prose
        # rules was a Section per word, 60 bytes a byte).
        return sections

    def _split_container(self, text: str, section: Section, node: _Value) -> Sequence[Section]:
        if node.depth >= _FLAT_DEPTH:
            found = self._flat(text, section, node)
            if found is None:
                return _gap_parts(text, section)
            return _parts(*found)
        kids, close, runs = self._scan_members(text, node)
        if runs is not None:
            return self._container_parts(section, node, *runs)
        if not kids:  # (an empty container: white space inside it may be cut)
            return _gap_parts(text, section)
        edges, members = self._members(text, node, kids, close)
        return self._container_parts(section, node, edges, members)

    def _scan_members(
        self, text: str, node: _Value
    ) -> tuple[list[Child], int, tuple[list[int], list[Section]] | None]:
        """The members of the container ``node`` and its closing offset (for a container
        cut short, the end of its front); past _RUN + 1 members, only the first ones, and
        its runs, scanned a member at a time as the native json_runs does: the edge
        before its first member and after its last, and a section per run (no array of
        every member is made). A member still open (cut short) is in no run: it comes
        after them, a section of its own."""
        structure = self.structure
        is_object = text[node.start] == "{"

        close = node.end if node.open else structure.close_of(node.start)

        def batch(at: int, size: int) -> list[Child]:
            if not node.open:
                return structure.children_at(at, is_object, close, size)
            out: list[Child] = []
            while at < close and len(out) < size:
                out.append(structure.open_child_at(at, is_object, close, node.open))
                at = out[-1].next
            return out

        pos = _skip_ws(text, node.start + 1)
        head = batch(pos, _RUN + 2)
        if len(head) <= _RUN + 1:
            return head, close, None
        pos = head[-1].next

        def members() -> Iterator[Child]:
            yield from head[1:]
            at = pos
            while at < close:
                found = batch(at, _RUN)
                if not found:
                    break
                yield from found
                at = found[-1].next

        base = node.pointer + "/"

        def pointer(k: Child, index: int) -> str:
            if is_object:
                return base + escape_pointer(decode_key(text[k.key_start : k.key_end]))
            return base + str(index)

        def run_section(a: int, b: int) -> Section:
            run = _Run(node.start, node.depth + 1, node.pointer, lead_index, lead.begin, index - lead_index)
            return Section(a, b, self, run, "json", None, pointer(lead, lead_index))

        first_edge = _soft(text, node.start + 1, head[0].begin)
        runs: list[Section] = []
        lead, lead_index, lead_edge = head[0], 0, first_edge
        prev = head[0]
        index = 1
        for k in members():
            if node.open and k.start in node.open:  # the open member, after the runs
                edge = _soft(text, text.find(",", prev.end, k.begin) + 1, k.begin)
                runs.append(run_section(lead_edge, edge))
                last_edge = _soft(text, k.end, close)
                child_pointer = pointer(k, index)
                depth = node.depth + 1
                value = _Value(k.start, k.end, depth, child_pointer, k.key_start, k.key_end, node.open)
                runs.append(Section(edge, last_edge, self, value, "json", None, child_pointer))
                return head, close, ([first_edge, last_edge], runs)
            # (a last member alone joins the run before it, as _runs has it)
            if index % _RUN == 0 and k.next < close:
                edge = _soft(text, text.find(",", prev.end, k.begin) + 1, k.begin)
                runs.append(run_section(lead_edge, edge))
                lead, lead_index, lead_edge = k, index, edge
            prev = k
            index += 1
        last_edge = _soft(text, prev.end, close)
        runs.append(run_section(lead_edge, last_edge))
        return head, close, ([first_edge, last_edge], runs)

    def _container_parts(
        self, section: Section, node: _Value, edges: list[int], members: list[Section]
    ) -> Sequence[Section]:
        """The opening of ``node`` (to ``edges[0]``), its members or runs, and its closing
        (from ``edges[-1]``)."""
        # The opening line (key, bracket) is sticky: a chunk does not end with it.
        pointer = node.pointer
        if node.key_end - node.key_start > 2 and section.start <= node.key_start:
            prefix = _Prefix(node.key_start, node.key_end, node.start)
            out = [Section(section.start, edges[0], self, prefix, "json", None, pointer, False, True)]
        else:
            out = [Section(section.start, edges[0], _GAPS, None, "json", None, pointer, False, True)]
        out += members
        if edges[-1] < section.end:
            out.append(Section(edges[-1], section.end, _GAPS, None, "json", None, node.pointer))
        return out

    def _split_run(self, text: str, section: Section, run: _Run) -> Sequence[Section]:
        kids = self.structure.children_from(run.start, run.begin, run.size)
        node = _Value(run.start, section.end, run.depth - 1, run.pointer)
        _, members = self._members(text, node, kids, 0, (section.start, section.end), run.first)
        return members

    def _members(
        self,
        text: str,
        node: _Value,
        kids: list[Child],
        close: int,
        outer: tuple[int, int] | None = None,
        index: int = 0,
    ) -> tuple[list[int], list[Section]]:
        """The edges between the children of ``node`` and a section for each (for a
        run: its ``outer`` edges, and its first child's ``index``)."""
        # Cut after the first line break of the whitespace between values (after the
        # comma): a chunk ends with its line and the next keeps its indentation.
        text_find = text.find
        edges = [_soft(text, node.start + 1, kids[0].begin) if outer is None else outer[0]]
        for prev, k in itertools.pairwise(kids):
            edges.append(_soft(text, text_find(",", prev.end, k.begin) + 1, k.begin))
        edges.append(_soft(text, kids[-1].end, close) if outer is None else outer[1])
        out: list[Section] = []
        is_object = text[node.start] == "{"
        depth = node.depth + 1
        base = node.pointer + "/"
        for i, k in enumerate(kids):
            if is_object:
                key = text[k.key_start + 1 : k.key_end - 1]
                if "\\" in key or "~" in key or "/" in key:  # (else decoded and escaped, it is itself)
                    key = escape_pointer(decode_key(text[k.key_start : k.key_end]))
                pointer = base + key
            else:
                pointer = base + str(index + i)
            child = _Value(k.start, k.end, depth, pointer, k.key_start, k.key_end)
            if node.open and k.start in node.open:
                child = _Value(k.start, k.end, depth, pointer, k.key_start, k.key_end, node.open)
            splitter = self if _divisible(text, k) else _GAPS
            out.append(Section(edges[i], edges[i + 1], splitter, child, "json", None, pointer))
        return edges, out

    def _flat(self, text: str, section: Section, node: _Value) -> tuple[array[int], Section] | None:
        """Every value edge of a container at depth ``_FLAT_DEPTH`` or more, as one
        level, and a section each piece is like but for its span (its state a
        :class:`_Flat`); None where there is none inside the section.

        Found by one scan of the container's text, so depth costs neither recursion nor
        memory: a walk over its children kept each level's children and the pieces'
        sections at once (330 bytes a byte of ``[[[...]]]``)."""
        stop, hi = node.end, section.end
        edges, begins, spans = _flat_cuts(text, node.start, stop, section.start, hi)
        if node.open and edges[-1] < stop < hi:  # (cut short: what is open closes there)
            edges.append(stop)
        if len(edges) < 2:
            return None
        edges.append(hi)
        s = section
        return edges, Section(s.start, s.end, self, _Flat(begins, spans), "json", None, node.pointer)


if _accel.native is not None and _accel.on("json_split"):
    # (Switched off, the native pack asks JSONSplitter.split, in Python, as well.)
    _accel.native.json_setup(JSONSplitter, _Value, _Prefix, _Run, Section, decode_key, _NO_OPEN, _RUN, _GAPS)


def _runs(count: int, size: int | None = None) -> list[tuple[int, int]]:
    """``[i, j)`` for each run of ``size`` (default ``_RUN``) of ``count`` siblings; a last
    sibling alone joins the run before it (a run of one would be cut as its member's
    pieces, not packed as that member)."""
    size = _RUN if size is None else size
    starts = list(range(0, count, size))
    if len(starts) > 1 and count - starts[-1] == 1:
        starts.pop()
    return list(zip(starts, [*starts[1:], count]))


def _soft(text: str, a: int, b: int) -> int:
    """After the first line break in the whitespace ``text[a:b]``, else ``b``."""
    i = text.find("\n", a, b)
    if i < 0:
        i = text.find("\r", a, b)
    return b if i < 0 else i + 1


def _peels(node: _Value) -> bool:
    """Whether a member is cut into its key and its value before anything else (a
    member not yet peeled, above the depth where levels are flattened)."""
    return node.key_end > node.key_start and not node.peeled and node.depth < _FLAT_DEPTH


def _divisible(text: str, k: Child) -> bool:
    """Whether a child can be cut when it does not fit: a container, a string with
    something in it, or a member, between its key and its value and inside the key (a
    member with a long key and a number was one oversize chunk)."""
    c = text[k.start]
    return c == "{" or c == "[" or (c == '"' and k.end - k.start > 2) or k.key_end > k.key_start


def _root(text: str, lines: bool) -> Section:
    items, note = _lenient_items(text, lines)
    if note is not None:
        warnings.warn(
            f"malformed JSON: {note}; the unparseable part is chunked with prose rules",
            ChunkingWarning,
            stacklevel=caller_level(),
        )
    splitter = JSONSplitter(Structure(text))
    n = len(text)
    if not items:
        return Section(0, n, PROSE, 0, "json", None, None)
    if len(items) == 1 and items.json[0] and not items.fronts and not lines:
        value = _Value(items.spans[0], items.spans[1], 0, "")
        return Section(0, n, splitter, value, "json", None, "")
    numbered = lines or items.json.count(1) > 1
    first_path = ("/0" if numbered else "") if items.json[0] else None
    return Section(0, n, splitter, _Top(items, 0, len(items), 0, numbered), "json", None, first_path)


def json_root(text: str, language: str | None, filename: str | None) -> Section:
    return _root(text, lines=False)


def jsonl_root(text: str, language: str | None, filename: str | None) -> Section:
    return _root(text, lines=True)
