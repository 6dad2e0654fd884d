"""A self-hosted server that implements the SDK's scheduler in front of llama-server or
vLLM: ``python -m sdk.server --upstream http://127.0.0.1:8080 --port 8000``.

See :mod:`sdk.server._app` for what it does and :mod:`sdk.server._config` for its
configuration file.
"""

from ._app import ServerApp
from ._config import ConfigError, KeyEntry, Principal, ServerConfig, hash_key

__all__ = ["ConfigError", "KeyEntry", "Principal", "ServerApp", "ServerConfig", "hash_key"]
