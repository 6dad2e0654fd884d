"""``Chunker(isolate=...)``: a text that may be parsed is chunked in a worker process
with an address-space limit. The same chunks as in process; a parse past the limit (a
hostile shape whose tree-sitter parse takes most of a gigabyte) costs that text its
grammar, not the caller's memory; a worker that dies is replaced."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from sdk.chunking import Chunker, ChunkingWarning, _isolate
from tests.corpus import corpus_files
from tests.invariants import check_chunks

ROOT = Path(__file__).resolve().parents[2]
HOSTILE_JAVA = "class A { void f() { " + "a<" * 8000 + " } }"  # 0.9 GB in one parse step
LIMIT = 256 << 20


@pytest.mark.skipif(
    bool(os.environ.get("SEAM_SANITIZED")), reason="ASan's shadow memory and an address-space limit"
)
def test_isolated_chunks_are_the_in_process_ones_and_a_parse_past_the_limit_falls_back() -> None:
    isolated, local = Chunker(64, isolate=LIMIT), Chunker(64)
    for cf in corpus_files(("code", "markdown", "mixed"))[:12]:
        text = cf.read()
        assert isolated.chunk(text, filename=cf.path.name) == local.chunk(text, filename=cf.path.name), (
            cf.name
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunks = isolated.chunk(HOSTILE_JAVA, filename="A.java")
    assert any("isolated worker failed" in str(w.message) for w in caught if w.category is ChunkingWarning)
    check_chunks(HOSTILE_JAVA, chunks, 64)
    assert {c.kind for c in chunks} == {"text"}  # prose rules
    text = corpus_files(("code",))[0].read()  # and the next call has a worker again
    assert isolated.chunk(text, filename=corpus_files(("code",))[0].path.name) == local.chunk(
        text, filename=corpus_files(("code",))[0].path.name
    )


def test_what_is_not_parsed_stays_in_process_and_errors_come_back() -> None:
    isolated = Chunker(32, isolate=True)
    before = sum(len(ws) for ws in _isolate._idle.values())
    assert isolated.chunk("Plain prose. " * 40, kind="text") == Chunker(32).chunk(
        "Plain prose. " * 40, kind="text"
    )
    assert sum(len(ws) for ws in _isolate._idle.values()) == before  # no worker asked
    isolated.chunk("def f(x):\n    return x\n" * 20, kind="code", language="python")
    config = isolated._worker_config
    assert config is not None  # pickled once, and each worker holds it after its first call
    assert any(config.digest in w.known for ws in _isolate._idle.values() for w in ws)
    with pytest.raises(ValueError):
        isolated.chunk("x = 1", kind="code", language="no-such-language")


def test_isolate_refuses_a_limit_that_is_not_one() -> None:
    for bad in (-1, 5, 1.5, "2G"):
        with pytest.raises(ValueError):
            Chunker(isolate=bad)  # type: ignore[arg-type]


@pytest.mark.skipif(
    bool(os.environ.get("SEAM_SANITIZED")), reason="ASan's shadow memory and an address-space limit"
)
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM (Linux)")
def test_the_callers_memory_stays_small_while_the_hostile_parse_fails_elsewhere() -> None:
    """In a fresh process: its peak resident memory after the hostile text, isolated,
    stays near what importing the engine costs (in process, the parse alone takes
    ~0.9 GB); and a script without a main guard works (nothing of it is re-imported)."""
    script = (
        "import warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from sdk.chunking import Chunker\n"
        f"text = {HOSTILE_JAVA!r}\n"
        f"chunks = Chunker(64, isolate={LIMIT}).chunk(text, filename='A.java')\n"
        "assert ''.join(c.text for c in chunks) == text\n"
        # (VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a child of a large
        # pytest process starts with its parent's peak)
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
        "print(int(hwm.split()[1]) // 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) < 400, done.stdout  # MB


@pytest.mark.skipif(
    bool(os.environ.get("SEAM_SANITIZED")), reason="ASan's shadow memory and an address-space limit"
)
def test_chunk_many_isolates_by_default_and_chunk_does_not(tmp_path: Path) -> None:
    paths = []
    for i, cf in enumerate(corpus_files(("code",))[:6]):
        paths.append(tmp_path / f"{i}{cf.path.suffix}")
        paths[-1].write_text(cf.read(), encoding="utf-8")
    chunker = Chunker(64)
    found = list(chunker.chunk_many(paths, workers=2))
    # each parsed in a worker (which holds the chunker's configuration), as in process
    config = chunker._worker_config
    assert config is not None and any(config.digest in w.known for ws in _isolate._idle.values() for w in ws)
    local = Chunker(64, isolate=False)
    assert [r.chunks for r in found] == [local.chunk_file(p) for p in paths]
    # chunk and chunk_file stay in process unless asked; isolate=False never isolates
    assert chunker.isolate == 0
    assert [r.chunks for r in local.chunk_many(paths[:2])] == [r.chunks for r in found[:2]]
    assert local._worker_config is None


class _Unpicklable:
    """A tokenizer that does not pickle (it holds a lambda): chunk_many runs in process."""

    def __init__(self) -> None:
        self.split = lambda text: text.split(" ")

    def encode(self, text: str) -> list[int]:
        return [len(t) for t in self.split(text)]


def test_chunk_many_stays_in_process_where_the_encoding_does_not_pickle(tmp_path: Path) -> None:
    path = tmp_path / "c.py"
    path.write_text("def f(x):\n    return x\n" * 10, encoding="utf-8")
    chunker = Chunker(16, encoding=_Unpicklable())
    assert [r.ok for r in chunker.chunk_many([path])] == [True]
    assert chunker._worker_config is None
    with pytest.raises(TypeError, match="pickles"):
        Chunker(16, encoding=_Unpicklable(), isolate=True).chunk_file(path)
