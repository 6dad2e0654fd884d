"""Token counts without a download: tiktoken's encodings from rank files already on
disk (:mod:`sdk.tokens._local`), any local tokenizer, and a server's own tokenizer
(:class:`ServerTokenizer`, through ``/tokenize``).

``count_tokens``, ``acount_tokens``, ``get_encoding``, ``known_encodings`` and
``ServerTokenizer`` are also exported from :mod:`sdk`; the rest serves the chunking
engine and the session (an :class:`Encoder` with byte offsets, budgets' counters).
"""

from ._local import (
    DEFAULT_ENCODING,
    WHITE_SPACE,
    AsyncEncodingSpec,
    Encoder,
    EncodingSpec,
    EncodingUnavailable,
    SupportsAsyncEncode,
    SupportsEncode,
    TokenizerError,
    WorkerEncoder,
    acount_tokens,
    checked_text,
    count_tokens,
    encoder,
    even_ends,
    get_encoding,
    is_async_tokenizer,
    known_encodings,
    pattern,
    token_byte_lengths,
    token_counter,
)
from ._server import ServerTokenizer

__all__ = [
    "DEFAULT_ENCODING",
    "WHITE_SPACE",
    "AsyncEncodingSpec",
    "Encoder",
    "EncodingSpec",
    "EncodingUnavailable",
    "ServerTokenizer",
    "SupportsAsyncEncode",
    "SupportsEncode",
    "TokenizerError",
    "WorkerEncoder",
    "acount_tokens",
    "checked_text",
    "count_tokens",
    "encoder",
    "even_ends",
    "get_encoding",
    "is_async_tokenizer",
    "known_encodings",
    "pattern",
    "token_byte_lengths",
    "token_counter",
]
