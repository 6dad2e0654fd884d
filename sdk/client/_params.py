"""The request parameters, typed: ``create``, ``stream`` and ``count_tokens`` take them as
``**params: Unpack[...]``, so a type checker catches ``max_token=``, ``modle=`` or
``messages="..."`` at the call, and :func:`check_request` checks what is required before
anything is sent (a clear :class:`~sdk.InvalidRequestError`, not a server's 400).

The fields are the Messages API's, plus the sampling fields self-hosted servers
(llama-server, vLLM) take in the same body. Anything else goes through ``extra_body``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from .._errors import InvalidRequestError
from .._models import ContentBlockParam, MessageParam

__all__ = [
    "ContentBlockParam",
    "CountTokensParams",
    "CreateParams",
    "MessageParam",
    "ToolParam",
    "check_request",
    "merged_request",
]


class ToolParam(TypedDict, total=False):
    name: str
    description: str
    input_schema: Mapping[str, Any]
    type: str
    cache_control: Mapping[str, Any]


class CountTokensParams(TypedDict, total=False):
    """What ``count_tokens`` takes (``model`` and ``messages`` are required)."""

    model: str
    messages: Sequence[MessageParam]
    system: str | Sequence[ContentBlockParam]
    tools: Sequence[ToolParam | Mapping[str, Any]]
    tool_choice: Mapping[str, Any]
    thinking: Mapping[str, Any]


class CreateParams(CountTokensParams, total=False):
    """What ``create`` and ``stream`` take (``model``, ``messages`` and, for the Messages
    API, ``max_tokens`` are required)."""

    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    stop_sequences: Sequence[str]
    metadata: Mapping[str, Any]
    service_tier: str
    # the sampling and cache fields self-hosted servers take in the same body
    min_p: float
    seed: int
    cache_prompt: bool
    repeat_penalty: float
    presence_penalty: float
    frequency_penalty: float


def _fields(params: type) -> frozenset[str]:
    keys: frozenset[str] = params.__required_keys__ | params.__optional_keys__  # type: ignore[attr-defined]
    return keys


CREATE_FIELDS = _fields(CreateParams)
COUNT_FIELDS = _fields(CountTokensParams)


def merged_request(
    params: Mapping[str, Any], extra_body: Mapping[str, Any] | None, *, max_tokens: bool, count: bool = False
) -> dict[str, Any]:
    """The request's fields (``extra_body`` over the keywords), checked: a keyword that is
    not a field of :class:`CreateParams` (:class:`CountTokensParams` with ``count``), or
    a missing or malformed required field, is an :class:`InvalidRequestError` before
    anything is sent. Fields this SDK does not type go in ``extra_body``, unchecked."""
    known = COUNT_FIELDS if count else CREATE_FIELDS
    for name in params:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise InvalidRequestError(
                f"{name}: not a request field this SDK knows; {hint}"
                f"a field for a particular server goes in extra_body={{{name!r}: ...}}",
                param=name,
            )
    request = dict(params)
    if extra_body:
        request.update(extra_body)
    check_request(request, max_tokens=max_tokens)
    return request


def check_request(params: Mapping[str, Any], *, max_tokens: bool) -> None:
    """Raise :class:`~sdk.InvalidRequestError` naming the first field that is missing or
    of the wrong shape; ``max_tokens``: whether the API requires it."""
    model = params.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequestError("model: a model name (a non-empty string) is required", param="model")
    messages = params.get("messages")
    if not isinstance(messages, list | tuple):
        raise InvalidRequestError(
            'messages: a list of messages is required, e.g. [{"role": "user", "content": "..."}]',
            param="messages",
        )
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise InvalidRequestError(
                f"messages[{i}]: a message is a mapping with role and content", param="messages"
            )
        if m.get("role") not in ("user", "assistant"):
            raise InvalidRequestError(f"messages[{i}].role: 'user' or 'assistant'", param="messages")
        content = m.get("content")
        if not isinstance(content, str) and not (
            isinstance(content, list | tuple)
            and all(isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in content)
        ):
            raise InvalidRequestError(
                f'messages[{i}].content: a string or a list of content blocks ({{"type": ...}})',
                param="messages",
            )
    mt = params.get("max_tokens")
    if mt is None and max_tokens:
        raise InvalidRequestError("max_tokens: a positive integer is required", param="max_tokens")
    if mt is not None and (not isinstance(mt, int) or isinstance(mt, bool) or not 1 <= mt < 2**31):
        raise InvalidRequestError("max_tokens: a positive integer is required", param="max_tokens")
