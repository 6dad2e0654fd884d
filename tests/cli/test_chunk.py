"""``seam chunk`` and ``seam count`` through the command's entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from typer.testing import CliRunner

from sdk import count_tokens
from sdk.chunking import Chunker
from sdk.cli import EXIT_OK, EXIT_OVERSIZE, EXIT_PIPE, EXIT_USAGE

from .conftest import run

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT / "corpora"
FAMILY = "👨\u200d👩\u200d👧\u200d👦"  # one grapheme cluster of many tokens


def records(stdout: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small folder with .gitignore files, a binary file and a file that is not UTF-8."""
    (tmp_path / ".gitignore").write_text("*.log\n!keep.log\nbuild/\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text(
        "# 見出し\n\n本文です。二つ目の文です。\n\n- one\n- two\n", encoding="utf-8"
    )
    (tmp_path / "app.py").write_text(
        "def f(x):\n    return x + 1\n\n\nclass A:\n    pass\n", encoding="utf-8"
    )
    (tmp_path / "debug.log").write_text("ignored\n", encoding="utf-8")
    (tmp_path / "keep.log").write_text("kept: a negated pattern\n", encoding="utf-8")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.txt").write_text("ignored folder\n", encoding="utf-8")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / ".gitignore").write_text("secret.txt\n", encoding="utf-8")
    (sub / "secret.txt").write_text("ignored by the nested file\n", encoding="utf-8")
    (sub / "data.json").write_text('{"名前": "テスト", "items": [1, 2, 3]}\n', encoding="utf-8")
    (sub / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    (sub / "latin1.txt").write_bytes("café".encode("latin-1"))
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_jsonl_is_the_chunkers_own_output(seam: CliRunner) -> None:
    paths = [
        CORPORA / "prose" / "ja_essay.txt",
        CORPORA / "json" / "long_string.json",
        CORPORA / "code" / "shapes.py",
    ]
    status, out, err = run(seam, "chunk", *map(str, paths), "--max-tokens", "48", "--jsonl")
    assert status == EXIT_OK, err
    got = records(out)
    chunker = Chunker(48)
    expected = []
    for p in paths:
        for i, c in enumerate(chunker.chunk_file(p)):
            expected.append(
                (i, c.start, c.end, c.tokens, c.kind, c.language, c.path, c.oversize, c.partial, c.text)
            )
        text = p.read_text(encoding="utf-8")
        mine = [r for r in got if Path(str(r["file"])).resolve() == p]
        assert "".join(str(r["text"]) for r in mine) == text  # the records tile the file
        assert all(text[int(r["start"]) : int(r["end"])] == r["text"] for r in mine)  # type: ignore[call-overload]
    assert [
        (
            r["index"],
            r["start"],
            r["end"],
            r["tokens"],
            r["kind"],
            r["language"],
            r["path"],  # the chunk's path, as Chunk.path names it (the file is "file")
            r["oversize"],
            r["partial"],
            r["text"],
        )
        for r in got
    ] == expected
    assert any(r["partial"] for r in got)  # the long JSON string is cut inside
    assert all(int(r["tokens"]) <= 48 for r in got)  # type: ignore[call-overload]
    # With --jsonl the summary goes to standard error, so standard output stays JSON Lines.
    assert "chunks" in err


def test_summary_table_and_gitignore(seam: CliRunner, tree: Path) -> None:
    status, out, err = run(seam, "chunk", ".", "--max-tokens", "64", "--jsonl")
    assert status == EXIT_OK, err
    seen = {str(r["file"]) for r in records(out)}
    assert seen == {"app.py", "keep.log", "notes.md", "sub/data.json"}
    assert "skipped sub/image.bin: binary" in err
    assert "skipped sub/latin1.txt: not UTF-8" in err
    kinds = {(r["kind"], r["language"]) for r in records(out)}
    assert ("code", "python") in kinds and ("json", None) in kinds
    status, out, _ = run(seam, "chunk", ".", "-n", "64")
    assert status == EXIT_OK
    assert "4 files" in out and "python" in out and "markdown" in out


def test_parent_gitignore_applies_inside_the_work_tree(seam: CliRunner, tree: Path) -> None:
    (tree / "sub" / "trace.log").write_text("ignored by the root .gitignore\n", encoding="utf-8")
    status, out, _ = run(seam, "chunk", "sub", "--jsonl", "-q")
    assert status == EXIT_OK
    assert {str(r["file"]) for r in records(out)} == {"sub/data.json"}
    # A file named on the command line is read even if ignored.
    status, out, _ = run(seam, "chunk", "debug.log", "--jsonl", "-q")
    assert status == EXIT_OK and records(out)[0]["file"] == "debug.log"


def test_exit_status_oversize_and_errors(seam: CliRunner, tmp_path: Path) -> None:
    f = tmp_path / "family.txt"
    f.write_text(f"a family: {FAMILY} at home", encoding="utf-8")
    assert count_tokens(FAMILY) > 4
    status, out, err = run(seam, "chunk", str(f), "--max-tokens", "4", "--jsonl")
    assert status == EXIT_OVERSIZE
    over = [r for r in records(out) if r["oversize"]]
    assert [r["text"] for r in over] == [FAMILY]
    assert "oversize" in err
    assert run(seam, "chunk", str(f), "--max-tokens", "64", "-q")[0] == EXIT_OK
    assert run(seam, "chunk", str(tmp_path / "missing.txt"), "-q")[0] == EXIT_USAGE
    assert run(seam, "chunk", str(f), "--max-tokens", "0")[0] == EXIT_USAGE
    assert run(seam, "chunk", str(f), "--encoding", "nope")[0] == EXIT_USAGE
    assert run(seam, "chunk", str(f), "--kind", "yaml")[0] == EXIT_USAGE
    assert run(seam, "chunk", str(f), "--html", str(tmp_path / "no" / "such" / "dir.html"))[0] == EXIT_USAGE


def test_kind_and_tokenizer_options(seam: CliRunner, tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text('{"a": "b", "c": [1, 2]}', encoding="utf-8")
    _, out, _ = run(seam, "chunk", str(f), "--kind", "json", "--tokenizer", "cl100k_base", "--jsonl", "-q")
    (r,) = records(out)
    assert r["kind"] == "json" and r["tokens"] == count_tokens(f.read_text(), "cl100k_base")


def test_a_tokenizer_json_counts_with_the_models_own_tokenizer(seam: CliRunner, tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(
        ["the quick brown fox jumps over the lazy dog"] * 50, trainers.BpeTrainer(vocab_size=300)
    )
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    f = tmp_path / "a.txt"
    f.write_text("the quick brown fox. " * 40, encoding="utf-8")
    status, out, _ = run(
        seam, "chunk", str(f), "--tokenizer", str(path), "--max-tokens", "16", "--jsonl", "-q"
    )
    assert status == EXIT_OK
    for r in records(out):
        assert r["tokens"] == len(tok.encode(str(r["text"]), add_special_tokens=False).ids) <= 16
    status, _, err = run(seam, "chunk", str(f), "--tokenizer", str(tmp_path / "nope.json"))
    assert status == EXIT_USAGE and "tokenizer.json" in err


def test_count_local(seam: CliRunner, tree: Path) -> None:
    status, out, _ = run(seam, "count", "notes.md", "app.py", "--encoding", "cl100k_base")
    assert status == EXIT_OK
    n = count_tokens((tree / "notes.md").read_text(encoding="utf-8"), "cl100k_base")
    assert f" {n} " in out and "cl100k_base" in out and "2 files" in out
    assert run(seam, "count", "missing")[0] == EXIT_USAGE


def test_console_script_and_python_m_sdk(tmp_path: Path) -> None:
    f = tmp_path / "a.txt"
    f.write_text("Hello there. General Kenobi.", encoding="utf-8")
    seam = Path(sys.executable).with_name("seam")
    for cmd in ([str(seam)], [sys.executable, "-m", "sdk"]):
        if cmd[0] == str(seam) and not seam.exists():
            continue  # not installed as a package here: python -m sdk is still checked
        p = subprocess.run(
            [*cmd, "chunk", str(f), "--jsonl", "-q"], capture_output=True, text=True, timeout=60
        )
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["text"] == "Hello there. General Kenobi."
        p = subprocess.run([*cmd, "--help"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0 and "chunk" in p.stdout and "bench" in p.stdout


def test_output_closed_early_exits_with_the_pipe_status(tmp_path: Path) -> None:
    """A pipe into ``head``: click exited 1, which says a request failed."""
    f = tmp_path / "a.txt"
    f.write_text("Some words to cut into many chunks. " * 20_000, encoding="utf-8")
    child = subprocess.Popen(
        [sys.executable, "-m", "sdk", "chunk", str(f), "-n", "4", "--jsonl", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.readline()  # the reader takes one line and goes away
    child.stdout.close()
    err = child.stderr.read()
    assert child.wait(timeout=120) == EXIT_PIPE, err
    assert b"Traceback" not in err


def test_progress_bar_on_a_terminal_only(seam: CliRunner, tmp_path: Path) -> None:
    for i in range(3):
        (tmp_path / f"f{i}.txt").write_text("Some text to cut. " * 200, encoding="utf-8")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "sdk", "chunk", str(tmp_path), "-n", "64", "-q"],
        cwd=str(ROOT),
        encoding="utf-8",
        timeout=60,
        dimensions=(30, 150),
        env={**os.environ, "TERM": "xterm"},
    )
    drawn = child.read()
    child.close()
    assert child.exitstatus == EXIT_OK
    assert "3/3 files" in drawn and "━" in drawn and "10.8 kB" in drawn  # files and bytes
    _, out, err = run(seam, "chunk", str(tmp_path), "-n", "64", "-q")  # not a terminal: no bar
    assert "━" not in out + err and "files" not in err
