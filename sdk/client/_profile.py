"""Engine profiles: how a request's tier goes on the wire, and who decides admission.

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
hosts are known by name; a self-hosted server is asked ``GET /v1/seam`` (the scheduling
server's capabilities) and then ``GET /props`` (llama-server's slots).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

__all__ = [
    "ENGINES",
    "PRIORITY_HEADER",
    "SEAM_PROBE_PATH",
    "TENANT_HEADER",
    "EngineName",
    "EngineProfile",
    "engine_profile",
]

# The scheduling server's wire names, for both its ends (sdk.server reads what the client sends).
PRIORITY_HEADER = "seam-priority"  # a request's tier
TENANT_HEADER = "seam-tenant"  # the end tenant a gateway key acts for
SEAM_PROBE_PATH = "/v1/seam"  # the server's capabilities: it schedules for its clients

EngineName = Literal["hosted", "self-hosted", "llama-server", "vllm", "vllm-priority", "seam"]
ENGINES: tuple[EngineName, ...] = get_args(EngineName)


@dataclass(frozen=True, slots=True)
class EngineProfile:
    """``priority``: how a request's tier goes on the wire (``"header"``: the
    ``seam-priority`` header; ``"body"``: vLLM's ``priority`` field; ``None``: not at
    all). ``schedules``: the server admits by tier itself (see the module doc)."""

    name: EngineName
    priority: Literal["header", "body"] | None = None
    schedules: bool = False


_PROFILES: dict[EngineName, EngineProfile] = {
    "hosted": EngineProfile("hosted"),
    "self-hosted": EngineProfile("self-hosted"),
    "llama-server": EngineProfile("llama-server"),
    "vllm": EngineProfile("vllm"),
    "vllm-priority": EngineProfile("vllm-priority", priority="body"),
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
