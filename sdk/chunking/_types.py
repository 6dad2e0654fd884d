"""Values shared by the chunking engine and the format splitters."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple, Protocol

__all__ = ["Chunk", "ChunkKind", "ChunkingWarning", "Section", "Splitter"]

ChunkKind = Literal["auto", "text", "markdown", "code", "json", "jsonl"]


def caller_level() -> int:
    """``stacklevel`` of the first frame outside this package (the caller of ``chunk``)."""
    here = os.path.dirname(__file__)
    frame = sys._getframe(1)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(here):
        frame = frame.f_back
        level += 1
    return level


class ChunkingWarning(UserWarning):
    """A documented fallback happened (unknown language, unparseable tail, ...); no text was lost."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of the source.

    ``source[start:end] == text`` (code-point offsets) and, without overlap, the chunks
    tile the source exactly. ``tokens`` is the exact token count of ``text``.
    ``oversize`` is True exactly when ``tokens`` is over ``max_tokens``, which only a
    single indivisible unit (one grapheme cluster, or graphemes that line-breaking rules
    glue together) can be. It is measured against ``max_tokens``, not against the lower
    budget chunks are packed to with ``overlap`` (``max_tokens - overlap``): a unit
    between the two is a chunk of its own that carries less overlap, or none.
    ``partial`` marks a chunk holding part of a unit its format treats as one value
    (for example a JSON string cut inside, at grapheme/word boundaries).
    ``context`` is text added in front that is not in the source (Markdown's heading
    trail with ``heading_context=True``): then ``text == context + source[start:end]``
    and ``tokens`` counts the whole ``text``.
    """

    text: str
    start: int
    end: int
    tokens: int
    kind: str
    language: str | None = None
    path: str | None = None
    oversize: bool = False
    byte_start: int = 0
    byte_end: int = 0
    partial: bool = False
    context: str = ""


class Section(NamedTuple):
    """A candidate piece handed to the engine by a format splitter.

    ``splitter`` knows how to cut it further (``None``: indivisible); ``state`` is that
    splitter's own payload (a prose level, a syntax node, a JSON value, ...). The
    metadata of the first section of a chunk becomes the chunk's metadata.
    An immutable named tuple rather than a frozen dataclass: splitters create one per
    candidate piece (tens of thousands per megabyte), and tuples build 4x faster.
    """

    start: int
    end: int
    splitter: Splitter | None = None
    state: object = None
    kind: str = "text"
    language: str | None = None
    path: str | None = None
    partial: bool = False
    sticky: bool = False  # a chunk should not end with this part (a heading)


class Splitter(Protocol):
    """A format parser: it only finds where a section may be cut; the engine packs."""

    def split(self, text: str, section: Section) -> Sequence[Section]:
        """Cut ``section`` at its highest available level.

        Return ordered sections that tile ``[section.start, section.end)`` exactly
        (two or more), or an empty sequence when the section cannot be cut at all.
        A section returned may be split again later (descend only where needed).
        """
        ...
