from __future__ import annotations

import sdk
import sdk._errors
import sdk.stream
from sdk.stream import _accumulate, _events, _flow, _openai, _partial_json, _resume, _sse, _stream

# What a user of sdk.stream needs: events, blocks, the message, flow control, the stream
# and its parsers. The helpers the client, session and server share stay in the modules.
INTERNAL = {
    "DEFAULT_MAX_EVENT_BYTES",
    "EventDecoder",
    "JSONPrefix",
    "MessageHeader",
    "OpenAIChunkTranslator",
    "OpenBlock",
    "ResumeHook",
    "StreamObserver",
    "apply",
    "error_from_event",
    "message_to_wire",
    "openai_usage",
    "parse_anthropic_event",
    "parse_block",
    "partial_value",
    "wire_blocks",
}


def test_public_names_are_sorted_and_resolvable() -> None:
    mods = (
        sdk.stream,
        sdk._errors,
        _accumulate,
        _events,
        _flow,
        _openai,
        _partial_json,
        _resume,
        _sse,
        _stream,
    )
    for mod in mods:
        assert list(mod.__all__) == sorted(mod.__all__), mod.__name__
        for name in mod.__all__:
            assert hasattr(mod, name), f"{mod.__name__}.{name}"


def test_the_package_exports_what_users_need_and_no_internals() -> None:
    exported = set(sdk.stream.__all__)
    everything: set[str] = set()
    for mod in (_accumulate, _events, _flow, _openai, _partial_json, _sse, _stream):
        everything |= set(mod.__all__)
    assert everything - exported == INTERNAL
    assert len(exported) < 40


def test_the_common_values_are_reachable_from_sdk() -> None:
    for name in (
        "Message",
        "Usage",
        "TextBlock",
        "ToolUseBlock",
        "StallPolicy",
        "FlowControl",
        "SessionError",
    ):
        assert name in sdk.__all__ and hasattr(sdk, name), name
    assert sdk.Message is sdk.stream.Message
