"""The scheduling server's HTTP pieces: ASGI types, error answers in both protocols'
shapes, and how each protocol frames a stream (Messages SSE events, OpenAI chunks)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, Protocol

import anyio
import orjson

from ..stream import Event
from ..stream._wire import event_to_wire, sse_frame
from ._openai import ChunkWriter

__all__ = [
    "ERROR_TYPES",
    "ChatFramer",
    "Framer",
    "HTTPError",
    "Message",
    "MessagesFramer",
    "Receive",
    "Scope",
    "Send",
    "WriteTimeout",
    "error_body",
    "header_map",
    "model_entry",
    "openai_error_body",
    "send_json",
    "watch_disconnect",
    "with_id",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_JSON = [(b"content-type", b"application/json")]


class HTTPError(Exception):
    """An error answer: status, the Messages API's error type, a message."""

    def __init__(
        self,
        status: int,
        error_type: str,
        message: str,
        headers: Mapping[str, str] | None = None,
        param: str | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message
        self.headers = dict(headers or {})
        self.param = param


class WriteTimeout(Exception):
    """A write to the client took longer than the server's ``send_timeout``: a client that
    stopped reading. Its response is abandoned (the connection closes) and a stream
    written to it is ended, its slot freed."""


ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


async def watch_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            scope.cancel()
            return


def header_map(scope: Scope) -> dict[str, str]:
    return {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}


class Framer(Protocol):
    """How one protocol writes a stream: frames for an event, an error frame, the end."""

    def frames(self, ev: Event) -> list[bytes]: ...

    def error(self, err: HTTPError) -> bytes: ...

    def done(self) -> bytes: ...


class MessagesFramer:
    def frames(self, ev: Event) -> list[bytes]:
        return [sse_frame(*event_to_wire(ev))]

    def error(self, err: HTTPError) -> bytes:
        return sse_frame("error", error_body(err.error_type, err.message))

    def done(self) -> bytes:
        return b""


class ChatFramer:
    def __init__(self, writer: ChunkWriter) -> None:
        self.writer = writer

    def frames(self, ev: Event) -> list[bytes]:
        return [b"data: " + orjson.dumps(c) + b"\n\n" for c in self.writer.feed(ev)]

    def error(self, err: HTTPError) -> bytes:
        return b"data: " + orjson.dumps(openai_error_body(err)) + b"\n\n"

    def done(self) -> bytes:
        return b"data: [DONE]\n\n"


def model_entry(model_id: str, display_name: str | None) -> dict[str, Any]:
    return {
        "id": model_id,
        "type": "model",
        "object": "model",
        "display_name": display_name or model_id,
        "created_at": "1970-01-01T00:00:00Z",
        "created": 0,
        "owned_by": "seam",
    }


def with_id(frame: bytes, sid: str, n: int) -> bytes:
    return b"id: " + f"{sid}:{n}".encode() + b"\n" + frame


def openai_error_body(e: HTTPError) -> dict[str, Any]:
    return {"error": {"message": e.message, "type": e.error_type, "param": e.param, "code": None}}


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


async def send_json(send: Send, status: int, body: object, headers: Mapping[str, str] | None = None) -> None:
    raw = orjson.dumps(body)
    hdrs = [*_JSON, (b"content-length", str(len(raw)).encode())]
    hdrs += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": raw})
