"""Sessions in Valkey or Redis: many workers on many machines.

Each session is one hash, ``<prefix><session id>``, with the fields ``version`` and
``document`` (the same bytes as a session file). A save is one Lua script, which the
server runs atomically: it reads the stored version, refuses when it is newer than the
writer's, else writes the document and its version together. A client killed mid-save
either sent the whole script or nothing, so the server always holds a whole version.
How long a save survives the server itself is the server's setting (``appendonly yes``
with ``appendfsync always`` for every save; the default fsyncs every second).

The URL's credentials go to the client and nowhere else: ``url`` (used in messages)
has none, and error messages are scrubbed of the password.
"""

from __future__ import annotations

import builtins
import contextlib
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

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

if TYPE_CHECKING:
    import redis

__all__ = ["RedisStore", "RedisURL", "parse_redis_url"]

DEFAULT_PREFIX = "seam:session:"

# KEYS[1] the session; ARGV: base version, new version, document. Returns -1 when
# written (or when this very save is stored already: sent again after its answer was
# lost), else the stored version (newer than the base).
_SAVE = """
local stored = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if stored == tonumber(ARGV[2]) and redis.call('HGET', KEYS[1], 'document') == ARGV[3] then return -1 end
if stored > tonumber(ARGV[1]) then return stored end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'document', ARGV[3])
return -1
"""

# KEYS[1] the session; ARGV[1] the version the caller holds, or -1 for any. Returns 1
# when deleted, 0 when there was nothing, else minus the stored (newer) version.
_DELETE = """
local stored = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if stored == 0 then return 0 end
local held = tonumber(ARGV[1])
if held >= 0 and stored > held then return -stored end
redis.call('DEL', KEYS[1])
return 1
"""


@dataclass(frozen=True, slots=True)
class RedisURL:
    """A Valkey/Redis URL in the forms the session stores and the scheduling server's
    ``--state`` read: ``redis://[:password@]host:port/db``, ``rediss://``, ``unix://``,
    ``valkey://`` and ``valkeys://`` (the same as ``redis://`` and ``rediss://``).
    ``target`` is for the ``redis`` client (``?prefix=`` taken out), ``shown`` for
    messages (no credentials, no query), ``password`` what to scrub from error texts."""

    target: str
    shown: str
    scheme: str
    password: str | None
    prefix: str | None


def _quoted_userinfo(url: str) -> str:
    """``url`` with its user and password percent-encoded as they are written: a password
    made by base64 holds ``/``, ``+`` and ``=``, and a raw ``/`` or ``?`` in it would end
    the authority early (the password then read as a host, a port or a path). The
    userinfo ends at the last ``@`` of the URL."""
    scheme, sep, rest = url.partition("://")
    at = rest.rfind("@")
    if not sep or at < 0:
        return url
    user, colon, password = rest[:at].partition(":")
    userinfo = quote(unquote(user), safe="") + (colon + quote(unquote(password), safe="") if colon else "")
    return f"{scheme}://{userinfo}@{rest[at + 1 :]}"


def parse_redis_url(url: str) -> RedisURL:
    """The parts of a Valkey/Redis URL; a malformed one is a :class:`SessionStoreError`
    that repeats none of its authority (where a password is)."""
    try:
        return _parse_redis_url(url)
    except ValueError:
        shown = url.partition("://")[0][:16]
        raise SessionStoreError(
            f"not a Valkey/Redis URL ({shown}://...): expected redis://[:password@]host[:port][/db]"
        ) from None


def _parse_redis_url(url: str) -> RedisURL:
    parts = urlsplit(_quoted_userinfo(url))
    scheme = {"valkey": "redis", "valkeys": "rediss"}.get(parts.scheme.lower(), parts.scheme.lower())
    query = parse_qsl(parts.query, keep_blank_values=True)
    prefix = next((v for k, v in query if k == "prefix"), None)
    password = unquote(parts.password) if parts.password is not None else None
    password = dict(query).get("password", password)
    rest = urlencode([(k, v) for k, v in query if k != "prefix"])
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return RedisURL(
        target=urlunsplit((scheme, parts.netloc, parts.path, rest, "")),
        shown=urlunsplit((parts.scheme.lower(), f"{host}{port}", parts.path, "", "")),
        scheme=scheme,
        password=password,
        prefix=prefix,
    )


class RedisStore(SessionStore):
    """Sessions in a Valkey or Redis server, through the ``redis`` client package.

    ``RedisStore("redis://:password@host:6379/0")`` (``valkey://`` and ``valkeys://``
    are the same as ``redis://`` and ``rediss://``; ``?prefix=app:`` in the URL or
    ``prefix=`` sets the key prefix), or ``RedisStore(client=redis.Redis(...))``.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        prefix: str | None = None,
        client: redis.Redis | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        try:
            import redis as redis_module
        except ImportError:  # pragma: no cover - the optional extra is missing
            raise ImportError(
                "the Valkey/Redis session store needs the redis client: pip install 'seam-llm[redis]'"
            ) from None
        self._password: str | None = None
        if client is not None:
            if url is not None:
                raise TypeError("pass a URL or a client, not both")
            kw = client.get_connection_kwargs()
            self._password = kw.get("password")
            self._client = client
            self.url = f"redis://{kw.get('host', '?')}:{kw.get('port', '?')}/{kw.get('db', 0)}"
        elif url is not None:
            u = parse_redis_url(url)
            prefix = u.prefix if prefix is None else prefix
            self._password = u.password
            self._client = redis_module.Redis.from_url(u.target, socket_connect_timeout=connect_timeout)
            self.url = u.shown
        else:
            raise TypeError("pass a URL or a client")
        self.prefix = DEFAULT_PREFIX if prefix is None else prefix
        self._redis_error = redis_module.RedisError
        self._save = self._client.register_script(_SAVE)
        self._delete = self._client.register_script(_DELETE)

    def where(self, session_id: str) -> str:
        return f"{self.url} key {self.prefix}{session_id}"

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """The client's errors, translated in this one place (and scrubbed of the password)."""
        try:
            yield
        except self._redis_error as e:
            text = f"{type(e).__name__}: {e}"
            if self._password:
                text = text.replace(self._password, "***")
            raise SessionStoreError(f"{self.url}: {text}") from None

    def _key(self, session_id: str) -> bytes:
        return (self.prefix + check_session_id(session_id)).encode("utf-8", "surrogatepass")

    def load(self, session_id: str) -> dict[str, Any]:
        key = self._key(session_id)
        with self._errors():
            version, data = cast("list[bytes | None]", self._client.hmget(key, ["version", "document"]))
        where = self.where(session_id)
        if data is None:
            raise SessionNotFound(f"{where}: no such session", path=where, session_id=session_id)
        doc = decode_document(stored_bytes(data, where), where)
        if version is None or stored_version(version, where) != doc["version"]:
            raise SessionFileError(
                f"{where}: the hash's version {version!r} is not its document's {doc['version']}", path=where
            )
        return doc

    def save(self, session_id: str, document: Mapping[str, Any], base_version: int) -> int:
        key = self._key(session_id)
        version = _check_base(base_version) + 1
        data = encode_document(document, version)
        with self._errors():
            stored = int(self._save(keys=[key], args=[base_version, version, data]))
        if stored >= 0:
            raise conflict(self.where(session_id), stored, base_version, session_id)
        return version

    def version(self, session_id: str) -> int:
        key = self._key(session_id)
        with self._errors():
            v = self._client.hget(key, "version")
        return 0 if v is None else stored_version(v, self.where(session_id))

    def delete(self, session_id: str, *, version: int | None = None) -> bool:
        key = self._key(session_id)
        held = -1 if version is None else _check_base(version)
        with self._errors():
            result = int(self._delete(keys=[key], args=[held]))
        if result < 0:
            assert version is not None
            raise conflict(self.where(session_id), -result, version, session_id)
        return result == 1

    def close(self) -> None:
        self.closed = True
        with self._errors():
            self._client.close()

    def list(self) -> builtins.list[str]:
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", self.prefix) + "*"
        out = []
        with self._errors():
            for key in self._client.scan_iter(match=pattern, count=1000):
                name = bytes(key).decode("utf-8", "surrogatepass")[len(self.prefix) :]
                with contextlib.suppress(TypeError, ValueError):
                    out.append(check_session_id(name))
        return sorted(out)
