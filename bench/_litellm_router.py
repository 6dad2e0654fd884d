"""LiteLLM Router with ``priority=`` against a local llama-server, for ``bench/scheduler.py``.

Findings, read from the installed LiteLLM (1.110.2, .venv/.../site-packages/litellm) and checked
with short offline runs (``mock_response``/``mock_delay``, no server):

* Deployment entry for an OpenAI-compatible server without a key::

      {"model_name": "gemma-3-270m",
       "litellm_params": {"model": "openai/gemma-3-270m", "api_base": "http://127.0.0.1:PORT/v1",
                          "api_key": "none", "max_parallel_requests": 2}}

  ``Router(model_list=..., polling_interval=..., default_priority=..., timeout=...)``. The cap is
  ``litellm_params.max_parallel_requests`` (or ``Router(default_max_parallel_requests=)``; if unset it
  is derived from ``rpm``/``tpm``). In this version the cap does not wait: ``MaxParallelRequestsLimit``
  (router_utils/client_initalization_utils.py) raises a 429 ``RateLimitError`` ("Deployment has all
  max_parallel_requests slots in use") to a request that finds every slot taken, and the router then
  retries it with backoff (``num_retries``, default 2) or fails it.
* ``priority=`` (an int; a lower number is more urgent, it is a min-heap of ``(priority, id)``) sends
  ``Router.acompletion`` and ``atext_completion`` through ``litellm.scheduler.Scheduler.wait_for_turn``
  (router_rust/invoke/endpoints.py ``_schedule``). It works with ``stream=True``: the queue wait happens
  before the request is sent and the stream is returned afterwards. The queue lives in memory
  (``DualCache``); it uses Redis only when the Router has Redis configured. It polls every
  ``polling_interval`` seconds: ``Router(polling_interval=)``, otherwise the env var
  ``DEFAULT_POLLING_INTERVAL``, default 0.03 s (the docstring's "3ms" is wrong). The longest queue wait is
  the Router ``timeout`` (default ``litellm.request_timeout``, 6000 s).
* "Available" in the loop means "the model group has at least one *healthy* deployment", i.e. one not
  in cooldown and not filtered by routing rules. Slots in use are not counted: with 2 streams in flight
  on a ``max_parallel_requests=2`` deployment it is still healthy, so every queued request leaves at
  once, whatever its priority. Requests are held only while no deployment is healthy (e.g. all
  cooling down after failures), and even then the head of the queue is released on every poll.
  So the priority queue never holds requests back for a busy deployment. The extra ones get 429s and
  are retried in backoff order, not in priority order.
* A streaming response keeps its slot until the stream is read to the end, closed, or falls back, not
  just until the first chunk (checked: a second request fails with a 429 after the first chunk and
  succeeds after the stream is read to the end).
* Network: importing ``litellm`` fetches the model cost map from GitHub unless ``LITELLM_OFFLINE_MODE=true``
  or ``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set *before* the import (offline mode also stops the
  other bundled-data fetches). This version has no ``litellm.telemetry`` setting. Both variables are set
  below before the import, which happens inside the function, so importing this module needs no network.

``litellm_router_run`` runs the workload as LiteLLM documents it, so the benchmark shows what
``priority=`` does in practice here (429s and retries in backoff order, not priority order).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any


async def litellm_router_run(
    base_url: str,
    model: str,
    batch: list[list[dict]],
    interactive_prompts: list[list[dict]],
    *,
    max_tokens: int,
    slots: int,
    interval: float,
    interactive_tokens: int | None = None,
) -> dict:
    """Batch (low priority) and interactive (high priority, streamed) requests through a LiteLLM Router
    whose deployment is capped at ``slots`` concurrent requests; returns ``{"interactive_ttft": [s],
    "batch_done": n, "batch_seconds": s, "batch_tokens": n}``. Requests that still fail after the
    router's retries (429: every slot in use) are not counted; see the module doc for why priority
    cannot order who gets a busy deployment's slots."""
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from litellm import Router

    router = Router(
        model_list=[
            {
                "model_name": model,
                "litellm_params": {
                    "model": f"openai/{model}",
                    "api_base": base_url,
                    "api_key": "none",
                    "max_parallel_requests": slots,
                },
            }
        ],
        polling_interval=0.01,
    )
    high, low = 0, 10  # lower number = more urgent
    ttfts: list[float] = []
    batch_done = 0
    batch_tokens = 0
    failed = {"batch": 0, "interactive": 0}

    async def one_batch(messages: list[dict]) -> None:
        nonlocal batch_done, batch_tokens
        try:
            resp: Any = await router.acompletion(
                model=model, messages=messages, max_tokens=max_tokens, temperature=0, priority=low
            )
        except Exception:  # a 429 after retries: not done
            failed["batch"] += 1
            return
        batch_done += 1
        usage = getattr(resp, "usage", None)
        batch_tokens += int(getattr(usage, "completion_tokens", 0) or 0)

    async def one_interactive(messages: list[dict]) -> None:
        start = time.perf_counter()
        try:
            stream: Any = await router.acompletion(
                model=model,
                messages=messages,
                max_tokens=interactive_tokens or max_tokens,
                temperature=0,
                stream=True,
                priority=high,
            )
            first: float | None = None
            async for chunk in stream:  # read to the end: the slot is released only then
                if first is None and chunk.choices and chunk.choices[0].delta.content:
                    first = time.perf_counter() - start
        except Exception:  # a 429 after retries: no TTFT
            failed["interactive"] += 1
            return
        if first is not None:
            ttfts.append(first)

    batch_start = time.perf_counter()
    batch_task = asyncio.ensure_future(asyncio.gather(*(one_batch(m) for m in batch)))
    interactive: list[asyncio.Task[None]] = []
    for messages in interactive_prompts:
        await asyncio.wait({batch_task}, timeout=interval)
        if batch_task.done():
            break
        interactive.append(asyncio.create_task(one_interactive(messages)))
    await batch_task
    batch_seconds = time.perf_counter() - batch_start
    await asyncio.gather(*interactive)
    return {
        "interactive_ttft": ttfts,
        "batch_done": batch_done,
        "batch_seconds": batch_seconds,
        "batch_tokens": batch_tokens,
        "batch_failed": failed["batch"],
        "interactive_failed": failed["interactive"],
    }
