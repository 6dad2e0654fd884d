from __future__ import annotations

import sdk.session
from sdk.session import _answer, _policy, _redis, _render, _session, _sqlite, _store, _stores, _turns


def test_public_names_are_sorted_and_resolvable() -> None:
    for mod in (sdk.session, _answer, _policy, _redis, _render, _session, _sqlite, _store, _stores, _turns):
        assert list(mod.__all__) == sorted(mod.__all__), mod.__name__
        for name in mod.__all__:
            assert hasattr(mod, name), f"{mod.__name__}.{name}"


def test_errors_belong_to_the_sdk_tree() -> None:
    from sdk import SDKError

    for cls in (
        sdk.session.SessionBudgetError,
        sdk.session.SessionConflict,
        sdk.session.SessionFileError,
        sdk.session.SessionError,
        sdk.session.SessionNotFound,
        sdk.session.SessionStoreError,
    ):
        assert issubclass(cls, SDKError)
