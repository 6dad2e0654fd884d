"""Every exception the SDK raises on purpose sits in the one tree under ``sdk.SDKError``
(keeping a builtin base where callers already catch one: ``ValueError``, ``OSError``...)."""

from __future__ import annotations

import importlib

import pytest

import sdk

MODULES = ["sdk", "sdk.stream", "sdk.session", "sdk.scheduler", "sdk.chunking", "sdk.server", "sdk.tokens"]


def _exceptions() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for name in MODULES:
        mod = importlib.import_module(name)
        for attr in getattr(mod, "__all__", ()):
            obj = getattr(mod, attr)
            if isinstance(obj, type) and issubclass(obj, BaseException) and not issubclass(obj, Warning):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return list(found.values())


@pytest.mark.parametrize("exc", _exceptions(), ids=lambda e: e.__qualname__)
def test_every_public_exception_is_an_sdk_error(exc: type[BaseException]) -> None:
    assert issubclass(exc, sdk.SDKError), f"{exc.__module__}.{exc.__qualname__}"


def test_the_tree_drawing_names_every_public_exception() -> None:
    doc = importlib.import_module("sdk._errors").__doc__ or ""
    missing = [e.__qualname__ for e in _exceptions() if e.__qualname__ not in doc]
    assert not missing, missing


@pytest.mark.parametrize("exc", _exceptions(), ids=lambda e: e.__qualname__)
def test_every_public_exception_is_defined_once_and_named_by_its_public_path(
    exc: type[BaseException],
) -> None:
    """One errors module: each class is sdk.<name>, so tracebacks and reprs show the path
    a caller imports (as httpx and anthropic-sdk do), and pickling finds it there."""
    assert exc.__module__ == "sdk"
    assert getattr(sdk, exc.__qualname__) is exc


def test_each_pillar_has_one_group_to_catch() -> None:
    groups = {
        sdk.ChunkingError: [
            sdk.UnknownLanguage,
            sdk.GrammarUnavailable,
            sdk.JSONChunkError,
            sdk.BinaryFileError,
        ],
        sdk.SessionError: [
            sdk.SessionNotFound,
            sdk.SessionStoreError,
            sdk.SessionBudgetError,
            sdk.SessionConflict,
            sdk.SessionFileError,
        ],
        sdk.SchedulerError: [sdk.UnknownTierError, sdk.RequestRejectedError],
    }
    for group, members in groups.items():
        assert issubclass(group, sdk.SDKError)
        for m in members:
            assert issubclass(m, group), (m, group)
