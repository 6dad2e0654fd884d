"""Every chunking kind and the function that makes a text's root section by its rules,
in one table (:data:`ROOTS`): ``chunk(..., kind=...)`` takes exactly these kinds.

A root factory takes ``(text, language, filename)``; the language and file name are
hints only the code kind (a grammar) and ``auto`` (detection) use.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType

from ._code import code_kind_root
from ._detect import decide
from ._json import json_root, jsonl_root
from ._languages import GrammarUnavailable, UnknownLanguage
from ._markdown import markdown_kind_root
from ._prose import PROSE
from ._types import ChunkingWarning, Section

__all__ = ["KINDS", "ROOTS", "RootFactory"]

RootFactory = Callable[[str, "str | None", "str | None"], Section]


def text_root(text: str, language: str | None, filename: str | None) -> Section:
    return PROSE.root(text)


def auto_root(text: str, language: str | None, filename: str | None) -> Section:
    """The kind :func:`~sdk.chunking.detect_kind` decides, by its rules; code without a
    language to parse it in (and a grammar that is missing) is chunked by prose rules,
    with a :class:`ChunkingWarning` that says why."""
    kind, why, found = decide(text, language, filename)
    if kind == "text":
        return PROSE.root(text)
    if kind == "code" and found is None:
        warnings.warn(
            f"kind='auto' found code ({why}); chunking with prose rules. "
            "Pass language= or filename= to choose a grammar.",
            ChunkingWarning,
            stacklevel=4,
        )
        return PROSE.root(text)
    try:
        return ROOTS[kind](text, found if kind == "code" else language, filename)
    except (UnknownLanguage, GrammarUnavailable) as exc:
        warnings.warn(
            f"kind='auto' chose {kind!r} ({why}) but {exc}; chunking with prose rules",
            ChunkingWarning,
            stacklevel=4,
        )
        return PROSE.root(text)


ROOTS: Mapping[str, RootFactory] = MappingProxyType(
    {
        "auto": auto_root,
        "text": text_root,
        "markdown": markdown_kind_root,
        "code": code_kind_root,
        "json": json_root,
        "jsonl": jsonl_root,
    }
)
KINDS: tuple[str, ...] = tuple(ROOTS)
