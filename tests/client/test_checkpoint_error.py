"""The ``map`` checkpoint's error is one of the SDK's errors: exported from ``sdk``, defined
with the others in ``sdk._errors`` and drawn in its tree (whose shape
``tests/stream/test_errors.py`` checks), and still an ``OSError``."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

import sdk
import sdk._errors as errors
import sdk.client._map as map_module

pytestmark = pytest.mark.anyio


def test_checkpoint_error_is_exported_and_drawn() -> None:
    assert "CheckpointError" in sdk.__all__ and sdk.__all__ == sorted(sdk.__all__)
    assert "CheckpointError" in errors.__all__
    cls = sdk.CheckpointError
    assert cls is errors.CheckpointError is map_module.CheckpointError
    assert cls.__module__ == sdk.SDKError.__module__  # defined where the other errors are
    assert issubclass(cls, sdk.SDKError) and issubclass(cls, OSError)
    assert "── CheckpointError" in (errors.__doc__ or "")


async def test_a_refused_checkpoint_is_caught_as_sdk_checkpoint_error(tmp_path: Path) -> None:
    async with sdk.Client(base_url="http://127.0.0.1:9", api_key="sk-ant-unused-0123456789") as c:
        with anyio.fail_after(20), pytest.raises(sdk.CheckpointError, match="a directory") as e:
            async with c.map([], checkpoint=tmp_path):
                pass
    assert e.value.path == os.fspath(tmp_path)
