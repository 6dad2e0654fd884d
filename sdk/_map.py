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

The map owns tasks, so it is an async context manager: leaving the block early cancels
what is still queued or running.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import orjson
from anyio.abc import TaskGroup

from ._backends import MessagesBackend
from .scheduler import RequestMetrics, Tier
from .stream import Message
from .stream._accumulate import message_to_wire

if TYPE_CHECKING:
    from ._client import Client, Stream

__all__ = ["MapProgress", "MapResult", "MapRun"]

log = logging.getLogger("sdk")


@dataclass(frozen=True, slots=True)
class MapResult:
    """One request's outcome: ``message`` or ``error``. ``index``: its place in the input."""

    index: int
    message: Message | None = None
    _: KW_ONLY
    error: Exception | None = None
    from_checkpoint: bool = False
    metrics: RequestMetrics | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


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


def _load_checkpoint(path: Path) -> dict[int, tuple[str, Mapping[str, Any]]]:
    done: dict[int, tuple[str, Mapping[str, Any]]] = {}
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return done
    for line in data.splitlines():
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a line torn by a crash
        if not isinstance(rec, dict):
            continue
        i, key, msg = rec.get("index"), rec.get("key"), rec.get("message")
        if isinstance(i, int) and isinstance(key, str) and isinstance(msg, dict):
            done[i] = (key, msg)
    return done


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
        self._saved: dict[int, tuple[str, Mapping[str, Any]]] = {}
        self._fd: int | None = None
        self.checkpoint_errors = 0  # results that could not be written to the checkpoint

    def progress(self) -> MapProgress:
        return MapProgress(self._read, self._done, self._failed, self._restored, self._running, self._total)

    async def __aenter__(self) -> MapRun:
        if self._tg is not None:
            raise RuntimeError("a map runs once")
        self._changed = anyio.Event()
        if self.checkpoint is not None:
            path = self.checkpoint
            self._saved = await anyio.to_thread.run_sync(_load_checkpoint, path)
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            size = os.fstat(self._fd).st_size
            if size and os.pread(self._fd, 1, size - 1) != b"\n":
                os.write(self._fd, b"\n")  # end a line torn by a crash before appending
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
                if not isinstance(req, Mapping):
                    self._deliver(MapResult(index, error=TypeError(f"request {index} is not a mapping")))
                    index += 1
                    continue
                try:
                    key = request_key(req)
                except (TypeError, ValueError) as e:  # not JSON (a non-string key, a huge int)
                    self._deliver(MapResult(index, error=TypeError(f"request {index} is not JSON: {e}")))
                    index += 1
                    continue
                saved = self._saved.pop(index, None)
                if saved is not None and saved[0] == key:
                    try:
                        msg = MessagesBackend().message(saved[1])
                    except Exception:
                        msg = None  # a damaged line: send the request again
                    if msg is not None:
                        self._restored += 1
                        self._deliver(MapResult(index, msg, from_checkpoint=True))
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

    async def _work(self, index: int, req: Mapping[str, Any], key: str) -> None:
        kw: dict[str, Any] = {"priority": self.priority, "tenant": self.tenant, **req}
        s: Stream | None = None
        try:
            s = self._client.stream(**kw)
            async with s:
                msg = await s.final_message()
        except Exception as e:  # one request's failure is its result, not the map's end
            self._running -= 1
            self._deliver(MapResult(index, error=e, metrics=_metrics_of(s)))
            return
        self._running -= 1
        self._save(index, key, msg)
        self._deliver(MapResult(index, msg, metrics=_metrics_of(s)))

    def _save(self, index: int, key: str, msg: Message) -> None:
        if self._fd is None:
            return
        line = orjson.dumps({"index": index, "key": key, "message": message_to_wire(msg)}, default=str)
        try:
            os.write(self._fd, line + b"\n")  # one append per line: a crash tears at most the last
        except OSError as e:  # a full disk: the result still counts, it is just not kept
            self.checkpoint_errors += 1
            log.warning("checkpoint write failed for request %d: %s", index, e)

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
