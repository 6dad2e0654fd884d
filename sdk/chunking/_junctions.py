"""Where a cut is a pre-tokenizer piece boundary whatever surrounds it.

tiktoken splits text into pieces with a regex (no look-behind), then applies BPE
inside each piece. At a position that is a piece boundary in *any* context, token
counts on both sides add up exactly: ``count(a + b) == count(a) + count(b)``. The
engine uses this to size chunks from one encode of a range instead of encoding
every candidate again.

"Any context" means any text before the position and any end after it: a range the
engine encodes may stop anywhere, and a pattern's ``$`` or ``(?!\\S)`` then sees the
end of that range, not of the document. Each rule below names the alternatives of
the pattern it rests on (the patterns are ``sdk.tokens.pattern(name)``). The rules
were derived for those exact pattern strings: an encoding whose pattern differs gets
no rule, and every count is then verified by encoding.

Characters are classed as the patterns class them, with the patterns' own syntax
(``\\s``, ``[\\r\\n]``, ``\\p{L}``, ``\\p{N}``, ``\\p{M}``) compiled by the ``regex`` module:
``\\s`` is Unicode White_Space, which leaves out U+001C-U+001F (``str.isspace()`` does
not). A character whose class may depend on the Unicode version of a table (unassigned
in Python's ``unicodedata``, or put in another general class there than in the
``regex`` module) is UNKNOWN, and no position next to it is additive.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable

import regex

from sdk.tokens import pattern

__all__ = [
    "ADDITIVE",
    "APOSTROPHE",
    "DIGIT",
    "LETTER",
    "MARK",
    "NEWLINE",
    "OTHER",
    "SLASH",
    "SPACE",
    "UNKNOWN",
    "char_class",
    "next_additive",
    "prev_additive",
]

# Character classes: each pattern treats all members of one class alike.
NEWLINE = 0  # [\r\n]
SPACE = 1  # \s without [\r\n]
LETTER = 2  # \p{L}
DIGIT = 3  # \p{N}
MARK = 4  # \p{M}: part of a letter piece in o200k, punctuation in cl100k
APOSTROPHE = 5  # ' : opens a contraction ('s, 're, ...)
SLASH = 6  # / : o200k's punctuation pieces run on over [\r\n/]
OTHER = 7  # the rest of [^\s\p{L}\p{N}]: punctuation, symbols, controls, format characters
UNKNOWN = 8  # the class may differ between Unicode versions

_SPACE = regex.compile(r"\s")
_NEWLINE = regex.compile(r"[\r\n]")
_BY_PROPERTY = (
    (regex.compile(r"\p{L}"), LETTER, "L"),
    (regex.compile(r"\p{N}"), DIGIT, "N"),
    (regex.compile(r"\p{M}"), MARK, "M"),
)


def _classify(ch: str) -> int:
    if _NEWLINE.match(ch):
        return NEWLINE
    if _SPACE.match(ch):
        return SPACE  # White_Space is a fixed list: no version skew
    if ch == "'":
        return APOSTROPHE
    if ch == "/":
        return SLASH
    category = unicodedata.category(ch)
    if category == "Cn":
        return UNKNOWN  # unassigned here, perhaps assigned in the encoder's tables
    for prop, cls, major in _BY_PROPERTY:
        if prop.match(ch):
            return cls if category[0] == major else UNKNOWN
    return UNKNOWN if category[0] in "LNM" else OTHER


class _Classes(dict[str, int]):
    """Character -> class, filled on first sight (a dict hit is the fast path)."""

    def __missing__(self, ch: str) -> int:
        cls = _classify(ch)
        self[ch] = cls
        return cls


_CLASS = _Classes()


def char_class(ch: str) -> int:
    """The junction class of one character."""
    return _CLASS[ch]


def _newline_ahead(text: str, p: int) -> bool:
    """Whether the whitespace run starting at ``p`` holds a line break."""
    classes = _CLASS
    n = len(text)
    window = text[p : p + 64]
    p += len(window) - len(window.lstrip(" \t"))  # spaces and tabs (SPACE) at once
    while p < n:
        cls = classes[text[p]]
        if cls == NEWLINE:
            return True
        if cls != SPACE:
            return False
        p += 1
    return False


def _o200k(text: str, p: int) -> bool:
    # Alternatives: (1) (2) [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
    # (or + and *) with an ASCII contraction; (3) \p{N}{1,3}; (4) ` ?[^\s\p{L}\p{N}]+[\r\n/]*`;
    # (5) \s*[\r\n]+; (6) \s+(?!\S); (7) \s+.
    a = _CLASS[text[p - 1]]
    b = _CLASS[text[p]]
    if a == UNKNOWN or b == UNKNOWN:
        return False
    if a == NEWLINE:
        # (4) runs on over line breaks and "/"; (5) from an earlier start runs to the
        # last line break of its whitespace run (a shorter range only moves that back).
        if b in (NEWLINE, SLASH):
            return False
        return b != SPACE or not _newline_ahead(text, p)
    if a == SPACE:
        return False  # (1) (2) (4) take one whitespace before what follows; (5)-(7) runs
    if b == SPACE:
        return True  # only (5)-(7) take horizontal whitespace, and they start on it
    if a == LETTER:
        # A letter is only in (1)/(2), which run on over letters and marks, then an
        # ASCII contraction.
        return b != LETTER and b != MARK and b != APOSTROPHE
    if a == DIGIT:
        return b != DIGIT  # (3) stops at a non-digit
    return False  # a mark or punctuation: (1) (2) or (4) may run on, over line breaks too


def _cl100k(text: str, p: int) -> bool:
    # Alternatives: (1) '(?i:[sdmt]|ll|ve|re); (2) [^\r\n\p{L}\p{N}]?+\p{L}++; (3) \p{N}{1,3}+;
    # (4) ` ?[^\s\p{L}\p{N}]++[\r\n]*+`; (5) \s++$; (6) \s*[\r\n]; (7) \s+(?!\S); (8) \s.
    a = _CLASS[text[p - 1]]
    b = _CLASS[text[p]]
    if a == UNKNOWN or b == UNKNOWN:
        return False
    if a == NEWLINE:
        # (4) and (6) run on over line breaks; (5) takes a whitespace run that reaches
        # the end of the range whole, and a range may end inside any run.
        return b != NEWLINE and b != SPACE
    if a == SPACE:
        return False
    if b == SPACE:
        return True
    if a == LETTER:
        return b != LETTER  # (2) is letters only; (1) starts at its own apostrophe
    if a == DIGIT:
        return b != DIGIT
    return False


# The exact patterns each rule set was derived for (sha256 of the pattern string).
_DERIVED_FOR: dict[str, tuple[str, Callable[[str, int], bool]]] = {
    "o200k_base": ("2d1b8dc11e89af71459b36004f698ab3693f59fd84f63e8ec2b49564ab857420", _o200k),
    "cl100k_base": ("f021c3d976978e62ee64cdad150cc3405c2e3d6e3b40407850bb9e8d9eb65899", _cl100k),
}

ADDITIVE: dict[str, Callable[[str, int], bool]] = {
    name: rule
    for name, (digest, rule) in _DERIVED_FOR.items()
    if hashlib.sha256(pattern(name).encode()).hexdigest() == digest
}

# How far to look for an additive position next to a cut that is not one.
_REACH = 64


# Every position either rule calls additive has whitespace after it, a line break or a
# digit before it, or a letter before it and no letter after it: a position inside a run
# of letters (CJK without punctuation) or of punctuation and symbols (brackets, flags,
# "!!!") never is. Only such positions are asked, found in C; asking at each position of
# such a run cost a Python call each.
_MAYBE = regex.compile(r"(?=\s)|(?<=[\r\n\p{N}])|(?<=\p{L})(?=\P{L})")


def next_additive(additive: Callable[[str, int], bool], text: str, p: int, limit: int) -> int | None:
    """The first additive position strictly between ``p`` and ``limit`` (near ``p``), or None."""
    end = min(limit, p + _REACH)
    if additive is _o200k or additive is _cl100k:
        search = _MAYBE.search
        q = p + 1
        while q < end:
            m = search(text, q, end)
            if m is None:
                return None
            q = m.start()
            if q >= end:
                return None
            if additive(text, q):
                return q
            q += 1
        return None
    for q in range(p + 1, end):
        if additive(text, q):
            return q
    return None


def prev_additive(additive: Callable[[str, int], bool], text: str, p: int, limit: int) -> int | None:
    """The last additive position strictly between ``limit`` and ``p`` (near ``p``), or None."""
    for q in range(p - 1, max(limit, p - _REACH), -1):
        if additive(text, q):
            return q
    return None
