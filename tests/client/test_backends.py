"""Adapters without I/O: the neutral request -> each wire shape, answers -> one Message."""

from __future__ import annotations

import pytest

from sdk.client._backends import MessagesBackend, OpenAIBackend, detect_backend
from sdk.stream import TextBlock, ThinkingBlock, ToolUseBlock, Usage

TOOLS = [{"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}]
CONVERSATION = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "call the tool", "signature": "s"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "tu_1", "name": "get_weather", "input": {"city": "Paris"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "tu_1", "content": [{"type": "text", "text": "sunny"}]},
            {"type": "text", "text": "And tomorrow?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAA"}},
        ],
    },
]


@pytest.mark.parametrize(
    ("url", "backend"),
    [
        ("https://api.anthropic.com", "messages"),
        ("http://gpu-box:8000", "messages"),
        ("http://gpu-box:8000/", "messages"),
        ("http://gpu-box:8000/v1", "openai"),
        ("http://gpu-box:8000/v1/", "openai"),
        ("https://example.com/openai/v1", "openai"),
        ("http://box/v1beta", "messages"),
    ],
)
def test_detect_backend(url: str, backend: str) -> None:
    assert detect_backend(url) == backend


def test_messages_body_is_the_request_unchanged() -> None:
    params = {"model": "m", "max_tokens": 5, "messages": CONVERSATION, "tools": TOOLS, "x_new": 1}
    body = MessagesBackend().body(params, stream=True)
    assert body == {**params, "stream": True}
    assert MessagesBackend().count_body({**params, "max_tokens": 9, "temperature": 0}) == {
        "model": "m",
        "messages": CONVERSATION,
        "tools": TOOLS,
    }


def test_openai_body_translation() -> None:
    params = {
        "model": "m",
        "max_tokens": 5,
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": CONVERSATION,
        "tools": TOOLS,
        "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
        "stop_sequences": ["END"],
        "metadata": {"user_id": "u1"},
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "seed": 3,
    }
    body = OpenAIBackend().body(params, stream=True)
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "tu_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "tu_1", "content": "sunny"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "And tomorrow?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}},
            ],
        },
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "parameters": {"type": "object"}, "description": "Weather."},
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["parallel_tool_calls"] is False
    assert body["stop"] == ["END"] and body["user"] == "u1" and body["seed"] == 3
    assert "thinking" not in body and "metadata" not in body and "system" not in body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "stream" not in OpenAIBackend().body(params, stream=False)


@pytest.mark.parametrize(
    ("choice", "wire"),
    [({"type": "auto"}, "auto"), ({"type": "any"}, "required"), ({"type": "none"}, "none")],
)
def test_openai_tool_choice(choice: dict[str, str], wire: str) -> None:
    assert OpenAIBackend().body({"messages": [], "tool_choice": choice}, stream=False)["tool_choice"] == wire


def test_non_streaming_answers_become_the_same_message() -> None:
    m = MessagesBackend().message(
        {
            "id": "msg_1",
            "model": "m",
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Hi"},
                {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 4},
        }
    )
    o = OpenAIBackend().message(
        {
            "id": "msg_1",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Hi",
                        "tool_calls": [
                            {"id": "t", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
                        ],
                    },
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4},
        }
    )
    assert m.text == o.text == "Hi" and m.stop_reason == o.stop_reason == "tool_use"
    assert m.usage == o.usage == Usage(3, 4)
    assert [(b.id, b.name, b.input) for b in m.tool_uses] == [(b.id, b.name, b.input) for b in o.tool_uses]


def test_openai_reasoning_and_invalid_arguments_are_kept() -> None:
    o = OpenAIBackend().message(
        {
            "choices": [
                {
                    "finish_reason": "stop",
                    "message": {
                        "reasoning_content": "hmm",
                        "content": "ok",
                        "tool_calls": [{"id": "t", "function": {"name": "f", "arguments": '{"a":'}}],
                    },
                }
            ]
        }
    )
    assert isinstance(o.content[0], ThinkingBlock) and o.content[0].thinking == "hmm"
    assert isinstance(o.content[1], TextBlock) and o.stop_reason == "end_turn"
    tool = o.content[2]
    assert isinstance(tool, ToolUseBlock) and tool.input is None and tool.input_json == '{"a":'
    assert tool.input_error
