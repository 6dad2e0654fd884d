"""A stream the server keeps for its client: the frames written so far, so a client that
lost its connection reattaches with ``Last-Event-ID`` and gets the rest exactly once.

The producer (the task reading the engine's stream) appends frames; the attached
connection sends them and advances ``sent``. The producer stays at most ``lead_bytes``
ahead of what was sent, which is the backpressure: a client that stops reading, or a
connection that is gone, stops the producer, and the engine stream's own stall policy
then pauses the generation. A stream nobody reads (:attr:`LiveStream.unread`) gives its
slot up at once to a request that waits for one; a client back for it gets the rest,
continued by prefill. Frames already sent are kept, up to ``keep_bytes``, because
a dropped connection loses what was in its buffers; an id older than that has expired.

A stream counts its connections from the moment one starts waiting for it (a request
still queued has its client), so "no connection attached" (``idle_since`` set) means
nobody is there, whatever the producer is doing: the server expires such a stream after
its grace, queued, running or finished alike. :attr:`LiveStream.held_bytes` is what the
stream pins, the server's measure for bounding kept streams together.

A stream shared with other replicas (:mod:`._shared`) is sent only as far as its frames
are stored in Valkey (:attr:`LiveStream.durable`): what a client has seen, any replica
can continue after.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import anyio

__all__ = ["LiveStream", "overdue"]


class LiveStream:
    def __init__(
        self,
        sid: str,
        tenant: str,
        *,
        keep_bytes: int,
        lead_bytes: int,
        done_frame: bytes,
        route: str = "/v1/messages",
        request_bytes: int = 0,
        now: float = 0.0,
    ) -> None:
        self.sid = sid
        self.tenant = tenant
        self.route = route  # the path it was started on: its frames are in that protocol
        self.request_bytes = request_bytes  # the request body, pinned while the producer runs
        self.keep_bytes = keep_bytes
        self.lead_bytes = lead_bytes
        self.done_frame = done_frame  # what ends the response (``data: [DONE]`` for chat)
        self._frames: deque[bytes] = deque()
        self.base = 0  # the index of the oldest frame kept
        self.next = 0  # the index the next frame gets
        self.sent = 0  # frames below this index have been handed to a connection
        self._kept = 0  # bytes of kept frames below ``sent``
        self._unsent = 0  # bytes of frames at or above ``sent``
        self._produced = 0  # bytes of all frames pushed (the producer's message so far is no more)
        self.done = False
        self.opened = anyio.Event()  # the engine stream is open (or failed to open)
        self.failure: BaseException | None = None
        self.attached = 0
        self.idle_since: float | None = now  # no connection attached since then
        self.scope = anyio.CancelScope()  # the producer's
        self.durable: int | None = None  # shared: frames below this index are in Valkey
        self._changed = anyio.Event()

    def __repr__(self) -> str:
        return f"<LiveStream {self.sid} frames {self.base}..{self.next} sent {self.sent} done={self.done}>"

    def _signal(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def changed(self) -> None:
        await self._changed.wait()

    def attach(self) -> None:
        """A connection waits for the stream or is sent its frames."""
        self.attached += 1
        self.idle_since = None
        self._signal()  # a producer held back while nobody was attached goes on

    def detach(self, now: float) -> None:
        self.attached -= 1
        if self.attached == 0:
            self.idle_since = now

    def push(self, frame: bytes) -> None:
        self._frames.append(frame)
        self.next += 1
        self._unsent += len(frame)
        self._produced += len(frame)
        self._signal()

    def finish(self) -> None:
        self.done = True
        self.opened.set()
        self._signal()

    @property
    def sendable(self) -> int:
        """Frames below this index may be sent (all of them, unless the stream is shared
        and some are not stored yet)."""
        return self.next if self.durable is None else min(self.next, self.durable)

    def stored(self, index: int) -> None:
        """Frames below ``index`` are in the shared store (``None`` before: unshared)."""
        if self.durable is not None and index > self.durable:
            self.durable = index
            self._signal()

    def unshare(self) -> None:
        """The shared store is away: the frames go out without it."""
        if self.durable is not None:
            self.durable = None
            self._signal()

    def ahead(self) -> bool:
        """The producer is as far ahead of the connection as it may be."""
        return self._unsent > self.lead_bytes

    @property
    def unread(self) -> float | None:
        """Since when nobody can be reading the stream: no connection attached here, and
        not shared (a client of another replica may read a shared stream); else None."""
        return self.idle_since if self.durable is None else None

    def frame(self, index: int) -> bytes | None:
        if index < self.base or index >= self.next:
            return None
        return self._frames[index - self.base]

    @property
    def kept_bytes(self) -> int:
        """Bytes of frames already sent and kept for a reattach."""
        return self._kept

    @property
    def held_bytes(self) -> int:
        """What the stream pins: its frames, sent and kept or not yet sent, and while its
        producer runs, the request (parsed, and again as the engine request's body), the
        message so far (no more than the frames made of it) and the producer's lead. A
        finished stream holds only its frames."""
        held = self._kept + self._unsent
        if not self.done:
            held += 2 * self.request_bytes + self._produced + self.lead_bytes
        return held

    def drop_kept(self, limit: int) -> int:
        """Forget sent frames, oldest first, until at most ``limit`` bytes of them are
        kept; the bytes freed (a reattach before what is kept then gets a 404)."""
        freed = 0
        while self._kept > max(0, limit) and self.base < self.sent:
            size = len(self._frames.popleft())
            self._kept -= size
            freed += size
            self.base += 1
        return freed

    def advance(self, index: int) -> None:
        """Frames below ``index`` were handed to a connection."""
        while self.sent < index:
            size = len(self._frames[self.sent - self.base])
            self._unsent -= size
            self._kept += size
            self.sent += 1
        while self._kept > self.keep_bytes and self.base < self.sent:
            self._kept -= len(self._frames.popleft())
            self.base += 1
        self._signal()


def overdue(
    streams: Iterable[LiveStream], now: float, *, seconds: float, max_streams: int, total_bytes: int
) -> list[LiveStream]:
    """The streams to end now, so that those with no client attached stay within their
    bounds: each kept at most ``seconds`` (queued, running or finished alike), at most
    ``max_streams`` of them, and together with every stream's kept events within
    ``total_bytes``. Past that the longest-idle streams' kept events go first (trimmed
    here), then the longest-idle streams themselves, and the kept events of streams with
    a connection attached last."""
    streams = list(streams)
    idle = sorted(
        (s for s in streams if not s.attached),
        key=lambda s: s.idle_since if s.idle_since is not None else now,
    )
    end: list[LiveStream] = []
    kept: list[LiveStream] = []
    for live in idle:
        since = live.idle_since if live.idle_since is not None else now
        (end if now - since >= seconds else kept).append(live)
    over = max(0, len(kept) - max_streams)
    end += kept[:over]
    kept = kept[over:]
    attached = [s for s in streams if s.attached]
    excess = sum(s.held_bytes for s in kept) + sum(s.kept_bytes for s in attached) - total_bytes
    for live in kept:
        if excess <= 0:
            return end
        excess -= live.drop_kept(live.kept_bytes - excess)
    for live in kept:
        if excess <= 0:
            return end
        excess -= live.held_bytes
        end.append(live)
    for live in attached:
        if excess <= 0:
            break
        excess -= live.drop_kept(live.kept_bytes - excess)
    return end
