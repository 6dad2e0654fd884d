"""Bulk work: many requests through the client's scheduler, one result each.

``async with client.map(requests, priority="batch") as results: async for r in results``.
Each request (a mapping of what :meth:`~sdk.Client.stream` takes) runs as a stream of the
map's tier, so on a self-hosted server a higher tier can preempt it and it resumes where
it stopped. A failure is a :class:`MapResult` with ``error`` set, never the end of the
map; the client's retry and resume policies apply to each request.

Memory stays bounded however long the input: requests are read lazily (any iterable or
async iterable), at most ``concurrency`` are in flight, and at most ``window`` results
are started but not yet handed out (with ``ordered=True`` a slow early request holds
back the later ones, not the memory).

``checkpoint=path`` appends each successful result to a JSON Lines file (one line per
result: index, a hash of the request, the message); a map started again with the same
file hands those results back (``from_checkpoint``) without sending them, so a crashed
map continues where it stopped. A request whose hash differs is sent again, and a torn
last line (a crash mid-write) is ignored.

The checkpoint is not trusted to be small or even a file. It is opened once, without
following a symbolic link at its path (``O_NOFOLLOW``: a link planted there would have
results appended wherever it points) and only if it is a regular file (a FIFO would
block the map forever); either refusal is a :class:`CheckpointError`. It is read in
blocks, each line parsed alone, and only where each result's line lies is kept: a
result's message is read back when its request comes up, so memory stays at about one
line however long the file. A line is at most ``MAX_LINE_BYTES``: a longer one was not
written here (a result whose line would be longer is not checkpointed, and counted in
``checkpoint_errors``), so it is a :class:`CheckpointError` naming its offset, not a
line to skip in silence.

The map owns tasks, so it is an async context manager: leaving the block early cancels
what is still queued or running.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import stat
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio
import orjson
from anyio.abc import TaskGroup

from .._errors import CheckpointError
from ..scheduler import RequestMetrics, Tier
from ..stream import Message
from ..stream._accumulate import message_to_wire
from ._backends import MessagesBackend

if TYPE_CHECKING:
    from ._client import Client
    from ._stream import Stream

__all__ = ["MapDone", "MapFailed", "MapProgress", "MapResult", "MapRun"]

log = logging.getLogger("sdk")

MAX_LINE_BYTES = 16 << 20  # one checkpoint line: a result's message, with room to spare
_BLOCK = 1 << 20  # the checkpoint is read this much at a time
_THREAD_LINE = 1 << 20  # a saved line this long is read back and parsed off the event loop


@dataclass(frozen=True, slots=True)
class _Saved:
    """Where a checkpointed result's line lies in the file (read back when needed)."""

    key: str
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class MapDone:
    """A request that got its answer: ``message``. ``index``: its place in the input."""

    index: int
    message: Message
    _: KW_ONLY
    from_checkpoint: bool = False
    metrics: RequestMetrics | None = None

    @property
    def ok(self) -> Literal[True]:
        """Always true: ``if r.ok:`` narrows a :data:`MapResult` to this class."""
        return True

    @property
    def error(self) -> None:
        """Always ``None`` (a failure is a :class:`MapFailed`)."""
        return None


@dataclass(frozen=True, slots=True)
class MapFailed:
    """A request that failed: ``error``. ``index``: its place in the input."""

    index: int
    error: Exception
    _: KW_ONLY
    from_checkpoint: bool = False
    metrics: RequestMetrics | None = None

    @property
    def ok(self) -> Literal[False]:
        """Always false: ``if not r.ok:`` narrows a :data:`MapResult` to this class."""
        return False

    @property
    def message(self) -> None:
        """Always ``None`` (an answer is a :class:`MapDone`)."""
        return None


MapResult: TypeAlias = MapDone | MapFailed
"""One request's outcome in a map: ``r.ok`` (or ``isinstance``) tells which, and narrows
the type, so ``r.message`` is a :class:`~sdk.Message` where ``r.ok`` holds."""


@dataclass(frozen=True, slots=True)
class MapProgress:
    """``read``: requests taken from the input; ``done``: results produced (``failed``
    and ``from_checkpoint`` among them); ``running``: queued or streaming now;
    ``total``: the input's length when it has one."""

    read: int
    done: int
    failed: int
    from_checkpoint: int
    running: int
    total: int | None


def request_key(request: Mapping[str, Any]) -> str:
    """A stable hash of a request (keys sorted), to match checkpoint lines to requests."""
    raw = orjson.dumps(request, option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(raw).hexdigest()[:32]


def _metrics_of(s: Stream | None) -> RequestMetrics | None:
    try:
        return s.metrics() if s is not None else None
    except RuntimeError:  # never entered (refused before it was sent)
        return None


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _open_checkpoint(path: Path) -> int:
    """The checkpoint opened for reading and appending (created if missing), or a
    :class:`CheckpointError`. Non-blocking while it is opened and checked, so a FIFO
    is refused instead of waiting for a writer."""
    flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK
    flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise CheckpointError(
                path, "is a symbolic link, which is not followed; name the file itself"
            ) from None
        if e.errno == errno.EISDIR:
            raise CheckpointError(path, "is a directory, not a regular file") from None
        raise CheckpointError(path, f"cannot be opened: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise CheckpointError(path, f"is {_kind(mode)}, not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _index_checkpoint(
    fd: int, path: Path, max_line: int, batches: list[dict[str, Any]] | None = None
) -> dict[int, _Saved]:
    """Where each result's line lies, by request index (a later line for an index wins),
    read ``_BLOCK`` bytes at a time: memory is one block and one line, whatever the
    file's size. A line that is not a result (torn by a crash, damaged) is skipped; a
    batch's line (``{"batch": id, ...}``, :mod:`._batches`) goes to ``batches``."""
    done: dict[int, _Saved] = {}
    buf = bytearray()
    base = 0  # the file offset of buf[0]

    def take(start: int, end: int) -> None:
        try:
            rec = orjson.loads(memoryview(buf)[start:end])
        except orjson.JSONDecodeError:
            return  # a line torn by a crash
        if not isinstance(rec, dict):
            return
        if batches is not None and isinstance(rec.get("batch"), str):
            batches.append(rec)
            return
        i, key, msg = rec.get("index"), rec.get("key"), rec.get("message")
        if isinstance(i, int) and isinstance(key, str) and isinstance(msg, dict):
            done[i] = _Saved(key, base + start, end - start)

    while True:
        try:
            block = os.pread(fd, _BLOCK, base + len(buf))
        except OSError as e:
            raise CheckpointError(path, f"cannot be read: {e.strerror or e}") from None
        if block:
            buf += block
        start = 0
        while (nl := buf.find(b"\n", start)) >= 0 and nl - start <= max_line:
            take(start, nl)
            start = nl + 1
        if (nl if nl >= 0 else len(buf)) - start > max_line:  # a whole line, or its start
            raise CheckpointError(
                path,
                f"the line at byte {base + start} is over {max_line} bytes; "
                "it is no result this map wrote (a damaged file, or not a checkpoint)",
            )
        del buf[:start]
        base += start
        if not block:
            break
    if buf:
        take(0, len(buf))  # a last line without its newline: whole, or torn (then skipped)
    return done


def _read_saved(fd: int, saved: _Saved) -> Message | None:
    """A checkpointed result's message, or ``None`` where its line no longer reads as
    one (the file was changed since): the request is then sent again."""
    try:
        line = os.pread(fd, saved.length, saved.offset)
        rec = orjson.loads(line)
        return MessagesBackend().message(rec["message"])
    except Exception:
        return None


class MapRun:
    """See the module doc; made by :meth:`sdk.Client.map`."""

    def __init__(
        self,
        client: Client,
        requests: Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]],
        *,
        priority: str | int | Tier | None = "batch",
        tenant: str | None = None,
        ordered: bool = True,
        concurrency: int = 32,
        window: int | None = None,
        on_progress: Callable[[MapProgress], None] | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        window = 4 * concurrency if window is None else window
        if window < concurrency:
            raise ValueError("window must be >= concurrency")
        client.scheduler.tiers.resolve(priority)  # an unknown tier fails here, not per item
        self._client = client
        self._requests = requests
        self.priority = priority
        self.tenant = tenant
        self.ordered = ordered
        self.concurrency = concurrency
        self.window = window
        self.on_progress = on_progress
        self.checkpoint = Path(checkpoint) if checkpoint is not None else None
        try:
            self._total: int | None = len(requests)  # type: ignore[arg-type]
        except TypeError:
            self._total = None
        self._tg: TaskGroup | None = None
        self._changed: anyio.Event  # made on entry, inside the event loop
        self._ready: dict[int, MapResult] = {}  # ordered: finished, waiting for their turn
        self._queue: deque[MapResult] = deque()  # unordered: finished, in finishing order
        self._next = 0  # ordered: the index to hand out next
        self._handed = 0
        self._read = 0
        self._running = 0
        self._done = 0
        self._failed = 0
        self._restored = 0
        self._exhausted = False
        self._source_error: BaseException | None = None
        self._saved: dict[int, _Saved] = {}
        self._fd: int | None = None
        self.max_line_bytes = MAX_LINE_BYTES
        self.checkpoint_errors = 0  # results that could not be written to the checkpoint
        self._batch_lines: list[dict[str, Any]] | None = None  # a batch map's: its batches' lines

    def progress(self) -> MapProgress:
        return MapProgress(self._read, self._done, self._failed, self._restored, self._running, self._total)

    async def __aenter__(self) -> MapRun:
        if self._tg is not None:
            raise RuntimeError("a map runs once")
        self._changed = anyio.Event()
        if self.checkpoint is not None:
            self._fd, self._saved = await anyio.to_thread.run_sync(self._open_checkpoint, self.checkpoint)
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._produce)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        tg = self._tg
        try:
            if tg is None:
                return None
            tg.cancel_scope.cancel()  # whatever is still queued or running
            if isinstance(exc, Exception):
                # The map's tasks never raise, so the caller's own error propagates unwrapped.
                await tg.__aexit__(None, None, None)
                return None
            return await tg.__aexit__(exc_type, exc, tb)
        finally:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _open_checkpoint(self, path: Path) -> tuple[int, dict[int, _Saved]]:
        fd = _open_checkpoint(path)
        try:
            saved = _index_checkpoint(fd, path, self.max_line_bytes, self._batch_lines)
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                os.write(fd, b"\n")  # end a line torn by a crash before appending
        except OSError as e:
            os.close(fd)
            if isinstance(e, CheckpointError):
                raise
            raise CheckpointError(path, f"cannot be read or written: {e.strerror or e}") from None
        return fd, saved

    def __aiter__(self) -> AsyncIterator[MapResult]:
        if self._tg is None:
            raise TypeError("use `async with client.map(...) as results: async for r in results`")
        return self

    async def __anext__(self) -> MapResult:
        while True:
            r: MapResult | None = None
            if self.ordered:
                r = self._ready.pop(self._next, None)
                if r is not None:
                    self._next += 1
            elif self._queue:
                r = self._queue.popleft()
            if r is not None:
                self._handed += 1
                self._signal()
                return r
            if self._exhausted and self._running == 0 and self._handed == self._read:
                if self._source_error is not None:
                    err, self._source_error = self._source_error, None
                    raise err
                raise StopAsyncIteration
            await self._changed.wait()

    def _signal(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _inputs(self) -> AsyncIterator[Mapping[str, Any]]:
        src = self._requests
        if isinstance(src, AsyncIterable):
            async for r in src:
                yield r
        else:
            for r in src:
                yield r

    async def _produce(self) -> None:
        tg = self._tg
        assert tg is not None
        index = 0
        try:
            async for req in self._inputs():
                while self._running >= self.concurrency or index - self._handed >= self.window:
                    await self._changed.wait()
                self._read += 1
                key = self._key(index, req)
                if key is None or await self._restore(index, key):
                    index += 1
                    continue
                self._running += 1
                tg.start_soon(self._work, index, req, key)
                index += 1
        except Exception as e:  # the caller's iterable failed: finish what runs, then raise it
            self._source_error = e
        finally:
            self._exhausted = True
            self._signal()

    def _key(self, index: int, req: object) -> str | None:
        """The request's checkpoint key; ``None`` (and its failure delivered) where it is
        not a mapping or not JSON (a non-string key, a huge int)."""
        if not isinstance(req, Mapping):
            self._deliver(MapFailed(index, TypeError(f"request {index} is not a mapping")))
            return None
        try:
            return request_key(req)
        except (TypeError, ValueError) as e:
            self._deliver(MapFailed(index, TypeError(f"request {index} is not JSON: {e}")))
            return None

    async def _restore(self, index: int, key: str) -> bool:
        """Hand back the checkpointed answer of request ``index``, if the checkpoint holds
        one for this request (a damaged line: it is sent again)."""
        saved = self._saved.pop(index, None)
        if saved is None or saved.key != key or self._fd is None:
            return False
        if saved.length < _THREAD_LINE:
            msg = _read_saved(self._fd, saved)
        else:
            msg = await anyio.to_thread.run_sync(_read_saved, self._fd, saved)
        if msg is None:
            return False
        self._restored += 1
        self._deliver(MapDone(index, msg, from_checkpoint=True))
        return True

    async def _work(self, index: int, req: Mapping[str, Any], key: str) -> None:
        kw: dict[str, Any] = {"priority": self.priority, "tenant": self.tenant, **req}
        s: Stream | None = None
        try:
            s = self._client.stream(**kw)
            async with s:
                msg = await s.final_message()
        except Exception as e:  # one request's failure is its result, not the map's end
            self._running -= 1
            self._deliver(MapFailed(index, e, metrics=_metrics_of(s)))
            return
        self._running -= 1
        self._save(index, key, msg)
        self._deliver(MapDone(index, msg, metrics=_metrics_of(s)))

    def _save(self, index: int, key: str, msg: Message) -> None:
        if self._fd is None:
            return
        self._write_line({"index": index, "key": key, "message": message_to_wire(msg)}, f"request {index}")

    def _write_line(self, record: Mapping[str, Any], what: str) -> bool:
        """Append one line to the checkpoint; False where it could not be (counted)."""
        if self._fd is None:
            return False
        line = orjson.dumps(record, default=str)
        if len(line) > self.max_line_bytes:  # it could not be read back: it is not kept
            self.checkpoint_errors += 1
            log.warning("%s: its line is over %d bytes, not checkpointed", what, self.max_line_bytes)
            return False
        try:
            os.write(self._fd, line + b"\n")  # one append per line: a crash tears at most the last
        except OSError as e:  # a full disk: the result still counts, it is just not kept
            self.checkpoint_errors += 1
            log.warning("checkpoint write failed for %s: %s", what, e)
            return False
        return True

    def _deliver(self, r: MapResult) -> None:
        self._done += 1
        if r.error is not None:
            self._failed += 1
        if self.ordered:
            self._ready[r.index] = r
        else:
            self._queue.append(r)
        self._signal()
        hook = self.on_progress
        if hook is not None:
            try:
                hook(self.progress())
            except Exception:  # a progress display must not break the map
                log.exception("the on_progress hook raised")
