from __future__ import annotations

import importlib
import pkgutil

import sdk
import sdk.client
import sdk.http
import sdk.tokens


def test_public_names_are_sorted_resolvable_and_re_exported() -> None:
    assert list(sdk.__all__) == sorted(sdk.__all__)
    for pkg in (sdk.client, sdk.http, sdk.tokens):
        mods = [pkg] + [
            importlib.import_module(f"{pkg.__name__}.{m.name}") for m in pkgutil.iter_modules(pkg.__path__)
        ]
        for mod in mods:
            # ruff's RUF022 keeps each __all__ sorted (constants, then classes, then the rest)
            assert len(set(mod.__all__)) == len(mod.__all__), mod.__name__
            for name in mod.__all__:
                assert hasattr(mod, name), f"{mod.__name__}.{name}"
    user_facing = {
        "Client",
        "Stream",
        "ModelInfo",
        "TokenCount",
        "SyncClient",
        "SyncStream",
        "MapRun",
        "MapResult",
    }
    assert user_facing | {"RetryBudget", "RetryPolicy", "ServerTokenizer", "count_tokens"} <= set(sdk.__all__)
    for name in user_facing:
        assert getattr(sdk, name) is getattr(sdk.client, name)
