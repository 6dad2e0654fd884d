"""The scheduling server in front of the real llama-server: third-party clients work
against it unchanged, priorities preempt, bad input gets clear errors."""

from __future__ import annotations

import socket
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import anthropic
import anyio
import httpx2
import openai
import orjson
import pytest

from sdk import Client, RateLimitError, RetryPolicy

from .conftest import ALICE, BOB, Served

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

GREEDY: dict[str, Any] = {"temperature": 0, "top_k": 1, "cache_prompt": False, "seed": 7}
LIST = [{"role": "user", "content": "A list of facts about cats:\n1."}]


async def test_anthropic_sdk_streams_the_same_text_as_llama_server_directly(served: Served) -> None:
    model = served.upstream.model
    direct = anthropic.AsyncAnthropic(base_url=served.upstream.url, api_key="unused")
    proxied = anthropic.AsyncAnthropic(base_url=served.url, api_key=ALICE)
    texts = []
    for c in (direct, proxied):
        async with c.messages.stream(model=model, max_tokens=24, messages=LIST, extra_body=GREEDY) as s:
            texts.append("".join([t async for t in s.text_stream]))
            final = await s.get_final_message()
        assert final.stop_reason in ("end_turn", "max_tokens")
    assert texts[0] and texts[0] == texts[1]
    created = await proxied.messages.create(model=model, max_tokens=24, messages=LIST, extra_body=GREEDY)
    assert created.content[0].text == texts[0]  # type: ignore[union-attr]
    await direct.close()
    await proxied.close()


async def test_this_sdks_client_against_the_server(served: Served) -> None:
    async with Client(base_url=served.url, api_key=ALICE) as c:
        async with c.stream(model=served.upstream.model, max_tokens=12, messages=LIST, **GREEDY) as s:
            text = "".join([t async for t in s.text_deltas()])
        assert text
        n = await c.count_tokens(model=served.upstream.model, messages=LIST)
        assert n.input_tokens > 0
        models = await c.models()
        assert [m.id for m in models] == [served.upstream.model]


async def test_an_interactive_request_preempts_a_batch_stream_that_then_ends_as_uninterrupted(
    served: Served,
) -> None:
    model = served.upstream.model
    req = {"model": model, "max_tokens": 40, "messages": LIST, **GREEDY}
    async with (
        Client(base_url=served.url, api_key=BOB) as bob,
        Client(base_url=served.url, api_key=ALICE) as alice,
    ):
        whole = await bob.create(**req)
        texts: list[str] = []
        some = anyio.Event()
        with anyio.fail_after(300):
            async with anyio.create_task_group() as tg:

                async def batch() -> None:
                    async with bob.stream(**req) as s:  # bob's tier is batch
                        async for t in s.text_deltas():
                            texts.append(t)
                            if len(texts) == 5:
                                some.set()

                tg.start_soon(batch)
                await some.wait()
                urgent = await alice.create(
                    model=model,
                    max_tokens=4,
                    messages=[{"role": "user", "content": "Days of the week: Monday,"}],
                    **GREEDY,
                )
    assert urgent.text
    assert "".join(texts) == whole.text  # one uninterrupted stream for bob
    async with httpx2.AsyncClient() as http:
        metrics = (await http.get(served.url + "/metrics")).text
    counts = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in metrics.splitlines()
        if line and not line.startswith("#")
    }
    assert counts['seam_preemptions_total{tier="batch"}'] >= 1
    assert counts['seam_e2el_seconds_count{tier="interactive"}'] >= 1
    assert counts['seam_ttft_seconds_count{tier="batch"}'] >= 1
    assert counts['seam_requests_total{outcome="ok",tier="batch"}'] >= 2


@pytest.mark.parametrize(
    ("headers", "body", "status", "error_type"),
    [
        ({"x-api-key": ALICE}, b"{not json", 400, "invalid_request_error"),
        ({"x-api-key": ALICE}, b"[1, 2]", 400, "invalid_request_error"),
        ({"x-api-key": ALICE}, b'{"model": "m", "messages": []}', 400, "invalid_request_error"),
        ({}, b'{"model": "m", "max_tokens": 5, "messages": []}', 401, "authentication_error"),
        (
            {"x-api-key": "wrong"},
            b'{"model": "m", "max_tokens": 5, "messages": []}',
            401,
            "authentication_error",
        ),
        (
            {"x-api-key": ALICE},
            b'{"model": "m", "max_tokens": 5, "messages": [], "pad": "' + b"x" * 70000 + b'"}',
            413,
            "request_too_large",
        ),
        (
            {"x-api-key": ALICE, "seam-priority": "urgent"},
            b'{"model": "m", "max_tokens": 5, "messages": []}',
            400,
            "invalid_request_error",
        ),
        (
            {"x-api-key": BOB, "seam-priority": "interactive"},
            b'{"model": "m", "max_tokens": 5, "messages": []}',
            403,
            "permission_error",
        ),
    ],
)
async def test_bad_input_gets_a_clear_error_and_the_server_stays_up(
    served: Served, headers: dict[str, str], body: bytes, status: int, error_type: str
) -> None:
    async with httpx2.AsyncClient(base_url=served.url, timeout=30) as http:
        r = await http.post(
            "/v1/messages", content=body, headers={"content-type": "application/json", **headers}
        )
        assert r.status_code == status
        err = r.json()
        assert err["type"] == "error" and err["error"]["type"] == error_type and err["error"]["message"]
        assert served.upstream.url not in r.text
        assert (await http.get("/health")).status_code == 200


async def test_unknown_routes_and_methods(served: Served) -> None:
    async with httpx2.AsyncClient(base_url=served.url, timeout=30) as http:
        assert (await http.get("/nope")).status_code == 404
        r = await http.get("/v1/messages", headers={"x-api-key": ALICE})
        assert r.status_code == 405 and r.json()["error"]["type"] == "invalid_request_error"


COUNT = [{"role": "user", "content": "The numbers from 1 to 1000: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,"}]


def _sse_text(raw: bytes) -> str:
    out = []
    for frame in raw.decode().split("\n\n"):
        for line in frame.splitlines():
            if line.startswith("data: "):
                ev = orjson.loads(line[6:])
                if ev.get("type") == "content_block_delta" and ev["delta"].get("type") == "text_delta":
                    out.append(ev["delta"]["text"])
    return "".join(out)


def _dechunk(raw: bytes) -> bytes:
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    out = b""
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out += body[:size]
        body = body[size + 2 :]
    return out


def _pausing_client(url: str, body: bytes, key: str, pause: Callable[[], None]) -> bytes:
    """A blocking HTTP/1.1 client with a 4 KiB receive buffer set before it connects (set
    later, the window it advertised at the handshake stays): it reads until five text
    deltas arrived, calls ``pause`` without reading, then reads the rest."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(300)
    sock.connect((host, int(port)))
    head = (
        f"POST /v1/messages HTTP/1.1\r\nhost: {host}\r\nx-api-key: {key}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    sock.sendall(head.encode() + body)
    raw = b""
    with sock:
        while raw.count(b"text_delta") < 5:
            raw += sock.recv(1024)
        pause()
        while part := sock.recv(65536):
            raw += part
    return _dechunk(raw)


async def test_a_client_that_stops_reading_stops_the_engine_and_the_stream_completes(served: Served) -> None:
    """The client reads a few events, then nothing for a while: the engine decodes at most
    what the buffers between it and the client hold (the stream's 4 KiB, the server's
    socket and the client's own small receive buffer) instead of the whole answer, its
    slot is free, and once the client reads again the stream completes equal to the
    uninterrupted greedy output."""
    model = served.upstream.model
    req = {"model": model, "max_tokens": 600, "messages": COUNT, **GREEDY}
    async with Client(base_url=served.upstream.url) as direct:
        whole = await direct.create(**req)
    assert whole.usage.output_tokens == 600  # the answer is long enough to matter
    seen: dict[str, Any] = {}

    def pause() -> None:
        def probe(path: str) -> Any:
            with urllib.request.urlopen(served.upstream.url + path, timeout=10) as r:
                return r.read()

        def decoded() -> int:
            text = probe("/metrics").decode()
            (line,) = [ln for ln in text.splitlines() if ln.startswith("llamacpp:n_decode_total")]
            return int(float(line.split()[-1]))

        def busy() -> bool:
            return any(s["is_processing"] for s in orjson.loads(probe("/slots")))

        # The client stops reading until the engine has stopped decoding for 3 s (at
        # most 90 s: on a starved CPU the buffers take longer to fill). Real time is the
        # point here; the engine's own counters say when it stopped.
        before = last = decoded()
        still_since = time.monotonic()
        deadline = still_since + 90.0
        while time.monotonic() < deadline:
            time.sleep(0.5)
            n = decoded()
            if n != last:
                last, still_since = n, time.monotonic()
            elif time.monotonic() - still_since >= 3.0 and not busy():
                break
        seen["during"] = last - before
        seen["slots"] = orjson.loads(probe("/slots"))

    body = orjson.dumps({**req, "stream": True})
    raw = await anyio.to_thread.run_sync(_pausing_client, served.url, body, ALICE, pause)
    assert not any(s["is_processing"] for s in seen["slots"])  # the slot was given back
    assert seen["during"] < 250, seen["during"]  # about 550 without backpressure (55 tokens/s)
    assert _sse_text(raw) == whole.text


async def test_openai_sdk_gets_the_same_text_as_from_llama_server_directly(served: Served) -> None:
    model = served.upstream.model
    direct = openai.AsyncOpenAI(base_url=served.upstream.url + "/v1", api_key="unused")
    proxied = openai.AsyncOpenAI(base_url=served.url + "/v1", api_key=ALICE)
    extra = {"top_k": 1, "cache_prompt": False}
    texts = []
    for c in (direct, proxied):
        stream = await c.chat.completions.create(
            model=model,
            max_tokens=24,
            messages=LIST,  # type: ignore[arg-type]
            temperature=0,
            seed=7,
            stream=True,
            stream_options={"include_usage": True},
            extra_body=extra,
        )
        parts, finish, usage = [], None, None
        async for chunk in stream:
            if chunk.choices:
                parts.append(chunk.choices[0].delta.content or "")
                finish = chunk.choices[0].finish_reason or finish
            if chunk.usage is not None:
                usage = chunk.usage
        texts.append("".join(parts))
        assert finish in ("stop", "length") and usage is not None and usage.completion_tokens > 0
    assert texts[0] and texts[0] == texts[1]
    whole = await proxied.chat.completions.create(
        model=model,
        max_tokens=24,
        messages=LIST,
        temperature=0,
        seed=7,
        extra_body=extra,  # type: ignore[arg-type]
    )
    assert whole.choices[0].message.content == texts[0]
    models = await proxied.models.list()
    assert [m.id for m in models.data] == [model]
    with pytest.raises(openai.BadRequestError, match="n must be 1"):
        await proxied.chat.completions.create(model=model, max_tokens=4, messages=LIST, n=2)  # type: ignore[arg-type]
    stranger = openai.AsyncOpenAI(base_url=served.url + "/v1", api_key="nope")
    with pytest.raises(openai.AuthenticationError):
        await stranger.chat.completions.create(model=model, max_tokens=4, messages=LIST)  # type: ignore[arg-type]
    await stranger.close()  # its finalizer would close it on whatever event loop runs then
    await direct.close()
    await proxied.close()


def _server_counts(served: Served) -> dict[str, float]:
    with urllib.request.urlopen(served.url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return {ln.split(" ")[0]: float(ln.split(" ")[1]) for ln in text.splitlines() if ln and ln[0] != "#"}


async def test_a_dropped_connection_reattaches_with_last_event_id_without_regeneration(
    served: Served,
) -> None:
    model = served.upstream.model
    req = {"model": model, "max_tokens": 80, "messages": COUNT, **GREEDY}
    async with Client(base_url=served.upstream.url) as direct:
        whole = await direct.create(**req)
    before = _server_counts(served)
    async with httpx2.AsyncClient(base_url=served.url, timeout=60) as http:
        first = b""
        async with http.stream(
            "POST", "/v1/messages", json={**req, "stream": True}, headers={"x-api-key": ALICE}
        ) as r:
            sid = r.headers["seam-stream-id"]
            async for part in r.aiter_raw():
                first += part
                if first.count(b"text_delta") >= 10:
                    break  # the connection is dropped here, mid-stream
        last = [ln for ln in first.decode().split("\n\n") if "text_delta" in ln][9].split("\n")[0]
        assert last.startswith(f"id: {sid}:")
        last_id = last[4:]
        kept = first.decode().split("\n\n")
        seen = "\n\n".join(kept[: kept.index(next(f for f in kept if f.startswith("id: " + last_id))) + 1])
        # another tenant cannot take it over; an unknown stream is a clear 404
        other = await http.post(
            "/v1/messages", json=req, headers={"x-api-key": BOB, "last-event-id": last_id}
        )
        assert other.status_code == 404 and other.json()["error"]["type"] == "not_found_error"
        gone = await http.post(
            "/v1/messages", json=req, headers={"x-api-key": ALICE, "last-event-id": "nope:3"}
        )
        assert gone.status_code == 404
        r2 = await http.post("/v1/messages", json=req, headers={"x-api-key": ALICE, "last-event-id": last_id})
        assert r2.status_code == 200 and r2.headers["seam-stream-id"] == sid
    text = _sse_text((seen + "\n\n").encode() + r2.content)
    assert text == whole.text  # the rest, exactly once
    after = _server_counts(served)
    assert after["seam_reattached_total"] == before.get("seam_reattached_total", 0) + 1
    pauses = 'seam_backpressure_pauses_total{tier="interactive"}'
    assert after.get(pauses, 0) == before.get(pauses, 0)  # the engine stream never paused: one request


async def _head_bytes(served: Served, body: dict[str, Any]) -> int:
    """The size of the server's response head to a streamed request (its stream id and
    date are of a fixed width), read to its end (a stream left after its head would be
    kept, and counted in its upstream's load, for replay_seconds)."""
    host, port = served.url.removeprefix("http://").split(":")
    raw = orjson.dumps(body)
    async with await anyio.connect_tcp(host, int(port)) as sock:
        await sock.send(
            b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            b"x-api-key: %s\r\ncontent-length: %d\r\n\r\n%s" % (ALICE.encode(), len(raw), raw)
        )
        got = b""
        while b"message_stop" not in got:
            got += await sock.receive()
    return got.index(b"\r\n\r\n") + 4


async def test_a_client_done_with_a_stream_ends_it_on_the_server(served: Served) -> None:
    """The SDK's client deletes a stream the server keeps for a reattach when nobody will
    come back for it: the consumer left it early, or its answer broke before the first
    event and the request is sent again (the broken one would decode on for nobody and
    hold its slot)."""
    from tests.client.proxy import proxy

    model = served.upstream.model
    req = {"model": model, "max_tokens": 200, "messages": COUNT, **GREEDY}
    async with Client(base_url=served.upstream.url) as direct:
        whole = await direct.create(**req)
    deleted = "seam_streams_deleted_total"
    before = _server_counts(served).get(deleted, 0)
    async with Client(base_url=served.url, api_key=ALICE) as c, c.stream(**req) as s:
        n = 0
        async for _ in s.text_deltas():
            n += 1
            if n == 3:
                break  # left early
    assert _server_counts(served).get(deleted, 0) == before + 1
    head = await _head_bytes(served, {**req, "max_tokens": 1, "stream": True})
    async with proxy(served.url) as p:
        p.cut_after = head + 8  # the head, with the stream's id, and no whole event
        fresh = httpx2.AsyncClient(limits=httpx2.Limits(max_keepalive_connections=0), timeout=60)
        async with Client(base_url=p.url, api_key=ALICE, http_client=fresh) as c, c.stream(**req) as s:
            text = "".join([t async for t in s.text_deltas()])  # a connection per request
        assert p.cuts == 1
        assert any(h.startswith(b"DELETE /v1/streams/") for h in p.heads), p.heads
    assert text == whole.text
    assert _server_counts(served).get(deleted, 0) == before + 2


# A 1x1 PNG.
_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNgAAIAAAUAAeImBZsAAAAASUVORK5CYII="


async def test_an_image_for_an_engine_without_vision_is_a_400_not_a_retried_500(served: Served) -> None:
    """llama-server without a projector answers an image with a 500, which
    anthropic-sdk and openai-python retry; through the server it is a 400 that says so."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _PNG}}
    body = {
        "model": served.upstream.model,
        "max_tokens": 4,
        "messages": [{"role": "user", "content": [image, {"type": "text", "text": "A cat"}]}],
    }
    async with httpx2.AsyncClient(base_url=served.url, timeout=60) as http:
        for stream in (False, True):
            r = await http.post("/v1/messages", json={**body, "stream": stream}, headers={"x-api-key": ALICE})
            assert r.status_code == 400, r.text
            err = r.json()["error"]
            assert err["type"] == "invalid_request_error" and "image input is not supported" in err["message"]


async def test_a_tenant_over_its_quota_gets_429_with_the_headers_clients_pace_by(served: Served) -> None:
    from .conftest import CAROL

    body = {"model": served.upstream.model, "max_tokens": 1, "messages": LIST, **GREEDY}
    async with httpx2.AsyncClient(base_url=served.url, timeout=60) as http:
        answers = [await http.post("/v1/messages", json=body, headers={"x-api-key": CAROL}) for _ in range(3)]
    assert [r.status_code for r in answers] == [200, 200, 429]
    assert [r.headers["x-ratelimit-remaining-requests"] for r in answers] == ["1", "0", "0"]
    assert answers[0].headers["anthropic-ratelimit-requests-limit"] == "2"
    refused = answers[2]
    assert refused.json()["error"]["type"] == "rate_limit_error"
    assert 1 <= int(refused.headers["retry-after"]) <= 30
    # this SDK's client learns the quota from those headers (and, with retries, would wait
    # out the retry-after in its queue; here it reports the 429 at once)
    async with Client(base_url=served.url, api_key=CAROL, retry=RetryPolicy(max_retries=0)) as c:
        with pytest.raises(RateLimitError):
            await c.create(**body)
        bucket = c.scheduler.stats().buckets["requests"]
    assert bucket[1] == 2.0 and bucket[0] < 1


async def test_a_stream_counts_once_in_its_upstreams_load(served: Served) -> None:
    req = {"model": served.upstream.model, "max_tokens": 60, "messages": COUNT, "stream": True, **GREEDY}
    async with (
        httpx2.AsyncClient(base_url=served.url, timeout=60) as http,
        http.stream("POST", "/v1/messages", json=req, headers={"x-api-key": ALICE}) as r,
    ):
        chunks = r.aiter_raw()
        raw = b""
        while raw.count(b"text_delta") < 3:
            raw += await chunks.__anext__()
        health = (await http.get("/health")).json()
        async for part in chunks:  # read the rest
            raw += part
    assert health["upstreams"][0]["in_flight"] == 1
    assert b"message_stop" in raw
