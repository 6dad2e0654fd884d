"""A server that answers 200 with something that is not the protocol's answer (HTML from a
proxy, ``{"foo": 1}``, a list, an error object) gets a :class:`~sdk.StreamProtocolError`
from the client, never an empty message and never an :class:`~sdk.APIError` carrying
the 200 (which a scheduling server in front passed on as its own 200)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from sdk import APIError, Client, RedirectError, StreamProtocolError

from .fault_server import Reply, Request, fault_server

pytestmark = pytest.mark.anyio

KEY = "sk-ant-faults-0123456789abcdef"
REQ: dict[str, Any] = dict(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])


def answering(status: int, body: bytes, content_type: str = "application/json", **headers: str) -> Any:
    async def handler(req: Request, reply: Reply) -> None:
        head = [f"HTTP/1.1 {status} X", f"content-type: {content_type}", f"content-length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in headers.items()] + ["connection: close"]
        await reply.stream.send(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    return handler


MALFORMED = {
    "html": (b"<html><body>Gateway says hello</body></html>", "text/html", "not JSON"),
    "truncated": (b'{"id": "msg_1", "content": [', "application/json", "not JSON"),
    "list": (b"[1, 2, 3]", "application/json", "not an object"),
    "no content": (b'{"foo": 1}', "application/json", "no content list"),
    "content not a list": (b'{"type": "message", "content": "hi"}', "application/json", "no content list"),
    "an error with a 200": (
        b'{"type": "error", "error": {"type": "api_error", "message": "boom"}}',
        "application/json",
        "its type is 'error'",
    ),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
async def test_a_malformed_200_to_create_is_a_protocol_error(anyio_backend: str, case: str) -> None:
    body, ctype, says = MALFORMED[case]
    async with (
        fault_server(answering(200, body, ctype)) as server,
        Client(base_url=server.url, api_key=KEY) as c,
    ):
        with anyio.fail_after(30), pytest.raises(StreamProtocolError, match=says) as e:
            await c.create(**REQ)
    assert not isinstance(e.value, APIError)
    assert len(server.requests) == 1  # a broken answer is not retried


@pytest.mark.parametrize(
    "body", [b'{"foo": 1}', b'{"choices": []}', b'{"error": {"message": "x"}, "choices": [{}]}']
)
async def test_a_malformed_200_to_an_openai_create_is_a_protocol_error(
    anyio_backend: str, body: bytes
) -> None:
    async with (
        fault_server(answering(200, body)) as server,
        Client(base_url=server.url + "/v1", api_key=KEY) as c,
    ):
        with anyio.fail_after(30), pytest.raises(StreamProtocolError, match="choices"):
            await c.create(**REQ)


async def test_a_proper_message_with_unknown_blocks_still_reads(anyio_backend: str) -> None:
    """The check is on the answer's shape, not its vocabulary: new block types pass."""
    body = b'{"type": "message", "role": "assistant", "content": [{"type": "future_block", "x": 1}]}'
    async with fault_server(answering(200, body)) as server, Client(base_url=server.url, api_key=KEY) as c:
        msg = await c.create(**REQ)
    assert [b.type for b in msg.content] == ["future_block"]


async def test_a_non_json_model_list_or_count_is_a_protocol_error(anyio_backend: str) -> None:
    async with (
        fault_server(answering(200, b"<html>login</html>", "text/html")) as server,
        Client(base_url=server.url, api_key=KEY) as c,
    ):
        server.models_to_handler = True
        with anyio.fail_after(30), pytest.raises(StreamProtocolError, match="not JSON"):
            await c.models()
        with anyio.fail_after(30), pytest.raises(StreamProtocolError, match="not JSON"):
            await c.count_tokens(model="m", messages=REQ["messages"])


async def test_a_redirect_is_a_typed_error_and_not_followed(anyio_backend: str) -> None:
    async with (
        fault_server(answering(307, b"", location="http://10.1.2.3/private")) as server,
        Client(base_url=server.url, api_key=KEY) as c,
    ):
        with anyio.fail_after(30), pytest.raises(RedirectError) as e:
            await c.create(**REQ)
    assert e.value.status == 307 and len(server.requests) == 1
