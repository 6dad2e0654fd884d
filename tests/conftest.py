"""Shared fixtures: the real llama-server and a real Valkey/Redis server, each started
once per test session when asked for."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llama import LlamaServer, running_server
from tests.valkey import MISSING, binary, running_valkey


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    with running_server() as server:
        yield server


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Valkey or Redis server on a free loopback port, for the whole test run."""
    if binary() is None:
        pytest.fail(MISSING, pytrace=False)
    with running_valkey(tmp_path_factory.mktemp("redis")) as server:
        yield server.url
