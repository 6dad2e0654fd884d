"""Backend adapters: one neutral (Messages-style) request in, one event vocabulary out.

A request is written once, in the shape of the Messages API (``messages`` of content
blocks, ``system``, ``tools``, ``tool_choice``, ``stop_sequences``, ``max_tokens``...).
Each adapter knows its endpoint paths, how to translate the body, which sans-IO decoder
turns its stream into the neutral events, and how to read a non-streaming answer, so
the accumulator and the session never see which server answered.

* :class:`MessagesBackend`: the hosted Anthropic API and self-hosted servers speaking
  ``/v1/messages`` (llama-server, vLLM): the body goes out as it is.
* :class:`OpenAIBackend`: ``/chat/completions`` of OpenAI-compatible servers; the
  base URL includes the version (``http://host:8000/v1``). Translation: ``system`` ->
  a system message; text blocks -> text (image blocks -> ``image_url`` parts);
  ``tool_use`` blocks -> ``tool_calls``; ``tool_result`` blocks -> ``tool`` messages;
  ``tools`` -> functions; ``tool_choice`` auto/any/tool/none -> auto/required/
  function/none; ``stop_sequences`` -> ``stop``; ``metadata.user_id`` -> ``user``;
  streaming asks for usage (``stream_options.include_usage``). ``thinking`` has no
  chat-completions equivalent and is dropped; every other key passes unchanged.

Keys the adapter does not know always pass unchanged, so new API fields and
server-specific ones (llama-server's ``cache_prompt``, ``seed``) need no SDK release.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import httpx2
import orjson

from .._errors import ConfigError, StreamProtocolError, redact
from ..http import loads_exact
from ..stream import (
    AnthropicEventDecoder,
    ContentBlock,
    Message,
    OpenAIEventDecoder,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from ..stream._events import parse_block, stop_reason
from ..stream._openai import FINISH_REASONS, arguments_text, content_text, openai_usage
from ..stream._stream import EventDecoder

__all__ = [
    "HOSTED_HOSTS",
    "Backend",
    "BackendName",
    "MessagesBackend",
    "OpenAIBackend",
    "configured",
    "detect_backend",
]

BackendName = Literal["messages", "openai"]

HOSTED_BASE_URL = "https://api.anthropic.com"
OPENAI_BASE_URL = "https://api.openai.com/v1"
# Hosted APIs by host name: nothing there is a self-hosted engine with slots.
HOSTED_HOSTS = frozenset({"api.anthropic.com", "api.openai.com"})


def configured(
    base_url: str | None, backend: BackendName | None, api_key: str | None
) -> tuple[str, BackendName, str | None]:
    """The base URL (``base_url``, else ``ANTHROPIC_BASE_URL`` or, for ``openai``,
    ``OPENAI_BASE_URL``, else the hosted API's), the backend (named, else detected from
    the URL) and the API key (``api_key``, else ``ANTHROPIC_API_KEY`` or
    ``OPENAI_API_KEY`` by the backend). A hosted API with no key is a
    :class:`~sdk.ConfigError` now, not a 401 at the first request."""
    if backend == "openai":
        base = base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    else:
        base = base_url or os.environ.get("ANTHROPIC_BASE_URL") or HOSTED_BASE_URL
    base = base.rstrip("/")
    name: BackendName = backend or detect_backend(base)
    env = "OPENAI_API_KEY" if name == "openai" else "ANTHROPIC_API_KEY"
    if api_key is None:
        api_key = os.environ.get(env)
    if not api_key and httpx2.URL(base).host.lower() in HOSTED_HOSTS:
        raise ConfigError(f"no API key for {base}: pass api_key= or set {env}")
    return base, name, api_key


def detect_backend(base_url: str) -> BackendName:
    """The documented rule, applied once per client: a base URL whose path ends in a
    version segment (``/v1``, ``/v1/``, ``/openai/v1``) is OpenAI-compatible; anything
    else speaks the Messages API (its paths start with ``/v1/messages``)."""
    path = base_url.split("://", 1)[-1].partition("/")[2].rstrip("/")
    last = path.rsplit("/", 1)[-1]
    if len(last) >= 2 and last[0] == "v" and last[1:].isdigit():
        return "openai"
    return "messages"


class Backend:
    """What the client asks of an adapter (subclasses fill in the wire details)."""

    name: BackendName
    create_path: str
    models_path: str
    count_tokens_path: str | None
    decoder: Callable[[], EventDecoder]

    def headers(self, api_key: str | None) -> dict[str, str]:
        raise NotImplementedError

    def body(self, params: Mapping[str, Any], *, stream: bool) -> dict[str, Any]:
        raise NotImplementedError

    def message(self, body: object) -> Message:
        raise NotImplementedError

    def count_body(self, params: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


class MessagesBackend(Backend):
    name: BackendName = "messages"
    create_path = "/v1/messages"
    models_path = "/v1/models"
    count_tokens_path = "/v1/messages/count_tokens"
    decoder = AnthropicEventDecoder
    # Fields /v1/messages/count_tokens accepts; the rest of a create body is not for it.
    _COUNT_KEYS = frozenset(
        {"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers"}
    )

    def __init__(self, anthropic_version: str = "2023-06-01") -> None:
        self.anthropic_version = anthropic_version

    def headers(self, api_key: str | None) -> dict[str, str]:
        h = {"anthropic-version": self.anthropic_version}
        if api_key:
            h["x-api-key"] = api_key
        return h

    def body(self, params: Mapping[str, Any], *, stream: bool) -> dict[str, Any]:
        out = dict(params)
        if stream:
            out["stream"] = True
        else:
            out.pop("stream", None)
        return out

    def message(self, body: object) -> Message:
        """The answer as a :class:`Message`. It must be one: a ``content`` list (and a
        ``type`` of ``message`` where it has one); anything else, ``{"foo": 1}`` or an
        error object sent with a 200, is a :class:`StreamProtocolError`, never an empty
        message (block types it does not know are kept as unknown blocks)."""
        if not isinstance(body, Mapping):
            raise StreamProtocolError("message body is not a JSON object", event=body)
        content, kind = body.get("content"), body.get("type", "message")
        if not isinstance(content, list) or kind != "message":
            what = f"its type is {kind!r}" if kind != "message" else "it has no content list"
            raise StreamProtocolError(f"the answer is not a message: {what}", event=_excerpt(body))
        blocks = tuple(parse_block(b) for b in content)
        sequence = _opt(body.get("stop_sequence"))
        return Message(
            _s(body.get("id")),
            _s(body.get("model")),
            _s(body.get("role")) or "assistant",
            blocks,
            stop_reason(body.get("stop_reason"), sequence),
            sequence,
            Usage.from_wire(body.get("usage")),
        )

    def count_body(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in params.items() if k in self._COUNT_KEYS}


class OpenAIBackend(Backend):
    name: BackendName = "openai"
    create_path = "/chat/completions"
    models_path = "/models"
    count_tokens_path = None
    decoder = OpenAIEventDecoder

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def body(self, params: Mapping[str, Any], *, stream: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        messages: list[dict[str, Any]] = []
        for key, value in params.items():
            if key == "messages":
                continue
            if key == "system":
                text = value if isinstance(value, str) else _text_of(value)
                if text:
                    messages.insert(0, {"role": "system", "content": text})
            elif key == "tools":
                out["tools"] = [_tool(t) for t in value]
            elif key == "tool_choice":
                _tool_choice(value, out)
            elif key == "stop_sequences":
                out["stop"] = list(value)
            elif key == "metadata":
                if isinstance(value, Mapping) and isinstance(value.get("user_id"), str):
                    out["user"] = value["user_id"]
            elif key in ("thinking", "stream"):
                continue
            else:
                out[key] = value
        for m in params.get("messages", ()):
            messages.extend(_message(m))
        out["messages"] = messages
        if stream:
            out["stream"] = True
            opts = dict(out.get("stream_options") or {})
            opts.setdefault("include_usage", True)
            out["stream_options"] = opts
        return out

    def message(self, body: object) -> Message:
        if not isinstance(body, Mapping):
            raise StreamProtocolError("completion body is not a JSON object", event=body)
        choices = body.get("choices")
        if isinstance(body.get("error"), Mapping) or not isinstance(choices, list) or not choices:
            raise StreamProtocolError(
                "the answer is not a completion: it has no choices", event=_excerpt(body)
            )
        choice = choices[0]
        if not isinstance(choice, Mapping):
            raise StreamProtocolError("the completion's choice is not an object", event=_excerpt(body))
        msg = choice.get("message")
        if not isinstance(msg, Mapping):
            raise StreamProtocolError("the completion's message is not an object", event=_excerpt(body))
        blocks: list[ContentBlock] = []
        reasoning = msg.get("reasoning_content") or msg.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            blocks.append(ThinkingBlock(reasoning))
        content = content_text(msg.get("content"), body)
        if content:
            blocks.append(TextBlock(content))
        calls = msg.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise StreamProtocolError("the completion's tool calls are not a list", event=_excerpt(body))
        for call in calls or ():
            fn = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(fn, Mapping):
                raise StreamProtocolError(
                    "a tool call is not an object with a function", event=_excerpt(body)
                )
            raw = arguments_text(fn.get("arguments"), body)
            try:
                parsed, err = (loads_exact(raw) if raw else {}), None
            except orjson.JSONDecodeError as e:
                parsed, err = None, str(e)
            blocks.append(ToolUseBlock(_s(call.get("id")), _s(fn.get("name")), parsed, raw, err))
        reason = choice.get("finish_reason")
        return Message(
            _s(body.get("id")),
            _s(body.get("model")),
            _s(msg.get("role")) or "assistant",
            tuple(blocks),
            FINISH_REASONS.get(reason, reason) if isinstance(reason, str) else None,
            None,
            openai_usage(body.get("usage")),
        )

    def count_body(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return self.body(params, stream=False)


# ---- helpers -------------------------------------------------------------------------


def _excerpt(body: Mapping[str, Any]) -> str:
    """A short, masked view of a malformed answer for the error (the answer may be huge
    or carry what should not be repeated)."""
    try:
        raw = orjson.dumps(body, default=str)[:2000]
    except orjson.JSONEncodeError:  # nested deeper than orjson writes
        return "(nested too deep to show)"
    return redact(raw.decode("utf-8", "replace"))


def _s(v: object) -> str:
    return v if isinstance(v, str) else ""


def _opt(v: object) -> str | None:
    return v if isinstance(v, str) else None


def _text_of(blocks: object) -> str:
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, Sequence):
        return ""
    return "".join(b.get("text", "") for b in blocks if isinstance(b, Mapping) and b.get("type") == "text")


def _tool(t: Mapping[str, Any]) -> dict[str, Any]:
    if t.get("type") == "function":  # already in the OpenAI shape
        return dict(t)
    fn: dict[str, Any] = {"name": t["name"], "parameters": t.get("input_schema", {"type": "object"})}
    if t.get("description"):
        fn["description"] = t["description"]
    return {"type": "function", "function": fn}


def _tool_choice(choice: object, out: dict[str, Any]) -> None:
    if not isinstance(choice, Mapping):
        out["tool_choice"] = choice
        return
    kind = choice.get("type")
    if kind == "auto":
        out["tool_choice"] = "auto"
    elif kind == "any":
        out["tool_choice"] = "required"
    elif kind == "none":
        out["tool_choice"] = "none"
    elif kind == "tool":
        out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    else:
        out["tool_choice"] = dict(choice)
    if choice.get("disable_parallel_tool_use"):
        out["parallel_tool_calls"] = False


def _image(block: Mapping[str, Any]) -> dict[str, Any]:
    src = block.get("source")
    src = src if isinstance(src, Mapping) else {}
    if src.get("type") == "base64":
        url = f"data:{src.get('media_type')};base64,{src.get('data')}"
    else:
        url = _s(src.get("url"))
    return {"type": "image_url", "image_url": {"url": url}}


def _message(m: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One Messages-API message -> one or more chat messages (tool results go apart)."""
    role, content = m.get("role"), m.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for b in content or ():
        kind = b.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": b.get("text", "")})
        elif kind == "image":
            parts.append(_image(b))
        elif kind == "tool_use":
            args = orjson.dumps(b.get("input", {})).decode()
            calls.append(
                {
                    "id": b.get("id"),
                    "type": "function",
                    "function": {"name": b.get("name"), "arguments": args},
                }
            )
        elif kind == "tool_result":
            out.append(
                {"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text_of(b.get("content"))}
            )
        # thinking / redacted_thinking blocks have no chat-completions form: dropped
    if parts or calls or not out:
        msg: dict[str, Any] = {"role": role}
        if all(p["type"] == "text" for p in parts):
            msg["content"] = "".join(p["text"] for p in parts) if parts or not calls else None
        else:
            msg["content"] = parts
        if calls:
            msg["tool_calls"] = calls
        out.append(msg)
    return out
