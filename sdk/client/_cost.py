"""A request's cost before it is sent: the local token estimate of its input
(tiktoken's ``o200k_base`` over its texts, plus a few tokens per message) and its
``max_tokens``. The scheduler admits by it; :meth:`sdk.Client.count_tokens` falls back
to it where the server does not count."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import anyio.to_thread
import orjson

from ..scheduler import Cost
from ..tokens import count_tokens

__all__ = ["estimate_input_tokens", "request_cost"]

_BIG_PROMPT = 200_000  # characters: above this the estimate runs in a worker thread


async def request_cost(params: Mapping[str, Any]) -> Cost:
    """The scheduler's cost of a request: the local input estimate plus ``max_tokens``
    (``max_completion_tokens`` for an OpenAI-shaped request)."""
    texts, n_messages = _texts(params)
    if sum(map(len, texts)) > _BIG_PROMPT:  # tens of milliseconds of encoding: off the event loop
        est = await anyio.to_thread.run_sync(_count, texts, n_messages)
    else:
        est = _count(texts, n_messages)
    mt = params.get("max_tokens")
    if mt is None:
        mt = params.get("max_completion_tokens")
    out = mt if isinstance(mt, int) and not isinstance(mt, bool) and mt > 0 else 0
    return Cost(est, out)


def estimate_input_tokens(params: Mapping[str, Any]) -> int:
    """tiktoken o200k count of the request's text plus a few tokens per message."""
    return _count(*_texts(params))


def _texts(params: Mapping[str, Any]) -> tuple[list[str], int]:
    """The request's text pieces (system, messages, tool inputs and results, tool
    definitions) and its message count. Shapes the API would refuse are skipped here:
    the server's answer reports them, an estimate must not fail."""
    texts: list[str] = []
    system = params.get("system")
    if isinstance(system, str):
        texts.append(system)
    elif isinstance(system, list):
        texts += [b["text"] for b in system if isinstance(b, Mapping) and isinstance(b.get("text"), str)]
    messages = params.get("messages")
    n_messages = 0
    for m in messages if isinstance(messages, list | tuple) else ():
        if not isinstance(m, Mapping):
            continue
        n_messages += 1
        c = m.get("content")
        if isinstance(c, str):
            texts.append(c)
            continue
        for b in c if isinstance(c, list | tuple) else ():
            if not isinstance(b, Mapping):
                continue
            if b.get("type") == "text" and isinstance(b.get("text"), str):
                texts.append(b["text"])
            elif b.get("type") in ("tool_use", "tool_result"):
                texts.append(orjson.dumps(b.get("input") or b.get("content") or "", default=str).decode())
    if params.get("tools"):
        texts.append(orjson.dumps(params["tools"], default=str).decode())
    return texts, n_messages


def _count(texts: list[str], n_messages: int) -> int:
    return sum(count_tokens(t) for t in texts if t) + 4 * n_messages + 3
