"""Streaming core: bytes of a streaming response -> typed events -> the accumulated message.

Sans-IO parsers (:class:`SSEDecoder`, :class:`AnthropicEventDecoder`,
:class:`OpenAIEventDecoder`, :class:`OpenAIChunkTranslator`), a pure reducer
(:func:`apply`) and a flow-controlled, resumable :class:`MessageStream` whose HTTP part
is injected by the client.
"""

from ._accumulate import (
    Message,
    MessageState,
)
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
)
from ._flow import FlowControl, FlowNote, StallPolicy, StreamStatistics
from ._openai import (
    OpenAIEventDecoder,
)
from ._sse import ServerSentEvent, SSEDecoder
from ._stream import (
    MessageStream,
    ResumeRequest,
    Upstream,
)

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
    "FlowControl",
    "FlowNote",
    "InputJSONDelta",
    "Message",
    "MessageDeltaEvent",
    "MessageStartEvent",
    "MessageState",
    "MessageStopEvent",
    "MessageStream",
    "OpenAIEventDecoder",
    "PingEvent",
    "RedactedThinkingBlock",
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
]
