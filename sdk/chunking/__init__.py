"""Cut text, code and JSON only at safe seams, within an exact token budget.

```pycon
>>> from sdk.chunking import chunk
>>> [c.text for c in chunk("第一句。第二句。", max_tokens=3)]
['第一句。', '第二句。']
```
"""

from sdk.tokens import TokenizerError

from . import _accel
from ._api import BinaryFileError, Chunker, FileChunks, UndecodableFileError, chunk
from ._code import GrammarUnavailable, UnknownLanguage, detect_language, languages
from ._detect import detect_kind
from ._json import JSONChunkError, JSONTokenizer
from ._jsonpieces import JSONPiece, json_pieces, merge_pieces
from ._types import Chunk, ChunkingWarning, ChunkKind, Section, Splitter

__all__ = [
    "BinaryFileError",
    "Chunk",
    "ChunkKind",
    "Chunker",
    "ChunkingWarning",
    "FileChunks",
    "GrammarUnavailable",
    "JSONChunkError",
    "JSONPiece",
    "JSONTokenizer",
    "Section",
    "Splitter",
    "TokenizerError",
    "UndecodableFileError",
    "UnknownLanguage",
    "chunk",
    "detect_kind",
    "detect_language",
    "json_pieces",
    "languages",
    "merge_pieces",
    "native_passes",
]


def native_passes() -> bool:
    """Whether the chunking engine's compiled parts (C extensions built at install
    where a C compiler is found) are in use. Without them the same chunks come from
    pure-Python paths, 1.3-2x slower at budget 64."""
    return _accel.native is not None and _accel.kernels is not None
