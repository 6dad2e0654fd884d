"""An engine that answers what no engine should (HTML with a 200, ``{"foo": 1}``, a redirect
to an internal address): ``python -m sdk.server`` answers its client 502 with a message of
its own, never the engine's status, never an empty message, never the redirect target."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from .conftest import serving
from .http_engine import HIDDEN, http_engine

CONFIG = """
[server]
slots = 1
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with http_engine() as engine, serving([engine], CONFIG, tmp_path_factory.mktemp("faults")) as (url, _):
        yield url


def post(url: str, path: str, body: dict[str, object]) -> tuple[int, dict[str, object], bytes]:
    import urllib.error
    import urllib.request

    req = urllib.request.Request(
        url + path, data=orjson.dumps(body), headers={"content-type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return r.status, dict(r.headers), raw
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def ask(model: str) -> dict[str, object]:
    return {"model": model, "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize("model", ["not-json", "no-message"])
def test_a_malformed_200_from_the_engine_is_a_502(server: str, model: str) -> None:
    status, _, raw = post(server, "/v1/messages", ask(model))
    assert status == 502, raw
    body = orjson.loads(raw)
    assert body["type"] == "error" and body["error"]["type"] == "api_error"
    assert "malformed" in body["error"]["message"]


def test_a_malformed_200_on_the_openai_route_is_a_502(server: str) -> None:
    status, _, raw = post(server, "/v1/chat/completions", ask("no-message"))
    assert status == 502, raw
    assert "error" in orjson.loads(raw)


def test_a_non_json_count_from_the_engine_is_a_502(server: str) -> None:
    status, _, raw = post(server, "/v1/messages/count_tokens", ask("not-json"))
    assert status == 502, raw


def test_a_good_answer_still_passes(server: str) -> None:
    status, _, raw = post(server, "/v1/messages", ask("ok"))
    assert status == 200 and orjson.loads(raw)["content"] == [{"type": "text", "text": "done"}]


def test_an_engine_redirect_is_a_502_that_does_not_name_its_target(server: str) -> None:
    status, headers, raw = post(server, "/v1/messages", ask("redirect"))
    assert status == 502, raw
    assert "10.11.12.13" not in raw.decode() and "internal" not in raw.decode()
    assert not any(k.lower() == "location" for k in headers)
    assert HIDDEN not in str(headers)
