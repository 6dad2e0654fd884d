"""Incremental scan of a JSON text that is still arriving (tool inputs).

Each delta is scanned once, so the work over a whole tool input is O(n); the scan keeps
only a small state: the stack of open brackets, whether we are in a string (and in an
escape), and the last *safe cut*, a prefix that becomes valid JSON once the open
brackets are closed. :func:`partial_value` turns that into a best-effort view of the
input so far; the exact input is parsed once, when the block stops.

The bracket stack is persistent (a linked list of :class:`_Open` frames): a push or a
pop is O(1) and every earlier state keeps its own stack, so the work per delta does not
grow with the nesting depth. The closing brackets are only spelled out when a view asks
for them. They are never needed for the safe cut alone: every bracket moves the safe
cut, so the stack at the safe cut is always the present stack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from ._fast import fast_new

__all__ = ["JSONPrefix", "partial_value"]

# Brackets deeper than this are counted, not stacked: orjson parses no deeper (a view of
# such a text can never be made), and a server sending megabytes of ``[`` must not make
# the scan hold an object per bracket.
MAX_DEPTH = 1024

_OUTSIDE = re.compile(r'[{}\[\],:"]')
_INSIDE = re.compile(r'["\\]')
_OPENER = str.maketrans("}]", "{[")


class _Open:
    """One open bracket on a persistent stack; ``below`` is the rest of the stack."""

    __slots__ = ("below", "closer", "depth")

    closer: str
    below: _Open | None
    depth: int

    def __init__(self, closer: str, below: _Open | None) -> None:
        self.closer = closer
        self.below = below
        self.depth = 1 if below is None else below.depth + 1

    def closers(self) -> str:
        """The text that closes this bracket and every one below it.

        Built when a view asks (O(depth), like the view itself) and not kept: a cached
        string per frame would hold O(depth²) characters when every delta asks for one.
        """
        parts: list[str] = []
        node: _Open | None = self
        while node is not None:
            parts.append(node.closer)
            node = node.below
        return "".join(parts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Open):
            return NotImplemented
        a: _Open | None = self
        b: _Open | None = other
        if self.depth != other.depth:
            return False
        while a is not b:
            if a is None or b is None or a.closer != b.closer:
                return False
            a, b = a.below, b.below
        return True

    def __hash__(self) -> int:
        return hash(self.closers())

    def __repr__(self) -> str:
        return f"_Open({self.closers()[::-1].translate(_OPENER)!r})"


@dataclass(frozen=True, slots=True)
class JSONPrefix:
    """Scan state after ``length`` characters; ``advance`` returns the next state."""

    length: int = 0
    top: _Open | None = None  # the innermost open bracket
    expect_key: bool = False
    in_string: bool = False
    string_is_key: bool = False
    escape_at: int = -1  # offset of an unfinished escape's backslash
    escape_left: int = 0  # characters the unfinished escape still needs
    safe: int = 0
    deep: int = 0  # brackets open past MAX_DEPTH (counted only; no view while any is)

    @property
    def stack(self) -> str:
        """The open brackets, outermost first (O(depth): for views, not for the scan)."""
        return self.safe_closers[::-1].translate(_OPENER)

    @property
    def safe_closers(self) -> str:
        """What closes the open brackets, innermost first (the stack at the safe cut is
        the present one: every bracket moves the safe cut)."""
        return "" if self.top is None else self.top.closers()

    def advance(self, delta: str) -> JSONPrefix:
        base = self.length
        n = len(delta)
        top = self.top
        expect_key = self.expect_key
        in_string = self.in_string
        is_key = self.string_is_key
        escape_at = self.escape_at
        escape_left = self.escape_left
        safe = self.safe
        deep = self.deep
        pos = 0
        if escape_left:
            if escape_left == -1:  # a backslash ended the last delta: is it \u?
                if n == 0:
                    return self
                escape_left = 5 if delta[0] == "u" else 1
            take = min(escape_left, n)
            pos = take
            escape_left -= take
            if not escape_left:
                escape_at = -1
        while pos < n:
            if in_string:
                m = _INSIDE.search(delta, pos)
                if m is None:
                    break
                p = m.start()
                if delta[p] == "\\":
                    if p + 1 >= n:
                        escape_at, escape_left = base + p, -1
                        pos = n
                        break
                    need = 6 if delta[p + 1] == "u" else 2
                    if p + need > n:
                        escape_at, escape_left = base + p, p + need - n
                        pos = n
                        break
                    pos = p + need
                    continue
                in_string = False
                pos = p + 1
                if is_key:
                    is_key = False
                else:
                    safe = base + pos
                continue
            m = _OUTSIDE.search(delta, pos)
            if m is None:
                break
            p = m.start()
            c = delta[p]
            pos = p + 1
            if c == '"':
                in_string = True
                is_key = expect_key
            elif c == "{" or c == "[":
                if deep or (top is not None and top.depth >= MAX_DEPTH):
                    deep += 1
                else:
                    top = _Open("}" if c == "{" else "]", top)
                expect_key = c == "{"
                safe = base + pos
            elif c == "}" or c == "]":
                if deep:
                    deep -= 1
                elif top is not None:
                    top = top.below
                expect_key = False
                safe = base + pos
            elif c == ",":
                safe = base + p
                expect_key = top is not None and top.closer == "}"
            else:  # ":"
                expect_key = False
        return _prefix(base + n, top, expect_key, in_string, is_key, escape_at, escape_left, safe, deep)


_prefix = fast_new(JSONPrefix)


def partial_value(text: str, prefix: JSONPrefix) -> Any:
    """Best-effort value of an unfinished JSON text (``None`` when nothing is usable yet).

    An open string value is cut (before any unfinished escape) and closed, open brackets
    are closed; a half-written key, number or literal is left out until it completes.
    """
    if prefix.deep:
        return None  # nested deeper than any view parses
    if prefix.top is None and not prefix.in_string:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    candidates: list[str] = []
    if prefix.in_string and not prefix.string_is_key:
        cut = prefix.escape_at if prefix.escape_at >= 0 else len(text)
        candidates.append(text[:cut] + '"' + prefix.safe_closers)
    if prefix.safe:
        candidates.append(text[: prefix.safe] + prefix.safe_closers)
    for candidate in candidates:
        try:
            return orjson.loads(candidate)
        except orjson.JSONDecodeError:
            continue
    return None
