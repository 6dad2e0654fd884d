"""The commands that talk to a server, against the real llama-server (Gemma 3 270M base).

``seam chat`` runs in a pseudo-terminal (pexpect), as a user would run it: two turns,
/stats, /quit; started again with the same session file it shows the earlier turns and
the next request carries them. Greedy settings and a few tokens per answer keep it
short and repeatable.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pexpect
import pytest
from PIL import Image
from typer.testing import CliRunner

from sdk import Session
from sdk.cli import EXIT_OK, EXIT_USAGE
from sdk.session import PendingAnswer
from tests.llama import LlamaServer, free_port, stop

from .conftest import run

ROOT = Path(__file__).resolve().parents[2]
FIRST = "Once upon a time, in a small village by the sea, there lived"
SECOND = "One day, the boy found"


def spawn_chat(server: LlamaServer, session: Path, *extra: str) -> pexpect.spawn:
    env = {**os.environ, "TERM": "dumb", "NO_COLOR": "1", "COLUMNS": "200"}
    args = ["-m", "sdk", "chat", "--base-url", server.url, "--session", str(session)]
    args += ["--max-tokens", "12", "--context-window", "1024", "--temperature", "0", "--top-k", "1", *extra]
    return pexpect.spawn(
        sys.executable, args, cwd=str(ROOT), env=env, encoding="utf-8", timeout=60, dimensions=(50, 200)
    )


def test_chat_two_turns_quit_and_resume(llama_server: LlamaServer, tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    child = spawn_chat(llama_server, path)
    try:
        child.expect(r"new session .*chat\.json \(model gemma-3-270m\)")
        child.expect_exact("you> ")
        child.sendline(FIRST)
        child.expect_exact("model> ")
        child.expect(r"\[context\] kept 1 turns, left out 0; \d+ of \d+ tokens")
        child.expect_exact("you> ")
        child.sendline("/stats")
        child.expect(r"\[stats\] TTFT \d+ ms, [\d.]+ tokens/s, \d+ tokens .*pauses \d+, resumes \d+")
        child.expect_exact("you> ")
        child.sendline(SECOND)
        child.expect(r"\[context\] kept 3 turns, left out 0")
        child.expect_exact("you> ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before

    saved = Session.load(path)
    assert [t.role for t in saved.log] == ["user", "assistant", "user", "assistant"]
    assert saved.log[0].text == FIRST and saved.log[2].text == SECOND
    assert all(t.text.strip() for t in saved.log)
    answers = [saved.log[1].text, saved.log[3].text]

    child = spawn_chat(llama_server, path, "--stats")
    try:
        child.expect(r"resumed .*chat\.json: 4 turns")
        child.expect_exact(f"you> {FIRST}")
        child.expect_exact("model> " + answers[0].strip().replace("\n", " ")[:40])
        child.expect_exact(f"you> {SECOND}")
        child.expect_exact("you> ")  # the prompt: the transcript is above it
        child.sendline("The end of the story:")
        child.expect(r"\[context\] kept 5 turns, left out 0")
        child.expect(r"\[stats\] TTFT \d+ ms")  # --stats: after every answer
        child.expect_exact("you> ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before
    assert len(Session.load(path).log) == 6


def test_chat_goes_on_after_a_message_too_long_for_the_window(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    path = tmp_path / "chat.json"
    child = spawn_chat(llama_server, path)
    try:
        child.expect_exact("you> ")
        child.sendline("word " * 1500)
        child.expect_exact("too long for the window")
        child.expect_exact("was not sent and is not kept")
        child.expect_exact("you> ")
        child.sendline(FIRST)
        child.expect_exact("model> ")
        child.expect(r"\[context\] kept 1 turns, left out 0")
        child.expect_exact("you> ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before
    assert [t.text for t in Session.load(path).log][:1] == [FIRST]


def test_bench_latency_writes_a_chart(seam: CliRunner, llama_server: LlamaServer, tmp_path: Path) -> None:
    png = tmp_path / "latency.png"
    status, out, err = run(
        seam,
        "bench", "latency",
        "--base-url", llama_server.url,
        "--requests", "6",
        "--concurrency", "4",
        "--max-tokens", "4",
        "--priority-mix", "interactive=1,batch=2",
        "--temperature", "0", "--top-k", "1",
        "--plot", str(png),
    )  # fmt: skip
    assert status == EXIT_OK, err
    assert re.search(r"interactive\s+│\s+2\s+│\s+0\s+│", out), out
    assert re.search(r"batch\s+│\s+4\s+│\s+0\s+│", out), out
    for metric in ("TTFT", "TPOT", "ITL", "E2EL"):
        assert metric in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(png) as im:
        assert im.size == (1100, 460)
        colours = im.convert("RGB").getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) > 20
    # A mix naming a tier the scheduler does not have is a usage error, before anything is sent.
    status, _, err = run(
        seam, "bench", "latency", "--base-url", llama_server.url, "--priority-mix", "urgent=1"
    )
    assert status == EXIT_USAGE and "urgent" in err
    assert run(seam, "bench", "latency", "--priority-mix", "interactive=x")[0] == EXIT_USAGE


def test_count_through_the_server(seam: CliRunner, llama_server: LlamaServer, tmp_path: Path) -> None:
    f = tmp_path / "poem.txt"
    f.write_text("The sea is calm tonight.\nThe tide is full, the moon lies fair.\n", encoding="utf-8")
    status, out, err = run(seam, "count", str(f), "--server", llama_server.url)
    assert status == EXIT_OK, err
    row = next(line for line in out.splitlines() if "poem.txt" in line)
    tokens = int(row.split("│")[3].strip().replace(",", ""))
    assert tokens > 10 and ("server" in row or "estimate" in row)


def test_serve_starts_the_scheduling_server(llama_server: LlamaServer) -> None:
    helped = subprocess.run(
        [sys.executable, "-m", "sdk", "serve", "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert helped.returncode == 0 and "--upstream" in helped.stdout
    port = free_port()
    cmd = [sys.executable, "-m", "sdk", "serve", "--upstream", llama_server.url, "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--log-level", "warning"], cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    assert r.status == 200
                    break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    pytest.fail("seam serve did not become healthy")
                time.sleep(0.1)
    finally:
        stop(proc)  # type: ignore[arg-type]
    bad = subprocess.run([sys.executable, "-m", "sdk", "serve"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--upstream" in bad.stderr


def test_chat_completes_an_answer_cut_off_before(llama_server: LlamaServer, tmp_path: Path) -> None:
    """A session saved mid-answer (as after a crash): the next start finishes that answer first."""
    path = tmp_path / "cut.json"
    s = Session(None, model=llama_server.model, context_window=1024, reserve_output=12)
    s.add_user(FIRST)
    s.pending = PendingAnswer(after=0, text=" a family")
    s.save(path)
    args = ["-m", "sdk", "chat", "--base-url", llama_server.url, "--session", str(path)]
    args += ["--max-tokens", "12", "--context-window", "1024", "--temperature", "0", "--top-k", "1"]
    done = subprocess.run(
        [sys.executable, *args], input="", capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert "an answer was cut off; continuing it:" in done.stdout
    saved = Session.load(path)
    assert saved.pending is None
    assert [t.role for t in saved.log] == ["user", "assistant"]
    answer = saved.log[1].text
    assert answer.startswith(" a family") and len(answer) > len(" a family")


def test_chat_kept_in_a_store(llama_server: LlamaServer, tmp_path: Path) -> None:
    """--session URL --session-id ID: the same chat kept in an SQLite store and resumed."""
    url = f"sqlite:///{tmp_path / 'chats.db'}"
    args = ["-m", "sdk", "chat", "--base-url", llama_server.url, "--session", url, "--session-id", "story"]
    args += ["--max-tokens", "8", "--context-window", "1024", "--temperature", "0", "--top-k", "1"]
    first = subprocess.run(
        [sys.executable, *args], input=FIRST + "\n", capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert first.returncode == 0, first.stderr
    assert "new session" in first.stdout and "#story" in first.stdout
    again = subprocess.run(
        [sys.executable, *args], input="", capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert again.returncode == 0, again.stderr
    assert re.search(r"resumed .*#story: 2 turns", again.stdout)
    assert f"you> {FIRST}" in again.stdout
    assert len(Session.load(url, "story").log) == 2


def test_a_store_password_is_never_shown() -> None:
    from sdk.cli._chat import shown_place

    assert shown_place("redis://:s3cret@db.example:6379/0") == "redis://:***@db.example:6379/0"
    assert shown_place("rediss://user:s3cret@db/1") == "rediss://user:***@db/1"
    assert shown_place("sqlite:///chats.db") == "sqlite:///chats.db"
    assert shown_place("/tmp/chat.json") == "/tmp/chat.json"
