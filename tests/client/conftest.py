"""Fixtures for the client tests: the asyncio/trio parametrisation.

The real llama-server fixture (``llama_server``) lives in ``tests/conftest.py``, so the
client and session tests share one server.
"""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
