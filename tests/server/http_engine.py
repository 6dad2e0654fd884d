"""A fake engine on a real socket, for the scheduling server run as a process
(``python -m sdk.server``): a threaded HTTP server on loopback whose answer to a
generation request is chosen by the request's ``model``:

- ``ok``: a message (or its stream, for ``stream: true``);
- ``endless``: a stream that never ends (it stops when its connection is closed);
- ``big``: a message of 2 MiB of text;
- ``not-json``: a 200 of HTML;
- ``no-message``: a 200 of ``{"foo": 1}``;
- ``redirect``: a 307 to an internal address (:data:`HIDDEN`) that must not leak.

``/health`` answers 200, ``/props`` 404 (slots come from the configuration), the model
list names ``ok``; ``count_tokens`` answers 7, or HTML for the model ``not-json``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

HIDDEN = "http://10.11.12.13:8443/internal/engine-7"  # where the redirect points


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


MESSAGE = {
    "id": "msg_fake",
    "type": "message",
    "role": "assistant",
    "model": "ok",
    "content": [{"type": "text", "text": "done"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 1},
}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(
        self, status: int, body: bytes, content_type: str = "application/json", **headers: str
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._answer(200, b'{"status":"ok"}')
        elif self.path == "/v1/models":
            self._answer(200, orjson.dumps({"data": [{"id": "ok", "type": "model"}]}))
        else:
            self._answer(404, b'{"error":{"code":404,"message":"File Not Found"}}')

    def do_POST(self) -> None:
        body = orjson.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        model = body.get("model")
        if self.path == "/v1/messages/count_tokens":
            if model == "not-json":
                self._answer(200, b"<html>a proxy's page</html>", "text/html")
            else:
                self._answer(200, b'{"input_tokens":7}')
            return
        if self.path != "/v1/messages":
            self._answer(404, b'{"error":{"code":404,"message":"File Not Found"}}')
            return
        if model == "not-json":
            self._answer(200, b"<html>a proxy's page</html>", "text/html")
        elif model == "no-message":
            self._answer(200, b'{"foo": 1}')
        elif model == "redirect":
            self._answer(307, b"", location=HIDDEN)
        elif model == "big":
            self._answer(
                200, orjson.dumps({**MESSAGE, "content": [{"type": "text", "text": "x" * (2 << 20)}]})
            )
        elif body.get("stream"):
            self._stream(endless=model == "endless")
        else:
            self._answer(200, orjson.dumps(MESSAGE))

    def _stream(self, *, endless: bool) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        start = {**MESSAGE, "content": [], "stop_reason": None}
        events = [
            _sse("message_start", {"type": "message_start", "message": start}),
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
        ]
        delta = _sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "tok " * 64}},
        )
        try:
            for ev in events:
                self.wfile.write(ev)
            n = 0
            while endless or n < 4:
                self.wfile.write(delta)
                n += 1
            for ev in (
                _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
                _sse(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "end_turn"},
                        "usage": {"output_tokens": n},
                    },
                ),
                _sse("message_stop", {"type": "message_stop"}),
            ):
                self.wfile.write(ev)
        except OSError:
            pass  # the server closed the stream


@contextmanager
def http_engine() -> Iterator[str]:
    """The fake engine, running; its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
