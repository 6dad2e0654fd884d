"""The values every layer shares: a message, its content blocks and its token usage.

The bottom layer: it imports nothing from the rest of the SDK, so errors, streams,
sessions, the client and the server can all speak of a :class:`Message` without
importing one another. :mod:`sdk.stream` builds these values from events; sessions
store them; errors carry the partial one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

__all__ = [
    "ContentBlock",
    "ContentBlockParam",
    "Message",
    "MessageParam",
    "RedactedThinkingBlock",
    "TextBlock",
    "ThinkingBlock",
    "ToolUseBlock",
    "UnknownBlock",
    "Usage",
    "blocks_to_param",
]


ContentBlockParam = Mapping[str, Any]
"""A content block as the API takes it: ``{"type": "text", "text": ...}``, ``image``,
``tool_use``, ``tool_result``, ``thinking``, ..."""


class MessageParam(TypedDict):
    """A request message: ``{"role": "user", "content": "..."}`` (or a list of blocks)."""

    role: Literal["user", "assistant"]
    content: str | Sequence[ContentBlockParam]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts; ``None`` means "not reported", not zero."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None

    def merged(self, newer: Usage) -> Usage:
        """Cumulative counts: every field the newer report carries replaces the old one."""
        return Usage(
            self.input_tokens if newer.input_tokens is None else newer.input_tokens,
            self.output_tokens if newer.output_tokens is None else newer.output_tokens,
            self.cache_creation_input_tokens
            if newer.cache_creation_input_tokens is None
            else newer.cache_creation_input_tokens,
            self.cache_read_input_tokens
            if newer.cache_read_input_tokens is None
            else newer.cache_read_input_tokens,
        )

    @property
    def total_input(self) -> int:
        """Everything the request put in the window: uncached + cache writes + cache reads."""
        return (
            (self.input_tokens or 0)
            + (self.cache_creation_input_tokens or 0)
            + (self.cache_read_input_tokens or 0)
        )

    def __add__(self, other: Usage) -> Usage:
        """The sum of two reports (``None`` + ``None`` stays "not reported")."""
        return self.plus(other)

    @classmethod
    def of(cls, usage: Any) -> Usage:
        """From any object with the four usage attributes (the official SDKs' ``Usage``)."""
        if isinstance(usage, Usage):
            return usage

        def num(key: str) -> int | None:
            v = getattr(usage, key, None)
            return v if isinstance(v, int) and not isinstance(v, bool) else None

        return cls(
            num("input_tokens"),
            num("output_tokens"),
            num("cache_creation_input_tokens"),
            num("cache_read_input_tokens"),
        )

    def plus(self, other: Usage) -> Usage:
        """Sum of two reports (a resumed stream bills its own segment)."""

        def add(a: int | None, b: int | None) -> int | None:
            return b if a is None else a if b is None else a + b

        return Usage(
            add(self.input_tokens, other.input_tokens),
            add(self.output_tokens, other.output_tokens),
            add(self.cache_creation_input_tokens, other.cache_creation_input_tokens),
            add(self.cache_read_input_tokens, other.cache_read_input_tokens),
        )

    def to_wire(self) -> dict[str, int]:
        """The reported counts as the Messages API writes them (unreported ones left out)."""
        out: dict[str, int] = {}
        if self.input_tokens is not None:
            out["input_tokens"] = self.input_tokens
        if self.output_tokens is not None:
            out["output_tokens"] = self.output_tokens
        if self.cache_creation_input_tokens is not None:
            out["cache_creation_input_tokens"] = self.cache_creation_input_tokens
        if self.cache_read_input_tokens is not None:
            out["cache_read_input_tokens"] = self.cache_read_input_tokens
        return out

    @staticmethod
    def from_wire(raw: object) -> Usage:
        if not isinstance(raw, Mapping):
            return Usage()

        return Usage(
            wire_count(raw.get("input_tokens")),
            wire_count(raw.get("output_tokens")),
            wire_count(raw.get("cache_creation_input_tokens")),
            wire_count(raw.get("cache_read_input_tokens")),
        )


MAX_WIRE_COUNT = (1 << 31) - 1


def wire_count(v: object) -> int | None:
    """A token count as a server reported it, or ``None`` where it is not one: not an
    integer (a bool is not), negative, or past ``2**31 - 1`` (no request holds that many;
    a count like that would stall the rate limits it is charged to)."""
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_WIRE_COUNT:
        return v
    return None


# ---- content blocks (as they start; the accumulator fills them) -------------------


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str = ""
    citations: tuple[Mapping[str, Any], ...] = ()
    type: str = "text"


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A tool call. ``input_json`` is the raw text; ``input`` its parse (``None`` with
    ``input_error`` set when the model produced invalid JSON: nothing is thrown away).
    ``type`` is ``tool_use``, ``server_tool_use`` or ``mcp_tool_use``."""

    id: str
    name: str
    input: Any = None
    input_json: str = ""
    input_error: str | None = None
    type: str = "tool_use"


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    thinking: str = ""
    signature: str = ""
    type: str = "thinking"


@dataclass(frozen=True, slots=True)
class RedactedThinkingBlock:
    data: str
    type: str = "redacted_thinking"


@dataclass(frozen=True, slots=True)
class UnknownBlock:
    """A block type this SDK does not model (server tool results, ...), kept verbatim."""

    type: str
    raw: Mapping[str, Any] = field(default_factory=dict)


ContentBlock = TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock | UnknownBlock


@dataclass(frozen=True, slots=True)
class Message:
    """The accumulated message (final, or a snapshot of an unfinished one)."""

    id: str
    model: str
    role: str
    content: tuple[ContentBlock, ...]
    stop_reason: str | None
    stop_sequence: str | None
    usage: Usage

    @property
    def text(self) -> str:
        """All text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))

    def to_param(self) -> MessageParam:
        """The message as a request message (``{"role": ..., "content": [...]}``), to send
        back in the next request of a tool loop or a conversation: only the fields the
        API accepts (no ``id``, ``usage``, ``stop_reason``; a tool call's input as parsed,
        ``{}`` where the model's JSON was invalid)."""
        role: Literal["user", "assistant"] = "user" if self.role == "user" else "assistant"
        return {"role": role, "content": blocks_to_param(self.content)}


def blocks_to_param(content: Sequence[ContentBlock]) -> list[dict[str, Any]]:
    """Received content blocks as request content blocks."""
    out: list[dict[str, Any]] = []
    for b in content:
        if isinstance(b, TextBlock):
            d: dict[str, Any] = {"type": "text", "text": b.text}
            if b.citations:
                d["citations"] = [dict(c) for c in b.citations]
            out.append(d)
        elif isinstance(b, ToolUseBlock):
            out.append(
                {"type": b.type, "id": b.id, "name": b.name, "input": b.input if b.input is not None else {}}
            )
        elif isinstance(b, ThinkingBlock):
            out.append({"type": "thinking", "thinking": b.thinking, "signature": b.signature})
        elif isinstance(b, RedactedThinkingBlock):
            out.append({"type": "redacted_thinking", "data": b.data})
        else:
            out.append(dict(b.raw) if b.raw else {"type": b.type})
    return out
