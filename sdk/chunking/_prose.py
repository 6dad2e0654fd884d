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
import threading
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice, repeat

import regex

from . import _accel
from ._junctions import char_class
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

_CLOSE_CHARS = _CLOSERS + "\"'"  # closers and the quotes that end a sentence or clause
_CLOSE_CLASS = regex.escape(_CLOSE_CHARS)
# Terminals that end a CJK sentence without space after them; clause marks, CJK and other.
_CJK_STOPS = "。！？｡︒﹒﹗﹖．"
_CJK_COMMAS = "、，；：﹐﹑､︐︑"
_COMMAS = ",;:،؛"
_HSPACE = r"[^\S\r\n\u2028\u2029\u0085]"
# Characters that join the grapheme before them (GB9, GB9a).
_JOINS_PREVIOUS = regex.compile(
    r"[\p{Grapheme_Cluster_Break=Extend}\p{Grapheme_Cluster_Break=ZWJ}\p{Grapheme_Cluster_Break=SpacingMark}]"
)
_PREPEND = regex.compile(r"\p{Grapheme_Cluster_Break=Prepend}")

# (A CR LF is one line break: atomic, so that backtracking cannot split one in two and
# call a single Windows line break a paragraph.)
_PARAGRAPH = regex.compile(r"(?>\r\n|\r|\n)(?:" + _HSPACE + r"*(?>\r\n|\r|\n))+|\u2029+")
# A run of line breaks is one cut (blank lines inside it are not worth a cut).
_LINE = regex.compile(r"(?:\r\n|\r|\n|\u2028|\u0085)(?:" + _HSPACE + r"*(?:\r\n|\r|\n|\u2028|\u0085))*")
# Cuts fall *before* horizontal whitespace, which then leads the next piece, as it
# leads words in BPE vocabularies: counts on both sides of such a cut add up exactly.
# A run of terminals that is not followed by white space is taken whole, as a match that
# makes no cut (the ``skip`` group), and never given back (possessive): otherwise a long
# run of "!" or "," with no space after it is re-scanned from every position in it
# (quadratic time). The cuts are those of the plain patterns. The skip run is one class
# (a set difference, VERSION1's syntax), not a look-ahead per character nor a group of
# alternatives: the regex module kept 128 bytes of state per repetition of either (so
# "!…" repeated, or "!" repeated on the interpreted path, grew by that much a character).
# Every match starts with a terminal (the CJK ones are terminals too): the look-ahead
# in front lets the other positions fail on one property test instead of two, which
# halves the time of a scan.
_SENTENCE = regex.compile(
    r"(?=[\p{Sentence_Terminal}…])(?:"
    r"[" + _CJK_STOPS + r"]++[" + _CLOSE_CLASS + r"]*+"
    r"|[\p{Sentence_Terminal}…]++[" + _CLOSE_CLASS + r"]*+(?=" + _HSPACE + r")"
    r"|(?P<skip>[[\p{Sentence_Terminal}…]--[" + _CJK_STOPS + r"]]++))",
    regex.VERSION1,  # for the set difference: one class, so no state per repetition
)
_CLAUSE = regex.compile(
    r"[" + _CJK_COMMAS + r"]++[" + _CLOSE_CLASS + r"]*+"
    r"|[" + _COMMAS + r"]++[" + _CLOSE_CLASS + r"]*+(?=" + _HSPACE + r")"
    r"|(?P<skip>[" + _COMMAS + r"]++)"
)
_WORD = regex.compile(_HSPACE + r"+")
# A run of graphemes that each start with an identifier character, or one other grapheme.
# The run is bounded: the regex module keeps state per repetition, and an unbounded run
# of millions of identifier characters (a hex dump, DNA, CJK without punctuation) raised
# MemoryError. A longer run is several pieces, cut at grapheme boundaries.
IDENT_RUN_MAX = 65536
_IDENT_OR_GRAPHEME = regex.compile(r"(?:(?=[\p{XID_Continue}])\X){1," + str(IDENT_RUN_MAX) + r"}|\X")
# The same where every character is a cluster of its own (no character of ``_JOINING``):
# character classes only, three times as fast as stepping by \X.
_IDENT_OR_CHAR = regex.compile(r"[\p{XID_Continue}]{1," + str(IDENT_RUN_MAX) + r"}|[^\p{XID_Continue}]")
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
# The same without kinsoku: grapheme safety alone. A cluster that ends with a zero-width
# joiner ends there all the same (``a\u200d`` then ``b``; \X keeps the joiner's emoji
# and Indic sequences whole): a cut after it is refused like kinsoku's, so a run of such
# clusters is bounded too (``"a\u200d" * 10_000`` was one chunk of 20,000 tokens).
_JOINS_AFTER = _CharFlag(frozenset(), _JOINS_PREVIOUS)
_JOINS_BEFORE = _CharFlag(frozenset(), _PREPEND)


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

# Candidate cuts are found and filtered a batch at a time, so that only a bounded number
# of them exist as Python ints at once: a list holds 36 bytes an int, and a section with
# no cut above the grapheme level has a candidate at every character ("see" + "!" * N
# took 128 bytes per input byte, most of them candidates that kinsoku then refused).
_BATCH = 1 << 14


def _batches(found: Iterable[int]) -> Iterator[list[int]]:
    it = iter(found)
    while batch := list(islice(it, _BATCH)):
        yield batch


def _inside(batch: list[int], start: int, end: int) -> list[int]:
    """The candidates of a sorted ``batch`` strictly inside ``(start, end)``."""
    if batch and (batch[0] <= start or batch[-1] >= end):
        return batch[bisect_right(batch, start) : bisect_left(batch, end)]
    return batch


def _bounded_batch(text: str, cuts: list[int], run: int, out: list[int]) -> int:
    """Append to ``out`` the allowed grapheme cuts of ``cuts`` (the next batch of a
    section's grapheme starts), glued runs bounded by KINSOKU_RUN_MAX graphemes; ``run``
    is the number of graphemes since the last cut taken. Returns it after the batch."""
    refused = _refused(text, cuts, _BAD_AFTER, _BAD_BEFORE)
    if True not in refused:
        out += cuts
        return 1 if cuts else run
    n_refused = refused.count(True)
    if run + n_refused <= KINSOKU_RUN_MAX:  # no glued run reaches the bound
        out += itertools.compress(cuts, map(operator.not_, refused))
        if False in refused:
            return 1 + refused[::-1].index(False)
        return run + n_refused
    unsafe = _refused(text, cuts, _JOINS_AFTER, _JOINS_BEFORE)
    for p, no, bad in zip(cuts, refused, unsafe):
        if not no or (not bad and run >= KINSOKU_RUN_MAX):
            out.append(p)
            run = 1
        else:
            run += 1
    return run


# Each level's finder yields batches of sorted candidate cuts; the first batch may hold
# candidates at or before ``start`` and the last one at or after ``end`` (dropped by
# ``_inside``).
_Batches = Callable[[str, int, int], Iterator[list[int]]]


def _ends(pattern: regex.Pattern[str]) -> _Batches:
    def find(text: str, start: int, end: int) -> Iterator[list[int]]:
        return _batches(map(_END, pattern.finditer(text, start, end)))

    return find


def _cut_ends(pattern: regex.Pattern[str]) -> _Batches:
    """Like :func:`_ends`, for a pattern whose ``skip`` matches make no cut."""

    def find(text: str, start: int, end: int) -> Iterator[list[int]]:
        matches = pattern.finditer(text, start, end)
        while found := list(islice(matches, _BATCH)):
            cuts = list(map(_LASTGROUP, found))
            if "skip" in cuts:
                yield list(itertools.compress(map(_END, found), map(operator.not_, cuts)))
            else:
                yield list(map(_END, found))

    return find


def _starts(pattern: regex.Pattern[str]) -> _Batches:
    def find(text: str, start: int, end: int) -> Iterator[list[int]]:
        return _batches(map(_START, pattern.finditer(text, start, end)))

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
    return list(_iter_cluster_starts(text, start, end, pattern))


def _iter_cluster_starts(
    text: str, start: int, end: int, pattern: regex.Pattern[str] | None = None
) -> Iterator[int]:
    """:func:`_cluster_starts`, lazily: a chain of ranges and ``map`` objects, each run in C."""
    return itertools.chain.from_iterable(_cluster_pieces(text, start, end, pattern))


def _cluster_pieces(
    text: str, start: int, end: int, pattern: regex.Pattern[str] | None
) -> Iterator[Iterable[int]]:
    pos = start
    find: Callable[[str, int, int, regex.Pattern[str] | None], Iterator[Iterable[int]]]
    find = _grapheme_pieces if pattern is None else _match_pieces
    for run in _RI_RUN.finditer(text, start, end):
        yield from find(text, pos, run.start(), pattern)
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
        yield (lo,)
        yield range(first + 2, ris, 2)
        pos = run.end()
    yield from find(text, pos, end, pattern)


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


# Whether a character is one of ``_JOINING``'s, memoized.
_JOINS = _CharFlag(frozenset(), _JOINING)
_PLAIN_STEP = 1 << 16


def _plain(text: str, start: int, end: int) -> bool:
    """Whether no character of ``text[start:end]`` is one of ``_JOINING``'s, so that each
    is a grapheme cluster of its own. Each distinct character is looked up once (a set
    of a slice is built in C, a slice at a time, where ``_JOINING.search`` would test
    every character against a dozen property tables)."""
    get = _JOINS.__getitem__
    return not any(
        any(map(get, set(text[i : min(i + _PLAIN_STEP, end)]))) for i in range(start, end, _PLAIN_STEP)
    )


def _grapheme_pieces(
    text: str, pos: int, end: int, pattern: regex.Pattern[str] | None = None
) -> Iterator[Iterable[int]]:
    r"""Starts of the grapheme clusters in ``[pos, end)`` (``pos`` starts one), as
    ranges and maps: every position between two characters that join nothing, and
    \X's starts in windows (from the character before a run of joining characters to
    the one after it)."""
    if _plain(text, pos, end):
        yield range(pos, end)
        return
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
            yield map(_START, grapheme.finditer(text, lo, hi))
            done = hi
        yield range(done, a)
        lo, hi = a, b
    if hi >= 0:
        yield map(_START, grapheme.finditer(text, lo, hi))
        done = hi
    yield range(done, end)


def _grapheme_starts(text: str, pos: int, end: int, pattern: regex.Pattern[str] | None = None) -> list[int]:
    return list(itertools.chain.from_iterable(_grapheme_pieces(text, pos, end)))


def _match_pieces(
    text: str, pos: int, end: int, pattern: regex.Pattern[str] | None
) -> Iterator[Iterable[int]]:
    assert pattern is not None
    yield map(_START, pattern.finditer(text, pos, end))


def _line_breaks(text: str, start: int, end: int) -> Iterator[list[int]]:
    return _batches(map(_END, _LINE.finditer(text, start, end)))


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


def _script_cuts(
    text: str, batches: Iterable[list[int]], strong_too: bool, filtered: bool = True
) -> tuple[list[int], list[int]]:
    """Strong and weak script changes among the grapheme starts ``batches`` (allowed
    ones only when ``filtered``), in one pass; weak ones are kept only while no strong
    one is found (or all of them when ``strong_too`` is false, and no strong ones)."""
    strong: list[int] = []
    weak: list[int] = []
    last: tuple[int, int] | None = None  # the last grapheme with a class: start, class
    get_class = _SCRIPT_CLASS.__getitem__
    for batch in batches:
        classes = list(map(get_class, map(text.__getitem__, batch)))
        starts = list(itertools.compress(batch, classes))
        if not starts:
            continue
        classes = list(itertools.compress(classes, classes))
        if last is not None:
            starts.insert(0, last[0])
            classes.insert(0, last[1])
        last = starts[-1], classes[-1]
        pairs = list(zip(classes, itertools.islice(classes, 1, None)))
        if strong_too:
            found = list(
                itertools.compress(
                    itertools.islice(starts, 1, None), map(_STRONG_CHANGES.__contains__, pairs)
                )
            )
            strong += allowed_cuts(text, found) if filtered and found else found
        if not strong:
            found = list(
                itertools.compress(itertools.islice(starts, 1, None), map(_WEAK_CHANGES.__contains__, pairs))
            )
            weak += allowed_cuts(text, found) if filtered and found else found
    return strong, weak


def _script_changes(text: str, start: int, end: int, weak: bool) -> list[int]:
    """Cuts where the script changes inside an identifier run.

    Strong changes end a hiragana run (particles and okurigana close a Japanese
    phrase: 私は|ユーザー名を|入力) or cross Latin/CJK/Hangul; the weak ones start a
    hiragana run after kanji or katakana (入力|します), used only when nothing better is left.
    """
    found = _script_cuts(text, _batches(_iter_cluster_starts(text, start, end)), not weak, filtered=False)
    return found[1 if weak else 0]


def _strong_script_changes(text: str, start: int, end: int) -> list[int]:
    return _script_changes(text, start, end, weak=False)


def _weak_script_changes(text: str, start: int, end: int) -> list[int]:
    return _script_changes(text, start, end, weak=True)


def _graphemes(text: str, start: int, end: int) -> list[int]:
    return [g for g in _iter_cluster_starts(text, start, end) if g > start]


def _identifier_starts(text: str, start: int, end: int) -> Iterator[int]:
    if _plain(text, start, end):
        return map(_START, _IDENT_OR_CHAR.finditer(text, start, end))
    return _iter_cluster_starts(text, start, end, _IDENT_OR_GRAPHEME)


def _identifier_batches(text: str, start: int, end: int) -> Iterator[list[int]]:
    return _batches(_identifier_starts(text, start, end))


def _identifiers(text: str, start: int, end: int) -> list[int]:
    """Starts of identifier runs and of the other graphemes (a flag is never part of
    an identifier run, so a run of flags is cut as graphemes)."""
    return [g for g in _identifier_starts(text, start, end) if g > start]


def _listed(find: _Batches) -> Callable[[str, int, int], list[int]]:
    def listed(text: str, start: int, end: int) -> list[int]:
        out: list[int] = []
        for batch in find(text, start, end):
            out += _inside(batch, start, end)
        return out

    return listed


# The levels above the script ones, highest first, as batch finders.
_LEVEL_BATCHES: tuple[_Batches, ...] = (
    _ends(_PARAGRAPH),
    _line_breaks,
    _cut_ends(_SENTENCE),
    _cut_ends(_CLAUSE),
    _starts(_WORD),
    _identifier_batches,
)

# Highest level first. Each finder returns candidate cuts strictly inside (start, end).
LEVELS: tuple[tuple[str, Callable[[str, int, int], list[int]]], ...] = (
    ("paragraph", _listed(_LEVEL_BATCHES[0])),
    ("line", _listed(_LEVEL_BATCHES[1])),
    ("sentence", _listed(_LEVEL_BATCHES[2])),
    ("clause", _listed(_LEVEL_BATCHES[3])),
    ("word", _listed(_LEVEL_BATCHES[4])),
    ("identifier", _identifiers),
    ("script", _strong_script_changes),
    ("weak script", _weak_script_changes),
    ("grapheme", _graphemes),
)


_SCRIPT_LEVEL = 6
_WEAK_LEVEL = 7
_GRAPHEME_LEVEL = 8
assert len(_LEVEL_BATCHES) == _SCRIPT_LEVEL
assert [name for name, _ in LEVELS[_SCRIPT_LEVEL:]] == ["script", "weak script", "grapheme"]

# Levels the native pass scans (paragraph to word), with the same cuts as the patterns.
_NATIVE_LEVELS = 5
_CUTS_BATCH = 1 << 14  # cuts the kernels hand over at a time

# A character's flags for the native scan: which classes of the level patterns hold it,
# and whether a cut after or before it is refused (``_native.c`` names the bits).
_STERM = regex.compile(r"[\p{Sentence_Terminal}…]")
_ONE_HSPACE = regex.compile(_HSPACE)
_CJK_STERMS = frozenset(_CJK_STOPS)
_CLOSING = frozenset(_CLOSE_CHARS)
_CJK_CLAUSE_MARKS = frozenset(_CJK_COMMAS)
_CLAUSE_MARKS = frozenset(_COMMAS)
_XID = regex.compile(r"[\p{XID_Continue}]")


def prose_flags(ch: str) -> int:
    """The flags of one character for the native level scan (asked once per character)."""
    return (
        (_STERM.match(ch) is not None)
        | (ch in _CJK_STERMS) << 1
        | (ch in _CLOSING) << 2
        | (_ONE_HSPACE.match(ch) is not None) << 3
        | (ch in _CJK_CLAUSE_MARKS) << 4
        | (ch in _CLAUSE_MARKS) << 5
        | _BAD_AFTER[ch] << 6
        | _BAD_BEFORE[ch] << 7
        | (_XID.match(ch) is not None) << 8
        | _JOINS[ch] << 9
        | _JOINS_AFTER[ch] << 10
        | _JOINS_BEFORE[ch] << 11
        | _SCRIPT_CLASS[ch] << 12
    )


_KNOWN = 0x8000  # a filled entry of the flag table
_LATIN_FILLED = False
# The tables are the process's (``_accel.cache``): filled by one thread at a time, since
# ``_kernels.unfilled`` marks what it hands out, and a second scan would take a marked
# entry for a filled one.
_TABLES_LOCK = threading.Lock()


def _fill(points: Iterable[int], classes: bytearray, flags: bytearray) -> None:
    """Fill both tables' entries of ``points`` (code points): the flags first, the class
    last (an entry is filled once its class is)."""
    by_point = memoryview(flags).cast("H")
    try:
        for cp in points:
            ch = chr(cp)
            by_point[cp] = prose_flags(ch) | _KNOWN
            classes[cp] = char_class(ch) + 1
    finally:
        by_point.release()


def tables(text: str) -> tuple[bytearray, bytearray]:
    """The tables the kernels and native passes read a character's classes from, filled
    for every character of ``text``: its junction class + 1 (a byte a code point) and
    its prose flags | 0x8000 (two bytes a code point), 0 where not filled yet. Filled
    once per process for Latin-1, then per text for the characters past it (the scan
    finds none once a text's characters have all been seen)."""
    global _LATIN_FILLED
    classes = _accel.cache("junction", 1)
    flags = _accel.cache("prose", 2)
    if _accel.call.filled is text:
        return classes, flags
    with _TABLES_LOCK:
        try:
            if not _LATIN_FILLED:
                _fill([cp for cp in range(256) if not classes[cp]], classes, flags)
                _LATIN_FILLED = True
            if not text.isascii():
                units, kind = _accel.reader(text)
                if kind > 1:
                    kernels = _accel.kernels
                    if kernels is not None:
                        _fill(kernels.unfilled(units, kind, classes), classes, flags)
                    else:
                        _fill([cp for cp in map(ord, set(text)) if not classes[cp]], classes, flags)
        except BaseException:
            # (An interrupt or a failed classifier: what ``unfilled`` marked and nothing
            # filled is set back, wherever the failure came.)
            classes[:] = classes.replace(b"\xff", b"\x00")
            raise
    _accel.call.filled = text
    return classes, flags


def boundaries(text: str, start: int, end: int, level: int) -> tuple[int, array[int]]:
    """The first level at or below ``level`` with allowed cuts in ``(start, end)``.

    Returns ``(level_found, cuts)``; ``cuts`` is empty when none is left at any level.
    Candidates are found and filtered in batches (only the allowed ones are kept), and
    kept as machine integers (4 bytes for a text shorter than 2**31 characters, else 8):
    a section with a cut at every grapheme (a run of flags) has as many cuts as
    characters, and a list would hold 36 bytes for each.
    """
    code = "i" if len(text) < 1 << 31 else "q"
    cuts: array[int] = array(code)
    kernels = _accel.kernels
    if _accel.OFF and not _accel.on("level_cuts"):
        kernels = None  # type: ignore[assignment]
    if kernels is not None:
        # One pass in C per level finds and filters the cuts (a regex match object per
        # cut cost about a microsecond: the word level of English prose took as long as
        # encoding it), a bounded batch at a time (a run of dashes has a cut per
        # character).
        _, flags = tables(text)
        units, kind = _accel.reader(text)
        wide = code == "q"
        for index in range(level, _NATIVE_LEVELS):
            pos = start
            while pos < end:
                some, pos = kernels.level_cuts(units, kind, start, end, index, flags, wide, _CUTS_BATCH, pos)
                cuts.frombytes(some)
            if cuts:
                return index, cuts
        # The levels below, where every character is a grapheme cluster of its own (None:
        # one joins a neighbour, and the clusters are found below).
        fine = (min(max(level, _NATIVE_LEVELS), _GRAPHEME_LEVEL), -1, 0, False)
        while True:
            got = kernels.fine_cuts(units, kind, start, end, flags, wide, _CUTS_BATCH, *fine)
            if got is None:
                break
            cuts.frombytes(got[0])
            fine = got[1:]
            if fine[1] >= end:
                return fine[0], cuts
        level = max(level, _NATIVE_LEVELS)
    for index in range(level, _SCRIPT_LEVEL):
        for batch in _LEVEL_BATCHES[index](text, start, end):
            batch = _inside(batch, start, end)
            if batch:
                cuts.extend(allowed_cuts(text, batch))
        if cuts:
            return index, cuts
    if level <= _WEAK_LEVEL:
        # The two script levels share one pass over the grapheme starts.
        strong, weak = _script_cuts(
            text, _batches(_iter_cluster_starts(text, start, end)), level <= _SCRIPT_LEVEL
        )
        if strong:
            return _SCRIPT_LEVEL, array(code, strong)
        if weak:
            return _WEAK_LEVEL, array(code, weak)
    run = 1  # graphemes since the last cut taken
    for batch in _batches(_iter_cluster_starts(text, start, end)):
        found: list[int] = []
        run = _bounded_batch(text, _inside(batch, start, end), run, found)
        cuts.extend(found)
    if cuts:
        return _GRAPHEME_LEVEL, cuts
    return len(LEVELS), cuts


class ProseSplitter:
    """Splitter for plain text; ``Section.state`` is the next level to try."""

    __slots__ = ("kind", "language")

    def __init__(self, kind: str = "text", language: str | None = None) -> None:
        self.kind = kind
        self.language = language

    def root(self, text: str, start: int = 0, end: int | None = None, path: str | None = None) -> Section:
        return Section(start, len(text) if end is None else end, self, 0, self.kind, self.language, path)

    def split_edges(self, text: str, section: Section) -> tuple[array[int], Section]:
        """The edges of the parts (``[start, *cuts, end]``, or ``[]`` when the section
        cannot be cut) and a section every part is like but for its span."""
        level = section.state if isinstance(section.state, int) else 0
        found, edges = boundaries(text, section.start, section.end, level)
        if not edges:
            return edges, section
        edges.insert(0, section.start)
        edges.append(section.end)
        # (A Section built directly: ``_replace`` goes through ``_make`` and a dict,
        # about 2% of prose at budget 64, where every descent makes one.)
        s = section
        return edges, Section(s.start, s.end, s.splitter, found + 1, s.kind, s.language, s.path, s.partial)

    def split(self, text: str, section: Section) -> Sequence[Section]:
        edges, t = self.split_edges(text, section)
        if not edges:
            return ()
        kind, language, path, partial, nxt = t.kind, t.language, t.path, t.partial, t.state
        return [Section(a, b, self, nxt, kind, language, path, partial) for a, b in itertools.pairwise(edges)]


PROSE = ProseSplitter()
