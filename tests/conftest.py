"""Shared fixtures: the real llama-server, started once per test session when asked for."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.llama import LlamaServer, running_server


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    with running_server() as server:
        yield server
