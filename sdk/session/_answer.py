"""The answer being streamed: the cursor the session keeps, and the stream wrapper.

:class:`SessionStream` hands the consumer the client's events and records, before each
text delta is handed over, what the consumer now holds (:class:`PendingAnswer`), so a
saved session knows exactly where a resumed answer has to continue.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from .._errors import BadRequestError, IncompleteStreamError, SessionError
from .._models import Usage
from ..stream import ContentBlockDeltaEvent, Event, Message, MessageDeltaEvent, MessageStartEvent, TextDelta
from ..stream._accumulate import wire_blocks
from ..stream._resume import RepeatFilter, continuation, refusal_reason, refuses_prefill
from ..tokens import count_tokens
from ._policy import FitReport

if TYPE_CHECKING:
    from ._session import Session

__all__ = [
    "PendingAnswer",
    "SessionClient",
    "SessionError",
    "SessionStream",
    "StreamLike",
]


class StreamLike(Protocol):
    """What ``client.stream(...)`` yields: neutral events, then the accumulated message
    (``final_message()`` also answers after the ``async with`` block: what was received)."""

    def __aiter__(self) -> AsyncIterator[Event]: ...

    async def final_message(self) -> Message: ...


class SessionClient(Protocol):
    """The client as the session uses it (``sdk.Client`` is one): ``hosted`` (the hosted
    Anthropic API, which takes ``cache_control`` breakpoints), ``echoes_prefill()``
    (whether the server repeats an assistant prefill at the start of its answer, for
    continuing a pending answer), ``context_window(model)`` (the model's window where the
    server says it, for a session made without one), ``stream`` and ``create``."""

    @property
    def hosted(self) -> bool: ...

    async def echoes_prefill(self) -> bool: ...

    async def context_window(self, model: str) -> int | None: ...

    # Properties holding callables, not methods: ``Client.stream(**params)`` takes typed
    # keywords, which a method ``stream(**request: Any)`` in a protocol would refuse.
    @property
    def stream(self) -> Callable[..., AbstractAsyncContextManager[StreamLike]]: ...

    @property
    def create(self) -> Callable[..., Awaitable[Message]]: ...


@dataclass(frozen=True, slots=True)
class PendingAnswer:
    """The answer being streamed: ``text`` is what the consumer has been handed so far.

    ``after`` is the id of the turn it answers; ``usage`` what the server reported for
    the attempts so far; ``requests`` how many requests were sent for it.
    """

    after: int
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    request_estimate: int | None = None


class SessionStream:
    """``async with session.stream(...) as r``: ``r.text_deltas()``, ``async for event in r``,
    ``await r.final_message()``; ``r.report`` says what the request kept and left out."""

    def __init__(self, session: Session, save_every: int | None, extra: Mapping[str, Any]) -> None:
        self._session = session
        self._save_every = save_every
        self._extra = dict(extra)
        self._cm: AbstractAsyncContextManager[StreamLike] | None = None
        self._inner: StreamLike | None = None
        self._gen: AsyncIterator[Event] | None = None
        self._deltas = 0
        self._filter = RepeatFilter(())
        self._prefix = ""
        self._usage = Usage()
        self.report: FitReport | None = None

    async def __aenter__(self) -> SessionStream:
        s = self._session
        pending = s.pending
        assert pending is not None
        self._prefix = pending.text
        try:
            await s.resolve_window()
            report = s.fit(prefill=pending.text)
            report = await s._summarize_if_needed(report)
            s.last_report = report
            self.report = report
            params = s._params(report, "", self._extra)
            if pending.text:  # an answer cut short: continued by prefill (sdk.stream._resume)
                echo = s.echoes_prefill
                if echo is None:
                    echo = await s._client().echoes_prefill()
                used = count_tokens(pending.text, s.log.encoding)
                cont = continuation(params, pending.text, echo=echo, used_tokens=used)
                params = cont.params
                self._filter = RepeatFilter((cont.repeat,))
            s.pending = replace(
                pending,
                requests=pending.requests + 1,
                request_estimate=pending.request_estimate
                if pending.request_estimate is not None
                else report.tokens,
            )
            self._cm = s._client().stream(**params)
            try:
                self._inner = await self._cm.__aenter__()
            except BadRequestError as e:
                if not (pending.text and refuses_prefill(e)):
                    raise
                raise IncompleteStreamError(
                    refusal_reason(params.get("model"), e) + "; the text so far stays in session.pending"
                ) from e
        except BaseException:
            if not pending.text:  # nothing received: no answer pends; the log ends with the question
                s.pending = None
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        assert self._cm is not None and self._inner is not None
        s = self._session
        try:
            suppress = await self._cm.__aexit__(exc_type, exc, tb)
        finally:
            pending = s.pending
            if pending is not None:
                s.pending = replace(pending, usage=pending.usage + self._usage)
            if exc_type is None:
                msg = await self._inner.final_message()
                if msg.stop_reason is not None and self._filter.done:
                    self._complete(msg)
            if self._save_every is not None and s.store is not None:
                await anyio.to_thread.run_sync(s.save)
        return suppress

    def _complete(self, msg: Message) -> None:
        s = self._session
        pending = s.pending
        assert pending is not None
        blocks = wire_blocks(msg.content)
        if self._prefix:
            dropped = self._filter.dropped
            for b in blocks:
                if b.get("type") == "text":
                    text = b["text"]
                    b["text"] = self._prefix + (text[len(dropped) :] if text.startswith(dropped) else text)
                    break
            else:
                blocks.insert(0, {"type": "text", "text": self._prefix})
        if not blocks:
            blocks = [{"type": "text", "text": ""}]
        usage = pending.usage
        s.pending = None
        s.add_assistant(blocks, usage=usage, request_estimate=pending.request_estimate)
        total = usage.total_input
        if self.report is not None and self.report.tokens > 0 and total > 0:
            s.scale = min(4.0, max(s.scale, total / self.report.tokens))

    def __aiter__(self) -> AsyncIterator[Event]:
        if self._gen is None:
            self._gen = self._events()
        return self._gen

    async def _events(self) -> AsyncIterator[Event]:
        assert self._inner is not None
        last_text_index = 0
        async for ev in self._inner:
            if isinstance(ev, MessageStartEvent):
                self._usage = self._usage + Usage.of(ev.usage)
            elif isinstance(ev, MessageDeltaEvent):
                # message_delta usage is cumulative for this request: replace what start said
                u = Usage.of(ev.usage)
                self._usage = Usage(
                    u.input_tokens if u.input_tokens is not None else self._usage.input_tokens,
                    u.output_tokens if u.output_tokens is not None else self._usage.output_tokens,
                    u.cache_creation_input_tokens
                    if u.cache_creation_input_tokens is not None
                    else self._usage.cache_creation_input_tokens,
                    u.cache_read_input_tokens
                    if u.cache_read_input_tokens is not None
                    else self._usage.cache_read_input_tokens,
                )
            elif isinstance(ev, ContentBlockDeltaEvent) and isinstance(ev.delta, TextDelta):
                last_text_index = ev.index
                text = self._filter.feed(ev.delta.text)
                if not text:
                    continue
                if text != ev.delta.text:
                    ev = ContentBlockDeltaEvent(ev.index, TextDelta(text))
                await self._record(text)
            yield ev
        rest = self._filter.flush()
        if rest:
            await self._record(rest)
            yield ContentBlockDeltaEvent(last_text_index, TextDelta(rest))

    async def _record(self, text: str) -> None:
        """The consumer is about to hold ``text``: move the cursor (and checkpoint)."""
        s = self._session
        pending = s.pending
        assert pending is not None
        s.pending = replace(pending, text=pending.text + text)
        self._deltas += 1
        if self._save_every and s.store is not None and self._deltas % self._save_every == 0:
            await anyio.to_thread.run_sync(s.save)

    async def text_deltas(self) -> AsyncIterator[str]:
        async for ev in self:
            if isinstance(ev, ContentBlockDeltaEvent) and isinstance(ev.delta, TextDelta):
                yield ev.delta.text

    async def final_message(self) -> Message:
        """Consume the rest (recording it) and return the message of this request."""
        async for _ in self:
            pass
        assert self._inner is not None
        return await self._inner.final_message()
