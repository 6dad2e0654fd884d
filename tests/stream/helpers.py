"""One helper feeds every sans-IO parser three ways: whole, byte by byte, random splits."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import pytest


class Feedable(Protocol):
    def feed(self, chunk: bytes) -> list[Any]: ...

    def flush(self) -> list[Any]: ...


def splits(data: bytes, seed: int = 0, rounds: int = 3) -> Iterator[tuple[str, list[bytes]]]:
    yield "whole", [data]
    yield "bytes", [data[i : i + 1] for i in range(len(data))]
    rng = random.Random(seed)
    for r in range(rounds):
        cuts = (
            sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 40))))
            if len(data) > 1
            else []
        )
        bounds = [0, *cuts, len(data)]
        yield f"random{r}", [data[a:b] for a, b in itertools.pairwise(bounds)]


def run(make: Callable[[], Feedable], chunks: list[bytes]) -> tuple[list[Any], Feedable]:
    dec = make()
    out: list[Any] = []
    for c in chunks:
        out += dec.feed(c)
    out += dec.flush()
    return out, dec


def three_ways(make: Callable[[], Feedable], data: bytes, seed: int = 0) -> list[Any]:
    """Decode ``data`` every way; assert the outputs are identical; return them."""
    whole: list[Any] | None = None
    for name, chunks in splits(data, seed):
        out, _ = run(make, chunks)
        if whole is None:
            whole = out
        else:
            assert out == whole, f"{name} split differs from whole input"
    assert whole is not None
    return whole


def raises_three_ways(make: Callable[[], Feedable], data: bytes, exc: type[BaseException]) -> None:
    for name, chunks in splits(data):
        with pytest.raises(exc):
            run(make, chunks)
            raise AssertionError(f"{name}: no error")
