"""A scripted HTTP/1.1 server on loopback for what a real model server cannot be made to do.

Each connection carries one request (every answer says ``connection: close``). A handler
gets the parsed :class:`Request` and a :class:`Reply` to write with: a whole response,
or a chunked body written one TCP segment at a time (``TCP_NODELAY``), ended cleanly,
cut off (return without :meth:`Reply.end`), or never finished (sleep forever).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson
from anyio.abc import SocketAttribute, SocketStream


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


@dataclass
class Reply:
    stream: SocketStream
    sent_chunks: int = 0

    async def respond(self, status: int, body: object = None, headers: dict[str, str] | None = None) -> None:
        """A whole response with a JSON body."""
        data = orjson.dumps(body) if body is not None else b""
        head = [f"HTTP/1.1 {status} X", "content-type: application/json", f"content-length: {len(data)}"]
        head += [f"{k}: {v}" for k, v in (headers or {}).items()]
        head.append("connection: close")
        await self.stream.send(("\r\n".join(head) + "\r\n\r\n").encode() + data)

    async def start(self, content_type: str = "text/event-stream") -> None:
        await self.stream.send(
            f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n"
            "transfer-encoding: chunked\r\nconnection: close\r\n\r\n".encode()
        )

    async def chunk(self, data: bytes) -> None:
        await self.stream.send(b"%x\r\n%s\r\n" % (len(data), data))
        self.sent_chunks += 1

    async def end(self) -> None:
        await self.stream.send(b"0\r\n\r\n")


Handler = Callable[[Request, Reply], Awaitable[None]]


@dataclass
class FaultServer:
    """``requests``: what the handler saw. The client's one-time probes are answered here
    and kept in ``probes``: the model list it identifies the engine by (``GET /v1/models``
    or ``/models``; an empty list, with the header that says llama-server where ``props``
    is set, or the scheduling server where ``seam`` is; the handler's own where
    ``models_to_handler``), ``GET /props`` for slots and ``GET /v1/seam`` for a scheduling
    server (404 unless ``props`` or ``seam`` is set)."""

    url: str
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    props: dict[str, Any] | None = None
    seam: dict[str, Any] | None = None
    probes: list[Request] = field(default_factory=list)
    models_to_handler: bool = False

    def identity(self) -> dict[str, str]:
        if self.seam is not None:
            return {"seam-server": "1"}
        return {"Server": "llama.cpp"} if self.props is not None else {}


async def _read_request(stream: SocketStream) -> Request | None:
    buf = b""
    while b"\r\n\r\n" not in buf:
        try:
            buf += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    head, _, rest = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        rest += await stream.receive()
    return Request(method, path, headers, rest)


@asynccontextmanager
async def fault_server(handler: Handler) -> AsyncIterator[FaultServer]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server = FaultServer(f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}")

    async def on_conn(stream: SocketStream) -> None:
        async with stream:
            server.connections += 1
            stream.extra(SocketAttribute.raw_socket).setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                req = await _read_request(stream)
                if req is None:
                    return
                models = req.path in ("/v1/models", "/models")
                if req.method == "GET" and models and not server.models_to_handler:
                    server.probes.append(req)
                    await Reply(stream).respond(200, {"object": "list", "data": []}, server.identity())
                    return
                if req.method == "GET" and req.path in ("/props", "/v1/seam"):
                    server.probes.append(req)
                    doc = server.props if req.path == "/props" else server.seam
                    if doc is None:
                        await Reply(stream).respond(
                            404, {"error": {"code": 404, "message": "File Not Found"}}
                        )
                    else:
                        await Reply(stream).respond(200, doc)
                    return
                server.requests.append(req)
                await handler(req, Reply(stream))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
                pass

    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, on_conn)
        try:
            yield server
        finally:
            tg.cancel_scope.cancel()


# ---- wire formats ----------------------------------------------------------------------


def sse(event: str | None, data: object) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(data) + b"\n\n"


def messages_events(
    pieces: Sequence[str],
    *,
    stop: str = "end_turn",
    mid: str = "msg_1",
    model: str = "m",
    usage: Mapping[str, int] | None = None,
) -> list[bytes]:
    """One text message in the Messages stream format, one SSE event per element.

    ``usage`` is what ``message_start`` reports as input (``input_tokens`` 5 by default).
    """
    out = [
        sse(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "usage": {**(usage or {"input_tokens": 5}), "output_tokens": 1},
                },
            },
        ),
        sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
    ]
    for p in pieces:
        out.append(
            sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
            )
        )
    out += [
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": len(pieces)},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]
    return out


def openai_events(pieces: Sequence[str], *, stop: str = "stop", cid: str = "chatcmpl-1") -> list[bytes]:
    """The same message as OpenAI chat-completion chunks (with a usage chunk and [DONE])."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse(
            None, {"id": cid, "model": "m", "object": "chat.completion.chunk", "choices": [choice], **extra}
        )

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": p}) for p in pieces]
    out.append(chunk({}, stop))
    usage = {"prompt_tokens": 5, "completion_tokens": len(pieces), "total_tokens": 5 + len(pieces)}
    out.append(sse(None, {"id": cid, "model": "m", "choices": [], "usage": usage}))
    out.append(b"data: [DONE]\n\n")
    return out


def events_for(backend: str, pieces: Sequence[str]) -> list[bytes]:
    return messages_events(pieces) if backend == "messages" else openai_events(pieces)


def prefill_of(req: Request) -> str:
    """The assistant prefill a continuation request carries ('' for a first request)."""
    messages = req.json()["messages"]
    last = messages[-1]
    if last["role"] != "assistant":
        return ""
    content = last["content"]
    return content if isinstance(content, str) else "".join(b["text"] for b in content)
