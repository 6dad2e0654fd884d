"""HTTP plumbing under the client, the server's engine calls and the session stores'
neighbours: bounded body reading, the retry policy, a transport that sends again what
a stale kept-alive connection lost, and JSON parsing that keeps integers exact.

- :func:`read_bounded` and :func:`decoded_chunks` read a response's body within a size
  (after decompression) and in bounded pieces (:mod:`sdk.http._body`);
- :class:`RetryPolicy` and :class:`RetryBudget` decide retries (:func:`retry_decision` is
  a pure function of a status, headers and the attempt);
- :class:`StaleConnectionResend` wraps a transport (:mod:`sdk.http._transport`);
- :func:`loads_exact` is ``orjson.loads``, exact for integers of any size;
- :func:`http_date` reads an HTTP date (``retry-after``, rate-limit resets).

:class:`RetryPolicy` and :class:`RetryBudget` are also exported from :mod:`sdk`.
"""

from ._body import MAX_ERROR_BODY, MAX_RESPONSE_BODY, BodyDecoder, decoded_chunks, read_bounded
from ._jsonexact import loads as loads_exact
from ._retry import (
    RetryBudget,
    RetryPolicy,
    http_date,
    is_retryable_status,
    parse_retry_after,
    retry_decision,
)
from ._transport import StaleConnectionResend, never_answered

__all__ = [
    "MAX_ERROR_BODY",
    "MAX_RESPONSE_BODY",
    "BodyDecoder",
    "RetryBudget",
    "RetryPolicy",
    "StaleConnectionResend",
    "decoded_chunks",
    "http_date",
    "is_retryable_status",
    "loads_exact",
    "never_answered",
    "parse_retry_after",
    "read_bounded",
    "retry_decision",
]
