"""The public chunking entry points: :func:`chunk` and :class:`Chunker`."""

from __future__ import annotations

import collections
import concurrent.futures
import copy
import dataclasses
import functools
import itertools
import operator
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from anyio.lowlevel import RunVar

from sdk.tokens import (
    DEFAULT_ENCODING,
    AsyncEncodingSpec,
    EncodingSpec,
    WorkerEncoder,
    checked_text,
    is_async_tokenizer,
    known_encodings,
)

from .._errors import BinaryFileError, UndecodableFileError
from . import _accel
from ._detect import decide
from ._engine import Engine, RawChunk, Sizer
from ._isolate import DEFAULT_LIMIT, WorkerConfig, chunk_isolated, worker_config
from ._kinds import KINDS, ROOTS
from ._prose import LEVELS, boundaries
from ._types import Chunk, ChunkKind, Section

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["BinaryFileError", "Chunker", "FileChunks", "UndecodableFileError", "chunk"]

# achunk's engines run in threads of their own, at most this many per event loop. An
# engine waits in its thread for each count of an async tokenizer, and that count may
# itself need a thread of anyio's default pool (trio resolves host names in one; a
# tokenizer may encode in one): engines holding every default thread would deadlock.
_ENGINE_THREADS = 40
_engine_limiter: RunVar[anyio.CapacityLimiter] = RunVar("sdk_chunking_engine_threads")


def _engine_threads() -> anyio.CapacityLimiter:
    try:
        return _engine_limiter.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(_ENGINE_THREADS)
        _engine_limiter.set(limiter)
        return limiter


def _cancellable(sizer: Sizer) -> Sizer:
    """A copy of ``sizer`` that looks for its caller's cancellation before each encode.

    ``achunk`` runs the engine in a worker thread: with a local encoding, cancelling it
    ended nothing until the whole text was chunked (20 MB took a second past a 0.2 s
    deadline). The engine encodes at most 64K characters at a time, and counts each
    chunk, so it stops within a few milliseconds of the cancellation.
    """
    out = copy.copy(sizer)
    encode, ids = sizer._encode, sizer._ids
    check = anyio.from_thread.check_cancelled

    def checked_encode(text: str) -> list[int]:
        check()
        return encode(text)

    def checked_ids(text: str) -> Sequence[int] | Buffer:
        check()
        return ids(text)

    out._encode, out._ids = checked_encode, checked_ids
    return out


def _check_kind(kind: object) -> None:
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, got {type(kind).__name__}")
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")


def _check_optional_str(value: object, name: str) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")


# No text has anywhere near this many tokens: a larger budget would mean the same.
_MAX_BUDGET = 1 << 62


class Chunker:
    """Reusable chunker: loads the encoding once.

    ``encoding`` is a tiktoken name, a ``tokenizers.Tokenizer`` (counted without
    special tokens), a path to a ``tokenizer.json``, or any object with
    ``encode(str) -> Sequence[int]``; every reported count is exact in it. An async
    tokenizer (:class:`sdk.ServerTokenizer`: the server's own counts) is taken too, and
    then chunking is awaited: ``await chunker.achunk(text)``.

    ``max_tokens`` is the budget of every chunk, overlap included. ``overlap`` tokens
    of the previous chunk's tail (cut at a word or grapheme boundary) are carried at
    the front of each chunk after the first; chunks are then packed to
    ``max_tokens - overlap`` so the carried text always fits.

    ``Chunk.oversize`` is measured against ``max_tokens``, never against the packing
    budget: it is True exactly when a chunk holds more than ``max_tokens`` tokens, which
    only a single indivisible unit does. A unit that fits ``max_tokens`` but not
    ``max_tokens - overlap`` is a chunk of its own that carries less overlap, or none;
    it is not oversize. Likewise a heading trail is left off a unit it would push over.

    ``isolate``: chunk text that may be parsed with a grammar (kind ``code`` or
    ``markdown``, or ``auto`` deciding either) in a worker process whose address space
    may grow by at most that many bytes (``True``: 2 GiB). A parse that goes past it, or
    a worker that dies, costs that text its grammar: it is chunked with prose rules, with
    a :class:`ChunkingWarning`; the calling process never holds the parse (see
    :mod:`sdk.chunking._isolate`). The encoding must pickle. ``None`` (the default):
    :meth:`chunk_many` isolates (files are the input most likely to be hostile, and with
    two threads or more it is faster so), where the encoding pickles; :meth:`chunk` and
    :meth:`chunk_file` do not. ``False``: never.
    """

    __slots__ = (
        "_many_limit",
        "_worker_config",
        "encoding",
        "isolate",
        "kind",
        "language",
        "max_tokens",
        "overlap",
        "sizer",
    )

    def __init__(
        self,
        max_tokens: int = 512,
        *,
        encoding: AsyncEncodingSpec = DEFAULT_ENCODING,
        overlap: int = 0,
        kind: ChunkKind = "auto",
        language: str | None = None,
        isolate: bool | int | None = None,
    ) -> None:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise TypeError("max_tokens must be an int")
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        if max_tokens > _MAX_BUDGET:
            # (The native passes count in 64-bit integers, where a larger budget raised
            # OverflowError from inside the engine.)
            raise ValueError(f"max_tokens must be at most 2**62, got {max_tokens}")
        if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 0:
            raise ValueError(f"overlap must be a non-negative int, got {overlap!r}")
        if overlap >= max_tokens:
            raise ValueError(f"overlap ({overlap}) must be smaller than max_tokens ({max_tokens})")
        _check_kind(kind)
        _check_optional_str(language, "language")
        self.max_tokens = max_tokens
        self.overlap = overlap
        self.encoding = encoding
        self.kind = kind
        self.language = language
        if isolate is not None and (
            not isinstance(isolate, (bool, int)) or (not isinstance(isolate, bool) and isolate < 1 << 20)
        ):
            raise ValueError(
                f"isolate must be None, a bool or a limit of at least 1 MiB in bytes, got {isolate!r}"
            )
        self.isolate = DEFAULT_LIMIT if isolate is True else int(isolate or 0)  # 0: in process
        # chunk_many's limit: the default where none was chosen (0: in process).
        self._many_limit = DEFAULT_LIMIT if isolate is None else self.isolate
        self._worker_config: WorkerConfig | None = None  # made at the first isolated call
        # An async tokenizer is reached from a worker thread, one bridge per call.
        self.sizer: Sizer | None = None if is_async_tokenizer(encoding) else Sizer(encoding)  # type: ignore[arg-type]

    def _sync_sizer(self) -> Sizer:
        """The sizer the synchronous calls count with (none for an async tokenizer)."""
        if self.sizer is None:
            raise TypeError("this Chunker counts with an async tokenizer: use 'await chunker.achunk(text)'")
        return self.sizer

    def chunk(
        self,
        text: str,
        *,
        kind: ChunkKind | None = None,
        language: str | None = None,
        filename: str | os.PathLike[str] | None = None,
        heading_context: bool = False,
    ) -> list[Chunk]:
        """Chunk ``text``; see :func:`chunk` for the arguments."""
        return self._chunk(self._sync_sizer(), text, kind, language, filename, heading_context, self.isolate)

    async def achunk(
        self,
        text: str,
        *,
        kind: ChunkKind | None = None,
        language: str | None = None,
        filename: str | os.PathLike[str] | None = None,
        heading_context: bool = False,
    ) -> list[Chunk]:
        """:meth:`chunk`, awaited: the work runs in a worker thread, so the event loop
        goes on. With an async tokenizer (:class:`sdk.ServerTokenizer`) every count the
        chunks report comes from it; cancelling the call cancels its pending request and
        ends the work. Several ``achunk`` calls may run side by side (a task group, or
        :meth:`achunk_many`), their requests sharing the tokenizer's concurrency."""
        sizer = self.sizer
        if sizer is None:
            tok = self.encoding
            sizer = Sizer(WorkerEncoder(tok, getattr(tok, "name", None) or type(tok).__name__))  # type: ignore[arg-type]
        else:
            sizer = _cancellable(sizer)
        return await anyio.to_thread.run_sync(
            functools.partial(
                self._chunk, sizer, text, kind, language, filename, heading_context, self.isolate
            ),
            limiter=_engine_threads(),
        )

    async def achunk_many(
        self, texts: Iterable[str], *, kind: ChunkKind | None = None, concurrency: int = 4
    ) -> list[list[Chunk]]:
        """Chunk each text (``concurrency`` at once, each in a worker thread), in order."""
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
        items = [checked_text(t, "achunk_many()") for t in texts]  # (not an ExceptionGroup later)
        out: list[list[Chunk]] = [[] for _ in items]
        limiter = anyio.CapacityLimiter(concurrency)

        async def one(i: int, text: str) -> None:
            async with limiter:
                out[i] = await self.achunk(text, kind=kind)

        async with anyio.create_task_group() as tg:
            for i, text in enumerate(items):
                tg.start_soon(one, i, text)
        return out

    def _chunk(
        self,
        sizer: Sizer,
        text: str,
        kind: str | None,
        language: str | None,
        filename: str | os.PathLike[str] | None,
        heading_context: bool,
        isolate: int,
    ) -> list[Chunk]:
        text = checked_text(text, "chunk()")
        kind = self.kind if kind is None else kind
        _check_kind(kind)
        _check_optional_str(language, "language")
        if filename is not None:
            if isinstance(filename, os.PathLike):
                filename = os.fspath(filename)
            _check_optional_str(filename, "filename")
        if heading_context and self.overlap:
            raise ValueError("heading_context and overlap cannot be combined")
        if not text:
            return []
        language = language if language is not None else self.language
        if isolate and _may_parse(text, kind, language, filename):
            if self._worker_config is None:
                self._worker_config = worker_config(self.max_tokens, self.encoding, self.overlap)
            chunks = chunk_isolated(
                self._worker_config, isolate, text, kind, language, filename, heading_context
            )
            if chunks is not None:
                return chunks
            kind = "text"  # (the worker said why)
        try:
            root = self._root(text, kind, language, filename)
            if heading_context and root.kind == "markdown":
                return self._with_heading_context(sizer, text, root)
            raw = Engine(text, self.max_tokens - self.overlap, sizer).run(root)
            del root  # (its parse and items go before the chunks are made)
        finally:
            _accel.forget()  # (the text's code units, kept for the kernels during the call)
        chunks = _finish(text, raw, self.max_tokens, consume=True)
        if self.overlap:
            chunks = self._with_overlap(sizer, text, chunks)
        return chunks

    def _with_heading_context(self, sizer: Sizer, text: str, root: Section) -> list[Chunk]:
        """Prefix each chunk with its heading trail, counted inside the budget.

        The source parts are packed to a budget lowered by what the longest trail
        needs; if a prefixed chunk still comes out over (counts need not add up
        across the join), the budget is lowered by the excess and packing redone.
        An indivisible unit the trail would push over ``max_tokens`` goes without it,
        and so does a chunk whose trail would need more than half of ``max_tokens``
        (a heading of a hundred words at budget 64 raised ValueError for the whole
        document): the budget is lowered by half at most.
        """
        reserve = 0
        most = self.max_tokens // 2
        # Each round lowers the budget by at least one token; a unit that only a
        # sentence-level cut can shorten may take several (seen with small BPE vocabularies).
        for attempt in range(16):
            last = reserve >= most or attempt == 15  # trails that do not fit now are left off
            budget = self.max_tokens - min(reserve, most)
            out: list[Chunk] = []
            excess = 0
            raw = Engine(text, budget, sizer).run(root)
            for r, c in zip(raw, _finish(text, raw, self.max_tokens)):
                context = f"{c.path}\n\n" if c.path else ""
                if not context:
                    out.append(c)
                    continue
                n = sizer.count(context + c.text)
                if n > self.max_tokens:
                    if r.oversize or last:
                        # An indivisible unit over the lowered budget, or a trail too
                        # long for any budget left: the trail is left off.
                        out.append(c)
                        continue
                    excess = max(excess, n - self.max_tokens)
                out.append(
                    dataclasses.replace(
                        c, text=context + c.text, tokens=n, context=context, oversize=n > self.max_tokens
                    )
                )
            if not excess:
                return out
            reserve += excess
        raise AssertionError("unreachable: the last round leaves every trail that does not fit off")

    def chunk_file(
        self, path: str | os.PathLike[str], *, kind: ChunkKind | None = None, errors: str = "strict"
    ) -> list[Chunk]:
        """Chunk a UTF-8 file; its name is the language hint.

        A binary file (a NUL byte in its first 8 KiB) is :class:`BinaryFileError`; text
        that is not UTF-8 is :class:`UndecodableFileError` naming the byte offset, unless
        ``errors="replace"``, which chunks it with U+FFFD for each bad byte (offsets are
        then those of the decoded text)."""
        if errors not in ("strict", "replace"):
            raise ValueError("errors must be 'strict' or 'replace'")
        return self._chunk_file(self._sync_sizer(), path, kind, errors, self.isolate)

    def _chunk_file(
        self, sizer: Sizer, path: str | os.PathLike[str], kind: ChunkKind | None, errors: str, isolate: int
    ) -> list[Chunk]:
        with open(path, "rb") as f:
            raw = f.read()
        name = os.fspath(path)
        if b"\x00" in raw[:8192]:
            raise BinaryFileError(f"{name}: a binary file (a NUL byte in its first 8 KiB)", path=name)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            if errors == "strict":
                raise UndecodableFileError(
                    f"{name}: not UTF-8 at byte {e.start} (pass errors='replace' to chunk it anyway)",
                    path=name,
                    offset=e.start,
                ) from None
            text = raw.decode("utf-8", "replace")
        if text.startswith("\ufeff"):
            text = text[1:]  # a byte order mark is not content
        return self._chunk(sizer, text, kind, None, name, False, isolate)

    def chunk_many(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        kind: ChunkKind | None = None,
        errors: str = "strict",
        workers: int = 1,
        on_progress: Callable[[FileChunks], None] | None = None,
    ) -> Iterator[FileChunks]:
        """Chunk many files, in input order: one :class:`FileChunks` per path, holding its
        chunks or the error that stopped it (a binary or undecodable file, an unreadable
        path), so one bad file never ends the run. ``workers`` threads read and chunk
        files side by side (tree-sitter and tiktoken release the GIL for their part);
        ``on_progress`` is called after each file, in input order.

        The arguments are checked when it is called, not when the first result is asked
        for (a bad ``errors`` mode had been every file's error)."""
        if isinstance(workers, bool) or not isinstance(workers, int):
            raise TypeError(f"workers must be an int, got {type(workers).__name__}")
        if workers < 1:
            raise ValueError("workers must be >= 1")
        if isinstance(paths, (str, bytes, os.PathLike)):
            # (A str is an iterable too: its characters were taken for paths.)
            raise TypeError("chunk_many takes an iterable of paths, not one path: use chunk_file")
        if errors not in ("strict", "replace"):
            raise ValueError("errors must be 'strict' or 'replace'")
        if kind is not None:
            _check_kind(kind)
        if on_progress is not None and not callable(on_progress):
            raise TypeError("on_progress must be callable or None")
        sizer = self._sync_sizer()
        limit = self._many_limit
        if limit and not self.isolate and self._worker_config is None:
            # (isolated by default: only where the encoding pickles, which it must)
            try:
                self._worker_config = worker_config(self.max_tokens, self.encoding, self.overlap)
            except TypeError:
                limit = 0
        return self._chunk_many(sizer, paths, kind, errors, workers, on_progress, limit)

    def _chunk_many(
        self,
        sizer: Sizer,
        paths: Iterable[str | os.PathLike[str]],
        kind: ChunkKind | None,
        errors: str,
        workers: int,
        on_progress: Callable[[FileChunks], None] | None,
        isolate: int,
    ) -> Iterator[FileChunks]:
        def one(path: str | os.PathLike[str]) -> FileChunks:
            try:
                name = os.fsdecode(path)
            except TypeError as e:  # not a path (an int, None): its entry says so
                return FileChunks(repr(path), [], e)
            try:
                return FileChunks(name, self._chunk_file(sizer, name, kind, errors, isolate), None)
            except (OSError, ValueError) as e:
                return FileChunks(name, [], e)

        if workers == 1:
            results: Iterator[FileChunks] = map(one, paths)
        else:
            pool = concurrent.futures.ThreadPoolExecutor(workers)
            results = _ordered(pool, one, paths, workers * 2)
        for r in results:
            if on_progress is not None:
                on_progress(r)
            yield r

    def _root(self, text: str, kind: str, language: str | None, filename: str | None) -> Section:
        return ROOTS[kind](text, language, filename)

    def _with_overlap(self, sizer: Sizer, text: str, chunks: list[Chunk]) -> list[Chunk]:
        out = [chunks[0]]
        for prev, cur in itertools.pairwise(chunks):
            start = _overlap_start(text, prev.start, cur, self.overlap, self.max_tokens, sizer)
            if start == cur.start:
                out.append(cur)
                continue
            carried = text[start : cur.end]
            tokens = sizer.count(carried)
            out.append(
                Chunk(
                    carried,
                    start,
                    cur.end,
                    tokens,
                    cur.kind,
                    cur.language,
                    cur.path,
                    # (An oversize unit can count less with the tail before it: " 👍🏽"
                    # is 5 tokens in cl100k_base, "👍🏽" 6.)
                    tokens > self.max_tokens,
                    prev.byte_start + len(text[prev.start : start].encode("utf-8")),
                    cur.byte_end,
                    cur.partial,
                )
            )
        return out


def _may_parse(text: str, kind: str, language: str | None, filename: str | None) -> bool:
    """Whether chunking ``text`` as ``kind`` may run a grammar's parser."""
    if kind == "auto":
        kind = decide(text, language, filename)[0]
    return kind in ("code", "markdown")


_WORD_LEVEL = next(i for i, (name, _) in enumerate(LEVELS) if name == "word")


def _overlap_start(text: str, lo: int, cur: Chunk, overlap: int, limit: int, sizer: Sizer) -> int:
    """Earliest cut in ``[lo, cur.start)`` whose tail fits the overlap and the budget."""
    # Candidate cuts: the first level from words down that has any inside the previous chunk.
    _, cuts = boundaries(text, lo, cur.start, _WORD_LEVEL)
    best = cur.start
    # Tails grow as the cut moves left; search the shortest prefix of cuts, right to left.
    left, right = 0, len(cuts)
    while left < right:
        mid = (left + right) // 2
        p = cuts[mid]
        if sizer.count(text[p : cur.start]) <= overlap and sizer.count(text[p : cur.end]) <= limit:
            best = p
            right = mid
        else:
            left = mid + 1
    return best


# A chunk's fields, all of them, in the class's order (a test checks).
_CHUNK_FIELDS = (
    "text",
    "start",
    "end",
    "tokens",
    "kind",
    "language",
    "path",
    "oversize",
    "byte_start",
    "byte_end",
    "partial",
    "context",
)


# Chunks are built a block at a time, a field at a time (``_build``): no Python frame
# per chunk or per field.
_T = TypeVar("_T")
_BLOCK = 1024  # chunks made at a time (with ``consume``, the raw chunks held beyond them)
# a section's fields a chunk takes (by index: a named tuple's field is a property)
_KIND, _LANGUAGE, _PATH = (
    operator.itemgetter(Section._fields.index(f)) for f in ("kind", "language", "path")
)


def _finish(text: str, raw: list[RawChunk], max_tokens: int, consume: bool = False) -> list[Chunk]:
    """Public chunks from the engine's; ``oversize`` against ``max_tokens``.

    The engine marks units over its own packing budget, which overlap and heading
    trails lower; a chunk is oversize only when it is over what the caller allowed.
    ``byte_start`` and ``byte_end`` are UTF-8 offsets, the chunks taken in order. With
    ``consume``, ``raw`` is emptied, its chunks let go a block at a time as their public
    chunks are made (at small budgets the chunks take several times the text: the peak
    holds one list of them, not both).
    """
    kernels = _accel.kernels if _accel.on("utf8_sizes") else None
    build = _accel.kernels.build if _accel.kernels is not None and _accel.on("build") else _build
    ascii_text = text.isascii()
    out: list[Chunk] = []
    byte = 0
    for block in _blocks(raw, consume):
        starts, ends, tokens, firsts, oversize, _, partial = zip(*block)
        texts = list(map(text.__getitem__, map(slice, starts, ends)))
        if ascii_text:
            sizes: Iterable[int] = map(operator.sub, ends, starts)
        elif kernels is not None:
            sizes = kernels.utf8_sizes(text, starts, ends)
        else:
            sizes = [len(t.encode("utf-8", "surrogatepass")) for t in texts]
        offsets = list(itertools.accumulate(sizes, initial=byte))
        byte = offsets[-1]
        n = len(block)
        if any(oversize):
            over: Sequence[bool] = list(
                map(operator.and_, oversize, map(operator.gt, tokens, itertools.repeat(max_tokens)))
            )
        else:
            over = oversize
        columns = (
            texts,
            starts,
            ends,
            tokens,
            list(map(_KIND, firsts)),
            list(map(_LANGUAGE, firsts)),
            list(map(_PATH, firsts)),
            over,
            offsets[:-1],
            offsets[1:],
            partial,
            ("",) * n,
        )
        out += build(Chunk, _CHUNK_FIELDS, columns, n)
    return out


def _build(cls: type[_T], names: tuple[str, ...], columns: tuple[Sequence[object], ...], n: int) -> list[_T]:
    """``n`` instances of ``cls`` made without its ``__init__``, field ``names[f]`` of
    instance k set to ``columns[f][k]`` as ``object.__setattr__`` sets it (the kernels'
    ``build`` does the same in C)."""
    out: list[_T] = list(map(object.__new__, itertools.repeat(cls, n)))
    for name, column in zip(names, columns, strict=True):
        collections.deque(map(getattr(cls, name).__set__, out, column), 0)
    return out


def _blocks(raw: list[RawChunk], consume: bool) -> Iterator[list[RawChunk]]:
    """``raw`` a block of ``_BLOCK`` at a time, in order; with ``consume`` it is emptied
    at once and each block let go once the next is asked for."""
    if not consume:
        for i in range(0, len(raw), _BLOCK):
            yield raw[i : i + _BLOCK]
        return
    pending = raw[::-1]
    raw.clear()
    while pending:
        block = pending[-_BLOCK:]
        del pending[-_BLOCK:]
        block.reverse()
        yield block


@dataclasses.dataclass(frozen=True, slots=True)
class FileChunks:
    """One file of :meth:`Chunker.chunk_many`: its chunks, or the error that stopped it."""

    path: str
    chunks: list[Chunk]
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _ordered(
    pool: concurrent.futures.ThreadPoolExecutor,
    fn: Callable[[str | os.PathLike[str]], FileChunks],
    paths: Iterable[str | os.PathLike[str]],
    window: int,
) -> Iterator[FileChunks]:
    """``map`` over a pool with at most ``window`` files in flight, results in order."""
    with pool:
        pending: list[concurrent.futures.Future[FileChunks]] = []
        for p in paths:
            pending.append(pool.submit(fn, p))
            if len(pending) >= window:
                yield pending.pop(0).result()
        for f in pending:
            yield f.result()


@functools.lru_cache(maxsize=32)
def _cached(max_tokens: int, encoding: str, overlap: int) -> Chunker:
    return Chunker(max_tokens, encoding=encoding, overlap=overlap)


def _chunker(max_tokens: int, encoding: EncodingSpec, overlap: int) -> Chunker:
    # Only tiktoken names are cached here: a tokenizer object may be unhashable or
    # changed by its owner, and a tokenizer.json is cached by path and mtime below us.
    if isinstance(encoding, str) and encoding in known_encodings():
        return _cached(max_tokens, encoding, overlap)
    return Chunker(max_tokens, encoding=encoding, overlap=overlap)


def chunk(
    text: str,
    max_tokens: int = 512,
    kind: ChunkKind = "auto",
    language: str | None = None,
    encoding: EncodingSpec = DEFAULT_ENCODING,
    overlap: int = 0,
    *,
    filename: str | os.PathLike[str] | None = None,
    heading_context: bool = False,
) -> list[Chunk]:
    """Cut ``text`` at safe seams into chunks of at most ``max_tokens`` tokens.

    ``kind``: "auto" (decide from ``language``, ``filename`` and content), "text",
    "markdown", "code", "json" or "jsonl". ``language``: a code language or alias.
    ``overlap``: tokens of the previous chunk carried at the front of the next.
    ``encoding``: a tiktoken name, a ``tokenizers.Tokenizer``, a path to a
    ``tokenizer.json``, or an object with ``encode(str) -> Sequence[int]``.
    ``heading_context``: for Markdown, prefix each chunk with its heading trail (in
    ``Chunk.context``; ``text == context + text[start:end]``), counted in the budget.
    """
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise TypeError("max_tokens must be an int")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    return _chunker(max_tokens, encoding, overlap).chunk(
        text, kind=kind, language=language, filename=filename, heading_context=heading_context
    )
