"""One stream's engine requests: the first, and after each break a resume, as
:func:`sdk.stream._resume.plan_resume` plans it by the engine (its profile, and what the
server said of the stream):

- **reattach** where a scheduling server keeps the stream (``seam-stream-id``): the
  same request with ``Last-Event-ID``, the rest exactly once;
- **replay** where llama-server keeps it by conversation id: its bytes from where ours
  stopped;
- else a **continuation** by assistant prefill (the text so far; a model that refuses a
  prefill, or a stream with a thinking block, ends in an ``IncompleteStreamError`` with
  the partial message).

A :class:`Resumer` is made per :meth:`sdk.Client.stream`; its :meth:`~Resumer.open` and
:meth:`~Resumer.resume` are the :class:`~sdk.stream.MessageStream`'s hooks.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import anyio
import httpx2

from .._errors import BadRequestError, IncompleteStreamError, NotFoundError
from ..scheduler import Flight, Tier
from ..stream import MessageStream, ResumeRequest, StallPolicy, Upstream
from ..stream._resume import (
    PrefillRefusals,
    ResumeMode,
    continuation,
    plan_resume,
    refusal_reason,
    refuses_prefill,
    thought,
)
from ..telemetry import RequestTrace
from ._engine import CONVERSATION_HEADER, cancel_conversation, replay_conversation
from ._profile import STREAM_ID_HEADER, STREAMS_PATH
from ._send import TimeoutArg, tenant_header

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["FlightObserver", "Resumer", "prefill_refusals"]

log = logging.getLogger("sdk")


class Resumer:
    """See the module doc. ``held`` receives the stream's flight when it is submitted;
    ``inner`` is set to the stream once made (it is preempted through it)."""

    def __init__(
        self,
        client: Client,
        request: Mapping[str, Any],
        tier: Tier,
        *,
        tenant: str | None,
        asked: bool,
        stall: StallPolicy,
        extra_headers: Mapping[str, str] | None,
        timeout: TimeoutArg,
        trace: RequestTrace | None = None,
    ) -> None:
        self.client = client
        self.trace = trace
        self.request = request
        self.body = client._backend.body(request, stream=True)
        self.tier = tier
        self.tenant = tenant
        self.asked = asked
        self.stall = stall
        self.extra_headers = extra_headers
        self.timeout = timeout
        self.held: list[Flight] = []
        self.inner: MessageStream | None = None
        self.kept: str | None = None  # the stream id, where the server keeps the stream for a reattach
        self.conv: str | None = None  # llama-server's conversation id of the current engine request

    def _conversation_headers(self) -> Mapping[str, str] | None:
        """A fresh conversation id per engine request where the server keeps streams
        by conversation (llama-server), so a dropped connection can be replayed."""
        if not self.client._engine.conversations:
            return self.extra_headers
        self.conv = secrets.token_hex(12)
        return {**(self.extra_headers or {}), CONVERSATION_HEADER: self.conv}

    async def _post(
        self, flight: Flight, body: Mapping[str, Any], headers: Mapping[str, str] | None
    ) -> httpx2.Response:
        sender = self.client._sender
        try:
            return await sender.send(
                "POST",
                self.client._backend.create_path,
                body=body,
                headers=headers,
                timeout=self.timeout,
                stream=True,
                flight=flight,
            )
        except anyio.get_cancelled_exc_class():
            # Cancelled with the answer's head in flight: llama-server has the request
            # and keeps its conversation generating, so it is stopped there (a scheduling
            # server ends a stream whose client left before its head by itself).
            conv = self.conv
            if conv is not None and headers is not None and headers.get(CONVERSATION_HEADER) == conv:
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await cancel_conversation(sender, conv)
            raise

    def _keep(self, resp: httpx2.Response) -> bool:
        """Whether the server keeps this stream for a reattach (and under which id)."""
        sid = resp.headers.get(STREAM_ID_HEADER, "")
        self.kept = sid if _valid_stream_id(sid) else None
        return self.kept is not None

    def _cancel(self) -> Callable[[], Awaitable[None]] | None:
        """What stops the generation the server keeps for this stream: llama-server's
        conversation, or a scheduling server's kept stream (``DELETE /v1/streams/<id>``,
        which the stream asks only when nobody will reattach: see :class:`Upstream`)."""
        conv, sender, kept = self.conv, self.client._sender, self.kept
        if conv is not None:

            async def cancel() -> None:
                await cancel_conversation(sender, conv)

            return cancel
        if kept is not None:
            # As the request went: the caller's headers, and a gateway key's end tenant,
            # whose stream it is.
            headers = dict(self.extra_headers or {})
            if self.held:
                headers.update(tenant_header(self.client, self.held[0]))

            async def delete() -> None:
                await sender.delete(sender.root + STREAMS_PATH + quote(kept, safe=""), headers=headers)

            return delete
        return None

    async def open(self) -> Upstream:
        client = self.client
        if self.held:
            flight = self.held[0]
            await flight.admit()  # a plain re-send: re-admitted if it was paused
        else:
            # Preemptible whatever the request's fields say: the stream itself refuses a
            # cut once it has generated what a prefill cannot carry (a thinking block).
            # A scheduling server preempts and resumes its streams itself.
            await client._learn_slots()
            profile = client.engine
            schedules = profile is not None and profile.schedules
            resumable = not client._service and not schedules and self.stall.max_resumes > 0
            inner = self.inner
            flight = await client._flight(
                self.request,
                self.tier,
                self.tenant,
                preempt=inner.preempt if resumable and inner is not None else None,
                held=self.held,
                asked=self.asked,
                trace=self.trace,
            )
        resp = await self._post(flight, self.body, self._conversation_headers())
        return Upstream(
            client._sender.chunks(resp), resp.aclose, replayable=self._keep(resp), cancel=self._cancel()
        )

    async def resume(self, rr: ResumeRequest) -> Upstream:
        """After a break: see the module doc."""
        client = self.client
        sender = client._sender
        flight = self.held[0]
        trace = self.trace
        if trace is not None:
            trace.queued(again=True)
        await flight.admit()  # after a stall or a preemption: wait for a slot again
        model = self.request.get("model")
        seam = self.kept is not None and _kept_event_id(self.kept, rr.last_event_id)
        plan = plan_resume(
            rr.cause,
            replay=seam or self.conv is not None,
            replay_frees_slot=seam,
            prefill_refused=model in client._refusals,
        )
        log.info("resuming a stream (attempt %d): %s", rr.attempt, plan.reason)
        if trace is not None:
            trace.admitted()
            how = {"seam.resume.mode": plan.mode.value, "seam.resume.cause": rr.cause.value}
            trace.event("seam.resume", {**how, "seam.attempt": rr.attempt})
        if plan.mode is ResumeMode.REPLAY and seam:
            # This SDK's server keeps the stream: the rest after the last event, exactly once.
            try:
                resp = await self._post(
                    flight, self.body, {**(self.extra_headers or {}), "last-event-id": rr.last_event_id}
                )
            except NotFoundError:
                self.kept = None  # expired there: continue by prefill instead
            else:
                return Upstream(
                    sender.chunks(resp), resp.aclose, replayable=True, replay=True, cancel=self._cancel()
                )
        elif plan.mode is ResumeMode.REPLAY and self.conv is not None:
            # llama-server keeps the conversation's stream: its bytes from where ours stopped.
            replayed = await replay_conversation(sender, self.conv, rr.received_bytes, self.timeout)
            if replayed is not None:
                return Upstream(
                    sender.chunks(replayed),
                    replayed.aclose,
                    replay=True,
                    continues=True,
                    cancel=self._cancel(),
                )
        stop = self._cancel()
        if stop is not None:
            # Whatever is left of it stops generating. Best effort, as when the reader
            # leaves a kept stream (else the server's own timeout ends it): a failed stop
            # must not fail the stream, and a server that is really gone fails the
            # continuation below, through the retry policy.
            try:
                await stop()
            except Exception as e:
                log.info("could not stop the kept stream before continuing it: %s: %s", type(e).__name__, e)
            self.conv = self.kept = None
        if model in client._refusals:
            raise IncompleteStreamError(refusal_reason(model), partial=rr.message)
        if thought(rr.message):
            raise IncompleteStreamError(
                "a stream with a thinking block or a tool call cannot be continued by prefill; "
                f"it was {rr.cause.value}",
                partial=rr.message,
            )
        echo = await client.echoes_prefill()
        cont = continuation(
            {**self.request, **client.resume_extra_body}, rr.prefill, echo=echo, used_tokens=rr.output_tokens
        )
        try:
            resp = await self._post(
                flight, client._backend.body(cont.params, stream=True), self._conversation_headers()
            )
        except BadRequestError as e:
            if not refuses_prefill(e):
                raise
            client._refusals.add(model)  # remembered: the next break fails at once
            raise IncompleteStreamError(refusal_reason(model, e), partial=rr.message) from e
        return Upstream(
            sender.chunks(resp),
            resp.aclose,
            cont.repeat,
            replayable=self._keep(resp),
            cancel=self._cancel(),
        )


def prefill_refusals() -> PrefillRefusals:
    """A client's record of the models that refused an assistant prefill (a resume of
    theirs fails at once)."""
    return PrefillRefusals()


def _valid_stream_id(sid: str) -> bool:
    return 0 < len(sid) <= 128 and sid.isascii() and sid.isprintable() and ":" not in sid


def _kept_event_id(sid: str, last: str) -> bool:
    """Whether ``last`` is an event id of the kept stream ``sid`` (``<sid>:<n>``), one a
    ``Last-Event-ID`` header can carry: a server's other ids are not sent back to it."""
    n = last[len(sid) + 1 :]
    return last.startswith(sid + ":") and 0 < len(n) <= 20 and n.isascii() and n.isdigit()


class FlightObserver:
    """The stream's observer before its request is submitted: forwards to the flight."""

    __slots__ = ("_held", "_trace")

    def __init__(self, held: list[Flight], trace: RequestTrace | None = None) -> None:
        self._held = held
        self._trace = trace

    def output(self, n: int) -> None:
        if self._held:
            self._held[0].output(n)

    def released(self) -> None:
        if self._trace is not None:
            self._trace.event("seam.preempted")
        if self._held:
            self._held[0].released()

    def ended(self, ok: bool) -> None:
        if self._held:
            self._held[0].ended(ok)
