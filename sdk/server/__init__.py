"""A self-hosted server that implements the SDK's scheduler in front of llama-server or
vLLM: ``python -m sdk.server --upstream http://127.0.0.1:8080 --port 8000``.

See :mod:`sdk.server._app` for what it does and :mod:`sdk.server._config` for its
configuration file.
"""

from typing import TYPE_CHECKING, Any

from ._config import ConfigError, KeyEntry, Principal, ServerConfig, hash_key

if TYPE_CHECKING:
    from ._app import ServerApp

__all__ = ["ConfigError", "KeyEntry", "Principal", "ServerApp", "ServerConfig", "hash_key"]


def __getattr__(name: str) -> Any:
    """``ServerApp`` is imported when first asked for: it needs the ``serve`` extra
    (uvicorn, prometheus-client), which the configuration helpers do not."""
    if name == "ServerApp":
        from ._app import ServerApp

        return ServerApp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
