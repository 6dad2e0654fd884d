"""Session documents and files: atomic, versioned, compare-and-swap.

A save writes a temporary file in the same directory, fsyncs it, renames it over the
target and fsyncs the directory, so a reader (or a process killed at any instant)
sees either the old file or the new one, never a mix. Every file carries the schema
version and a session version that grows by one per save; a writer whose session is
older than the file on disk gets :class:`SessionConflict` instead of overwriting newer
data. The check and the rename happen under an advisory lock on ``<file>.lock``.

Every store (:mod:`sdk.session._stores`) keeps the same bytes: :func:`encode_document`
writes them and :func:`decode_document` reads them back with the same checks, so a
session moves between a file, SQLite and Valkey/Redis unchanged.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from .._errors import SessionConflict, SessionFileError

__all__ = [
    "SCHEMA_VERSION",
    "SessionConflict",
    "SessionFileError",
    "decode_document",
    "encode_document",
    "read_document",
    "save_document",
    "write_atomic",
]

SCHEMA_VERSION = 1

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the rename is still atomic
    fcntl = None  # type: ignore[assignment]


def conflict(where: str, on_disk: int, ours: int, session_id: str | None = None) -> SessionConflict:
    return SessionConflict(
        f"{where} holds version {on_disk}, newer than this session's {ours}; "
        f"load it and apply the change again",
        path=where,
        on_disk=on_disk,
        ours=ours,
        session_id=session_id,
    )


def read_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse and check the envelope of a session file (schema and version)."""
    p = os.fspath(path)
    with open(p, "rb") as f:
        data = f.read()
    return decode_document(data, p)


def decode_document(data: bytes, p: str) -> dict[str, Any]:
    """Parse and check the envelope of stored session bytes (``p`` names where they are)."""
    if not data:
        raise SessionFileError(f"{p}: empty file (byte offset 0)", path=p, offset=0)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        offset, what, reason = _locate(data, e)
        truncated = " (truncated?)" if offset >= len(data) - 1 or reason == "unexpected end of data" else ""
        raise SessionFileError(
            f"{p}: not valid {what} at byte offset {offset} of {len(data)}{truncated}: {reason}",
            path=p,
            offset=offset,
        ) from None
    if not isinstance(doc, dict):
        raise SessionFileError(f"{p}: the top level is not a JSON object", path=p)
    schema = doc.get("schema")
    if type(schema) is not int or schema != SCHEMA_VERSION:  # 1.0 == True == 1 in Python
        raise SessionFileError(f"{p}: schema {schema!r} is not the supported schema {SCHEMA_VERSION}", path=p)
    version = doc.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SessionFileError(f"{p}: 'version' must be a positive int, got {version!r}", path=p)
    return doc


def _locate(data: bytes, e: orjson.JSONDecodeError) -> tuple[int, str, str]:
    """The byte offset of a parse error, what was broken there (JSON or UTF-8), and why.

    orjson counts characters of the decoded text, and reports bytes that are not UTF-8
    (a file cut inside a multi-byte character, say) at position 0 of an empty text.
    """
    if e.doc:
        return len(e.doc[: e.pos].encode("utf-8", "surrogatepass")), "JSON", e.msg
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as u:
        return u.start, "UTF-8", str(u.reason)
    return min(e.pos, len(data)), "JSON", e.msg


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` by ``data`` all at once (temp file, fsync, rename, fsync of the dir).

    A symbolic link is written through: the file it points to is replaced and the link
    stays (renaming over the link itself would turn it into a separate file).
    """
    p = os.path.realpath(os.fspath(path))
    directory, name = os.path.split(p)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dfd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock (also when the process dies)


def _remove_leftovers(path: str) -> None:
    """Temp files of a writer killed mid-save. Writers hold the lock while their temp
    file exists, so under the lock any temp file of this name is a leftover."""
    directory, name = os.path.split(path)
    with os.scandir(directory) as entries:
        for e in entries:
            if e.name.startswith(f".{name}.") and e.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.unlink(e.path)


def save_document(path: str | os.PathLike[str], doc: dict[str, Any], base_version: int) -> int:
    """Write ``doc`` as the version after ``base_version``; returns the version written.

    Raises :class:`SessionConflict` when the file on disk is newer than ``base_version``
    and :class:`SessionFileError` when it is unreadable (it is left as it is: it may be
    someone's data).
    """
    # One file, one name: the lock, the temp files and the rename all use the resolved path,
    # so writers reaching the file by different spellings or links exclude each other.
    p = os.path.realpath(os.fspath(path))
    with _locked(p):
        on_disk = 0
        if os.path.exists(p):
            on_disk = int(read_document(p)["version"])
        if on_disk == base_version + 1:
            data = encode_document(doc, on_disk)
            with open(p, "rb") as f:
                if f.read(len(data) + 1) == data:
                    return on_disk  # this very save, done again after it failed late
        if on_disk > base_version:
            raise conflict(p, on_disk, base_version)
        _remove_leftovers(p)
        version = max(on_disk, base_version) + 1
        write_atomic(p, encode_document(doc, version))
    return version


def encode_document(doc: Mapping[str, Any], version: int) -> bytes:
    """The bytes every store keeps for ``doc`` saved as ``version``."""
    out = dict(doc, schema=SCHEMA_VERSION, version=version)
    data = orjson.dumps(out)
    if orjson.loads(data) != out:  # never replace a good document by one we cannot read back
        raise ValueError("the session does not survive a JSON round trip")
    return data
