"""Streams shared by the replicas: each kept stream's frames in a Valkey stream, so a
client reattaches through any replica, and a replica continues the answer of one that
died.

**Write-ahead.** The producer appends each event's frames to its
:class:`~._live.LiveStream`; a shipper task stores them in Valkey, many streams' frames
in one pipeline, and only then are they sent (:attr:`LiveStream.durable`). So whatever a
client saw, any replica can continue after: the cost is one pipelined round trip per
batch of frames (under a millisecond on a local Valkey), not per frame.

**Layout** (keys under the fleet's prefix, all expiring ``replay_seconds`` after their
last write): ``m:<sid>`` is a hash: the tenant that owns the stream, its route, the
replica that owns the engine stream, the engine request, and what its framer needs;
``s:<sid>`` is a Valkey stream, one entry per frame: frame ``n`` is entry ``n+1-0``, with
the frame (``f``) and, on an event's first frame, the event itself in the Messages wire
format (``e``); an event that made no frame, and the end of the stream (``end``), get an
entry after the last frame (``<frames>-k``). The entries of one stream are bounded
(``max_entries``); a stream trimmed below its start can still be read to its end, but
no longer continued by another replica.

**Reattach through any replica.** A replica that does not hold the stream reads it from
Valkey: the frames after the client's ``Last-Event-ID``, then the new ones as the owner
stores them (``XREAD BLOCK``). If the owner is dead (it missed its beats,
:mod:`._fleet`), the replica claims the stream (one script: the owner is dead and the
stream not finished), rebuilds the message from the stored events and continues it by
the resume plan (a prefill continuation, spliced so the client sees one message).
A replica following a stream marks it seen (once a second) and the owner keeps a stream
that is followed as one with a client attached. Frames stored while no connection is
attached at the owner count as handed over: the store holds them for whoever comes, so
a client following through another replica is not backpressured (the store's bound,
``max_entries``, is).

Valkey away: the shipper's failure unshares the live streams (their frames go out
without it) and new streams are local until the fleet re-joins.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import anyio

from ._fleet import FleetLink, FleetUnavailable
from ._live import LiveStream

__all__ = ["SharedStreams", "Stored"]

log = logging.getLogger("sdk.server")

# KEYS[1]: the stream's meta hash; KEYS[2]: the fleet's alive set. ARGV[1]: the
# claiming replica. The owner is dead (not alive, or its beat expired) and the stream
# is not finished: the claimer owns it now. Returns 1 if claimed, 0 if the owner lives,
# -1 if finished or gone.
_CLAIM = """
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner == false or redis.call('HGET', KEYS[1], 'done') == '1' then return -1 end
if owner == ARGV[1] then return 1 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ = redis.call('ZSCORE', KEYS[2], owner)
if until_ ~= false and tonumber(until_) > now then return 0 end
redis.call('HSET', KEYS[1], 'owner', ARGV[1])
return 1
"""


@dataclass(frozen=True, slots=True)
class Stored:
    """A stream as Valkey holds it: its frames (``first`` is the index of the first),
    its events' wire frames in order, and whether it ended."""

    first: int
    frames: list[bytes]
    events: list[bytes]
    ended: bool
    last_id: str


def _entry_id(frame: int, sub: int = 0) -> str:
    return f"{frame + 1}-{sub}" if sub == 0 else f"{frame}-{sub}"


class SharedStreams:
    def __init__(self, link: FleetLink, *, seconds: float, max_entries: int = 16384) -> None:
        self.link = link
        self.ttl_ms = max(1000, int(seconds * 1000))
        self.max_entries = max_entries
        self.up = True
        self._ops: list[tuple[Callable[[Any], None], Callable[[], None] | None]] = []
        self._wake = anyio.Event()
        self._shared: dict[str, LiveStream] = {}
        self._subs: dict[str, tuple[int, int]] = {}  # sid -> (frames so far, zero-frame entries after them)
        self._claim = link.register(_CLAIM)
        self.shipped = 0

    def _meta_key(self, sid: str) -> str:
        return f"{self.link.prefix}m:{sid}"

    def _stream_key(self, sid: str) -> str:
        return f"{self.link.prefix}s:{sid}"

    # ---- the owner's side ------------------------------------------------------------

    def share(self, live: LiveStream, meta: Mapping[str, str]) -> None:
        """From now on ``live``'s frames are stored before they are sent."""
        key, ttl = self._meta_key(live.sid), self.ttl_ms
        fields = {**meta, "owner": self.link.replica, "done": "0"}

        def op(p: Any) -> None:
            p.hset(key, mapping=fields)
            p.pexpire(key, ttl)

        live.durable = live.next
        self._shared[live.sid] = live
        self._subs[live.sid] = (live.next, 0)
        self._queue(op, None)

    def adopt(self, live: LiveStream, last_id: str) -> None:
        """A stream taken over from a dead replica: its frames are stored already."""
        live.durable = live.next
        self._shared[live.sid] = live
        frames, sub = (int(x) for x in last_id.split("-"))
        self._subs[live.sid] = (live.next, sub if frames == live.next else 0)

    def append(self, live: LiveStream, event: bytes, frames: list[bytes]) -> None:
        """One event and the frames it made (already pushed to ``live``)."""
        if live.durable is None or live.sid not in self._subs:
            return
        done, sub = self._subs[live.sid]
        key, ttl, cap = self._stream_key(live.sid), self.ttl_ms, self.max_entries
        entries: list[tuple[str, dict[str, bytes]]] = []
        if frames:
            for k, frame in enumerate(frames):
                fields = {"f": frame}
                if k == 0:
                    fields["e"] = event
                entries.append((_entry_id(done + k), fields))
            done, sub = done + len(frames), 0
        else:
            sub += 1
            entries.append((_entry_id(done, sub), {"e": event}))
        self._subs[live.sid] = (done, sub)

        def op(p: Any) -> None:
            for eid, fields in entries:
                p.xadd(key, cast("dict[Any, Any]", fields), id=eid, maxlen=cap, approximate=True)
            p.pexpire(key, ttl)

        self._queue(op, functools.partial(_now_stored, live, done))

    def finish(self, live: LiveStream) -> None:
        """The stream ended: an end entry, and the meta marked done."""
        if live.sid not in self._subs:
            return
        done, sub = self._subs.pop(live.sid)
        self._shared.pop(live.sid, None)
        if live.durable is None:
            return
        skey, mkey, ttl = self._stream_key(live.sid), self._meta_key(live.sid), self.ttl_ms

        def op(p: Any) -> None:
            p.xadd(skey, {"end": b"1"}, id=_entry_id(done, sub + 1))
            p.pexpire(skey, ttl)
            p.hset(mkey, "done", "1")
            p.pexpire(mkey, ttl)

        self._queue(op, None)

    def _queue(self, op: Callable[[Any], None], after: Callable[[], None] | None) -> None:
        self._ops.append((op, after))
        self._wake.set()

    async def run(self) -> None:
        """The shipper: stores what was queued, one pipeline at a time."""
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            ops, self._ops = self._ops, []
            if not ops:
                continue

            try:
                await self.link.run(functools.partial(_ship, ops), "stream")
            except FleetUnavailable as e:
                self._down(e)
                continue
            self.shipped += len(ops)
            for _, after in ops:
                if after is not None:
                    after()

    def _down(self, e: FleetUnavailable) -> None:
        if self.up:
            log.warning("shared streams unreachable; streams are served by their replica alone: %s", e)
        self.up = False
        for live in self._shared.values():
            live.unshare()
        self._shared.clear()
        self._subs.clear()
        self._ops.clear()

    # ---- any replica's side ----------------------------------------------------------

    async def meta(self, sid: str) -> dict[str, str] | None:
        key = self._meta_key(sid)
        raw = await self.link.run(lambda r: r.hgetall(key), "stream")
        if not raw:
            return None
        return {bytes(k).decode(): bytes(v).decode() for k, v in raw.items()}

    async def read(self, sid: str, after: str = "-", *, count: int = 1024) -> Stored:
        """The stored entries after entry id ``after`` (``-``: from the start)."""
        key = self._stream_key(sid)
        start = "-" if after == "-" else "(" + after
        raw = await self.link.run(lambda r: r.xrange(key, min=start, max="+", count=count), "stream")
        return _stored(raw, after)

    async def wait(self, sid: str, after: str, *, block: float = 1.0) -> Stored:
        """Entries after ``after``, waiting up to ``block`` seconds for the first."""
        key = self._stream_key(sid)
        ms = max(1, int(block * 1000))
        raw = await self.link.listen(lambda r: r.xread({key: after}, count=1024, block=ms))
        entries = raw[0][1] if raw else []
        return _stored(entries, after)

    async def seen(self, sid: str) -> None:
        """A client follows the stream through this replica (as of now)."""
        key = self._meta_key(sid)

        def mark(r: Any) -> None:
            r.hset(key, "seen", str(int(time.time() * 1000)))

        await self.link.run(mark, "stream")

    async def followed(self, sids: list[str], *, within: float = 3.0) -> set[str]:
        """Those of ``sids`` that a client followed through some replica lately."""
        keys = [self._meta_key(sid) for sid in sids]

        def read(r: Any) -> list[Any]:
            p = r.pipeline(transaction=False)
            for k in keys:
                p.hget(k, "seen")
            return list(p.execute())

        got = await self.link.run(read, "stream")
        now_ms = time.time() * 1000
        return {sid for sid, v in zip(sids, got, strict=True) if now_ms - _millis(v) <= within * 1000}

    async def claim(self, sid: str) -> int:
        """Take the stream over if its owner is dead: 1 ours, 0 its owner lives, -1
        finished or gone."""
        meta, alive, me = self._meta_key(sid), f"{self.link.prefix}alive", self.link.replica

        return int(await self.link.run(lambda _: self._claim(keys=[meta, alive], args=[me]), "stream"))


def _millis(v: object) -> float:
    """A stored time in milliseconds; one that is absent or not a number (a store
    someone else wrote to) as never."""
    try:
        return int(v) if isinstance(v, bytes | str) else -math.inf
    except ValueError:
        return -math.inf


def _now_stored(live: LiveStream, index: int) -> None:
    """Frames below ``index`` are stored. With no connection attached here they count as
    handed over: the store holds them for whoever reattaches, here or through another
    replica (which this one cannot see read), so the producer goes on."""
    live.stored(index)
    if not live.attached:
        live.advance(min(index, live.next))


def _ship(ops: list[tuple[Callable[[Any], None], Callable[[], None] | None]], r: Any) -> None:
    p = r.pipeline(transaction=False)
    for op, _ in ops:
        op(p)
    p.execute()


def _stored(raw: Any, after: str) -> Stored:
    frames: list[bytes] = []
    events: list[bytes] = []
    first = -1
    ended = False
    last = after
    for eid, fields in raw:
        eid = bytes(eid).decode()
        last = eid
        f = {bytes(k).decode(): bytes(v) for k, v in fields.items()}
        if "f" in f:
            n = int(eid.split("-")[0]) - 1
            if first < 0:
                first = n
            frames.append(f["f"])
        if "e" in f:
            events.append(f["e"])
        if "end" in f:
            ended = True
    if first < 0:
        first = int(after.split("-")[0]) if after != "-" else 0
    return Stored(first, frames, events, ended, last)
