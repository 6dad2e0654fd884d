"""Where sessions are kept: one contract, several stores.

A :class:`SessionStore` keeps session documents (the bytes of
:func:`~sdk.session._store.encode_document`, the same in every store, the pending
answer's cursor included) under a session id, with one rule for writers: a save names
the version it started from and succeeds only when the store holds nothing newer; the
new version is that one plus one. A writer holding an old version gets
:class:`SessionConflict`, never a lost update. Three stores keep that contract:

- :class:`FileStore`: one JSON file per session in a directory (temp file, fsync,
  rename, under a lock file): the file format of :meth:`Session.save(path)`.
- :class:`~sdk.session._sqlite.SQLiteStore`: one SQLite database (WAL; the check and the
  write in one ``BEGIN IMMEDIATE`` transaction) for many processes on one machine.
- :class:`~sdk.session._redis.RedisStore`: Valkey or Redis (the check and the write in
  one Lua script) for many workers on many machines.

:func:`open_store` picks one by URL. Stores block (file system, SQLite, sockets): the
session's async paths call them through ``anyio.to_thread``.
"""

from __future__ import annotations

import abc
import builtins
import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any
from urllib.parse import unquote, urlsplit

from .._errors import SessionError, SessionNotFound, SessionStoreError
from ._store import SessionConflict, SessionFileError, read_document, save_document

__all__ = [
    "FileStore",
    "SessionNotFound",
    "SessionStore",
    "SessionStoreError",
    "check_session_id",
    "open_store",
    "resolve",
]

MAX_ID_BYTES = 200


class _FileNotFound(SessionNotFound, FileNotFoundError):
    """A missing session file: still the ``FileNotFoundError`` it always was."""


def check_session_id(session_id: object) -> str:
    """Session ids are one rule for every store: 1 to 200 bytes of UTF-8, no ``/``,
    ``\\``, control characters, and not ``.`` or ``..`` (they become file names)."""
    if not isinstance(session_id, str):
        raise TypeError(f"a session id is a str, got {type(session_id).__name__}")
    try:
        size = len(session_id.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("a session id is UTF-8: a lone surrogate is not (no store could name it)") from None
    if not 0 < size <= MAX_ID_BYTES:
        raise ValueError(f"a session id has 1 to {MAX_ID_BYTES} bytes, got {size}")
    if session_id in (".", "..") or any(c in "/\\" or ord(c) < 32 or ord(c) == 127 for c in session_id):
        raise ValueError(
            f"{session_id!r} is not a session id (no '/', '\\\\', control characters, '.', '..')"
        )
    return session_id


def stored_version(value: object, where: str) -> int:
    """A version as a store's row or hash holds it (an integer, or its ASCII digits);
    anything else (a row edited by hand) is a :class:`SessionFileError` naming ``where``."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, bytes | str) and 0 < len(value) <= 20 and value.isascii() and value.isdigit():
        return int(value)
    shown = repr(value)[:40]
    raise SessionFileError(f"{where}: the stored version {shown} is not a version number", path=where)


def stored_bytes(value: object, where: str) -> bytes:
    """A stored document's bytes (a row edited by hand may hold it as text)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            pass
    raise SessionFileError(f"{where}: the stored document is not text or bytes", path=where)


def _check_base(base_version: object) -> int:
    if isinstance(base_version, bool) or not isinstance(base_version, int) or base_version < 0:
        raise ValueError(f"base_version must be an int >= 0, got {base_version!r}")
    return base_version


class SessionStore(abc.ABC):
    """The contract every store keeps (and tests/session/test_stores.py checks for each).

    - :meth:`save` is atomic: a reader, or a process killed at any instant, sees the old
      document or the new one, never a mix; a save that returned is kept.
    - :meth:`save` is a compare-and-swap on the version: it raises
      :class:`SessionConflict` when the store holds a version newer than
      ``base_version``, and otherwise writes ``base_version + 1``.
    - :meth:`load` returns the document as saved (the pending answer included), its
      envelope checked; :class:`SessionNotFound` when there is none.
    - :meth:`list` and :meth:`delete` see every session of the store.

    ``url`` names the store without credentials (for messages and logs).
    """

    url: str

    @abc.abstractmethod
    def load(self, session_id: str) -> dict[str, Any]:
        """The stored document (schema and version checked)."""

    @abc.abstractmethod
    def save(self, session_id: str, document: Mapping[str, Any], base_version: int) -> int:
        """Store ``document`` as version ``base_version + 1``; returns that version."""

    @abc.abstractmethod
    def version(self, session_id: str) -> int:
        """The stored version, 0 when there is none."""

    @abc.abstractmethod
    def delete(self, session_id: str, *, version: int | None = None) -> bool:
        """Remove the session; with ``version``, only when the store holds nothing newer
        (else :class:`SessionConflict`). Returns whether there was one. A writer still
        holding the session can save it again afterwards (its version is not older
        than nothing)."""

    def where(self, session_id: str) -> str:
        """Where a session is, for messages: never a credential."""
        return f"{self.url} session {session_id!r}"

    def location(self, session_id: str) -> str:
        """One name per stored session (two stores on the same data give the same one)."""
        return self.where(session_id)

    # Set by ``close`` where it releases connections: open_store then opens the URL anew.
    closed = False

    def close(self) -> None:  # noqa: B027 - stores without connections have nothing to close
        """Release connections (the store may not be used afterwards; ``open_store`` of
        its URL gives a new one)."""

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    @abc.abstractmethod
    def list(self) -> builtins.list[str]:
        """Every session id in the store, sorted."""


class FileStore(SessionStore):
    """One JSON file per session: ``<directory>/<session id><suffix>`` (the directory is
    made on the first save).

    The files are exactly those of ``Session.save(path)``; the directory is resolved
    once (absolute, links followed), so changing the working directory later does not
    move the sessions.
    """

    def __init__(self, directory: str | os.PathLike[str], *, suffix: str = ".json") -> None:
        self.directory = os.path.realpath(os.fspath(directory))
        self.suffix = suffix
        self.url = "file://" + self.directory
        self._single: tuple[str, str] | None = None  # (file name, the spelling a caller gave)

    @classmethod
    def for_file(cls, path: str | os.PathLike[str]) -> tuple[FileStore, str]:
        """The store of one session file and its id (its name): ``Session.save(path)``.
        Messages about it name the file as the caller spelled it."""
        given = os.fspath(path)
        directory, name = os.path.split(os.path.realpath(given))
        store = cls(directory, suffix="")
        store._single = (name, given)
        return store, name

    def _id(self, session_id: str) -> str:
        if self._single is not None and session_id == self._single[0]:
            return session_id  # a file name the caller chose: it already worked as a path
        return check_session_id(session_id)

    def path_of(self, session_id: str) -> str:
        return os.path.join(self.directory, self._id(session_id) + self.suffix)

    def where(self, session_id: str) -> str:
        if self._single is not None and session_id == self._single[0]:
            return self._single[1]
        return self.path_of(session_id)

    def location(self, session_id: str) -> str:
        return self.path_of(session_id)

    @contextlib.contextmanager
    def _os_errors(self, session_id: str) -> Iterator[None]:
        """What the file system refuses (a full disk, a name too long, a directory where
        the file should be, no permission), as the store's error, as the other stores
        give theirs."""
        try:
            yield
        except (FileNotFoundError, SessionError):
            raise
        except OSError as e:
            raise SessionStoreError(f"{self.where(session_id)}: {e.strerror or type(e).__name__}") from None

    def load(self, session_id: str) -> dict[str, Any]:
        path = self.path_of(session_id)
        try:
            with self._os_errors(session_id):
                return read_document(path)
        except FileNotFoundError:
            where = self.where(session_id)
            raise _FileNotFound(f"{where}: no such session file", path=where, session_id=session_id) from None
        except SessionFileError as e:
            raise self._named(e, path, session_id) from None

    def save(self, session_id: str, document: Mapping[str, Any], base_version: int) -> int:
        path = self.path_of(session_id)
        try:
            with self._os_errors(session_id):
                if self._single is None:
                    os.makedirs(self.directory, exist_ok=True)
                return save_document(path, dict(document), _check_base(base_version))
        except SessionConflict as e:
            e.session_id = session_id
            raise
        except SessionFileError as e:
            raise self._named(e, path, session_id) from None

    def _named(self, e: SessionFileError, path: str, session_id: str) -> SessionFileError:
        """The error as it names the file the way the caller spelled it."""
        where = self.where(session_id)
        if e.path != path or where == path:
            return e
        return SessionFileError(str(e).replace(path, where, 1), path=where, offset=e.offset, where=e.where)

    def version(self, session_id: str) -> int:
        try:
            return int(self.load(session_id)["version"])
        except FileNotFoundError:
            return 0

    def delete(self, session_id: str, *, version: int | None = None) -> bool:
        from ._store import _locked, conflict  # the file's own lock, as save_document takes it

        path = self.path_of(session_id)
        if not os.path.isdir(os.path.dirname(path)):
            return False  # (no directory: no session, and no lock file to make in it)
        with self._os_errors(session_id), _locked(path):
            try:
                on_disk = int(read_document(path)["version"])
            except FileNotFoundError:
                return False
            if version is not None and on_disk > version:
                raise conflict(self.where(session_id), on_disk, version, session_id)
            os.unlink(path)
        return True

    def list(self) -> builtins.list[str]:
        out: builtins.list[str] = []
        if not os.path.isdir(self.directory):
            return out
        with os.scandir(self.directory) as entries:
            for e in entries:
                name = e.name
                if name.endswith(".lock") or (name.startswith(".") and name.endswith(".tmp")):
                    continue  # the lock files and the temp files of saves
                if not name.endswith(self.suffix) or not e.is_file():
                    continue
                sid = name[: len(name) - len(self.suffix)] if self.suffix else name
                with contextlib.suppress(TypeError, ValueError):
                    out.append(self._id(sid))
        return sorted(out)


# ---- choosing a store by URL ---------------------------------------------------------

_REDIS_SCHEMES = ("redis", "rediss", "valkey", "valkeys")
_opened: dict[tuple[int, str], SessionStore] = {}
_opened_lock = threading.Lock()


def _is_url(target: str) -> str | None:
    scheme = urlsplit(target).scheme.lower()
    return scheme if scheme in ("file", "sqlite", *_REDIS_SCHEMES) else None


def open_store(target: str | os.PathLike[str] | SessionStore) -> SessionStore:
    """The store a URL names (one per URL and process, shared and kept open):

    - a directory path or ``file:///dir``: :class:`FileStore`;
    - ``sqlite:///relative.db`` or ``sqlite:////absolute/path.db`` (SQLAlchemy's
      spelling): :class:`~sdk.session._sqlite.SQLiteStore`;
    - ``redis://[:password@]host:port/db``, ``rediss://...``, ``valkey://...``,
      ``valkeys://...`` (``?prefix=app:`` sets the key prefix):
      :class:`~sdk.session._redis.RedisStore`.
    """
    if isinstance(target, SessionStore):
        return target
    text = os.fspath(target)
    # The cache key is a digest: a URL's password is not kept beside the store.
    key = (os.getpid(), hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
    with _opened_lock:
        store = _opened.get(key)
        if store is None or store.closed:
            store = _opened[key] = _open(text)
        return store


def _open(text: str) -> SessionStore:
    scheme = _is_url(text)
    if scheme is None:
        return FileStore(text)
    parts = urlsplit(text)
    if scheme == "file":
        return FileStore(unquote(parts.path))
    if scheme == "sqlite":
        from ._sqlite import SQLiteStore

        path = unquote(parts.path)[1:]  # sqlite:///rel.db -> rel.db, sqlite:////abs.db -> /abs.db
        if parts.netloc or not path:
            raise ValueError("a SQLite URL is sqlite:///relative/path.db or sqlite:////absolute/path.db")
        return SQLiteStore(path)
    from ._redis import RedisStore

    return RedisStore(text)


def resolve(
    target: str | os.PathLike[str] | SessionStore, session_id: str | None
) -> tuple[SessionStore, str]:
    """The store and id a ``Session.save``/``Session.load`` argument pair names: a file
    path (or ``file://`` URL of a file) alone, or a store or URL and a session id."""
    if session_id is not None:
        return open_store(target), check_session_id(session_id)
    if isinstance(target, SessionStore):
        raise TypeError("a session id is needed with a store")
    text = os.fspath(target)
    scheme = _is_url(text)
    if scheme == "file":
        return FileStore.for_file(unquote(urlsplit(text).path))
    if scheme is not None:
        raise TypeError(f"a session id is needed with a {scheme}:// store")
    return FileStore.for_file(text)
