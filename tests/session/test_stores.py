"""The SessionStore contract, run against every store: a directory of session files,
SQLite, and a real Valkey/Redis server (started once for the run, see conftest.py)."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis

from sdk import Usage
from sdk.session import (
    FileStore,
    PendingAnswer,
    RedisStore,
    Session,
    SessionConflict,
    SessionError,
    SessionFileError,
    SessionNotFound,
    SessionStore,
    SessionStoreError,
    SQLiteStore,
    open_store,
)
from sdk.session._stores import _open
from tests.session.fakes import FakeClient, Reply

ROOT = Path(__file__).resolve().parents[2]
ANSWER = ["The ", "answer ", "is ", "forty", "-two", ", ", "as ", "always", "."]
STORES = ["file", "sqlite", "redis"]


@pytest.fixture(params=STORES)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL naming an empty store of each kind (each test its own)."""
    if request.param == "file":
        return (tmp_path / "sessions").as_uri()  # made by the first save
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"  # an absolute path: four slashes
    base = request.getfixturevalue("redis_url")
    return f"{base}?prefix=test-{uuid.uuid4().hex}:"


def fresh(url: str) -> SessionStore:
    """A store of its own (its own connection), as another worker would open it."""
    return _open(url)


def _session(client: Any = None) -> Session:
    s = Session(client, model="m", system="sys", context_window=5_000, reserve_output=100)
    s.add_user("hello, ünïcode and 日本語", pin=True)
    s.add_assistant(
        [{"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}], usage=Usage(3, 4, 5, 6)
    )
    s.add_tool_result("t1", "result")
    s.add_assistant("done", usage=Usage(1, 2, None, 0), request_estimate=40)
    s.request()
    return s


def test_round_trip_keeps_the_pending_answer(url: str) -> None:
    s = _session()
    s.add_user("and now?")
    s.pending = PendingAnswer(after=4, text="It is ", usage=Usage(9, 2, 0, 0), requests=1)
    assert s.save(url, "chat-1") == 1
    assert s.save() == 2
    with fresh(url) as store:
        t = Session.load(store, "chat-1")
        assert t.version == 2 and t.store is store and t.session_id == "chat-1"
        assert t.to_document() == s.to_document()
        assert t.pending == s.pending
        doc = store.load("chat-1")
        assert doc["version"] == 2 and doc["pending"]["text"] == "It is "
        assert store.version("chat-1") == 2 and store.version("other") == 0


def test_every_store_keeps_the_same_bytes(tmp_path: Path, redis_url: str) -> None:
    s = _session()
    path = tmp_path / "chat.json"
    s.save(path)
    file_bytes = path.read_bytes()
    s.save(f"sqlite:///{tmp_path / 's.db'}", "c")
    prefix = f"bytes-{uuid.uuid4().hex}:"
    s.save(f"{redis_url}?prefix={prefix}", "c")
    with sqlite3.connect(tmp_path / "s.db") as db:
        (sqlite_bytes,) = db.execute("SELECT document FROM seam_sessions WHERE id = 'c'").fetchone()
    redis_bytes = redis.Redis.from_url(redis_url).hget(f"{prefix}c", "document")
    # each save moved the session on by one version; the documents are otherwise one
    assert orjson.loads(sqlite_bytes) == dict(orjson.loads(file_bytes), version=2)
    assert redis_bytes == orjson.dumps(dict(orjson.loads(sqlite_bytes), version=3))
    assert bytes(sqlite_bytes) == orjson.dumps(dict(orjson.loads(file_bytes), version=2))


def test_a_save_sent_again_after_its_answer_was_lost_is_not_a_conflict(url: str) -> None:
    """A save the store applied but whose answer never came back (a Valkey/Redis timeout
    after the script ran) is sent again as it was: it is the store's version already, so
    it returns that version; a different document on the same base is still a conflict."""
    s = _session()
    s.save(url, "c")
    doc = s.to_document()
    with fresh(url) as store:
        assert store.save("c", doc, 1) == 2
        assert store.save("c", doc, 1) == 2  # the same save again
        assert store.version("c") == 2
        with pytest.raises(SessionConflict):
            store.save("c", {**doc, "system": "changed"}, 1)
        with pytest.raises(SessionConflict):
            store.save("c", doc, 0)  # the same document from an older base: not this save
        assert store.save("c", doc, 2) == 3


def test_saving_over_a_newer_version_is_a_conflict(url: str) -> None:
    a = _session()
    a.save(url, "c")
    b = Session.load(fresh(url), "c")
    b.add_user("from b")
    assert b.save() == 2
    a.add_user("from a")
    with pytest.raises(SessionConflict) as e:
        a.save()
    assert (e.value.on_disk, e.value.ours, e.value.session_id) == (2, 1, "c")
    assert "c" in e.value.path
    assert Session.load(url, "c").turns[-1].text == "from b"  # b's data is intact
    c = Session.load(url, "c")
    c.add_user("again")
    assert c.save() == 3
    other = Session(None, model="m", context_window=100, reserve_output=10)
    with pytest.raises(SessionConflict):  # a new session never overwrites another's id
        other.save(url, "c")
    with pytest.raises(SessionConflict):
        fresh(url).save("c", other.to_document(), 2)
    assert fresh(url).save("c", other.to_document(), 3) == 4


def test_list_and_delete(url: str) -> None:
    store = fresh(url)
    assert store.list() == []
    for sid in ("b", "a", "c-ü.1"):
        _session().save(store, sid)
    assert store.list() == ["a", "b", "c-ü.1"]
    assert open_store(url).list() == ["a", "b", "c-ü.1"]
    assert store.delete("b") is True
    assert store.delete("b") is False
    assert store.list() == ["a", "c-ü.1"]
    with pytest.raises(SessionNotFound) as e:
        Session.load(store, "b")
    assert e.value.session_id == "b"
    s = Session.load(store, "a")
    s.add_user("newer")
    s.save()
    with pytest.raises(SessionConflict):
        store.delete("a", version=1)  # a deleter holding an old version
    assert store.delete("a", version=2) is True
    assert store.list() == ["c-ü.1"]


@pytest.mark.parametrize("bad", ["", ".", "..", "a/b", "a\\b", "a\nb", "x" * 201, "a\ud800b", "a\udc80b"])
def test_session_ids_follow_one_rule(url: str, bad: str) -> None:
    with pytest.raises(ValueError):
        _session().save(url, bad)
    with pytest.raises(ValueError):
        fresh(url).load(bad)


def test_a_bad_stored_document_is_named(url: str, tmp_path: Path, redis_url: str) -> None:
    store = fresh(url)
    _session().save(store, "c")
    if isinstance(store, FileStore):
        Path(store.path_of("c")).write_bytes(b'{"schema": 1, "vers')
    elif isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as db:
            db.execute("UPDATE seam_sessions SET document = ?", (b'{"schema": 1, "vers',))
    else:
        assert isinstance(store, RedisStore)
        redis.Redis.from_url(redis_url).hset(f"{store.prefix}c", "document", b'{"schema": 1, "vers')
    with pytest.raises(SessionFileError) as e:
        Session.load(store, "c")
    assert e.value.offset is not None and store.where("c") in str(e.value)


def _start_worker(url: str, session_id: str, name: str, rounds: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.session.store_worker", url, session_id, name, str(rounds)],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _said(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the worker ended early (exit status {proc.wait()})"
    said: dict[str, Any] = json.loads(line)
    return said


def test_two_processes_racing_on_one_session(url: str) -> None:
    """Two worker processes load version 1 and save at once: one wins, the other gets
    SessionConflict and applies its change again; then both append in a loop, retrying
    on conflicts. Every turn of both arrives once, in each worker's order."""
    rounds = 15
    Session(None, model="m", context_window=10_000, reserve_output=100).save(url, "shared")
    workers = {name: _start_worker(url, "shared", name, rounds) for name in ("w1", "w2")}
    try:
        assert [_said(p) for p in workers.values()] == [{"loaded": 1}, {"loaded": 1}]
        for p in workers.values():
            assert p.stdin is not None
            p.stdin.write("go\n")
            p.stdin.flush()
        first = {name: _said(p) for name, p in workers.items()}
        assert sorted(next(iter(v)) for v in first.values()) == ["conflict", "won"]
        assert [v for v in first.values() if "won" in v] == [{"won": 2}]
        (lost,) = [v["conflict"] for v in first.values() if "conflict" in v]
        assert lost[0] >= 2 and lost[1] == 1  # the winner may have saved on since
        loser = next(p for name, p in workers.items() if "conflict" in first[name])
        assert _said(loser) == {"retried": True}
        done = {name: _said(p) for name, p in workers.items()}
        for p in workers.values():
            assert p.wait() == 0
    finally:
        for p in workers.values():
            if p.poll() is None:
                p.kill()
                p.wait()
    s = Session.load(url, "shared")
    texts = [t.text for t in s.turns]
    assert s.version == 1 + 2 * (rounds + 1)  # every save that returned is one version
    assert sorted(texts) == sorted(f"{w} {x}" for w in ("w1", "w2") for x in ["first", *range(rounds)])
    for w in ("w1", "w2"):
        assert [t for t in texts if t.startswith(w)] == [f"{w} first"] + [f"{w} {i}" for i in range(rounds)]
    assert all(isinstance(d["done"], int) for d in done.values())


def test_sigkill_during_saves_leaves_a_consistent_version(url: str) -> None:
    """A child saves in a loop and is killed with SIGKILL at a random save (mostly inside
    the next one); the store then holds a whole version, no returned save is lost, and
    the survivor can go on saving."""
    rng = random.Random(4321)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for trial in range(4):
        sid = f"crash{trial}"
        kill_after = rng.randint(1, 101)
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.session.crash_saver", url, "100", sid],
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
        s = Session.load(fresh(url), sid)
        assert s.version >= saved  # a returned save is durable
        assert [t.text for t in s.turns] == [f"turn {i}" for i in range(s.version - 1)]
        version = s.version
        s.log.append("user", "after the crash")
        assert s.save() == version + 1


@pytest.mark.anyio
async def test_a_stream_cut_on_one_worker_is_resumed_on_another(url: str) -> None:
    """Worker A streams with a checkpoint after every delta and its connection is cut;
    worker B (its own store connection) loads the stored cursor and resumes: the
    answer ends complete, each character once, and A's stale copy cannot overwrite it."""
    first = FakeClient(lambda req: Reply(ANSWER, die_after=4))
    a = Session(first, model="m", context_window=10_000, reserve_output=100)
    await a.asave(url, "conv")
    seen: list[str] = []
    with pytest.raises(Exception, match="cut the stream"):
        async with a.stream("What is the answer?", save_every=1) as r:
            async for t in r.text_deltas():
                seen.append(t)
    received = "".join(ANSWER[:4])
    assert "".join(seen) == received

    def script(req: dict[str, Any]) -> Reply:
        assert req["messages"][-1] == {"role": "assistant", "content": received}
        return Reply(ANSWER[4:])

    second = FakeClient(script)
    b = await Session.aload(fresh(url), "conv", second)
    assert b.pending is not None and b.pending.text == received
    async with b.resume(save_every=1) as r:
        async for t in r.text_deltas():
            seen.append(t)
    assert "".join(seen) == "".join(ANSWER)
    assert b.pending is None and [t.text for t in b.turns] == ["What is the answer?", "".join(ANSWER)]
    stored = await Session.aload(url, "conv")
    assert stored.pending is None and stored.turns[1].text == "".join(ANSWER)
    with pytest.raises(SessionConflict):
        await a.asave()


def test_urls_choose_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert isinstance(open_store(str(tmp_path)), FileStore)
    assert open_store(tmp_path.as_uri()).url == f"file://{tmp_path.resolve()}"
    rel = open_store("sqlite:///rel.db")
    assert isinstance(rel, SQLiteStore) and rel.path == str(tmp_path.resolve() / "rel.db")
    absolute = open_store(f"sqlite:///{tmp_path}/abs.db")
    assert isinstance(absolute, SQLiteStore) and absolute.path == str(tmp_path.resolve() / "abs.db")
    assert open_store("sqlite:///rel.db") is rel  # one store per URL and process
    for scheme in ("redis", "valkey", "rediss", "valkeys"):
        store = open_store(f"{scheme}://user:s3cret@127.0.0.1:1/2?prefix=app:")
        assert isinstance(store, RedisStore) and store.prefix == "app:"
        assert "s3cret" not in store.url + repr(store) and "user" not in store.url
    with pytest.raises(TypeError, match="session id"):
        Session.load("sqlite:///rel.db")
    with pytest.raises(TypeError, match="session id"):
        _session().save("redis://127.0.0.1:1/0")
    s = _session()
    s.save(tmp_path.as_uri() + "/one.json")  # a file:// URL of a file, without an id
    assert Session.load(tmp_path / "one.json").to_document() == s.to_document()
    assert s.path == str(tmp_path.resolve() / "one.json")
    with pytest.raises(SessionError, match="no path"):
        Session(None, model="m", context_window=100, reserve_output=10).save()


def test_credentials_never_reach_a_message(redis_url: str) -> None:
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    # the test server has no such user: it refuses the AUTH the client sends
    store = RedisStore(f"redis://nobody:s3cret-pw@127.0.0.1:{port}/0")
    with pytest.raises(SessionStoreError) as e:
        store.version("x")
    assert "s3cret-pw" not in str(e.value) + repr(e.value) + repr(store)
    closed = RedisStore(f"redis://:s3cret-pw@127.0.0.1:{_closed_port()}/0")
    with pytest.raises(SessionStoreError) as e:
        closed.list()
    assert "s3cret-pw" not in str(e.value) and isinstance(e.value, OSError)


@pytest.mark.parametrize("password", ["Zm9vYmFy/K9q+w==", "/K9qZm9v?x#y+w==", "p@ss:w/rd"])
def test_a_password_with_url_characters_is_never_shown_and_reaches_the_server(
    redis_url: str, password: str
) -> None:
    """Base64 passwords hold ``/``, ``+`` and ``=``: written raw in the URL, the password
    still goes to the server as written (the server refuses it: no such user), and no part
    of it is shown."""
    port = redis_url.rsplit(":", 1)[1].split("/")[0]
    store = RedisStore(f"redis://nobody:{password}@127.0.0.1:{port}/0")
    assert store.url == f"redis://127.0.0.1:{port}/0"
    with pytest.raises(SessionStoreError) as e:
        store.version("x")
    assert "AuthenticationError" in str(e.value) or "WRONGPASS" in str(e.value)
    shown = str(e.value) + repr(e.value) + repr(store) + store.where("x")
    assert not any(
        part in shown for part in password.replace("?", "/").replace("#", "/").split("/") if len(part) > 2
    )
    with pytest.raises(SessionStoreError) as bad:
        RedisStore(f"redis://:{password}@127.0.0.1:notaport/0")
    assert password not in str(bad.value)


def test_rows_edited_by_hand_are_named_errors(url: str, redis_url: str) -> None:
    store = fresh(url)
    _session().save(store, "c")
    if isinstance(store, FileStore):
        pytest.skip("a file has no version column")
    if isinstance(store, SQLiteStore):
        with sqlite3.connect(store.path) as db:
            db.execute("UPDATE seam_sessions SET version = 'abc'")
    else:
        assert isinstance(store, RedisStore)
        redis.Redis.from_url(redis_url).hset(f"{store.prefix}c", "version", b"1.5")
    for call in (lambda: store.load("c"), lambda: store.version("c")):
        with pytest.raises(SessionFileError, match="not a version number"):
            call()


def test_a_document_a_hand_edit_left_as_text_still_loads(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    store = fresh(url)
    _session().save(store, "c")
    assert isinstance(store, SQLiteStore)
    with sqlite3.connect(store.path) as db:  # what an UPDATE from the sqlite3 shell leaves
        db.execute("UPDATE seam_sessions SET document = CAST(document AS TEXT)")
    assert Session.load(store, "c").version == 1


def test_what_the_file_system_refuses_is_the_stores_error(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "d")
    assert store.delete("x") is False  # no directory: nothing to delete, no lock file made
    assert not (tmp_path / "d").exists()
    (tmp_path / "d" / "x.json").mkdir(parents=True)  # a directory where the file should be
    with pytest.raises(SessionStoreError):
        store.load("x")
    with pytest.raises(SessionStoreError):
        _session().save(store, "x")


def test_a_closed_store_is_opened_again_by_its_url(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    _session().save(url, "a")
    with open_store(url) as st:
        assert st.list() == ["a"]
    assert open_store(url).list() == ["a"]
    assert Session.load(url, "a").version == 1


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_legacy_path_api_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    s = _session()
    assert s.save(path) == 1
    assert isinstance(s.store, FileStore) and s.path == str(path.resolve())
    t = Session.load(path, None)
    assert t.path == s.path and t.version == 1
    with pytest.raises(FileNotFoundError):
        Session.load(tmp_path / "missing.json")
    with pytest.raises(SessionNotFound):
        Session.load(tmp_path / "missing.json")
