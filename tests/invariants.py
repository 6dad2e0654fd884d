"""Invariants every chunking result must satisfy, whatever the format."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import regex

from sdk import count_tokens
from sdk.chunking import Chunk
from sdk.chunking._engine import Sizer

if TYPE_CHECKING:
    from typing_extensions import Buffer

_GRAPHEME = regex.compile(r"\X")
# (whitespace next to it at most 32 characters a side: longer runs are cut, see _json._Gaps)
_JSON_NUMBER = regex.compile(
    r"\s{0,32}[\[{,:]?\s{0,32}-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\s{0,32}[\]},]*\s{0,32}"
)


def grapheme_starts(text: str) -> set[int]:
    return {m.start() for m in _GRAPHEME.finditer(text)} | {len(text)}


def check_chunks(text: str, chunks: list[Chunk], max_tokens: int, encoding: str = "o200k_base") -> None:
    """Tiling, exact counts, budgets, grapheme safety, byte offsets."""
    if not text:
        assert chunks == []
        return
    assert "".join(c.text for c in chunks) == text
    pos = 0
    byte = 0
    starts = grapheme_starts(text)
    for c in chunks:
        assert c.start == pos, (c.start, pos)
        assert text[c.start : c.end] == c.text
        assert c.end > c.start
        assert c.tokens == count_tokens(c.text, encoding), (c.text, c.tokens)
        if not c.oversize:
            assert c.tokens <= max_tokens, (c.text, c.tokens)
        else:
            assert c.tokens > max_tokens
            # One indivisible unit: a grapheme, or graphemes glued by kinsoku (cut every
            # 32), or a JSON number or escape with what is glued to it (never cut).
            units = len(_GRAPHEME.findall(c.text))
            assert units <= 33 or _JSON_NUMBER.fullmatch(c.text) is not None, (
                "an oversize chunk of many units",
                c.text[:80],
                units,
            )
        assert c.start in starts, ("cut inside a grapheme", c.start, text[max(0, c.start - 3) : c.start + 3])
        assert c.byte_start == byte
        byte += len(c.text.encode("utf-8"))
        assert c.byte_end == byte
        pos = c.end
    assert pos == len(text)


def boundaries(chunks: list[Chunk]) -> list[int]:
    return [c.end for c in chunks[:-1]]


def watch_encoder(sizer: Sizer, seen: Callable[[str], None]) -> Callable[[], None]:
    """Have ``seen`` called with every text ``sizer`` hands its encoder: the chunks it
    counts and the sections whose token ends it takes. Returns what undoes it."""
    encode, ids = sizer._encode, sizer._ids

    def counting(text: str) -> list[int]:
        seen(text)
        return encode(text)

    def counting_ids(text: str) -> Sequence[int] | Buffer:
        seen(text)
        return ids(text)

    sizer._encode, sizer._ids = counting, counting_ids

    def undo() -> None:
        sizer._encode, sizer._ids = encode, ids

    return undo
