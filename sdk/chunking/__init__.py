"""Cut text, code and JSON only at safe seams, within an exact token budget.

>>> from sdk.chunking import chunk
>>> [c.text for c in chunk("第一句。第二句。", max_tokens=3)]
['第一句。', '第二句。']
"""

from ._api import Chunker, chunk
from ._code import GrammarUnavailable, UnknownLanguage, detect_language, languages
from ._types import Chunk, ChunkingWarning, ChunkKind, Section, Splitter

__all__ = [
    "Chunk",
    "ChunkKind",
    "Chunker",
    "ChunkingWarning",
    "GrammarUnavailable",
    "Section",
    "Splitter",
    "UnknownLanguage",
    "chunk",
    "detect_language",
    "languages",
]
