"""A fake of the Messages API's message batches, faithful in what a client can see:

- ``POST /v1/messages/batches`` checks the body as the API does (1..100,000 requests,
  unique ``custom_id`` of 1-64 word characters, ``params`` with ``model``,
  ``max_tokens`` and ``messages``) and answers the batch object, ``in_progress``;
- ``GET /v1/messages/batches/{id}`` answers the batch object; a batch ends once it has
  been asked about ``polls_to_end`` times (or when the test calls :meth:`end`): each
  request then succeeded, errored (``max_tokens`` over 4096: an
  ``invalid_request_error``) or expired (its custom id in ``expire``; every request left,
  where the whole batch expires), and ``request_counts`` says how many of each;
- ``POST .../cancel`` makes it ``canceling``; it ends at the next poll, its requests
  canceled;
- ``GET .../results`` streams the results as JSON Lines, in no particular order, cut
  into pieces that split lines; 400 before the batch has ended;
- ``results_url`` points somewhere no client should send its key.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from .fault_server import Reply, Request

_CUSTOM = re.compile(r"[a-zA-Z0-9_-]{1,64}")
EVIL_RESULTS = "http://169.254.169.254/latest/results"


@dataclass
class FakeBatches:
    polls_to_end: int = 2
    expire: frozenset[str] = frozenset()
    expire_all: bool = False
    max_requests: int = 100_000
    seed: int = 5
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    polls: Counter[str] = field(default_factory=Counter)
    paths: list[str] = field(default_factory=list)
    hold: bool = False  # while set, no batch ends by polling

    async def __call__(self, req: Request, reply: Reply) -> None:
        self.paths.append(f"{req.method} {req.path}")
        parts = req.path.strip("/").split("/")
        if parts[:3] != ["v1", "messages", "batches"]:
            await error(reply, 404, "not_found_error", "no such route")
            return
        if req.method == "POST" and len(parts) == 3:
            await self.create(req, reply)
        elif len(parts) >= 4 and parts[3] not in self.batches:
            await error(reply, 404, "not_found_error", f"no batch {parts[3]}")
        elif req.method == "GET" and len(parts) == 4:
            bid = parts[3]
            self.polls[bid] += 1
            due = not self.hold and self.polls[bid] >= self.polls_to_end
            if due or self.batches[bid]["processing_status"] == "canceling":
                self.end(bid)
            await reply.respond(200, self.batches[bid])
        elif req.method == "POST" and len(parts) == 5 and parts[4] == "cancel":
            batch = self.batches[parts[3]]
            self.cancelled.append(parts[3])
            if batch["processing_status"] == "in_progress":
                batch["processing_status"] = "canceling"
            await reply.respond(200, batch)
        elif req.method == "GET" and len(parts) == 5 and parts[4] == "results":
            await self.send_results(parts[3], reply)
        else:
            await error(reply, 405, "invalid_request_error", "no such method")

    async def create(self, req: Request, reply: Reply) -> None:
        body = req.json()
        reqs = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(reqs, list) or not 1 <= len(reqs) <= self.max_requests:
            await error(reply, 400, "invalid_request_error", "requests: 1 to 100,000 items")
            return
        ids = [r.get("custom_id") for r in reqs]
        if len(set(ids)) != len(ids) or not all(isinstance(i, str) and _CUSTOM.fullmatch(i) for i in ids):
            await error(reply, 400, "invalid_request_error", "custom_id: unique, 1-64 word characters")
            return
        for r in reqs:
            p = r.get("params")
            if (
                not isinstance(p, dict)
                or not {"model", "max_tokens", "messages"} <= p.keys()
                or "stream" in p
            ):
                await error(reply, 400, "invalid_request_error", "params: a Messages request")
                return
        bid = f"msgbatch_{len(self.created) + 1:04d}"
        self.created.append(bid)
        self.requests[bid] = reqs
        self.batches[bid] = {
            "id": bid,
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": {
                "processing": len(reqs),
                "succeeded": 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2026-12-05T00:00:00Z",
            "expires_at": "2026-12-06T00:00:00Z",
            "ended_at": None,
            "cancel_initiated_at": None,
            "results_url": None,
        }
        await reply.respond(200, self.batches[bid])

    def end(self, bid: str) -> None:
        batch = self.batches[bid]
        if batch["processing_status"] == "ended":
            return
        canceling = batch["processing_status"] == "canceling"
        out: list[dict[str, Any]] = []
        for r in self.requests[bid]:
            cid, p = r["custom_id"], r["params"]
            if canceling:
                result: dict[str, Any] = {"type": "canceled"}
            elif self.expire_all or cid in self.expire:
                result = {"type": "expired"}
            elif p["max_tokens"] > 4096:
                result = {
                    "type": "errored",
                    "error": {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": "max_tokens: at most 4096"},
                    },
                }
            else:
                text = p["messages"][0]["content"]
                result = {
                    "type": "succeeded",
                    "message": {
                        "id": f"msg_{cid}",
                        "type": "message",
                        "role": "assistant",
                        "model": p["model"],
                        "content": [{"type": "text", "text": f"answer to {text}"}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": 7, "output_tokens": 3},
                    },
                }
            out.append({"custom_id": cid, "result": result})
        random.Random(self.seed).shuffle(out)
        self.results[bid] = out
        counts = Counter(x["result"]["type"] for x in out)
        batch["request_counts"] = {
            "processing": 0,
            **{k: counts.get(k, 0) for k in ("succeeded", "errored", "canceled", "expired")},
        }
        batch["processing_status"] = "ended"
        batch["ended_at"] = "2026-12-05T01:00:00Z"
        batch["results_url"] = EVIL_RESULTS

    async def send_results(self, bid: str, reply: Reply) -> None:
        if self.batches[bid]["processing_status"] != "ended":
            await error(reply, 400, "invalid_request_error", "the batch has not ended")
            return
        data = b"".join(orjson.dumps(x) + b"\n" for x in self.results[bid])
        await reply.start("application/binary")
        step = 37  # pieces that split lines
        for i in range(0, len(data), step):
            await reply.chunk(data[i : i + step])
        await reply.end()


async def error(reply: Reply, status: int, kind: str, message: str) -> None:
    await reply.respond(status, {"type": "error", "error": {"type": kind, "message": message}})


@dataclass
class FakeOpenAIBatches:
    """The same for OpenAI's ``/v1/files`` and ``/v1/batches``: the requests come as an
    uploaded JSON Lines file (multipart), a batch goes ``validating``, ``in_progress``,
    then ``completed`` (or ``cancelled`` after a cancel) once asked about
    ``polls_to_end`` times; its answers and its errors are two files (an invalid
    request: a 400 ``response``; an expired one: the ``batch_expired`` error code)."""

    polls_to_end: int = 2
    expire: frozenset[str] = frozenset()
    hold: bool = False
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    polls: Counter[str] = field(default_factory=Counter)
    paths: list[str] = field(default_factory=list)

    async def __call__(self, req: Request, reply: Reply) -> None:
        self.paths.append(f"{req.method} {req.path}")
        parts = req.path.strip("/").split("/")
        if req.method == "POST" and parts == ["v1", "files"]:
            await self.upload(req, reply)
        elif (
            req.method == "GET" and len(parts) == 4 and parts[:2] == ["v1", "files"] and parts[3] == "content"
        ):
            data = self.files.get(parts[2])
            if data is None:
                await error(reply, 404, "not_found_error", "no such file")
                return
            await reply.start("application/octet-stream")
            for i in range(0, len(data), 41):
                await reply.chunk(data[i : i + 41])
            await reply.end()
        elif req.method == "POST" and parts == ["v1", "batches"]:
            body = req.json()
            fid = body.get("input_file_id")
            if fid not in self.files or body.get("endpoint") != "/v1/chat/completions":
                await error(reply, 400, "invalid_request_error", "input_file_id and endpoint")
                return
            bid = f"batch_{len(self.created) + 1:04d}"
            self.created.append(bid)
            self.requests[bid] = [orjson.loads(x) for x in self.files[fid].splitlines() if x.strip()]
            self.batches[bid] = {
                "id": bid,
                "object": "batch",
                "status": "validating",
                "output_file_id": None,
                "error_file_id": None,
            }
            await reply.respond(200, self.batches[bid])
        elif len(parts) >= 3 and parts[:2] == ["v1", "batches"] and parts[2] in self.batches:
            bid = parts[2]
            batch = self.batches[bid]
            if req.method == "POST" and parts[3:] == ["cancel"]:
                self.cancelled.append(bid)
                if batch["status"] in ("validating", "in_progress"):
                    batch["status"] = "cancelling"
            elif req.method == "GET" and len(parts) == 3:
                self.polls[bid] += 1
                if batch["status"] == "validating":
                    batch["status"] = "in_progress"
                elif batch["status"] == "cancelling" or (
                    not self.hold and self.polls[bid] >= self.polls_to_end
                ):
                    self.end(bid)
            await reply.respond(200, batch)
        else:
            await error(reply, 404, "not_found_error", "no such route")

    async def upload(self, req: Request, reply: Reply) -> None:
        ctype = req.headers.get("content-type", "")
        boundary = ctype.partition("boundary=")[2].encode()
        if not ctype.startswith("multipart/form-data") or not boundary:
            await error(reply, 400, "invalid_request_error", "a multipart upload is required")
            return
        fields: dict[str, bytes] = {}
        for part in req.body.split(b"--" + boundary):
            head, _, data = part.partition(b"\r\n\r\n")
            name = re.search(rb'name="([^"]+)"', head)
            if name:
                fields[name.group(1).decode()] = data.removesuffix(b"\r\n")
        if fields.get("purpose") != b"batch" or "file" not in fields:
            await error(reply, 400, "invalid_request_error", "purpose=batch and a file")
            return
        fid = f"file-{len(self.files) + 1:04d}"
        self.files[fid] = fields["file"]
        await reply.respond(200, {"id": fid, "object": "file", "purpose": "batch"})

    def end(self, bid: str) -> None:
        batch = self.batches[bid]
        cancelling = batch["status"] == "cancelling"
        out, errors = [], []
        for r in self.requests[bid]:
            cid, body = r["custom_id"], r["body"]
            if cancelling:
                errors.append(
                    {
                        "custom_id": cid,
                        "response": None,
                        "error": {"code": "batch_cancelled", "message": "cancelled"},
                    }
                )
            elif cid in self.expire:
                errors.append(
                    {
                        "custom_id": cid,
                        "response": None,
                        "error": {"code": "batch_expired", "message": "expired"},
                    }
                )
            elif body.get("max_tokens", 0) > 4096:
                err = {
                    "error": {
                        "type": "invalid_request_error",
                        "message": "max_tokens is too large",
                        "code": None,
                    }
                }
                errors.append(
                    {"custom_id": cid, "response": {"status_code": 400, "body": err}, "error": None}
                )
            else:
                text = body["messages"][-1]["content"]
                completion = {
                    "id": f"chatcmpl-{cid}",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": f"answer to {text}"},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
                }
                out.append(
                    {
                        "id": f"batch_req_{cid}",
                        "custom_id": cid,
                        "response": {"status_code": 200, "body": completion},
                        "error": None,
                    }
                )
        random.Random(3).shuffle(out)
        for name, rows in (("output_file_id", out), ("error_file_id", errors)):
            if rows:
                fid = f"file-{len(self.files) + 1:04d}"
                self.files[fid] = b"".join(orjson.dumps(x) + b"\n" for x in rows)
                batch[name] = fid
        batch["status"] = "cancelled" if cancelling else "completed"
