"""A streamed request answered 200 with something that is not an event stream (a proxy's
HTML, a whole JSON message from a server that ignored ``stream: true``) fails at once
with a :class:`~sdk.StreamProtocolError` carrying a masked excerpt of the body: it is
decided on the response head, so it is neither sent again nor resumed (it used to reach
the SSE decoder, which found no events, and the stream resumed it eight times before an
:class:`~sdk.IncompleteStreamError`). And a ``count_tokens`` answer without a count is
an error, not a silent estimate."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from sdk import APIError, Client, IncompleteStreamError, StreamProtocolError

from ..server.conftest import serving
from ..server.http_engine import http_engine
from .fault_server import FaultServer, Reply, Request, events_for, fault_server, prefill_of

pytestmark = pytest.mark.anyio

KEY = "sk-ant-streamfaults-0123456789abcdef"
MSG = [{"role": "user", "content": "hi"}]
DEADLINE = 30
# A proxy's page that echoes the key it was sent: the excerpt must not.
HTML = b"<html><body>Gateway says hello; your key " + KEY.encode() + b" is not welcome</body></html>"
MESSAGE = orjson.dumps(
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "whole"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1},
    }
)


@pytest.fixture(params=["messages", "openai"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def client(server: FaultServer, backend: str, **kw: Any) -> Client:
    kw.setdefault("prefill_echo", False)
    return Client(base_url=server.url + ("/v1" if backend == "openai" else ""), api_key=KEY, **kw)


async def whole(reply: Reply, body: bytes, content_type: str | None) -> None:
    head = ["HTTP/1.1 200 OK", f"content-length: {len(body)}", "connection: close"]
    if content_type is not None:
        head.append(f"content-type: {content_type}")
    await reply.stream.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)


NOT_A_STREAM = {
    "html": (HTML, "text/html; charset=utf-8"),
    "a whole message": (MESSAGE, "application/json"),
    "plain text": (b"upstream connect error or disconnect/reset before headers", "text/plain"),
}


@pytest.mark.parametrize("case", NOT_A_STREAM, ids=list(NOT_A_STREAM))
async def test_a_streamed_200_that_is_not_an_event_stream_fails_at_once(
    anyio_backend: str, backend: str, case: str
) -> None:
    body, ctype = NOT_A_STREAM[case]

    async def handler(req: Request, reply: Reply) -> None:
        await whole(reply, body, ctype)

    async with fault_server(handler) as server, client(server, backend) as c:
        with anyio.fail_after(DEADLINE), pytest.raises(StreamProtocolError) as e:
            async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
                async for _ in s:
                    pass
    err = e.value
    assert not isinstance(err, IncompleteStreamError | APIError), repr(err)
    assert len(server.requests) == 1  # neither sent again nor resumed
    assert ctype.split(";")[0] in err.message and "event stream" in err.message
    assert isinstance(err.event, str) and err.event.startswith(body[:20].decode())
    assert KEY not in err.message and KEY not in str(err.event) and KEY not in repr(err)


async def test_the_excerpt_of_a_huge_answer_is_bounded(anyio_backend: str) -> None:
    body = b"<html>" + b"x" * (4 << 20) + b"</html>"

    async def handler(req: Request, reply: Reply) -> None:
        await whole(reply, body, "text/html")

    async with fault_server(handler) as server, client(server, "messages") as c:
        with anyio.fail_after(DEADLINE), pytest.raises(StreamProtocolError) as e:
            async with c.stream(model="m", max_tokens=5, messages=MSG):
                pass
    assert isinstance(e.value.event, str) and 0 < len(e.value.event) <= 2000


@pytest.mark.parametrize(
    "ctype",
    ["text/event-stream", "text/event-stream; charset=utf-8", "Text/Event-Stream ;charset=UTF-8", None],
)
async def test_an_event_stream_with_parameters_or_no_content_type_still_reads(
    anyio_backend: str, backend: str, ctype: str | None
) -> None:
    """llama-server sends ``text/event-stream``, vLLM (Starlette) and the hosted APIs
    ``text/event-stream; charset=utf-8``; a server that names no type at all is read as
    one (only an explicit other type is refused)."""

    async def handler(req: Request, reply: Reply) -> None:
        await whole(reply, b"".join(events_for(backend, ["a", "b"])), ctype)

    async with fault_server(handler) as server, client(server, backend) as c:
        with anyio.fail_after(DEADLINE):
            async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
                msg = await s.final_message()
    assert msg.text == "ab" and len(server.requests) == 1


async def test_a_continuation_answered_with_html_fails_with_the_partial(
    anyio_backend: str, backend: str
) -> None:
    """After a break, the continuation's answer is checked the same way: one try, and the
    error carries what the consumer already has."""

    async def handler(req: Request, reply: Reply) -> None:
        if prefill_of(req):
            await whole(reply, HTML, "text/html")
            return
        await reply.start()
        for ev in events_for(backend, ["one ", "two ", "three"])[:3]:
            await reply.chunk(ev)  # cut inside the text: no terminating chunk

    async with fault_server(handler) as server, client(server, backend) as c:
        with anyio.fail_after(DEADLINE), pytest.raises(StreamProtocolError) as e:
            async with c.stream(model="m", max_tokens=50, messages=MSG) as s:
                async for _ in s:
                    pass
    err = e.value
    assert not isinstance(err, IncompleteStreamError), repr(err)
    assert len(server.requests) == 2  # the stream, one continuation
    assert err.partial is not None and err.partial.text.startswith("one ")
    assert KEY not in str(err.event) and KEY not in repr(err)


def test_a_scheduling_server_answers_502_for_an_engine_stream_that_is_not_one(tmp_path: Path) -> None:
    """``python -m sdk.server`` in front of an engine that answers a stream with HTML: its
    client fails on the head, before the server has answered, so the server's client
    gets a 502 (it got a 200 whose only event was an error)."""
    body = {"model": "not-json", "max_tokens": 5, "stream": True, "messages": MSG}
    with http_engine() as engine, serving([engine], "[server]\nslots = 1\n", tmp_path) as (url, _):
        req = urllib.request.Request(
            url + "/v1/messages",
            data=orjson.dumps(body),
            headers={"content-type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=DEADLINE) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
    assert status == 502, raw
    assert orjson.loads(raw)["error"]["type"] == "api_error"


# ---- count_tokens ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"{}",
        b'{"tokens": 12}',
        b'{"input_tokens": null}',
        b'{"input_tokens": "12"}',
        b'{"input_tokens": 12.0}',
        b'{"input_tokens": true}',
        b'{"input_tokens": -1}',
    ],
)
async def test_a_count_without_an_integer_count_is_a_protocol_error(anyio_backend: str, body: bytes) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await whole(reply, body, "application/json")

    async with fault_server(handler) as server, client(server, "messages") as c:
        with anyio.fail_after(DEADLINE), pytest.raises(StreamProtocolError, match="input_tokens"):
            await c.count_tokens(model="m", messages=MSG)
    assert len(server.requests) == 1


async def test_a_count_reads_the_servers_number_and_a_404_still_falls_back(anyio_backend: str) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        if len(server.requests) == 1:
            await whole(reply, b'{"input_tokens": 0}', "application/json")
        else:
            await reply.respond(404, {"type": "error", "error": {"type": "not_found_error", "message": "no"}})

    async with fault_server(handler) as server, client(server, "messages") as c:
        with anyio.fail_after(DEADLINE):
            first = await c.count_tokens(model="m", messages=MSG)
            second = await c.count_tokens(model="m", messages=MSG)
            third = await c.count_tokens(model="m", messages=MSG)
    assert (first.input_tokens, first.source) == (0, "server")
    assert second.source == third.source == "estimate" and second.input_tokens > 0
    assert len(server.requests) == 2  # a server without the endpoint is asked no more
