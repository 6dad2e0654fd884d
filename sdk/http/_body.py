"""Reading response bodies within bounds: of size after decompression, and of time.

httpx2 decompresses a whole read at once, so one 64 KiB read of a gzip bomb becomes
64 MiB, and ``aread()`` keeps whatever the server sends. The client reads raw bytes
instead and decodes them here, never asking a decompressor for more than it still
wants: a non-streamed answer is read up to a cap (past it: :class:`ResponseTooLargeError`),
an error body up to a smaller one (kept as a marked excerpt), and a stream is decoded
in bounded pieces.

Encodings read: identity, gzip (``x-gzip``) and deflate (zlib or raw), which are all the
client asks for; any other is a clear error rather than bytes misread as text.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator

import httpx2

from .._errors import APIConnectionError, UnsupportedEncodingError

__all__ = ["MAX_ERROR_BODY", "MAX_RESPONSE_BODY", "BodyDecoder", "decoded_chunks", "read_bounded"]

MAX_RESPONSE_BODY = 32 * 1024 * 1024  # a non-streamed answer (decompressed)
MAX_ERROR_BODY = 64 * 1024  # what an error keeps of its body
_PIECE = 64 * 1024  # the most one decode step yields from a stream


class BodyDecoder:
    """One response's content decoding, asked for at most ``limit`` bytes at a time."""

    def __init__(self, encoding: str | None) -> None:
        enc = (encoding or "identity").strip().lower()
        self._raw_deflate = False
        self._gzip = False
        self._z: zlib._Decompress | None
        if enc in ("", "identity"):
            self._z = None
        elif enc in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
            self._gzip = True
        elif enc == "deflate":
            self._z = zlib.decompressobj(zlib.MAX_WBITS)
            self._raw_deflate = True  # switched to raw deflate if the zlib header is missing
        else:
            raise UnsupportedEncodingError(
                f"the response is encoded as {enc!r}, which the client cannot read"
            )
        self._tail = b""  # input not yet decoded (held back by a limit)
        self._started = False

    @property
    def pending(self) -> bool:
        """Input is held back, waiting for a call with room."""
        return bool(self._tail)

    @property
    def held(self) -> int:
        """Bytes of input held back."""
        return len(self._tail)

    def decode(self, data: bytes, limit: int) -> bytes:
        """Up to ``limit`` decoded bytes from what was held back plus ``data``."""
        if self._z is None:
            data = self._tail + data
            self._tail = data[limit:]
            return data[:limit]
        data = self._tail + data
        self._tail = b""
        if not data:
            return b""
        if self._raw_deflate and not self._started and len(data) < 2:
            self._tail = data  # zlib's header or raw deflate: decided on two bytes
            return b""
        try:
            out = self._z.decompress(data, max(1, limit))
        except zlib.error as e:
            if self._raw_deflate and not self._started:
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                self._raw_deflate = False
                return self.decode(data, limit)
            raise APIConnectionError(f"the response body is not valid compressed data: {e}") from None
        self._started = True
        self._raw_deflate = False
        self._tail = self._z.unconsumed_tail
        if self._gzip and self._z.eof and self._z.unused_data:
            # another gzip member follows (RFC 1952): decoded as part of the same body
            self._tail = self._z.unused_data
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        return out

    def finish(self) -> None:
        """At the end of the body: a compressed body must have ended where its data did."""
        if self._z is not None and self._started and not self._z.eof and not self._tail:
            raise APIConnectionError("the compressed response body ended early (truncated)")


def _preread(response: httpx2.Response) -> bytes | None:
    """The body, where it was read before the client saw the response (a transport
    built with ``content=``, as httpx2's ``MockTransport`` is): httpx2 has decoded it."""
    try:
        return response.content
    except httpx2.ResponseNotRead:
        return None


async def _raw(response: httpx2.Response, pre: bytes | None) -> AsyncIterator[bytes]:
    """The body's raw reads, then one empty read (for what the decoder holds back)."""
    if pre is not None:
        yield pre
    else:
        async for raw in response.aiter_raw():
            yield raw
    yield b""


async def read_bounded(response: httpx2.Response, limit: int, *, excerpt: bool = True) -> tuple[bytes, bool]:
    """At most ``limit`` decoded bytes of the body and whether there was more (then, with
    ``excerpt=False``, no bytes: the caller has no use for them). The body is not read,
    nor decompressed, past that point; it is decoded in pieces of at most 64 KiB, so
    memory stays near ``limit`` plus one piece."""
    parts: list[bytes] = []
    size = 0
    async with contextlib.aclosing(decoded_chunks(response, budget=limit + 1)) as pieces:
        async for piece in pieces:
            parts.append(piece)
            size += len(piece)
            if size > limit:
                return (b"".join(parts)[:limit] if excerpt else b""), True
    return b"".join(parts), False


async def decoded_chunks(response: httpx2.Response, *, budget: int | None = None) -> AsyncGenerator[bytes]:
    """A body, decoded, in pieces of at most 64 KiB (so flow control applies to what a
    compressed read expands to); with ``budget``, at most that many bytes in all (nothing
    is read or decompressed past them)."""
    pre = _preread(response)
    decoder = BodyDecoder(None if pre is not None else response.headers.get("content-encoding"))
    produced = 0

    def room() -> int:
        return _PIECE if budget is None else min(_PIECE, budget - produced)

    async for raw in _raw(response, pre):
        for piece in _drain(decoder, raw, room):
            produced += len(piece)
            yield piece
            if budget is not None and produced >= budget:
                return
    decoder.finish()


def _drain(decoder: BodyDecoder, data: bytes, room: Callable[[], int]) -> Iterator[bytes]:
    """Decode ``data`` and what the decoder holds back, a piece at a time, while that
    makes progress (a piece, or held input consumed)."""
    while True:
        held = decoder.held + len(data)
        piece = decoder.decode(data, room())
        data = b""
        if piece:
            yield piece
        if not decoder.pending or (not piece and decoder.held >= held):
            return
