"""Inputs at the tokenizer's limits: runs of one character class a million long.

tiktoken's pre-tokenizer panics (a ``pyo3_runtime.PanicException``, which passes
through ``except Exception``) on a whitespace run of about a million characters.
Chunking must never hand it one, must keep every count exact, and must stay linear:
the work is measured in characters handed to the encoder, not in seconds.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
import regex

from sdk.chunking import Chunker
from sdk.tokens import _local as _tokens
from tests.invariants import check_chunks

MILLION = 1_000_000


def shapes(n: int) -> dict[str, str]:
    return {
        "spaces": " " * n,
        "tabs": "\t" * n,
        "newlines": "\n" * n,
        "mixed whitespace": " \t\u3000\x0b\n\r\xa0\u2028" * (n // 8),
        "a word with tabs inside": "ab" + "\t" * n + "cd",
        "letters": "a" * n,
        "digits": "7" * n,
        "punctuation": "-" * n,
    }


_SPACE_RUN = regex.compile(r"\s+")


@dataclass
class Work:
    """What the encoders were handed."""

    native_chars: int = 0
    piece_chars: int = 0
    longest_native_space_run: int = 0
    calls: list[int] = field(default_factory=list)

    @property
    def chars(self) -> int:
        return self.native_chars + self.piece_chars


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Iterator[Work]:
    """Record every call the shared encoders make into tiktoken."""
    seen = Work()
    for name in _tokens.known_encodings():
        enc = _tokens.encoder(name)
        native, piece = enc._native, enc._piece
        assert piece is not None

        def counted_native(text: str, native: Callable[[str], list[int]] = native) -> list[int]:
            seen.native_chars += len(text)
            seen.calls.append(len(text))
            longest = max((len(m.group()) for m in _SPACE_RUN.finditer(text)), default=0)
            seen.longest_native_space_run = max(seen.longest_native_space_run, longest)
            return native(text)

        def counted_piece(text: str, piece: Callable[[str], list[int]] = piece) -> list[int]:
            seen.piece_chars += len(text)
            return piece(text)

        monkeypatch.setattr(enc, "_native", counted_native)
        monkeypatch.setattr(enc, "_piece", counted_piece)
    yield seen


@pytest.mark.parametrize("shape", ["spaces", "a word with tabs inside"])
def test_a_million_of_one_whitespace_character_chunks(shape: str, work: Work) -> None:
    text = shapes(MILLION)[shape]
    chunks = Chunker(2048).chunk(text, kind="text")  # tiktoken alone panicked here
    check_chunks(text, chunks, 2048)
    assert work.longest_native_space_run < _tokens._NATIVE_RUN


@pytest.mark.parametrize("shape", list(shapes(1)))
def test_runs_of_one_class_take_linear_work(shape: str, work: Work) -> None:
    n = 200_000
    text = shapes(n)[shape]
    chunks = Chunker(512).chunk(text, kind="text")
    check_chunks(text, chunks, 512)
    assert work.longest_native_space_run < _tokens._NATIVE_RUN
    # Each character is encoded a bounded number of times, whatever the run.
    assert work.chars <= 10 * len(text), work


@pytest.mark.parametrize(
    ("kind", "language"),
    [("markdown", None), ("code", "python"), ("code", "javascript"), ("json", None), ("auto", None)],
)
@pytest.mark.parametrize("shape", ["spaces", "mixed whitespace", "a word with tabs inside"])
def test_every_kind_keeps_long_runs_from_the_native_encoder(
    shape: str, kind: str, language: str | None, work: Work
) -> None:
    text = shapes(100_000)[shape]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # JSON that is not JSON says so
        chunks = Chunker(256).chunk(text, kind=kind, language=language)
    check_chunks(text, chunks, 256)
    assert work.longest_native_space_run < _tokens._NATIVE_RUN
    assert work.chars <= 10 * len(text), work


def test_a_budget_beyond_any_count_is_a_clear_error() -> None:
    """Budgets up to 2**62 work (a text of any size fits whole); past it a ValueError
    says so, where the native passes' 64-bit counts raised OverflowError mid-chunk."""
    text = "hello world. " * 50
    assert len(Chunker(1 << 62).chunk(text, kind="text")) == 1
    for budget in ((1 << 62) + 1, 10**19, 10**30):
        with pytest.raises(ValueError, match=r"at most 2\*\*62"):
            Chunker(budget)
