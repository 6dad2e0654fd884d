"""Conversations kept on the client and fitted to the window on purpose.

>>> from sdk.session import Session
>>> s = Session(None, model="m", context_window=1000, reserve_output=100)
>>> s.add_user("hello").id
0

A :class:`Session` logs every turn with its token accounting, asks a
:class:`ContextPolicy` which turns go into each request (the :class:`DefaultPolicy`
keeps system, pinned and newest turns and replaces the oldest by one reported
elision marker), saves atomically with compare-and-swap to a :class:`SessionStore`
(a file, SQLite, or Valkey/Redis: :func:`open_store`), and resumes an answer cut off
mid-stream, in this process or another, from what the consumer already has.
"""

from ..stream._resume import RepeatFilter
from ._answer import PendingAnswer, SessionClient, SessionError, SessionStream, StreamLike
from ._cache import Breakpoint, CacheMode, CacheReport, min_cacheable_tokens
from ._policy import ContextPolicy, DefaultPolicy, FitReport, SessionBudgetError, elision_marker
from ._redis import RedisStore, RedisURL, parse_redis_url
from ._render import render_messages
from ._session import DocumentReport, Session
from ._sqlite import SQLiteStore
from ._store import SessionConflict, SessionFileError, read_document, write_atomic
from ._stores import FileStore, SessionNotFound, SessionStore, SessionStoreError, open_store
from ._turns import Turn, TurnKind, TurnLog

__all__ = [
    "Breakpoint",
    "CacheMode",
    "CacheReport",
    "ContextPolicy",
    "DefaultPolicy",
    "DocumentReport",
    "FileStore",
    "FitReport",
    "PendingAnswer",
    "RedisStore",
    "RedisURL",
    "RepeatFilter",
    "SQLiteStore",
    "Session",
    "SessionBudgetError",
    "SessionClient",
    "SessionConflict",
    "SessionError",
    "SessionFileError",
    "SessionNotFound",
    "SessionStore",
    "SessionStoreError",
    "SessionStream",
    "StreamLike",
    "Turn",
    "TurnKind",
    "TurnLog",
    "elision_marker",
    "min_cacheable_tokens",
    "open_store",
    "parse_redis_url",
    "read_document",
    "render_messages",
    "write_atomic",
]
