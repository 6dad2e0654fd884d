"""What differs by engine, in one place: :class:`EngineProfile`.

The client speaks to the hosted APIs, to llama-server, to vLLM and to this SDK's own
scheduling server (:mod:`sdk.server`). What differs between them that the rest of the
client must know lives in one profile per engine, chosen by ``Client(engine=...)`` or
learnt once from the server.
"""

from ._profile import (
    ENGINES,
    PRIORITY_HEADER,
    SEAM_PROBE_PATH,
    TENANT_HEADER,
    EngineName,
    EngineProfile,
    engine_profile,
)

__all__ = [
    "ENGINES",
    "PRIORITY_HEADER",
    "SEAM_PROBE_PATH",
    "TENANT_HEADER",
    "EngineName",
    "EngineProfile",
    "engine_profile",
]
