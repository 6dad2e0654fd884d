"""Typed requests: a type checker catches a misspelt or mistyped field at the call, and
a missing or malformed required field is a clear error before anything is sent."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mypy import api as mypy_api

from sdk import Client, InvalidRequestError

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_catches_misspelt_and_mistyped_fields(tmp_path: Path) -> None:
    src = tmp_path / "user_code.py"
    src.write_text(
        textwrap.dedent(
            """
            from sdk import Client

            async def main(c: Client) -> None:
                await c.create(model="m", max_token=10, messages=[])
                await c.create(modle="m", max_tokens=10, messages=[])
                await c.create(model="m", max_tokens=10, messages="hello")
                await c.create(model="m", max_tokens="ten", messages=[])
                async with c.stream(model="m", max_tokens=5, messages=[{"role": "robot", "content": "x"}]):
                    pass
                await c.count_tokens(model="m", messages=[], max_tokens=3)
                # fine:
                await c.create(model="m", max_tokens=9, messages=[{"role": "user", "content": "x"}], top_k=1)
            """
        )
    )
    out, _err, status = mypy_api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), str(src)]
    )
    assert status == 1, out
    lines = [ln for ln in out.splitlines() if ": error:" in ln]
    flagged = {int(ln.split(":")[1]) for ln in lines}
    assert flagged == {5, 6, 7, 8, 9, 11}, out


def handler(request: httpx2.Request) -> httpx2.Response:
    raise AssertionError("nothing may be sent")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, "model"),
        ({"model": "m", "max_tokens": 5}, "messages"),
        ({"model": "m", "max_tokens": 5, "messages": "hello"}, "messages"),
        ({"model": "m", "max_tokens": 5, "messages": [{"role": "robot", "content": "x"}]}, "messages"),
        ({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": 5}]}, "messages"),
        ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
        ({"model": "m", "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
        ({"model": "m", "max_tokens": True, "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
    ],
)
async def test_a_malformed_request_is_refused_before_sending(params: dict[str, Any], field: str) -> None:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    async with Client(base_url="http://test", api_key="k-typed", http_client=http) as c:
        with pytest.raises(InvalidRequestError) as e:
            await c.create(**params)
        assert e.value.param == field and field in str(e.value)
        with pytest.raises(InvalidRequestError):
            async with c.stream(**params):
                pass
        assert isinstance(e.value, ValueError)


async def test_the_openai_backend_does_not_require_max_tokens() -> None:
    seen: list[bytes] = []

    def ok(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.content)
        return httpx2.Response(
            200,
            json={
                "id": "c",
                "model": "m",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
                ],
            },
        )

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(ok))
    async with Client(base_url="http://test/v1", api_key="k-typed", http_client=http) as c:
        msg = await c.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert msg.text == "hi" and seen


@pytest.mark.parametrize(
    "params",
    [
        {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": ["hi", "there"]}]},
        {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": range(3)}]},
        {"model": "m", "max_tokens": 10**30, "messages": [{"role": "user", "content": "x"}]},
    ],
)
async def test_shapes_that_would_fail_later_are_refused_first(params: dict[str, Any]) -> None:
    http = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    async with Client(base_url="http://test/v1", api_key="k-typed", http_client=http) as c:
        with pytest.raises(InvalidRequestError):
            await c.create(**params)


async def test_an_unknown_keyword_is_refused_with_a_suggestion_and_extra_body_carries_it() -> None:
    seen: list[dict[str, Any]] = []

    def ok(request: httpx2.Request) -> httpx2.Response:
        import json

        seen.append(json.loads(request.content))
        return httpx2.Response(
            200,
            json={
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [{"type": "text", "text": "hi"}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        )

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(ok))
    msgs = [{"role": "user", "content": "x"}]
    async with Client(base_url="http://test", api_key="k-typed", http_client=http) as c:
        with pytest.raises(InvalidRequestError, match="did you mean 'max_tokens'") as e:
            await c.create(model="m", max_token=5, messages=msgs)  # type: ignore[call-arg]
        assert e.value.param == "max_token" and "extra_body" in str(e.value)
        with pytest.raises(InvalidRequestError, match="extra_body"):
            async with c.stream(model="m", max_tokens=5, messages=msgs, n_predict=3):  # type: ignore[call-arg]
                pass
        with pytest.raises(InvalidRequestError, match="did you mean 'messages'"):
            await c.count_tokens(model="m", mesages=msgs)  # type: ignore[call-arg]
        assert seen == []  # nothing was sent
        await c.create(model="m", max_tokens=5, messages=msgs, extra_body={"n_predict": 3})
    assert seen and seen[0]["n_predict"] == 3
