"""The client: :class:`Client` (async) and :class:`SyncClient`, their streams, bulk
work (:meth:`Client.map`), and what differs by engine, in one place
(:class:`EngineProfile`).

The client speaks to the hosted APIs, to llama-server, to vLLM and to this SDK's own
scheduling server (:mod:`sdk.server`). What differs between them that the rest of the
client must know lives in one profile per engine, chosen by ``Client(engine=...)`` or
learnt once from the server (:mod:`sdk.client._profile`).

Besides the public API (re-exported from :mod:`sdk`), a few names serve the scheduling
server and the tokenizers, documented here as the client's internal API:
:func:`request_cost` (the scheduler's cost of a request), :func:`check_request`,
:func:`without_probes`, :func:`detect_backend`, ``Client.dispatcher``,
``Client.probe_slots()``, ``Client.tokenize_pieces()`` and ``Client.display_url``.
"""

from ._backends import BackendName, detect_backend
from ._batches import BatchMapRun, BatchPolling
from ._catalog import ModelInfo, TokenCount
from ._client import Client, Priority, TimeoutArg
from ._cost import estimate_input_tokens, request_cost
from ._map import MapDone, MapFailed, MapProgress, MapResult, MapRun
from ._params import (
    ContentBlockParam,
    CountTokensParams,
    CreateParams,
    MessageParam,
    ToolParam,
    check_request,
)
from ._profile import (
    ENGINES,
    PRIORITY_HEADER,
    SEAM_PROBE_PATH,
    SERVER_HEADER,
    STREAM_ID_HEADER,
    STREAMS_PATH,
    TENANT_HEADER,
    EngineName,
    EngineProfile,
    TokenizeShape,
    engine_profile,
    without_probes,
)
from ._stream import Stream
from ._sync import SyncClient, SyncStream

__all__ = [
    "ENGINES",
    "PRIORITY_HEADER",
    "SEAM_PROBE_PATH",
    "SERVER_HEADER",
    "STREAMS_PATH",
    "STREAM_ID_HEADER",
    "TENANT_HEADER",
    "BackendName",
    "BatchMapRun",
    "BatchPolling",
    "Client",
    "ContentBlockParam",
    "CountTokensParams",
    "CreateParams",
    "EngineName",
    "EngineProfile",
    "MapDone",
    "MapFailed",
    "MapProgress",
    "MapResult",
    "MapRun",
    "MessageParam",
    "ModelInfo",
    "Priority",
    "Stream",
    "SyncClient",
    "SyncStream",
    "TimeoutArg",
    "TokenCount",
    "TokenizeShape",
    "ToolParam",
    "check_request",
    "detect_backend",
    "engine_profile",
    "estimate_input_tokens",
    "request_cost",
    "without_probes",
]
