"""Stall policy: cancel a held upstream, resume with a prefill, splice seamlessly."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import orjson
import pytest

from sdk.stream import (
    ContentBlockDeltaEvent,
    FlowControl,
    MessageStream,
    ResumeRequest,
    StallPolicy,
    TextBlock,
    TextDelta,
    ToolUseBlock,
    Upstream,
)

from .recorded import MSG_STOP, anthropic, block_start, block_stop, delta, msg_delta, msg_start, pieces
from .server import Conn, opener, serve, small_client

pytestmark = pytest.mark.anyio

T = "".join(f"{i:06d}ü " for i in range(400_000))  # 3.2 M characters, every position unique
TAIL = 5000


def sizes(n: int) -> list[int]:
    return [37 + (i * 53) % 170 for i in range(n)]


def text_stream(text: str, *, usage_in: int = 25, stop: bool = True) -> list[dict[str, Any]]:
    ev = [
        msg_start(usage={"input_tokens": usage_in, "output_tokens": 1}),
        block_start(0, {"type": "text", "text": ""}),
    ]
    pos = 0
    for n in sizes(len(text)):
        if pos >= len(text):
            break
        ev.append(delta(0, {"type": "text_delta", "text": text[pos : pos + n]}))
        pos += n
    if stop:
        ev += [block_stop(0), msg_delta("end_turn", 10), MSG_STOP]
    return ev


async def model(conn: Conn) -> None:
    """A "model" that writes T; a continuation request carries the prefill to extend."""
    prefill = orjson.loads(conn.body).get("prefill") if conn.body else None
    if prefill is None:
        for ev in text_stream(T, stop=False):
            await conn.send(anthropic([ev]))
        return
    assert T.startswith(prefill), "the prefill must be exactly what was received"
    await conn.send(anthropic(text_stream(T[len(prefill) : len(prefill) + TAIL], usage_in=900)))


async def test_stalled_stream_is_cancelled_and_resumed_without_gap_or_duplicate() -> None:
    prefills: list[str] = []
    async with serve(model) as (url, log), small_client() as client:

        async def resume(req: ResumeRequest) -> Upstream:
            prefills.append(req.prefill)
            assert req.message.text == req.prefill
            return await opener(client, url, orjson.dumps({"prefill": req.prefill}))()

        stream = MessageStream(
            opener(client, url),
            flow=FlowControl(high_water_bytes=16 * 1024),
            stall=StallPolicy.self_hosted(stall_timeout=0.05),
            resume=resume,
        )
        texts: list[str] = []
        with anyio.fail_after(30):
            async with stream:
                await stream.__anext__()  # message_start, then the consumer goes away
                await log.disconnected.wait()  # the stall policy closed the response
                assert stream.statistics().cancels == 1
                async for ev in stream:
                    if isinstance(ev, ContentBlockDeltaEvent) and isinstance(ev.delta, TextDelta):
                        texts.append(ev.delta.text)
                stats = stream.statistics()
                final = stream.state.message()
    assert len(prefills) == 1 and prefills[0]
    expected = T[: len(prefills[0]) + TAIL]
    assert "".join(texts) == expected
    assert final.text == expected
    assert len(final.content) == 1 and isinstance(final.content[0], TextBlock)
    assert final.stop_reason == "end_turn"
    assert final.usage.input_tokens == 25 + 900  # the resume re-billed the prompt; both are counted
    assert (stats.cancels, stats.resumes) == (1, 1)
    kinds = [n.kind for n in stats.notes]
    assert kinds.index("pause") < kinds.index("cancel") < kinds.index("resume")
    assert len(log.requests) == 2


def memory_upstream(events: list[dict[str, Any]], closed: list[str], name: str, repeat: str = "") -> Upstream:
    async def chunks() -> AsyncIterator[bytes]:
        for ev in events:
            yield anthropic([ev])

    async def aclose() -> None:
        closed.append(name)

    return Upstream(chunks(), aclose, repeat)


async def test_resume_many_times_with_trimmed_prefill_and_repeated_whitespace() -> None:
    text = "".join(f"word{i} " for i in range(3000))
    closed: list[str] = []
    seen: list[ResumeRequest] = []

    async def resume(req: ResumeRequest) -> Upstream:
        seen.append(req)
        assert text.startswith(req.prefill)
        trimmed = req.prefill.rstrip()  # the hosted API refuses trailing whitespace in a prefill
        rest = text[len(trimmed) :]
        return memory_upstream(
            text_stream(rest), closed, f"resume{req.attempt}", repeat=req.prefill[len(trimmed) :]
        )

    stream = MessageStream(
        lambda: _ready(memory_upstream(text_stream(text), closed, "first")),
        flow=FlowControl(high_water_bytes=600),
        # a busy consumer never idles: the backlog limit is what cancels here
        stall=StallPolicy(True, stall_timeout=60, max_backlog_bytes=500, max_resumes=5),
        resume=resume,
    )
    with anyio.fail_after(30):
        async with stream:
            out = [ev.delta.text async for ev in _text_events(stream)]
            stats = stream.statistics()
    assert "".join(out) == text
    assert stream.state.message().text == text
    assert stats.resumes == 5 == len(seen)
    assert [r.attempt for r in seen] == [1, 2, 3, 4, 5]
    assert any(r.prefill.endswith(" ") for r in seen)  # the repeated whitespace was dropped once
    assert closed == ["first", "resume1", "resume2", "resume3", "resume4", "resume5"]


async def test_never_stalls_inside_a_tool_input() -> None:
    args = orjson.dumps({"data": ["x" * 50 for _ in range(100)]}).decode()
    events = [msg_start(), block_start(0, {"type": "tool_use", "id": "t1", "name": "f", "input": {}})]
    events += [delta(0, {"type": "input_json_delta", "partial_json": p}) for p in pieces(args, 20)]
    events += [block_stop(0), msg_delta("tool_use"), MSG_STOP]
    closed: list[str] = []

    cuts: list[int] = []

    async def resume(req: ResumeRequest) -> Upstream:
        assert req.state.open is None  # never cut inside the tool input
        cuts.append(req.state.next_index)
        rest = events if req.state.next_index == 0 else [msg_start(), msg_delta("tool_use"), MSG_STOP]
        return memory_upstream(rest, closed, "again")

    stream = MessageStream(
        lambda: _ready(memory_upstream(events, closed, "only")),
        flow=FlowControl(high_water_bytes=300),
        stall=StallPolicy(True, stall_timeout=0, max_backlog_bytes=100),
        resume=resume,
    )
    with anyio.fail_after(30):
        async with stream:
            msg = await stream.get_final_message()
            stats = stream.statistics()
    assert stats.pauses > 10
    assert stats.cancels == len(cuts)
    block = msg.content[0]
    assert isinstance(block, ToolUseBlock) and block.input == orjson.loads(args)


async def test_resume_hook_failure_carries_the_partial_message() -> None:
    from sdk._errors import APIConnectionError

    text = "abc " * 2000
    closed: list[str] = []

    async def resume(req: ResumeRequest) -> Upstream:
        raise ConnectionRefusedError("server gone")

    stream = MessageStream(
        lambda: _ready(memory_upstream(text_stream(text), closed, "first")),
        flow=FlowControl(high_water_bytes=2000),
        stall=StallPolicy(True, stall_timeout=0, max_backlog_bytes=1500),
        resume=resume,
    )
    with pytest.raises(APIConnectionError) as info:
        async with stream:
            async for _ in stream:
                pass
    assert info.value.partial is not None
    assert text.startswith(info.value.partial.text) and info.value.partial.text


def test_policy_defaults_and_validation() -> None:
    assert StallPolicy().enabled is False
    assert StallPolicy.hosted().enabled is False
    assert StallPolicy.self_hosted().enabled is True
    with pytest.raises(ValueError):
        MessageStream(lambda: _ready(None), stall=StallPolicy.self_hosted())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        StallPolicy(True, stall_timeout=-1)
    with pytest.raises(ValueError):
        MessageStream(
            lambda: _ready(None),
            flow=FlowControl(high_water_bytes=100),
            stall=StallPolicy(True, max_backlog_bytes=200),
            resume=lambda req: _ready(None),
        )
    with pytest.raises(ValueError):
        FlowControl(high_water_bytes=10, low_water_bytes=11)


async def _ready(value: Any) -> Any:
    return value


async def _text_events(stream: MessageStream) -> AsyncIterator[Any]:
    async for ev in stream:
        if isinstance(ev, ContentBlockDeltaEvent) and isinstance(ev.delta, TextDelta):
            yield ev
