"""The scheduling server's configuration: tiers, API keys, bounds; read from TOML.

::

    [server]
    slots = 2                # concurrent requests the upstreams take (default: their /props)
    max_queue = 256          # waiting requests beyond which a request gets 503
    max_body_bytes = 8388608 # a larger request body gets 413
    buffer_bytes = 16384     # per stream: what may wait for a slow client before the
    stall_seconds = 1.0      #   upstream is paused (or after this long without a read)
    socket_buffer_bytes = 16384  # per connection: kernel send buffer and write buffer
    replay_bytes = 262144    # per stream: sent events kept for a reattach (Last-Event-ID)
    replay_seconds = 60.0    # how long a stream waits for its client to come back
    replay_total_bytes = 67108864  # what streams hold for reattaching clients: every
                             #   stream's kept events, and all that a stream with no client
                             #   pins (its request, its message so far); past it the
                             #   longest-idle streams' kept events go first, then those
                             #   streams themselves
    replay_max_streams = 1024  # streams kept with no client attached; past it the
                             #   longest-idle are ended
    send_timeout = 60.0      # a write to a client that takes longer ends the response; a
                             #   stream written to it is ended and its slot freed
    head_timeout = 60.0      # a request head not complete this long after the connection
                             #   opened (or after its first byte) closes the connection
    body_timeout = 60.0      # a body not complete this long after its head: 408, closed
    keepalive_timeout = 20.0 # an idle connection between requests is closed after this
    max_connections = 512    # open connections (default: half of `ulimit -n`); past it the
                             #   longest-idle one is closed, or, all busy, the new one 503'd
    aging_seconds = 30.0     # a waiting request rises a tier per this long, never into the best
    upstream_engine = "self-hosted"  # "vllm-priority": engines that take vLLM's priority
                             #   field (vLLM with --scheduling-policy priority) get each
                             #   request's tier in it
    state = "redis://host:6379/0"  # replicas share slots, quotas and order through this
                             #   Valkey/Redis (default: none, the replica is alone)
    fleet = "prod"           # the replicas that share the engines (default: named after
                             #   the upstream URLs, so replicas in front of the same share)
    lease_seconds = 3.0      # a replica that misses beats this long loses its slots
    degraded_share = 0.5     # of the slots and of each quota, used alone while the state
                             #   does not answer

    [[tiers]]                # default: interactive > default > batch
    name = "interactive"
    rank = -1
    min_share = 0.0          # of the slots, reserved while the tier has work waiting
    ttft_target = 2.0
    preemptible = false

    [[keys]]                 # none: no authentication, every request is tenant ""
    sha256 = "9f86d0818..."  # hex SHA-256 of the key (`python -m sdk.server hash-key`)
    tenant = "team-a"
    tier = "default"         # the tier of its requests unless they ask for another
    max_tier = "interactive" # the best tier it may ask for (default: its tier)
    weight = 1.0             # fair-share weight of the tenant
    requests_per_minute = 60 # quotas of the tenant: past them a request gets 429 with
    tokens_per_minute = 50000#   retry-after and the rate-limit headers clients pace by;
                             #   one set per tenant: its keys must agree on them
    gateway = false          # true: may name the end tenant it acts for (a seam-tenant
                             #   header), scheduled as "team-a/<name>" on the key's quota

    [tenants]                # fair-share weights of a gateway key's end tenants
    "team-a/acme" = 2.0

Keys are stored hashed and compared in constant time against every configured key.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import ConfigError
from ..scheduler import DEFAULT_TIERS, Tier, Tiers

__all__ = ["ConfigError", "KeyEntry", "Principal", "ServerConfig", "hash_key"]


def hash_key(key: str) -> str:
    """The hex SHA-256 of an API key, as the configuration stores it."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class KeyEntry:
    sha256: str
    tenant: str
    tier: str
    max_tier: str
    weight: float = 1.0
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    gateway: bool = False  # may name the end tenant it acts for (seam-tenant)

    def __repr__(self) -> str:
        return f"KeyEntry(tenant={self.tenant!r}, tier={self.tier!r}, max_tier={self.max_tier!r})"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is asking: the tenant (the scheduler's fair-share unit), the tier its requests
    get by default, the best one it may ask for. ``account``: the key's own tenant, whose
    quota applies (a gateway key's end tenants share it, :mod:`._seam`)."""

    tenant: str
    tier: Tier
    max_tier: Tier
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    gateway: bool = False
    account: str = ""

    def __post_init__(self) -> None:
        if not self.account:
            object.__setattr__(self, "account", self.tenant)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    tiers: tuple[Tier, ...] = DEFAULT_TIERS
    keys: tuple[KeyEntry, ...] = ()
    slots: int | None = None
    max_queue: int = 256
    max_body_bytes: int = 8 << 20
    buffer_bytes: int = 16 << 10
    socket_buffer_bytes: int = 16 << 10
    replay_bytes: int = 256 << 10
    replay_seconds: float = 60.0
    replay_total_bytes: int = 64 << 20
    replay_max_streams: int = 1024
    send_timeout: float = 60.0
    head_timeout: float = 60.0
    body_timeout: float = 60.0
    keepalive_timeout: float = 20.0
    max_connections: int | None = None  # None: half the descriptor limit (sdk.server._serve)
    stall_seconds: float = 1.0
    aging_seconds: float = 30.0
    upstream_engine: str = "self-hosted"
    state: str | None = field(default=None, repr=False)  # its URL may carry a password
    fleet: str | None = None
    lease_seconds: float = 3.0
    degraded_share: float = 0.5
    tenant_weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        tiers = Tiers(self.tiers)  # validates names, ranks, shares
        for k in self.keys:
            for name in (k.tier, k.max_tier):
                if name not in {t.name for t in tiers}:
                    raise ConfigError(f"key of tenant {k.tenant!r}: unknown tier {name!r}")
            if tiers.resolve(k.tier).rank < tiers.resolve(k.max_tier).rank:
                raise ConfigError(f"key of tenant {k.tenant!r}: its tier is above its max_tier")
        if self.slots is not None and self.slots < 1:
            raise ConfigError("slots must be >= 1")
        if self.max_queue < 0 or self.max_body_bytes < 1 or self.buffer_bytes < 1024:
            raise ConfigError("need max_queue >= 0, max_body_bytes >= 1, buffer_bytes >= 1024")
        if self.socket_buffer_bytes < 4096:
            raise ConfigError("socket_buffer_bytes must be >= 4096")
        if self.replay_bytes < 0 or not (self.replay_seconds >= 0 and math.isfinite(self.replay_seconds)):
            raise ConfigError("replay_bytes and replay_seconds must be >= 0")
        if self.replay_total_bytes < 0 or self.replay_max_streams < 0:
            raise ConfigError("replay_total_bytes and replay_max_streams must be >= 0")
        if not (self.send_timeout > 0 and math.isfinite(self.send_timeout)):
            raise ConfigError("send_timeout must be a finite number > 0")
        for name in ("head_timeout", "body_timeout", "keepalive_timeout"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not (v > 0 and math.isfinite(v)):
                raise ConfigError(f"{name} must be a finite number of seconds > 0")
        if self.max_connections is not None and (
            isinstance(self.max_connections, bool)
            or not isinstance(self.max_connections, int)
            or self.max_connections < 1
        ):
            raise ConfigError("max_connections must be an integer >= 1")
        quotas: dict[str, tuple[float | None, float | None]] = {}
        for k in self.keys:
            limits = quotas.setdefault(k.tenant, (k.requests_per_minute, k.tokens_per_minute))
            if limits != (k.requests_per_minute, k.tokens_per_minute):
                raise ConfigError(
                    f"keys of tenant {k.tenant!r} give different quotas: a tenant has one set "
                    "(requests_per_minute, tokens_per_minute) for all its keys"
                )
        if not (self.stall_seconds >= 0 and math.isfinite(self.stall_seconds)):
            raise ConfigError("stall_seconds must be a finite number >= 0")
        if self.upstream_engine not in ("self-hosted", "llama-server", "vllm", "vllm-priority"):
            raise ConfigError(
                f"upstream_engine {self.upstream_engine!r}: one of "
                "self-hosted, llama-server, vllm, vllm-priority"
            )
        if not self.aging_seconds > 0:
            raise ConfigError("aging_seconds must be positive")
        if not (self.lease_seconds > 0 and math.isfinite(self.lease_seconds)):
            raise ConfigError("lease_seconds must be a finite number > 0")
        if not 0 < self.degraded_share <= 1:
            raise ConfigError("degraded_share must be in (0, 1]")
        if self.fleet is not None and (not self.fleet or any(c in self.fleet for c in "{}: \t\n")):
            raise ConfigError("fleet: a non-empty name without braces, colons or spaces")

    @classmethod
    def load(cls, path: str | Path) -> ServerConfig:
        try:
            raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"cannot read the configuration {path}: {e.strerror or e}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ConfigError(f"the configuration {path} is not valid TOML: {e}") from None
        return cls.from_mapping(raw)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any]) -> ServerConfig:
        try:
            return cls._from_mapping(raw)
        except ConfigError:
            raise
        except (TypeError, ValueError, KeyError) as e:
            raise ConfigError(f"invalid configuration: {e}") from None

    @classmethod
    def _from_mapping(cls, raw: Mapping[str, Any]) -> ServerConfig:
        server = dict(raw.get("server") or {})
        known = {
            "slots",
            "max_queue",
            "max_body_bytes",
            "buffer_bytes",
            "socket_buffer_bytes",
            "replay_bytes",
            "replay_seconds",
            "replay_total_bytes",
            "replay_max_streams",
            "send_timeout",
            "head_timeout",
            "body_timeout",
            "keepalive_timeout",
            "max_connections",
            "stall_seconds",
            "aging_seconds",
            "upstream_engine",
            "state",
            "fleet",
            "lease_seconds",
            "degraded_share",
        }
        unknown = set(server) - known
        if unknown:
            raise ConfigError(f"unknown [server] settings: {', '.join(sorted(unknown))}")
        tiers: Sequence[Tier] = DEFAULT_TIERS
        if "tiers" in raw:
            tiers = tuple(
                Tier(
                    name=str(t["name"]),
                    rank=int(t["rank"]),
                    weight=float(t.get("weight", 1.0)),
                    ttft_target=None if t.get("ttft_target") is None else float(t["ttft_target"]),
                    preemptible=bool(t.get("preemptible", False)),
                    min_share=float(t.get("min_share", 0.0)),
                )
                for t in raw["tiers"]
            )
        default = Tiers(tiers).default.name
        keys = []
        weights: dict[str, float] = {}
        for k in raw.get("keys") or ():
            digest = str(k["sha256"]).strip().lower()
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise ConfigError("a key's sha256 must be 64 hex digits (python -m sdk.server hash-key)")
            tier = str(k.get("tier", default))
            rpm, tpm = k.get("requests_per_minute"), k.get("tokens_per_minute")
            entry = KeyEntry(
                digest,
                str(k["tenant"]),
                tier,
                str(k.get("max_tier", tier)),
                float(k.get("weight", 1.0)),
                None if rpm is None else float(rpm),
                None if tpm is None else float(tpm),
                _flag(k, "gateway"),
            )
            for name, v in (
                ("requests_per_minute", entry.requests_per_minute),
                ("tokens_per_minute", entry.tokens_per_minute),
            ):
                if v is not None and not (v > 0 and math.isfinite(v)):
                    raise ConfigError(f"key of tenant {entry.tenant!r}: {name} must be a positive number")
            keys.append(entry)
            weights[entry.tenant] = entry.weight
        for name, w in dict(raw.get("tenants") or {}).items():  # end tenants of gateway keys
            if isinstance(w, bool) or not isinstance(w, int | float) or not (w > 0 and math.isfinite(w)):
                raise ConfigError(f"[tenants] {name!r}: a weight must be a positive number")
            weights[str(name)] = float(w)
        return cls(tiers=tuple(tiers), keys=tuple(keys), tenant_weights=weights, **server)


def _flag(table: Mapping[str, Any], name: str) -> bool:
    v = table.get(name, False)
    if not isinstance(v, bool):
        raise ConfigError(f"key of tenant {table.get('tenant')!r}: {name} must be true or false")
    return v


class Keyring:
    """Looks a presented key up among the configured hashes in constant time: every
    entry is compared, whatever matches."""

    def __init__(self, config: ServerConfig) -> None:
        self._tiers = Tiers(config.tiers)
        self._keys = config.keys
        self.open = not config.keys

    def principal(self, key: str | None) -> Principal | None:
        """The key's principal, or None (no key, or no such key). Without configured keys
        every request is the anonymous tenant with the default tier, any tier allowed."""
        if self.open:
            # no authentication: one team's server, whose callers may name tenants
            return Principal("", self._tiers.default, next(iter(self._tiers)), gateway=True)
        if not key:
            return None
        digest = hash_key(key).encode()
        found: KeyEntry | None = None
        for k in self._keys:
            if hmac.compare_digest(digest, k.sha256.encode()):
                found = k
        if found is None:
            return None
        return Principal(
            found.tenant,
            self._tiers.resolve(found.tier),
            self._tiers.resolve(found.max_tier),
            found.requests_per_minute,
            found.tokens_per_minute,
            found.gateway,
        )
