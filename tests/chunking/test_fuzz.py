"""Fuzzing every kind over mutated corpus files, budgets 1-512: the chunks keep every
promise (tests/invariants.check_chunks), and nothing raises but the documented errors.

A handful of examples in a normal run; ``SEAM_FUZZ_SECONDS`` gives the run a time
instead (``make sanitize`` runs it for minutes against the compiled parts built with
AddressSanitizer and UBSan, where a read out of bounds is a crash, not a wrong chunk).
Mutations: a slice cut out, a slice repeated, a piece of another file or a hostile
fragment spliced in (deep nesting, unclosed strings and comments, long grapheme
clusters, joiners, kinsoku runs, lone surrogates are not text: never made), the text
cut short at any point.
"""

from __future__ import annotations

import os
import random
import time
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sdk.chunking import Chunker
from tests.corpus import corpus_files
from tests.invariants import check_chunks

from . import examples

SECONDS = float(os.environ.get("SEAM_FUZZ_SECONDS", "0") or 0)
FILES = corpus_files()
TEXTS = [cf.read() for cf in FILES]
KINDS = ["auto", "text", "markdown", "code", "json", "jsonl"]
LANGUAGES = [
    None,
    "python",
    "javascript",
    "typescript",
    "go",
    "rust",
    "java",
    "c",
    "cpp",
    "c_sharp",
    "ruby",
    "bash",
]
HOSTILE = [
    "(" * 300,
    "[" * 300 + "]" * 10,
    '{"a":' * 200,
    '"' + "\\u00e9" * 50,
    "/*" + "x" * 100,
    '"""' + "q" * 80,
    "a<" * 200,
    "x=~|" * 50,
    " " + "\u0301" * 80,
    "a\u200d" * 60,
    "👩🏽\u200d💻" * 20,
    "「" * 50 + "」" * 50,
    "ー" * 120,
    "\r\n" * 40,
    "# " * 40 + "\n",
    "```python\n" + "def f(:\n" * 10,
    "\ufeff",
    "\x00\x01\x02",
    "<<EOF\n" + "line\n" * 20,
    "$(" * 100,
]

mutation = st.one_of(
    st.tuples(st.just("cut"), st.floats(0, 1), st.floats(0, 1)),
    st.tuples(st.just("repeat"), st.floats(0, 1), st.integers(2, 20)),
    st.tuples(st.just("splice"), st.floats(0, 1), st.sampled_from(HOSTILE)),
    st.tuples(st.just("text"), st.floats(0, 1), st.text(max_size=40)),
    st.tuples(st.just("other"), st.floats(0, 1), st.integers(0, len(TEXTS) - 1)),
    st.tuples(st.just("truncate"), st.floats(0, 1), st.just(0)),
)


def mutate(text: str, steps: list[tuple[str, float, object]]) -> str:
    for op, where, arg in steps:
        at = int(where * len(text))
        if op == "cut":
            assert isinstance(arg, float)
            text = text[:at] + text[at + int(arg * 200) :]
        elif op == "repeat":
            assert isinstance(arg, int)
            text = text[:at] + text[at : at + 30] * arg + text[at:]
        elif op in ("splice", "text"):
            assert isinstance(arg, str)
            text = text[:at] + arg + text[at:]
        elif op == "other":
            assert isinstance(arg, int)
            piece = TEXTS[arg]
            text = text[:at] + piece[:400] + text[at:]
        else:
            text = text[:at]
    return text.encode("utf-8", "replace").decode("utf-8")  # st.text() may give surrogates


CHUNKERS: dict[int, Chunker] = {}


def chunker(budget: int) -> Chunker:
    found = CHUNKERS.get(budget)
    if found is None:
        found = CHUNKERS[budget] = Chunker(budget, encoding="o200k_base")
    return found


FUZZ = settings(
    max_examples=examples(40),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(
    st.integers(0, len(TEXTS) - 1),
    st.lists(mutation, min_size=1, max_size=4),
    st.sampled_from(KINDS),
    st.sampled_from(LANGUAGES),
    st.integers(1, 512),
)
def test_mutated_corpus_files_keep_every_promise(
    index: int, steps: list[tuple[str, float, object]], kind: str, language: str | None, budget: int
) -> None:
    check_case(mutate(TEXTS[index], steps)[:6000], kind, language, budget)


def check_case(text: str, kind: str, language: str | None, budget: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chunks = chunker(budget).chunk(text, kind=kind, language=language)  # type: ignore[arg-type]
    check_chunks(text, chunks, budget)


def random_steps(rng: random.Random) -> list[tuple[str, float, object]]:
    steps: list[tuple[str, float, object]] = []
    for _ in range(rng.randint(1, 4)):
        op = rng.choice(["cut", "repeat", "splice", "text", "other", "truncate"])
        arg: object
        if op == "cut":
            arg = rng.random()
        elif op == "repeat":
            arg = rng.randint(2, 20)
        elif op == "splice":
            arg = rng.choice(HOSTILE)
        elif op == "text":
            arg = "".join(
                chr(
                    rng.choice(
                        [
                            rng.randint(32, 0x2FF),
                            rng.randint(0x300, 0x36F),
                            rng.randint(0x3000, 0x30FF),
                            rng.randint(0x1F300, 0x1FAFF),
                            0x200D,
                            10,
                            13,
                        ]
                    )
                )
                for _ in range(rng.randint(1, 40))
            )
        elif op == "other":
            arg = rng.randrange(len(TEXTS))
        else:
            arg = 0
        steps.append((op, rng.random(), arg))
    return steps


@pytest.mark.skipif(not SECONDS, reason="SEAM_FUZZ_SECONDS not set (make sanitize sets it)")
def test_fuzz_for_a_while() -> None:
    """Random cases until ``SEAM_FUZZ_SECONDS`` have passed; a failure names its seed."""
    deadline = time.monotonic() + SECONDS
    seed = int(os.environ.get("SEAM_FUZZ_SEED", "0") or 0) or random.randrange(1 << 30)
    rng = random.Random(seed)
    cases = 0
    while time.monotonic() < deadline:
        index = rng.randrange(len(TEXTS))
        steps = random_steps(rng)
        kind, language, budget = rng.choice(KINDS), rng.choice(LANGUAGES), rng.randint(1, 512)
        text = mutate(TEXTS[index], steps)[:6000]
        try:
            check_case(text, kind, language, budget)
        except Exception as e:
            raise AssertionError(
                f"seed {seed}, case {cases}: file {FILES[index].name}, {steps!r}, kind={kind}, "
                f"language={language}, budget={budget}"
            ) from e
        cases += 1
    print(f"fuzzed {cases} cases in {SECONDS:g} s (seed {seed})")
