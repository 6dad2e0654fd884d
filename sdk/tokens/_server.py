"""Exact token counts from the server that runs the model.

A self-hosted model's tokenizer is often not on the machine that chunks (a GGUF on a GPU
box, a model vLLM pulled itself). The server has it, and says it: llama-server and vLLM
both answer ``POST /tokenize``, and a seam scheduling server forwards it to an engine.
:class:`ServerTokenizer` asks there, many texts side by side, and is accepted as
``encoding=`` wherever the work is async::

    async with Client(base_url="http://gpu-box:8080") as client:
        tok = ServerTokenizer(client)
        chunks = await Chunker(512, encoding=tok).achunk(text)   # every count from the server
        sizes = await tok.count_many(["first text", "second text"])
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

import anyio

from ._local import even_ends

if TYPE_CHECKING:
    from ..client import Client

__all__ = ["ServerTokenizer"]

# Above this many bytes a text is encoded without pieces (each piece costs some thirty
# bytes of JSON): its token ends are then spread evenly, which the chunking engine uses
# only as estimates.
_PIECES_BYTES = 1 << 20


def _running_loop() -> object:
    """The event loop this task runs in (asyncio's loop, or trio's run token)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        import trio  # no asyncio loop runs: anyio's other backend

        return trio.lowlevel.current_trio_token()


class ServerTokenizer:
    """The tokenizer of a self-hosted server's model, through its ``/tokenize``.

    ``client`` is the :class:`sdk.Client` that reaches the server (its key, timeouts and
    retries apply); ``model`` is sent where the server takes one (vLLM). At most
    ``concurrency`` requests are in flight at once across every call, so a batch of
    counts, or several chunkings side by side, share the server politely.

    Counts are those of the server's tokenizer without special tokens (no BOS), with
    special-token strings read as ordinary text where the server allows it
    (llama-server); an exact count of any text is one request. Pass it as ``encoding=``
    to :meth:`sdk.chunking.Chunker.achunk` or :func:`sdk.acount_tokens`.
    """

    __slots__ = ("_client", "_limiter", "concurrency", "model", "requests")

    def __init__(self, client: Client, *, model: str | None = None, concurrency: int = 8) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive int, got {concurrency!r}")
        self._client = client
        self.model = model
        self.concurrency = concurrency
        self._limiter: tuple[object, anyio.CapacityLimiter] | None = None
        self.requests = 0  # sent so far: what a batch or a chunking cost the server

    def __repr__(self) -> str:
        return f"ServerTokenizer({self._client.display_url!r}, model={self.model!r})"

    @property
    def name(self) -> str:
        """Names the tokenizer in reports and session files: the server and the model."""
        return f"server:{self._client.display_url}" + (f"#{self.model}" if self.model else "")

    async def _ask(self, text: str, pieces: bool) -> tuple[list[int], list[str | list[int]] | None]:
        if not isinstance(text, str):
            raise TypeError(f"{type(self).__name__} takes str, not {type(text).__name__}")
        if not text:
            return [], None
        # One limiter per event loop: a limiter made in one loop cannot be awaited in
        # another (a second ``anyio.run``, or trio after asyncio).
        loop = _running_loop()
        if self._limiter is None or self._limiter[0] is not loop:
            self._limiter = (loop, anyio.CapacityLimiter(self.concurrency))
        async with self._limiter[1]:
            self.requests += 1
            return await self._client.tokenize_pieces(text, model=self.model, pieces=pieces)

    async def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        ids, _ = await self._ask(text, False)
        return ids

    async def count(self, text: str) -> int:
        """Exact token count of ``text``."""
        return len(await self.encode(text))

    async def encode_ends(self, text: str, start_byte: int = 0) -> list[int]:
        """The UTF-8 end of every token of ``text`` (counted from ``start_byte``), never
        decreasing: exact in number, and where the server names each token's piece
        (llama-server) their lengths place the ends; else they are spread evenly."""
        if not isinstance(text, str):
            raise TypeError(f"{type(self).__name__} takes str, not {type(text).__name__}")
        width = len(text.encode("utf-8", "surrogatepass"))
        ids, pieces = await self._ask(text, width <= _PIECES_BYTES)
        n = len(ids)
        if pieces is None:
            return even_ends(width, n, start_byte)
        ends: list[int] = []
        at = 0
        for p in pieces:
            # A normalizer may add or drop characters: the ends stay within the text.
            at = min(width, at + (len(p) if isinstance(p, list) else len(p.encode("utf-8"))))
            ends.append(start_byte + at)
        return ends

    async def encode_many(self, texts: Iterable[str]) -> list[list[int]]:
        """Ids of each text, in order; the requests go side by side (``concurrency`` at most)."""
        items = list(texts)
        out: list[list[int]] = [[] for _ in items]

        async def one(i: int, text: str) -> None:
            out[i] = await self.encode(text)

        async with anyio.create_task_group() as tg:
            for i, text in enumerate(items):
                tg.start_soon(one, i, text)
        return out

    async def count_many(self, texts: Iterable[str]) -> list[int]:
        """Exact count of each text, in order, asked side by side."""
        return [len(ids) for ids in await self.encode_many(texts)]
