"""Sessions in one SQLite database: many processes on one machine.

Each save is one transaction: ``BEGIN IMMEDIATE`` takes the database's write lock
before the version is read, so the check and the write cannot interleave with another
writer's (a second writer waits up to the busy timeout, then reads the new version and
gets :class:`SessionConflict`). The journal is a write-ahead log: readers never block
the writer, a process killed mid-save leaves the last committed version, and with
``synchronous=FULL`` a save that returned survives a power cut too.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from ._store import SessionFileError, conflict, decode_document, encode_document
from ._stores import (
    SessionNotFound,
    SessionStore,
    SessionStoreError,
    _check_base,
    check_session_id,
    stored_bytes,
    stored_version,
)

__all__ = ["SQLiteStore"]

_SCHEMA = """CREATE TABLE IF NOT EXISTS seam_sessions (
    id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    document BLOB NOT NULL
)"""


class SQLiteStore(SessionStore):
    """Sessions as rows of one table (``seam_sessions``) in the database at ``path``.

    One connection per store, used by one thread at a time (a lock), so a store can be
    shared by the worker threads the session's async paths save from.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = 30.0) -> None:
        self.path = os.path.realpath(os.fspath(path))
        self.url = "sqlite:///" + self.path
        self._lock = threading.Lock()
        with self._errors():
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.execute(_SCHEMA)

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """sqlite3's errors, translated in this one place."""
        try:
            yield
        except sqlite3.Error as e:
            raise SessionStoreError(f"{self.url}: {type(e).__name__}: {e}") from e

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._errors():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _stored_version(self, db: sqlite3.Connection, session_id: str) -> int:
        row = db.execute("SELECT version FROM seam_sessions WHERE id = ?", (session_id,)).fetchone()
        return 0 if row is None else stored_version(row[0], self.where(session_id))

    def _stored_bytes(self, db: sqlite3.Connection, session_id: str) -> object:
        row = db.execute("SELECT document FROM seam_sessions WHERE id = ?", (session_id,)).fetchone()
        return None if row is None else row[0]

    def load(self, session_id: str) -> dict[str, Any]:
        check_session_id(session_id)
        with self._lock, self._errors():
            row = self._db.execute(
                "SELECT version, document FROM seam_sessions WHERE id = ?", (session_id,)
            ).fetchone()
        where = self.where(session_id)
        if row is None:
            raise SessionNotFound(f"{where}: no such session", path=where, session_id=session_id)
        doc = decode_document(stored_bytes(row[1], where), where)
        if doc["version"] != stored_version(row[0], where):
            raise SessionFileError(
                f"{where}: the row's version {row[0]} is not its document's {doc['version']}", path=where
            )
        return doc

    def save(self, session_id: str, document: Mapping[str, Any], base_version: int) -> int:
        check_session_id(session_id)
        version = _check_base(base_version) + 1
        data = encode_document(document, version)
        with self._transaction() as db:
            stored = self._stored_version(db, session_id)
            if stored == version and self._stored_bytes(db, session_id) == data:
                return version  # this very save, sent again after its answer was lost
            if stored > base_version:
                raise conflict(self.where(session_id), stored, base_version, session_id)
            db.execute(
                "INSERT OR REPLACE INTO seam_sessions (id, version, document) VALUES (?, ?, ?)",
                (session_id, version, data),
            )
        return version

    def version(self, session_id: str) -> int:
        check_session_id(session_id)
        with self._lock, self._errors():
            return self._stored_version(self._db, session_id)

    def delete(self, session_id: str, *, version: int | None = None) -> bool:
        check_session_id(session_id)
        with self._transaction() as db:
            stored = self._stored_version(db, session_id)
            if stored == 0:
                return False
            if version is not None and stored > version:
                raise conflict(self.where(session_id), stored, version, session_id)
            db.execute("DELETE FROM seam_sessions WHERE id = ?", (session_id,))
        return True

    def close(self) -> None:
        with self._lock:
            self._db.close()
            self.closed = True

    def list(self) -> builtins.list[str]:
        with self._lock, self._errors():
            rows = self._db.execute("SELECT id FROM seam_sessions ORDER BY id").fetchall()
        return [str(r[0]) for r in rows]
