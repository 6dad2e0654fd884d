"""``kind="auto"``: decide once, cheaply, which rules a whole input gets.

Order: an explicit ``language=``; the file name; then a look at a bounded prefix of
the content (JSON / JSON Lines, a shebang or strong code signals, Markdown structure);
otherwise prose. Nothing here parses a whole document just to decide.
"""

from __future__ import annotations

import os
import re
import warnings

from ._api import _ROOTS, register_kind
from ._languages import GrammarUnavailable, UnknownLanguage, detect_language, language_for_filename
from ._prose import PROSE
from ._types import ChunkingWarning, Section

__all__ = ["detect_kind"]

_PREFIX = 8192
_JSON_EXT = {".json", ".geojson", ".jsonc", ".har", ".ipynb"}
_JSONL_EXT = {".jsonl", ".ndjson", ".jsonlines"}
_MARKDOWN_EXT = {".md", ".markdown", ".mdx", ".mkd"}
_TEXT_EXT = {".txt", ".text", ".log"}
_JSON_LINE = re.compile(r"\s*[\[{]")
_MD_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+\S", re.M)
_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.M)
_MD_OTHER = re.compile(
    r"^ {0,3}(?:[-*+][ \t]+\S|\d{1,9}[.)][ \t]+\S|>[ \t]?\S|\|.*\|[ \t]*$|\[[^\]]+\]:)", re.M
)


def _looks_like_jsonl(prefix: str) -> bool:
    lines = [ln for ln in prefix.splitlines()[:50] if ln.strip()]
    if len(lines) < 2:
        return False
    # The last line of the prefix may be cut short; judge the complete ones.
    complete = lines[:-1] if len(prefix) >= _PREFIX else lines
    return all(_JSON_LINE.match(ln) and ln.rstrip().endswith(("}", "]")) for ln in complete)


_CODE_LINE = re.compile(r"[;{}()\[\],:\\]\s*$|^(?:[ \t]{2,}|\t)\S|^\s*(?:#|//|/\*|\*|--|@)")


def _code_line_ratio(prefix: str) -> float:
    # Weighted by length: prose paragraphs are long lines, code lines are short.
    lines = [ln for ln in prefix.splitlines()[:200] if ln.strip()]
    total = sum(len(ln) for ln in lines)
    if not total:
        return 0.0
    # Quoted lines ("> ...", as in mail and chat) belong to the prose around them.
    return sum(len(ln) for ln in lines if _CODE_LINE.search(ln) and not ln.lstrip().startswith(">")) / total


def _markdown_signals(prefix: str) -> int:
    score = 2 * len(_MD_HEADING.findall(prefix)) + 3 * len(_MD_FENCE.findall(prefix))
    return score + min(len(_MD_OTHER.findall(prefix)), 6)


def detect_kind(text: str, language: str | None = None, filename: str | None = None) -> tuple[str, str]:
    """``(kind, why)`` for a whole input: one of text, markdown, code, json, jsonl."""
    kind, why, _ = _decide(text, language, filename)
    return kind, why


def _decide(text: str, language: str | None, filename: str | None) -> tuple[str, str, str | None]:
    """``(kind, why, language)``; the language is the code language found, if any."""
    if language is not None:
        lowered = language.lower()
        if lowered in ("json", "jsonl", "markdown", "text"):
            return lowered, f"language={language!r}", None
        if lowered in ("md", "ndjson"):
            return ("markdown" if lowered == "md" else "jsonl"), f"language={language!r}", None
        return "code", f"language={language!r}", language
    if filename:
        ext = os.path.splitext(filename)[1].lower()
        base = os.path.basename(filename)
        if ext in _JSONL_EXT:
            return "jsonl", f"file name {base!r}", None
        if ext in _JSON_EXT:
            return "json", f"file name {base!r}", None
        if ext in _MARKDOWN_EXT:
            return "markdown", f"file name {base!r}", None
        if ext in _TEXT_EXT:
            return "text", f"file name {base!r}", None
        name = language_for_filename(filename)
        if name is not None:
            return "code", f"file name {base!r}", name
    prefix = text[:_PREFIX]
    stripped = prefix.lstrip("\ufeff \t\r\n")
    if stripped[:1] in ("{", "["):
        if _looks_like_jsonl(stripped):
            return "jsonl", "content: one JSON value per line", None
        name, why = detect_language(stripped)
        if name == "json":
            return "json", why, None
    # Content features alone also fire on prose that talks about code; code also
    # looks like code line by line (a cheap test, so the classifier runs only on
    # what passes it). A fence says Markdown with code in it.
    if prefix.startswith("#!") or (_code_line_ratio(prefix) >= 0.35 and not _MD_FENCE.search(prefix)):
        name, why = detect_language(prefix)
        if name is not None and name != "json":
            return "code", why, name
    md = _markdown_signals(prefix)
    if md >= 4:
        return "markdown", f"content: Markdown structure (score {md})", None
    return "text", "content: prose", None


def _auto_root(text: str, language: str | None, filename: str | None) -> Section:
    kind, why, found = _decide(text, language, filename)
    if kind == "text":
        return PROSE.root(text)
    factory = _ROOTS.get(kind)
    if factory is None:
        warnings.warn(
            f"kind='auto' chose {kind!r} ({why}), which is not available in this build; "
            "chunking with prose rules",
            ChunkingWarning,
            stacklevel=4,
        )
        return PROSE.root(text)
    try:
        return factory(text, found if kind == "code" else language, filename)
    except (UnknownLanguage, GrammarUnavailable) as exc:
        warnings.warn(
            f"kind='auto' chose {kind!r} ({why}) but {exc}; chunking with prose rules",
            ChunkingWarning,
            stacklevel=4,
        )
        return PROSE.root(text)


register_kind("auto", _auto_root)
