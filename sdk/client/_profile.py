"""Engine profiles: what differs by engine, in one place.

Each :class:`EngineProfile` says, for one kind of server:

================  ==========  =========  ========  =============  ============  ===========
profile           priority    schedules  hosted    slots from     conversations prefill echo
================  ==========  =========  ========  =============  ============  ===========
hosted            --          no         yes       --             no            learnt
self-hosted       --          no         no        --             no            learnt
llama-server      --          no         no        ``/props``     yes           yes
vllm              --          no         no        --             no            no
vllm-priority     body        no         no        --             no            no
seam              header      yes        no        --             no            learnt
================  ==========  =========  ========  =============  ============  ===========

- ``hosted``: a hosted API, where nothing is self-hosted: no slot probe, no stall cuts
  (a resume re-bills the prompt) and no preemption.
- ``slots``: the path that tells the engine's slot count (llama-server's ``/props``
  ``total_slots``), which the client's scheduler then admits over; none: not probed.
- ``conversations``: the server keeps each stream by a conversation id
  (``X-Conversation-Id``) so a dropped one is replayed from its byte offset (``GET
  /v1/stream``) and an abandoned one is stopped (``DELETE /v1/stream``): llama-server.
  A resume elsewhere continues by prefill, or by ``Last-Event-ID`` where a scheduling
  server keeps the stream (it says so in the ``seam-stream-id`` header).
- ``prefill_echo``: the server repeats an assistant prefill at the start of its answer
  (``None``: learnt from the model list once, at the first resume; the client's
  ``prefill_echo`` overrides).
- ``tokenize``: the ``/tokenize`` request and answer shape (``"llama"``: ``content``,
  pieces on request; ``"vllm"``: ``prompt`` and ``model``; ``None``: a first request
  carries both and the answer says which).

How a request's tier goes on the wire, and who decides admission:

A request's tier travels with it to a server that honours one, and only to such a
server (an unknown field can be an error: vLLM refuses ``priority`` unless it runs with
``--scheduling-policy priority``):

- ``seam`` (this SDK's :mod:`sdk.server`): the ``seam-priority`` header with the tier's
  name. The server schedules for its clients (``schedules``): the client does not hold
  requests back on a slot count it cannot know and does not preempt its own streams
  (the server does, and resumes them itself); a 503 with ``retry-after`` (its queue is
  full) sends the request back to the client's queue, never fails it.
- ``vllm-priority``: vLLM started with ``--scheduling-policy priority``: the tier's rank
  in vLLM's ``priority`` body field (an integer, lower first: interactive -1, default 0,
  batch 1 with the default tiers). Only when named: vLLM does not say which policy it
  runs, and plain ``vllm`` never gets the field.
- ``llama-server``, ``vllm``, ``self-hosted`` (a server not recognised): nothing on the
  wire; the client's own scheduler admits by tier over the server's slots.
- ``hosted`` (the hosted Anthropic and OpenAI APIs): nothing on the wire. The Messages
  API's ``service_tier`` (``auto`` / ``standard_only``) chooses between capacity pools
  for the whole request, not an order between one caller's requests, so no tier maps
  to it; a caller who wants it passes it like any other field.

With no ``engine`` the client learns it once, before its first request: the hosted
hosts are known by name; a self-hosted server is known by one ``GET`` of its model list
(``/v1/models``; ``/models`` under a ``/v1`` base URL), a path every server of the API
has: this SDK's scheduling server says ``seam-server`` in a header (then ``GET /v1/seam``
gives its capabilities), llama-server ``Server: llama.cpp`` (then ``GET /props`` gives
its slots), vLLM owns its models as ``vllm``. A server none of these is ``self-hosted``
and is asked nothing else: name its engine, or give the slot count
(``Scheduler(slots=n)``), to have more.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, get_args

__all__ = [
    "ENGINES",
    "PRIORITY_HEADER",
    "SEAM_PROBE_PATH",
    "SERVER_HEADER",
    "STREAMS_PATH",
    "STREAM_ID_HEADER",
    "TENANT_HEADER",
    "EngineName",
    "EngineProfile",
    "TokenizeShape",
    "engine_profile",
    "provider_name",
    "without_probes",
]

# The scheduling server's wire names, for both its ends (sdk.server reads what the client sends).
PRIORITY_HEADER = "seam-priority"  # a request's tier
TENANT_HEADER = "seam-tenant"  # the end tenant a gateway key acts for
SEAM_PROBE_PATH = "/v1/seam"  # the server's capabilities: it schedules for its clients
SERVER_HEADER = "seam-server"  # on every answer of the scheduling server: what it is
STREAM_ID_HEADER = "seam-stream-id"  # the server keeps the stream: reattach by this id
STREAMS_PATH = "/v1/streams/"  # DELETE <path><stream id>: a kept stream its client is done with

EngineName = Literal["hosted", "self-hosted", "llama-server", "vllm", "vllm-priority", "seam"]
ENGINES: tuple[EngineName, ...] = get_args(EngineName)


TokenizeShape = Literal["llama", "vllm"]


@dataclass(frozen=True, slots=True)
class EngineProfile:
    """What differs by engine (see the module doc). ``priority``: how a request's tier
    goes on the wire (``"header"``: the ``seam-priority`` header; ``"body"``: vLLM's
    ``priority`` field; ``None``: not at all). ``schedules``: the server admits by tier
    itself. A profile is a frozen value: ``dataclasses.replace(engine_profile("vllm"),
    slots="/props")`` makes a variant."""

    name: EngineName
    priority: Literal["header", "body"] | None = None
    schedules: bool = False
    hosted: bool = False
    slots: str | None = None
    conversations: bool | None = False
    prefill_echo: bool | None = None
    tokenize: TokenizeShape | None = None


_PROFILES: dict[EngineName, EngineProfile] = {
    "hosted": EngineProfile("hosted", hosted=True),
    "self-hosted": EngineProfile("self-hosted"),
    "llama-server": EngineProfile(
        "llama-server", slots="/props", conversations=True, prefill_echo=True, tokenize="llama"
    ),
    "vllm": EngineProfile("vllm", prefill_echo=False, tokenize="vllm"),
    "vllm-priority": EngineProfile("vllm-priority", priority="body", prefill_echo=False, tokenize="vllm"),
    "seam": EngineProfile("seam", priority="header", schedules=True),
}


def engine_profile(engine: EngineName | EngineProfile) -> EngineProfile:
    """The profile named ``engine`` (a profile is returned as it is)."""
    if isinstance(engine, EngineProfile):
        return engine
    profile = _PROFILES.get(engine)
    if profile is None:
        known = ", ".join(repr(n) for n in ENGINES)
        raise ValueError(f"unknown engine {engine!r} (known: {known})")
    return profile


def without_probes(profile: EngineProfile) -> EngineProfile:
    """``profile`` for a client whose engine is known and counted by someone else (a
    scheduling server's engine client): no slot probe, no conversation streams."""
    return replace(profile, slots=None, conversations=False)


# What a span calls each engine (sdk.telemetry's ``gen_ai.provider.name``): the GenAI
# conventions' own names where they have one, else the engine's.
_PROVIDERS = {"llama-server": "llama.cpp", "vllm": "vllm", "vllm-priority": "vllm", "seam": "seam"}


def provider_name(engine: str | None) -> str:
    """The ``gen_ai.provider.name`` of a self-hosted engine by its profile's name."""
    return _PROVIDERS.get(engine or "", "self-hosted")
