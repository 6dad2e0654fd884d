"""Property test across every kind: whatever the input, the contract holds.

Inputs are built from the syntax of every format (fences, headings, JSON structure,
escapes, code, CJK punctuation, emoji, separators), so each splitter meets text that
is half valid: broken JSON, unclosed fences, code in the wrong language.
"""

from __future__ import annotations

import warnings

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk.chunking import Chunker
from tests.chunking import examples
from tests.invariants import check_chunks

ATOMS = [
    *"{}[]():;,.\"'\\`~#*-_|>!?=+/\n\r\t ",
    *("```", "```python\n", "~~~\n", "# ", "## ", "\n\n", "\r\n", "null", "true", "1.5e3"),
    *("\\u00e9", "\\ud83d\\ude00", "def f(x):\n    return x\n", "class A:\n", "function g(){return 1}"),
    *("ユーザー名", "。", "、", "「", "」", "👨\u200d👩\u200d👧", "🇯🇵", "e\u0301", "한국어", "中文"),
    *("\u2028", "\ufeff", "\x00", "---\n", "| a | b |\n|---|---|\n", "- item\n", "> quote\n"),
    *("    code\n", "<div>\n", '"key": ', '[1, 2, {"a": "b"}]', '{"x": [', "]}"),
]
# Grapheme clusters of any length: a base and up to 300 marks (past any look-back
# window: code once cut two marks before the end of a space and 66 acute accents),
# runs of regional indicators (their pairs count from the run's start), joiner chains.
LONG_CLUSTERS = st.one_of(
    st.tuples(
        st.sampled_from([" ", "a", "ก", "\u0915", '"']),
        st.sampled_from(["\u0301", "\u0e31", "\u094d"]),
        st.integers(1, 300),
    ).map(lambda t: t[0] + t[1] * t[2]),
    st.integers(1, 90).map(lambda n: "\U0001f1ef" * n),
    st.integers(1, 40).map(lambda n: "\U0001f469" + "\u200d\U0001f469" * n),
)
TEXTS = st.lists(st.sampled_from(ATOMS) | LONG_CLUSTERS, max_size=100).map("".join)
KINDS = st.sampled_from(["text", "markdown", "code", "json", "jsonl", "auto"])
LANGUAGES = st.sampled_from([None, "python", "javascript", "go", "rust", "c", "bash", "typescript"])


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, kind=KINDS, language=LANGUAGES, budget=st.sampled_from([1, 2, 3, 5, 8, 16, 40]))
def test_contract_holds_for_every_kind(text: str, kind: str, language: str | None, budget: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fallbacks say so with a ChunkingWarning
        chunks = Chunker(budget).chunk(text, kind=kind, language=language if kind == "code" else None)
    check_chunks(text, chunks, budget)
