"""Session files that are damaged, of the wrong types, or reached by more than one name."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdk.session import PendingAnswer, Session, SessionFileError, TokenUsage


def rich_session() -> Session:
    """A session that fills every field of the file, with text far from ASCII."""
    s = Session(None, model="m", system="système ユーザー", context_window=5_000, reserve_output=100)
    s.add_user("héllo 😀 ユーザー名", pin=True)
    s.add_assistant(
        [
            {"type": "thinking", "thinking": "penser…", "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "f", "input": {"é": ["ü😀", 1, None]}},
        ],
        usage=TokenUsage(3, 4, 5, 6),
    )
    s.add_tool_result("t1", [{"type": "text", "text": "résultat ✓"}], is_error=True)
    s.add_assistant("fini — done", usage=TokenUsage(1, 2, None, 0), request_estimate=40)
    s.add_user("et après ? " + "ユーザー名 " * 20)
    s.request()
    s.summary = (0, "résumé")
    s.pending = PendingAnswer(4, "à moitié", TokenUsage(7, None, 0, 1), 2, 55)
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
