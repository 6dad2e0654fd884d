"""How a broken stream is resumed: one plan, made in one place (sans-IO).

A stream breaks for one of four reasons (:class:`ResumeCause`): the connection dropped
(or the body ended early), the server went silent (the idle timeout), the consumer
stopped reading (the stall policy cut it to free the server's slot) or the scheduler
preempted it for a higher tier. What can be done about it depends on the server:

- **replay**: the server keeps the stream and sends the rest from a cursor: this SDK's
  scheduling server (SSE ids and ``Last-Event-ID``) and llama-server's conversation
  streams (``X-Conversation-Id``; ``GET /v1/stream?conv_id=...&from=<byte>``). Exact,
  nothing generated twice. Right for a dropped connection; not after a stall, a
  preemption or a silent server, where the point is to stop the generation and free
  the slot (the generation is cancelled and continued instead). The scheduling server
  is an exception: it keeps the engine's slot policy itself, so its streams are always
  replayed.
- **continuation**: the request again with the text so far as a trailing assistant
  message (a prefill) the model continues (llama-server, vLLM, hosted models before
  4.6). :func:`continuation` owns the rules: a server that echoes the prefill gets it
  whole and its echo is dropped (:class:`RepeatFilter`); others get it without trailing
  white space (the hosted API refuses it), and the white space is dropped if it comes
  back; ``max_tokens`` is lowered by the tokens already generated; a caller's own
  prefill is extended.
- **none**: the model refuses a prefill (the hosted API's 400 on Claude 4.6 and later,
  recognised by :func:`refuses_prefill` and remembered per model by
  :class:`PrefillRefusals`): the stream ends with :class:`~sdk.IncompleteStreamError`
  carrying the partial message and the reason, never with an error about a request the
  caller did not make.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import BadRequestError, SDKError
from .._models import TextBlock

__all__ = [
    "Continuation",
    "PrefillRefusals",
    "RepeatFilter",
    "ResumeCause",
    "ResumeMode",
    "ResumePlan",
    "continuation",
    "plan_resume",
    "refuses_prefill",
    "thought",
]


class ResumeCause(enum.Enum):
    DROPPED = "dropped"  # the connection broke, or the body ended before the message did
    TIMEOUT = "timeout"  # nothing but pings for the idle timeout: the server went silent
    STALLED = "stalled"  # the consumer stopped reading: the generation was cut to free the slot
    PREEMPTED = "preempted"  # the scheduler paused it for a higher tier


class ResumeMode(enum.Enum):
    REPLAY = "replay"
    CONTINUATION = "continuation"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class ResumePlan:
    mode: ResumeMode
    reason: str


def plan_resume(
    cause: ResumeCause,
    *,
    replay: bool,
    replay_frees_slot: bool = False,
    prefill_refused: bool = False,
) -> ResumePlan:
    """What to do for a stream broken by ``cause``. ``replay``: the server keeps this
    stream; ``replay_frees_slot``: its replay leaves the slot policy to the server (the
    scheduling server), so it fits every cause; ``prefill_refused``: the model is known
    to refuse an assistant prefill."""
    if replay and (cause is ResumeCause.DROPPED or replay_frees_slot):
        return ResumePlan(ResumeMode.REPLAY, "the server keeps the stream: the rest from the last event")
    if prefill_refused:
        return ResumePlan(
            ResumeMode.NONE,
            f"the stream was {cause.value} and the model refuses an assistant prefill, "
            "so it cannot be continued",
        )
    return ResumePlan(ResumeMode.CONTINUATION, f"the stream was {cause.value}: continued by prefill")


@dataclass(frozen=True, slots=True)
class Continuation:
    """The continuation request's body (``params``), the prefill it sends and the text the
    new stream is expected to repeat at its start (dropped once by a :class:`RepeatFilter`)."""

    params: dict[str, Any]
    prefill: str
    repeat: str


def continuation(params: Mapping[str, Any], text: str, *, echo: bool, used_tokens: int = 0) -> Continuation:
    """``params`` (a request in the neutral Messages shape) continued after ``text``, the
    assistant text received so far. ``echo``: the server repeats a prefill at the start
    of its answer (llama-server does). ``used_tokens``: tokens already generated, taken
    off ``max_tokens`` (never below 1)."""
    cont = dict(params)
    messages = list(cont.get("messages", ()))
    sent = text if echo else text.rstrip()  # the hosted API refuses a trailing white space
    own = ""
    if messages and isinstance(messages[-1], Mapping) and messages[-1].get("role") == "assistant":
        own = _text_of(messages.pop().get("content"))  # the caller's own prefill, extended
    prefill = own + sent
    if not prefill:  # nothing to prefill: the same request again (white space it repeats is dropped)
        return Continuation(cont, "", "" if echo else text)
    messages.append({"role": "assistant", "content": prefill})
    cont["messages"] = messages
    for key in ("max_tokens", "max_completion_tokens"):
        mt = cont.get(key)
        if isinstance(mt, int) and not isinstance(mt, bool) and used_tokens > 0:
            cont[key] = max(1, mt - used_tokens)
    repeat = prefill if echo else text[len(sent) :]
    return Continuation(cont, prefill, repeat)


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            str(b.get("text", "")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


class RepeatFilter:
    """Drops, once, text a resumed stream repeats at its start.

    ``candidates`` are the texts the server may repeat (the whole prefill when it echoes
    it, the trailing white space a prefill had to drop). Text is held back while it is
    still a proper prefix of some candidate; the longest candidate it starts with is
    dropped, and anything else is let through unchanged, held text included, so nothing
    is lost when the server does not repeat after all.
    """

    def __init__(self, candidates: Sequence[str]) -> None:
        self._cands = sorted({c for c in candidates if c}, key=len, reverse=True)
        self._held = ""
        self.dropped = ""
        self.done = not self._cands

    def feed(self, text: str) -> str:
        if self.done:
            return text
        buf = self._held + text
        if any(len(c) > len(buf) and c.startswith(buf) for c in self._cands):
            self._held = buf  # could still be a repeat: wait for more
            return ""
        self.done = True
        self._held = ""
        for c in self._cands:
            if buf.startswith(c):
                self.dropped = c
                return buf[len(c) :]
        return buf

    def flush(self) -> str:
        """At the end of the text: held text that is a whole candidate was a repeat;
        anything else held was real text after all."""
        out, self._held = self._held, ""
        self.done = True
        if out in self._cands:
            self.dropped = out
            return ""
        return out


_REFUSAL = re.compile(
    r"(?i)assistant (message |response )?prefill"  # "does not support assistant message prefill",
    r"|prefill is incompatible"  # llama-server: "... prefill is incompatible with enable_thinking"
    r"|conversation must end with a user message"
    r"|final assistant message must start with a thinking block"
)


def refuses_prefill(err: BaseException) -> bool:
    """``err`` is a server's refusal of an assistant prefill: the hosted API's 400 on
    Claude 4.6 and later ("This model does not support assistant message prefill. The
    conversation must end with a user message."), or with thinking on ("a final assistant
    message must start with a thinking block"), llama-server's for a thinking template
    ("Assistant response prefill is incompatible with enable_thinking")."""
    return isinstance(err, BadRequestError) and bool(_REFUSAL.search(err.message))


class PrefillRefusals:
    """The models a server refused a prefill for (remembered for the client's life)."""

    def __init__(self) -> None:
        self._models: set[str] = set()

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and model in self._models

    def add(self, model: object) -> None:
        if isinstance(model, str):
            self._models.add(model)


def thought(message: Any) -> bool:
    """The message holds a block a continuation by prefill cannot carry, so it is not
    continued: a thinking block (a prefill must then start with the thinking block and
    its signature, and ``max_tokens`` must stay above the thinking budget), or a tool call
    (a prefill carries text only: the call would be made a second time). Decided by what
    was generated, not by the request's ``thinking`` field, which an engine may ignore
    and which a caller must not be able to use to switch preemption off."""
    return any(not isinstance(b, TextBlock) for b in getattr(message, "content", ()))


def refusal_reason(model: object, cause: SDKError | None = None) -> str:
    name = model if isinstance(model, str) else "this model"
    tail = f" (the server said: {cause.message})" if cause is not None else ""
    return f"{name} refuses an assistant prefill, so the interrupted answer cannot be continued{tail}"
