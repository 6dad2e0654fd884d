"""Prose rules: where a reader would cut Latin, CJK, Korean and everything else.

Levels, highest first: blank-line paragraphs, line breaks, sentence ends, clause marks,
words (cut before whitespace), identifier runs (UAX #31, so ``ユーザー名`` stays whole),
script changes (the weakest word break), extended grapheme clusters (UAX #29, via the
``regex`` module's ``\\X``). Nothing is ever cut inside a grapheme cluster.

Kinsoku (line-breaking rules for CJK) applies at every level: a piece never starts
with closing punctuation, the prolonged sound mark or a small kana, and never ends
with an opening bracket. Graphemes glued by kinsoku form one indivisible unit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import regex

from ._types import Section

__all__ = ["LEVELS", "PROSE", "ProseSplitter", "allowed_cut", "boundaries"]

# Closing punctuation, ASCII and CJK, that must not start a piece.
_CLOSERS = ")]}〕〉》」』】〙〗〟’”｠»›）］｝｣"
_NO_START = frozenset(
    _CLOSERS
    + "、。，．,.!?;:！？；：・‥…"
    + "ーｰ゠〜～"
    + "ゝゞヽヾ々〻"
    + "ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿｧｨｩｪｫｯｬｭｮ"
)
# Opening brackets and quotes that must not end a piece.
_NO_END = frozenset("([{〔〈《「『【〘〖〝‘“｟«‹（［｛｢")

_CLOSE_CLASS = regex.escape(_CLOSERS + "\"'")
_HSPACE = r"[^\S\r\n\u2028\u2029\u0085]"
# Characters that join the grapheme before them (GB9, GB9a).
_JOINS_PREVIOUS = regex.compile(
    r"[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=ZWJ}\p{Grapheme_Cluster_Break=SpacingMark}]"
)
_PREPEND = regex.compile(r"\p{Grapheme_Cluster_Break=Prepend}")

_PARAGRAPH = regex.compile(r"(?:\r\n|\r|\n)(?:" + _HSPACE + r"*(?:\r\n|\r|\n))+|\u2029+")
# A run of line breaks is one cut (blank lines inside it are not worth a cut).
_LINE = regex.compile(r"(?:\r\n|\r|\n|\u2028|\u0085)(?:" + _HSPACE + r"*(?:\r\n|\r|\n|\u2028|\u0085))*")
# Cuts fall *before* horizontal whitespace, which then leads the next piece, as it
# leads words in BPE vocabularies: counts on both sides of such a cut add up exactly.
# A run of terminals that is not followed by white space is taken whole, as a match that
# makes no cut (the ``skip`` group), and never given back (possessive): otherwise a long
# run of "!" or "," with no space after it is re-scanned from every position in it
# (quadratic time). The cuts are those of the plain patterns.
_SENTENCE = regex.compile(
    r"[。！？｡︒﹒﹗﹖．]++[" + _CLOSE_CLASS + r"]*+"
    r"|[\p{Sentence_Terminal}…]++[" + _CLOSE_CLASS + r"]*+(?=" + _HSPACE + r")"
    r"|(?P<skip>(?:(?![。！？｡︒﹒﹗﹖．])[\p{Sentence_Terminal}…])++)"
)
_CLAUSE = regex.compile(
    r"[、，；：﹐﹑､︐︑]++[" + _CLOSE_CLASS + r"]*+"
    r"|[,;:،؛]++[" + _CLOSE_CLASS + r"]*+(?=" + _HSPACE + r")"
    r"|(?P<skip>[,;:،؛]++)"
)
_WORD = regex.compile(_HSPACE + r"+")
# A run of graphemes that each start with an identifier character, or one other grapheme.
# The run is bounded: the regex module keeps state per repetition, and an unbounded run
# of millions of identifier characters (a hex dump, DNA, CJK without punctuation) raised
# MemoryError. A longer run is several pieces, cut at grapheme boundaries.
IDENT_RUN_MAX = 65536
_IDENT_OR_GRAPHEME = regex.compile(r"(?:(?=[\p{XID_Continue}])\X){1," + str(IDENT_RUN_MAX) + r"}|\X")
_GRAPHEME = regex.compile(r"\X")


def allowed_cut(text: str, p: int) -> bool:
    """Kinsoku and grapheme safety for a cut found by a level pattern."""
    before = text[p - 1]
    after = text[p]
    if after in _NO_START or before in _NO_END:
        return False
    if before == "\u200d":
        # Never cut right after a zero-width joiner: it asks to join what follows
        # (GB11 emoji sequences, Indic half-forms), whatever a property table says.
        return False
    # Level patterns cut after whitespace or punctuation; such a cut is inside a
    # grapheme only when the next character extends the previous grapheme or the
    # previous one is a prepended mark.
    joins = _JOINS_CACHE.get(after)
    if joins is None:
        joins = _JOINS_CACHE[after] = _JOINS_PREVIOUS.match(after) is not None
    prepend = _PREPEND_CACHE.get(before)
    if prepend is None:
        prepend = _PREPEND_CACHE[before] = _PREPEND.match(before) is not None
    return not (joins or prepend)


# Per-character property memo: a dict lookup is far cheaper than a regex match.
_JOINS_CACHE: dict[str, bool] = {}
_PREPEND_CACHE: dict[str, bool] = {}


def _ends(pattern: regex.Pattern[str]) -> Callable[[str, int, int], list[int]]:
    def find(text: str, start: int, end: int) -> list[int]:
        return [m.end() for m in pattern.finditer(text, start, end) if start < m.end() < end]

    return find


def _cut_ends(pattern: regex.Pattern[str]) -> Callable[[str, int, int], list[int]]:
    """Like :func:`_ends`, for a pattern whose ``skip`` matches make no cut."""

    def find(text: str, start: int, end: int) -> list[int]:
        return [
            m.end()
            for m in pattern.finditer(text, start, end)
            if m.group("skip") is None and start < m.end() < end
        ]

    return find


def _starts(pattern: regex.Pattern[str]) -> Callable[[str, int, int], list[int]]:
    def find(text: str, start: int, end: int) -> list[int]:
        return [m.start() for m in pattern.finditer(text, start, end) if m.start() > start]

    return find


# The regex module's \X looks back over a whole run of regional indicators to pair them,
# so a long run of flags costs quadratic time. Such runs are paired here instead (pairs
# count from the start of the run, UAX #29 GB12/GB13; what joins the last one, GB9, stays
# with it), and \X runs only on the text between them.
_RI_RUN = regex.compile(
    r"\p{Grapheme_Cluster_Break=Prepend}*[\U0001F1E6-\U0001F1FF]{4,}"
    r"[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=ZWJ}\p{Grapheme_Cluster_Break=SpacingMark}]*"
)


def _cluster_starts(text: str, start: int, end: int, pattern: regex.Pattern[str]) -> list[int]:
    """Starts of ``pattern``'s matches in ``[start, end)`` (``pattern`` matches whole
    grapheme clusters), with long runs of regional indicators paired directly."""
    out: list[int] = []
    pos = start
    for run in _RI_RUN.finditer(text, start, end):
        out += [m.start() for m in pattern.finditer(text, pos, run.start())]
        lo = run.start()
        first = lo
        while _PREPEND.match(text, first):  # Prepends join the first pair
            first += 1
        if first == lo and lo == start:
            # The run may have begun before ``start``: pairs count from its true start.
            back = lo
            while back > 0 and "\U0001f1e6" <= text[back - 1] <= "\U0001f1ff":
                back -= 1
            if (lo - back) % 2:
                first += 1  # ``start`` is the second half of a pair: no cut until after it
                lo = first
        ris = first
        while ris < run.end() and "\U0001f1e6" <= text[ris] <= "\U0001f1ff":
            ris += 1
        out.append(lo)
        out += range(first + 2, ris, 2)
        pos = run.end()
    out += [m.start() for m in pattern.finditer(text, pos, end)]
    return out


def _line_breaks(text: str, start: int, end: int) -> list[int]:
    return [m.end() for m in _LINE.finditer(text, start, end) if start < m.end() < end]


_HAN_KANA, _HIRAGANA = 1, 2
_SCRIPTS: tuple[tuple[regex.Pattern[str], int], ...] = (
    # The prolonged sound mark and iteration marks are Common script: they join
    # their neighbours (マネージャー, すごーい) rather than change the script.
    (regex.compile(r"[ー｀ｰ〜～々〻ゝゞヽヾ]"), 0),
    # Katakana and Han share a class: katakana+kanji compounds (ユーザー名) stay whole.
    (regex.compile(r"[\p{Script=Han}\p{Script=Katakana}]"), _HAN_KANA),
    (regex.compile(r"\p{Script=Hiragana}"), _HIRAGANA),
    (regex.compile(r"\p{Script=Hangul}"), 3),
    (regex.compile(r"[\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]"), 4),
    (regex.compile(r"[\p{L}\p{N}_]"), 5),
)
_SCRIPT_CACHE: dict[str, int] = {}


def _script_class(ch: str) -> int:
    cls = _SCRIPT_CACHE.get(ch)
    if cls is None:
        cls = next((c for pattern, c in _SCRIPTS if pattern.match(ch)), 0)  # 0: joins neighbours
        _SCRIPT_CACHE[ch] = cls
    return cls


def _script_changes(text: str, start: int, end: int, weak: bool) -> list[int]:
    """Cuts where the script changes inside an identifier run.

    Strong changes end a hiragana run (particles and okurigana close a Japanese
    phrase: 私は|ユーザー名を|入力) or cross Latin/CJK/Hangul; the weak ones start a
    hiragana run after kanji or katakana (入力|します), used only when nothing better is left.
    """
    out: list[int] = []
    prev = 0
    for g in _cluster_starts(text, start, end, _GRAPHEME):
        cls = _script_class(text[g])
        if cls and prev and cls != prev and g > start:
            is_weak = cls == _HIRAGANA and prev == _HAN_KANA
            if is_weak == weak:
                out.append(g)
        if cls:
            prev = cls
    return out


def _strong_script_changes(text: str, start: int, end: int) -> list[int]:
    return _script_changes(text, start, end, weak=False)


def _weak_script_changes(text: str, start: int, end: int) -> list[int]:
    return _script_changes(text, start, end, weak=True)


def _graphemes(text: str, start: int, end: int) -> list[int]:
    return [g for g in _cluster_starts(text, start, end, _GRAPHEME) if g > start]


def _identifiers(text: str, start: int, end: int) -> list[int]:
    """Starts of identifier runs and of the other graphemes (a flag is never part of
    an identifier run, so a run of flags is cut as graphemes)."""
    return [g for g in _cluster_starts(text, start, end, _IDENT_OR_GRAPHEME) if g > start]


# Highest level first. Each finder returns candidate cuts strictly inside (start, end).
LEVELS: tuple[tuple[str, Callable[[str, int, int], list[int]]], ...] = (
    ("paragraph", _ends(_PARAGRAPH)),
    ("line", _line_breaks),
    ("sentence", _cut_ends(_SENTENCE)),
    ("clause", _cut_ends(_CLAUSE)),
    ("word", _starts(_WORD)),
    ("identifier", _identifiers),
    ("script", _strong_script_changes),
    ("weak script", _weak_script_changes),
    ("grapheme", _graphemes),
)


def boundaries(text: str, start: int, end: int, level: int) -> tuple[int, list[int]]:
    """The first level at or below ``level`` with allowed cuts in ``(start, end)``.

    Returns ``(level_found, cuts)``; ``cuts`` is empty when none is left at any level.
    """
    for index in range(level, len(LEVELS)):
        cuts = [p for p in LEVELS[index][1](text, start, end) if allowed_cut(text, p)]
        if cuts:
            return index, cuts
    return len(LEVELS), []


class ProseSplitter:
    """Splitter for plain text; ``Section.state`` is the next level to try."""

    __slots__ = ("kind", "language")

    def __init__(self, kind: str = "text", language: str | None = None) -> None:
        self.kind = kind
        self.language = language

    def root(self, text: str, start: int = 0, end: int | None = None, path: str | None = None) -> Section:
        return Section(start, len(text) if end is None else end, self, 0, self.kind, self.language, path)

    def split(self, text: str, section: Section) -> Sequence[Section]:
        level = section.state if isinstance(section.state, int) else 0
        found, cuts = boundaries(text, section.start, section.end, level)
        if not cuts:
            return ()
        edges = [section.start, *cuts, section.end]
        nxt = found + 1
        kind, language, path, partial = section.kind, section.language, section.path, section.partial
        return [Section(a, b, self, nxt, kind, language, path, partial) for a, b in itertools.pairwise(edges)]


PROSE = ProseSplitter()
