"""Session files: round trip, compare-and-swap, located errors, crash safety."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import sdk.session._turns as turns_module
from sdk import Usage
from sdk.session import (
    Session,
    SessionConflict,
    SessionFileError,
    read_document,
    write_atomic,
)
from sdk.session._store import SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]


def _session() -> Session:
    s = Session(None, model="m", system="sys", context_window=5_000, reserve_output=100)
    s.add_user("hello", pin=True)
    s.add_assistant(
        [{"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}], usage=Usage(3, 4, 5, 6)
    )
    s.add_tool_result("t1", "result")
    s.add_assistant("done", usage=Usage(1, 2, None, 0), request_estimate=40)
    s.request()
    return s


def test_round_trip_keeps_everything_without_re_tokenizing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = _session()
    path = tmp_path / "chat.json"
    assert s.save(path) == 1
    assert s.save() == 2

    counted: list[str] = []
    real = turns_module.count_tokens

    def counting(text: str, encoding: str = "o200k_base") -> int:
        counted.append(text)
        return real(text, encoding)

    monkeypatch.setattr(turns_module, "count_tokens", counting)
    t = Session.load(path)
    assert counted == ["sys"]  # the system prompt only: turns reuse their stored estimates
    assert t.version == 2
    assert [(x.kind, x.content, x.pinned, x.estimate, x.usage, x.request_estimate) for x in t.turns] == [
        (x.kind, x.content, x.pinned, x.estimate, x.usage, x.request_estimate) for x in s.turns
    ]
    assert t.usage == s.usage == Usage(4, 6, 5, 6)
    assert t.system == s.system and t.log.epoch == s.log.epoch
    monkeypatch.undo()
    assert t.fit().prefix_stable  # the last fit survives the trip: the cache prefix is kept
    doc = read_document(path)
    assert doc["schema"] == SCHEMA_VERSION and doc["version"] == 2


def test_saving_over_a_newer_version_is_a_conflict(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    a = _session()
    a.save(path)
    b = Session.load(path)
    b.add_user("from b")
    b.save()  # version 2
    a.add_user("from a")
    before = path.read_bytes()
    with pytest.raises(SessionConflict) as e:
        a.save()
    assert (e.value.on_disk, e.value.ours) == (2, 1)
    assert path.read_bytes() == before  # b's data is intact
    c = Session.load(path)
    c.add_user("again")
    assert c.save() == 3


def test_a_new_path_never_overwrites_another_sessions_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    _session().save(path)
    other = Session(None, model="m", context_window=100, reserve_output=10)
    with pytest.raises(SessionConflict):
        other.save(path)


def test_versions_grow_by_one_per_save(tmp_path: Path) -> None:
    s = _session()
    path = tmp_path / "v.json"
    assert [s.save(path) for _ in range(5)] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("cut", [1, 17, 100, -1])
def test_truncated_file_names_the_file_and_offset(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "chat.json"
    _session().save(path)
    data = path.read_bytes()
    path.write_bytes(data[:cut])
    with pytest.raises(SessionFileError) as e:
        Session.load(path)
    assert str(path) in str(e.value)
    assert e.value.offset is not None and 0 <= e.value.offset <= len(data[:cut])
    assert f"byte offset {e.value.offset}" in str(e.value)


def test_corrupt_byte_is_located(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    _session().save(path)
    data = bytearray(path.read_bytes())
    at = data.index(b'"turns"') + 9
    data[at] = ord("}")
    path.write_bytes(bytes(data))
    with pytest.raises(SessionFileError) as e:
        Session.load(path)
    assert e.value.offset is not None and abs(e.value.offset - at) <= 1


def test_empty_wrong_schema_and_bad_content_are_clear(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_bytes(b"")
    with pytest.raises(SessionFileError, match="empty file"):
        Session.load(path)
    path.write_bytes(orjson.dumps({"schema": 99, "version": 1}))
    with pytest.raises(SessionFileError, match="schema 99"):
        Session.load(path)
    _session().save(tmp_path / "ok.json")
    doc = orjson.loads((tmp_path / "ok.json").read_bytes())
    doc["turns"][2]["role"] = "robot"
    path.write_bytes(orjson.dumps(doc))
    with pytest.raises(SessionFileError, match=r"turns\[2\]"):
        Session.load(path)


def test_a_corrupt_file_on_disk_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    s = _session()
    s.save(path)
    path.write_bytes(b'{"schema": 1, "vers')
    with pytest.raises(SessionFileError):
        s.save()
    assert path.read_bytes() == b'{"schema": 1, "vers'  # maybe someone's data: left as it is


def test_an_unserializable_session_leaves_the_good_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    s = _session()
    s.save(path)
    good = path.read_bytes()
    s.model = object()  # type: ignore[assignment]
    with pytest.raises(TypeError):
        s.save()
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_write_atomic_replaces_and_cleans_up(tmp_path: Path) -> None:
    path = tmp_path / "f"
    write_atomic(path, b"one")
    write_atomic(path, b"two")
    assert path.read_bytes() == b"two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_sigkill_during_saves_leaves_a_consistent_file(tmp_path: Path) -> None:
    """A child saves 200 times in a loop and is killed with SIGKILL at a random save
    (while it runs on: mostly inside the next save); every time, the file loads, its
    content matches its version, and no save that had returned is lost."""
    rng = random.Random(1234)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    versions = []
    for trial in range(10):
        path = tmp_path / f"crash{trial}.json"
        kill_after = rng.randint(1, 201)
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.session.crash_saver", str(path), "200"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        saved = 0
        while saved < kill_after:
            line = child.stdout.readline()
            assert line, "the child ended early"
            saved = int(line)
        child.send_signal(signal.SIGKILL)
        child.wait()
        s = Session.load(path)
        assert s.version >= saved  # a returned save is durable
        assert len(s.turns) == s.version - 1
        assert [t.text for t in s.turns] == [f"turn {i}" for i in range(len(s.turns))]
        versions.append(s.version)
        s.log.append("user", "after the crash")
        assert s.save() == versions[-1] + 1  # the survivor can go on saving
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # leftovers removed
    assert len(set(versions)) > 5  # the kills landed at different points


def test_a_save_removes_temp_files_left_by_a_killed_writer(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    s = _session()
    s.save(path)
    leftover = tmp_path / ".chat.json.abc123.tmp"
    leftover.write_bytes(b'{"half": ')
    unrelated = tmp_path / ".other.json.abc123.tmp"
    unrelated.write_bytes(b"x")
    s.save()
    assert not leftover.exists() and unrelated.exists()
