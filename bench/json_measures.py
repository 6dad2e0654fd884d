"""Where a splitter cut a JSON document: measures for the chunking benchmark.

Every function takes the source text and the *boundaries* of a split (code-point
offsets where one chunk ends and the next begins) and counts cuts that land inside
a unit a reader would want whole. The spans come from ``sdk``'s JSON tokenizer
(regex fast path), so the text must be valid JSON or JSON Lines.

    >>> text = '{"a": "one two", "b": {"c": 1}}'
    >>> cuts_inside_strings(text, [10]), cuts_inside_small_objects(text, [25], 64)
    (1, 1)

Splitters that do not return slices of the input (LangChain's RecursiveJsonSplitter
re-serializes) cannot be placed on the text: ``boundaries_from_pieces`` returns None
for them, and their output is better judged with ``pieces_are_valid_json``.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence

from sdk import count_tokens
from sdk.chunking._jsontok import scan_events

__all__ = [
    "boundaries_from_pieces",
    "cuts_inside_escapes",
    "cuts_inside_scalars",
    "cuts_inside_small_objects",
    "cuts_inside_strings",
    "pieces_are_valid_json",
]


def _inside(cuts: Sequence[int], start: int, end: int) -> int:
    """How many sorted ``cuts`` lie strictly between ``start`` and ``end``."""
    return max(0, bisect_left(cuts, end) - bisect_right(cuts, start))


def cuts_inside_strings(text: str, boundaries: Iterable[int]) -> int:
    """Cuts strictly inside a string or key token (quotes included in the span)."""
    cuts = sorted(boundaries)
    return sum(_inside(cuts, e.start, e.end) for e in scan_events(text) if e.type in ("string", "key"))


def cuts_inside_scalars(text: str, boundaries: Iterable[int]) -> int:
    """Cuts strictly inside a number or a literal (``true``, ``false``, ``null``)."""
    cuts = sorted(boundaries)
    return sum(_inside(cuts, e.start, e.end) for e in scan_events(text) if e.type in ("number", "literal"))


def cuts_inside_escapes(text: str, boundaries: Iterable[int]) -> int:
    """Cuts inside an escape sequence (``\\n``, ``\\"``, ``\\uXXXX``, a surrogate pair)."""
    import re

    escape = re.compile(
        r"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|.)", re.S
    )
    cuts = sorted(boundaries)
    total = 0
    for e in scan_events(text):
        if e.type in ("string", "key"):
            for m in escape.finditer(text, e.start + 1, e.end - 1):
                total += _inside(cuts, m.start(), m.end())
    return total


def cuts_inside_small_objects(
    text: str, boundaries: Iterable[int], max_tokens: int, encoding: str = "o200k_base"
) -> int:
    """Cuts strictly inside an object or array whose own text fits ``max_tokens``.

    Each such cut is counted once, for the innermost small container holding it.
    """
    cuts = sorted(boundaries)
    counted: set[int] = set()
    for e in scan_events(text):  # end events come innermost first
        if e.type not in ("end_object", "end_array") or not _inside(cuts, e.start, e.end):
            continue
        if count_tokens(text[e.start : e.end], encoding) > max_tokens:
            continue
        counted.update(cuts[bisect_right(cuts, e.start) : bisect_left(cuts, e.end)])
    return len(counted)


def boundaries_from_pieces(text: str, pieces: Sequence[str]) -> list[int] | None:
    """Place the pieces of a splitter on ``text`` in order (whitespace between them may
    have been dropped); the end of each piece but the last is a boundary. None when a
    piece is not a slice of the text."""
    out: list[int] = []
    pos = 0
    for piece in pieces:
        stripped = piece.strip()
        if not stripped:
            continue
        at = text.find(stripped, pos)
        if at < 0 or text[pos:at].strip():
            return None
        pos = at + len(stripped)
        out.append(pos)
    return out[:-1]


def pieces_are_valid_json(pieces: Iterable[str]) -> tuple[int, int]:
    """(valid, total): how many pieces parse as JSON on their own."""
    valid = total = 0
    for piece in pieces:
        total += 1
        try:
            json.loads(piece)
        except ValueError:
            continue
        valid += 1
    return valid, total
