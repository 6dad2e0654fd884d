"""``python -m sdk.server --upstream URL [--upstream URL ...] [--port 8000] [--config FILE]``
serves the scheduling server with uvicorn; ``python -m sdk.server hash-key`` reads an API
key from standard input and prints the hash the configuration stores."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any

from ._config import ConfigError, ServerConfig, hash_key

_LIMITS: list[tuple[str, type[int] | type[float], str]] = [
    ("--max-connections", int, "open connections at most (default: half of `ulimit -n`)"),
    ("--head-timeout", float, "seconds for a request head to arrive (default 60)"),
    ("--body-timeout", float, "seconds for a request body to arrive after its head (default 60)"),
    ("--send-timeout", float, "seconds a client may read nothing of its answer (default 60)"),
    ("--keepalive-timeout", float, "seconds an idle connection is kept between requests (default 20)"),
]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["hash-key"]:
        key = sys.stdin.readline().strip()
        if not key:
            print("give the key on standard input", file=sys.stderr)
            return 2
        print(hash_key(key))
        return 0
    ap = argparse.ArgumentParser(prog="python -m sdk.server", description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstream", action="append", required=True, help="an engine's base URL (repeatable)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--config", help="a TOML file: tiers, keys, bounds (see sdk.server._config)")
    ap.add_argument("--log-level", default="info")
    ap.add_argument(
        "--state",
        metavar="URL",
        help="share slots, tier order and quotas with other replicas through this Valkey/Redis "
        "(redis://[:password@]host:6379/0; valkey:// too)",
    )
    ap.add_argument("--fleet", metavar="NAME", help="the replicas that share (default: by upstream URLs)")
    limits = ap.add_argument_group("connection limits (over the configuration's [server] values)")
    for flag, kind, what in _LIMITS:
        limits.add_argument(flag, type=kind, metavar="N" if kind is int else "SECONDS", help=what)
    args = ap.parse_args(argv)
    try:
        config = ServerConfig.load(args.config) if args.config else ServerConfig()
        given: dict[str, Any] = {}
        for flag, _, _ in _LIMITS:
            name = flag[2:].replace("-", "_")
            if getattr(args, name) is not None:
                given[name] = getattr(args, name)
        for name in ("state", "fleet"):
            if getattr(args, name) is not None:
                given[name] = getattr(args, name)
        if given:
            config = dataclasses.replace(config, **given)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        from ._app import ServerApp
        from ._serve import serve
    except ImportError as e:  # the serve extra is not installed
        print(
            f"error: the scheduling server needs the serve extra: pip install 'seam-llm[serve]' ({e})",
            file=sys.stderr,
        )
        return 2
    app = ServerApp(args.upstream, config, upstream_api_key=os.environ.get("SEAM_UPSTREAM_API_KEY"))
    serve(app, host=args.host, port=args.port, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
