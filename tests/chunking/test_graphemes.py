"""UAX #29 conformance: no cut where GraphemeBreakTest.txt says ×."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdk.chunking import chunk

DATA = Path(__file__).resolve().parent.parent / "data" / "GraphemeBreakTest.txt"


def cases() -> list[tuple[str, set[int], str]]:
    out = []
    for raw in DATA.read_text(encoding="utf-8").splitlines():
        line = raw.split("#")[0].strip()
        if not line:
            continue
        text = ""
        no_break: set[int] = set()
        for field in line.split():
            if field == "×":
                no_break.add(len(text))
            elif field != "÷":
                text += chr(int(field, 16))
        out.append((text, no_break, line))
    return out


CASES = cases()


def test_file_is_complete() -> None:
    assert len(CASES) > 600


@pytest.mark.parametrize("budget", [1, 2])
def test_no_cut_where_the_standard_forbids(budget: int) -> None:
    failures = []
    for text, no_break, line in CASES:
        if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
            continue  # lone surrogates are rejected with a ValueError by design
        cuts = {c.end for c in chunk(text, max_tokens=budget)[:-1]}
        if cuts & no_break:
            failures.append(line)
    assert failures == []
