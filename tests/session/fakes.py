"""A small in-process server for session tests: real SSE bytes through the real
:class:`sdk.stream.MessageStream`, so only the HTTP part of the client is replaced."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio

from sdk.stream import Event, Message, MessageStream, TextBlock, Upstream, Usage
from tests.client.fault_server import messages_events


class ConnectionDropped(ConnectionResetError):
    """What the fake server raises when it cuts a stream."""


def answer_bytes(pieces: list[str], usage: Mapping[str, int] | None = None) -> list[bytes]:
    """One Anthropic Messages stream: one text block with ``pieces`` as its deltas."""
    u = dict(usage or {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
    return messages_events(pieces, model="fake", usage=u)


@dataclass
class Reply:
    """What the server answers to one request: text pieces, and optionally where it dies
    (after that many deltas have been sent)."""

    pieces: list[str]
    die_after: int | None = None
    usage: Mapping[str, int] | None = None


class FakeStream:
    def __init__(self, inner: MessageStream) -> None:
        self._inner = inner

    async def __aenter__(self) -> FakeStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc, tb)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._inner

    async def final_message(self) -> Message:
        return self._inner.state.message()


class FakeClient:
    """Answers each request with the next reply of ``script`` (a function of the request)."""

    hosted = False

    def __init__(
        self, script: Callable[[dict[str, Any]], Reply], *, prefill_echo: bool | None = False
    ) -> None:
        self.script = script
        self.prefill_echo = prefill_echo
        self.window: int | None = None
        self.requests: list[dict[str, Any]] = []
        self.active = 0
        self.max_active = 0

    async def echoes_prefill(self) -> bool:
        return bool(self.prefill_echo)

    async def context_window(self, model: str) -> int | None:
        return self.window

    def stream(self, **request: Any) -> FakeStream:
        self.requests.append(request)
        reply = self.script(request)
        frames = answer_bytes(reply.pieces, reply.usage)
        cut = None if reply.die_after is None else 2 + reply.die_after

        async def chunks() -> AsyncIterator[bytes]:
            for i, f in enumerate(frames):
                if cut is not None and i >= cut:
                    raise ConnectionDropped("the fake server cut the stream")
                yield f

        async def open_() -> Upstream:
            async def close() -> None:
                return None

            return Upstream(chunks(), close)

        return FakeStream(MessageStream(open_))

    async def create(self, **request: Any) -> Message:
        self.requests.append(request)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await anyio.sleep(0)  # let the other map calls start: the bound is what is tested
            await anyio.sleep(0)
            reply = self.script(request)
        finally:
            self.active -= 1
        return Message(
            "msg", "fake", "assistant", (TextBlock("".join(reply.pieces)),), "end_turn", None, Usage(5, 3)
        )
