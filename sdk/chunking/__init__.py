"""Cut text, code and JSON only at safe seams, within an exact token budget.

>>> from sdk.chunking import chunk
>>> [c.text for c in chunk("第一句。第二句。", max_tokens=3)]
['第一句。', '第二句。']
"""

from ._api import Chunker, chunk
from ._types import Chunk, ChunkingWarning, ChunkKind, Section, Splitter

__all__ = ["Chunk", "ChunkKind", "Chunker", "ChunkingWarning", "Section", "Splitter", "chunk"]
