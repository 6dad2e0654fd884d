"""Structural quality of code chunk boundaries, measured from the syntax tree.

These measures parse the source themselves and never call the chunker, so they can
judge any splitter (ours, semantic-text-splitter's CodeSplitter, LangChain's
``from_language``) given only its boundaries: code-point offsets where one chunk ends
and the next begins.

- :func:`cuts_inside_fitting_nodes`: boundaries strictly inside a multi-line named
  node whose own text fits the budget (a cut a reader would not make).
- :func:`cuts_inside_tokens`: boundaries strictly inside a single-line leaf token
  (identifier, number, short string, operator) whose own text fits the budget.

Subtrees of ERROR nodes are skipped: broken regions are cut by prose rules on purpose.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence

import tree_sitter

from sdk import count_tokens
from sdk.chunking._languages import load_language

__all__ = ["cuts_inside_fitting_nodes", "cuts_inside_tokens"]


def _byte_to_char(text: str) -> tuple[bytes, list[int] | None]:
    data = text.encode("utf-8")
    if len(data) == len(text):
        return data, None
    table = [0] * (len(data) + 1)
    b = 0
    for i, ch in enumerate(text):
        n = len(ch.encode("utf-8"))
        for k in range(n):
            table[b + k] = i
        b += n
    table[b] = len(text)
    return data, table


def _parse(text: str, language: str) -> tuple[tree_sitter.Node, list[int] | None]:
    data, table = _byte_to_char(text)
    return tree_sitter.Parser(load_language(language)).parse(data).root_node, table


def _count(
    text: str,
    language: str,
    boundaries: Sequence[int],
    max_tokens: int,
    encoding: str,
    wanted: str,
) -> int:
    cuts = sorted(set(boundaries))
    root, table = _parse(text, language)
    bad: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error:
            continue
        s, e = node.start_byte, node.end_byte
        if table is not None:
            s, e = table[s], table[e]
        inside = cuts[bisect_right(cuts, s) : bisect_left(cuts, e)]
        if not inside:
            continue  # nor in any descendant
        if wanted == "node":
            qualifies = node.is_named and node.start_point.row != node.end_point.row
        else:
            qualifies = node.child_count == 0 and node.start_point.row == node.end_point.row
        if qualifies and count_tokens(text[s:e], encoding) <= max_tokens:
            bad.update(inside)
            continue
        stack.extend(node.children)
    return len(bad)


def cuts_inside_fitting_nodes(
    text: str,
    language: str,
    boundaries: Sequence[int],
    max_tokens: int,
    encoding: str = "o200k_base",
) -> int:
    """How many boundaries fall strictly inside a multi-line named node that fits whole."""
    return _count(text, language, boundaries, max_tokens, encoding, "node")


def cuts_inside_tokens(
    text: str,
    language: str,
    boundaries: Sequence[int],
    max_tokens: int,
    encoding: str = "o200k_base",
) -> int:
    """How many boundaries fall strictly inside a single-line token that fits whole."""
    return _count(text, language, boundaries, max_tokens, encoding, "token")
