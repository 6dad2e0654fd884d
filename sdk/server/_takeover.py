"""What a replica needs to continue another replica's stream: the framer it wrote with,
described in the stream's shared meta, and the message so far, rebuilt from the stored
events (:mod:`._shared`). Pure functions: no Valkey, no engine."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from ..stream import AnthropicEventDecoder, ContentBlockDeltaEvent, ErrorEvent, MessageState
from ..stream._accumulate import apply
from ._http import ChatFramer, Framer, MessagesFramer
from ._openai import ChunkWriter

__all__ = ["NotContinuable", "framer_for", "framer_meta", "rebuild"]


def framer_meta(framer: Framer) -> dict[str, str]:
    """How to make ``framer`` again on another replica."""
    if isinstance(framer, ChatFramer):
        w = framer.writer
        return {
            "kind": "chat",
            "model": w.model,
            "created": str(w.created),
            "include_usage": "1" if w.include_usage else "0",
        }
    return {"kind": "messages"}


def framer_for(meta: Mapping[str, str]) -> Framer:
    """A fresh framer like the one ``meta`` describes (:func:`framer_meta`)."""
    if meta.get("kind") != "chat":
        return MessagesFramer()
    w = ChunkWriter(meta.get("model", ""), include_usage=meta.get("include_usage") == "1")
    w.created = int(meta.get("created", "0") or 0)
    return ChatFramer(w)


class NotContinuable(Exception):
    """The stored stream cannot be rebuilt (trimmed, or it ended in an error)."""


def rebuild(meta: Mapping[str, str], events: Sequence[bytes]) -> tuple[MessageState, Framer, int]:
    """The message the stored ``events`` make, the stream's framer brought to the state
    it was in after writing them (its frames are already stored: dropped here), and a
    lower bound of the tokens generated: the larger of the output reported and the
    deltas (an engine reports its output only at the end, and a delta is a token or
    more)."""
    dec = AnthropicEventDecoder()
    evs = [ev for chunk in events for ev in dec.feed(chunk)] + dec.flush()
    if any(isinstance(ev, ErrorEvent) for ev in evs):
        raise NotContinuable("the stream ended in an error")
    framer = framer_for(meta)
    for ev in evs:
        framer.frames(ev)
    try:
        state = functools.reduce(apply, evs, MessageState())
    except Exception as e:  # a malformed store: not something to continue
        raise NotContinuable(f"the stored events do not make a message: {e}") from None
    deltas = sum(isinstance(ev, ContentBlockDeltaEvent) for ev in evs)
    return state, framer, max(deltas, state.usage.output_tokens or 0)
