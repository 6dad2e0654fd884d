"""The engine encodes a text once and re-encodes only short stretches at chunk edges.

Code is cut between a line's indentation and its statement (``"    |if"``), where
token counts do not add up, so the stretch from each edge to the nearest additive
position is counted again. Those stretches are mostly the same few strings (an
indentation, ``if``, ``)``), counted once each by their text, and a chunk that grows
across a part that had to be cut is counted from the shared encoding instead of
encoding its text again. Measured by operation counts, never by the clock.
"""

from __future__ import annotations

import pytest

from sdk.chunking import Chunker
from sdk.chunking._junctions import ADDITIVE
from tests.invariants import check_chunks, watch_encoder


def _source(functions: int) -> str:
    out = ["import os\n\n\n"]
    for i in range(functions):
        out.append(
            f"def handler_{i}(request, limit={i % 7}):\n"
            f'    """Serve request kind {i}."""\n'
            f"    items = [x for x in request.items if x.size > {i}]\n"
            "    for item in items:\n"
            "        if item.name.startswith('tmp'):\n"
            "            continue\n"
            f"        total_{i % 13} = sum(len(part) for part in item.parts)\n"
            f"        if total_{i % 13} > limit:\n"
            f"            raise ValueError('too large: ' + str(total_{i % 13}))\n"
            "    return {'items': items, 'path': os.path.join('a', str(limit))}\n\n\n"
        )
    return "".join(out)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("budget", [16, 64])
def test_code_edges_are_recounted_rarely(encoding: str, budget: int) -> None:
    text = _source(400)
    chunker = Chunker(budget, encoding=encoding)
    sizer = chunker.sizer
    assert sizer is not None
    calls = [0, 0]

    def counting(s: str) -> None:
        calls[0] += 1
        calls[1] += len(s)

    undo = watch_encoder(sizer, counting)
    chunks = chunker.chunk(text, kind="code", language="python")
    undo()
    check_chunks(text, chunks, budget, encoding)
    assert len(chunks) > 400
    # Before: three to four encoder calls a chunk, and the text encoded 1.7 to 1.9 times.
    assert calls[0] <= 0.05 * len(chunks), (calls[0], len(chunks))
    assert calls[1] <= 1.05 * len(text), (calls[1], len(text))


@pytest.mark.parametrize("name", sorted(ADDITIVE))
def test_no_position_right_after_a_space_or_tab_is_additive(name: str) -> None:
    """The engine steps over an indentation at once when it looks back from an edge
    for an additive position; that rests on this."""
    rule = ADDITIVE[name]
    around = [*"aZ1.'/\n\r \t\u3000é日\u0301😀\x1c"]
    for left in around:
        for space in " \t":
            for right in around:
                assert not rule(left + space + right, 2), (left, space, right)


def test_looking_back_over_indentation_asks_once() -> None:
    """Deeply indented code: the junction rule is asked a bounded number of times per
    chunk, not once per column of indentation."""
    pad = " " * 48
    text = "".join(f"{pad}value_{i} = compute({i}, key='k{i}')\n{pad}check(value_{i})\n" for i in range(400))
    text = "def run():\n    if True:\n" + text.replace(pad, "        " + pad)
    chunker = Chunker(16)
    sizer = chunker.sizer
    assert sizer is not None
    rule = sizer.additive
    asked = [0]

    def counting(s: str, p: int) -> bool:
        asked[0] += 1
        return rule(s, p)

    sizer.additive = counting
    chunks = chunker.chunk(text, kind="code", language="python")
    sizer.additive = rule
    check_chunks(text, chunks, 16)
    assert asked[0] <= 12 * len(chunks), (asked[0], len(chunks))
