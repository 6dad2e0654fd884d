"""``/v1/chat/completions`` on the scheduling server: OpenAI requests in, Messages-API
requests to the engine, OpenAI chunks out.

:func:`chat_to_messages` turns a chat-completion request into the neutral Messages-style
request the rest of the server speaks (system messages into ``system``, ``tool`` messages
into ``tool_result`` blocks, assistant ``tool_calls`` into ``tool_use`` blocks, ``stop``
into ``stop_sequences``, ``max_completion_tokens``/``max_tokens``; other fields, such as
llama-server's ``top_k`` or ``cache_prompt``, pass through). :class:`ChunkWriter` turns
the engine's events into ``chat.completion.chunk`` objects, and :func:`completion` a
finished message into a ``chat.completion``. Shapes the Messages API cannot carry
(``n`` > 1, audio) are refused with a clear error.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import orjson

from ..stream import (
    ContentBlockDeltaEvent,
    ContentBlockStartEvent,
    Event,
    InputJSONDelta,
    Message,
    MessageDeltaEvent,
    MessageStartEvent,
    TextBlock,
    TextDelta,
    ThinkingDelta,
    ToolUseBlock,
    Usage,
)
from ..stream._openai import FINISH_REASONS

__all__ = ["DEFAULT_MAX_TOKENS", "ChatError", "ChunkWriter", "chat_to_messages", "completion"]

DEFAULT_MAX_TOKENS = 1024  # an OpenAI request may leave it out; the scheduler needs a cost
_STOP = {v: k for k, v in FINISH_REASONS.items() if k != "function_call"}
_STOP["stop_sequence"] = "stop"
_STOP["pause_turn"] = "stop"
_CONSUMED = {"messages", "max_tokens", "max_completion_tokens", "stop", "tools", "tool_choice", "n", "stream"}
_CONSUMED |= {"stream_options", "user", "priority", "functions", "function_call", "logprobs", "top_logprobs"}


class ChatError(ValueError):
    """The request cannot be expressed for the engine; ``param`` names the field."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def _text_parts(content: object, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if content is None:
        return []
    if not isinstance(content, list):
        raise ChatError(f"{where}.content must be a string or a list of parts", f"{where}.content")
    out: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, Mapping):
            raise ChatError(f"{where}.content holds a part that is not an object", f"{where}.content")
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            out.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, Mapping) else url
            if not isinstance(url, str):
                raise ChatError(f"{where}: image_url needs a url", f"{where}.content")
            if url.startswith("data:") and ";base64," in url:
                media, _, data = url[5:].partition(";base64,")
                out.append({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}})
            else:
                out.append({"type": "image", "source": {"type": "url", "url": url}})
        else:
            raise ChatError(f"{where}: content parts of type {kind!r} are not supported", f"{where}.content")
    return out


def chat_to_messages(data: Mapping[str, Any]) -> dict[str, Any]:
    """The Messages-style request for a chat-completion request (see the module doc)."""
    n = data.get("n", 1)
    if n not in (1, None):
        raise ChatError("n must be 1: one completion per request", "n")
    raw = data.get("messages")
    if not isinstance(raw, list) or not raw:
        raise ChatError("messages: a non-empty list is required", "messages")
    system: list[str] = []
    messages: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += blocks  # the Messages API alternates roles
        else:
            messages.append({"role": role, "content": blocks})

    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(m, Mapping):
            raise ChatError(f"{where} is not an object", where)
        role = m.get("role")
        if role in ("system", "developer"):
            for part in _text_parts(m.get("content"), where):
                if part["type"] != "text":
                    raise ChatError(f"{where}: a {role} message holds text only", f"{where}.content")
                system.append(part["text"])
        elif role == "user":
            add("user", _text_parts(m.get("content"), where))
        elif role == "assistant":
            blocks = _text_parts(m.get("content"), where)
            calls = m.get("tool_calls") or ()
            if not isinstance(calls, list | tuple):
                raise ChatError(f"{where}.tool_calls must be a list", f"{where}.tool_calls")
            for call in calls:
                fn = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                    raise ChatError(
                        f"{where}.tool_calls: each call needs a function name", f"{where}.tool_calls"
                    )
                try:
                    args = orjson.loads(fn.get("arguments") or "{}")
                except orjson.JSONDecodeError:
                    raise ChatError(
                        f"{where}.tool_calls: arguments are not JSON", f"{where}.tool_calls"
                    ) from None
                blocks.append(
                    {"type": "tool_use", "id": str(call.get("id", "")), "name": fn["name"], "input": args}
                )
            add("assistant", blocks)
        elif role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": str(m.get("tool_call_id", "")),
                "content": _text_parts(m.get("content"), where),
            }
            add("user", [result])
        else:
            raise ChatError(f"{where}.role {role!r} is not one of system, user, assistant, tool", where)
    out: dict[str, Any] = {k: v for k, v in data.items() if k not in _CONSUMED}
    out["messages"] = messages
    if system:
        out["system"] = "\n\n".join(system)
    mt = data.get("max_completion_tokens")
    if mt is None:  # (absent or null: max_tokens then, as OpenAI reads them)
        mt = data.get("max_tokens")
    if mt is None:
        mt = DEFAULT_MAX_TOKENS
    if not isinstance(mt, int) or isinstance(mt, bool) or mt < 1:
        raise ChatError("max_tokens must be a positive integer", "max_tokens")
    out["max_tokens"] = mt
    stop = data.get("stop")
    if isinstance(stop, str):
        out["stop_sequences"] = [stop]
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        out["stop_sequences"] = stop
    elif stop is not None:
        raise ChatError("stop must be a string or a list of strings", "stop")
    tools = data.get("tools")
    if tools:
        if not isinstance(tools, list):
            raise ChatError("tools must be a list of tools", "tools")
        out["tools"] = [_tool(t) for t in tools]
    choice = data.get("tool_choice")
    if choice is not None:
        out["tool_choice"] = _tool_choice(choice)
    return out


def _tool(t: object) -> dict[str, Any]:
    fn = t.get("function") if isinstance(t, Mapping) else None
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise ChatError("tools: each tool needs a function with a name", "tools")
    tool: dict[str, Any] = {"name": fn["name"], "input_schema": fn.get("parameters") or {"type": "object"}}
    if isinstance(fn.get("description"), str):
        tool["description"] = fn["description"]
    return tool


def _tool_choice(choice: object) -> dict[str, Any]:
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    fn = choice.get("function") if isinstance(choice, Mapping) else None
    if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
        return {"type": "tool", "name": fn["name"]}
    raise ChatError("tool_choice is not one of auto, required, none or a named function", "tool_choice")


def completion_id(message_id: str) -> str:
    """A chat completion's id for a message's: ``chatcmpl-`` before it, unless the engine's
    id has it already (llama-server's and vLLM's do)."""
    return message_id if message_id.startswith("chatcmpl-") else "chatcmpl-" + (message_id or "0")


def usage(u: Usage) -> dict[str, int]:
    p, c = u.input_tokens or 0, u.output_tokens or 0
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}


class ChunkWriter:
    """Events of one stream to ``chat.completion.chunk`` objects (a sans-IO writer)."""

    def __init__(self, model: str, *, include_usage: bool) -> None:
        self.id = "chatcmpl-"
        self.model = model
        self.created = int(time.time())
        self.include_usage = include_usage
        self.usage = Usage()
        self._tools: dict[int, int] = {}  # content block index -> tool call index

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    def feed(self, ev: Event) -> list[dict[str, Any]]:
        if type(ev) is ContentBlockDeltaEvent:
            d = ev.delta
            if type(d) is TextDelta:
                return [self._chunk({"content": d.text})]
            if isinstance(d, ThinkingDelta):
                return [self._chunk({"reasoning_content": d.thinking})]
            if isinstance(d, InputJSONDelta) and ev.index in self._tools:
                call = {"index": self._tools[ev.index], "function": {"arguments": d.partial_json}}
                return [self._chunk({"tool_calls": [call]})]
            return []
        if isinstance(ev, MessageStartEvent):
            self.id = completion_id(ev.id)
            if ev.model:
                self.model = ev.model
            self.usage = ev.usage
            return [self._chunk({"role": "assistant", "content": ""})]
        if isinstance(ev, ContentBlockStartEvent):
            b = ev.block
            if isinstance(b, ToolUseBlock):
                k = self._tools[ev.index] = len(self._tools)
                call = {
                    "index": k,
                    "id": b.id,
                    "type": "function",
                    "function": {"name": b.name, "arguments": ""},
                }
                return [self._chunk({"tool_calls": [call]})]
            if isinstance(b, TextBlock) and b.text:
                return [self._chunk({"content": b.text})]
            return []
        if isinstance(ev, MessageDeltaEvent):
            self.usage = self.usage.merged(ev.usage)
            if ev.stop_reason is None:
                return []
            out = [self._chunk({}, _STOP.get(ev.stop_reason, "stop"))]
            if self.include_usage:
                out.append({**self._chunk({}), "choices": [], "usage": usage(self.usage)})
            return out
        return []


def completion(msg: Message, model: str) -> dict[str, Any]:
    """A finished message as a ``chat.completion`` object."""
    text = "".join(b.text for b in msg.content if isinstance(b, TextBlock))
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {
                "name": b.name,
                "arguments": orjson.dumps(b.input if b.input is not None else {}).decode(),
            },
        }
        for b in msg.content
        if isinstance(b, ToolUseBlock)
    ]
    if calls:
        message["tool_calls"] = calls
    return {
        "id": completion_id(msg.id),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": msg.model or model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": _STOP.get(msg.stop_reason or "", "stop")}
        ],
        "usage": usage(msg.usage),
    }
