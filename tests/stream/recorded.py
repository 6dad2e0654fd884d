"""Recorded-style byte streams for both protocols, built the way the servers frame them."""

from __future__ import annotations

import json
from typing import Any

import orjson


def sse(event: str | None, payload: Any, *, eol: str = "\n") -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    head = f"event: {event}{eol}" if event else ""
    return (head + "".join(f"data: {line}{eol}" for line in data.split("\n")) + eol).encode()


def anthropic(events: list[dict[str, Any]], *, pings: bool = False, eol: str = "\n") -> bytes:
    out = bytearray()
    for ev in events:
        if pings:
            out += sse("ping", {"type": "ping"}, eol=eol)
        out += sse(ev["type"], ev, eol=eol)
    return bytes(out)


def msg_start(mid: str = "msg_01", usage: dict[str, int] | None = None) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage
            or {
                "input_tokens": 25,
                "output_tokens": 1,
                "cache_creation_input_tokens": 7,
                "cache_read_input_tokens": 11,
            },
        },
    }


def block_start(i: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": i, "content_block": block}


def delta(i: int, d: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": i, "delta": d}


def block_stop(i: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": i}


def msg_delta(reason: str = "end_turn", output: int = 42) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": {"output_tokens": output},
    }


MSG_STOP = {"type": "message_stop"}


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


TEXT = 'Hello, wörld! ユーザー名 😀 line\u2028sep and "quotes" \\ backslash.\nSecond line. ' * 3


def tool_input(n: int = 200) -> dict[str, Any]:
    return {
        "path": "/tmp/ユーザー/file.txt",
        "items": [{"k": i, "v": f'value "{i}" \\ é😀', "ok": i % 2 == 0, "none": None} for i in range(n)],
        "nested": {"a": [1.5, -2e3, [], {}], "b": "\u2028"},
    }


def full_anthropic_events(tool_n: int = 200) -> list[dict[str, Any]]:
    """Thinking, text with citations, a long tool input, stop reason and cache usage."""
    thinking = "Let me think about ユーザー… carefully. " * 5
    tool_json = orjson.dumps(tool_input(tool_n)).decode()
    ev: list[dict[str, Any]] = [msg_start()]
    ev.append(block_start(0, {"type": "thinking", "thinking": "", "signature": ""}))
    ev += [delta(0, {"type": "thinking_delta", "thinking": p}) for p in pieces(thinking, 7)]
    ev.append(delta(0, {"type": "signature_delta", "signature": "EqQBCgIYAhIM=="}))
    ev.append(block_stop(0))
    ev.append(block_start(1, {"type": "text", "text": ""}))
    ev += [delta(1, {"type": "text_delta", "text": p}) for p in pieces(TEXT, 5)]
    cite = {"type": "char_location", "cited_text": "ユーザー", "document_index": 0, "start_char_index": 3}
    ev.append(delta(1, {"type": "citations_delta", "citation": cite}))
    ev.append(block_stop(1))
    ev.append(block_start(2, {"type": "tool_use", "id": "toolu_01", "name": "write_file", "input": {}}))
    ev.append(delta(2, {"type": "input_json_delta", "partial_json": ""}))
    ev += [delta(2, {"type": "input_json_delta", "partial_json": p}) for p in pieces(tool_json, 13)]
    ev.append(block_stop(2))
    ev.append(msg_delta("tool_use", 321))
    ev.append(MSG_STOP)
    return ev


def openai_chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "llama",
        "choices": choices,
        **extra,
    }


def openai(chunks: list[dict[str, Any]], *, done: bool = True, eol: str = "\n") -> bytes:
    out = b"".join(sse(None, c, eol=eol) for c in chunks)
    return out + (sse(None, "[DONE]", eol=eol) if done else b"")


def full_openai_chunks(tool_n: int = 200) -> list[dict[str, Any]]:
    """Reasoning, text, two tool calls with long arguments, finish reason, then usage."""
    args0 = orjson.dumps(tool_input(tool_n)).decode()
    args1 = orjson.dumps({"q": "ü" * 50}).decode()
    ch = [openai_chunk({"role": "assistant", "content": ""})]
    ch += [openai_chunk({"reasoning_content": p}) for p in pieces("Thinking… about ユーザー. " * 4, 9)]
    ch += [openai_chunk({"content": p}) for p in pieces(TEXT, 6)]
    first = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "write_file", "arguments": ""},
    }
    ch.append(openai_chunk({"tool_calls": [first]}))
    ch += [
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces(args0, 17)
    ]
    second = {
        "index": 1,
        "id": "call_b",
        "type": "function",
        "function": {"name": "search", "arguments": args1[:5]},
    }
    ch.append(openai_chunk({"tool_calls": [second]}))
    ch.append(openai_chunk({"tool_calls": [{"index": 1, "function": {"arguments": args1[5:]}}]}))
    ch.append(openai_chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 100, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 30}}
    ch.append(openai_chunk(None, usage=usage))
    return ch
