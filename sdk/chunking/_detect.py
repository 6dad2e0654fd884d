"""``kind="auto"``: decide once, cheaply, which rules a whole input gets.

Order: an explicit ``language=``; the file name; then a look at a bounded prefix of
the content (JSON / JSON Lines, a shebang or strong code signals, Markdown structure);
otherwise prose. Nothing here parses a whole document just to decide.
"""

from __future__ import annotations

import os
import re

from ._languages import detect_language, language_for_filename

__all__ = ["decide", "detect_kind"]

_PREFIX = 8192
# Shares of code-shaped lines (by length) that send the prefix to the language
# classifier, and that make it code even when no language is recognized, if enough
# of its lines (by count) also show syntax.
_CODE_SHARE = 0.35
_SURELY_CODE = 0.6
_SYNTAX = 0.3
_JSON_EXT = {".json", ".geojson", ".jsonc", ".har", ".ipynb"}
_JSONL_EXT = {".jsonl", ".ndjson", ".jsonlines"}
_MARKDOWN_EXT = {".md", ".markdown", ".mdx", ".mkd"}
_TEXT_EXT = {".txt", ".text", ".log"}
# Line-oriented configuration and build files: chunked as lines of text (their "#"
# comments are not Markdown headings).
_LINES_EXT = {
    ".toml",
    ".yaml",
    ".yml",
    ".ini",
    ".cfg",
    ".conf",
    ".properties",
    ".env",
    ".sql",
    ".mk",
    ".dockerfile",
    ".gitignore",
    ".gitattributes",
    ".dockerignore",
    ".editorconfig",
    ".npmrc",
}
_LINES_NAMES = {
    "makefile",
    "gnumakefile",
    "dockerfile",
    "containerfile",
    "procfile",
    "codeowners",
    ".gitignore",
    ".gitattributes",
    ".dockerignore",
    ".editorconfig",
    ".env",
    ".npmrc",
}
_JSON_LINE = re.compile(r"\s*[\[{]")
# Markdown's marks at the start of a line, each searched from the newline before it,
# in a prefix with a newline put in front: ``re`` finds a pattern by its leading
# literal, where ``^`` gives it nothing to skip ahead by (0.08 ms a prefix for these
# three, 0.03 now). A match ends within its line, or where ``^`` would have gone on
# from, so the counts are those of ``^`` in multi-line mode.
_MD_HEADING = re.compile(r"\n {0,3}#{1,6}[ \t]+\S")
_MD_FENCE = re.compile(r"\n {0,3}(`{3,}|~{3,})")
_MD_OTHER = re.compile(
    r"\n {0,3}(?:[-*+][ \t]+\S|\d{1,9}[.)][ \t]+\S|>[ \t]?\S|\|.*\|[ \t]*$|\[[^\]]+\]:)", re.M
)


def _looks_like_jsonl(prefix: str) -> bool:
    lines = [ln for ln in prefix.splitlines()[:50] if ln.strip()]
    if len(lines) < 2:
        return False
    # The last line of the prefix may be cut short; judge the complete ones.
    complete = lines[:-1] if len(prefix) >= _PREFIX else lines
    return all(_JSON_LINE.match(ln) and ln.rstrip().endswith(("}", "]")) for ln in complete)


# What makes a line look like code at a glance, in any common language. Weak signs
# (prose has them too, now and then): it ends with code punctuation (_CODE_ENDS), is
# indented, or opens with a comment marker (_WEAK_START, below).
# Syntax (prose has it hardly ever): an assignment or declaration (``x = 1``,
# ``self.a[i] += f(x)``, ``let n = 0``, not ``a == b``) or a call alone on its line
# (``print(x)``, ``foo.bar(1, g(2));``);
_STATEMENT = re.compile(
    r"^[ \t]*(?:(?:let|const|var|val|local|my|our|auto|int|long|float|double|char|bool|string)[ \t]+)?"
    r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*|\[[^\]\n]*\])*[ \t]*"
    r"(?:[-+*/%&|^]|<<|>>|\*\*|//|\?\?)?=(?![=>])[ \t]*\S"
    r"|^[ \t]*[A-Za-z_$][\w$.]*\((?:[^()\n]|\([^()\n]*\))*\)[ \t]*;?[ \t]*$"
)
# an import, a block keyword alone (``import os``, ``#include <x.h>``, ``end``, ``fi``),
# a block header (``def f(x):``, ``if (a) {``) or a jump (``return x``, ``break;``);
_KEYWORD_LINE = re.compile(
    r"^[ \t]*(?:import[ \t]+[\w.]+(?:[ \t]+as[ \t]+\w+)?|from[ \t]+[\w.]+[ \t]+import[ \t]+[\w*, ]+"
    r"|#[ \t]*include[ \t]*[<\"].*|package[ \t]+[\w.]+;?|use[ \t]+[\w:{}, *]+;|using[ \t]+[\w.]+;"
    r"|end|fi|done|esac|else|begin|BEGIN|END"
    r"|(?:def|class|if|elif|for|while|with|try|except|switch|fn|func|function|struct|impl)\b.*[:{]"
    r"|(?:return|yield|raise|throw|break|continue|pass)\b[^.!?]*)[ \t]*$"
)
# a block opened at the end of the line, or only closing brackets on it (below);
# or a long line dense with code symbols and sparse in spaces (minified code).
_SYMBOLS = re.compile(r"[{}()\[\];=<>+\-*/&|!?:,.\"']")
_DENSE_LINE = 160
# The same tests, one pattern call a line: what must match at the start (a statement, a
# keyword line, a line of closing brackets; an indentation or a comment marker), the
# rest by the line's last character (``\s`` is what ``str.rstrip`` strips).
_SYNTAX_START = re.compile(
    rf"(?:{_STATEMENT.pattern})|(?:{_KEYWORD_LINE.pattern})|[ \t]*[}}\])]+[;,)]*[ \t]*$"
)
# What a line must hold for _SYNTAX_START to match it: "=" (an assignment), "(" and ")"
# (a call), or, after spaces and tabs, a keyword of _KEYWORD_LINE or a closing bracket.
# Tested first (str methods in C), it spares most prose lines the pattern's four tries.
_SYNTAX_LEADS = (
    "import",
    "from",
    "#",
    "package",
    "use",
    "using",
    "end",
    "fi",
    "done",
    "esac",
    "else",
    "begin",
    "BEGIN",
    "END",
    "def",
    "class",
    "if",
    "elif",
    "for",
    "while",
    "with",
    "try",
    "except",
    "switch",
    "fn",
    "func",
    "function",
    "struct",
    "impl",
    "return",
    "yield",
    "raise",
    "throw",
    "break",
    "continue",
    "pass",
    "}",
    "]",
    ")",
)
_WEAK_START = re.compile(r"(?:[ \t]{2,}|\t)\S|\s*(?:#|//|/\*|\*|--|@)")
_CODE_ENDS = frozenset(";{}()[],:\\")


def _dense(line: str) -> bool:
    n = len(line)
    return n >= _DENSE_LINE and line.count(" ") <= 0.08 * n and len(_SYMBOLS.findall(line)) >= 0.15 * n


def _code_evidence(prefix: str) -> tuple[float, float]:
    """How code-like the prefix is: ``(share, syntax)``.

    ``share``: the part of it (by length) in lines with any sign of code. Weighted by
    length, since prose paragraphs are long lines and code lines short (a long line
    counts only when it is dense with code symbols). ``syntax``: the part of its lines
    (by count) with syntax prose hardly ever has. Quoted lines ("> ...", as in mail and
    chat) belong to the prose around them.
    """
    lines = [ln for ln in prefix.splitlines()[:200] if ln.strip() and not ln.lstrip().startswith(">")]
    total = sum(len(ln) for ln in lines)
    if not total:
        return 0.0, 0.0
    code = 0
    syntactic = 0
    for ln in lines:
        end = ln.rstrip(" \t")
        syntax = (
            (
                ("=" in ln or ("(" in ln and ")" in ln) or ln.lstrip(" \t").startswith(_SYNTAX_LEADS))
                and _SYNTAX_START.match(ln) is not None
            )
            or end.endswith("{")
            or _dense(ln)
        )
        if syntax or ln.rstrip()[-1:] in _CODE_ENDS or _WEAK_START.match(ln):
            code += len(ln)
        syntactic += syntax
    return code / total, syntactic / len(lines)


# Line-oriented configuration by content (YAML, TOML, INI, .env, properties): most
# lines that are not comments are keys with values or section headers. List items
# ("- x") prove nothing (Markdown has them too) unless they hold a key.
_CONFIG_KEY = re.compile(
    r"^[ \t]*(?:-[ \t]+|[#;](?=[A-Za-z_]))?"  # a list item's key; a setting commented out (#KEY=1)
    r"(?:[A-Za-z0-9_][\w.\-/]*(?:[ \t][\w.\-/]+){0,3}|\"[^\"\n]+\"|'[^'\n]+')[ \t]*"
    r"(?::(?:[ \t]+\S.*)?|[ \t]*=[ \t]*.*)$"
)
_CONFIG_SECTION = re.compile(r"^[ \t]*\[\[?[^\[\]\n]+\]\]?[ \t]*$")
_CONFIG_LINE = re.compile(f"(?:{_CONFIG_KEY.pattern})|(?:{_CONFIG_SECTION.pattern})")
_CONFIG_NEUTRAL = re.compile(r"^[ \t]*(?:-[ \t]|-$|---[ \t]*$|\.\.\.[ \t]*$|[#;!])")
_CONFIG_SHARE = 0.8
_CONFIG_MIN_LINES = 3


def _looks_like_config(prefix: str) -> bool:
    """Most non-comment lines are ``key: value``, ``key = value`` or ``[section]``
    (at least three), so its ``#`` lines are comments, not Markdown headings."""
    keyed = other = 0
    lines = prefix.splitlines()[:200]
    rest = len(lines)
    for ln in lines:
        rest -= 1
        if not ln.strip():
            continue
        # (A key has its ":" or "=", a section its "[": most prose lines have neither,
        # and the key pattern backtracks over every word of a long line.)
        if (":" in ln or "=" in ln or "[" in ln) and _CONFIG_LINE.match(ln):
            keyed += 1
        elif not _CONFIG_NEUTRAL.match(ln):
            other += 1
            if keyed + rest < _CONFIG_SHARE * (keyed + rest + other):
                return False  # not even if every line left were a key
    return keyed >= _CONFIG_MIN_LINES and keyed >= _CONFIG_SHARE * (keyed + other)


_DOCKER_INSTRUCTION = re.compile(
    r"(?:FROM|RUN|CMD|LABEL|MAINTAINER|EXPOSE|ENV|ADD|COPY|ENTRYPOINT|VOLUME|USER|WORKDIR|ARG|ONBUILD"
    r"|STOPSIGNAL|HEALTHCHECK|SHELL)(?:[ \t]|$)",
    re.IGNORECASE,
)


def _looks_like_dockerfile(prefix: str) -> bool:
    """Its first instruction is ``FROM`` or ``ARG`` and most of its instructions (lines
    that do not go on from a ``\\`` before them) are Dockerfile instructions, at least
    three: its ``#`` lines are comments and parser directives, not Markdown headings."""
    first: str | None = None
    known = other = 0
    going_on = False
    for ln in prefix.splitlines()[:200]:
        line = ln.strip()
        was_going_on, going_on = going_on, line.endswith("\\")
        if not line or line.startswith("#") or was_going_on:
            continue
        if first is None:
            first = line
            if not line[:5].upper().startswith(("FROM ", "ARG ")):
                return False
        if _DOCKER_INSTRUCTION.match(line):
            known += 1
        else:
            other += 1
    return known >= 3 and known >= 4 * other


def _markdown_signals(prefix: str) -> int:
    """Headings, fences and other block marks at line starts (``prefix`` led by a
    newline: see _MD_HEADING)."""
    score = 2 * len(_MD_HEADING.findall(prefix)) + 3 * len(_MD_FENCE.findall(prefix))
    return score + min(len(_MD_OTHER.findall(prefix)), 6)


def detect_kind(text: str, language: str | None = None, filename: str | None = None) -> tuple[str, str]:
    """``(kind, why)`` for a whole input: one of text, markdown, code, json, jsonl."""
    kind, why, _ = decide(text, language, filename)
    return kind, why


def decide(text: str, language: str | None, filename: str | None) -> tuple[str, str, str | None]:
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
        lowered = base.lower()
        if ext in _LINES_EXT or lowered in _LINES_NAMES or lowered.startswith(("dockerfile.", "makefile.")):
            return "text", f"file name {base!r}: line-oriented configuration", None
        name = language_for_filename(filename)
        if name is not None:
            return "code", f"file name {base!r}", name
    prefix = text[:_PREFIX]
    if prefix.startswith("\ufeff"):
        prefix = prefix[1:]  # a byte order mark is no content ("\ufeff# Title" is Markdown)
    stripped = prefix.lstrip("\ufeff \t\r\n")
    if stripped[:1] in ("{", "["):
        if _looks_like_jsonl(stripped):
            return "jsonl", "content: one JSON value per line", None
        name, why = detect_language(stripped)
        if name == "json":
            return "json", why, None
    if stripped[:5].lower() == "<?php":
        # (Its first line is PHP's own tag: no other language opens that way, and the
        # classifier, which has no PHP, would name the closest one it has.)
        return "code", "content: a PHP open tag", "php"
    # Content features alone also fire on prose that talks about code; code also
    # looks like code line by line (a cheap test, so the classifier runs only on
    # what passes it). A fence says Markdown with code in it.
    share, syntax = _code_evidence(prefix)
    lined = "\n" + prefix
    fenced = _MD_FENCE.search(lined) is not None
    unnamed: str | None = None  # why the classifier named no language
    if prefix.startswith("#!") or (share >= _CODE_SHARE and not fenced):
        name, why = detect_language(prefix)
        if name is not None and name != "json":
            return "code", why, name
        unnamed = why
    # Keys and values (YAML, TOML, INI) look code-shaped too, and their "#" comments
    # like Markdown headings: as lines of text, like such files found by name.
    if not fenced and _looks_like_config(prefix):
        return "text", "content: line-oriented configuration (keys and values)", None
    if not fenced and _looks_like_dockerfile(prefix):
        return "text", "content: Dockerfile instructions", None
    if unnamed is not None and share >= _SURELY_CODE and syntax >= _SYNTAX and not fenced:
        # Code beyond doubt in a language the classifier cannot name: say so
        # (chunking then warns and uses prose rules) rather than call it prose.
        unsure = unnamed.removeprefix("content: ")
        return "code", f"content: {share:.0%} code-shaped lines, but {unsure}", None
    md = _markdown_signals(lined)
    if md >= 4:
        return "markdown", f"content: Markdown structure (score {md})", None
    return "text", "content: prose", None
