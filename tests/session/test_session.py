"""Session streaming, cursor, resume and long inputs against the in-process fake server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.session import PendingAnswer, Session, SessionBudgetError, SessionError
from tests.session.fakes import FakeClient, Reply

pytestmark = pytest.mark.anyio

ANSWER = ["The ", "answer ", "is ", "forty", "-two", ", ", "as ", "always", "."]


def _last_message_text(request: dict[str, Any]) -> str:
    c = request["messages"][-1]["content"]
    return c if isinstance(c, str) else "".join(b.get("text", "") for b in c)


async def test_stream_logs_user_and_answer_with_usage() -> None:
    client = FakeClient(
        lambda req: Reply(
            ANSWER,
            usage={"input_tokens": 7, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 100},
        )
    )
    s = Session(client, model="m", system="Be brief.", context_window=10_000, reserve_output=500)
    got = []
    async with s.stream("What is the answer?") as r:
        got = [t async for t in r.text_deltas()]
    assert "".join(got) == "".join(ANSWER)
    assert [t.kind for t in s.turns] == ["user", "assistant"]
    answer = s.turns[1]
    assert answer.text == "".join(ANSWER)
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.cache_creation_input_tokens) == (7, 5)
    assert answer.usage.cache_read_input_tokens == 100
    assert answer.usage.total_input == 112
    assert answer.usage.output_tokens == len(ANSWER)
    assert answer.request_estimate == r.report.tokens if r.report else False
    assert s.pending is None
    req = client.requests[0]
    assert req["system"] == [{"type": "text", "text": "Be brief."}]
    assert req["max_tokens"] == 500
    assert "cache_control" not in str(req)  # not the hosted API


async def test_hosted_backend_gets_breakpoints_on_the_stable_prefix() -> None:
    client = FakeClient(lambda req: Reply(["ok"]))
    client.hosted = True
    # (a minimum of 1 token: the prompt is far below any model's)
    s = Session(
        client, model="m", system="sys", context_window=10_000, reserve_output=100, cache_min_tokens=1
    )
    s.add_user("pinned context", pin=True)
    s.add_assistant("noted")
    async with s.stream("q") as r:
        await r.final_message()
    req = client.requests[0]
    assert req["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert req["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in s.turns[0].content[0]  # the log itself is untouched


async def test_calling_stream_while_an_answer_is_pending_is_refused() -> None:
    client = FakeClient(lambda req: Reply(ANSWER, die_after=3))
    s = Session(client, model="m", context_window=10_000, reserve_output=100)
    with pytest.raises(Exception, match="cut the stream"):
        async with s.stream("q") as r:
            async for _ in r.text_deltas():
                pass
    assert s.pending == PendingAnswer(
        after=0,
        text="".join(ANSWER[:3]),
        usage=s.pending.usage,
        requests=1,
        request_estimate=s.pending.request_estimate,
    )
    with pytest.raises(SessionError, match="pending"):
        s.stream("another")


@pytest.mark.parametrize("echo", [False, True, None])
async def test_resume_after_a_crash_completes_the_turn_without_duplicates(
    tmp_path: Path, echo: bool | None
) -> None:
    """The process dies mid-answer (the stream is cut after a checkpoint); a new process
    loads the file and resumes; the consumer sees every character once."""
    path = tmp_path / "chat.json"
    first = FakeClient(lambda req: Reply(ANSWER, die_after=4))
    s = Session(first, model="m", context_window=10_000, reserve_output=100)
    s.save(path)
    seen: list[str] = []
    with pytest.raises(Exception, match="cut the stream"):
        async with s.stream("What is the answer?", save_every=1) as r:
            async for t in r.text_deltas():
                seen.append(t)
    assert "".join(seen) == "".join(ANSWER[:4])

    received = "".join(ANSWER[:4])  # "The answer is forty"

    def script(req: dict[str, Any]) -> Reply:
        prefill = req["messages"][-1]
        assert prefill["role"] == "assistant"
        rest = ANSWER[4:]
        if echo:  # a llama-server style echo of the prefill, split across deltas
            assert prefill["content"] == received
            return Reply([received[:5], received[5:], *rest])
        assert prefill["content"] == received.rstrip()
        return Reply(rest)

    second = FakeClient(script, prefill_echo=echo)
    loaded = Session.load(path, second)
    assert loaded.pending is not None and loaded.pending.text == received
    async with loaded.resume() as r:
        async for t in r.text_deltas():
            seen.append(t)
    assert "".join(seen) == "".join(ANSWER)
    assert loaded.pending is None
    assert [t.kind for t in loaded.turns] == ["user", "assistant"]
    assert loaded.turns[1].text == "".join(ANSWER)
    cont = second.requests[0]
    assert cont["max_tokens"] < 100  # what was already generated is not asked for again
    usage = loaded.turns[1].usage
    assert usage is not None and usage.output_tokens is not None and usage.output_tokens >= len(ANSWER) - 4


async def test_resume_when_the_server_re_emits_the_dropped_trailing_space() -> None:
    received = "".join(ANSWER[:2])  # "The answer " ends in a space the prefill must drop
    client = FakeClient(lambda req: Reply(ANSWER, die_after=2))
    s = Session(client, model="m", context_window=10_000, reserve_output=100)
    seen: list[str] = []
    with pytest.raises(Exception, match="cut the stream"):
        async with s.stream("q") as r:
            async for t in r.text_deltas():
                seen.append(t)
    assert "".join(seen) == received
    client.script = lambda req: Reply([" is", " forty-two."])
    async with s.resume() as r:
        seen += [t async for t in r.text_deltas()]
    assert "".join(seen) == "The answer is forty-two."
    assert s.turns[1].text == "The answer is forty-two."


async def test_leaving_the_block_early_keeps_the_answer_pending() -> None:
    client = FakeClient(lambda req: Reply(ANSWER))
    s = Session(client, model="m", context_window=10_000, reserve_output=100)
    async with s.stream("q") as r:
        async for t in r.text_deltas():
            if t == "is ":
                break
    assert s.pending is not None and s.pending.text == "The answer is "
    assert len(s.turns) == 1
    client.script = lambda req: Reply(ANSWER[3:])
    async with s.resume() as r:
        await r.final_message()
    assert s.turns[1].text == "".join(ANSWER)


async def test_discard_pending_keeps_the_received_text() -> None:
    client = FakeClient(lambda req: Reply(ANSWER, die_after=2))
    s = Session(client, model="m", context_window=10_000, reserve_output=100)
    with pytest.raises(Exception, match="cut the stream"):
        async with s.stream("q") as r:
            await r.final_message()
    turn = s.discard_pending()
    assert turn is not None and turn.text == "The answer "
    assert s.pending is None


async def test_overflow_is_raised_before_sending() -> None:
    client = FakeClient(lambda req: Reply(["x"]))
    s = Session(client, model="m", context_window=200, reserve_output=100)
    s.add_user("pinned " * 200, pin=True)
    with pytest.raises(SessionBudgetError) as e:
        async with s.stream("q"):
            pass
    assert client.requests == []
    assert e.value.required > e.value.budget == 100
    assert s.pending is None and s.turns[-1].text == "q"  # the question is kept; nothing pends
    s.pin(0, False)
    async with s.stream() as r:  # the log as it is: the question gets its answer
        await r.final_message()
    assert s.turns[-1].text == "x" and r.report is not None and r.report.elided == (0,)


async def test_long_conversation_reports_its_elisions() -> None:
    client = FakeClient(lambda req: Reply(["word " * 30]))
    s = Session(client, model="m", system="sys", context_window=1500, reserve_output=200)
    reports = []
    for i in range(40):
        async with s.stream(f"question {i}: " + "detail " * 20) as r:
            await r.final_message()
        assert r.report is not None
        reports.append(r.report)
        assert r.report.tokens <= r.report.budget
    last = reports[-1]
    assert last.elided and last.marker is not None
    assert f"{len(last.elided)} earlier turns" in last.marker
    first_msg = client.requests[-1]["messages"][0]
    assert first_msg["content"][0]["text"] == last.marker
    assert len(s.turns) == 80  # nothing is ever removed from the log


async def test_summarize_replaces_the_marker_text_with_a_summary() -> None:
    def script(req: dict[str, Any]) -> Reply:
        if "Summarize" in str(req.get("system", "")):
            return Reply(["They talked about numbers."])
        return Reply(["word " * 30])

    client = FakeClient(script)
    s = Session(client, model="m", context_window=1500, reserve_output=200, summarize=True, summary_tokens=50)
    for i in range(30):
        async with s.stream(f"question {i}: " + "detail " * 20) as r:
            await r.final_message()
        assert r.report is not None and r.report.tokens <= r.report.budget
    assert r.report.summarized
    stream_reqs = [q for q in client.requests if "Summarize" not in str(q.get("system", ""))]
    assert "They talked about numbers." in _first_text(stream_reqs[-1])


def _first_text(req: dict[str, Any]) -> str:
    return str(req["messages"][0]["content"][0]["text"])


async def test_add_document_fits_when_small() -> None:
    s = Session(
        FakeClient(lambda req: Reply(["unused"])), model="m", context_window=10_000, reserve_output=100
    )
    text = "A paragraph about seams.\n\n" * 40
    rep = await s.add_document(text, chunk_tokens=64)
    assert rep.mode == "fit" and rep.chunks > 1
    assert s.turns[rep.turn].text == text  # the chunks tile the document
    assert s.turns[rep.turn].pinned


async def test_add_document_maps_when_too_big_with_bounded_concurrency() -> None:
    def script(req: dict[str, Any]) -> Reply:
        text = _last_message_text(req)
        return Reply([f"fact from {text[text.index('[part') :].split(']')[0]}]"])

    client = FakeClient(script)
    s = Session(client, model="m", context_window=2_000, reserve_output=100)
    text = "".join(f"Section {i}. " + "The seam holds. " * 60 + "\n\n" for i in range(12))
    rep = await s.add_document(text, chunk_tokens=256, concurrency=3)
    assert rep.mode == "map"
    assert rep.document_tokens > s.budget
    assert 1 < client.max_active <= 3
    turn = s.turns[rep.turn]
    parts = [b["text"] for b in turn.content[1:]]
    assert len(parts) == rep.chunks == len(client.requests)
    assert parts == [
        f"[part {i + 1}/{rep.chunks}] fact from [part {i + 1}/{rep.chunks}]" for i in range(rep.chunks)
    ]
    s.fit()  # the mapped results fit the window


async def test_a_failing_map_step_leaves_the_log_unchanged() -> None:
    def script(req: dict[str, Any]) -> Reply:
        if "[part 3/" in _last_message_text(req):
            raise RuntimeError("server error")
        return Reply(["ok"])

    s = Session(FakeClient(script), model="m", context_window=2_000, reserve_output=100)
    with pytest.raises(RuntimeError):
        await s.add_document("The seam holds. " * 1000, chunk_tokens=256)
    assert len(s.turns) == 0
