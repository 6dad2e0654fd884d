from __future__ import annotations

import sdk
from sdk import _backends, _client, _retry


def test_public_names_are_sorted_resolvable_and_re_exported() -> None:
    assert list(sdk.__all__) == sorted(sdk.__all__)
    for mod in (_backends, _client, _retry):
        assert list(mod.__all__) == sorted(mod.__all__), mod.__name__
        for name in mod.__all__:
            assert hasattr(mod, name), f"{mod.__name__}.{name}"
    assert set(_client.__all__) | {"RetryBudget", "RetryPolicy"} <= set(sdk.__all__)
