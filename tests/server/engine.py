"""A fake engine and an in-process ASGI connection, for driving the scheduling server event
by event without sockets.

:class:`FakeEngine` is an httpx2 transport that answers what the server asks an engine
(Messages streams and answers, ``count_tokens``, ``/tokenize``, ``/health``, the model
list). A stream's deltas come only while its :attr:`FakeEngine.gate` is open, so a test
decides when a slot frees; an endless stream (``deltas=None``) generates as fast as it is
read. It counts the generation requests it got and the streams still open, so a test sees
whether anything is decoded for nobody.

:class:`Conn` is one HTTP connection to the app as uvicorn presents it: the body, then
``http.disconnect`` when the test says the client left; a client that stops reading
blocks the app's ``send`` until it reads again or leaves.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import orjson
from anyio.abc import TaskGroup

from sdk.server import ServerApp


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


class _Body(httpx2.AsyncByteStream):
    def __init__(self, engine: FakeEngine, deltas: int | None, tool: bool) -> None:
        self.engine = engine
        self.deltas = deltas
        self.tool = tool

    async def __aiter__(self) -> AsyncIterator[bytes]:
        e = self.engine
        e.open += 1
        try:
            msg = {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": "fake",
                "content": [],
                "usage": {"input_tokens": 3, "output_tokens": 0},
            }
            yield _sse("message_start", {"type": "message_start", "message": msg})
            block = (
                {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
                if self.tool
                else {"type": "text", "text": ""}
            )
            yield _sse(
                "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
            )
            n = 0
            while self.deltas is None or n < self.deltas:
                await e.gate.wait()
                delta = (
                    {"type": "input_json_delta", "partial_json": '"x' if n == 0 else "xxxxxxxx"}
                    if self.tool
                    else {"type": "text_delta", "text": e.text}
                )
                yield _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
                n += 1
                e.decoded += 1
                await anyio.lowlevel.checkpoint()
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
            yield _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": n},
                },
            )
            yield _sse("message_stop", {"type": "message_stop"})
        finally:
            e.open -= 1

    async def aclose(self) -> None:
        pass


class FakeEngine(httpx2.AsyncBaseTransport):
    """``deltas``: text deltas per stream (``None``: endless); ``tool``: the stream is one
    tool input (a point where no stream can be paused)."""

    def __init__(self, *, deltas: int | None = 4, text: str = "tok ", tool: bool = False) -> None:
        self.deltas = deltas
        self.text = text
        self.tool = tool
        self.gate = anyio.Event()
        self.gate.set()
        self.answers = anyio.Event()  # cleared: generation requests get no answer yet
        self.answers.set()
        self.generations: list[dict[str, Any]] = []  # generation requests (without messages)
        self.traced: list[str] = []  # the traceparent of each generation request ('' if none)
        self.fail_with: int | None = None  # set: generation requests are answered this error status
        self.counted = 0
        self.tokenized = 0
        self.open = 0  # stream bodies being read
        self.decoded = 0

    def hold(self) -> None:
        """Streams stop before their next delta until :meth:`release`."""
        if self.gate.is_set():
            self.gate = anyio.Event()

    def release(self) -> None:
        self.gate.set()

    def hold_answers(self) -> None:
        """Generation requests are taken (their slot held) but not answered until
        :meth:`answer`."""
        if self.answers.is_set():
            self.answers = anyio.Event()

    def answer(self) -> None:
        self.answers.set()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path.endswith("/health"):
            return httpx2.Response(200, json={"status": "ok"})
        if path.endswith("/v1/models"):
            return httpx2.Response(200, json={"data": [{"id": "fake", "type": "model"}]})
        body = orjson.loads(await request.aread()) if request.method == "POST" else {}
        if path.endswith("/v1/messages/count_tokens"):
            self.counted += 1
            return httpx2.Response(200, json={"input_tokens": 7})
        if path.endswith("/tokenize"):
            self.tokenized += 1
            return httpx2.Response(200, json={"tokens": [1, 2, 3]})
        if path.endswith("/v1/messages"):
            # what a test looks at, not the prompt (tests measure what the server holds)
            self.generations.append({k: v for k, v in body.items() if k != "messages"})
            self.traced.append(request.headers.get("traceparent", ""))
            if self.fail_with is not None:
                error = {"type": "api_error", "message": "the engine failed"}
                return httpx2.Response(self.fail_with, json={"type": "error", "error": error})
            await self.answers.wait()
            if body.get("stream"):
                return httpx2.Response(
                    200,
                    headers={"content-type": "text/event-stream"},
                    stream=_Body(self, self.deltas, self.tool),
                )
            await self.gate.wait()
            return httpx2.Response(
                200,
                json={
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": "fake",
                    "content": [{"type": "text", "text": "done"}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": 3, "output_tokens": 1},
                },
            )
        return httpx2.Response(
            404, json={"type": "error", "error": {"type": "not_found_error", "message": "no"}}
        )


class Conn:
    """One client connection to the app (see the module doc)."""

    def __init__(self, method: str, path: str, body: object, headers: Mapping[str, str]) -> None:
        # the standard library's encoder: it nests deeper than orjson, as a hostile client may
        self.raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.scope: dict[str, Any] = {
            "type": "http",
            "method": method,
            "path": path,
            "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        }
        self._body_given = False
        self.left = anyio.Event()  # the client went away
        self.reading = anyio.Event()  # cleared: the client stops reading
        self.reading.set()
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.started = anyio.Event()
        self.chunks: list[bytes] = []
        self.got = anyio.Event()  # set again on each body part
        self.complete = anyio.Event()  # the response ended (more_body False)
        self.ended = anyio.Event()  # the app returned

    async def receive(self) -> dict[str, Any]:
        if not self._body_given:
            self._body_given = True
            return {"type": "http.request", "body": self.raw, "more_body": False}
        await self.left.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: Mapping[str, Any]) -> None:
        if self.left.is_set():
            return  # as uvicorn: what is sent after a disconnect goes nowhere
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {k.decode(): v.decode() for k, v in message.get("headers", ())}
            self.started.set()
            return
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:

                async def gone() -> None:
                    await self.left.wait()
                    scope.cancel()

                tg.start_soon(gone)
                await self.reading.wait()
                tg.cancel_scope.cancel()
        if self.left.is_set():
            return
        self.chunks.append(message.get("body", b""))
        self.got.set()
        self.got = anyio.Event()
        if not message.get("more_body"):
            self.complete.set()

    def leave(self) -> None:
        self.left.set()

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def json(self) -> Any:
        return orjson.loads(self.body)

    def events(self) -> list[tuple[str | None, dict[str, Any]]]:
        """The SSE frames received: (id, data)."""
        out = []
        for frame in self.body.split(b"\n\n"):
            sid = None
            data = None
            for line in frame.split(b"\n"):
                if line.startswith(b"id: "):
                    sid = line[4:].decode()
                elif line.startswith(b"data: ") and line != b"data: [DONE]":
                    data = orjson.loads(line[6:])
            if data is not None:
                out.append((sid, data))
        return out


class Harness:
    """A started app (its lifespan running) and a way to open connections to it."""

    def __init__(self, app: ServerApp, engine: FakeEngine, tg: TaskGroup) -> None:
        self.app = app
        self.engine = engine
        self._tg = tg

    def open(
        self,
        path: str,
        body: object,
        headers: Mapping[str, str] | None = None,
        *,
        method: str = "POST",
    ) -> Conn:
        conn = Conn(method, path, body, headers or {})

        async def run() -> None:
            try:
                await self.app(conn.scope, conn.receive, conn.send)
            finally:
                conn.ended.set()

        self._tg.start_soon(run)
        return conn

    async def call(
        self, path: str, body: object, headers: Mapping[str, str] | None = None, *, method: str = "POST"
    ) -> Conn:
        conn = self.open(path, body, headers, method=method)
        with anyio.fail_after(30):  # a test that would hang fails instead
            await conn.ended.wait()
        return conn

    def idle(self) -> dict[str, Any]:
        """What must return to zero once every client is gone and every stream ended."""
        st = self.app.scheduler.stats()
        return {
            "waiting": sum(st.waiting.values()),
            "running": sum(st.running.values()),
            "in_flight": sum(u.in_flight for u in self.app.upstreams),
            "live": len(self.app._live),
            "engine_open": self.engine.open,
        }


IDLE = {"waiting": 0, "running": 0, "in_flight": 0, "live": 0, "engine_open": 0}


@asynccontextmanager
async def serving(app: ServerApp, engine: FakeEngine) -> AsyncIterator[Harness]:
    """``app`` started through its ASGI lifespan (its engines reached through ``engine``),
    shut down through it after the connections still open are cut."""
    to_app_s, to_app_r = anyio.create_memory_object_stream[dict[str, Any]](4)
    from_app_s, from_app_r = anyio.create_memory_object_stream[dict[str, Any]](4)

    async def send(message: dict[str, Any]) -> None:
        await from_app_s.send(message)

    async with anyio.create_task_group() as life, to_app_s, to_app_r, from_app_s, from_app_r:
        life.start_soon(app, {"type": "lifespan"}, to_app_r.receive, send)
        await to_app_s.send({"type": "lifespan.startup"})
        msg = await from_app_r.receive()
        assert msg["type"] == "lifespan.startup.complete", msg
        try:
            async with anyio.create_task_group() as conns:
                yield Harness(app, engine, conns)
                conns.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True), anyio.fail_after(10):
                await to_app_s.send({"type": "lifespan.shutdown"})
                assert (await from_app_r.receive())["type"] == "lifespan.shutdown.complete"


def request(n: int = 0, *, stream: bool = True, size: int = 0, **extra: Any) -> dict[str, Any]:
    """A Messages request; ``size``: bytes of padding in its prompt (a big body)."""
    return {
        "model": "fake",
        "max_tokens": 64,
        "stream": stream,
        "messages": [{"role": "user", "content": f"question {n} " + "p" * size}],
        **extra,
    }
