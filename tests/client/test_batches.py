"""``client.map(requests, via="batches")`` against a faithful fake of the message batch
endpoints (:mod:`tests.client.batch_server`): batches cut by size, polled until they
end, results read as JSON Lines in any order and handed out in input order or as they
come, partial failures as results, cancellation when the map is left, a map killed
with SIGKILL that resumes following its batch instead of sending it again, and a
server that answers what it should not."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from sdk import BadRequestError, BatchPolling, BatchResultError, Client, MapResult, StreamProtocolError

from .batch_server import EVIL_RESULTS, FakeBatches, FakeOpenAIBatches
from .fault_server import Reply, Request, fault_server

pytestmark = pytest.mark.anyio

KEY = "sk-ant-batches-0123456789abcdef"
FAST = BatchPolling(first=0.01, maximum=0.05)
ROOT = Path(__file__).resolve().parents[2]


def batch_requests(n: int, *, big: frozenset[int] = frozenset()) -> list[dict[str, Any]]:
    """``n`` requests; those in ``big`` ask for more tokens than the fake allows."""
    return [
        {
            "model": "claude-m",
            "max_tokens": 9000 if i in big else 16,
            "messages": [{"role": "user", "content": f"q{i}"}],
        }
        for i in range(n)
    ]


def client(url: str, api: str = "messages") -> Client:
    if api == "openai":
        return Client(base_url=url + "/v1", api_key=KEY, backend="openai")
    return Client(base_url=url, api_key=KEY)


async def collect(c: Client, reqs: list[dict[str, Any]], **kw: Any) -> list[MapResult]:
    kw.setdefault("polling", FAST)
    with anyio.fail_after(30):
        async with c.map(reqs, via="batches", **kw) as results:
            return [r async for r in results]


@pytest.mark.parametrize("api", ["messages", "openai"])
async def test_batches_are_cut_by_size_and_results_come_back_in_input_order(
    anyio_backend: str, api: str
) -> None:
    fake: Any = (
        FakeBatches(expire=frozenset({"i7"}))
        if api == "messages"
        else FakeOpenAIBatches(expire=frozenset({"i7"}))
    )
    async with fault_server(fake) as server, client(server.url, api) as c:
        out = await collect(c, batch_requests(25, big=frozenset({3, 21})), batch_size=10)
    assert [r.index for r in out] == list(range(25))
    assert sorted(len(fake.requests[b]) for b in fake.created) == [5, 10, 10]  # (made concurrently)
    holding = {x["custom_id"]: b for b in fake.created for x in fake.requests[b]}
    for r in out:
        if r.index in (3, 21):
            assert isinstance(r.error, BadRequestError) and "max_tokens" in r.error.message, r
        elif r.index == 7:
            assert isinstance(r.error, BatchResultError) and r.error.reason == "expired"
            assert r.error.batch_id == holding["i7"]
        else:
            assert r.ok and r.message.text == f"answer to q{r.index}", r
    # every request was sent once, without "stream"
    sent = [x for b in fake.created for x in fake.requests[b]]
    assert sorted(x["custom_id"] for x in sent) == sorted(f"i{i}" for i in range(25))
    assert all("stream" not in x.get("params", x.get("body")) for x in sent)
    if api == "messages":
        # results were read from this client's base URL, never from the results_url given
        assert all(
            p.startswith(("POST /v1/messages/batches", "GET /v1/messages/batches")) for p in fake.paths
        )
        assert EVIL_RESULTS not in " ".join(fake.paths)
    else:
        assert all(
            x["body"]["messages"][0]["role"] == "user" and x["url"] == "/v1/chat/completions" for x in sent
        )
    assert not fake.cancelled


async def test_unordered_results_come_as_each_batch_ends() -> None:
    fake = FakeBatches()
    fake.hold = True
    async with fault_server(fake) as server, client(server.url) as c:
        with anyio.fail_after(30):
            async with c.map(
                batch_requests(9), via="batches", batch_size=3, ordered=False, polling=FAST
            ) as results:
                while len(fake.created) < 3:
                    await anyio.sleep(0.01)
                holding = {x["custom_id"]: b for b in fake.created for x in fake.requests[b]}
                first = holding["i0"]
                for b in fake.created:
                    if b != first:
                        fake.end(b)  # every batch but the one holding request 0
                early = [await results.__anext__() for _ in range(6)]
                fake.end(first)
                late = [r async for r in results]
    assert sorted(r.index for r in early) == [i for i in range(9) if holding[f"i{i}"] != first]
    assert sorted(r.index for r in late) == [i for i in range(9) if holding[f"i{i}"] == first]
    assert all(r.ok for r in early + late)


async def test_leaving_the_map_cancels_its_running_batches(tmp_path: Path) -> None:
    fake = FakeBatches(polls_to_end=1)
    fake.hold = True  # nothing ends by itself
    checkpoint = tmp_path / "map.jsonl"
    async with fault_server(fake) as server, client(server.url) as c:
        with anyio.fail_after(30):
            async with c.map(
                batch_requests(6), via="batches", batch_size=3, polling=FAST, checkpoint=checkpoint
            ) as results:
                while len(fake.created) < 2 or min(fake.polls[b] for b in fake.created) < 2:
                    await anyio.sleep(0.01)
                # the consumer gives up: leaving the block cancels what still runs
    assert sorted(fake.cancelled) == sorted(fake.created)
    lines = [orjson.loads(x) for x in checkpoint.read_bytes().splitlines()]
    assert sorted(x["batch"] for x in lines if x.get("canceled")) == sorted(fake.created)
    assert results.progress().done == 0
    # started again, the cancelled batches are not followed: their requests go out afresh
    fake.hold = False
    async with fault_server(fake) as server, client(server.url) as c:
        out = await collect(c, batch_requests(6), batch_size=3, checkpoint=checkpoint)
    assert all(r.ok for r in out) and len(fake.created) == 4


async def test_a_map_killed_mid_batch_resumes_following_it_instead_of_sending_it_again(
    tmp_path: Path,
) -> None:
    fake = FakeBatches()
    fake.hold = True
    checkpoint = tmp_path / "map.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    async with fault_server(fake) as server:
        cmd = [sys.executable, "-m", "tests.client.batch_worker", server.url, str(checkpoint), "10"]
        with anyio.fail_after(60):
            async with await anyio.open_process(cmd, env=env, cwd=ROOT) as proc:
                while len(fake.created) < 3 or min(fake.polls[b] for b in fake.created) < 1:
                    await anyio.sleep(0.02)
                holding = {x["custom_id"]: b for b in fake.created for x in fake.requests[b]}
                fake.end(holding["i0"])  # the first batch ends: its results are read and saved
                while b"i3" not in checkpoint.read_bytes() and b'"index":3' not in checkpoint.read_bytes():
                    await anyio.sleep(0.02)
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
            assert len(fake.created) == 3  # 10 requests, 4 a batch
            fake.hold = False
            done = await anyio.run_process(cmd, env=env, cwd=ROOT, check=False)
    out = done.stdout.decode().split("\n")
    assert out[-2] == "done", done.stderr.decode()[-3000:]
    got = dict(line.split() for line in out[:-2])
    assert sorted(map(int, got)) == list(range(10))
    assert {got[str(i)] for i in range(4)} == {"restored"}  # saved before the kill
    assert {got[str(i)] for i in range(4, 10)} == {"ok"}  # from the batches it followed
    assert len(fake.created) == 3  # nothing was sent again
    assert not fake.cancelled


async def test_a_changed_request_is_sent_again_not_matched_to_its_old_batch(tmp_path: Path) -> None:
    fake = FakeBatches()
    checkpoint = tmp_path / "map.jsonl"
    async with fault_server(fake) as server, client(server.url) as c:
        reqs = batch_requests(4)
        first = await collect(c, reqs[:2], checkpoint=checkpoint)  # one batch for indexes 0, 1
        assert all(r.ok for r in first)
        # a line recording a batch for 2 and 3 that never ended (a crash)
        with checkpoint.open("ab") as f:
            f.write(orjson.dumps({"batch": "msgbatch_9999", "indexes": [2, 3], "keys": "0" * 32}) + b"\n")
        out = await collect(c, reqs, checkpoint=checkpoint)
    assert [r.from_checkpoint for r in out] == [True, True, False, False]
    assert all(r.ok for r in out)
    assert "GET /v1/messages/batches/msgbatch_9999" not in fake.paths  # its digest does not match
    assert len(fake.created) == 2


async def test_what_a_hostile_server_answers_fails_the_requests_not_the_map() -> None:
    async def handler(req: Request, reply: Reply) -> None:
        path = req.path
        if req.method == "POST" and path == "/v1/messages/batches":
            ids = [r["custom_id"] for r in req.json()["requests"]]
            bid = "../../admin" if "i0" in ids else "msgbatch_1"  # (the other two share an id)
            await reply.respond(200, {"id": bid, "processing_status": "in_progress"})
        elif path == "/v1/messages/batches/msgbatch_1":
            await reply.respond(200, {"id": "msgbatch_1", "processing_status": "ended"})
        elif path == "/v1/messages/batches/msgbatch_1/results":
            await reply.start("application/x-ndjson")
            lines = [
                b"not json",
                orjson.dumps({"custom_id": "i2", "result": {"type": "succeeded", "message": {"foo": 1}}}),
                orjson.dumps({"custom_id": "i3", "result": {"type": "mystery"}}),
                orjson.dumps({"custom_id": "i99", "result": {"type": "succeeded"}}),  # not ours
                orjson.dumps({"custom_id": "../i4", "result": {"type": "succeeded"}}),
                orjson.dumps(
                    {
                        "custom_id": "i4",
                        "result": {
                            "type": "succeeded",
                            "message": {
                                "type": "message",
                                "role": "assistant",
                                "content": [{"type": "text", "text": "fine"}],
                            },
                        },
                    }
                ),
                orjson.dumps(
                    {"custom_id": "i4", "result": {"type": "expired"}}
                ),  # said twice: the first stands
            ]
            await reply.chunk(b"\n".join(lines) + b"\n")
            await reply.end()
        else:
            await reply.respond(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})

    async with fault_server(handler) as server, client(server.url) as c:
        out = await collect(c, batch_requests(6), batch_size=2)
    by = {r.index: r for r in out}
    # the first batch's id would have gone into a URL: refused, its requests failed
    assert isinstance(by[0].error, StreamProtocolError) and isinstance(by[1].error, StreamProtocolError)
    assert isinstance(by[2].error, StreamProtocolError)  # a "message" that is none
    assert isinstance(by[3].error, BatchResultError) and "mystery" in by[3].error.reason
    assert by[4].ok and by[4].message.text == "fine"
    assert isinstance(by[5].error, BatchResultError) and by[5].error.reason == "missing"


async def test_via_is_checked() -> None:
    async with Client(base_url="http://127.0.0.1:9/v1", api_key=KEY, backend="openai") as c:
        with pytest.raises(ValueError, match="via"):
            c.map([], via="carrier-pigeon")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="batch_size"):
            c.map([], via="batches", batch_size=60_000)  # over OpenAI's 50,000


async def test_an_input_that_fails_midway_ends_the_map_with_its_error_after_what_was_read(
    tmp_path: Path,
) -> None:
    fake = FakeBatches()
    checkpoint = tmp_path / "map.jsonl"
    # a recorded batch for 2 and 3 whose requests the failing input never reaches
    checkpoint.write_bytes(
        orjson.dumps({"batch": "msgbatch_7777", "indexes": [2, 3], "keys": "0" * 32}) + b"\n"
    )

    def requests() -> Any:
        yield from batch_requests(3)
        raise RuntimeError("the source broke")

    got: list[MapResult] = []
    async with fault_server(fake) as server, client(server.url) as c:
        with anyio.fail_after(30), pytest.raises(RuntimeError, match="the source broke"):
            async with c.map(requests(), via="batches", polling=FAST, checkpoint=checkpoint) as results:
                async for r in results:  # every result of what was read, then the input's error
                    got.append(r)
    assert sorted(r.index for r in got) == [0, 1, 2]
    assert all(r.ok for r in got)
    assert "GET /v1/messages/batches/msgbatch_7777" not in fake.paths
