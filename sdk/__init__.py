"""seam-sdk: an async client SDK for large language models.

It cuts long inputs only at safe seams (:mod:`sdk.chunking`), reads streams with flow
control and resumes them without duplicates (:mod:`sdk.stream`), keeps conversations
on the client so no turn is ever dropped silently (:mod:`sdk.session`), and schedules
requests by tier, tenant and rate limit (:mod:`sdk.scheduler`).
"""

from ._client import Client, ModelInfo, Stream, TokenCount

# The error classes; helpers for mapping statuses stay in sdk._errors.
from ._errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    CheckpointError,
    ConflictError,
    ContextOverflowError,
    IncompleteStreamError,
    InternalServerError,
    InvalidRequestError,
    NotFoundError,
    OverloadedError,
    PermissionDeniedError,
    RateLimitError,
    RedirectError,
    RequestRejectedError,
    RequestTimeoutError,
    RequestTooLargeError,
    ResponseTooLargeError,
    SDKError,
    SSEError,
    SSEEventTooLargeError,
    StreamProtocolError,
    UnprocessableEntityError,
)
from ._map import MapProgress, MapResult, MapRun
from ._params import ContentBlockParam, CountTokensParams, CreateParams, MessageParam, ToolParam
from ._retry import RetryBudget, RetryPolicy
from ._servertok import ServerTokenizer
from ._sync import SyncClient, SyncStream
from ._tokens import EncodingUnavailable, acount_tokens, count_tokens, get_encoding, known_encodings
from .chunking import Chunk, Chunker, ChunkingWarning, chunk
from .scheduler import RequestMetrics, Scheduler, Tier, TierMetrics
from .session import FitReport, Session, SessionBudgetError, SessionConflict, SessionError, SessionFileError
from .stream import (
    FlowControl,
    Message,
    StallPolicy,
    StreamStatistics,
    TextBlock,
    ToolUseBlock,
    Usage,
)

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "CheckpointError",
    "Chunk",
    "Chunker",
    "ChunkingWarning",
    "Client",
    "ConflictError",
    "ContentBlockParam",
    "ContextOverflowError",
    "CountTokensParams",
    "CreateParams",
    "EncodingUnavailable",
    "FitReport",
    "FlowControl",
    "IncompleteStreamError",
    "InternalServerError",
    "InvalidRequestError",
    "MapProgress",
    "MapResult",
    "MapRun",
    "Message",
    "MessageParam",
    "ModelInfo",
    "NotFoundError",
    "OverloadedError",
    "PermissionDeniedError",
    "RateLimitError",
    "RedirectError",
    "RequestMetrics",
    "RequestRejectedError",
    "RequestTimeoutError",
    "RequestTooLargeError",
    "ResponseTooLargeError",
    "RetryBudget",
    "RetryPolicy",
    "SDKError",
    "SSEError",
    "SSEEventTooLargeError",
    "Scheduler",
    "ServerTokenizer",
    "Session",
    "SessionBudgetError",
    "SessionConflict",
    "SessionError",
    "SessionFileError",
    "StallPolicy",
    "Stream",
    "StreamProtocolError",
    "StreamStatistics",
    "SyncClient",
    "SyncStream",
    "TextBlock",
    "Tier",
    "TierMetrics",
    "TokenCount",
    "ToolParam",
    "ToolUseBlock",
    "UnprocessableEntityError",
    "Usage",
    "acount_tokens",
    "chunk",
    "count_tokens",
    "get_encoding",
    "known_encodings",
]

__version__ = "0.1.0"
