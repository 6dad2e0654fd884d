"""The server's pure parts: configuration and keys, the OpenAI request translation and
chunk writer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from sdk.server import ConfigError, ServerConfig, hash_key
from sdk.server._config import Keyring
from sdk.server._openai import ChatError, ChunkWriter, chat_to_messages, completion
from sdk.stream import (
    AnthropicEventDecoder,
    Message,
    TextBlock,
    ToolUseBlock,
    Usage,
)


def test_config_from_toml(tmp_path: Path) -> None:
    p = tmp_path / "s.toml"
    p.write_text(
        f"""
[server]
slots = 4
max_queue = 9

[[tiers]]
name = "chat"
rank = 0
ttft_target = 1.5
min_share = 0.25

[[tiers]]
name = "bulk"
rank = 5
preemptible = true

[[keys]]
sha256 = "{hash_key("k1")}"
tenant = "a"
tier = "bulk"
max_tier = "chat"
weight = 3
"""
    )
    c = ServerConfig.load(p)
    assert c.slots == 4 and c.max_queue == 9
    assert [t.name for t in c.tiers] == ["chat", "bulk"] and c.tiers[0].min_share == 0.25
    assert c.tenant_weights == {"a": 3.0}
    ring = Keyring(c)
    who = ring.principal("k1")
    assert who is not None and who.tenant == "a" and who.tier.name == "bulk" and who.max_tier.name == "chat"
    assert ring.principal("k2") is None and ring.principal(None) is None and ring.principal("") is None
    assert "k1" not in repr(c) and hash_key("k1") not in repr(c.keys[0])


@pytest.mark.parametrize(
    "text",
    [
        "[server]\nslots = 0\n",
        "[server]\nbogus = 1\n",
        "[[keys]]\nsha256 = 'abc'\ntenant = 'a'\n",
        f"[[keys]]\nsha256 = '{hash_key('x')}'\ntenant = 'a'\ntier = 'nope'\n",
        f"[[keys]]\nsha256 = '{hash_key('x')}'\ntenant = 'a'\ntier = 'interactive'\nmax_tier = 'batch'\n",
        "[[tiers]]\nname = 'a'\nrank = 0\n[[tiers]]\nname = 'a'\nrank = 1\n",
        "[[tiers]]\nrank = 0\n",
        "not toml at all [",
    ],
)
def test_bad_configs_are_config_errors(tmp_path: Path, text: str) -> None:
    p = tmp_path / "s.toml"
    p.write_text(text)
    with pytest.raises(ConfigError):
        ServerConfig.load(p)


def test_missing_config_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        ServerConfig.load(tmp_path / "none.toml")


def test_without_keys_every_request_is_the_anonymous_tenant() -> None:
    who = Keyring(ServerConfig()).principal(None)
    assert (
        who is not None
        and who.tenant == ""
        and who.tier.name == "default"
        and who.max_tier.name == "interactive"
    )


def test_chat_request_translation() -> None:
    out = chat_to_messages(
        {
            "model": "m",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "w", "arguments": '{"c": "Oslo"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "rain"},
                {"role": "user", "content": "And tomorrow?"},
            ],
            "max_completion_tokens": 50,
            "stop": "END",
            "tools": [{"type": "function", "function": {"name": "w", "parameters": {"type": "object"}}}],
            "tool_choice": "required",
            "temperature": 0.2,
            "top_k": 3,
            "stream": True,
        }
    )
    assert out["system"] == "Be brief." and out["max_tokens"] == 50 and out["stop_sequences"] == ["END"]
    assert out["tools"] == [{"name": "w", "input_schema": {"type": "object"}}]
    assert out["tool_choice"] == {"type": "any"}
    assert out["temperature"] == 0.2 and out["top_k"] == 3 and "stream" not in out
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["user", "assistant", "user"]  # the tool result and the next question merge
    assert out["messages"][1]["content"][0] == {
        "type": "tool_use",
        "id": "c1",
        "name": "w",
        "input": {"c": "Oslo"},
    }
    assert out["messages"][2]["content"][0]["type"] == "tool_result"
    assert out["messages"][2]["content"][1] == {"type": "text", "text": "And tomorrow?"}


@pytest.mark.parametrize(
    ("request_", "param"),
    [
        ({"messages": [{"role": "user", "content": "x"}], "n": 2}, "n"),
        ({"messages": []}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0]"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
        ({"messages": [{"role": "user", "content": "x"}], "max_tokens": -1}, "max_tokens"),
        ({"messages": [{"role": "user", "content": "x"}], "stop": 3}, "stop"),
        ({"messages": [{"role": "user", "content": "x"}], "tool_choice": "maybe"}, "tool_choice"),
        (
            {
                "messages": [
                    {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{"}}]}
                ]
            },
            "messages[0].tool_calls",
        ),
        (
            {
                "messages": [
                    {
                        "role": "system",
                        "content": [{"type": "image_url", "image_url": {"url": "http://x/a.png"}}],
                    },
                    {"role": "user", "content": "x"},
                ]
            },
            "messages[0].content",
        ),
    ],
)
def test_chat_requests_the_engine_cannot_take_are_named(request_: dict[str, Any], param: str) -> None:
    with pytest.raises(ChatError) as info:
        chat_to_messages(request_)
    assert info.value.param == param


def test_a_null_max_completion_tokens_leaves_max_tokens_in_force() -> None:
    base = {"messages": [{"role": "user", "content": "x"}]}
    assert chat_to_messages({**base, "max_completion_tokens": None, "max_tokens": 4})["max_tokens"] == 4
    assert chat_to_messages({**base, "max_completion_tokens": 7, "max_tokens": 4})["max_tokens"] == 7


_OK: dict[str, Any] = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "user", "content": [{"type": "text"}]}]}, "messages"),
        ({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}, "messages"),
        ({"messages": [{"role": "user", "content": [{"type": "banana"}]}]}, "messages"),
        ({"messages": [{"role": "user", "content": [{"type": "image"}]}]}, "messages"),
        (
            {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": 1}]}]},
            "messages",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [1]}]}
                ]
            },
            "messages",
        ),
        ({"system": 5}, "system"),
        ({"system": [{"type": "image", "source": {}}]}, "system"),
        ({"stop_sequences": "x"}, "stop_sequences"),
        ({"tools": "x"}, "tools"),
        ({"tools": [{"description": "no name"}]}, "tools"),
        ({"tool_choice": "banana"}, "tool_choice"),
        ({"tool_choice": {"type": "tool"}}, "tool_choice"),
        ({"metadata": "x"}, "metadata"),
    ],
)
def test_requests_the_api_refuses_are_400s_naming_the_field(change: dict[str, Any], param: str) -> None:
    from sdk.server._http import HTTPError
    from sdk.server._validate import check_messages

    with pytest.raises(HTTPError) as info:
        check_messages({**_OK, **change}, max_tokens=True)
    assert info.value.status == 400 and info.value.param == param


def test_requests_of_every_lawful_shape_pass_the_checks() -> None:
    from sdk.server._validate import check_messages

    image = {"type": "image", "source": {"type": "url", "url": "http://x/a.png"}}
    check_messages(
        {
            **_OK,
            "system": [{"type": "text", "text": "be brief"}],
            "stop_sequences": ["\n\n"],
            "tools": [{"name": "f", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "f"},
            "metadata": {"user_id": "u"},
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}, image]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
            ],
        },
        max_tokens=True,
    )
    out = chat_to_messages(
        {
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "t", "function": {"name": "f", "arguments": "{}"}}],
                },
                {"role": "tool", "tool_call_id": "t", "content": "r"},
            ],
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "tool_choice": "required",
            "stop": "x",
        }
    )
    check_messages({**out, "model": "m"}, max_tokens=True)  # the translation passes too


def test_a_matched_stop_sequence_is_the_stop_reason_whatever_the_engine_called_it() -> None:
    (delta,) = _events(
        [
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": "France"},
                "usage": {},
            }
        ]
    )
    assert (delta.stop_reason, delta.stop_sequence) == ("stop_sequence", "France")
    (plain,) = _events([{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}])
    assert plain.stop_reason == "end_turn"


def test_completion_ids_are_not_prefixed_twice() -> None:
    from sdk.server._openai import completion_id

    assert completion_id("chatcmpl-abc") == "chatcmpl-abc"
    assert completion_id("msg_1") == "chatcmpl-msg_1"
    assert completion_id("") == "chatcmpl-0"


def _events(raw: list[dict[str, Any]]) -> list[Any]:
    data = b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in raw)
    return AnthropicEventDecoder().feed(data)


def test_chunk_writer_text_tool_calls_finish_and_usage() -> None:
    events = _events(
        [
            {
                "type": "message_start",
                "message": {
                    "id": "m1",
                    "type": "message",
                    "role": "assistant",
                    "model": "g",
                    "content": [],
                    "usage": {"input_tokens": 7},
                },
            },
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
            {"type": "content_block_stop", "index": 0},
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "t1", "name": "w", "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"c":'},
            },
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '"x"}'},
            },
            {"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
            {"type": "message_stop"},
        ]
    )
    w = ChunkWriter("m", include_usage=True)
    chunks = [c for ev in events for c in w.feed(ev)]
    assert {c["id"] for c in chunks} == {"chatcmpl-m1"} and chunks[0]["model"] == "g"
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert deltas[1] == {"content": "Hi"}
    assert deltas[2]["tool_calls"][0] == {
        "index": 0,
        "id": "t1",
        "type": "function",
        "function": {"name": "w", "arguments": ""},
    }
    args = "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas[3:5])
    assert args == '{"c":"x"}'
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == {
        "prompt_tokens": 7,
        "completion_tokens": 5,
        "total_tokens": 12,
    }


def test_completion_object() -> None:
    msg = Message(
        "m1",
        "g",
        "assistant",
        (TextBlock("ok"), ToolUseBlock("t", "w", {"a": 1})),
        "max_tokens",
        None,
        Usage(3, 4),
    )
    out = completion(msg, "fallback")
    assert out["choices"][0]["finish_reason"] == "length"
    assert out["choices"][0]["message"]["content"] == "ok"
    assert orjson.loads(out["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]) == {"a": 1}
    assert out["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}


def test_model_entries_fit_both_list_shapes() -> None:
    from sdk.server._http import model_entry

    m = model_entry("gemma", None)
    assert m["type"] == "model" and m["object"] == "model" and m["display_name"] == "gemma"
    assert m["owned_by"] and isinstance(m["created"], int) and m["created_at"].endswith("Z")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_kept_events_stay_within_the_total_replay_budget() -> None:
    """Many streams each keep up to replay_bytes; together they keep at most
    replay_total_bytes: the longest-idle streams' oldest events go first, a stream with
    a connection attached last, and what is not yet sent is never dropped."""
    from sdk.server import ServerApp
    from sdk.server._live import LiveStream

    app = ServerApp(["http://127.0.0.1:9"], ServerConfig(replay_bytes=10_000, replay_total_bytes=25_000))
    streams = []
    for i in range(5):
        live = LiveStream(f"s{i}", "t", keep_bytes=10_000, lead_bytes=4096, done_frame=b"")
        for _ in range(10):
            live.push(b"x" * 1000)
        live.advance(10)  # all sent: 10,000 bytes kept each
        live.push(b"y" * 500)  # one frame not yet sent
        live.idle_since = float(i)  # s0 idle longest
        streams.append(live)
        app._live[live.sid] = live
    streams[0].attached, streams[0].idle_since = 1, None  # s0 has a connection: dropped last
    app.sweep(now=10.0)
    kept = [s.kept_bytes for s in streams]
    assert sum(kept) <= 25_000
    assert kept[0] == 10_000 and kept[1] == 0 and kept[2] == 0  # idle longest went first
    assert all(s.frame(s.sent) == b"y" * 500 for s in streams)  # unsent frames stay
    assert all(s.frame(s.sent - 1) is None for s in streams[1:3])  # a reattach there: 404
