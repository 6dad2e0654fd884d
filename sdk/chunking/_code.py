"""Code splitter: cut source only between syntax nodes, shallowest first.

The source is parsed once by tree-sitter (in C); Python then looks only at the
children of nodes that do not fit the budget. Splitting a node returns its children,
grouped so that what belongs together moves together (comments, decorators and
attributes directly above a definition; a trailing comment and the line it ends;
closing punctuation and the token before it; an opening bracket and what follows).
Whitespace between groups becomes its own small section, which the engine glues to
a neighbour, so every node section spans exactly its node: a cut is never placed
inside a node whose own text fits. When a group itself must be cut, what leads into
its definition (comments, decorators) is *sticky*: it opens the definition's first
chunk instead of ending the chunk before.

Leaves that do not fit (a huge string, a long comment) and ERROR regions of broken
code fall back to prose rules at the line level; single tokens stay whole. Nesting
deeper than ``_MAX_DEPTH`` splits is cut by lines, then tokens (the engine recurses
once per level). ``Chunk.path`` is the chain of definitions the chunk starts in.

A syntax tree costs about 20 bytes of memory per byte of source, so a long source is
parsed a window at a time (its top-level statements come out of a window as
out of the whole; see ``CodeSplitter._window``), and a window's nodes are released
once the engine has moved past them. Node kinds are tested through a per-grammar
table of bits indexed by ``kind_id`` rather than by comparing type names.
"""

from __future__ import annotations

import itertools
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import regex
import tree_sitter

from . import _accel
from ._engine import flat_state
from ._languages import (
    GrammarUnavailable,
    UnknownLanguage,
    detect_language,
    language_for_filename,
    languages,
    load_language,
    normalize_language,
)
from ._prose import PROSE
from ._types import ChunkingWarning, Section, caller_level

__all__ = [
    "CodeSplitter",
    "GrammarUnavailable",
    "UnknownLanguage",
    "code_kind_root",
    "code_root",
    "detect_language",
    "languages",
]

Node = tree_sitter.Node

# Sibling kinds that describe the definition below them.
# (Not ``attribute``: in Python that is ``obj.name``.)
_ATTACHED_FORWARD = frozenset(
    {"decorator", "attribute_item", "attribute_list", "annotation", "marker_annotation"}
)
# Unnamed tokens that end what precedes them, or open what follows.
_CLOSERS = frozenset({",", ";", ")", "]", "}", ":", ">", "?>"})
_OPENERS = frozenset({"(", "[", "{"})

_DEFINITIONS = frozenset(
    {
        # Python, Bash
        "function_definition",
        "class_definition",
        # JavaScript / TypeScript
        "function_declaration",
        "generator_function_declaration",
        "class_declaration",
        "abstract_class_declaration",
        "method_definition",
        "method_signature",
        "abstract_method_signature",
        "interface_declaration",
        "type_alias_declaration",
        "enum_declaration",
        "internal_module",
        "module",
        # Go
        "method_declaration",
        "type_spec",
        # Rust
        "function_item",
        "function_signature_item",
        "struct_item",
        "enum_item",
        "union_item",
        "trait_item",
        "impl_item",
        "mod_item",
        "macro_definition",
        # Java, C#
        "record_declaration",
        "annotation_type_declaration",
        "constructor_declaration",
        "struct_declaration",
        "namespace_declaration",
        "file_scoped_namespace_declaration",
        "property_declaration",
        "local_function_statement",
        # C, C++
        "struct_specifier",
        "union_specifier",
        "enum_specifier",
        "class_specifier",
        "namespace_definition",
        # Ruby
        "class",
        "method",
        "singleton_method",
        # JSON
        "pair",
    }
)
# Nodes that wrap one definition: their label is the inner definition's name.
_WRAPPERS = frozenset(
    {
        "decorated_definition",
        "export_statement",
        "template_declaration",
        "type_declaration",
        "lexical_declaration",
        "variable_declaration",
        "ambient_declaration",
    }
)
_LABELLED = _DEFINITIONS | _WRAPPERS | {"variable_declarator"}
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function", "class"}
)
_NAME_MAX = 120
# Postfix and operator chains that nest to the left: flattened while splitting.
_CHAINS = frozenset(
    {
        "call_expression",
        "member_expression",
        "call",
        "attribute",
        "field_expression",
        "method_invocation",
        "field_access",
        "selector_expression",
        "subscript",
        "subscript_expression",
        "index_expression",
        "element_reference",
        "invocation_expression",
        "member_access_expression",
        "binary_expression",
        "binary_operator",
        "boolean_operator",
        "comparison_operator",
        "binary",
        "pipeline",
        "list",
    }
)
# Past this many nested splits, a node is cut by lines and tokens (see _lines_of_tokens).
_MAX_DEPTH = 120
# A source longer than this is parsed a window at a time (see CodeSplitter._window):
# compared with one parse of the whole, windows of 1.5-6 KB cut the corpus, 40 real
# files each of Python, JavaScript, C and C++, and heredoc, template and comment runs
# in Ruby, bash and JavaScript only between top-level statements. A source of one value
# (JSON) or with fewer lines than _WINDOW_LINES in its first window (minified) is
# parsed whole: its first statement is likely the whole of it, and windows doubling
# until it is whole would parse it twice.
_WINDOW_BYTES = 128 * 1024
_WINDOWED = frozenset(name for name in languages() if name != "json")
_WINDOW_LINES = 32
# A parse is given up past _PARSE_SLACK of tree-sitter's progress checks (it checks
# once per 100 parser operations) more than one per _PARSE_BYTES bytes it has reached,
# and the rest is chunked with prose rules. Code of every shape measured takes at most
# one check per 10 bytes (C++ templates, deep brackets; ordinary code one per 100), as
# does error recovery on random broken tokens; but some grammars' error recovery can
# loop on a few bytes of junk (TypeScript: millions of checks, minutes, on 43 bytes).
# The count is of operations, not a clock: the same input gives the same chunks.
_PARSE_SLACK = 1024
_PARSE_BYTES = 4
# And past _LEX_SLACK steps of the lexer more than _LEX_PER_BYTE per byte reached (with
# the guard of _guard.c, which counts them): some grammars lex an unclosed raw string,
# comment or literal to the end of the source again at every token, in time that grows
# with the square of its length (32 KB of ")" took 4 s in bash, 1 MB would take over an
# hour) with few parser operations. Every code shape and real file measured took at
# most 5.3 steps per byte; those took 1,000 and more at 4 KB.
_LEX_SLACK = 64 * 1024
_LEX_PER_BYTE = 64
_READ_BYTES = 64 * 1024  # bytes handed to the parser per read


class _Budget:
    """A bounded parse's progress callback: it answers True (stop) once its calls pass
    ``slack`` plus one per ``step`` bytes the parser has reached from ``lo``, or, with
    ``meter`` (the guard's count of the lexer's steps), once they pass ``_LEX_SLACK``
    plus ``_LEX_PER_BYTE`` per byte reached. ``lexed`` says which."""

    __slots__ = ("calls", "lexed", "lo", "meter", "reached", "slack", "step")

    def __init__(self, lo: int, slack: int, step: int, meter: Callable[[], int] | None = None) -> None:
        self.lo = self.reached = lo
        self.slack = slack
        self.step = step
        self.calls = 0
        self.meter = meter
        self.lexed = False

    def __call__(self, offset: int, _has_error: bool) -> bool:
        self.calls += 1
        if offset > self.reached:
            self.reached = offset
        done = self.reached - self.lo
        if self.calls > self.slack + done // self.step:
            return True
        if self.meter is not None and self.meter() > _LEX_SLACK + done * _LEX_PER_BYTE:
            self.lexed = True
            return True
        return False


# py-tree-sitter 0.26 keeps a reference to every object a read callable returns, so each
# would stay in memory for good: the parser reads from one buffer per thread, refilled
# at each read (the parser has released the previous read by then).
_buffers = threading.local()


def _raised_in_callback(error: SystemError) -> BaseException:
    """What was raised inside a parse's read callable: py-tree-sitter 0.26 goes on
    parsing after it, calls the progress callback with the exception still set, and
    raises ``SystemError`` ("returned a result with an exception set") chained to it,
    so a KeyboardInterrupt while reading came out as a SystemError."""
    cause: BaseException = error
    while isinstance(cause, SystemError) and cause.__cause__ is not None:
        cause = cause.__cause__
    return cause


def _read_buffer() -> bytearray:
    found: bytearray | None = getattr(_buffers, "buffer", None)
    if found is None:
        found = _buffers.buffer = bytearray()
    return found


# A Ruby heredoc opener and its word (quoted words run to the closing quote or the end).
_RUBY_HEREDOC = regex.compile(r"""<<[-~]?(?:"[^"]*|'[^']*|`[^`]*|\w+)""")


def _ruby_state_may_overflow(text: str) -> bool:
    """Could tree-sitter-ruby's scanner state overflow its buffer on ``text`` (without
    the guard of ``_guard.c``)? Only with a heredoc: one whose word has 255 characters
    or more, or open heredocs (4 bytes and the word each) and literals (5 bytes each)
    near 1024 bytes. Error recovery can leave literals open, so every opening quote,
    slash or percent sign counts as one, and every heredoc as open at once: this errs
    on the safe side, and chunks such Ruby with prose rules only when the guard is not
    built."""
    words = [len(m.group()) - 2 for m in _RUBY_HEREDOC.finditer(text)]
    if not words:
        return False
    if max(words) >= 255:
        return True
    literals = sum(text.count(c) for c in "\"'`/%") + text.count("#{") + 1
    return 2 + 5 * literals + sum(words) + 4 * len(words) >= 1000


# tree-sitter-bash 0.25's scanner asks isdigit() of the code point after "{" and its
# digits: past 255, glibc reads its class table out of bounds (the guard gives scanners
# a table for every code point; without it, such bash is chunked as prose).
_BASH_FAR_AFTER_BRACE = regex.compile(r"\{[0-9]*+[^\x00-\xff]")


def _unguarded_risk(language: str, text: str) -> str | None:
    """Why ``language``'s scanner could crash the process on ``text`` without the guard
    of ``_guard.c``, or None."""
    if language == "ruby" and _ruby_state_may_overflow(text):
        return "its scanner could overflow on these heredocs, and sdk.chunking._guard is not built"
    if language == "bash" and _BASH_FAR_AFTER_BRACE.search(text) is not None:
        return (
            "its scanner reads past the C library's character table on a character past "
            "U+00FF after '{', and sdk.chunking._guard is not built"
        )
    return None


class _Nodes(NamedTuple):
    """State of a code section: sibling nodes spanning bytes ``[start, end)``.

    ``chain`` is the definition chain enclosing the nodes (their parent's path);
    ``depth`` counts the splits above them (past ``_MAX_DEPTH``: lines, then tokens).
    """

    nodes: Sequence[Node]
    chain: tuple[str, ...]
    start: int
    end: int
    depth: int = 0


# Per node kind, what the splitter needs to know, as bits (one table per grammar, by
# ``kind_id``: an int lookup instead of string tests on every child).
_COMMENT = 1
_FORWARD = 2  # describes the definition below it (_ATTACHED_FORWARD)
_CLOSER = 4  # unnamed token ending what precedes it
_OPENER = 8  # unnamed token opening what follows
_LABEL = 32  # names a definition (_LABELLED)
_DEFINITION = 64  # named definition (_DEFINITIONS)
_CHAIN = 128  # left-nested chain (_CHAINS)
_ERROR = 256
_NAMED = 512
_ERROR_ID = 0xFFFF  # tree-sitter's ERROR symbol
_GLUE = _COMMENT | _FORWARD | _CLOSER | _OPENER  # the bits _group's rules look at

_KIND_FLAGS: dict[str, dict[int, int]] = {}


def _kind_flags(language: str, grammar: tree_sitter.Language) -> dict[int, int]:
    """Bits for every node kind of ``grammar`` (computed once per language)."""
    table = _KIND_FLAGS.get(language)
    if table is not None:
        return table
    table = {_ERROR_ID: _ERROR | _NAMED}
    for kind_id in range(grammar.node_kind_count):
        kind = grammar.node_kind_for_id(kind_id)
        if kind is None:
            continue
        named = grammar.node_kind_is_named(kind_id)
        bits = _NAMED if named else 0
        if "comment" in kind:
            bits |= _COMMENT
        if kind in _ATTACHED_FORWARD:
            bits |= _FORWARD
        if not named and kind in _CLOSERS:
            bits |= _CLOSER
        if not named and kind in _OPENERS:
            bits |= _OPENER
        if kind in _LABELLED:
            bits |= _LABEL
        if named and kind in _DEFINITIONS:
            bits |= _DEFINITION
        if kind in _CHAINS:
            bits |= _CHAIN
        if kind == "ERROR":
            bits |= _ERROR
        table[kind_id] = bits
    _KIND_FLAGS[language] = table
    return table


# A level of more than 2 * _RUN groups is handed to the engine as flat runs of about
# _RUN groups each, made into sections only when one must be cut (a Section and its
# state per group took 160 bytes and more per byte of a long array of small numbers).
_RUN = 512

# A named tuple built without its ``__new__``'s Python frame (the tile loop's sections).
_new_tuple: Callable[..., Any] = tuple.__new__
_NOT_STICKY = itertools.repeat(False)  # no group of a level leads into the next


@flat_state
class _Run(NamedTuple):
    """State of a run of sibling groups: placed as if they stood in its place."""

    groups: list[list[Node]]
    chain: tuple[str, ...]
    start: int
    end: int
    depth: int
    path: str | None  # the level's path (the run's own is its first group's)


class _Tail(NamedTuple):
    """State of the unparsed rest of a long source, from byte ``start`` on."""

    start: int


class CodeSplitter:
    """Splitter for one source; ``Section.state`` is a :class:`_Nodes` (or a :class:`_Tail`).

    The source is parsed on the first split, so a text that fits the budget whole is
    never parsed. ``touched`` counts the nodes looked at, so tests can check the walk
    stays lazy; ``parsed`` counts the bytes given to the parser and ``widest`` the
    longest stretch parsed at once (a syntax tree takes about 20 bytes of memory per
    byte of source, so a long source is parsed a window at a time); ``checks`` counts
    the parser's progress checks, and ``stopped`` is where it was stopped, if it was.
    """

    __slots__ = (
        "_ascii",
        "_data",
        "_flags",
        "_grammar",
        "_live",
        "_parser",
        "_plain",
        "_risk",
        "_row",
        "_text",
        "_tree",
        "_whole",
        "_why",
        "checks",
        "language",
        "lexed",
        "parsed",
        "stopped",
        "touched",
        "widest",
    )

    def __init__(self, text: str, language: str, grammar: tree_sitter.Language) -> None:
        self._text = text
        self._grammar = grammar
        self._tree: tree_sitter.Tree | None = None
        self._data = b""
        self._ascii = True
        self._plain = True  # ASCII without CR: every token edge is a grapheme edge
        self._flags = _kind_flags(language, grammar)
        self.language = language
        self.touched = 0
        self.parsed = 0
        self.widest = 0
        self.checks = 0  # the parser's progress checks (see _run)
        self.lexed = 0  # the lexer's steps, where the guard counts them
        self.stopped: int | None = None  # the byte the parser was stopped at
        self._why = ""
        # Why the grammar's scanner could crash the process on this text without the
        # guard (checked only where the guard is not built).
        self._risk = None if _accel.guard is not None else _unguarded_risk(language, text)
        self._whole = 0  # how many of the last window's nodes may be whole
        self._parser: tree_sitter.Parser | None = None
        self._live: list[list[Node]] | None = None  # node lists of the current window
        self._row = (0, 0)  # (byte, row) last passed by the windows

    def _load(self) -> bytes:
        if not self._data and self._text:
            text = self._text
            self._ascii = text.isascii()
            self._plain = self._ascii and "\r" not in text
            self._data = text.encode("ascii" if self._ascii else "utf-8")
        return self._data

    @property
    def tree(self) -> tree_sitter.Tree | None:
        """The syntax tree of the whole source (parsed once, on first use); None where
        the parser was stopped (see :meth:`_run`)."""
        if self._tree is None and self.stopped is None:
            data = self._load()
            self._tree = self._run(tree_sitter.Parser(self._grammar), 0)
            self.parsed += len(data)
            self.widest = max(self.widest, len(data))
        return self._tree

    def _run(self, parser: tree_sitter.Parser, lo: int) -> tree_sitter.Tree | None:
        """``parser``'s tree of the source (its included ranges starting at byte ``lo``),
        or None, with ``stopped`` set to the byte it had reached, where it took more
        operations or lexer steps than the source's length allows (``_PARSE_SLACK``,
        ``_LEX_SLACK``)."""
        data = self._data
        guard = _accel.guard
        if guard is None and self._risk is not None:
            self.stopped = lo  # the grammar's scanner could crash the process on this text
            self._why = self._risk
            return None
        view = memoryview(data)
        buffer = _read_buffer()
        budget = _Budget(lo, _PARSE_SLACK, _PARSE_BYTES, None if guard is None else guard.meter_count)
        if guard is not None:
            # Past these (the whole window's allowance), lexing stops at once: some lex
            # loops make no parser operation, so the budget is not asked.
            size = len(data) - lo
            guard.meter_start(_LEX_SLACK + size * _LEX_PER_BYTE)
        parsing = True

        def read(offset: int, _point: tree_sitter.Point) -> bytes | bytearray:
            if not parsing:  # Node.text, which wants bytes (and releases them)
                return data[offset : offset + _READ_BYTES]
            buffer[:] = view[offset : offset + _READ_BYTES]
            return buffer

        steps = 0
        try:
            tree: tree_sitter.Tree | None = parser.parse(read, progress_callback=budget)
        except ValueError:  # stopped by the budget
            parser.reset()
            tree = None
        except SystemError as exc:
            parser.reset()
            raise _raised_in_callback(exc) from None
        finally:
            parsing = False
            self.checks += budget.calls
            if guard is not None:
                steps = guard.meter_stop()
                self.lexed += steps
        # (Past the whole window's allowance, the guard stopped lexing: the tree is
        # whatever tree-sitter made of the rest without tokens.)
        over = guard is not None and steps > _LEX_SLACK + (len(data) - lo) * _LEX_PER_BYTE
        if tree is not None and not over:
            return tree
        self.stopped = budget.reached
        self._why = (
            "its lexer ran past the work allowed for the source's length"
            if budget.lexed or over
            else "its error recovery ran past the work allowed for the source's length"
        )
        return None

    def _given_up(self, text: str, section: Section) -> Sequence[Section]:
        """The rest of the source with prose rules, once the parser was stopped."""
        warnings.warn(
            f"kind='code': the {self.language} parser was stopped near byte {self.stopped} "
            f"({self._why}); the rest is chunked with prose rules",
            ChunkingWarning,
            stacklevel=caller_level(),
        )
        return self._prose(text, section)

    def _parse(self, lo: int, hi: int) -> list[Node] | None:
        """The non-empty top-level nodes of ``data[lo:hi]`` parsed alone (absolute
        offsets); None where the parser was stopped."""
        data = self._data
        parser = self._parser
        if parser is None:
            parser = self._parser = tree_sitter.Parser(self._grammar)
        at, row = self._row
        if lo < at:
            at, row = 0, 0
        row += data.count(b"\n", at, lo)
        self._row = (lo, row)
        end_row = row + data.count(b"\n", lo, hi)
        start = tree_sitter.Point(row, lo - data.rfind(b"\n", 0, lo) - 1)
        end = tree_sitter.Point(end_row, hi - data.rfind(b"\n", 0, hi) - 1)
        parser.included_ranges = [tree_sitter.Range(start, end, lo, hi)]
        tree = self._run(parser, lo)
        self.parsed += hi - lo
        self.widest = max(self.widest, hi - lo)
        if tree is None:
            return None
        root = tree.root_node
        children = [c for c in root.children if c.end_byte > c.start_byte]
        # Where error recovery gave up on a window as a whole, its top-level nodes are
        # loose tokens and pieces (",", "{", a "pair", a function's statements), which
        # need not look broken: none is whole.
        self._whole = 0 if root.is_error and hi < len(data) else len(children)
        return children

    def _window(self, text: str, section: Section, lo: int) -> Sequence[Section]:
        """The top-level nodes from byte ``lo`` on, one window of the source at a time.

        The window (128 KiB, or a 32nd of what precedes it, so a huge source takes
        few) is parsed alone. Its last top-level node may run past the window's end,
        so it (and the comments, decorators or broken nodes just before it) is left
        to the next window, which starts at that node: a top-level statement parses
        alike alone and in context. The rest of the source is one more section (a
        :class:`_Tail`), split by the engine after this window's nodes are placed; the
        previous window's nodes are released then, so one tree at a time is alive.
        Where no node is whole in the window, it is doubled until one is.
        """
        if self._live is not None:
            for nodes in self._live:
                nodes.clear()  # nodes keep their tree alive
        self._live = []
        data = self._data
        n = len(data)
        size = max(_WINDOW_BYTES, lo // 32)
        hi = self._window_end(lo + size, size)
        while True:
            children = self._parse(lo, hi)
            if children is None:
                return self._given_up(text, section)
            keep = len(children) if hi == n else min(self._kept(children), self._whole)
            if keep or hi == n:
                break
            # Nothing whole to keep (a node longer than the window, or broken code at
            # its start): a window twice as long, so the parses add up to at most
            # twice the final one.
            size *= 2
            hi = self._window_end(lo + size, size)
        if not children:
            return self._prose(text, section)
        nxt = children[keep].start_byte if keep < len(children) else n
        committed = children[:keep]
        self.touched += keep
        end = section.start + (nxt - lo if self._ascii else len(data[lo:nxt].decode("utf-8")))
        head = Section(section.start, end, self, None, "code", self.language, None)
        parts = self._tile(text, head, _Nodes((), (), lo, nxt), self._group(committed), (), None)
        if nxt < n:
            parts.append(Section(end, section.end, self, _Tail(nxt), "code", self.language, None))
        elif len(parts) == 1:  # one node: cut inside it
            only = parts[0]
            return only.splitter.split(text, only) if only.splitter is not None else ()
        return parts

    def _window_end(self, at: int, size: int) -> int:
        """A window's end near byte ``at``: the end of that line, so the window's last
        line is whole (cut inside ``elif``, a window's ``eli`` parsed as a statement of
        its own and the ``if`` before it as whole), unless the line runs on for more
        than another window."""
        n = len(self._data)
        if at >= n:
            return n
        i = self._data.find(b"\n", at, at + size)
        return at if i < 0 else i + 1

    def _kept(self, children: list[Node]) -> int:
        """How many of a window's top-level nodes to keep: those before the last node
        that is not a comment (a clause such as ``else:`` may follow it past the
        window, with comments between) and before anything broken (and the node
        before that, which error recovery may have cut short), less the comments and
        decorators that lead into what is left out. Where that leaves none (broken
        code at its start), all but the last are kept."""
        flags = self._flags
        last = len(children) - 1
        while last > 0 and flags.get(children[last].kind_id, 0) & _COMMENT:
            last -= 1
        if last == 0 and flags.get(children[0].kind_id, 0) & _COMMENT:
            last = len(children) - 1  # comments only: all but the last
        keep = len(children)
        for i, child in enumerate(children):
            if child.has_error or not flags.get(child.kind_id, 0) & _NAMED:
                # Broken code at the window's start: the window is kept as it parsed,
                # as a parse of the whole source would have it (doubled to the end of
                # the source instead, a conflict marker on the first line parsed the
                # whole file at once: 85 bytes a byte).
                keep = i - 1 if i > 1 else last
                break
        keep = min(keep, last)
        while keep > 0 and flags.get(children[keep - 1].kind_id, 0) & (_COMMENT | _FORWARD):
            keep -= 1
        return max(keep, 0)

    # -- the Splitter protocol -------------------------------------------------------

    def split(self, text: str, section: Section) -> Sequence[Section]:
        # A part moved to whole grapheme clusters can span its whole section (a zero
        # width joiner or a combining mark after a node's last token joins what follows
        # it): that part is cut in the section's stead, a level down each time, or by
        # prose rules (it came back as the section itself, whole and oversize, before).
        for _ in range(_MAX_DEPTH):
            parts = self._split_once(text, section)
            if len(parts) != 1:
                return parts
            only = parts[0]
            if only.splitter is not self or only.start != section.start or only.end != section.end:
                return parts
            section = only
        return self._prose(text, section)

    def _split_once(self, text: str, section: Section) -> Sequence[Section]:
        state = section.state
        if isinstance(state, _Tail):
            return self._window(text, section, state.start)
        if isinstance(state, _Run):
            level = _Nodes((), state.chain, state.start, state.end, state.depth)
            return self._tile(text, section, level, state.groups, state.chain, state.path)
        if not isinstance(state, _Nodes):
            return ()
        if not state.nodes:
            if isinstance(state.nodes, list):  # released with its window
                return self._prose(text, section)
            # The root: parse now.
            data = self._load()
            if (
                len(data) > _WINDOW_BYTES
                and self.language in _WINDOWED
                and data.count(b"\n", 0, _WINDOW_BYTES) >= _WINDOW_LINES
            ):
                return self._window(text, section, 0)
            tree = self.tree
            if tree is None:
                return self._given_up(text, section)
            state = _Nodes((tree.root_node,), (), 0, len(self._data))
        if len(state.nodes) == 1 and state.depth >= _MAX_DEPTH:
            groups = self._lines_of_tokens(state.nodes[0])
            return self._tile(text, section, state, groups, state.chain, section.path)
        if len(state.nodes) > 1:
            return self._members(text, section, state, list(state.nodes), state.chain, section.path)
        node = state.nodes[0]
        chain = state.chain
        path = section.path
        flags = self._flags
        lo, hi = state.start, state.end
        while True:
            bits = flags.get(node.kind_id, 0)
            if bits & _ERROR:
                return self._prose(text, section)
            if bits & _DEFINITION:
                name = _definition_name(self._data, node, self.language)
                if name is not None:
                    chain = (*chain, name)
                    path = ".".join(chain)
            children = self._children(node)
            if not children:  # a token that does not fit (see _tile)
                return self._prose(text, section)
            only = children[0]
            if len(children) == 1 and only.start_byte <= lo and only.end_byte >= hi:
                node = only  # a node that is all one child: look through it
                continue
            groups = self._group(children)
            if len(groups) == 1:  # all glued together (a decorated definition): cut between members
                parts = self._members(text, section, state, children, chain, path)
            else:
                parts = self._tile(text, section, state, groups, chain, path)
            return parts

    # -- helpers -----------------------------------------------------------------------

    def _children(self, node: Node) -> list[Node]:
        """Non-empty children; a one-line left-recursive chain (``a + b + c``, ``x.f().g()``,
        as in minified code) comes flat, so it does not cost one nesting level per link.

        Multi-line chains stay nested: their operands are the units a reader keeps whole.
        """
        children = [c for c in node.children if c.end_byte > c.start_byte]
        self.touched += len(children) or 1
        if not children:
            return children
        flags = self._flags
        kind = node.kind_id
        # The links' other children, outermost first: they follow the innermost link's
        # children. (Spliced in at the front one link at a time, a chain of n links
        # moved n²/2 list items: 50,000 links of "a.b().b()..." took a second.)
        rests: list[list[Node]] = []
        while children:
            first = children[0]
            first_kind = first.kind_id
            first_bits = flags.get(first_kind, 0)
            if not first_bits & _NAMED or first.child_count < 2:
                break
            if first_kind != kind and not (flags.get(kind, 0) & first_bits & _CHAIN):
                break
            if first.start_point.row != first.end_point.row:
                break
            inner = [c for c in first.children if c.end_byte > c.start_byte]
            self.touched += len(inner)
            rests.append(children[1:])
            children = inner
            while not children and rests:  # (a link of empty children: what follows it)
                children = rests.pop()
            kind = first_kind
        for rest in reversed(rests):
            children += rest
        return children

    def _lines_of_tokens(self, node: Node) -> list[list[Node]]:
        """The tokens under ``node`` grouped by line: the cut levels left past ``_MAX_DEPTH``.

        The engine recurses once per level, so pathological nesting (thousands of
        brackets) is cut between lines, then between tokens, instead of level by level.
        """
        leaves: list[Node] = []
        stack = [node]
        while stack:
            n = stack.pop()
            if n.end_byte <= n.start_byte:
                continue
            if n.child_count == 0:
                leaves.append(n)
            else:
                stack.extend(reversed(n.children))
        self.touched += len(leaves)
        groups: list[list[Node]] = [[leaves[0]]] if leaves else []
        for prev, cur in itertools.pairwise(leaves):
            if cur.start_point.row == prev.end_point.row:
                groups[-1].append(cur)
            else:
                groups.append([cur])
        return groups if len(groups) > 1 else [[leaf] for leaf in leaves]

    def _prose(self, text: str, section: Section) -> Sequence[Section]:
        """Line, then word/identifier, then grapheme cuts (for leaves and ERROR regions)."""
        inner = Section(section.start, section.end, PROSE, 1, "code", self.language, section.path)
        return PROSE.split(text, inner)

    def _group(self, children: list[Node], leads: list[bool] | None = None) -> list[list[Node]]:
        """Runs of siblings that must move together; with ``leads``, also which siblings
        lead into the next one (one flag per sibling appended to it).

        Closing tokens and a comment on the same line join what precedes them; comments
        (with no blank line after them), decorators, attributes and opening brackets
        lead into what follows. A node's offsets are read only where a rule needs them
        (this runs over every level's children).
        """
        data = self._data
        flag = self._flags.get
        prev = children[0]
        group = [prev]
        groups = [group]
        prev_bits = flag(prev.kind_id, 0)
        prev_trailing = False  # prev is a comment ending the line of the node before it
        for cur in itertools.islice(children, 1, None):
            bits = flag(cur.kind_id, 0)
            if not (bits | prev_bits) & _GLUE:  # no rule joins the two (most siblings)
                group = [cur]
                groups.append(group)
                if leads is not None:
                    leads.append(False)
                prev_trailing = False
                prev, prev_bits = cur, bits
                continue
            if bits & _COMMENT:
                newlines = data.count(b"\n", prev.end_byte, cur.start_byte)
                back = newlines == 0
            else:
                back = bits & _CLOSER != 0
                if not back and prev_bits & _COMMENT and not prev_trailing:
                    newlines = data.count(b"\n", prev.end_byte, cur.start_byte)
                else:
                    newlines = 0
            forward = not back and (
                prev_bits & (_FORWARD | _OPENER) != 0
                or (prev_bits & _COMMENT != 0 and not prev_trailing and newlines <= 1)
            )
            if leads is not None:
                leads.append(forward)
            if back or forward:
                group.append(cur)
            else:
                group = [cur]
                groups.append(group)
            prev_trailing = back and bits & _COMMENT != 0
            prev, prev_bits = cur, bits
        if leads is not None:
            leads.append(False)  # the last sibling leads into nothing
        return groups

    def _members(
        self,
        text: str,
        section: Section,
        state: _Nodes,
        nodes: list[Node],
        chain: tuple[str, ...],
        path: str | None,
    ) -> list[Section]:
        """Cut a glued run into its members; a member that leads into the next one (a
        comment or decorator above a definition) is sticky: it opens the next chunk
        rather than ending one, so it travels with the first piece of a definition that
        must itself be cut."""
        leads: list[bool] = []
        self._group(nodes, leads)
        return self._tile(text, section, state, [[n] for n in nodes], chain, path, leads)

    def _runs(
        self,
        text: str,
        section: Section,
        state: _Nodes,
        groups: list[list[Node]],
        chain: tuple[str, ...],
        path: str | None,
    ) -> list[Section]:
        """``groups`` as flat runs of ``_RUN`` (the last up to 1.5 times that), from a
        run's first group to its last, with the whitespace between two runs a section
        of its own, as ``_tile`` has it between two groups."""
        lo, hi = state.start, state.end
        data = self._data
        linear = hi - lo == section.end - section.start  # ASCII (see _tile)
        language = self.language
        n = len(groups)
        parts: list[Section] = []
        pos_b, pos_c = lo, section.start

        def char(b: int) -> int:
            return section.start + (b - lo) if linear else pos_c + len(data[pos_b:b].decode("utf-8"))

        k = 0
        while k < n:
            j = k + _RUN if n - k >= _RUN + _RUN // 2 else n
            gs = min(hi, max(pos_b, groups[k][0].start_byte))
            ge = min(hi, max(gs, groups[j - 1][-1].end_byte))
            if gs > pos_b:
                c = char(gs)
                parts.append(Section(pos_c, c, PROSE, 0, "code", language, path))
                pos_b, pos_c = gs, c
            c = char(ge)
            run = _Run(groups[k:j], chain, gs, ge, state.depth, path)
            parts.append(
                Section(pos_c, c, self, run, "code", language, self._group_path(groups[k], chain, path))
            )
            pos_b, pos_c = ge, c
            k = j
        if pos_b < hi:
            parts.append(Section(pos_c, section.end, PROSE, 0, "code", language, path))
        if self._plain:
            return parts
        return _snap(text, parts)

    def _group_path(self, group: list[Node], chain: tuple[str, ...], path: str | None) -> str | None:
        """The path the section of ``group`` would carry (see ``_tile``)."""
        flags = self._flags
        principal = group[0]
        if len(group) > 1:
            for node in group:
                if not flags.get(node.kind_id, 0) & (_COMMENT | _FORWARD):
                    principal = node
                    break
        elif principal.child_count == 0 or flags.get(principal.kind_id, 0) & _ERROR:
            return path
        if flags.get(principal.kind_id, 0) & _LABEL:
            label = _label(self._data, principal, self.language)
            if label is not None:
                return ".".join((*chain, label))
        return path

    def _tile(
        self,
        text: str,
        section: Section,
        state: _Nodes,
        groups: list[list[Node]],
        chain: tuple[str, ...],
        path: str | None,
        sticky: list[bool] | None = None,
    ) -> list[Section]:
        """Sections for ``groups`` and the whitespace between them; ``path`` is the default.

        (This loop runs once per group of siblings, the splitter's most frequent step:
        the named tuples are built by ``tuple.__new__``, without their class's Python
        ``__new__``.)
        """
        if len(groups) > 2 * _RUN and sticky is None:
            return self._runs(text, section, state, groups, chain, path)
        lo, hi = state.start, state.end
        data = self._data
        s_start, s_end = section.start, section.end
        # As many bytes as characters: ASCII, where a byte offset maps to a character
        # offset by arithmetic.
        linear = hi - lo == s_end - s_start
        delta = s_start - lo
        pos_b, pos_c = lo, s_start
        language = self.language
        parts: list[Section] = []
        append = parts.append
        glue = False  # the part before is sticky: so is the whitespace after it
        leading: list[int] = []  # the parts that lead into the next one
        depth = state.depth + 1
        flag = self._flags.get
        live = self._live
        new, section_type, prose = _new_tuple, Section, PROSE

        for group, stick in zip(groups, _NOT_STICKY if sticky is None else sticky):
            first = group[0]
            last = group[-1]
            gs = first.start_byte
            if gs < pos_b:
                gs = pos_b
            ge = last.end_byte
            if ge > hi:
                ge = hi
            if ge <= gs:
                continue
            if gs > pos_b:
                c = gs + delta if linear else pos_c + len(data[pos_b:gs].decode("utf-8"))
                if glue:
                    leading.append(len(parts))
                append(new(section_type, (pos_c, c, prose, 0, "code", language, path, False, glue)))
                pos_b, pos_c = gs, c
            c = ge + delta if linear else pos_c + len(data[pos_b:ge].decode("utf-8"))
            glue = stick
            if glue:
                leading.append(len(parts))
            # The group's section.
            if first is last:
                bits = flag(first.kind_id, 0) if first.child_count else _ERROR
                if bits & _ERROR:
                    # A token: whole wherever it fits (as every part is), cut by prose
                    # rules, down to graphemes, where it does not: free text, and an
                    # identifier or number longer than the budget (one oversize chunk
                    # before). Broken code likewise.
                    append(new(section_type, (pos_c, c, prose, 1, "code", language, path, False, glue)))
                    pos_b, pos_c = ge, c
                    continue
                principal = first
            else:
                principal = first
                for node in group:
                    if not flag(node.kind_id, 0) & (_COMMENT | _FORWARD):
                        principal = node
                        break
                bits = flag(principal.kind_id, 0)
            own = path
            if bits & _LABEL:
                label = _label(data, principal, language)
                if label is not None:
                    own = ".".join((*chain, label))
            if live is not None:
                live.append(group)
            nodes = new(_Nodes, (group, chain, pos_b, ge, depth))
            append(new(section_type, (pos_c, c, self, nodes, "code", language, own, False, glue)))
            pos_b, pos_c = ge, c
        if pos_b < hi:
            append(new(section_type, (pos_c, s_end, prose, 0, "code", language, path, False, False)))
        # What leads into a definition carries its path.
        for i in reversed(leading):
            if i + 1 < len(parts) and parts[i].path != parts[i + 1].path:
                parts[i] = parts[i]._replace(path=parts[i + 1].path)
        if self._plain or (linear and text.find("\r", s_start, s_end) < 0):
            return parts  # every edge between two ASCII characters, none after a CR
        return _snap(text, parts)


_GRAPHEME = regex.compile(r"\X")
_ZWJ = "\u200d"


def _cluster_end(text: str, p: int, known: int) -> int:
    """``p`` if a part may start there, else the first position after it where one may.

    Tokens may end inside a cluster (a comment that keeps the CR of a CRLF, an
    identifier before a combining mark); parts are moved to whole clusters. Nor does
    a part start right after a zero-width joiner, the rule prose cuts keep too (it asks
    to join what follows: emoji sequences, Indic half-forms), though a token may end
    there (``a\u200d - b``): the edge moves past the cluster that follows.

    ``known`` (at most ``p``) is a position where a cluster starts. Clusters are matched
    from the nearest position at or before ``p`` where one starts whatever precedes it
    (no rule can join it to what precedes it), else from ``known``, and to their true
    end however far:
    a cluster of any length (a letter and a thousand combining marks, a run of regional
    indicators, whose pairs count from the run's start) is never cut. Callers move
    ``known`` forward with their edges, so the characters matched stay linear in the text.
    """
    before, at = text[p - 1], text[p]
    if before == "\r":
        return p + 1 if at == "\n" else p
    if before < "\x80" and at < "\x80":
        return p
    lo = p
    while lo > known and not _starts_fresh(text, lo):
        lo -= 1
    edge = p
    for m in _GRAPHEME.finditer(text, lo):
        if m.end() > p:
            edge = p if m.start() >= p else m.end()
            break
    n = len(text)
    while edge < n and text[edge - 1] == _ZWJ:
        edge = _GRAPHEME.match(text, edge).end()  # type: ignore[union-attr]
    return edge


def _starts_fresh(text: str, i: int) -> bool:
    """Whether a cluster starts at ``i`` whatever precedes it: after a line feed, or at
    a character no rule joins to the one before (ASCII, not after a carriage return)."""
    before, at = text[i - 1], text[i]
    return before == "\n" or (at < "\x80" and before != "\r" and before < "\x80")


def _snap(text: str, parts: list[Section]) -> list[Section]:
    """Move part edges that fall inside a grapheme cluster to the cluster's end."""
    out = [parts[0]]
    known = parts[0].start  # where a cluster starts: the section's start, then each edge
    for part in itertools.islice(parts, 1, None):
        p = part.start
        if p >= known:
            before = text[p - 1]
            if before < "\x80" and before != "\r" and text[p] < "\x80":
                # Between two ASCII characters (_cluster_end's first test, inline: most edges)
                known = p
                out.append(part)
                continue
        # An edge inside the cluster found last moves to that cluster's end as well.
        edge = known if p < known else _cluster_end(text, p, known)
        known = edge  # a cluster ends where the next one starts
        if edge == p:
            out.append(part)
            continue
        edge = min(edge, part.end)
        out[-1] = _resized(text, out[-1], out[-1].start, edge)
        if edge < part.end:
            out.append(_resized(text, part, edge, part.end))
    return out


def _resized(text: str, section: Section, start: int, end: int) -> Section:
    """``section`` with its edges moved forward to ``start`` and ``end``."""
    state = section.state
    if isinstance(state, (_Nodes, _Run)):
        lo = state.start + len(text[section.start : start].encode("utf-8"))
        hi = state.end + len(text[section.end : end].encode("utf-8"))
        state = state._replace(start=lo, end=hi)
    return section._replace(start=start, end=end, state=state)


def _node_text(data: bytes, node: Node) -> str:
    """A name's text (its first ``_NAME_MAX`` bytes), white space runs made one space."""
    start = node.start_byte
    end = node.end_byte
    if end - start > _NAME_MAX:
        end = start + _NAME_MAX
    name = data[start:end].decode("utf-8", "ignore")
    return name if name.isidentifier() else " ".join(name.split())


def _name_node(node: Node, kind: str) -> Node | None:
    found = node.child_by_field_name("name")
    if found is not None:
        return found
    if kind == "impl_item":
        return node.child_by_field_name("type")
    if kind == "pair":
        return node.child_by_field_name("key")
    declarator = node.child_by_field_name("declarator")
    for _ in range(8):  # C declarators nest: pointer -> function -> identifier
        if declarator is None:
            return None
        inner = declarator.child_by_field_name("declarator")
        if inner is None:
            return declarator
        declarator = inner
    return None


def _definition_name(data: bytes, node: Node, language: str, kind: str | None = None) -> str | None:
    """The name ``node`` adds to the path of what is inside it, if it is a definition
    (``kind``: its type, where the caller has read it)."""
    if kind is None:
        kind = node.type
    if kind not in _DEFINITIONS or not node.is_named:
        return None
    if kind == "pair" and language != "json":  # object literal keys are not definitions
        return None
    found = _name_node(node, kind)
    if found is None:
        return None
    name = _node_text(data, found)
    return name.strip("\"'") or None


def _label(data: bytes, node: Node, language: str) -> str | None:
    """Name of the definition ``node`` is or wraps (decorated, exported, templated, const f = ...)."""
    for _ in range(4):
        kind = node.type
        if kind in _DEFINITIONS:
            return _definition_name(data, node, language, kind)
        if kind == "variable_declarator":
            value = node.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                found = node.child_by_field_name("name")
                return _node_text(data, found) if found is not None else None
            return None
        if kind not in _WRAPPERS:
            return None
        inner = (
            node.child_by_field_name("definition")
            or node.child_by_field_name("declaration")
            or _inner_definition(node)
        )
        if inner is None:
            return None
        node = inner
    return None


def _inner_definition(node: Node) -> Node | None:
    count = node.named_child_count
    for i in range(count):
        child = node.named_child(i)
        if child is not None and (child.type in _DEFINITIONS or child.type == "variable_declarator"):
            return child
    return node.named_child(count - 1) if count else None


def code_root(text: str, language: str) -> Section:
    """The root section for ``text`` in ``language`` (parsed only if it must be cut)."""
    name = normalize_language(language)
    splitter = CodeSplitter(text, name, load_language(name))
    return Section(0, len(text), splitter, _Nodes((), (), 0, 0), "code", name, None)


def code_kind_root(text: str, language: str | None, filename: str | None) -> Section:
    if language is None and filename:
        language = language_for_filename(filename, text)
    if language is not None:
        return code_root(text, language)  # an unknown language or missing grammar is an error
    name, why = detect_language(text)
    if name is not None:
        try:
            return code_root(text, name)
        except GrammarUnavailable as exc:
            why = f"{why}, but {exc}"
    warnings.warn(
        f"kind='code': could not tell the language ({why}); chunking with prose rules. "
        "Pass language= or filename= to choose one.",
        ChunkingWarning,
        stacklevel=4,
    )
    return PROSE.root(text)
