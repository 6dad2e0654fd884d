"""Where a cut is a pre-tokenizer piece boundary whatever surrounds it.

tiktoken splits text into pieces with a regex (no look-behind), then applies BPE
inside each piece. At a position that is a piece boundary in *any* context, token
counts on both sides add up exactly: ``count(a + b) == count(a) + count(b)``. The
engine uses this to size chunks from one encode of a range instead of encoding
every candidate again. The rules below are derived from the two patterns in
``sdk._tokens`` and checked by property tests; an unknown encoding has none, and
every count is then verified by encoding.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

__all__ = ["ADDITIVE", "next_additive", "prev_additive"]


def _hspace_run_ends_in_newline(text: str, p: int) -> bool:
    n = len(text)
    q = p
    while q < n and text[q].isspace() and text[q] not in "\r\n":
        q += 1
    return q < n and text[q] in "\r\n"


def _o200k(text: str, p: int) -> bool:
    a = text[p - 1]
    b = text[p]
    if a in "\r\n":
        # A line-break piece runs on over whitespace that leads to another line
        # break, and a punctuation piece (`` ?[^\s\p{L}\p{N}]+[\r\n/]*``) over "/".
        if b == "/" or b in "\r\n":
            return False
        return not b.isspace() or not _hspace_run_ends_in_newline(text, p)
    if a.isspace():
        return False
    if b.isspace():
        return b not in "\r\n"  # no piece runs from a non-space over horizontal space
    ca = unicodedata.category(a)[0]
    cb = unicodedata.category(b)[0]
    if ca == "L":
        # A letter is only ever taken by a letter piece, which runs on over letters
        # and marks, then an optional ASCII contraction. (A mark is no such anchor:
        # punctuation pieces take marks too, as in "-\u0301[".)
        return cb not in "LM" and b != "'"
    if ca == "N":
        return cb != "N"  # ``\p{N}{1,3}`` stops at a non-digit
    return False


def _cl100k(text: str, p: int) -> bool:
    a = text[p - 1]
    b = text[p]
    if a in "\r\n":
        if b in "\r\n":
            return False
        return not b.isspace() or not _hspace_run_ends_in_newline(text, p)
    if a.isspace():
        return False
    if b.isspace():
        return b not in "\r\n"
    ca = unicodedata.category(a)[0]
    cb = unicodedata.category(b)[0]
    if ca == "L":
        return cb != "L"  # ``\p{L}++`` has no contraction tail in cl100k
    if ca == "N":
        return cb != "N"
    return False


ADDITIVE: dict[str, Callable[[str, int], bool]] = {"o200k_base": _o200k, "cl100k_base": _cl100k}

# How far to look for an additive position next to a cut that is not one.
_REACH = 64


def next_additive(additive: Callable[[str, int], bool], text: str, p: int, limit: int) -> int | None:
    """The first additive position strictly between ``p`` and ``limit`` (near ``p``), or None."""
    for q in range(p + 1, min(limit, p + _REACH)):
        if additive(text, q):
            return q
    return None


def prev_additive(additive: Callable[[str, int], bool], text: str, p: int, limit: int) -> int | None:
    """The last additive position strictly between ``limit`` and ``p`` (near ``p``), or None."""
    for q in range(p - 1, max(limit, p - _REACH), -1):
        if additive(text, q):
            return q
    return None
