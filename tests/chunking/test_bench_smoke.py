"""The benchmark's own helpers keep working as the package changes (the benchmark is run
by hand, so a helper broken by a change to a private function is found only then)."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest

import sdk

BENCH = Path(__file__).resolve().parents[2] / "bench" / "chunking.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_chunking", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_chunking"] = module
    spec.loader.exec_module(module)
    return module


def test_the_floor_of_markdown_with_fenced_code_is_measured(bench: ModuleType) -> None:
    text = "# Setup\n\nRun it:\n\n```python\ndef main():\n    return 1\n```\n\nDone.\n"
    texts = [bench.Text("doc", text, "markdown")]
    encoding = sdk.get_encoding(bench.ENCODING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        floor = bench._parse_cost(texts, [lambda: encoding.encode_ordinary(text)], 1, 0.5)
    assert floor is not None and floor > 0


def test_one_shape_is_chunked_in_this_process(bench: ModuleType) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = bench._one("JSON Lines of small records", 1, 64, trace=False)
    assert found["chunks"] > 1000 and found["over"] == 0 and found["oversize"] == 0
