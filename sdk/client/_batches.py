"""Bulk work at batch prices: ``client.map(requests, via="batches")``.

The requests go to the Messages API's message batches (``POST /v1/messages/batches``:
half the price of the same requests sent one by one, answered within 24 hours), or on
an OpenAI-compatible client to ``/v1/batches`` (:mod:`._batchwire` has both), instead
of one stream each, and come back as the same :data:`~sdk.MapResult` values, in input
order or, with ``ordered=False``, as each batch ends:

- the input is read lazily and cut into batches of at most ``batch_size`` requests
  (the API's limit by default: 100,000, or OpenAI's 50,000) and ``batch_bytes`` of
  JSON (256 MB; 200 MB);
- each batch is polled with a growing interval
  (:class:`BatchPolling`) until it has ended, then its results are read as JSON Lines,
  a line at a time: a succeeded request is a :class:`~sdk.MapDone`, an errored one a
  :class:`~sdk.MapFailed` with the typed API error, a canceled or expired one a
  :class:`~sdk.MapFailed` with a :class:`~sdk.BatchResultError`, as is a request the
  results do not mention;
- with ``checkpoint=``, each batch is recorded as soon as it is created (its id, its
  requests' indexes and a digest of the requests), and each answer as it arrives: a map
  started again after a crash hands back the saved answers, follows the recorded
  batches whose requests are unchanged instead of sending them again, and sends only
  what no batch holds;
- leaving the map before it is done (``break``, an error, a cancellation) cancels the
  batches still running, and records that, so a map started again sends their requests
  afresh.

The batches' ids and paths are the server's words: an id that is not a plain token is
refused (it would be put into a URL), and results are read from this client's base URL,
never from a ``results_url`` the server names (the key would go wherever it points).

A request is a mapping of :meth:`~sdk.Client.create`'s keywords (``extra_body`` merged
in); ``priority`` and ``tenant`` are not sent (a batch has no tier), and anything else a
stream takes is refused, as a result of its own.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import AsyncIterable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio

from .._errors import BatchResultError, InvalidRequestError
from ._batchwire import BATCH_ID, wire_for
from ._map import MapDone, MapFailed, MapRun
from ._params import merged_request

if TYPE_CHECKING:
    import os
    from collections.abc import Callable

    from ._client import Client
    from ._map import MapProgress

__all__ = ["BATCH_MAX_BYTES", "BATCH_MAX_REQUESTS", "BatchMapRun", "BatchPolling"]

log = logging.getLogger("sdk")

BATCH_MAX_REQUESTS = 100_000  # the Messages API's limits per batch
BATCH_MAX_BYTES = 256_000_000
_CUSTOM = re.compile(r"i(0|[1-9][0-9]{0,17})")  # this map's custom ids: "i" and the index
_ENVELOPE = 64  # bytes of a batch body around each request's params
_SKIP = frozenset({"priority", "tenant"})


@dataclass(frozen=True, slots=True)
class BatchPolling:
    """How often a running batch is asked about: once it is made, then ``first``
    seconds later, then after each wait ``factor`` times the last, at most ``maximum``."""

    first: float = 5.0
    maximum: float = 60.0
    factor: float = 1.5

    def __post_init__(self) -> None:
        if not (0 < self.first <= self.maximum) or self.factor < 1:
            raise ValueError("BatchPolling needs 0 < first <= maximum and factor >= 1")


def _digest(keys: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:32]


@dataclass(slots=True)
class _Group:
    """Requests gathered for one batch: their indexes, keys and bodies (JSON)."""

    indexes: list[int] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    size: int = 2

    def add(self, index: int, key: str, body: bytes) -> None:
        self.indexes.append(index)
        self.keys.append(key)
        self.bodies.append(body)
        self.size += len(body) + _ENVELOPE


@dataclass(slots=True)
class _Recorded:
    """A batch the checkpoint names, while the requests it holds are read again."""

    id: str
    indexes: frozenset[int]
    digest: str
    keys: dict[int, str] = field(default_factory=dict)
    bodies: dict[int, bytes] = field(default_factory=dict)  # those not restored from the checkpoint


class BatchMapRun(MapRun):
    """See the module doc; made by :meth:`sdk.Client.map` with ``via="batches"``."""

    def __init__(
        self,
        client: Client,
        requests: Iterable[Mapping[str, Any]] | AsyncIterable[Mapping[str, Any]],
        *,
        ordered: bool = True,
        on_progress: Callable[[MapProgress], None] | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
        batch_size: int = BATCH_MAX_REQUESTS,
        batch_bytes: int = BATCH_MAX_BYTES,
        polling: BatchPolling | None = None,
    ) -> None:
        super().__init__(client, requests, ordered=ordered, on_progress=on_progress, checkpoint=checkpoint)
        self._wire = wire = wire_for(client)
        batch_size = min(batch_size, wire.max_requests) if batch_size == BATCH_MAX_REQUESTS else batch_size
        batch_bytes = min(batch_bytes, wire.max_bytes)
        if not 1 <= batch_size <= wire.max_requests:
            raise ValueError(f"batch_size must be within 1..{wire.max_requests}")
        if batch_bytes < 1024:
            raise ValueError("batch_bytes must be at least 1024")
        self.batch_size = batch_size
        self.batch_bytes = batch_bytes
        self.polling = polling or BatchPolling()
        self._batch_lines = []  # the checkpoint's batch lines are collected on entry
        self._open: dict[str, dict[int, str]] = {}  # running batches: index -> key still awaited
        self.batches: list[str] = []  # every batch this map created or followed, in order

    # ---- the input ------------------------------------------------------------------

    def _recorded(self) -> dict[int, _Recorded]:
        """The checkpoint's batches by the indexes they hold (a later line wins; one
        that says its batch was cancelled takes the batch out)."""
        cancelled = {r["batch"] for r in self._batch_lines or () if r.get("canceled") is True}
        out: dict[int, _Recorded] = {}
        for r in self._batch_lines or ():
            bid, idx, digest = r.get("batch"), r.get("indexes"), r.get("keys")
            # (the checkpoint is read as untrusted: an id goes into a URL)
            if not isinstance(bid, str) or not BATCH_ID.fullmatch(bid) or bid in cancelled:
                continue
            if not isinstance(idx, list) or not all(isinstance(i, int) and i >= 0 for i in idx):
                continue
            if not isinstance(digest, str) or not idx:
                continue
            rec = _Recorded(bid, frozenset(idx), digest)
            for i in idx:
                out[i] = rec
        return out

    def _body(self, req: Mapping[str, Any]) -> bytes:
        """One request's ``params`` in a batch, as JSON (its errors are the request's)."""
        fields = {k: v for k, v in req.items() if k not in _SKIP and k != "extra_body"}
        extra = req.get("extra_body")
        if extra is not None and not isinstance(extra, Mapping):
            raise InvalidRequestError("extra_body: a mapping is required", param="extra_body")
        request = merged_request(fields, extra, max_tokens=True)
        return self._wire.params(request)

    async def _produce(self) -> None:
        tg = self._tg
        assert tg is not None
        recorded = self._recorded()
        seen: dict[str, int] = {}  # recorded batch id -> its indexes read so far
        group = _Group()
        index = 0
        try:
            async for req in self._inputs():
                self._read += 1
                i, index = index, index + 1
                key = self._key(i, req)
                if key is None:
                    continue
                restored = await self._restore(i, key)
                body: bytes | None = None
                if not restored:
                    try:
                        body = self._body(req)
                    except (InvalidRequestError, TypeError, ValueError) as e:
                        self._deliver(MapFailed(i, e))
                        continue
                rec = recorded.get(i)
                if rec is not None:
                    rec.keys[i] = key
                    if body is not None:
                        rec.bodies[i] = body
                        self._running += 1
                    seen[rec.id] = n = seen.get(rec.id, 0) + 1
                    if n == len(rec.indexes):
                        group = self._resume(rec, group)
                    continue
                if body is None:
                    continue
                if len(body) + _ENVELOPE + 2 > self.batch_bytes:
                    self._deliver(MapFailed(i, InvalidRequestError(f"request {i} is over batch_bytes alone")))
                    continue
                group = self._room(group, body)
                self._running += 1
                group.add(i, key, body)
        except Exception as e:  # the caller's iterable failed: finish what runs, then raise it
            self._source_error = e
        finally:
            try:
                # Recorded batches whose requests did not all come back: the input changed
                # (or ended early); what was read of them is sent again.
                for rec in {id(r): r for r in recorded.values()}.values():
                    if seen.get(rec.id, 0) < len(rec.indexes):
                        group = self._resubmit(rec, group)
                if group.indexes:
                    self._submit(group)
            finally:
                self._exhausted = True
                self._signal()

    def _resume(self, rec: _Recorded, group: _Group) -> _Group:
        """Every request of a recorded batch is read: follow it if they are the ones it
        was made of, else send them again."""
        keys = [rec.keys[i] for i in sorted(rec.indexes)]
        if _digest(keys) != rec.digest:
            log.info("batch %s: its requests changed since it was made; sending them again", rec.id)
            return self._resubmit(rec, group)
        if rec.bodies:
            awaited = {i: rec.keys[i] for i in rec.bodies}
            assert self._tg is not None
            self._tg.start_soon(self._follow, rec.id, awaited)
        return group

    def _resubmit(self, rec: _Recorded, group: _Group) -> _Group:
        for i in sorted(rec.bodies):
            group = self._room(group, rec.bodies[i])
            group.add(i, rec.keys[i], rec.bodies[i])
        rec.bodies.clear()
        return group

    def _room(self, group: _Group, body: bytes) -> _Group:
        """``group``, or a new one once ``body`` would take it over a batch's limits (the
        full one is sent)."""
        if group.indexes and (
            len(group.indexes) >= self.batch_size or group.size + len(body) + _ENVELOPE > self.batch_bytes
        ):
            self._submit(group)
            return _Group()
        return group

    def _submit(self, group: _Group) -> None:
        assert self._tg is not None
        self._tg.start_soon(self._run, group)

    # ---- a batch's life ---------------------------------------------------------------

    async def _run(self, group: _Group) -> None:
        try:
            bid = await self._create(group)
        except Exception as e:  # the batch was refused: each of its requests fails with why
            for i in group.indexes:
                self._fail(i, e)
            return
        await self._follow(bid, dict(zip(group.indexes, group.keys, strict=True)))

    async def _create(self, group: _Group) -> str:
        items = list(zip(group.indexes, group.bodies, strict=True))
        group.bodies.clear()  # the batch holds them now
        bid = await self._wire.create(items)
        self._write_line(
            {"batch": bid, "indexes": group.indexes, "keys": _digest(group.keys)}, f"batch {bid}"
        )
        log.info("batch %s: %d requests sent", bid, len(group.indexes))
        return bid

    async def _follow(self, bid: str, awaited: dict[int, str]) -> None:
        """Poll batch ``bid`` until it has ended, then hand out its results."""
        self._open[bid] = awaited
        self.batches.append(bid)
        wait = self.polling.first
        try:
            while not await self._wire.ended(bid):
                await anyio.sleep(wait)
                wait = min(self.polling.maximum, wait * self.polling.factor)
            async for cid, outcome in self._wire.results(bid):
                m = _CUSTOM.fullmatch(cid)
                index = int(m.group(1)) if m else -1
                key = awaited.pop(index, None)
                if key is None:
                    continue  # not one of ours, or said twice
                self._running -= 1
                if isinstance(outcome, Exception):
                    self._deliver(MapFailed(index, outcome))
                else:
                    self._save(index, key, outcome)
                    self._deliver(MapDone(index, outcome))
        except Exception as e:  # the batch still runs there; the checkpoint can follow it later
            for i in list(awaited):
                self._fail(i, e)
            awaited.clear()
        finally:
            self._open.pop(bid, None)
        for i in list(awaited):  # not in the results
            self._fail(i, BatchResultError("missing", bid))
        awaited.clear()

    def _fail(self, index: int, error: Exception) -> None:
        self._running -= 1
        self._deliver(MapFailed(index, error))

    # ---- leaving --------------------------------------------------------------------

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        if self._tg is not None:
            self._tg.cancel_scope.cancel()  # no more polling: the batches left are cancelled
        running = [bid for bid, awaited in self._open.items() if awaited]  # (not those read whole)
        if running:
            with anyio.CancelScope(shield=True), anyio.move_on_after(30):
                for bid in running:
                    try:
                        await self._wire.cancel(bid)
                        self._write_line({"batch": bid, "canceled": True}, f"batch {bid}")
                        log.info("batch %s: cancelled (the map was left before it ended)", bid)
                    except Exception as e:
                        log.warning("batch %s could not be cancelled: %s", bid, e)
        return await super().__aexit__(exc_type, exc, tb)
