"""The clients of the soak test (:mod:`tests.server.test_soak`): one HTTP/1.1 connection
spoken with h11 over a raw socket (:class:`Conn`), so a client can leave at any byte,
reset the connection, stop reading behind a small receive window, or send what no HTTP
library would; and the behaviours a seeded ``random.Random`` draws from, each an async
function of the round (:class:`Run`) and the client's own generator. A behaviour asserts
what the server must answer; :func:`clients` runs a round and collects the failures with
the seed and the client's index, so a failure can be replayed."""

from __future__ import annotations

import functools
import os
import random
import socket
import struct
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import h11
import orjson
from anyio.abc import SocketAttribute, SocketStream

from sdk.stream import SSEDecoder

CLIENT_GUARD = 120.0  # seconds one client may take before it counts as hung (llama-server
#   on a loaded 2-core machine decodes at 1-6 tokens/s, and requests wait their turn)

ALICE = "soak-alice-5b1e"  # interactive
BOB = "soak-bob-07c2"  # batch, may ask for default
CAROL = "soak-carol-c9d4"  # a quota: 429s are part of the soak
GATE = "soak-gate-33fa"  # a gateway key: names end tenants


# ---- one client --------------------------------------------------------------------------


class Closed(Exception):
    """The server closed (or reset) the connection."""


class Conn:
    """One HTTP/1.1 connection, spoken with h11 over a raw socket."""

    def __init__(self, stream: SocketStream) -> None:
        self.stream = stream
        self.h = h11.Connection(h11.CLIENT)
        self.sse = SSEDecoder()
        self.pending: list[Any] = []
        self.ended = False  # the response's body ended cleanly

    @classmethod
    async def open(cls, url: str, *, rcvbuf: int | None = None) -> Conn:
        host, port = url.removeprefix("http://").split(":")
        sock = socket.socket()
        if rcvbuf is not None:  # before connecting, so the window is small from the start
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        try:
            sock.connect((host, int(port)))
        except BlockingIOError:
            await anyio.wait_writable(sock)
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                sock.close()
                raise OSError(err, os.strerror(err)) from None
        return cls(await SocketStream.from_socket(sock))

    async def write(self, data: bytes) -> None:
        try:
            await self.stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as e:
            raise Closed from e

    async def request(
        self, method: str, path: str, headers: list[tuple[str, str]], body: bytes = b""
    ) -> None:
        hs = [("host", "seam"), *headers]
        if method == "POST":
            hs += [("content-type", "application/json"), ("content-length", str(len(body)))]
        out = self.h.send(h11.Request(method=method, target=path, headers=hs)) or b""
        out += (self.h.send(h11.Data(data=body)) or b"") if body else b""
        out += self.h.send(h11.EndOfMessage()) or b""
        await self.write(out)

    async def event(self) -> Any:
        while True:
            try:
                ev = self.h.next_event()
            except h11.RemoteProtocolError as e:
                raise Closed from e
            if ev is h11.NEED_DATA:
                try:
                    data = await self.stream.receive(65536)
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    data = b""
                self.h.receive_data(data)
                continue
            if isinstance(ev, h11.ConnectionClosed):
                raise Closed
            return ev

    async def head(self) -> tuple[int, dict[str, str]]:
        ev = await self.event()
        while isinstance(ev, h11.InformationalResponse):
            ev = await self.event()
        assert isinstance(ev, h11.Response), ev
        return ev.status_code, {k.decode(): v.decode() for k, v in ev.headers}

    async def body(self) -> bytes:
        out = b""
        while True:
            ev = await self.event()
            if isinstance(ev, h11.EndOfMessage):
                self.ended = True
                return out
            out += bytes(ev.data)

    async def next_sse(self) -> Any | None:
        """The next server-sent event; ``None`` when the body ended (``Closed`` if the
        connection ended first)."""
        while not self.pending:
            if self.ended:
                return None
            ev = await self.event()
            if isinstance(ev, h11.EndOfMessage):
                self.ended = True
                self.pending += self.sse.flush()
            else:
                self.pending += self.sse.feed(bytes(ev.data))
        return self.pending.pop(0)

    async def close(self, *, reset: bool = False) -> None:
        if reset:  # RST, not FIN: the server learns at once, with unsent bytes dropped
            raw = self.stream.extra(SocketAttribute.raw_socket)
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await self.stream.aclose()


@dataclass
class Run:
    """One round of clients: where they run, what they ask, what they saw."""

    url: str
    model: str  # the model a generation names ("endless" is the fake engine's endless one)
    endless: str  # the model that generates longest
    max_tokens: int
    max_pad: int = 0  # the most characters a request's prompt is padded with
    tally: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)


def gen_body(run: Run, *, stream: bool, model: str | None = None, pad: int = 0) -> bytes:
    text = "Count from one to fifty, one number a line."
    if pad:
        text += " " + "z" * pad
    return orjson.dumps(
        {
            "model": model or run.model,
            "max_tokens": run.max_tokens,
            "stream": stream,
            "messages": [{"role": "user", "content": text}],
        }
    )


def chat_body(run: Run, model: str | None = None) -> bytes:
    return orjson.dumps(
        {
            "model": model or run.model,
            "max_tokens": run.max_tokens,
            "stream": True,
            "messages": [{"role": "user", "content": "Count from one to twenty."}],
        }
    )


def key(name: str) -> list[tuple[str, str]]:
    return [("x-api-key", name)]


GENERATION_OK = {200, 429, 503}  # answered, over the quota, queue full


def expect(status: int, allowed: set[int], what: str) -> None:
    assert status in allowed, f"{what}: {status} (expected one of {sorted(allowed)})"


async def read_stream(c: Conn, limit: int | None) -> tuple[list[Any], bool]:
    """Up to ``limit`` events (all, for ``None``); whether the stream ended cleanly."""
    events: list[Any] = []
    while limit is None or len(events) < limit:
        try:
            ev = await c.next_sse()
        except Closed:
            return events, False
        if ev is None:
            return events, True
        events.append(ev)
    return events, False


async def stream_to_end(run: Run, rng: random.Random) -> None:
    chat = rng.random() < 0.3
    path = "/v1/chat/completions" if chat else "/v1/messages"
    who = rng.choice([ALICE, BOB, CAROL])
    c = await Conn.open(run.url)
    try:
        await c.request("POST", path, key(who), chat_body(run) if chat else gen_body(run, stream=True))
        status, _ = await c.head()
        expect(status, GENERATION_OK, "a stream")
        if status != 200:
            await c.body()
            run.tally[f"stream {status}"] += 1
            return
        events, ended = await read_stream(c, None)
        assert ended, "a stream read to its end was cut off"
        last = events[-1].data if events else ""
        if chat:
            assert last == "[DONE]", f"a chat stream ended with {last!r}"
        else:
            kinds = {e.event for e in events}
            assert "message_stop" in kinds or "error" in kinds, f"a stream ended with {kinds}"
        run.tally["stream read to its end"] += 1
    finally:
        await c.close()


async def create(run: Run, rng: random.Random) -> None:
    c = await Conn.open(run.url)
    try:
        await c.request("POST", "/v1/messages", key(ALICE), gen_body(run, stream=False))
        status, _ = await c.head()
        expect(status, GENERATION_OK, "a whole answer")
        body = orjson.loads(await c.body())
        if status == 200:
            assert body["type"] == "message", body
        run.tally[f"whole answer {status}"] += 1
    finally:
        await c.close()


async def leave_queued(run: Run, rng: random.Random) -> None:
    """Send a request and leave before its answer's head (while it waits for a slot)."""
    pad = rng.randrange(run.max_pad // 3, run.max_pad) if run.max_pad and rng.random() < 0.6 else 0
    streaming = rng.random() < 0.8
    model = run.endless if rng.random() < 0.5 else None
    c = await Conn.open(run.url)
    try:
        await c.request(
            "POST", "/v1/messages", key(BOB), gen_body(run, stream=streaming, model=model, pad=pad)
        )
        await anyio.sleep(rng.uniform(0, 0.3))
    except Closed:
        pass
    finally:
        await c.close(reset=rng.random() < 0.5)
    run.tally["left while queued"] += 1


async def leave_mid_stream(run: Run, rng: random.Random) -> None:
    c = await Conn.open(run.url)
    try:
        body = gen_body(run, stream=True, model=run.endless, pad=rng.choice([0, 0, run.max_pad // 8]))
        await c.request("POST", "/v1/messages", key(rng.choice([ALICE, BOB])), body)
        status, _ = await c.head()
        expect(status, GENERATION_OK, "a stream")
        if status == 200:
            await read_stream(c, rng.randint(1, 20))
            run.tally["left mid-stream"] += 1
    finally:
        await c.close(reset=rng.random() < 0.5)


async def reattach(run: Run, rng: random.Random) -> None:
    """Read some of a stream, leave, come back with ``Last-Event-ID``; then read to the
    end, leave again mid-way, or leave before the reattach's head. One in six comes back
    with another tenant's key, which must get a 404."""
    chat = rng.random() < 0.25
    path = "/v1/chat/completions" if chat else "/v1/messages"
    finite = rng.random() < 0.5
    model = None if finite else run.endless
    body = chat_body(run, model) if chat else gen_body(run, stream=True, model=model)
    c = await Conn.open(run.url)
    try:
        await c.request("POST", path, key(ALICE), body)
        status, headers = await c.head()
        expect(status, GENERATION_OK, "a stream")
        if status != 200:
            await c.body()
            return
        events, ended = await read_stream(c, rng.randint(1, 6))
    finally:
        await c.close(reset=rng.random() < 0.5)
    if ended or not events or not events[-1].id:
        run.tally["reattach: stream over before leaving"] += 1
        return
    last = events[-1].id
    sid, n = last.rsplit(":", 1)
    assert sid == headers["seam-stream-id"], (last, headers)
    await anyio.sleep(rng.uniform(0, 0.3))
    stranger = rng.random() < 1 / 6
    c = await Conn.open(run.url)
    try:
        await c.request("POST", path, [*key(BOB if stranger else ALICE), ("last-event-id", last)], body)
        if not stranger and rng.random() < 0.2:
            await anyio.sleep(rng.uniform(0, 0.05))
            run.tally["left during the reattach"] += 1
            return
        status, _ = await c.head()
        if stranger:
            expect(status, {404}, "another tenant's reattach")
            await c.body()
            run.tally["reattach by another tenant: 404"] += 1
            return
        expect(status, {200, 404}, "a reattach")  # 404: expired under a slow machine
        if status == 404:
            await c.body()
            run.tally["reattach: expired"] += 1
            return
        more, ended = await read_stream(c, None if finite else rng.randint(1, 10))
        if more and more[0].id:
            assert more[0].id == f"{sid}:{int(n) + 1}", f"reattached after {last} at {more[0].id}"
        run.tally["reattached" + (", read to the end" if ended else ", left again")] += 1
    finally:
        await c.close(reset=rng.random() < 0.5)


async def pause(run: Run, rng: random.Random) -> None:
    """Stop reading (a small receive window) for up to twice ``send_timeout``, then read
    on: the stream continues, or the server has ended it."""
    c = await Conn.open(run.url, rcvbuf=4096)
    try:
        model = run.endless if rng.random() < 0.6 else None
        await c.request(
            "POST",
            "/v1/messages",
            key(rng.choice([ALICE, BOB])),
            gen_body(run, stream=True, model=model),
        )
        status, _ = await c.head()
        expect(status, GENERATION_OK, "a stream")
        if status != 200:
            await c.body()
            return
        await read_stream(c, rng.randint(1, 5))
        await anyio.sleep(rng.uniform(0.2, 4.0))
        _, ended = await read_stream(c, None if model is None else rng.randint(1, 30))
        run.tally["paused, " + ("then read to the end" if ended else "then read on or was cut")] += 1
    finally:
        await c.close(reset=rng.random() < 0.3)


async def unread_answer(run: Run, rng: random.Random) -> None:
    """A whole answer (2 MiB from the fake engine) nobody reads."""
    c = await Conn.open(run.url, rcvbuf=4096)
    try:
        model = "big" if run.endless == "endless" else None
        await c.request("POST", "/v1/messages", key(ALICE), gen_body(run, stream=False, model=model))
        await anyio.sleep(rng.uniform(0.5, 3.0))
        run.tally["whole answer never read"] += 1
    finally:
        await c.close(reset=rng.random() < 0.5)


async def dribble(run: Run, rng: random.Random) -> None:
    """Half a head or half a body, then silence: closed by the server (408 for a body)
    or left by the client."""
    c = await Conn.open(run.url)
    try:
        if rng.random() < 0.5:
            await c.write(b"POST /v1/messages HTTP/1.1\r\nhost: seam\r\nx-api-key: ")
        else:
            await c.write(
                b"POST /v1/messages HTTP/1.1\r\nhost: seam\r\ncontent-type: application/json\r\n"
                b"x-api-key: " + ALICE.encode() + b'\r\ncontent-length: 400\r\n\r\n{"model": "ok", "max_'
            )
        if rng.random() < 0.5:
            await anyio.sleep(rng.uniform(0, 1.0))
            run.tally["dribbled, then left"] += 1
            return
        raw = b""  # until the server closes it (head_timeout, body_timeout): no pace here
        try:
            while chunk := await c.stream.receive(65536):
                raw += chunk
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            pass
        assert raw == b"" or raw.startswith(b"HTTP/1.1 408 "), raw[:200]
        run.tally["dribbled, closed by the server"] += 1
    finally:
        await c.close()


async def escalate(run: Run, rng: random.Random) -> None:
    c = await Conn.open(run.url)
    try:
        if rng.random() < 0.5:  # a batch key asks for interactive
            await c.request(
                "POST",
                "/v1/messages",
                [*key(BOB), ("seam-priority", "interactive")],
                gen_body(run, stream=True),
            )
        else:  # an ordinary key names an end tenant
            await c.request(
                "POST",
                "/v1/messages",
                [*key(ALICE), ("seam-tenant", "acme")],
                gen_body(run, stream=True),
            )
        status, _ = await c.head()
        expect(status, {403}, "an escalation")
        await c.body()
        run.tally["escalation refused"] += 1
    finally:
        await c.close()


async def gateway(run: Run, rng: random.Random) -> None:
    c = await Conn.open(run.url)
    try:
        tenant = rng.choice(["acme", "globex", "initech"])
        await c.request(
            "POST", "/v1/messages", [*key(GATE), ("seam-tenant", tenant)], gen_body(run, stream=True)
        )
        status, _ = await c.head()
        expect(status, GENERATION_OK, "a gateway's stream")
        if status == 200:
            await read_stream(c, rng.choice([2, None]))
        run.tally["gateway tenant"] += 1
    finally:
        await c.close()


def _nested(depth: int) -> bytes:
    """A request whose metadata nests ``depth`` arrays (orjson dumps at most 254 levels)."""
    return (
        b'{"model": "ok", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}], "metadata": '
        + (b"[" * depth + b"0" + b"]" * depth + b"}")
    )


@functools.cache
def malformed_cases(model: str) -> list[tuple[str, str, list[tuple[str, str]], bytes, set[int]]]:
    """(what, path, headers, body, the statuses it may get); all POST."""
    msgs = [{"role": "user", "content": "hi"}]
    ok = {"model": model, "max_tokens": 8, "messages": msgs}

    def j(**kw: Any) -> bytes:
        return orjson.dumps({**ok, **kw})

    a = key(ALICE)
    return [
        ("not JSON", "/v1/messages", a, b'{"model": ', {400}),
        ("an array", "/v1/messages", a, b"[1, 2]", {400}),
        ("priority ²", "/v1/messages", a, j(priority="\u00b2"), {400}),
        ("priority of 5000 digits", "/v1/messages", a, j(priority="9" * 5000), {400}),
        ("an unknown tier", "/v1/messages", a, j(priority="platinum"), {400}),
        ("max_tokens 2**31", "/v1/messages", a, j(max_tokens=2**31), {400}),
        ("messages not objects", "/v1/messages", a, j(messages=[1, "x"]), {400}),
        ("role system", "/v1/messages", a, j(messages=[{"role": "system", "content": "x"}]), {400}),
        ('model ""', "/v1/messages", a, j(model=""), {400}),
        ("300 levels deep", "/v1/messages", a, _nested(300), {400}),
        (
            "a malformed Last-Event-ID",
            "/v1/messages",
            [*a, ("last-event-id", "abc:1x")],
            j(stream=True),
            {400},
        ),
        (
            "an unknown stream",
            "/v1/messages",
            [*a, ("last-event-id", "nosuchstream0:3")],
            j(stream=True),
            {404},
        ),
        ("no key", "/v1/messages", [], j(), {401}),
        ("a wrong key", "/v1/messages", key("not-a-key"), j(), {401}),
        ("an unknown route", "/v1/nothing", a, j(), {404}),
        ("chat without a model", "/v1/chat/completions", a, orjson.dumps({"messages": msgs}), {400}),
        (
            "chat messages not a list",
            "/v1/chat/completions",
            a,
            orjson.dumps({"model": "m", "messages": 3}),
            {400},
        ),
        ("tokenize without text", "/tokenize", a, orjson.dumps({"content": 5}), {400}),
        ("count_tokens of a bad message", "/v1/messages/count_tokens", a, j(messages=[7]), {400}),
        ("a body over max_body_bytes", "/v1/messages", a, j(pad="p" * (2 << 20)), {413}),
        ("a bad seam-tenant", "/v1/messages", [*key(GATE), ("seam-tenant", "../x y")], j(), {400}),
    ]


async def malformed(run: Run, rng: random.Random) -> None:
    if rng.random() < 0.15:  # not HTTP at all: uvicorn's 400, or a close
        c = await Conn.open(run.url)
        try:
            junk = rng.choice(
                [
                    b"GARBAGE\r\n\r\n",
                    b"POST / HTTP/1.1\r\ncontent-length: -1\r\n\r\n",
                    b"GET /health HTTP/1.1\r\nx: " + b"a" * 20000 + b"\r\n\r\n",
                ]
            )
            raw = b""
            try:
                await c.write(junk)
                while chunk := await c.stream.receive(65536):
                    raw += chunk
            except (Closed, anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                pass
            assert raw == b"" or raw.startswith(b"HTTP/1.1 4"), raw[:200]
            run.tally["not HTTP"] += 1
        finally:
            await c.close()
        return
    what, path, headers, body, allowed = rng.choice(malformed_cases(run.model))
    c = await Conn.open(run.url)
    try:
        try:
            await c.request("POST", path, headers, body)
        except Closed:
            assert 413 in allowed, f"{what}: closed while sending"
            return
        status, _ = await c.head()
        answer = await c.body()
        expect(status, allowed, f"{what} ({answer[:200]!r})")
        run.tally[f"malformed: {status}"] += 1
    except Closed:
        assert 413 in allowed, f"{what}: closed without an answer"
    finally:
        await c.close()


Behaviour = Callable[[Run, random.Random], Awaitable[None]]

FAKE_MIX: list[tuple[Behaviour, int]] = [
    (stream_to_end, 10),
    (create, 4),
    (leave_queued, 14),
    (leave_mid_stream, 12),
    (reattach, 14),
    (pause, 10),
    (unread_answer, 3),
    (dribble, 4),
    (escalate, 3),
    (gateway, 4),
    (malformed, 16),
]

LLAMA_MIX: list[tuple[Behaviour, int]] = [  # a few dozen requests: CPU time is scarce
    (stream_to_end, 3),
    (create, 1),
    (leave_queued, 5),
    (leave_mid_stream, 3),
    (reattach, 3),
    (pause, 2),
    (escalate, 1),
    (malformed, 5),
]


async def clients(run: Run, seed: int, n: int, mix: list[tuple[Behaviour, int]], width: int) -> None:
    """``n`` clients, ``width`` at a time, each behaving as ``random.Random(seed)`` draws."""
    rng = random.Random(seed)
    plan = [
        (i, rng.choices([b for b, _ in mix], [w for _, w in mix])[0], rng.getrandbits(32)) for i in range(n)
    ]
    limit = anyio.CapacityLimiter(width)

    async def one(i: int, behaviour: Behaviour, own: int) -> None:
        async with limit:
            try:
                with anyio.fail_after(CLIENT_GUARD):
                    await behaviour(run, random.Random(own))
            except Exception as e:
                run.failures.append(f"client {i} ({behaviour.__name__}, seed {seed}): {e!r}")

    async with anyio.create_task_group() as tg:
        for i, behaviour, own in plan:
            tg.start_soon(one, i, behaviour, own)
