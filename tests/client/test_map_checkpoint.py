"""A map's checkpoint is not trusted: it is streamed with a bounded line, a symbolic link
at its path is not followed, and what is not a regular file is refused, each with a
:class:`~sdk.client._map.CheckpointError`."""

from __future__ import annotations

import contextlib
import os
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

import sdk.client._map
from sdk import Client
from sdk.client._map import CheckpointError, request_key
from sdk.stream import Message, TextBlock, Usage
from sdk.stream._accumulate import message_to_wire

from .fault_server import fault_server
from .test_scheduling import DEADLINE, client, echo_handler, msg

pytestmark = pytest.mark.anyio

MiB = 1 << 20


def _req(i: int) -> dict[str, Any]:
    return dict(model="m", max_tokens=5, messages=msg(f"r{i}"))


def _line(i: int, text: str) -> bytes:
    m = Message("msg_1", "m", "assistant", (TextBlock(text),), "end_turn", None, Usage(3, 1))
    rec = {"index": i, "key": request_key(_req(i)), "message": message_to_wire(m)}
    return orjson.dumps(rec) + b"\n"


async def _enter(path: Path, *, traced: list[int] | None = None) -> None:
    """Enter a map over ``path`` (where the checkpoint is opened); nothing is sent.
    ``traced`` gets the peak of memory allocated from entering the map on (making the
    client, its TLS context among it, is not the map's)."""
    async with Client(base_url="http://127.0.0.1:9", api_key="sk-ant-unused-0123456789") as c:
        if traced is not None:
            tracemalloc.start()
        try:
            with anyio.fail_after(DEADLINE):
                async with c.map([_req(0)], checkpoint=path):
                    pass
        finally:
            if traced is not None:
                traced.append(tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_large_checkpoint_is_streamed_not_read_whole(tmp_path: Path) -> None:
    """600 results of 64 KiB (38 MiB): restoring them all holds about one line at a
    time (a whole read held the file, its lines and their parsed messages at once)."""
    path = tmp_path / "map.jsonl"
    n, text = 600, "x" * (64 << 10)
    with path.open("wb") as f:
        for i in range(n):
            f.write(_line(i, text))
    assert path.stat().st_size > 36 * MiB
    out: list[tuple[int, bool, int]] = []
    async with fault_server(echo_handler()) as server, client(server) as c:
        tracemalloc.start()
        try:
            with anyio.fail_after(DEADLINE):
                async with c.map([_req(i) for i in range(n)], checkpoint=path, concurrency=1) as results:
                    async for r in results:  # each message dropped as it comes: what the map holds
                        out.append((r.index, r.from_checkpoint, len(r.message.text) if r.message else 0))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert not server.requests and out == [(i, True, len(text)) for i in range(n)]
    assert peak < 4 * MiB, f"peak {peak / MiB:.1f} MiB"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_line_over_the_bound_is_an_error_naming_its_offset_not_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sdk.client._map, "MAX_LINE_BYTES", 1 * MiB)
    path = tmp_path / "map.jsonl"
    first = _line(0, "fine")
    path.write_bytes(first + b'{"index": 1, "key": "' + b"k" * (32 * MiB))  # one 32 MiB line
    traced: list[int] = []
    with pytest.raises(CheckpointError, match=f"line at byte {len(first)} is over {MiB} bytes") as e:
        await _enter(path, traced=traced)
    assert isinstance(e.value, OSError) and e.value.path == str(path)
    assert traced[0] < 6 * MiB, f"peak {traced[0] / MiB:.1f} MiB"  # a block and the bound, not the line


async def test_a_result_over_the_line_bound_is_not_checkpointed_and_is_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the map would refuse to read back it does not write: that result counts in
    ``checkpoint_errors`` and is sent again by the next run; the others are kept."""
    monkeypatch.setattr(sdk.client._map, "MAX_LINE_BYTES", 300)
    path = tmp_path / "map.jsonl"
    reqs = [_req(0), dict(model="m", max_tokens=5, messages=msg("y" * 400))]
    async with fault_server(echo_handler()) as server, client(server) as c:
        with anyio.fail_after(DEADLINE):
            async with c.map(reqs, checkpoint=path) as results:
                assert [r.ok async for r in results] == [True, True]
            assert results.checkpoint_errors == 1
            async with c.map(reqs, checkpoint=path) as results:
                again = [r.from_checkpoint async for r in results]
    assert again == [True, False] and len(server.requests) == 3
    assert len(path.read_bytes().splitlines()) == 1  # r0's line only


async def test_a_symbolic_link_at_the_checkpoint_path_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_bytes(b"precious\n")
    link = tmp_path / "map.jsonl"
    link.symlink_to(target)
    with pytest.raises(CheckpointError, match="symbolic link"):
        await _enter(link)
    assert target.read_bytes() == b"precious\n"
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(CheckpointError, match="symbolic link"):
        await _enter(dangling)
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
async def test_a_fifo_at_the_checkpoint_path_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "map.jsonl"
    os.mkfifo(fifo)

    def unblock() -> None:
        """A map that opened the FIFO to read would wait for a writer forever (in a
        thread no cancellation reaches): one comes late and goes, so it fails, not hangs."""
        with contextlib.suppress(OSError):  # ENXIO: nobody reads it, as it should be
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    watchdog = threading.Timer(DEADLINE, unblock)
    watchdog.start()
    try:
        with pytest.raises(CheckpointError, match="a FIFO, not a regular file"):
            await _enter(fifo)
    finally:
        watchdog.cancel()


async def test_a_directory_at_the_checkpoint_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="a directory, not a regular file"):
        await _enter(tmp_path)
