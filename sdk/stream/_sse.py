"""Sans-IO server-sent-event decoder (WHATWG "event stream interpretation").

Bytes in, events out; no sockets, no clocks. Lines are split on bytes at CR, LF and
CRLF only (``str.splitlines`` would also split at U+2028 and friends, which JSON
payloads may contain); a CR that ends one feed may meet its LF in the next.

An unterminated line is kept as the list of the feeds that brought it plus their total
length, and only a new feed is searched for a line end, so a long line costs O(its
length) however it is split: the bytes are joined once, when the line ends (growing one
buffer by concatenation would copy it again at every read, O(length²/read size)).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._errors import SSEEventTooLargeError
from ._fast import fast_new

__all__ = ["DEFAULT_MAX_EVENT_BYTES", "SSEDecoder", "ServerSentEvent"]

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_LINES = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event. ``id`` is the last event id seen so far (it persists)."""

    data: str
    event: str = "message"
    id: str = ""
    retry: int | None = None


_sse = fast_new(ServerSentEvent)


def _decode_replacing(raw: bytes) -> tuple[str, int]:
    """Decode with U+FFFD for each maximal invalid subsequence; also return how many."""
    out: list[str] = []
    count = 0
    pos = 0
    while True:
        try:
            out.append(raw[pos:].decode("utf-8"))
            return "".join(out), count
        except UnicodeDecodeError as e:
            out.append(raw[pos : pos + e.start].decode("utf-8"))
            out.append("\ufffd")
            count += 1
            pos += e.end


class SSEDecoder:
    """Incremental decoder: ``feed(bytes) -> list[ServerSentEvent]``, then ``flush()``.

    Invalid UTF-8 never raises: it is replaced with U+FFFD and counted in ``replaced``.
    One event (its data, counted in characters, plus the bytes of an unterminated line)
    over ``max_event_bytes`` raises
    :class:`~sdk.SSEEventTooLargeError`, so a server that never ends a line cannot
    exhaust memory.
    """

    __slots__ = (
        "_bom_done",
        "_data",
        "_data_size",
        "_dispatched_id",
        "_event",
        "_last_id",
        "_parts",
        "_pending",
        "_retry",
        "_skip_lf",
        "max_event_bytes",
        "replaced",
        "truncated_bytes",
    )

    def __init__(self, *, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes <= 0:
            raise ValueError("max_event_bytes must be positive")
        self.max_event_bytes = max_event_bytes
        self.replaced = 0
        self.truncated_bytes = 0
        self._parts: list[bytes] = []  # the unterminated line so far: no CR or LF in it
        self._pending = 0  # its length in bytes
        self._skip_lf = False
        self._bom_done = False
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self._last_id = ""
        self._dispatched_id = ""
        self._retry: int | None = None

    @property
    def last_event_id(self) -> str:
        """The id of the last event dispatched, what a reconnection sends as
        ``Last-Event-ID`` (as EventSource's does): the ``id:`` line of an event cut short
        does not count, or a server would resume after an event never delivered."""
        return self._dispatched_id

    @property
    def retry(self) -> int | None:
        """The reconnection time (ms) the server asked for, if any."""
        return self._retry

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        if not chunk:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if chunk[0] == 0x0A:
                chunk = chunk[1:]
                if not chunk:
                    return []
        if not self._bom_done:
            # At most two bytes (a BOM's start) are pending here, so joining them is cheap.
            if self._parts:
                chunk = b"".join([*self._parts, chunk])
                self._parts, self._pending = [], 0
            if len(chunk) < 3 and _BOM.startswith(chunk):
                self._parts, self._pending = [chunk], len(chunk)
                return []
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
            self._bom_done = True
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
        if end < 0:
            if chunk:
                self._parts.append(chunk)
                self._pending += len(chunk)
            self._check_size()
            return []
        if end + 1 < len(chunk):
            head, rest = chunk[: end + 1], chunk[end + 1 :]
        else:
            head, rest = chunk, b""
            self._skip_lf = chunk[end] == 0x0D
        if self._parts:
            self._parts.append(head)
            complete = b"".join(self._parts)
        else:
            complete = head
        self._parts = [rest] if rest else []
        self._pending = len(rest)
        self._check_size()
        try:
            text = complete.decode("utf-8")
        except UnicodeDecodeError:
            text, n = _decode_replacing(complete)
            self.replaced += n
        if "\r" in text:
            lines = _LINES.split(text)
            lines.pop()  # the empty remainder after the final terminator
            return self._lines(lines)
        return self._blocks(text)

    def flush(self) -> list[ServerSentEvent]:
        """End of stream.

        The spec drops an event that lacks its final blank line; we deliver it when all of
        its lines arrived whole (the data are complete, only the separator is missing).
        An event cut inside a line is dropped and its bytes are counted in
        ``truncated_bytes``.
        """
        out: list[ServerSentEvent] = []
        if self._pending:
            self.truncated_bytes += self._pending + self._data_size
            self._parts, self._pending = [], 0
            self._data = []
            self._data_size = 0
            self._event = ""
        elif self._data:
            out = self._lines([""])
        self._skip_lf = False
        return out

    def _check_size(self) -> None:
        if self._pending + self._data_size > self.max_event_bytes:
            size = self._pending + self._data_size
            self._parts, self._pending = [], 0
            raise SSEEventTooLargeError(
                f"one server-sent event is over {self.max_event_bytes} bytes ({size} so far)"
            )

    def _blocks(self, text: str) -> list[ServerSentEvent]:
        """LF-only text: take whole events at once when they have the usual shape
        (``event: x`` + one ``data:`` line, or one ``data:`` line); the rest goes line by line.
        """
        blocks = text.split("\n\n")
        last = blocks.pop()  # after the final blank line: lines of an unfinished event
        out: list[ServerSentEvent] = []
        cap = self.max_event_bytes
        for block in blocks:
            if not self._data and not self._event and len(block) <= cap:
                if block.startswith("event: "):
                    nl = block.find("\n")
                    if nl > 0 and block.startswith("data: ", nl + 1) and block.find("\n", nl + 1) < 0:
                        name = block[7:nl]
                        out.append(
                            ServerSentEvent(block[nl + 7 :], name or "message", self._last_id, self._retry)
                        )
                        continue
                elif block.startswith("data: ") and "\n" not in block:
                    out.append(_sse(block[6:], "message", self._last_id, self._retry))
                    continue
            lines = block.split("\n")
            lines.append("")
            out += self._lines(lines)
        if last:
            lines = last.split("\n")
            lines.pop()
            out += self._lines(lines)
        if out:
            self._dispatched_id = out[-1].id
        return out

    def _lines(self, lines: list[str]) -> list[ServerSentEvent]:
        out: list[ServerSentEvent] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    out.append(
                        ServerSentEvent(
                            data[0] if len(data) == 1 else "\n".join(data),
                            self._event or "message",
                            self._last_id,
                            self._retry,
                        )
                    )
                    data = self._data = []
                    self._data_size = 0
                self._event = ""
                continue
            if line.startswith("data:"):
                value = line[6:] if line.startswith("data: ") else line[5:]
                data.append(value)
                self._data_size += len(value) + 1
                if self._data_size > self.max_event_bytes:
                    self._check_size()
                continue
            field, colon, value = line.partition(":")
            if not field:
                continue  # comment
            if colon and value.startswith(" "):
                value = value[1:]
            if field == "event":
                self._event = value
            elif field == "data":  # "data" with no colon: an empty data line
                data.append(value)
                self._data_size += 1
            elif field == "id":
                if "\0" not in value:
                    self._last_id = value
            elif field == "retry" and len(value) <= 12 and value.isascii() and value.isdigit():
                # (Milliseconds: twelve digits are 31 years; a longer run is ignored, not
                # converted: int() refuses more than 4,300 digits.)
                self._retry = int(value)
            # any other field is ignored, as the spec says
        if out:
            self._dispatched_id = out[-1].id
        return out
