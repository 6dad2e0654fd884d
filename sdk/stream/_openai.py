"""OpenAI-compatible chat-completion chunks -> the neutral Messages-style events.

Sans-IO like the SSE decoder: ``feed(chunk) -> list[Event]``. The accumulator and the
session then see one vocabulary whatever the backend. Mapping:

* ``delta.reasoning_content`` / ``delta.reasoning`` -> a thinking block,
  ``delta.content`` -> a text block, each ``delta.tool_calls[i]`` -> a tool-use block
  whose ``function.arguments`` pieces become ``input_json_delta`` s. A change of kind
  closes the open block and starts the next index, as the Messages stream does.
* ``finish_reason``: stop -> ``end_turn``, length -> ``max_tokens``, tool_calls /
  function_call -> ``tool_use``, content_filter -> ``refusal`` (others pass unchanged).
* ``usage``: ``prompt_tokens`` minus cached tokens -> ``input_tokens`` (Messages counts
  cache reads apart), ``completion_tokens`` -> ``output_tokens``,
  ``prompt_tokens_details.cached_tokens`` -> ``cache_read_input_tokens``.
* a legacy ``delta.function_call`` is tool call 0 (with an empty id).
* ``data: [DONE]`` -> ``message_stop``; ``{"error": {...}}`` -> an error event.

Tool calls must arrive one after another (every server we know streams them so); a
delta for an earlier, already closed tool call is a :class:`~sdk.StreamProtocolError`.
Only choice 0 is supported (``n=1``); another choice index is a protocol error rather
than silently dropped text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from .._errors import StreamProtocolError
from .._models import wire_count
from ..http import loads_exact
from ._events import (
    ContentBlockDeltaEvent,
    ContentBlockStartEvent,
    ContentBlockStopEvent,
    ErrorEvent,
    Event,
    InputJSONDelta,
    MessageDeltaEvent,
    MessageStartEvent,
    MessageStopEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    Usage,
)
from ._sse import DEFAULT_MAX_EVENT_BYTES, SSEDecoder

__all__ = ["OpenAIChunkTranslator", "OpenAIEventDecoder", "openai_usage"]

# OpenAI finish_reason -> Messages stop_reason (the backend's non-streaming answers use it too).
FINISH_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def openai_usage(raw: object) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    details = raw.get("prompt_tokens_details")
    cached = wire_count(details.get("cached_tokens")) if isinstance(details, Mapping) else None
    inp = wire_count(raw.get("prompt_tokens"))
    if inp is not None and cached:
        inp = max(inp - cached, 0)
    return Usage(inp, wire_count(raw.get("completion_tokens")), None, cached)


def content_text(content: object, chunk: object) -> str:
    """A message's or a delta's ``content``: text, or a list of parts whose ``text`` is
    joined (as some servers send it); anything else is a protocol error."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif not isinstance(part, Mapping):
                raise StreamProtocolError("a content part is neither text nor an object", event=chunk)
        return "".join(parts)
    raise StreamProtocolError("content is neither text nor a list of parts", event=chunk)


def arguments_text(args: object, chunk: object) -> str:
    """A tool call's ``arguments``: the JSON text, or an object some servers send as it
    is (written back as JSON text); anything else is a protocol error."""
    if args is None or isinstance(args, str):
        return args or ""
    if isinstance(args, Mapping | list):
        try:
            return orjson.dumps(args).decode()
        except TypeError as e:  # (orjson's refusal of what it cannot write)
            why = f"tool call arguments cannot be written as JSON: {e}"
            raise StreamProtocolError(why, event=chunk) from None
    raise StreamProtocolError("tool call arguments are neither JSON text nor an object", event=chunk)


class OpenAIChunkTranslator:
    """Stateful translator of parsed chunk objects; see the module docstring for the mapping."""

    __slots__ = ("_closed_tools", "_finished", "_index", "_kind", "_started", "_stopped", "_tool")

    def __init__(self) -> None:
        self._started = False
        self._stopped = False
        self._finished = False
        self._index = -1  # neutral index of the open block, -1 before the first
        self._kind: str | None = None  # "text" | "thinking" | "tool" | None (nothing open)
        self._tool: int | None = None  # OpenAI tool_call index of the open tool block
        self._closed_tools: set[int] = set()

    def _close(self, out: list[Event]) -> None:
        if self._kind is not None:
            out.append(ContentBlockStopEvent(self._index))
            if self._tool is not None:
                self._closed_tools.add(self._tool)
            self._kind = None
            self._tool = None

    def _open(self, out: list[Event], kind: str, block: TextBlock | ThinkingBlock | ToolUseBlock) -> None:
        self._close(out)
        self._index += 1
        self._kind = kind
        out.append(ContentBlockStartEvent(self._index, block))

    def feed(self, chunk: Mapping[str, Any]) -> list[Event]:
        out: list[Event] = []
        if self._stopped:
            raise StreamProtocolError("chunk after [DONE]", event=chunk)
        err = chunk.get("error")
        if err is not None:
            e = err if isinstance(err, Mapping) else {"message": str(err)}
            etype = e.get("type") or e.get("code")
            out.append(
                ErrorEvent(etype if isinstance(etype, str) else "api_error", str(e.get("message", "")), chunk)
            )
            return out
        choices = chunk.get("choices")
        choices = choices if isinstance(choices, list) else []
        if not self._started:
            self._started = True
            role = "assistant"
            if choices and isinstance(choices[0], Mapping):
                d = choices[0].get("delta")
                if isinstance(d, Mapping) and isinstance(d.get("role"), str):
                    role = d["role"]
            cid, model = chunk.get("id"), chunk.get("model")
            out.append(
                MessageStartEvent(
                    cid if isinstance(cid, str) else "", model if isinstance(model, str) else "", role
                )
            )
        usage_sent = False
        for choice in choices:
            if not isinstance(choice, Mapping):
                raise StreamProtocolError("choice is not an object", event=chunk)
            if choice.get("index", 0) != 0:
                raise StreamProtocolError("only one choice (n=1) is supported", event=chunk)
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                self._delta(delta, chunk, out)
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and not self._finished:
                self._close(out)
                self._finished = True
                out.append(
                    MessageDeltaEvent(
                        FINISH_REASONS.get(reason, reason), None, openai_usage(chunk.get("usage"))
                    )
                )
                usage_sent = True
        if not usage_sent and isinstance(chunk.get("usage"), Mapping):
            out.append(MessageDeltaEvent(None, None, openai_usage(chunk["usage"])))
        return out

    def _delta(self, delta: Mapping[str, Any], chunk: Mapping[str, Any], out: list[Event]) -> None:
        reasoning = delta.get("reasoning_content")
        if not isinstance(reasoning, str):
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            if self._kind != "thinking":
                self._open(out, "thinking", ThinkingBlock())
            out.append(ContentBlockDeltaEvent(self._index, ThinkingDelta(reasoning)))
        content = content_text(delta.get("content"), chunk)
        if content:
            if self._kind != "text":
                self._open(out, "text", TextBlock())
            out.append(ContentBlockDeltaEvent(self._index, TextDelta(content)))
        calls = delta.get("tool_calls")
        legacy = delta.get("function_call")  # the pre-tools API: one call, no index or id
        if not isinstance(calls, list) and isinstance(legacy, Mapping):
            calls = [{"index": 0, "function": legacy}]
        if not isinstance(calls, list):
            return
        for call in calls:
            if not isinstance(call, Mapping):
                raise StreamProtocolError("tool call is not an object", event=chunk)
            idx = call.get("index")
            if not isinstance(idx, int):
                idx = self._tool if self._tool is not None else len(self._closed_tools)
            fn = call.get("function")
            if fn is not None and not isinstance(fn, Mapping):
                raise StreamProtocolError("a tool call's function is not an object", event=chunk)
            fn = fn or {}
            if self._kind != "tool" or idx != self._tool:
                if idx in self._closed_tools:
                    raise StreamProtocolError(f"delta for closed tool call {idx}", event=chunk)
                cid, name = call.get("id"), fn.get("name")
                block = ToolUseBlock(
                    cid if isinstance(cid, str) else "", name if isinstance(name, str) else "", {}
                )
                self._open(out, "tool", block)
                self._tool = idx
            args = arguments_text(fn.get("arguments"), chunk)
            if args:
                out.append(ContentBlockDeltaEvent(self._index, InputJSONDelta(args)))

    def done(self) -> list[Event]:
        """``data: [DONE]``: close what is open and stop the message."""
        if self._stopped:
            raise StreamProtocolError("second [DONE]", event="[DONE]")
        out: list[Event] = []
        if not self._started:
            self._started = True
            out.append(MessageStartEvent("", ""))
        self._close(out)
        self._stopped = True
        out.append(MessageStopEvent())
        return out

    def end(self) -> list[Event]:
        """End of body without ``[DONE]``: finish only if a ``finish_reason`` was seen
        (some servers omit ``[DONE]``); otherwise the stream is incomplete."""
        if self._finished and not self._stopped:
            return self.done()
        return []


class OpenAIEventDecoder:
    """Sans-IO bytes -> neutral events for an OpenAI-compatible chat stream."""

    __slots__ = ("sse", "translator")

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        self.sse = SSEDecoder(max_event_bytes=max_event_bytes)
        self.translator = OpenAIChunkTranslator()

    def for_replay(self) -> OpenAIEventDecoder:
        """A decoder for a new body that goes on with this message (a reattach's events
        after the last one received): new SSE framing, the same translation state, so
        its first chunk is no second message start."""
        fresh = OpenAIEventDecoder(max_event_bytes=self.sse.max_event_bytes)
        fresh.translator = self.translator
        return fresh

    def _events(self, sses: list[Any]) -> list[Event]:
        out: list[Event] = []
        for sse in sses:
            data = sse.data
            if data.strip() == "[DONE]":
                out += self.translator.done()
                continue
            try:
                chunk = loads_exact(data)
            except orjson.JSONDecodeError:
                raise StreamProtocolError("chunk is not valid JSON", event=sse) from None
            if not isinstance(chunk, dict):
                raise StreamProtocolError("chunk is not a JSON object", event=sse)
            out += self.translator.feed(chunk)
        return out

    def feed(self, chunk: bytes) -> list[Event]:
        return self._events(self.sse.feed(chunk))

    def flush(self) -> list[Event]:
        return self._events(self.sse.flush()) + self.translator.end()
