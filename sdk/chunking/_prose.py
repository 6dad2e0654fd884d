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
import operator
from collections.abc import Callable, Sequence
from itertools import repeat

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


class _CharFlag(dict[str, bool]):
    """Character -> whether it is in ``chars`` or matches ``pattern``, memoized (a dict
    hit is far cheaper than a regex match, and ``map`` can look many up in C)."""

    def __init__(self, chars: frozenset[str], pattern: regex.Pattern[str]) -> None:
        super().__init__()
        self._chars = chars
        self._pattern = pattern

    def __missing__(self, ch: str) -> bool:
        flag = ch in self._chars or self._pattern.match(ch) is not None
        self[ch] = flag
        return flag


# A cut is refused when the character after it may not start a piece (kinsoku) or joins
# the grapheme before it, or when the character before it may not end a piece, is a
# zero-width joiner (it asks to join what follows: GB11 emoji sequences, Indic
# half-forms, whatever a property table says) or a prepended mark. Level patterns cut
# after whitespace or punctuation, so such a cut is inside a grapheme only in those cases.
_BAD_AFTER = _CharFlag(_NO_START, _JOINS_PREVIOUS)
_BAD_BEFORE = _CharFlag(_NO_END | {"\u200d"}, _PREPEND)
# The same without kinsoku: grapheme safety alone.
_JOINS_AFTER = _CharFlag(frozenset(), _JOINS_PREVIOUS)
_JOINS_BEFORE = _CharFlag(frozenset("\u200d"), _PREPEND)


def allowed_cut(text: str, p: int) -> bool:
    """Kinsoku and grapheme safety for a cut found by a level pattern."""
    return not (_BAD_AFTER[text[p]] or _BAD_BEFORE[text[p - 1]])


def _refused(text: str, cuts: list[int], after: _CharFlag, before: _CharFlag) -> list[bool]:
    get = text.__getitem__
    return list(
        map(
            operator.or_,
            map(after.__getitem__, map(get, cuts)),
            map(before.__getitem__, map(get, map(operator.sub, cuts, repeat(1)))),
        )
    )


def allowed_cuts(text: str, cuts: list[int]) -> list[int]:
    """The cuts that :func:`allowed_cut` allows, looked up in C (``map`` over memos)."""
    refused = _refused(text, cuts, _BAD_AFTER, _BAD_BEFORE)
    if True not in refused:
        return cuts
    return list(itertools.compress(cuts, map(operator.not_, refused)))


# Kinsoku glues graphemes into one indivisible unit; a run of such graphemes is bounded
# (as identifier runs are): past KINSOKU_RUN_MAX graphemes, a cut that only kinsoku
# refuses is taken, so a run of thousands of brackets or prolonged sound marks is cut
# rather than one oversize unit. A cut inside a grapheme is never taken.
KINSOKU_RUN_MAX = 32


def _bounded_grapheme_cuts(text: str, start: int, cuts: list[int]) -> list[int]:
    """Allowed grapheme cuts, with glued runs bounded by KINSOKU_RUN_MAX graphemes."""
    refused = _refused(text, cuts, _BAD_AFTER, _BAD_BEFORE)
    if True not in refused:
        return cuts
    if refused.count(True) < KINSOKU_RUN_MAX:
        return list(itertools.compress(cuts, map(operator.not_, refused)))
    unsafe = _refused(text, cuts, _JOINS_AFTER, _JOINS_BEFORE)
    out: list[int] = []
    run = 1  # graphemes since the last cut taken
    for p, no, bad in zip(cuts, refused, unsafe):
        if not no or (not bad and run >= KINSOKU_RUN_MAX):
            out.append(p)
            run = 1
        else:
            run += 1
    return out


def _ends(pattern: regex.Pattern[str]) -> Callable[[str, int, int], list[int]]:
    def find(text: str, start: int, end: int) -> list[int]:
        ends = list(map(_END, pattern.finditer(text, start, end)))
        if ends and ends[-1] >= end:
            ends.pop()
        return ends

    return find


def _cut_ends(pattern: regex.Pattern[str]) -> Callable[[str, int, int], list[int]]:
    """Like :func:`_ends`, for a pattern whose ``skip`` matches make no cut."""

    def find(text: str, start: int, end: int) -> list[int]:
        found = list(pattern.finditer(text, start, end))
        cuts = list(map(_LASTGROUP, found))
        if "skip" in cuts:
            ends = list(itertools.compress(map(_END, found), map(operator.not_, cuts)))
        else:
            ends = list(map(_END, found))
        if ends and ends[-1] >= end:
            ends.pop()
        return ends

    return find


def _starts(pattern: regex.Pattern[str]) -> Callable[[str, int, int], list[int]]:
    def find(text: str, start: int, end: int) -> list[int]:
        starts = list(map(_START, pattern.finditer(text, start, end)))
        if starts and starts[0] <= start:
            del starts[0]
        return starts

    return find


_START: Callable[[regex.Match[str]], int] = regex.Match.start  # map() calls them in C
_END: Callable[[regex.Match[str]], int] = regex.Match.end
_LASTGROUP = operator.attrgetter("lastgroup")


# The regex module's \X looks back over a whole run of regional indicators to pair them,
# so a long run of flags costs quadratic time. Such runs are paired here instead (pairs
# count from the start of the run, UAX #29 GB12/GB13; what joins the last one, GB9, stays
# with it), and \X runs only on the text between them.
_RI_RUN = regex.compile(
    r"\p{Grapheme_Cluster_Break=Prepend}*[\U0001F1E6-\U0001F1FF]{4,}"
    r"[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=ZWJ}\p{Grapheme_Cluster_Break=SpacingMark}]*"
)


def _cluster_starts(text: str, start: int, end: int, pattern: regex.Pattern[str] | None = None) -> list[int]:
    """Starts of ``pattern``'s matches in ``[start, end)`` (``pattern`` matches whole
    grapheme clusters; ``None``: the clusters themselves), with long runs of regional
    indicators paired directly."""
    out: list[int] = []
    pos = start
    find: Callable[[str, int, int, regex.Pattern[str] | None], list[int]]
    find = _grapheme_starts if pattern is None else _match_starts
    for run in _RI_RUN.finditer(text, start, end):
        out += find(text, pos, run.start(), pattern)
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
    out += find(text, pos, end, pattern)
    return out


# Every rule of UAX #29 that keeps two characters in one cluster (CR LF, Hangul jamo
# sequences, Extend/ZWJ/SpacingMark after anything, Prepend before anything, emoji ZWJ
# sequences, Indic conjuncts, regional indicator pairs, and the consonants the regex
# module treats as prepended) has one of these on a side of the position. Between two
# characters that are neither, a cluster always ends, so \X runs only on short windows
# around these (checked against \X for every code point in tests).
_JOINING = regex.compile(
    r"[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=ZWJ}"
    r"\p{Grapheme_Cluster_Break=SpacingMark}\p{Grapheme_Cluster_Break=Prepend}"
    r"\p{Grapheme_Cluster_Break=Regional_Indicator}\p{Grapheme_Cluster_Break=L}"
    r"\p{Grapheme_Cluster_Break=V}\p{Grapheme_Cluster_Break=T}\r"
    # Letters the regex module's \X joins to the consonant after them (as Prepend)
    r"\p{Indic_Syllabic_Category=Consonant_Prefixed}\p{Indic_Syllabic_Category=Consonant_With_Stacker}"
    r"\p{Indic_Syllabic_Category=Consonant_Preceding_Repha}]+"
)


def _grapheme_starts(text: str, pos: int, end: int, pattern: regex.Pattern[str] | None = None) -> list[int]:
    r"""Starts of the grapheme clusters in ``[pos, end)`` (``pos`` starts one): every
    position between two characters that join nothing, and \X's starts in windows
    (from the character before a run of joining characters to the one after it)."""
    out: list[int] = []
    done = pos  # clusters before it are found
    lo = hi = -1  # the window waiting to be run
    grapheme = _GRAPHEME  # looked up here: a test may wrap it
    for m in _JOINING.finditer(text, pos, end):
        a = max(m.start() - 1, pos)
        b = min(m.end() + 1, end)
        if a < hi:  # touches the waiting window: one window
            hi = b
            continue
        if hi >= 0:
            out += map(_START, grapheme.finditer(text, lo, hi))
            done = hi
        out += range(done, a)
        lo, hi = a, b
    if hi >= 0:
        out += map(_START, grapheme.finditer(text, lo, hi))
        done = hi
    out += range(done, end)
    return out


def _match_starts(text: str, pos: int, end: int, pattern: regex.Pattern[str] | None) -> list[int]:
    assert pattern is not None
    return list(map(_START, pattern.finditer(text, pos, end)))


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


class _ScriptClasses(dict[str, int]):
    """Character -> script class (0: joins its neighbours), memoized."""

    def __missing__(self, ch: str) -> int:
        cls = next((c for pattern, c in _SCRIPTS if pattern.match(ch)), 0)
        self[ch] = cls
        return cls


_SCRIPT_CLASS = _ScriptClasses()
_CLASSES = range(1, 6)
_WEAK_CHANGES = frozenset({(_HAN_KANA, _HIRAGANA)})
_STRONG_CHANGES = frozenset((a, b) for a in _CLASSES for b in _CLASSES if a != b) - _WEAK_CHANGES


def _script_class(ch: str) -> int:
    return _SCRIPT_CLASS[ch]


def _changes(text: str, graphemes: list[int], weak: bool) -> list[int]:
    # The class of a grapheme is that of its first character; classless ones (0) join
    # their neighbours, so a change is between consecutive graphemes that have a class.
    classes = list(map(_SCRIPT_CLASS.__getitem__, map(text.__getitem__, graphemes)))
    starts = list(itertools.compress(graphemes, classes))
    classes = list(itertools.compress(classes, classes))
    kinds = _WEAK_CHANGES if weak else _STRONG_CHANGES
    pairs = zip(classes, itertools.islice(classes, 1, None))
    return list(itertools.compress(itertools.islice(starts, 1, None), map(kinds.__contains__, pairs)))


def _script_changes(text: str, start: int, end: int, weak: bool) -> list[int]:
    """Cuts where the script changes inside an identifier run.

    Strong changes end a hiragana run (particles and okurigana close a Japanese
    phrase: 私は|ユーザー名を|入力) or cross Latin/CJK/Hangul; the weak ones start a
    hiragana run after kanji or katakana (入力|します), used only when nothing better is left.
    """
    return _changes(text, _cluster_starts(text, start, end), weak)


def _strong_script_changes(text: str, start: int, end: int) -> list[int]:
    return _script_changes(text, start, end, weak=False)


def _weak_script_changes(text: str, start: int, end: int) -> list[int]:
    return _script_changes(text, start, end, weak=True)


def _graphemes(text: str, start: int, end: int) -> list[int]:
    return [g for g in _cluster_starts(text, start, end) if g > start]


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


_SCRIPT_LEVEL = 6
_GRAPHEME_LEVEL = 8
assert [name for name, _ in LEVELS[_SCRIPT_LEVEL:]] == ["script", "weak script", "grapheme"]


def boundaries(text: str, start: int, end: int, level: int) -> tuple[int, list[int]]:
    """The first level at or below ``level`` with allowed cuts in ``(start, end)``.

    Returns ``(level_found, cuts)``; ``cuts`` is empty when none is left at any level.
    """
    graphemes: list[int] | None = None  # the three lowest levels share one pass
    for index in range(level, len(LEVELS)):
        if index < _SCRIPT_LEVEL:
            cuts = allowed_cuts(text, LEVELS[index][1](text, start, end))
        else:
            if graphemes is None:
                graphemes = _cluster_starts(text, start, end)
            if index < _GRAPHEME_LEVEL:
                cuts = allowed_cuts(text, _changes(text, graphemes, index > _SCRIPT_LEVEL))
            else:
                if graphemes and graphemes[0] <= start:
                    del graphemes[0]
                cuts = _bounded_grapheme_cuts(text, start, graphemes)
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

    def split_edges(self, text: str, section: Section) -> tuple[list[int], Section]:
        """The edges of the parts (``[start, *cuts, end]``, or ``[]`` when the section
        cannot be cut) and a section every part is like but for its span."""
        level = section.state if isinstance(section.state, int) else 0
        found, edges = boundaries(text, section.start, section.end, level)
        if not edges:
            return edges, section
        edges.insert(0, section.start)
        edges.append(section.end)
        return edges, section._replace(state=found + 1, sticky=False)

    def split(self, text: str, section: Section) -> Sequence[Section]:
        edges, t = self.split_edges(text, section)
        if not edges:
            return ()
        kind, language, path, partial, nxt = t.kind, t.language, t.path, t.partial, t.state
        return [Section(a, b, self, nxt, kind, language, path, partial) for a, b in itertools.pairwise(edges)]


PROSE = ProseSplitter()
