"""What the client knows of its engine and asks it besides generations, by its profile
(:mod:`sdk.client._profile`): :class:`EngineState` (the profile, named, known by host or
learnt once from the model list's answer: :func:`identify_engine`), a scheduling server's
capabilities (``GET /v1/seam``), the slot count (``/props``), token ids (``/tokenize``
in llama-server's or vLLM's shape), and llama-server's kept conversation streams
(replayed from a byte offset, or stopped).
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
from ._profile import SEAM_PROBE_PATH, SERVER_HEADER, EngineName, EngineProfile, TokenizeShape, engine_profile
from ._send import Sender, TimeoutArg, json_object, root_of

__all__ = [
    "CONVERSATION_HEADER",
    "EngineState",
    "cancel_conversation",
    "engine_from",
    "identify_engine",
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

    def __init__(self, profile: EngineProfile | None, *, slots_known: bool, models_path: str) -> None:
        self.profile = profile
        self.server_info: Mapping[str, Any] | None = None
        self.conversations = False
        self.slots_known = slots_known
        self.tokenize_shape: TokenizeShape | None = profile.tokenize if profile is not None else None
        self._models_path = models_path
        self._probe: anyio.Event | None = None

    async def identify(self, sender: Sender) -> EngineProfile:
        """The engine's profile: as named, or known by its model list's answer
        (:func:`identify_engine`), learnt the first time it is asked."""
        if self.profile is None:
            self.profile = engine_profile(await identify_engine(sender, self._models_path))
            self.tokenize_shape = self.tokenize_shape or self.profile.tokenize
        return self.profile

    async def learn(self, sender: Sender, scheduler: Scheduler) -> None:
        """Once: what the engine is, unless named (:meth:`identify`: one ``GET`` of the
        model list, which every server of the API has; a scheduling server then answers
        ``GET /v1/seam``), and its slot count where its profile says where to ask
        (llama-server's ``/props`` ``total_slots``), given to ``scheduler`` unless it has
        one; concurrent first requests wait for the one probe. Nothing else is asked of
        a server not recognised. A scheduling server decides admission itself: its slots
        are not ours to count."""
        if self.slots_known and self.profile is not None:
            return
        probe = self._probe
        if probe is not None:
            await probe.wait()
            return
        probe = self._probe = anyio.Event()
        try:
            named = self.profile is not None
            profile = await self.identify(sender)
            if profile.schedules:
                self.server_info = await probe_seam(sender)
                if self.server_info is None and not named:  # a header said so; nothing answers
                    profile = self.profile = engine_profile("self-hosted")
            path = profile.slots
            if not self.slots_known and path is not None and not profile.schedules:
                n = await probe_slots(sender, path)
                if n is not None and scheduler.slots is None:
                    scheduler.set_slots(n)
        finally:
            self.slots_known = True
            if self.profile is None:
                self.profile = engine_profile("self-hosted")
            self.conversations = bool(self.profile.conversations)
            probe.set()


async def identify_engine(sender: Sender, models_path: str) -> EngineName:
    """What a self-hosted server is, from one ``GET`` of its model list (``/v1/models``,
    or ``/models`` under an OpenAI ``/v1`` base URL), a path every server of the API has:
    the answer's headers and owners tell (:func:`engine_from`); ``"self-hosted"`` where
    nothing does, or nothing answers."""
    try:
        with anyio.fail_after(10.0):  # however slowly its bytes come
            headers, doc = await sender.peek(sender.base_url + models_path, PROBE_BYTES)
    except Exception:
        return "self-hosted"
    return engine_from(headers, doc)


def engine_from(headers: Mapping[str, str], models: object) -> EngineName:
    """The engine a model list's answer shows: this SDK's scheduling server says so in a
    header (``seam-server``, on every answer; checked first, since it lists its engines'
    models as they own them), llama-server in ``Server: llama.cpp`` (or a model owned by
    ``llamacpp``, behind a proxy that rewrites the header), vLLM in its models' owner
    (``vllm``); anything else is ``"self-hosted"``. A list too long to read (a gateway of
    hundreds of models) is judged by its headers alone."""
    if SERVER_HEADER in headers:
        return "seam"
    if headers.get("server", "").lower().startswith("llama.cpp"):
        return "llama-server"
    data = models.get("data") if isinstance(models, dict) else None
    listed = data if isinstance(data, list) else []
    owners = {o for m in listed if isinstance(m, dict) and isinstance(o := m.get("owned_by"), str)}
    if "llamacpp" in owners:
        return "llama-server"
    if "vllm" in owners:
        return "vllm"
    return "self-hosted"


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


async def window_from_props(sender: Sender, path: str = "/props") -> int | None:
    """The context window per slot from ``path``, the document that tells the slots
    (llama-server's ``/props``: ``default_generation_settings.n_ctx``), where it answers."""
    try:
        with anyio.fail_after(10.0):
            props = await sender.get_small(sender.root + path, PROBE_BYTES)
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
