"""What the client knows of its engine and asks it besides generations, by its profile
(:mod:`sdk.client._profile`): :class:`EngineState` (the profile, named, known by host or
learnt once), a scheduling server's capabilities (``GET /v1/seam``), the slot count
(``/props``), token ids (``/tokenize`` in llama-server's or vLLM's shape), and
llama-server's kept conversation streams (replayed from a byte offset, or stopped).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import anyio
import httpx2

from .._errors import (
    BadRequestError,
    NotFoundError,
    SDKError,
    StreamProtocolError,
    UnprocessableEntityError,
)
from ..scheduler import Scheduler
from ._catalog import positive
from ._profile import SEAM_PROBE_PATH, EngineProfile, TokenizeShape, engine_profile
from ._send import Sender, TimeoutArg, json_object, root_of

__all__ = [
    "CONVERSATION_HEADER",
    "EngineState",
    "cancel_conversation",
    "probe_seam",
    "probe_slots",
    "replay_conversation",
    "tokenize",
]

CONVERSATION_HEADER = "x-conversation-id"  # llama-server keeps a stream under it
PROBE_BYTES = 1 << 16

Pieces = list[str | list[int]]


class EngineState:
    """What the client knows of its engine (see the module doc): ``profile`` (``None``
    until learnt), ``server_info`` (a scheduling server's ``GET /v1/seam``),
    ``conversations`` (it keeps streams by conversation id), ``slots_known`` (nothing
    left to learn of its slots) and the ``/tokenize`` shape its answers showed."""

    def __init__(self, profile: EngineProfile | None, *, slots_known: bool) -> None:
        self.profile = profile
        self.server_info: Mapping[str, Any] | None = None
        self.conversations = False
        self.slots_known = slots_known
        self.tokenize_shape: TokenizeShape | None = profile.tokenize if profile is not None else None
        self._probe: anyio.Event | None = None

    @property
    def slots_path(self) -> str | None:
        """Where the slot count is asked: the profile's path (``None``: nowhere); an
        engine not known yet, llama-server's ``/props``."""
        return "/props" if self.profile is None else self.profile.slots

    async def learn(self, sender: Sender, scheduler: Scheduler) -> None:
        """Once: what the engine is, unless named (a scheduling server answers ``GET
        /v1/seam``), and a self-hosted server's slot count where its profile says where
        to ask (llama-server's ``/props`` ``total_slots``), given to ``scheduler`` unless
        it has one; concurrent first requests wait for the one probe. A scheduling server
        decides admission itself: its slots are not ours to count."""
        if self.slots_known and self.profile is not None:
            return
        probe = self._probe
        if probe is not None:
            await probe.wait()
            return
        probe = self._probe = anyio.Event()
        found = False
        try:
            if self.profile is None or self.profile.schedules:
                info = await probe_seam(sender)
                if info is not None:
                    self.server_info = info
                    self.profile = self.profile or engine_profile("seam")
            profile = self.profile
            path = self.slots_path
            if not self.slots_known and path is not None and not (profile is not None and profile.schedules):
                n = await probe_slots(sender, path)
                found = n is not None  # llama-server: it keeps streams by conversation
                if n is not None and scheduler.slots is None:
                    scheduler.set_slots(n)
        finally:
            self.slots_known = True
            if self.profile is None:
                self.profile = engine_profile("llama-server" if found else "self-hosted")
                self.tokenize_shape = self.tokenize_shape or self.profile.tokenize
            said = self.profile.conversations
            self.conversations = found if said is None else said
            probe.set()


async def probe_seam(sender: Sender) -> Mapping[str, Any] | None:
    """A scheduling server's capabilities (``None``: not one, or not reachable)."""
    try:
        with anyio.fail_after(10.0):
            doc = await sender.get_small(sender.root + SEAM_PROBE_PATH, PROBE_BYTES)
    except Exception:
        return None
    if isinstance(doc, dict) and doc.get("object") == "seam.server" and doc.get("schedules") is True:
        return doc
    return None


async def probe_slots(sender: Sender, path: str = "/props") -> int | None:
    """The engine's slot count from ``path`` (llama-server's ``/props`` ``total_slots``);
    ``None`` where nothing answers it: no such endpoint, not JSON, not reachable."""
    try:
        with anyio.fail_after(10.0):  # however slowly its bytes come
            return slots_from(await sender.get_small(sender.root + path, PROBE_BYTES))
    except Exception:
        return None


async def window_from_props(sender: Sender) -> int | None:
    """llama-server's context window per slot (``/props``), where it answers."""
    try:
        with anyio.fail_after(10.0):
            props = await sender.get_small(sender.root + "/props", PROBE_BYTES)
    except Exception:
        return None
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    return positive(settings.get("n_ctx")) if isinstance(settings, Mapping) else None


def slots_from(props: object) -> int | None:
    n = props.get("total_slots") if isinstance(props, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and 0 < n < 1_000_000 else None


async def tokenize(
    sender: Sender,
    text: str,
    *,
    model: str | None,
    pieces: bool,
    shape: TokenizeShape | None,
    timeout: TimeoutArg = None,
    extra_headers: Mapping[str, str] | None = None,
) -> tuple[list[int], Pieces | None, TokenizeShape]:
    """Ids of ``text`` (not empty) from ``/tokenize`` and, when ``pieces`` and the server
    gives them (llama-server), each token's piece: a string, or a list of byte values for
    part of a character. ``shape``: the request's shape if known; the third value is the
    shape the answer showed."""
    while True:
        # The first request carries both servers' fields; the answer says which it was.
        body: dict[str, Any] = {}
        if shape != "vllm":  # llama-server's fields
            body.update(content=text, add_special=False, parse_special=False, with_pieces=pieces)
        if shape != "llama":  # vLLM's
            body.update(prompt=text, add_special_tokens=False)
            if model is not None:
                body["model"] = model
        try:
            resp = await sender.send(
                "POST", "/tokenize", body=body, headers=extra_headers, timeout=timeout, root=True
            )
        except (BadRequestError, UnprocessableEntityError):
            if shape is None:
                raise
            shape = None  # another kind of server behind the same URL: ask with both
            continue
        except NotFoundError as e:
            e.message = (
                f"{root_of(sender.shown_url)}/tokenize does not exist: counts from the server need "
                f"llama-server, vLLM or a seam server in front of them ({e.message})"
            )
            raise
        data = json_object(resp)
        if shape == "vllm" and "max_model_len" not in data:
            # Not vLLM's answer: llama-server answers a body without ``content`` with
            # no tokens at all (200), so the count would be 0. Ask with both.
            shape = None
            continue
        break
    if shape is None:
        shape = "vllm" if "max_model_len" in data else "llama"
    ids, got = tokens_from(data, resp.status_code, pieces=pieces and shape == "llama")
    return ids, got, shape


def tokens_from(data: dict[str, Any], status: int, *, pieces: bool) -> tuple[list[int], Pieces | None]:
    """Ids (and pieces) from a ``/tokenize`` answer: ``{"tokens": [id, ...]}``, or with
    pieces ``{"tokens": [{"id": id, "piece": "text" | [byte, ...]}, ...]}``."""
    tokens = data.get("tokens")
    if not isinstance(tokens, list):
        raise StreamProtocolError(f"the /tokenize answer (HTTP {status}) has no list of tokens")
    ids: list[int] = []
    got: Pieces = []
    for t in tokens:
        if isinstance(t, dict):
            i, piece = t.get("id"), t.get("piece")
            if isinstance(piece, str) or (
                isinstance(piece, list) and all(isinstance(b, int) and 0 <= b < 256 for b in piece)
            ):
                got.append(piece)
            else:
                raise StreamProtocolError(f"a /tokenize piece (HTTP {status}) is neither text nor bytes")
        else:
            i = t
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise StreamProtocolError(f"a /tokenize token id (HTTP {status}) is not a non-negative integer")
        ids.append(i)
    if pieces and len(got) == len(ids):
        return ids, got
    return ids, None


async def replay_conversation(
    sender: Sender, conversation: str, offset: int, timeout: TimeoutArg
) -> httpx2.Response | None:
    """llama-server's kept stream of ``conversation`` from byte ``offset`` (``None``
    where it is not kept: expired, or a server without conversation streams)."""
    try:
        return await sender.send(
            "GET",
            f"/v1/stream?conv_id={quote(conversation)}&from={offset}",
            timeout=timeout,
            stream=True,
            root=True,
        )
    except SDKError:  # not kept (404), or the server failed to replay: continue instead
        return None


async def cancel_conversation(sender: Sender, conversation: str) -> None:
    """Stops llama-server's generation for ``conversation`` (``DELETE /v1/stream``): a
    kept stream goes on generating after its connection closes."""
    await sender.delete(sender.root + f"/v1/stream?conv_id={quote(conversation)}")
