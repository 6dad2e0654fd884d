"""Incremental scan of a JSON text that is still arriving (tool inputs).

Each delta is scanned once, so the work over a whole tool input is O(n); the scan keeps
only a small state: the stack of open brackets, whether we are in a string (and in an
escape), and the last *safe cut*, a prefix that becomes valid JSON once the open
brackets are closed. :func:`partial_value` turns that into a best-effort view of the
input so far; the exact input is parsed once, when the block stops.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from ._fast import fast_new

__all__ = ["JSONPrefix", "partial_value"]

_OUTSIDE = re.compile(r'[{}\[\],:"]')
_INSIDE = re.compile(r'["\\]')
_CLOSE = {"{": "}", "[": "]"}


def _closers(stack: str) -> str:
    return "".join(_CLOSE[c] for c in reversed(stack))


@dataclass(frozen=True, slots=True)
class JSONPrefix:
    """Scan state after ``length`` characters; ``advance`` returns the next state."""

    length: int = 0
    stack: str = ""
    expect_key: bool = False
    in_string: bool = False
    string_is_key: bool = False
    escape_at: int = -1  # offset of an unfinished escape's backslash
    escape_left: int = 0  # characters the unfinished escape still needs
    safe: int = 0
    safe_closers: str = ""

    def advance(self, delta: str) -> JSONPrefix:
        base = self.length
        n = len(delta)
        stack = self.stack
        expect_key = self.expect_key
        in_string = self.in_string
        is_key = self.string_is_key
        escape_at = self.escape_at
        escape_left = self.escape_left
        safe = self.safe
        safe_closers = self.safe_closers
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
                    safe, safe_closers = base + pos, _closers(stack)
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
                stack += c
                expect_key = c == "{"
                safe, safe_closers = base + pos, _closers(stack)
            elif c == "}" or c == "]":
                stack = stack[:-1]
                expect_key = False
                safe, safe_closers = base + pos, _closers(stack)
            elif c == ",":
                safe, safe_closers = base + p, _closers(stack)
                expect_key = stack[-1:] == "{"
            else:  # ":"
                expect_key = False
        return _prefix(
            base + n, stack, expect_key, in_string, is_key, escape_at, escape_left, safe, safe_closers
        )


_prefix = fast_new(JSONPrefix)


def partial_value(text: str, prefix: JSONPrefix) -> Any:
    """Best-effort value of an unfinished JSON text (``None`` when nothing is usable yet).

    An open string value is cut (before any unfinished escape) and closed, open brackets
    are closed; a half-written key, number or literal is left out until it completes.
    """
    if not prefix.stack and not prefix.in_string:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    candidates: list[str] = []
    if prefix.in_string and not prefix.string_is_key:
        cut = prefix.escape_at if prefix.escape_at >= 0 else len(text)
        candidates.append(text[:cut] + '"' + _closers(prefix.stack))
    if prefix.safe:
        candidates.append(text[: prefix.safe] + prefix.safe_closers)
    for candidate in candidates:
        try:
            return orjson.loads(candidate)
        except orjson.JSONDecodeError:
            continue
    return None
