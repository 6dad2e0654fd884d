"""Shared fixtures: the real llama-server and a real Valkey/Redis server, each started
once per test session when asked for."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llama import LlamaServer, running_server
from tests.valkey import MISSING, binary, running_valkey

# Tests that need a real llama-server (the shared one, or their own): `make test-fast`
# leaves them out (-m "not llama").
OWN_LLAMA = (
    "tests/server/test_failover.py",
    "tests/cli/test_llama.py",
    "tests/fleet/",
    "tests/test_quick_starts.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.split("::")[0]
        if "llama_server" in getattr(item, "fixturenames", ()) or path.startswith(OWN_LLAMA):
            item.add_marker(pytest.mark.llama)


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
