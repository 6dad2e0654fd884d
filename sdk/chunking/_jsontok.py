"""A sans-IO JSON tokenizer, and the regex fast path that agrees with it.

:class:`JSONTokenizer` is a state machine fed with text (``feed(str)`` / ``close()``),
in any slicing: a whole document, one character at a time, or deltas of a stream.
It validates strictly (RFC 8259) and reports every value's span, depth and JSON
Pointer as :class:`JSONEvent` values. It never recurses, so nesting depth is bounded
by memory only. Pointers are built lazily (a linked path per value), so deep
documents do not cost quadratic time.

:class:`Structure` is the fast path for a complete, already validated text: compiled
regexes find the children of one container at a time, so a caller that needs only the
top levels (the JSON splitter) never walks the leaves in Python. :func:`scan_events`
walks a whole text with it and yields exactly the tokenizer's events (tested).

Decisions: a leading U+FEFF (BOM) is whitespace; several top-level values in a row
(concatenated JSON, JSON Lines) are accepted unless ``multiple=False``; duplicate keys
are reported as they come (the tokenizer keeps no key sets); ``NaN``/``Infinity``/
``-Infinity`` are errors unless ``allow_nan=True``; an unpaired surrogate escape is
accepted (the RFC grammar allows it), a surrogate *pair* is one unit.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterator, Set
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from .._errors import JSONChunkError
from . import _accel

__all__ = [
    "JSONChunkError",
    "JSONEvent",
    "JSONPath",
    "JSONProgress",
    "JSONTokenizer",
    "Structure",
    "escape_pointer",
    "scan_events",
]

EventType = Literal[
    "start_object", "end_object", "start_array", "end_array", "key", "string", "number", "literal"
]


def escape_pointer(segment: str) -> str:
    """One RFC 6901 reference token: ``~`` -> ``~0``, ``/`` -> ``~1``."""
    if "~" in segment or "/" in segment:
        return segment.replace("~", "~0").replace("/", "~1")
    return segment


@dataclass(frozen=True, slots=True, eq=False)
class JSONPath:
    """A value's place, as a linked list (parent, key or index); ``None`` is a document root."""

    parent: JSONPath | None
    segment: str | int

    @property
    def pointer(self) -> str:
        parts: list[str] = []
        node: JSONPath | None = self
        while node is not None:
            seg = node.segment
            parts.append(str(seg) if isinstance(seg, int) else escape_pointer(seg))
            node = node.parent
        parts.append("")
        return "/".join(reversed(parts))


def _pointer(path: JSONPath | None) -> str:
    return "" if path is None else path.pointer


@dataclass(frozen=True, slots=True)
class JSONEvent:
    """One token of the document.

    ``start``/``end`` are code-point offsets in everything fed so far. For a scalar or a
    key they span its text; ``start_*`` spans the opening bracket; ``end_*`` spans the
    whole container. ``depth`` is 0 for a document root; ``doc`` counts top-level
    values. A key event carries the depth and path of the member value it names.
    """

    type: EventType
    start: int
    end: int
    depth: int
    doc: int
    path: JSONPath | None = field(default=None, compare=False, repr=False)

    @property
    def pointer(self) -> str:
        """RFC 6901 pointer of the value, relative to its document."""
        return _pointer(self.path)


@dataclass(frozen=True, slots=True)
class JSONProgress:
    """Where an incomplete document stands: open containers (``{``/``[`` outermost first),
    whether the input ends inside a string (a key or a value), and the pointer of the
    value being read or expected next."""

    containers: str
    in_string: bool
    in_key: bool
    pointer: str
    offset: int
    docs: int


# States. Structure:
_VALUE, _ARRAY_FIRST, _OBJECT_FIRST, _KEY, _COLON, _AFTER_VALUE, _DOC_END = range(7)
# Strings: body, after a backslash, \uXXXX digits, after a high surrogate (expecting
# ``\`` of a low one), after that ``\`` (expecting ``u``), the low surrogate's digits.
_STRING, _ESCAPE, _UNICODE, _LOW_BACKSLASH, _LOW_U, _LOW_HEX = range(7, 13)
# Numbers: after ``-``, a leading ``0``, integer digits, after ``.``, fraction digits,
# after ``e``, after the exponent sign, exponent digits.
_MINUS, _ZERO, _INT, _DOT, _FRAC, _EXP, _EXP_SIGN, _EXP_DIGITS = range(13, 21)
_LITERAL = 21
_FAILED = 22

_STRING_STATES = frozenset({_STRING, _ESCAPE, _UNICODE, _LOW_BACKSLASH, _LOW_U, _LOW_HEX})
_NUMBER_END_OK = frozenset({_ZERO, _INT, _FRAC, _EXP_DIGITS})
_NUMBER_STATES = frozenset({_MINUS, _ZERO, _INT, _DOT, _FRAC, _EXP, _EXP_SIGN, _EXP_DIGITS})

_WS = " \t\n\r"
_HEX = "0123456789abcdefABCDEF"
_SIMPLE_ESCAPES = '"\\/bfnrt'
_DIGITS = "0123456789"

_WS_RUN = re.compile(r"[ \t\n\r]*")
_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_DIGIT_RUN = re.compile(r"[0-9]*")
_LITERALS = {"t": "true", "f": "false", "n": "null", "N": "NaN", "I": "Infinity"}


class JSONTokenizer:
    """Incremental, strict JSON tokenizer (sans-IO).

    ```pycon
    >>> t = JSONTokenizer()
    >>> [(e.type, e.pointer) for e in t.feed('{"a": [1, tr') + t.feed('ue]}') + t.close()]
    [('start_object', ''), ('key', '/a'), ('start_array', '/a'), ('number', '/a/0'), \
('literal', '/a/1'), ('end_array', '/a'), ('end_object', '')]
    ```

    After an error every later call raises the same :class:`JSONChunkError`.
    """

    __slots__ = (
        "_allow_nan",
        "_base",
        "_code",
        "_docs",
        "_error",
        "_hex",
        "_in_key",
        "_key_from",
        "_key_parts",
        "_line_start",
        "_lines",
        "_lit",
        "_lit_i",
        "_member",
        "_multiple",
        "_stack",
        "_start",
        "_state",
    )

    def __init__(self, *, allow_nan: bool = False, multiple: bool = True) -> None:
        self._allow_nan = allow_nan
        self._multiple = multiple
        self._state = _VALUE
        self._base = 0  # offset of the next fed character
        self._lines = 0  # line breaks fed so far
        self._line_start = 0  # offset where the current line starts
        # Open containers: [kind "{" or "[", start offset, path, next element index].
        self._stack: list[list[object]] = []
        self._docs = 0
        self._start = 0  # start offset of the token being read
        self._in_key = False
        self._key_parts: list[str] = []
        self._key_from = 0
        self._member: JSONPath | None = None  # path of the member whose value comes next
        self._hex = 0
        self._code = 0
        self._lit = ""
        self._lit_i = 0
        # The failure's reason, offset, line and column, raised afresh each time: the
        # error itself, kept, held its traceback's frames and so this tokenizer (a
        # reference cycle that kept a deep document's stack until the collector ran).
        self._error: tuple[str, int, int, int] | None = None

    # -- public -----------------------------------------------------------------

    @property
    def offset(self) -> int:
        """Characters consumed so far."""
        return self._base

    def progress(self) -> JSONProgress:
        """The open containers and string state, in O(depth), for partial views of a stream.

        ``pointer`` is the value being read (or expected next), else the innermost open
        container's.
        """
        state = self._state
        in_string = state in _STRING_STATES
        if (
            (in_string and not self._in_key)
            or state in _NUMBER_STATES
            or state
            in (
                _VALUE,
                _ARRAY_FIRST,
                _LITERAL,
            )
        ):
            path = self._value_path()
        else:
            path = self._container_path()
        return JSONProgress(
            "".join(str(entry[0]) for entry in self._stack),
            in_string,
            self._in_key and in_string,
            _pointer(path),
            self._base,
            self._docs,
        )

    def open_containers(self) -> list[tuple[str, int, JSONPath | None]]:
        """``(kind, start offset, path)`` of each open container, outermost first."""
        out: list[tuple[str, int, JSONPath | None]] = []
        for kind, start, path, _ in self._stack:
            assert isinstance(kind, str) and isinstance(start, int)
            assert path is None or isinstance(path, JSONPath)
            out.append((kind, start, path))
        return out

    def _container_path(self) -> JSONPath | None:
        if not self._stack:
            return None
        path = self._stack[-1][2]
        assert path is None or isinstance(path, JSONPath)
        return path

    def feed(self, data: str) -> list[JSONEvent]:
        """Consume ``data``; return the events completed by it."""
        if self._error is not None:
            raise JSONChunkError(*self._error)
        out: list[JSONEvent] = []
        try:
            self._run(data, out)
        except JSONChunkError as exc:
            self._error = (exc.reason, exc.offset, exc.line, exc.column)
            self._state = _FAILED
            raise
        if self._in_key and self._state in _STRING_STATES:
            self._key_parts.append(data[self._key_from :])
            self._key_from = 0
        nl = data.count("\n")
        if nl:
            self._lines += nl
            self._line_start = self._base + data.rfind("\n") + 1
        self._base += len(data)
        return out

    def close(self) -> list[JSONEvent]:
        """End of input: finish a trailing number, or raise if a value is incomplete."""
        if self._error is not None:
            raise JSONChunkError(*self._error)
        out: list[JSONEvent] = []
        state = self._state
        if state in _NUMBER_STATES:
            if state not in _NUMBER_END_OK:
                self._fail("incomplete number", "", self._base)
            self._emit_scalar(out, "number", self._base)
            state = self._state
        if state != _DOC_END:
            nothing = state == _VALUE and not self._stack and self._docs == 0
            what = "no JSON value" if nothing else "unexpected end of input"
            self._fail(what, "", self._base)
        return out

    # -- machinery ----------------------------------------------------------------

    def _fail(self, message: str, data: str, i: int) -> None:
        """Raise for the character at local index ``i`` of ``data`` (or offset ``i`` at close)."""
        if data:
            offset = self._base + i
            nl = data.count("\n", 0, i)
            line = self._lines + nl + 1
            line_start = self._base + data.rfind("\n", 0, i) + 1 if nl else self._line_start
        else:
            offset, line, line_start = i, self._lines + 1, self._line_start
        self._error = (message, offset, line, offset - line_start + 1)
        self._state = _FAILED
        raise JSONChunkError(*self._error)

    def _value_path(self) -> JSONPath | None:
        if not self._stack:
            return None
        top = self._stack[-1]
        if top[0] == "[":
            parent = top[2]
            assert parent is None or isinstance(parent, JSONPath)
            index = top[3]
            assert isinstance(index, int)
            return JSONPath(parent, index)
        return self._member

    def _emit_scalar(self, out: list[JSONEvent], kind: EventType, end: int) -> None:
        out.append(JSONEvent(kind, self._start, end, len(self._stack), self._docs, self._value_path()))
        self._after_value()

    def _after_value(self) -> None:
        if self._stack:
            self._state = _AFTER_VALUE
        else:
            self._state = _DOC_END
            self._docs += 1

    def _run(self, data: str, out: list[JSONEvent]) -> None:
        n = len(data)
        base = self._base
        i = 0
        while i < n:
            state = self._state
            c = data[i]
            if state == _STRING:
                j = _STRING_RUN.match(data, i).end()  # type: ignore[union-attr]
                if j == n:
                    return
                i = j
                c = data[i]
                if c == '"':
                    self._end_string(data, i, out)
                elif c == "\\":
                    self._state = _ESCAPE
                else:
                    self._fail(f"control character U+{ord(c):04X} in string", data, i)
                i += 1
                continue
            if state <= _DOC_END:
                if c in _WS or (c == "\ufeff" and base + i == 0):
                    i = _WS_RUN.match(data, i + 1).end()  # type: ignore[union-attr]
                    continue
                if state in (_VALUE, _DOC_END, _ARRAY_FIRST):
                    if state == _DOC_END and not self._multiple:
                        self._fail("trailing data after the JSON value", data, i)
                    if state == _ARRAY_FIRST and c == "]":
                        self._close(data, i, out)
                    else:
                        self._begin_value(data, i, c, out)
                elif state == _AFTER_VALUE:
                    if c == ",":
                        top = self._stack[-1]
                        if top[0] == "[":
                            index = top[3]
                            assert isinstance(index, int)
                            top[3] = index + 1
                            self._state = _VALUE
                        else:
                            self._state = _KEY
                    elif c in "]}":
                        self._close(data, i, out)
                    else:
                        self._fail(f"expected ',' or a closing bracket, found {c!r}", data, i)
                elif state in (_OBJECT_FIRST, _KEY):
                    if c == '"':
                        self._start = base + i
                        self._in_key = True
                        self._key_parts = []
                        self._key_from = i
                        self._state = _STRING
                    elif c == "}" and state == _OBJECT_FIRST:
                        self._close(data, i, out)
                    else:
                        self._fail(f"expected a key string, found {c!r}", data, i)
                else:  # _COLON
                    if c != ":":
                        self._fail(f"expected ':', found {c!r}", data, i)
                    self._state = _VALUE
                i += 1
                continue
            if state in _NUMBER_STATES:
                i = self._number(data, i, c, out)
                continue
            if state == _LITERAL:
                if c != self._lit[self._lit_i]:
                    self._fail(f"invalid literal, expected {self._lit!r}", data, i)
                self._lit_i += 1
                if self._lit_i == len(self._lit):
                    self._emit_scalar(out, "literal", base + i + 1)
                i += 1
                continue
            i = self._string_escape(data, i, c)

    def _string_escape(self, data: str, i: int, c: str) -> int:
        """States inside an escape sequence; returns the next index."""
        state = self._state
        if state == _ESCAPE:
            if c == "u":
                self._state, self._hex, self._code = _UNICODE, 0, 0
            elif c in _SIMPLE_ESCAPES:
                self._state = _STRING
            else:
                self._fail(f"invalid escape '\\{c}'", data, i)
            return i + 1
        if state in (_UNICODE, _LOW_HEX):
            if c not in _HEX:
                self._fail(f"invalid \\u escape digit {c!r}", data, i)
            self._code = self._code * 16 + int(c, 16)
            self._hex += 1
            if self._hex == 4:
                high = 0xD800 <= self._code <= 0xDBFF
                low = 0xDC00 <= self._code <= 0xDFFF
                if state == _LOW_HEX and low:
                    self._state = _STRING  # a complete surrogate pair
                else:
                    self._state = _LOW_BACKSLASH if high else _STRING
            return i + 1
        if state == _LOW_BACKSLASH:
            if c == "\\":
                self._state = _LOW_U
                return i + 1
            self._state = _STRING  # an unpaired high surrogate; read ``c`` as string text
            return i
        # _LOW_U
        if c == "u":
            self._state, self._hex, self._code = _LOW_HEX, 0, 0
        elif c in _SIMPLE_ESCAPES:
            self._state = _STRING
        else:
            self._fail(f"invalid escape '\\{c}'", data, i)
        return i + 1

    def _end_string(self, data: str, i: int, out: list[JSONEvent]) -> None:
        end = self._base + i + 1
        if not self._in_key:
            self._emit_scalar(out, "string", end)
            return
        raw = "".join(self._key_parts) + data[self._key_from : i + 1]
        self._in_key = False
        self._key_parts = []
        key = json.loads(raw) if "\\" in raw else raw[1:-1]
        top = self._stack[-1]
        parent = top[2]
        assert parent is None or isinstance(parent, JSONPath)
        self._member = JSONPath(parent, key)
        out.append(JSONEvent("key", self._start, end, len(self._stack), self._docs, self._member))
        self._state = _COLON

    def _begin_value(self, data: str, i: int, c: str, out: list[JSONEvent]) -> None:
        offset = self._base + i
        self._start = offset
        if c == '"':
            self._in_key = False
            self._state = _STRING
        elif c == "{" or c == "[":
            path = self._value_path()
            out.append(
                JSONEvent(
                    "start_object" if c == "{" else "start_array",
                    offset,
                    offset + 1,
                    len(self._stack),
                    self._docs,
                    path,
                )
            )
            self._stack.append([c, offset, path, 0])
            self._state = _OBJECT_FIRST if c == "{" else _ARRAY_FIRST
        elif c == "-":
            self._state = _MINUS
        elif c == "0":
            self._state = _ZERO
        elif c in _DIGITS:
            self._state = _INT
        elif c in _LITERALS and (c in "tfn" or self._allow_nan):
            self._lit, self._lit_i, self._state = _LITERALS[c], 1, _LITERAL
        else:
            self._fail(f"expected a JSON value, found {c!r}", data, i)

    def _close(self, data: str, i: int, out: list[JSONEvent]) -> None:
        c = data[i]
        kind, start, path, _ = self._stack.pop()
        if (c == "]") != (kind == "["):
            self._fail(f"{c!r} does not close {kind!r}", data, i)
        assert isinstance(start, int) and (path is None or isinstance(path, JSONPath))
        out.append(
            JSONEvent(
                "end_object" if c == "}" else "end_array",
                start,
                self._base + i + 1,
                len(self._stack),
                self._docs,
                path,
            )
        )
        if self._stack:
            # Restore the enclosing object's member path (its value just ended).
            top = self._stack[-1]
            if top[0] == "{":
                self._member = path
        self._after_value()

    def _number(self, data: str, i: int, c: str, out: list[JSONEvent]) -> int:
        state = self._state
        if c in _DIGITS:
            if state == _ZERO:
                self._fail("leading zero in number", data, i)
            if state == _MINUS:
                self._state = _ZERO if c == "0" else _INT
            elif state == _DOT:
                self._state = _FRAC
            elif state in (_EXP, _EXP_SIGN):
                self._state = _EXP_DIGITS
            if self._state == _ZERO:
                return i + 1
            return _DIGIT_RUN.match(data, i + 1).end()  # type: ignore[union-attr]
        if c == "." and state in (_ZERO, _INT):
            self._state = _DOT
            return i + 1
        if c in "eE" and state in (_ZERO, _INT, _FRAC):
            self._state = _EXP
            return i + 1
        if c in "+-" and state == _EXP:
            self._state = _EXP_SIGN
            return i + 1
        if c == "I" and state == _MINUS and self._allow_nan:
            self._lit, self._lit_i, self._state = "-Infinity", 2, _LITERAL
            return i + 1
        if state not in _NUMBER_END_OK:
            self._fail(f"invalid number, unexpected {c!r}", data, i)
        self._emit_scalar(out, "number", self._base + i)
        return i  # ``c`` is read again in the new state


# -- fast path for complete, validated texts ------------------------------------------

_SKIP_WS = re.compile(r"[ \t\n\r]*")
_STRING_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SCALAR_TOKEN = re.compile(
    r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null|NaN|-?Infinity"
)
# Everything up to the next bracket outside strings, then that bracket (group 1).
_TO_BRACKET = re.compile(r'[^"\[\]{}]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]{}]*)*([\[\]{}])', re.S)
_AFTER_CHILD = re.compile(r"[ \t\n\r]*(,[ \t\n\r]*)?")
_COLON_TOKEN = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")


class Child(NamedTuple):
    """One member or element of a container, as spans of the text.

    ``begin`` is the key's start for a member, else ``start``; ``key`` is the key's
    span (``key_start == key_end`` for an element); ``next`` is where the next child
    begins, or the closing bracket's offset for the last one. (A named tuple: one is
    made per child on the fast path, and they are cheaper than frozen dataclasses.)
    """

    begin: int
    key_start: int
    key_end: int
    start: int
    end: int
    next: int


# Closes are kept for containers fewer than this many levels below the one matched:
# deeper ones are cut by a scan that needs none (``_json._flat_cuts``).
_RECORD_DEPTH = 65


class Structure:
    """Spans of a validated JSON text, found on demand with compiled regexes."""

    __slots__ = ("_close", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._close: dict[int, int] = {}

    def close_of(self, start: int) -> int:
        """Offset of the bracket that closes the container opening at ``start``."""
        found = self._close.get(start)
        if found is not None:
            return found
        text = self.text
        close = self._close
        kernels = _accel.kernels
        if _accel.OFF and not _accel.on("json_close"):
            kernels = None  # type: ignore[assignment]
        if kernels is not None:
            # One scan in C to the closing bracket (the regex below takes a match and a
            # Python step per bracket, and records the closes inside as it goes; the
            # scan is cheaper than recording them).
            found = close[start] = kernels.json_close(*_accel.units(text), start)
            return found
        stack = [start]
        pos = start + 1
        match = _TO_BRACKET.match
        while stack:
            m = match(text, pos)
            if m is None:
                raise ValueError(f"unbalanced JSON container at offset {start}")
            b = m.start(1)
            if text[b] in "[{":
                stack.append(b)
            else:
                opened = stack.pop()
                if len(stack) < _RECORD_DEPTH:
                    close[opened] = b
            pos = b + 1
        return close[start]

    def value_end(self, start: int) -> int:
        c = self.text[start]
        if c == "{" or c == "[":
            return self.close_of(start) + 1
        m = (_STRING_TOKEN if c == '"' else _SCALAR_TOKEN).match(self.text, start)
        if m is None:
            raise ValueError(f"no JSON value at offset {start}")
        return m.end()

    def children(self, start: int, close: int | None = None) -> tuple[list[Child], int]:
        """The members or elements of the container at ``start``, and its closing offset
        (``close``: already known, not scanned for again)."""
        text = self.text
        if close is None:
            close = self.close_of(start)
        is_object = text[start] == "{"
        pos = _SKIP_WS.match(text, start + 1).end()  # type: ignore[union-attr]
        return self.children_at(pos, is_object, close, close - pos), close

    def children_at(self, pos: int, is_object: bool, close: int, limit: int) -> list[Child]:
        """Up to ``limit`` children of a container closing at ``close``, the first
        beginning at ``pos``."""
        kernels = _accel.kernels
        if _accel.OFF and not _accel.on("json_children"):
            kernels = None  # type: ignore[assignment]
        if kernels is None or pos >= close:
            out: list[Child] = []
            while pos < close and len(out) < limit:
                child = self._child_at(pos, is_object)
                out.append(child)
                pos = child.next
            return out
        # In C, a batch at a time: three regex matches and a Python step per child cost
        # about a fifth of chunking a JSON document.
        text = self.text
        spans = array("q")
        spans.frombytes(kernels.json_children(*_accel.units(text), pos, close, is_object, limit))
        it = iter(spans)
        return list(map(Child._make, zip(it, it, it, it, it, it)))

    def _child_at(self, pos: int, is_object: bool) -> Child:
        text = self.text
        begin = key_start = key_end = pos
        if is_object:
            key_end = _STRING_TOKEN.match(text, pos).end()  # type: ignore[union-attr]
            pos = _COLON_TOKEN.match(text, key_end).end()  # type: ignore[union-attr]
        end = self.value_end(pos)
        nxt = _AFTER_CHILD.match(text, end).end()  # type: ignore[union-attr]
        return Child(begin, key_start, key_end, pos, end, nxt)

    def children_from(self, start: int, begin: int, count: int) -> list[Child]:
        """``count`` children of the container opening at ``start``, the first of them
        beginning at ``begin`` (a run of its members)."""
        # (A run is never the open member of a container cut short: the bound is the text's end.)
        return self.children_at(begin, self.text[start] == "{", len(self.text), count)

    def open_child_at(self, pos: int, is_object: bool, stop: int, open_starts: Set[int]) -> Child:
        """The child at ``pos`` of a container still open at ``stop``: a complete one, or
        the open one (a container in ``open_starts``, spanning to ``stop``)."""
        text = self.text
        begin = key_start = key_end = pos
        if is_object:
            key_end = _STRING_TOKEN.match(text, pos).end()  # type: ignore[union-attr]
            pos = _COLON_TOKEN.match(text, key_end).end()  # type: ignore[union-attr]
        if pos in open_starts:
            return Child(begin, key_start, key_end, pos, stop, stop)
        end = self.value_end(pos)
        nxt = min(_AFTER_CHILD.match(text, end).end(), stop)  # type: ignore[union-attr]
        return Child(begin, key_start, key_end, pos, end, nxt)

    def documents(self, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
        """Top-level value spans in ``[start, end)`` (a leading BOM is whitespace)."""
        text = self.text
        stop = len(text) if end is None else end
        pos = start
        if pos == 0 and text.startswith("\ufeff"):
            pos = 1
        out: list[tuple[int, int]] = []
        while True:
            pos = _SKIP_WS.match(text, pos, stop).end()  # type: ignore[union-attr]
            if pos >= stop:
                return out
            value_end = self.value_end(pos)
            out.append((pos, value_end))
            pos = value_end


def decode_key(raw: str) -> str:
    """The text of a validated JSON string token."""
    if "\\" in raw:
        decoded: str = json.loads(raw)
        return decoded
    return raw[1:-1]


def scan_events(text: str) -> Iterator[JSONEvent]:
    """The tokenizer's events for a complete, valid text, from the regex fast path."""
    st = Structure(text)
    for doc, (start, end) in enumerate(st.documents()):
        c = text[start]
        if c not in "[{":
            yield JSONEvent(_scalar_type(text, start), start, end, 0, doc, None)
            continue
        yield JSONEvent("start_object" if c == "{" else "start_array", start, start + 1, 0, doc, None)
        # Stack of (container start, path, children, next child index).
        children, _ = st.children(start)
        stack: list[tuple[int, JSONPath | None, list[Child], list[int]]] = [(start, None, children, [0])]
        while stack:
            cstart, cpath, kids, idx = stack[-1]
            depth = len(stack)
            if idx[0] == len(kids):
                stack.pop()
                close = st.close_of(cstart)
                kind: EventType = "end_object" if text[cstart] == "{" else "end_array"
                yield JSONEvent(kind, cstart, close + 1, depth - 1, doc, cpath)
                continue
            k = kids[idx[0]]
            if k.key_end > k.key_start:
                path = JSONPath(cpath, decode_key(text[k.key_start : k.key_end]))
                yield JSONEvent("key", k.key_start, k.key_end, depth, doc, path)
            else:
                path = JSONPath(cpath, idx[0])
            idx[0] += 1
            c = text[k.start]
            if c in "[{":
                yield JSONEvent(
                    "start_object" if c == "{" else "start_array", k.start, k.start + 1, depth, doc, path
                )
                stack.append((k.start, path, st.children(k.start)[0], [0]))
            else:
                yield JSONEvent(_scalar_type(text, k.start), k.start, k.end, depth, doc, path)


def _scalar_type(text: str, start: int) -> EventType:
    c = text[start]
    if c == '"':
        return "string"
    if c in "tfnNI" or text.startswith("-I", start):
        return "literal"
    return "number"
