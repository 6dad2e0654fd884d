from __future__ import annotations

import sdk._errors
import sdk.stream
from sdk.stream import _accumulate, _events, _flow, _openai, _partial_json, _sse, _stream


def test_public_names_are_sorted_and_resolvable() -> None:
    for mod in (sdk.stream, sdk._errors, _accumulate, _events, _flow, _openai, _partial_json, _sse, _stream):
        assert list(mod.__all__) == sorted(mod.__all__), mod.__name__
        for name in mod.__all__:
            assert hasattr(mod, name), f"{mod.__name__}.{name}"


def test_package_re_exports_every_module_name() -> None:
    exported = set(sdk.stream.__all__)
    for mod in (_accumulate, _flow, _openai, _partial_json, _stream):
        assert set(mod.__all__) <= exported, mod.__name__
    assert set(_sse.__all__) - exported == {"DEFAULT_MAX_EVENT_BYTES"}  # a default, read via the class
    assert set(_events.__all__) - exported == set()
