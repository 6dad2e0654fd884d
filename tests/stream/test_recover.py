"""Recovery inside the core: a broken upstream is resumed (or, before the first event,
reopened), pings are not progress for the idle timeout, and abort() ends a stream."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from sdk._errors import APIConnectionError, APITimeoutError, IncompleteStreamError
from sdk.stream import (
    FlowControl,
    MessageStream,
    ResumeRequest,
    StallPolicy,
    Upstream,
)

from .recorded import MSG_STOP, anthropic, block_start, block_stop, delta, msg_delta, msg_start, sse

pytestmark = pytest.mark.anyio

TEXT = "Grüße, 世界! one two three four five six seven"
PIECES = [TEXT[i : i + 5] for i in range(0, len(TEXT), 5)]


def text_events(pieces: list[str]) -> list[dict[str, Any]]:
    """A text message; ``message_start`` reports one output token, as llama-server does."""
    out = [
        msg_start(usage={"input_tokens": 9, "output_tokens": 1}),
        block_start(0, {"type": "text", "text": ""}),
    ]
    out += [delta(0, {"type": "text_delta", "text": p}) for p in pieces]
    return [*out, block_stop(0), msg_delta("end_turn", len(pieces)), MSG_STOP]


class Script:
    """Upstreams from a list of chunk scripts; a chunk may be an exception to raise or
    ``None`` for "wait forever". Records every close."""

    def __init__(self) -> None:
        self.opened = 0
        self.closed: list[int] = []

    def upstream(self, chunks: list[bytes | BaseException | float | None], repeat: str = "") -> Upstream:
        n = self.opened
        self.opened += 1

        async def gen() -> AsyncIterator[bytes]:
            for c in chunks:
                if isinstance(c, BaseException):
                    raise c
                if c is None:
                    await anyio.sleep_forever()
                elif isinstance(c, float):
                    await anyio.sleep(c)
                else:
                    yield c

        async def aclose() -> None:
            self.closed.append(n)

        return Upstream(gen(), aclose, repeat)


def each(events: list[dict[str, Any]]) -> list[bytes | BaseException | float | None]:
    return [anthropic([ev]) for ev in events]


def continuation(script: Script, seen: list[ResumeRequest]) -> Callable[[ResumeRequest], Any]:
    async def resume(req: ResumeRequest) -> Upstream:
        seen.append(req)
        assert TEXT.startswith(req.prefill) and req.message.text == req.prefill
        rest = TEXT[len(req.prefill) :]
        return script.upstream(each(text_events([rest[i : i + 3] for i in range(0, len(rest), 3)])))

    return resume


async def texts_of(stream: MessageStream) -> list[str]:
    return [t async for t in stream.text_deltas()]


@pytest.mark.parametrize("k", [3, 4, 7])
async def test_a_transport_error_mid_text_is_resumed_by_the_core(k: int) -> None:
    script, seen = Script(), []
    first = [*each(text_events(PIECES))[:k], OSError("connection reset")]
    stream = MessageStream(lambda: _ready(script.upstream(first)), resume=continuation(script, seen))
    with anyio.fail_after(10):
        async with stream:
            out = await texts_of(stream)
    assert "".join(out) == stream.state.message().text == TEXT
    assert stream.state.message().stop_reason == "end_turn"
    assert len(seen) == 1 and seen[0].attempt == 1
    # message_start reported 1 output token; k - 2 text deltas were handed out
    assert seen[0].output_tokens == k - 2
    # the final usage counts both segments: the deltas before the cut (the server never
    # reported them) and the continuation's own output
    rest = TEXT[len(seen[0].prefill) :]
    assert stream.state.usage.output_tokens == k - 2 + len(range(0, len(rest), 3))
    assert stream.state.usage.input_tokens == 9 + 9  # the continuation's prompt is billed again
    assert script.closed == [0, 1]
    assert stream.statistics().resumes == 1


async def test_a_short_body_is_resumed() -> None:
    script, seen = Script(), []
    first = each(text_events(PIECES))[:5]  # ends cleanly, before message_stop
    stream = MessageStream(lambda: _ready(script.upstream(first)), resume=continuation(script, seen))
    with anyio.fail_after(10):
        async with stream:
            out = await texts_of(stream)
    assert "".join(out) == TEXT and len(seen) == 1


async def test_an_error_before_the_first_event_sends_the_request_again() -> None:
    script, seen = Script(), []
    plans = [[OSError("reset before any byte")], each(text_events(PIECES))]
    stream = MessageStream(
        lambda: _ready(script.upstream(plans[script.opened])), resume=continuation(script, seen)
    )
    with anyio.fail_after(10):
        async with stream:
            out = await texts_of(stream)
    assert "".join(out) == TEXT
    assert seen == [] and script.opened == 2  # a plain reopen: nothing to splice yet


async def test_no_resume_inside_a_tool_input_or_without_resumes_left() -> None:
    tool = [
        msg_start(),
        block_start(0, {"type": "tool_use", "id": "t", "name": "f", "input": {}}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"a": '}),
    ]
    script, seen = Script(), []
    stream = MessageStream(
        lambda: _ready(script.upstream([*each(tool), OSError("reset")])), resume=continuation(script, seen)
    )
    with pytest.raises(APIConnectionError) as info:
        async with stream:
            await texts_of(stream)
    assert seen == [] and info.value.partial is not None  # not resumed inside a tool input

    script = Script()
    stream = MessageStream(
        lambda: _ready(script.upstream(each(text_events(PIECES))[:4])),
        stall=StallPolicy(False, max_resumes=0),
        resume=continuation(script, seen),
    )
    with pytest.raises(IncompleteStreamError) as info2:
        async with stream:
            await texts_of(stream)
    assert seen == [] and info2.value.partial is not None and info2.value.partial.text == "".join(PIECES[:2])


def split_ping() -> list[bytes | BaseException | float | None]:
    """A ping cut inside its own name, so no single read holds the word "ping"."""
    raw = sse("ping", {"type": "ping"})
    cut = raw.index(b"ping") + 2
    return [raw[:cut], 0.01, raw[cut:], b": keep-alive comment\n\n", 0.01]


async def test_pings_split_across_reads_and_comments_are_not_progress() -> None:
    script = Script()
    body = each(text_events(PIECES))[:4] + split_ping() * 10_000
    stream = MessageStream(lambda: _ready(script.upstream(body)), idle_timeout=0.2)
    with anyio.fail_after(20), pytest.raises(APITimeoutError) as info:
        async with stream:
            await texts_of(stream)
    assert info.value.partial is not None and info.value.partial.text == "".join(PIECES[:2])
    assert script.closed == [0]


async def test_an_idle_timeout_is_resumed_and_progress_keeps_a_slow_stream_alive() -> None:
    script, seen = Script(), []
    slow: list[bytes | BaseException | float | None] = []
    for ev in each(text_events(PIECES))[:6]:
        slow += [ev, 0.02]  # progress every 20 ms: far inside the idle timeout
    body = slow + split_ping() * 10_000
    stream = MessageStream(
        lambda: _ready(script.upstream(body)), resume=continuation(script, seen), idle_timeout=0.3
    )
    with anyio.fail_after(20):
        async with stream:
            out = await texts_of(stream)
    assert "".join(out) == TEXT
    assert len(seen) == 1 and seen[0].prefill == "".join(PIECES[:4])


async def test_a_paused_reader_is_not_idle() -> None:
    """The consumer is away far longer than the idle timeout while the reader is paused
    on a full buffer: that is the consumer's doing, not the server's."""
    script = Script()
    many = [TEXT[i % len(TEXT)] * 50 for i in range(200)]
    body = [*each(text_events(many))[:-3], None]  # then the server holds the connection
    stream = MessageStream(
        lambda: _ready(script.upstream(body)), flow=FlowControl(high_water_bytes=2048), idle_timeout=0.05
    )
    with anyio.fail_after(20):
        async with stream:
            await stream.__anext__()
            await anyio.sleep(0.4)  # a slow consumer
            assert stream.statistics().pauses >= 1
            n = 0
            with pytest.raises(APITimeoutError):
                async for _ in stream:
                    n += 1
    assert n == 200 + 1  # every buffered event came out before the server's silence timed out


async def test_abort_ends_a_waiting_consumer_with_the_partial_and_closes_the_upstream() -> None:
    script, seen = Script(), []
    body = [*each(text_events(PIECES))[:4], None]
    stream = MessageStream(lambda: _ready(script.upstream(body)), resume=continuation(script, seen))
    got: list[BaseException] = []

    async def consume() -> None:
        try:
            async with stream:
                await texts_of(stream)
        except APIConnectionError as e:
            got.append(e)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            stream.abort(APIConnectionError("the client was closed"))
    assert len(got) == 1 and str(got[0]) == "the client was closed"
    assert got[0].partial is not None and got[0].partial.text == "".join(PIECES[:2])
    assert script.closed == [0] and seen == []  # closed, and never resumed


async def test_abort_comes_before_buffered_events() -> None:
    script = Script()
    stream = MessageStream(lambda: _ready(script.upstream(each(text_events(PIECES)))))
    with anyio.fail_after(10):
        async with stream:
            await stream.__anext__()
            await anyio.wait_all_tasks_blocked()  # the rest is buffered
            assert stream.statistics().events_buffered > 0
            stream.abort(KeyError("stop"))
            with pytest.raises(KeyError):
                await stream.__anext__()
            with pytest.raises(StopAsyncIteration):
                await stream.__anext__()
    assert script.closed == [0]


def test_idle_timeout_validation() -> None:
    with pytest.raises(ValueError):
        MessageStream(lambda: _ready(None), idle_timeout=0)  # type: ignore[arg-type]


async def _ready(value: Any) -> Any:
    return value


def _mock_clock_backend() -> Any:
    import trio.testing

    return pytest.param(
        ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)}), id="trio-mockclock"
    )


@pytest.mark.parametrize("anyio_backend", [_mock_clock_backend()])
async def test_the_idle_timeout_fires_between_its_limit_and_a_quarter_more() -> None:
    """On a virtual clock (no CPU starvation), for the last progress at every phase of
    the watch's wake-ups, the timeout fires within [limit, 1.25 x limit] of it."""
    limit = 1.0
    for phase in range(20):
        script = Script()
        first = each(text_events(PIECES))[:4]
        body: list[bytes | BaseException | float | None] = [
            *first[:-1],
            0.6 + phase * 0.0137,
            first[-1],
            None,
        ]
        got: list[float] = []
        stream = MessageStream(lambda s=script, b=body: _ready(s.upstream(b)), idle_timeout=limit)
        with anyio.fail_after(60), pytest.raises(APITimeoutError):
            async with stream:
                async for _ in stream:
                    got.append(anyio.current_time())  # the last is the last progress
        waited = anyio.current_time() - got[-1]
        assert limit <= waited <= 1.25 * limit + 1e-9, (phase, waited)


def test_a_repeat_that_diverges_late_loses_nothing() -> None:
    """A continuation that starts like the expected repeat and then differs: the text
    held back while it might have been a repeat is handed out, not dropped."""
    from sdk.stream import MessageState
    from sdk.stream._events import ContentBlockDeltaEvent, ContentBlockStopEvent, TextDelta
    from sdk.stream._stream import Splicer

    splice = Splicer(MessageState(), "abcdef")
    got = splice([ContentBlockDeltaEvent(0, TextDelta("ab")), ContentBlockDeltaEvent(0, TextDelta("cX"))])
    got += splice([ContentBlockStopEvent(0)])
    text = "".join(e.delta.text for e in got if isinstance(e, ContentBlockDeltaEvent))  # type: ignore[union-attr]
    assert text == "abcX"
    splice = Splicer(MessageState(), "abc")
    got = splice([ContentBlockDeltaEvent(0, TextDelta("ab"))]) + splice([ContentBlockStopEvent(0)])
    text = "".join(e.delta.text for e in got if isinstance(e, ContentBlockDeltaEvent))  # type: ignore[union-attr]
    assert text == "ab"  # a prefix of the repeat, then the end: it was real text
