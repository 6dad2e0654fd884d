"""What a hostile or broken server cannot do to the client: exhaust its memory with a
large or compressed body, hold it past its deadline with a slow response head, pass a
redirect off as an answer, or get the client's key echoed into an error."""

from __future__ import annotations

import tracemalloc
import zlib
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk import (
    APIError,
    APITimeoutError,
    BadRequestError,
    Client,
    InternalServerError,
    RedirectError,
    ResponseTooLargeError,
    RetryPolicy,
)
from sdk.http._body import MAX_ERROR_BODY, MAX_RESPONSE_BODY

from .fault_server import FaultServer, Reply, Request, events_for, fault_server, sse

pytestmark = pytest.mark.anyio

MSG = [{"role": "user", "content": "hi"}]
NO_RETRY = RetryPolicy(max_retries=0)
DEADLINE = 60


def gzip_of_zeros(size: int) -> bytes:
    """``size`` zero bytes, gzip-compressed, built without holding them (about 1/1000)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [z.compress(block) for _ in range(size >> 20)]
    parts.append(z.flush())
    return b"".join(parts)


async def send_raw(reply: Reply, status: int, headers: dict[str, str], body: bytes) -> None:
    head = [f"HTTP/1.1 {status} X", f"content-length: {len(body)}", "connection: close"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    await reply.stream.send(("\r\n".join(head) + "\r\n\r\n").encode())
    for i in range(0, len(body), 65536):
        await reply.stream.send(body[i : i + 65536])


def client(server: FaultServer, **kw: Any) -> Client:
    kw.setdefault("retry", NO_RETRY)
    kw.setdefault("prefill_echo", True)
    return Client(base_url=server.url, api_key=kw.pop("api_key", "sk-ant-hardening-0123456789"), **kw)


# ---- bounded bodies ------------------------------------------------------------------------


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_gzip_bomb_answer_is_refused_without_expanding_it() -> None:
    bomb = gzip_of_zeros(256 << 20)  # 256 MiB of zeros in about 250 KB

    async def handler(req: Request, reply: Reply) -> None:
        await send_raw(reply, 200, {"content-type": "application/json", "content-encoding": "gzip"}, bomb)

    async with fault_server(handler) as server, client(server) as c:
        with pytest.raises(ResponseTooLargeError):  # once first: what loads once is loaded
            await c.create(model="m", max_tokens=5, messages=MSG)
        tracemalloc.start()
        try:
            with anyio.fail_after(DEADLINE), pytest.raises(ResponseTooLargeError) as e:
                await c.create(model="m", max_tokens=5, messages=MSG)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert e.value.limit == MAX_RESPONSE_BODY
    assert peak < 1.5 * MAX_RESPONSE_BODY  # the cap and a piece, never the 256 MiB


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_gzip_bomb_error_keeps_a_marked_excerpt() -> None:
    bomb = gzip_of_zeros(64 << 20)

    async def handler(req: Request, reply: Reply) -> None:
        await send_raw(reply, 500, {"content-type": "application/json", "content-encoding": "gzip"}, bomb)

    async with fault_server(handler) as server, client(server) as c:
        with pytest.raises(InternalServerError):  # once first: what loads once is loaded
            await c.create(model="m", max_tokens=5, messages=MSG)
        tracemalloc.start()
        try:
            with anyio.fail_after(DEADLINE), pytest.raises(InternalServerError) as e:
                async with c.stream(model="m", max_tokens=5, messages=MSG):
                    pass
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    body = e.value.body
    assert isinstance(body, str) and "truncated" in body
    assert len(body) < MAX_ERROR_BODY + 200
    assert peak < 16 * MAX_ERROR_BODY + (4 << 20)


async def test_an_endless_error_body_is_read_only_up_to_the_cap() -> None:
    sent: list[int] = []

    async def handler(req: Request, reply: Reply) -> None:
        await reply.stream.send(
            b"HTTP/1.1 500 X\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        line = b"internal failure, again and again " * 30
        while True:  # 1 GiB and more, until the client hangs up
            await reply.chunk(line)
            sent.append(len(line))

    async with fault_server(handler) as server, client(server) as c:
        with anyio.fail_after(DEADLINE), pytest.raises(InternalServerError) as e:
            await c.create(model="m", max_tokens=5, messages=MSG)
    body = e.value.body
    assert isinstance(body, str) and body.startswith("internal failure") and "truncated" in body
    assert len(body) < MAX_ERROR_BODY + 200
    assert sum(sent) < 64 * MAX_ERROR_BODY  # the client stopped reading near the cap


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
async def test_a_compressed_answer_and_stream_are_read(encoding: str) -> None:
    def pack(data: bytes) -> bytes:
        if encoding == "gzip":
            return zlib.compress(data, wbits=16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            return zlib.compress(data)
        return zlib.compress(data, wbits=-zlib.MAX_WBITS)

    wire = "gzip" if encoding == "gzip" else "deflate"
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "squeezed"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }

    async def handler(req: Request, reply: Reply) -> None:
        if req.json().get("stream"):
            body = pack(b"".join(events_for("messages", ["squ", "eezed"])))
            await send_raw(reply, 200, {"content-type": "text/event-stream", "content-encoding": wire}, body)
        else:
            body = pack(orjson.dumps(answer))
            await send_raw(reply, 200, {"content-type": "application/json", "content-encoding": wire}, body)

    async with fault_server(handler) as server, client(server) as c:
        msg = await c.create(model="m", max_tokens=5, messages=MSG)
        assert msg.content[0].text == "squeezed"  # type: ignore[union-attr]
        async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
            assert "".join([t async for t in s.text_deltas()]) == "squeezed"
        assert [r.headers.get("accept-encoding") for r in server.requests] == ["gzip, deflate", "identity"]


async def test_an_encoding_the_client_did_not_ask_for_is_a_clear_error() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await send_raw(
            reply, 200, {"content-type": "application/json", "content-encoding": "br"}, b"\x1b\x00"
        )

    async with fault_server(handler) as server, client(server) as c:
        with pytest.raises(APIError.__mro__[2]) as e:  # SDKError
            await c.create(model="m", max_tokens=5, messages=MSG)
    assert "'br'" in str(e.value)


# ---- deadlines -----------------------------------------------------------------------------


async def slow_head(req: Request, reply: Reply) -> None:
    """The status line and headers at one byte per 0.2 s, forever."""
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n" + b"x-filler: " + b"a" * 100_000
    for i in range(len(head)):
        await reply.stream.send(head[i : i + 1])
        await anyio.sleep(0.2)


async def test_a_slow_response_head_meets_the_deadline() -> None:
    async with fault_server(slow_head) as server, client(server, timeout=1.5, idle_timeout=1.0) as c:
        with anyio.fail_after(DEADLINE):
            with pytest.raises(APITimeoutError):
                async with c.stream(model="m", max_tokens=5, messages=MSG):
                    pass
            with pytest.raises(APITimeoutError):
                await c.create(model="m", max_tokens=5, messages=MSG)
            server.models_to_handler = True  # the list itself, not the probe of the engine
            with pytest.raises(APITimeoutError):
                await c.models()


async def test_a_slow_body_of_an_answer_meets_the_deadline() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.stream.send(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n\r\n"
        )
        while True:
            await reply.stream.send(b" ")
            await anyio.sleep(0.2)

    async with fault_server(handler) as server, client(server, timeout=1.5) as c:
        with anyio.fail_after(DEADLINE), pytest.raises(APITimeoutError):
            await c.create(model="m", max_tokens=5, messages=MSG)


# ---- redirects -----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_is_an_error_naming_status_and_location(status: int) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.respond(status, None, {"location": "https://elsewhere.example/v1/messages"})

    async with fault_server(handler) as server, client(server, retry=RetryPolicy()) as c:
        with pytest.raises(RedirectError) as e:
            await c.create(model="m", max_tokens=5, messages=MSG)
        assert e.value.status == status
        assert e.value.location == "https://elsewhere.example/v1/messages"
        assert str(status) in str(e.value) and "elsewhere.example" in str(e.value)
        with pytest.raises(RedirectError):
            async with c.stream(model="m", max_tokens=5, messages=MSG):
                pass
        assert len(server.requests) == 2  # neither followed nor retried


# ---- the key, by value ---------------------------------------------------------------------


def _everything(e: BaseException) -> str:
    parts = [str(e), repr(e), repr(getattr(e, "body", None)), repr(getattr(e, "request_id", None))]
    parts += [repr(getattr(e, "error_type", None)), repr(getattr(e, "location", None))]
    return "\n".join(parts)


def echoing(where: str):  # type: ignore[no-untyped-def]
    async def handler(req: Request, reply: Reply) -> None:
        key = req.headers.get("x-api-key") or req.headers.get("authorization", "").removeprefix("Bearer ")
        if where == "message":
            await reply.respond(
                400,
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": f"bad key {key}!"},
                    "echo": {key: [key, f"...{key}..."]},
                },
                {"request-id": f"req-{key}"},
            )
        elif where == "header":
            await reply.respond(401, {"error": {"type": "authentication_error"}}, {"request-id": key})
        elif where == "redirect":
            await reply.respond(302, None, {"location": f"https://x.example/?key={key}"})
        else:  # mid-stream error event
            await reply.start()
            await reply.chunk(
                sse(
                    "message_start",
                    {
                        "type": "message_start",
                        "message": {
                            "id": "m",
                            "type": "message",
                            "role": "assistant",
                            "model": "m",
                            "content": [],
                            "usage": {"input_tokens": 1, "output_tokens": 0},
                        },
                    },
                )
            )
            await reply.chunk(
                sse(
                    "error",
                    {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": f"your key {key} is revoked"},
                    },
                )
            )
            await reply.end()

    return handler


KEYS = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=8, max_size=40
).filter(lambda k: k.strip() == k)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("where", ["message", "header", "redirect", "stream"])
@pytest.mark.parametrize(
    "key",
    [
        "plainkeywithoutprefix12345",  # a llama-server --api-key
        "Zx9!@#$%^&*()_+-=[]{}|;:,.<>?",
        'quote"and\\backslash-key',
        "AKIAIOSFODNN7EXAMPLE",
        "0123456789",
        "x" * 200,
    ],
)
async def test_the_key_never_appears_in_an_error(key: str, where: str) -> None:
    async with fault_server(echoing(where)) as server, client(server, api_key=key) as c:
        with pytest.raises(APIError) as e:
            async with c.stream(model="m", max_tokens=5, messages=MSG) as s:
                async for _ in s:
                    pass
    assert server.requests[0].headers["x-api-key"] == key  # it was sent, and echoed
    assert key not in _everything(e.value)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=KEYS)
async def test_keys_of_any_shape_are_redacted_by_value(key: str) -> None:
    async with fault_server(echoing("message")) as server:
        base = server.url + "/v1"
        async with Client(base_url=base, backend="openai", api_key=key, retry=NO_RETRY) as c:
            with pytest.raises(BadRequestError) as e:
                await c.create(model="m", max_tokens=5, messages=MSG)
    assert key not in _everything(e.value)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_key_sent_in_an_extra_header_is_redacted_too() -> None:
    key = "proxy-key-that-has-no-known-shape"
    async with fault_server(echoing("message")) as server, client(server, api_key=None) as c:
        with pytest.raises(BadRequestError) as e:
            await c.create(model="m", max_tokens=5, messages=MSG, extra_headers={"x-api-key": key})
    assert key not in _everything(e.value)


def test_secrets_are_counted_per_registration() -> None:
    from sdk._errors import redact, register_secret, release_secret

    key = "shared-key-of-two-clients"
    assert register_secret(key) and register_secret(key)
    release_secret(key)
    assert key not in redact(f"echo {key}")  # the other client still holds it
    release_secret(key)
    assert key in redact(f"echo {key}")  # released: ordinary text again
    assert not register_secret("abc")  # too short to be a secret: ordinary words stay


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_key_across_the_cut_of_an_excerpt_is_still_masked() -> None:
    key = "llamakey-Q7wQ7wQ7wQ7wQ7wQ7wQ7w"
    prefix = b"y" * (MAX_ERROR_BODY - 10)  # the key straddles the excerpt's cut

    async def handler(req: Request, reply: Reply) -> None:
        body = prefix + key.encode() + b"z" * 1000
        await send_raw(reply, 500, {"content-type": "text/plain"}, body)

    async with fault_server(handler) as server, client(server, api_key=key) as c:
        with pytest.raises(InternalServerError) as e:
            await c.create(model="m", max_tokens=5, messages=MSG)
    body = e.value.body
    assert isinstance(body, str) and "truncated" in body
    assert key[:8] not in body  # not even its first half


def test_a_long_message_is_masked_before_it_is_cut() -> None:
    from sdk._errors import api_error_from_body, register_secret, release_secret

    key = "straddling-key-0123456789abcdef"
    register_secret(key)
    try:
        err = api_error_from_body({"error": {"message": "x" * 1990 + key}}, status=400)
    finally:
        release_secret(key)
    assert key[:8] not in str(err) and key[:8] not in repr(err)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_credential_headers_per_request_stay_bounded() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.respond(
            200,
            {
                "type": "message",
                "id": "m",
                "role": "assistant",
                "model": "m",
                "content": [],
                "stop_reason": "end_turn",
                "usage": {},
            },
        )

    async with fault_server(handler) as server, client(server) as c:
        for i in range(100):
            await c.create(
                model="m",
                max_tokens=5,
                messages=MSG,
                extra_headers={"authorization": f"Bearer tok-{i:04d}-abc"},
            )
        assert len(c._sender.credentials._secrets) <= 33  # the key and the latest header values


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_compressed_bodies_of_every_lawful_and_broken_shape() -> None:
    import gzip

    from sdk import APIConnectionError
    from sdk.http._body import read_bounded

    body = b'{"a": "' + b"x" * 5000 + b'"}'
    gz = gzip.compress(body)
    raw_deflate = zlib.compress(body, wbits=-zlib.MAX_WBITS)

    def resp(parts: list[bytes], enc: str) -> Any:
        import httpx2

        class Parts(httpx2.AsyncByteStream):
            async def __aiter__(self) -> Any:
                for p in parts:
                    yield p

        return httpx2.Response(200, headers={"content-encoding": enc}, stream=Parts())

    members = gzip.compress(body[:100]) + gzip.compress(body[100:])
    for parts, enc in (
        ([members], "gzip"),
        ([members[:30], members[30:]], "gzip"),
        ([raw_deflate[:1], raw_deflate[1:]], "deflate"),
        ([gz[:10], gz[10:]], "gzip"),
    ):
        assert await read_bounded(resp(parts, enc), 1 << 20) == (body, False)
    for parts in ([gz[:-8]], [gz[: len(gz) // 2]], [gz + b"garbage!"]):
        with pytest.raises(APIConnectionError):
            await read_bounded(resp(parts, "gzip"), 1 << 20)


def _spellings(key: str) -> dict[str, str]:
    import base64
    import re
    from urllib.parse import quote, quote_plus

    raw = key.encode()
    return {
        "percent, lower-case hex": re.sub("%..", lambda m: m[0].lower(), quote(key, safe="")),
        "percent, upper-case hex": quote(key, safe=""),
        "form-encoded": quote_plus(key, safe=""),
        "form-encoded, lower-case hex": re.sub("%..", lambda m: m[0].lower(), quote_plus(key, safe="")),
        "JSON with escaped slashes": key.replace("/", "\\/"),
        "unicode escapes": "".join(f"\\u{ord(c):04x}" for c in key),
        "unicode escapes, upper-case": "".join(f"\\u{ord(c):04X}" for c in key),
        "base64 of the key": base64.b64encode(raw).decode(),
        "inside basic auth": base64.b64encode(b"user:" + raw).decode(),
        "base64url, offset 2": base64.urlsafe_b64encode(b"ab" + raw + b"tail").decode(),
    }


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("spelling", list(_spellings("k").keys()))
async def test_a_key_echoed_in_another_spelling_is_masked(spelling: str) -> None:
    key = "Sess/ion+Key with=Odd&chars-0042"
    echoed = _spellings(key)[spelling]

    async def handler(req: Request, reply: Reply) -> None:
        await send_raw(reply, 500, {"content-type": "text/plain"}, f"upstream said: {echoed}".encode())

    async with fault_server(handler) as server, client(server, api_key=key) as c:
        with pytest.raises(InternalServerError) as e:
            await c.create(model="m", max_tokens=5, messages=MSG)
    text = _everything(e.value)
    assert "upstream said" in text
    assert echoed not in text


@settings(max_examples=200, deadline=None)
@given(key=KEYS.filter(lambda k: len(k) >= 12), before=st.binary(max_size=5), after=st.binary(max_size=5))
def test_base64_around_a_key_never_shows_its_core(key: str, before: bytes, after: bytes) -> None:
    import base64

    from sdk._errors import redact, register_secret, release_secret

    register_secret(key)
    try:
        for enc in (base64.b64encode, base64.urlsafe_b64encode):
            blob = enc(before + key.encode() + after).decode()
            masked = redact(blob)
            assert "***" in masked
            # what is left around the mask decodes to at most two bytes of the key
            assert len(blob) - len(masked.replace("***", "")) >= (len(key) * 4) // 3 - 4
    finally:
        release_secret(key)


def test_escaped_spellings_fold_only_hex_digits_and_stay_fast() -> None:
    import random
    import secrets
    import time

    from sdk._errors import redact, register_secret, release_secret

    key = "Kx" + "a" * 22 + "/Q"  # mostly one repeated letter; "/" is escaped
    keys = [key] + ["sk-ant-" + secrets.token_urlsafe(40) for _ in range(31)]
    for k in keys:
        register_secret(k)
    try:
        assert redact("%2f".join(["Kx" + "a" * 22, "Q"])) == "***"
        # the key's own letters keep their case: another word is not masked
        upper = "KX" + "A" * 22 + "%2FQ"
        assert redact(upper) == upper
        text = "".join(random.Random(7).choices("abcdef0123456789%\\u ", k=1 << 20))
        redact("warm up")
        t0 = time.perf_counter()
        redact(text)
        # one scan by first character: 32 keys took some 3 s on this MiB when the escaped
        # spellings were case-insensitive groups, some 0.3 s after
        assert time.perf_counter() - t0 < 1.2
    finally:
        for k in keys:
            release_secret(k)
