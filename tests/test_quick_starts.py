"""The quick starts run as written: each ```python block of the README and of the docs
is a whole program, run in a fresh process against the test llama-server (its address
put where they say ``http://127.0.0.1:8080``, and as ``ANTHROPIC_BASE_URL`` for a client
made without one), in a scratch folder for the files it writes. The one file a block
reads that a user brings, a model's ``tokenizer.json``, is one trained here. Every block
also passes ``mypy --strict``, as a user's type-checked code would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.llama import LlamaServer

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_URL = "http://127.0.0.1:8080"


def blocks(pages: list[Path] = PAGES) -> list[str]:
    return [b for p in pages for b in re.findall(r"^```python\n(.*?)^```$", p.read_text(), re.M | re.S)]


def test_the_readme_has_a_quick_start_per_pillar() -> None:
    text = "\n".join(blocks(PAGES[:1]))
    for used in ("chunk(", "c.stream(", "Session(", "c.map("):
        assert used in text, used


@pytest.mark.parametrize("index", range(len(blocks())))
def test_each_python_block_runs_as_written(index: int, llama_server: LlamaServer, tmp_path: Path) -> None:
    code = blocks()[index].replace(README_URL, llama_server.url)
    if "tokenizer.json" in code:
        _train_tokenizer(tmp_path / "tokenizer.json")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ANTHROPIC_BASE_URL": llama_server.url}
    env.pop("ANTHROPIC_API_KEY", None)
    if 'via="batches"' in code:
        # The hosted API's message batches (llama-server has none): the block runs against
        # the tests' fake of them, which keeps to the API's rules.
        _run_against_fake_batches(code, env, tmp_path)
        return
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "a quick start that prints nothing shows nothing"


def _run_against_fake_batches(code: str, env: dict[str, str], cwd: Path) -> None:
    from anyio.from_thread import start_blocking_portal

    from tests.client.batch_server import FakeBatches
    from tests.client.fault_server import fault_server

    fake = FakeBatches(polls_to_end=1)
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(fault_server(fake)) as server:
        env = {**env, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "sk-ant-docs-0123456789"}
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 0, done.stderr[-3000:]
    assert fake.created and all(
        line.split(" ", 1)[1].startswith("answer to") for line in done.stdout.splitlines()
    )


def _train_tokenizer(path: Path) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator([(ROOT / "README.md").read_text()], trainer=trainer)
    tok.save(str(path))


def test_every_python_block_passes_mypy_strict(tmp_path: Path) -> None:
    for i, code in enumerate(blocks()):
        (tmp_path / f"block_{i:02d}.py").write_text(code)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--ignore-missing-imports",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]
