from __future__ import annotations

import pytest

from tests.client.conftest import llama_server  # noqa: F401 (the real server, for test_llama_session)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
