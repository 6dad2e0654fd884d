from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.valkey import MISSING, binary, running_valkey


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Valkey or Redis server on a free loopback port, for the whole test run."""
    if binary() is None:
        pytest.fail(MISSING, pytrace=False)
    with running_valkey(tmp_path_factory.mktemp("redis")) as server:
        yield server.url
