"""Session files that are damaged, of the wrong types, or reached by more than one name."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from sdk import Usage
from sdk._errors import SDKError
from sdk.session import PendingAnswer, Session, SessionConflict, SessionFileError, write_atomic
from sdk.session._turns import block_tokens


def rich_session() -> Session:
    """A session that fills every field of the file, with text far from ASCII."""
    s = Session(None, model="m", system="système ユーザー", context_window=5_000, reserve_output=100)
    s.add_user("héllo 😀 ユーザー名", pin=True)
    s.add_assistant(
        [
            {"type": "thinking", "thinking": "penser…", "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"é": ["ü😀", 1, None]}},
        ],
        usage=Usage(3, 4, 5, 6),
    )
    s.add_tool_result("t1", [{"type": "text", "text": "résultat ✓"}], is_error=True)
    s.add_assistant("fini — done", usage=Usage(1, 2, None, 0), request_estimate=40)
    s.add_user("et après ? " + "ユーザー名 " * 20)
    s.request()
    s.summary = (0, "résumé")
    s.pending = PendingAnswer(4, "à moitié", Usage(7, None, 0, 1), 2, 55)
    return s


def test_a_file_cut_at_every_byte_reports_a_byte_offset_in_it(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    rich_session().save(path)
    data = path.read_bytes()
    assert len(data.decode()) < len(data) - 40  # characters and bytes are far apart
    for cut in range(len(data)):
        path.write_bytes(data[:cut])
        with pytest.raises(SessionFileError) as e:
            Session.load(path)
        offset = e.value.offset
        assert offset is not None and 0 <= offset <= cut, (cut, offset)
        assert f"byte offset {offset}" in str(e.value)
        data[:offset].decode()  # at a character boundary (a cut character is reported at its start)
        assert offset >= cut - 3, (cut, offset)  # where the text ends, not a character count
        assert str(path) in str(e.value)


def test_a_bad_byte_after_multibyte_text_is_located_in_bytes(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    rich_session().save(path)
    data = path.read_bytes()
    at = data.index(b"fini") - 1  # the quote that opens the string
    for bad, what in ((b"}", "JSON"), (b"\xff", "UTF-8")):
        path.write_bytes(data[:at] + bad + data[at + 1 :])
        with pytest.raises(SessionFileError) as e:
            Session.load(path)
        assert e.value.offset == at and f"not valid {what} at byte offset {at}" in str(e.value)


def test_tool_definitions_need_no_type_and_survive_a_save(tmp_path: Path) -> None:
    tool = {"name": "lookup", "description": "find", "input_schema": {"type": "object", "properties": {}}}
    s = Session(None, model="m", context_window=5_000, reserve_output=100, tools=[tool])
    s.add_user("hi")
    assert s.request()[0]["tools"] == [tool]
    assert s.fixed_tokens > 0
    s.save(tmp_path / "t.json")
    assert Session.load(tmp_path / "t.json").tools == (tool,)
    with pytest.raises(TypeError, match="tool definition"):
        Session(None, model="m", context_window=5_000, reserve_output=100, tools=["lookup"])  # type: ignore[list-item]


# ---- values of the wrong type ----------------------------------------------------------

SUBSTITUTES: list[Any] = [None, True, 0, 7, 1.5, "abc", [], [1, 2, 3, 4], {}, {"type": "text"}]


def _kind(v: Any) -> str:
    return "bool" if isinstance(v, bool) else type(v).__name__


def _nodes(v: Any, where: str = "") -> Iterator[tuple[str, tuple[str | int, ...]]]:
    """Every value of a document with its path, spelled as SessionFileError.where spells it."""
    if isinstance(v, dict):
        for k, x in v.items():
            yield from _nodes_at(x, f"{where}.{k}" if where else k, (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _nodes_at(x, f"{where}[{i}]", (i,))


def _nodes_at(v: Any, where: str, key: tuple[str | int, ...]) -> Iterator[tuple[str, tuple[str | int, ...]]]:
    yield where, key
    for w, k in _nodes(v, where):
        yield w, key + k


def _mutated(doc: Any, key: tuple[str | int, ...], value: Any) -> Any:
    copy = orjson.loads(orjson.dumps(doc))
    target = copy
    for k in key[:-1]:
        target = target[k]
    target[key[-1]] = value
    return copy


def _use_everything(s: Session, tmp_path: Path) -> None:
    """What a program does with a loaded session; only the SDK's own errors may come out."""
    try:
        s.request()
        s.request(prefill="and")
        _ = s.usage.total_input, s.budget, s.summary
        for t in s.turns:
            _ = t.text, t.tool_use_ids, t.tool_result_ids, t.role
            _ = [block_tokens(b, s.log.encoding) for b in t.content]
            _ = t.usage.total_input if t.usage else None
        if s.pending is not None:
            _ = s.pending.usage.total_input, s.pending.text + ""
        again = tmp_path / "again.json"
        again.write_bytes(orjson.dumps(dict(s.to_document(), schema=1, version=1)))
        assert Session.load(again).to_document() == s.to_document()
        s.discard_pending()
        s.add_user("more")
        s.request()
    except SDKError:
        pass


def test_every_value_of_the_wrong_type_fails_on_load_by_name(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    rich_session().save(path)
    doc = orjson.loads(path.read_bytes())
    rejected = accepted = 0
    for where, key in _nodes(doc):
        original = doc
        for k in key:
            original = original[k]
        for value in SUBSTITUTES:
            if _kind(value) == _kind(original):
                continue
            path.write_bytes(orjson.dumps(_mutated(doc, key, value)))
            try:
                s = Session.load(path)
            except SessionFileError as e:
                rejected += 1
                if key[0] not in ("schema", "version"):
                    assert e.where is not None and where.startswith(e.where), (where, value, e)
                    assert f"bad {e.where}" in str(e) and str(path) in str(e)
                continue
            accepted += 1  # a nullable field set to null, a free-form value (a tool's input)...
            _use_everything(s, tmp_path)  # ...and then nothing fails with a bare TypeError
    assert rejected > 500 and accepted > 0, (rejected, accepted)


@pytest.mark.parametrize(
    ("key", "value", "where"),
    [
        (("turns", 3, "usage"), "abc", "turns[3].usage"),
        (("turns", 3, "usage", 1), "2", "turns[3].usage[1]"),
        (("turns", 3, "usage"), [1, 2, 3], "turns[3].usage"),
        (("turns", 1, "content", 1, "input"), "{}", "turns[1].content[1].input"),
        (("turns", 2, "content", 0, "content", 0, "text"), 5, "turns[2].content[0].content[0].text"),
        (("turns", 0, "pinned"), 1, "turns[0].pinned"),
        (("session", "scale"), "1.0", "session.scale"),
        (("session", "scale"), 0.0, "session.scale"),
        (("session", "encoding"), "no_such_encoding", "session.encoding"),
        (("session", "last_fit", 3), 1, "session.last_fit[3]"),
        (("pending", "text"), None, "pending.text"),
        (("turns", 0, "role"), "robot", "turns[0].role"),
    ],
)
def test_a_wrong_value_is_named_by_its_place(
    tmp_path: Path, key: tuple[str | int, ...], value: Any, where: str
) -> None:
    path = tmp_path / "chat.json"
    rich_session().save(path)
    doc = orjson.loads(path.read_bytes())
    path.write_bytes(orjson.dumps(_mutated(doc, key, value)))
    with pytest.raises(SessionFileError) as e:
        Session.load(path)
    assert e.value.where == where and f"bad {where}: " in str(e.value)


@pytest.mark.parametrize("schema", [1.0, True, "1", [1], None])
def test_only_the_integer_schema_is_accepted(tmp_path: Path, schema: Any) -> None:
    path = tmp_path / "chat.json"
    rich_session().save(path)
    doc = orjson.loads(path.read_bytes())
    path.write_bytes(orjson.dumps(dict(doc, schema=schema)))
    with pytest.raises(SessionFileError, match="is not the supported schema 1"):
        Session.load(path)
    path.write_bytes(orjson.dumps(dict(doc, version=1.0)))
    with pytest.raises(SessionFileError, match="'version' must be a positive int"):
        Session.load(path)


def test_a_block_that_could_not_be_loaded_cannot_enter_the_log() -> None:
    s = Session(None, model="m", context_window=5_000, reserve_output=100)
    with pytest.raises(TypeError, match=r"content\[0\]\.text"):
        s.add_user([{"type": "text", "text": 5}])
    with pytest.raises(TypeError, match=r"content\[0\]\.content"):
        s.add_tool_result("t", 5)  # type: ignore[arg-type]
    assert len(s.turns) == 0


# ---- one file, several names -----------------------------------------------------------


def test_saving_through_a_symlink_keeps_the_link_and_one_file(tmp_path: Path) -> None:
    real, link = tmp_path / "real.json", tmp_path / "link.json"
    link.symlink_to("real.json")  # relative, as links usually are
    a = rich_session()
    assert a.save(link) == 1  # the link dangles: the file it names is created
    assert link.is_symlink() and real.is_file() and not real.is_symlink()
    assert a.save(real) == 2  # the same file by its other name: no conflict
    b = Session.load(link)
    b.add_user("written through the link")
    assert b.save() == 3
    assert link.is_symlink() and os.readlink(link) == "real.json"
    assert Session.load(real).to_document() == Session.load(link).to_document() == b.to_document()
    assert Session.load(real).turns[-1].text == "written through the link"
    with pytest.raises(SessionConflict):  # a is behind: the two names are one file
        a.save(link)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json", "real.json.lock"]


def test_write_atomic_writes_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "target").write_bytes(b"old")
    (tmp_path / "name").symlink_to(tmp_path / "target")
    write_atomic(tmp_path / "name", b"new")
    assert (tmp_path / "name").is_symlink() and (tmp_path / "target").read_bytes() == b"new"


def test_spellings_of_one_path_are_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").symlink_to("a", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    s = rich_session()
    spellings = ["a/x.json", str(tmp_path / "a" / "x.json"), "a/../a/x.json", "./a//x.json", "b/x.json"]
    assert [s.save(p) for p in spellings] == [1, 2, 3, 4, 5]
    t = Session.load("b/x.json")
    t.add_user("more")
    assert t.save("a/x.json") == 6
    monkeypatch.chdir(tmp_path / "a")
    assert t.save() == 7  # the path was resolved once, not against a later working directory
    assert t.path == os.path.realpath(tmp_path / "a" / "x.json")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["x.json", "x.json.lock"]
    with pytest.raises(SessionConflict):  # a genuinely other session's file still conflicts
        rich_session().save("../b/x.json")
