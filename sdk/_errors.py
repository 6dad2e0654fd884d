"""The one error hierarchy of the SDK: every exception class it raises on purpose is
defined here, with a group per pillar, and exported from ``sdk``.

Whatever fails (an HTTP status, an ``error`` event in the middle of a stream, a broken
socket, a malformed byte stream), the caller catches the same classes::

    SDKError
    ├── APIError                      the server said no (status, request_id, error_type, body)
    │   ├── BadRequestError           400  invalid_request_error
    │   │   └── ContextOverflowError  400  "prompt is too long" / context_length_exceeded
    │   ├── AuthenticationError       401  authentication_error
    │   ├── PermissionDeniedError     403  permission_error
    │   ├── NotFoundError             404  not_found_error
    │   ├── RequestTimeoutError       408  timeout_error
    │   ├── ConflictError             409
    │   ├── RequestTooLargeError      413  request_too_large
    │   ├── UnprocessableEntityError  422
    │   ├── RateLimitError            429  rate_limit_error
    │   ├── InternalServerError       5xx  api_error
    │   ├── OverloadedError           529  overloaded_error
    │   └── RedirectError             3xx  (redirects are not followed)
    ├── APIConnectionError            no usable answer: connect/read/write failed
    │   ├── APITimeoutError           ... because a timeout expired
    │   ├── ResponseTooLargeError     ... because the body is over the client's cap
    │   └── UnsupportedEncodingError  ... because its content encoding is unreadable
    ├── InvalidRequestError           the request is incomplete or malformed (not sent)
    ├── SchedulerError                the scheduler's group                  sdk.scheduler
    │   ├── UnknownTierError          a request named a tier the scheduler lacks (ValueError)
    │   └── RequestRejectedError      the client's scheduler refused it before sending
    ├── EncodingUnavailable           no verified rank file for an encoding (RuntimeError)
    ├── TokenizerError                the native tokenizer failed on an input (RuntimeError)
    ├── ChunkingError                 the chunker's group                    sdk.chunking
    │   ├── UnknownLanguage           no grammar by that name (ValueError)
    │   ├── GrammarUnavailable        a grammar's wheel is not installed (ImportError)
    │   ├── JSONChunkError            kind="json" on text that is not JSON (ValueError)
    │   ├── BinaryFileError           chunk_file was given a binary file (ValueError)
    │   └── UndecodableFileError      chunk_file was given text that is not UTF-8 (ValueError)
    ├── SessionError                  the session's group; also: it cannot do that now  sdk.session
    │   ├── SessionNotFound           no session under that id (LookupError)
    │   ├── SessionStoreError         a store failed or is unreachable (OSError)
    │   ├── SessionBudgetError        the session's own budget cannot hold what must stay
    │   ├── SessionConflict           another writer saved a newer version
    │   └── SessionFileError          a session file is damaged (names the byte offset)
    ├── CheckpointError               a map's checkpoint cannot be used (OSError)  Client.map
    ├── BatchResultError              a batch's request ended with no answer (canceled, expired)
    ├── ConfigError                   a server's or client's configuration is wrong sdk.server
    └── StreamProtocolError           the bytes or events of a stream break the protocol
        ├── SSEError                  malformed server-sent-event framing
        │   └── SSEEventTooLargeError one event is over the configured cap
        └── IncompleteStreamError     the body ended before the final event

A mid-stream ``error`` event maps by its ``type`` (an ``overloaded_error`` is an
:class:`OverloadedError` whatever the status of the open response), and every error
raised after the first byte carries ``partial``: the message accumulated so far.

Secrets never reach a message or a repr: strings are passed through :func:`redact`,
which masks, by value, every secret a client was given or sent (its API key, any
``Authorization``/``x-api-key`` header value: :func:`register_secret`), and by pattern
anything shaped like an API key or an authorization value.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, cast
from urllib.parse import quote, quote_plus

if TYPE_CHECKING:
    from ._models import Message

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "BatchResultError",
    "BinaryFileError",
    "CheckpointError",
    "ChunkingError",
    "ConfigError",
    "ConflictError",
    "ContextOverflowError",
    "EncodingUnavailable",
    "GrammarUnavailable",
    "IncompleteStreamError",
    "InternalServerError",
    "InvalidRequestError",
    "JSONChunkError",
    "NotFoundError",
    "OverloadedError",
    "PermissionDeniedError",
    "RateLimitError",
    "RedirectError",
    "RequestRejectedError",
    "RequestTimeoutError",
    "RequestTooLargeError",
    "ResponseTooLargeError",
    "SDKError",
    "SSEError",
    "SSEEventTooLargeError",
    "SchedulerError",
    "SessionBudgetError",
    "SessionConflict",
    "SessionError",
    "SessionFileError",
    "SessionNotFound",
    "SessionStoreError",
    "StreamProtocolError",
    "TokenizerError",
    "UndecodableFileError",
    "UnknownLanguage",
    "UnknownTierError",
    "UnprocessableEntityError",
    "UnsupportedEncodingError",
    "api_error_from_body",
    "error_class_for_status",
    "error_class_for_type",
    "error_from_transport",
    "redact",
    "register_secret",
    "release_secret",
]

# API keys (Anthropic "sk-ant-...", OpenAI-style "sk-...", bearer tokens) and header values.
_SECRET = re.compile(
    r"(?i)(sk-[a-z0-9_\-]{6,})"
    r"|((?:x-api-key|authorization|api[_-]?key)[\"']?\s*[:=]\s*[\"']?(?:bearer\s+)?)([^\s\"',}]+)"
)


# Secrets known by value: every API key a live client was made with or sent in a header
# (counted: a client that closes gives back its own). A value shorter than this is not
# masked (it would mask ordinary words, and a key that short is no secret).
MIN_SECRET_LENGTH = 4
_known: dict[str, int] = {}
_known_lock = threading.Lock()
_known_re: re.Pattern[str] | None = None


# Base64 spellings are matched only for values at least this long (a shorter value's
# base64 core is a few characters that ordinary base64 text holds by chance).
_MIN_BASE64_SECRET = 12


_ESCAPE = re.compile(r"(%[0-9A-F]{2}|\\u[0-9a-f]{4})")


def _any_case_hex(spelling: str) -> str:
    """A pattern for an escaped spelling whose escapes' hex digits (``%2F``, ``\\u002f``)
    match in either case, and nothing else does: the value's own letters keep their case.
    (An inline ``(?i:...)`` group would also fold them, and it keeps the alternation of
    every secret from scanning by first character: redaction became 20 times slower.)"""
    out: list[str] = []
    for i, part in enumerate(_ESCAPE.split(spelling)):
        if i % 2 == 0:
            out.append(re.escape(part))
            continue
        head = 1 if part[0] == "%" else 2
        out.append(re.escape(part[:head]))
        out.extend(d if d.isdigit() else f"[{d.lower()}{d.upper()}]" for d in part[head:])
    return "".join(out)


def _forms(value: str) -> set[str]:
    """Patterns for a value and the spellings a server may echo it in: JSON-escaped
    (``/`` as ``\\/`` too), percent-encoded (``%xx`` or ``+`` for a space, hex digits in
    either case), every character a ``\\uXXXX`` escape (either case), and inside base64 or
    base64url text (at any of the three alignments: the characters that depend on the
    value only)."""
    json_escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    # JSON may also escape "/" as "\\/" (PHP's json_encode does by default)
    literal = {value, json_escaped, json_escaped.replace("/", "\\/")}
    forms = {re.escape(f) for f in literal if len(f) >= MIN_SECRET_LENGTH}
    units: list[str] = []
    for c in value:
        o = ord(c)
        if o >= 0x10000:  # a JSON escape spells it as a surrogate pair
            o -= 0x10000
            units += (f"\\u{0xD800 + (o >> 10):04x}", f"\\u{0xDC00 + (o & 0x3FF):04x}")
        else:
            units.append(f"\\u{o:04x}")
    for escaped in (quote(value, safe=""), quote_plus(value, safe=""), "".join(units)):
        if len(escaped) >= MIN_SECRET_LENGTH:
            forms.add(_any_case_hex(escaped))
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) >= _MIN_BASE64_SECRET:
        for lead in range(3):
            enc = base64.b64encode(b"\0" * lead + raw).decode("ascii")
            # skip what the lead bytes decide; stop before what the next bytes would
            core = enc[(8 * lead + 5) // 6 : (8 * (lead + len(raw))) // 6]
            forms.add(re.escape(core))
            forms.add(re.escape(core.replace("+", "-").replace("/", "_")))
    return forms


def longest_secret() -> int:
    """The length of the longest registered spelling of a secret (0: none)."""
    return max(map(len, _known), default=0)


def register_secret(value: str | None) -> bool:
    """Mask ``value`` wherever :func:`redact` runs, until :func:`release_secret`. Clients
    register their own keys and the values of the credential headers they send, and
    release them when they close. Returns whether anything was registered."""
    global _known_re
    if not value or len(value) < MIN_SECRET_LENGTH:
        return False
    with _known_lock:
        for f in _forms(value):
            _known[f] = _known.get(f, 0) + 1
        _known_re = None  # compiled again at the next redact
    return True


def release_secret(value: str) -> None:
    """Give back one :func:`register_secret` of ``value``."""
    global _known_re
    with _known_lock:
        for f in _forms(value):
            n = _known.get(f, 0) - 1
            if n > 0:
                _known[f] = n
            else:
                _known.pop(f, None)
        _known_re = None


def _alternation(patterns: Iterable[str]) -> re.Pattern[str]:
    return re.compile("|".join(sorted(patterns, key=len, reverse=True)))


def redact(text: str) -> str:
    """Mask every registered secret, and anything that looks like an API key or an
    authorization value."""
    global _known_re
    known = _known_re
    if known is None and _known:  # registered secrets, not yet compiled
        with _known_lock:
            if _known_re is None and _known:
                _known_re = _alternation(_known)
            known = _known_re
    if known is not None:
        text = known.sub("***", text)

    def _mask(m: re.Match[str]) -> str:
        if m.group(1):
            return "sk-***"
        return f"{m.group(2)}***"

    return _SECRET.sub(_mask, text)


def _redact_value(value: object) -> object:
    """A copy of a decoded body with every string redacted.

    Walked with a stack of its own, not by recursion: a body nested as deep as the JSON
    parser allows (a server's choice) must not exhaust Python's stack.
    """

    def leaf(v: object) -> object:
        if isinstance(v, str):
            return redact(v)
        if isinstance(v, bytes):
            return redact(v.decode("utf-8", "replace"))
        return v

    def copy(v: object) -> object:
        if isinstance(v, Mapping):
            out: dict[object, object] = {}
            stack.append((v, out))
            return out
        if isinstance(v, list | tuple):
            items: list[object] = []
            stack.append((v, items))
            return items
        return leaf(v)

    stack: list[tuple[object, dict[object, object] | list[object]]] = []
    root = copy(value)
    while stack:
        src, dst = stack.pop()
        if isinstance(dst, dict):
            for k, v in cast("Mapping[object, object]", src).items():
                dst[redact(k) if isinstance(k, str) else k] = copy(v)
        else:
            dst.extend(copy(v) for v in cast("list[object] | tuple[object, ...]", src))
    return root


def _redact_event(event: object) -> object:
    """What a server sent, kept on an error, with secrets redacted by value: raw text and
    decoded JSON as :func:`_redact_value` copies them, a parsed event (a dataclass) with
    its text and mapping fields redacted, anything else as it is."""
    if event is None:
        return None
    if isinstance(event, str | bytes | Mapping | list | tuple):
        return _redact_value(event)
    if dataclasses.is_dataclass(event) and not isinstance(event, type):
        changes: dict[str, object] = {}
        for f in dataclasses.fields(event):
            v = getattr(event, f.name, None)
            if isinstance(v, str):
                masked = redact(v)
                if masked != v:
                    changes[f.name] = masked
            elif isinstance(v, Mapping):
                changes[f.name] = _redact_value(v)
        if changes:
            try:
                return dataclasses.replace(event, **changes)
            except (TypeError, ValueError):  # a field outside __init__: its text instead
                return redact(_safe_repr(event))
    return event


def _safe_repr(value: object, limit: int = 500) -> str:
    """``repr(value)`` cut to ``limit`` characters, or its type's name where the repr
    fails (a value nested deeper than the interpreter's recursion limit)."""
    try:
        return repr(value)[:limit]
    except (RecursionError, MemoryError, ValueError):
        return f"<{type(value).__name__}>"


class SDKError(Exception):
    """Root of every error the SDK raises on purpose.

    ``partial`` is the message accumulated before the failure (``None`` before the first
    event), so a caller never loses what the stream already delivered.
    """

    partial: Message | None

    def __init__(self, message: str, *, partial: Message | None = None) -> None:
        self.message = redact(message)
        self.partial = partial
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


class APIError(SDKError):
    """The server answered with an error (an HTTP status or a mid-stream ``error`` event).

    ``status`` is ``None`` for an error event on an open stream; ``error_type`` is the
    wire's ``type`` string (``overloaded_error``, ``rate_limit_error``, ...).
    """

    status: int | None
    request_id: str | None
    error_type: str | None
    body: object

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
        error_type: str | None = None,
        body: object = None,
        partial: Message | None = None,
    ) -> None:
        super().__init__(message, partial=partial)
        self.status = status
        self.request_id = redact(request_id) if request_id is not None else None
        self.error_type = redact(error_type) if error_type is not None else None
        self.body = _redact_value(body)

    @property
    def status_code(self) -> int | None:
        """The HTTP status (as the official SDKs name it); ``None`` for an error event."""
        return self.status

    def __str__(self) -> str:
        parts = [self.message]
        if self.status is not None:
            parts.append(f"status={self.status}")
        if self.error_type:
            parts.append(f"type={self.error_type}")
        if self.request_id:
            parts.append(f"request_id={self.request_id}")
        return " | ".join(parts)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(message={self.message!r}, status={self.status!r}, "
            f"error_type={self.error_type!r}, request_id={self.request_id!r})"
        )


class BadRequestError(APIError):
    """400: the request is invalid; retrying it unchanged cannot help."""


class ContextOverflowError(BadRequestError):
    """400: the prompt does not fit the model's context window; trim it, do not retry."""


class AuthenticationError(APIError):
    """401: the API key is missing or wrong."""


class PermissionDeniedError(APIError):
    """403: the key may not use this resource."""


class NotFoundError(APIError):
    """404: unknown model or endpoint."""


class RequestTimeoutError(APIError):
    """408: the server gave up waiting for the request; retryable."""


class ConflictError(APIError):
    """409: a conflicting request is in flight; retryable."""


class RequestTooLargeError(APIError):
    """413: the request body is over the server's size limit."""


class UnprocessableEntityError(APIError):
    """422: well-formed but semantically invalid request."""


class RateLimitError(APIError):
    """429: slow down (honour ``retry-after``)."""


class InternalServerError(APIError):
    """5xx (other than 529): the server failed; retryable before the first byte."""


class OverloadedError(APIError):
    """529 / ``overloaded_error``: the service is temporarily over capacity."""


class RedirectError(APIError):
    """The server answered with a redirect (3xx). Redirects are not followed: an API
    key must not travel to wherever a server points. ``location`` is where it pointed."""

    location: str | None

    def __init__(self, status: int, location: str | None, *, request_id: str | None = None) -> None:
        where = f" to {location!r}" if location else " without a location"
        super().__init__(
            f"the server answered HTTP {status}, a redirect{where}; redirects are not followed "
            "(point base_url at the final address)",
            status=status,
            request_id=request_id,
            error_type="redirect",
        )
        self.location = redact(location) if location is not None else None


class APIConnectionError(SDKError):
    """The transport failed: nothing (or nothing more) could be read from the server."""


class APITimeoutError(APIConnectionError):
    """A connect, read, write or pool timeout expired, or the response did not arrive
    within its deadline (see :class:`~sdk.Client`)."""


class ResponseTooLargeError(APIConnectionError):
    """A non-streamed response body was over the client's cap (decompressed size).
    ``limit`` is the cap in bytes."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response body is over {limit} bytes (decompressed); it was not read further")
        self.limit = limit


class InvalidRequestError(SDKError, ValueError):
    """The request is missing a required field or has one of the wrong shape; it was not
    sent. ``param`` names the field."""

    def __init__(self, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class SchedulerError(SDKError):
    """The scheduler's group: a tier it does not have, a request it refused."""


class UnknownTierError(SchedulerError, ValueError):
    """A request named a tier the scheduler does not have."""


class RequestRejectedError(SchedulerError):
    """The client's scheduler refused the request before sending it: its queue is full,
    or its cost is above a rate limit's whole capacity, so it could never be admitted.
    ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"the request was not sent: {reason}")
        self.reason = reason


class CheckpointError(SDKError, OSError):
    """A map's checkpoint cannot be used: its path is a symbolic link or not a regular
    file, it cannot be opened or read, or it holds a line over ``sdk.client._map.MAX_LINE_BYTES``.
    ``path`` is the checkpoint's path. An ``OSError``, as other file errors are."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"the map checkpoint {os.fspath(path)!s}: {reason}")
        self.path = os.fspath(path)


class BatchResultError(SDKError):
    """A request of a map run through a message batch (``via="batches"``) ended without
    an answer: ``reason`` is ``"canceled"`` (the batch was cancelled before it ran),
    ``"expired"`` (the batch's processing window ended first) or ``"missing"`` (the
    batch's results did not include it). ``batch_id`` names the batch."""

    def __init__(self, reason: str, batch_id: str) -> None:
        super().__init__(f"the request ended without an answer in batch {batch_id}: {reason}")
        self.reason = reason
        self.batch_id = batch_id


class StreamProtocolError(SDKError):
    """The stream broke its protocol; ``event`` is the offending event (or raw data)."""

    def __init__(self, message: str, *, event: object = None, partial: Message | None = None) -> None:
        super().__init__(message, partial=partial)
        self.event = _redact_event(event)


class SSEError(StreamProtocolError):
    """Malformed server-sent-event framing."""


class SSEEventTooLargeError(SSEError):
    """One event grew past the decoder's ``max_event_bytes``; the stream cannot continue."""


class IncompleteStreamError(StreamProtocolError):
    """The stream ended before the protocol's final event (``message_stop``) and could not
    be resumed; ``partial`` is what arrived, the message says why (for example a model
    that refuses the assistant prefill a continuation needs)."""


class UnsupportedEncodingError(APIConnectionError):
    """The response uses a content encoding the client did not ask for and cannot read."""


# ---- tokens ------------------------------------------------------------------------


class EncodingUnavailable(SDKError, RuntimeError):
    """No verified rank file for a known encoding could be found on this machine."""


class TokenizerError(SDKError, RuntimeError):
    """The native tokenizer failed on an input (a panic inside tiktoken's Rust code).

    :class:`~sdk.Encoder` never hands tiktoken an input shape known to make it fail, so
    this is a last resort: a dependency's panic (a ``BaseException`` that would pass
    through ``except Exception``) surfaces as this ordinary exception instead.
    """


# ---- chunking ----------------------------------------------------------------------


class ChunkingError(SDKError):
    """The chunker's group: input it cannot chunk as asked, a grammar it lacks."""


class UnknownLanguage(ChunkingError, ValueError):
    """A language name this build has no grammar entry for."""


class GrammarUnavailable(ChunkingError, ImportError):
    """The grammar wheel for a known language is not installed."""


class JSONChunkError(ChunkingError, ValueError):
    """Malformed JSON, with the place it was found (1-based line and column, 0-based offset)."""

    def __init__(self, message: str, offset: int, line: int, column: int) -> None:
        super().__init__(f"{message} at line {line}, column {column} (offset {offset})")
        self.reason = message
        self.offset = offset
        self.line = line
        self.column = column


class BinaryFileError(ChunkingError, ValueError):
    """A file given to ``chunk_file`` is binary; ``path`` names it."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class UndecodableFileError(ChunkingError, ValueError):
    """A file given to ``chunk_file`` is not UTF-8; ``offset`` is the first bad byte."""

    def __init__(self, message: str, *, path: str, offset: int) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset


# ---- sessions ----------------------------------------------------------------------


class SessionError(SDKError):
    """The session's group; raised as itself when the session cannot do what was asked
    in its present state (e.g. an answer is pending)."""


class SessionNotFound(SessionError, LookupError):
    """The store holds no session under this id."""

    def __init__(self, message: str, *, path: str, session_id: str) -> None:
        super().__init__(message)
        self.path = path
        self.session_id = session_id


class SessionStoreError(SessionError, OSError):
    """The store failed or could not be reached (a database locked past its busy
    timeout, a Valkey/Redis server gone). An ``OSError``, as the file store's are."""


class SessionBudgetError(SessionError):
    """The session's own budget (its window, in local-estimate tokens) cannot hold even
    the part that must stay (system, pinned turns, the newest turn); raised before
    anything is sent. Not the server's refusal of a long prompt, which is
    :class:`~sdk.ContextOverflowError`."""

    def __init__(self, message: str, *, required: int, budget: int) -> None:
        super().__init__(message)
        self.required = required
        self.budget = budget


class SessionFileError(SessionError):
    """A session file cannot be read: ``path`` names it, ``offset`` is the byte where it
    breaks (``None`` when the JSON parses but its content is wrong), ``where`` the place
    in the document of a value that is missing or of the wrong type (``turns[3].usage``)."""

    def __init__(
        self, message: str, *, path: str, offset: int | None = None, where: str | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.offset = offset
        self.where = where


class SessionConflict(SessionError):
    """The store holds a newer version than the session being saved (another writer won).

    ``path`` says where: the file, or the store's URL (without credentials) and the
    session id; ``session_id`` is the id in its store."""

    def __init__(
        self, message: str, *, path: str, on_disk: int, ours: int, session_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.path = path
        self.on_disk = on_disk
        self.ours = ours
        self.session_id = session_id


# ---- the scheduling server ---------------------------------------------------------


class ConfigError(SDKError, ValueError):
    """A configuration is missing, malformed or inconsistent: the scheduling server's, or
    a client's (a hosted API with no API key)."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    408: RequestTimeoutError,
    409: ConflictError,
    413: RequestTooLargeError,
    422: UnprocessableEntityError,
    429: RateLimitError,
    529: OverloadedError,
}

# Anthropic's error types, then the OpenAI-compatible spellings seen in practice.
_BY_TYPE: dict[str, type[APIError]] = {
    "invalid_request_error": BadRequestError,
    "authentication_error": AuthenticationError,
    "permission_error": PermissionDeniedError,
    "not_found_error": NotFoundError,
    "timeout_error": RequestTimeoutError,
    "request_too_large": RequestTooLargeError,
    "rate_limit_error": RateLimitError,
    "api_error": InternalServerError,
    "overloaded_error": OverloadedError,
    "context_length_exceeded": ContextOverflowError,
    "exceed_context_size_error": ContextOverflowError,
    "invalid_api_key": AuthenticationError,
    "insufficient_quota": RateLimitError,
    "rate_limit_exceeded": RateLimitError,
    "server_error": InternalServerError,
    "unavailable_error": OverloadedError,
}

_OVERFLOW = re.compile(
    r"(?i)prompt is too long|context[_ ]length[_ ]exceeded|maximum context length"
    r"|exceeds? the (available )?context size|too many tokens"
)


# An engine's refusal of a kind of input its model does not take, sent as a server error.
_UNSUPPORTED_INPUT = re.compile(r"(?i)\b(?:image|audio|video) input is not supported")


def error_class_for_status(status: int) -> type[APIError]:
    """The class for an HTTP status (any other 5xx is :class:`InternalServerError`)."""
    cls = _BY_STATUS.get(status)
    if cls is not None:
        return cls
    if status >= 500:
        return InternalServerError
    return APIError


def error_class_for_type(error_type: str | None) -> type[APIError] | None:
    """The class for a wire ``type`` string, or ``None`` when the type is unknown."""
    if not error_type:
        return None
    return _BY_TYPE.get(error_type)


def api_error_from_body(
    body: object,
    *,
    status: int | None = None,
    request_id: str | None = None,
    partial: Message | None = None,
) -> APIError:
    """Build the typed error for an error body (Anthropic or OpenAI shape) and/or a status.

    The body's ``type`` wins over the status (a mid-stream ``overloaded_error`` on a 200
    response is an overload); a "prompt is too long" message refines a 400 to
    :class:`ContextOverflowError`. Unknown shapes fall back to the status and keep the body.
    """
    error_type: str | None = None
    code: object = None
    message = ""
    if isinstance(body, Mapping):
        err = body.get("error", body)
        if isinstance(err, Mapping):
            raw_type = err.get("type")
            code = err.get("code")
            error_type = raw_type if isinstance(raw_type, str) else None
            if isinstance(code, str) and (error_type is None or error_type not in _BY_TYPE):
                error_type = code if code in _BY_TYPE else error_type or code
            msg = err.get("message")
            message = msg if isinstance(msg, str) else ""
        elif isinstance(err, str):
            message = err
        rid = body.get("request_id")
        if request_id is None and isinstance(rid, str):
            request_id = rid
    elif isinstance(body, str | bytes):
        message = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    cls = error_class_for_type(error_type)
    if cls is None:
        cls = error_class_for_status(status) if status is not None else APIError
    if issubclass(cls, BadRequestError) and (_OVERFLOW.search(message) or code == "context_length_exceeded"):
        cls = ContextOverflowError
    elif issubclass(cls, InternalServerError) and _UNSUPPORTED_INPUT.search(message):
        # llama-server answers an image for a model loaded without its projector with a
        # 500: the request can never succeed there, so it is the request's error.
        cls = BadRequestError
    if not message:
        message = f"{error_type or 'error'}" + (f" (HTTP {status})" if status is not None else "")
    return cls(
        redact(message)[:2000],  # masked before it is cut: a cut must not leave half a key
        status=status,
        request_id=request_id,
        error_type=error_type,
        body=body,
        partial=partial,
    )


def error_from_transport(exc: BaseException, *, partial: Message | None = None) -> SDKError | None:
    """Translate an httpx2/OS transport exception; ``None`` when it is not a transport error.

    This is the one place where transport exceptions become SDK errors.
    """
    import anyio
    import httpx2

    if isinstance(exc, SDKError):
        return exc
    if isinstance(exc, httpx2.TimeoutException | TimeoutError):
        err: SDKError = APITimeoutError(f"timed out: {type(exc).__name__}: {exc}", partial=partial)
    elif isinstance(exc, httpx2.TransportError | httpx2.StreamError | OSError | anyio.BrokenResourceError):
        err = APIConnectionError(f"connection failed: {type(exc).__name__}: {exc}", partial=partial)
    else:
        return None
    _mask_chain(exc)
    err.__cause__ = exc
    return err


def _mask_chain(exc: BaseException) -> None:
    """Redact, in place, the messages of ``exc`` and of the exceptions chained to it.

    A transport error quotes what the server sent (an illegal header line, a status line)
    and is kept as the typed error's cause, which a traceback prints: a server echoing the
    key there must not put it in a log.
    """
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen and len(seen) < 32:
        seen.add(id(link))
        try:
            text = str(link)
        except Exception:  # a third party's __str__ that fails: nothing to quote
            text = ""
        masked = redact(text)
        if masked != text:
            link.args = (masked,)
        link = link.__cause__ or link.__context__


# Tracebacks and reprs name the public path, as httpx and anthropic-sdk do: every class
# here is exported from ``sdk``.
for _cls in list(globals().values()):
    if isinstance(_cls, type) and issubclass(_cls, SDKError) and _cls.__name__ in __all__:
        _cls.__module__ = "sdk"
del _cls
