"""Streaming core throughput and paused-consumer memory, measured side by side in one run.

bytes -> accumulated message, on the same recorded byte streams, for
* this SDK: ``AnthropicEventDecoder`` (sans-IO SSE + typed events) folded with ``apply``;
* anthropic-sdk-python: ``anthropic._streaming.SSEDecoder`` + ``sse.json()`` +
  ``construct_type(RawMessageStreamEvent)`` (what ``Stream.__stream__`` does) folded with
  ``anthropic.lib.streaming._messages.accumulate_event`` (what ``MessageStream`` does).

Run: ``python bench/stream.py`` (``--quick`` for a short run). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdk.stream import AnthropicEventDecoder, MessageState
from sdk.stream._accumulate import apply

CHUNK = 4096


def sse(ev: dict[str, Any]) -> bytes:
    return f"event: {ev['type']}\ndata: {json.dumps(ev, ensure_ascii=False)}\n\n".encode()


def start() -> list[dict[str, Any]]:
    msg = {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "claude-bench",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 1000,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 900,
        },
    }
    return [{"type": "message_start", "message": msg}]


def finish(index: int, reason: str, out: int) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_stop", "index": index},
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": None},
            "usage": {"output_tokens": out},
        },
        {"type": "message_stop"},
    ]


def text_stream(n_deltas: int) -> bytes:
    words = [
        "The",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "the",
        "lazy",
        "dog;",
        "ユーザー名",
        "naïve",
        "café",
        "—",
        "“quoted”",
        "text.\n",
    ]
    ev = [
        *start(),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    for i in range(n_deltas):
        ev.append(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": " ".join(words[i % 9 : i % 9 + 3]) + " "},
            }
        )
        if i % 500 == 0:
            ev.append({"type": "ping"})
    ev += finish(0, "end_turn", n_deltas)
    return b"".join(sse(e) for e in ev)


def tool_stream(input_bytes: int, piece: int = 24) -> bytes:
    items = []
    size = 0
    i = 0
    while size < input_bytes:
        item = {
            "id": i,
            "path": f"/src/module_{i}/file.py",
            "content": "def f(x):\n    return x * 2  # é\n",
            "ok": True,
        }
        items.append(item)
        size += len(json.dumps(item)) + 1
        i += 1
    raw = json.dumps({"edits": items})
    ev = [
        *start(),
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "apply_edits", "input": {}},
        },
    ]
    ev += [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": raw[j : j + piece]},
        }
        for j in range(0, len(raw), piece)
    ]
    ev += finish(0, "tool_use", len(raw) // 4)
    return b"".join(sse(e) for e in ev)


def chunks_of(data: bytes) -> list[bytes]:
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]


def ours(chunks: list[bytes]) -> tuple[int, Any]:
    dec = AnthropicEventDecoder()
    state = MessageState()
    n = 0
    for c in chunks:
        for ev in dec.feed(c):
            state = apply(state, ev)
            n += 1
    for ev in dec.flush():
        state = apply(state, ev)
        n += 1
    return n, state.message()


def peer(chunks: list[bytes]) -> tuple[int, Any]:
    from anthropic._models import construct_type
    from anthropic._streaming import SSEDecoder
    from anthropic.lib.streaming._messages import accumulate_event
    from anthropic.types import RawMessageStreamEvent

    snapshot = None
    json_bufs: dict[int, bytes] = {}
    n = 0
    for sse_ev in SSEDecoder().iter_bytes(iter(chunks)):
        n += 1
        if sse_ev.event == "ping" or sse_ev.event is None or not sse_ev.data:
            continue
        event = construct_type(type_=RawMessageStreamEvent, value=sse_ev.json())
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
    return n, snapshot


def best(
    fn: Callable[[list[bytes]], tuple[int, Any]], chunks: list[bytes], repeat: int
) -> tuple[float, int, Any]:
    times = []
    result: tuple[int, Any] = (0, None)
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        result = fn(chunks)
        times.append(time.perf_counter() - t)
    return min(times), result[0], result[1]


def same_result(a: Any, b: Any) -> bool:
    blocks_a, blocks_b = a.content, b.content
    if (
        len(blocks_a) != len(blocks_b)
        or a.stop_reason != b.stop_reason
        or a.usage.output_tokens != b.usage.output_tokens
    ):
        return False
    for x, y in zip(blocks_a, blocks_b):
        if x.type == "text" and x.text != y.text:
            return False
        if x.type == "tool_use" and x.input != y.input:
            return False
    return True


def throughput(quick: bool) -> list[str]:
    rows = [
        "| stream | size | events | this SDK events/s | MB/s | anthropic-sdk events/s | MB/s | speed-up | this SDK µs/KB | anthropic-sdk µs/KB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    cases: list[tuple[str, bytes, bool]] = [
        (f"text, {n:,} deltas", text_stream(n), True)
        for n in ((1_000, 4_000) if quick else (1_000, 4_000, 40_000))
    ]
    for kb in (16, 64, 256) if quick else (16, 64, 256, 1024):
        cases.append((f"tool JSON input {kb} KB", tool_stream(kb * 1024), kb <= 256))
    for name, data, with_peer in cases:
        chunks = chunks_of(data)
        repeat = 3 if quick else 5
        t_ours, n_ours, m_ours = best(ours, chunks, repeat)
        mb = len(data) / 1e6
        kb = len(data) / 1024
        row = f"| {name} | {mb:.2f} MB | {n_ours} | {n_ours / t_ours:,.0f} | {mb / t_ours:.1f} | "
        if with_peer:
            t_peer, n_peer, m_peer = best(peer, chunks, 1 if len(data) > 1_000_000 else repeat)
            assert same_result(m_ours, m_peer), f"{name}: results differ"
            row += f"{n_peer / t_peer:,.0f} | {mb / t_peer:.1f} | {t_peer / t_ours:.1f}× | {t_ours / kb * 1e6:.1f} | {t_peer / kb * 1e6:.1f} |"
        else:
            row += f"skipped (quadratic: minutes) | | | {t_ours / kb * 1e6:.1f} | |"
        rows.append(row)
        print(row, file=sys.stderr)
    return rows


def paused_memory(total_mb: int) -> list[str]:
    import anyio
    import httpx2

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
    from sdk.stream import FlowControl, MessageStream
    from tests.stream.server import opener, serve
    from tests.stream.test_flow import endless, settle

    high = 1 << 20
    out: list[str] = []

    async def main() -> None:
        async def handler(conn: Any) -> None:
            await endless(conn, total_mb * (1 << 20))

        async with serve(handler, sndbuf=None) as (url, log), httpx2.AsyncClient(timeout=60) as client:
            rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            async with MessageStream(opener(client, url), flow=FlowControl(high_water_bytes=high)) as s:
                await s.__anext__()
                await settle(log)
                heap = tracemalloc.get_traced_memory()[0] - base
                stats = s.statistics()
                tracemalloc.stop()
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0
                out.append(f"| server offers | {total_mb} MB |")
                out.append("|---|---|")
                out.append(f"| bytes the server could send before blocking | {log.sent / 2**20:.1f} MB |")
                out.append(
                    f"| client buffer bound / high-water mark reached | {high / 2**20:.1f} MB / {stats.high_water_bytes / 2**20:.2f} MB |"
                )
                out.append(f"| Python heap growth while paused (tracemalloc) | {heap / 2**20:.1f} MB |")
                out.append(
                    f"| process max-RSS growth (client + server in one process) | {rss / 1024:.1f} MB |"
                )

    anyio.run(main)
    return out


def main() -> None:
    try:
        import anthropic  # noqa: F401
    except ImportError:
        sys.exit("bench/stream.py compares against anthropic-sdk-python: pip install anthropic")
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    print(f"Python {sys.version.split()[0]}, {CHUNK}-byte reads, best of several runs\n")
    print("\n".join(throughput(args.quick)))
    print()
    print("\n".join(paused_memory(100)))


if __name__ == "__main__":
    main()
