"""Streaming core: bytes of a streaming response -> typed events -> the accumulated message.

Sans-IO parsers (:class:`SSEDecoder`, :class:`AnthropicEventDecoder`,
:class:`OpenAIEventDecoder`, :class:`OpenAIChunkTranslator`), a pure reducer
(:func:`apply`) and a flow-controlled, resumable :class:`MessageStream` whose HTTP part
is injected by the client.
"""

from ._accumulate import Message, MessageState, OpenBlock, apply, error_from_event
from ._events import (
    AnthropicEventDecoder,
    CitationsDelta,
    ContentBlock,
    ContentBlockDeltaEvent,
    ContentBlockStartEvent,
    ContentBlockStopEvent,
    Delta,
    ErrorEvent,
    Event,
    InputJSONDelta,
    MessageDeltaEvent,
    MessageStartEvent,
    MessageStopEvent,
    PingEvent,
    RedactedThinkingBlock,
    SignatureDelta,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    UnknownBlock,
    UnknownDelta,
    UnknownEvent,
    Usage,
    parse_anthropic_event,
    parse_block,
)
from ._flow import FlowControl, FlowNote, StallPolicy, StreamStatistics
from ._openai import OpenAIChunkTranslator, OpenAIEventDecoder, openai_usage
from ._partial_json import JSONPrefix, partial_value
from ._sse import ServerSentEvent, SSEDecoder
from ._stream import EventDecoder, MessageStream, ResumeHook, ResumeRequest, Upstream

__all__ = [
    "AnthropicEventDecoder",
    "CitationsDelta",
    "ContentBlock",
    "ContentBlockDeltaEvent",
    "ContentBlockStartEvent",
    "ContentBlockStopEvent",
    "Delta",
    "ErrorEvent",
    "Event",
    "EventDecoder",
    "FlowControl",
    "FlowNote",
    "InputJSONDelta",
    "JSONPrefix",
    "Message",
    "MessageDeltaEvent",
    "MessageStartEvent",
    "MessageState",
    "MessageStopEvent",
    "MessageStream",
    "OpenAIChunkTranslator",
    "OpenAIEventDecoder",
    "OpenBlock",
    "PingEvent",
    "RedactedThinkingBlock",
    "ResumeHook",
    "ResumeRequest",
    "SSEDecoder",
    "ServerSentEvent",
    "SignatureDelta",
    "StallPolicy",
    "StreamStatistics",
    "TextBlock",
    "TextDelta",
    "ThinkingBlock",
    "ThinkingDelta",
    "ToolUseBlock",
    "UnknownBlock",
    "UnknownDelta",
    "UnknownEvent",
    "Upstream",
    "Usage",
    "apply",
    "error_from_event",
    "openai_usage",
    "parse_anthropic_event",
    "parse_block",
    "partial_value",
]
