"""The two batch APIs a batch map speaks (:mod:`._batches`): how a batch is made, asked
about, read and cancelled.

- **Messages** (Anthropic's message batches): ``POST {base}/v1/messages/batches`` with
  the requests inline; ``GET .../{id}`` until ``processing_status`` is ``ended``; the
  results as JSON Lines from ``GET .../{id}/results``; ``POST .../{id}/cancel``.
- **OpenAI** (``/v1/batches``, where a server implements it): the requests uploaded as
  a JSON Lines file (``POST {base}/files``, ``purpose=batch``), then ``POST
  {base}/batches`` naming it; ``GET {base}/batches/{id}`` until it is ``completed``,
  ``failed``, ``expired`` or ``cancelled``; the answers and the errors as two JSON Lines
  files (``GET {base}/files/{id}/content``); ``POST {base}/batches/{id}/cancel``.

Each reads what the server says as untrusted: an id goes into a URL only if it is a
plain token, and files are read from the client's own base URL.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from .._errors import APIError, BatchResultError, StreamProtocolError, api_error_from_body
from ..stream import Message
from ._map import MAX_LINE_BYTES

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["BATCH_ID", "BatchWire", "MessagesBatches", "OpenAIBatches", "Outcome", "wire_for"]

BATCH_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")  # an id fit for a URL path

Outcome = Message | Exception
"""A request's outcome in a batch: its answer, or why it has none."""


def _object(raw: bytes, what: str) -> dict[str, Any]:
    """A batch (or file) object with a usable ``id``."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise StreamProtocolError(f"a {what} answer is not JSON", event=raw[:200]) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str) or not BATCH_ID.fullmatch(obj["id"]):
        raise StreamProtocolError(f"a {what} answer has no usable id", event=obj)
    return obj


class BatchWire:
    """One batch API (see the module doc)."""

    max_requests: int
    max_bytes: int

    def __init__(self, client: Client) -> None:
        self.client = client
        self.sender = client._sender

    def params(self, request: Mapping[str, Any]) -> bytes:
        """One request as the API takes it in a batch (JSON)."""
        return orjson.dumps(self.client._backend.body(request, stream=False))

    async def create(self, items: Sequence[tuple[int, bytes]]) -> str:
        """Make a batch of ``(index, params)``; its id."""
        raise NotImplementedError

    async def ended(self, bid: str) -> bool:
        raise NotImplementedError

    def results(self, bid: str) -> AsyncIterator[tuple[str, Outcome]]:
        """``(custom id, outcome)`` for each result line, in the server's order."""
        raise NotImplementedError

    async def cancel(self, bid: str) -> None:
        raise NotImplementedError

    async def lines(self, path: str) -> AsyncIterator[dict[str, Any]]:
        """The JSON objects of a JSON Lines answer, a line at a time (a line that is not
        one is skipped; one over ``MAX_LINE_BYTES`` ends the read with an error)."""
        resp = await self.sender.send("GET", path, stream=True, events=False)
        try:
            buf = bytearray()
            async for chunk in self.sender.chunks(resp):
                buf += chunk
                start = 0
                while (nl := buf.find(b"\n", start)) >= 0:
                    rec = _line(buf[start:nl])
                    start = nl + 1
                    if rec is not None:
                        yield rec
                del buf[:start]
                if len(buf) > MAX_LINE_BYTES:
                    raise StreamProtocolError(f"a line of {path} is over {MAX_LINE_BYTES} bytes")
            rec = _line(buf)
            if rec is not None:
                yield rec
        finally:
            await resp.aclose()


def _line(raw: bytes | bytearray) -> dict[str, Any] | None:
    if not raw.strip():
        return None
    try:
        rec = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return rec if isinstance(rec, dict) else None


class MessagesBatches(BatchWire):
    max_requests = 100_000
    max_bytes = 256_000_000

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self.path = client._backend.create_path + "/batches"

    async def create(self, items: Sequence[tuple[int, bytes]]) -> str:
        parts = [b'{"requests":[']
        for n, (i, body) in enumerate(items):
            parts.append(b'%s{"custom_id":"i%d","params":%s}' % (b"," if n else b"", i, body))
        parts.append(b"]}")
        content = b"".join(parts)
        resp = await self.sender.send(
            "POST", self.path, content=content, timeout=max(600.0, len(content) / 1e6)
        )
        return str(_object(resp.content, "batch")["id"])

    async def ended(self, bid: str) -> bool:
        resp = await self.sender.send("GET", f"{self.path}/{bid}")
        return _object(resp.content, "batch").get("processing_status") == "ended"

    async def results(self, bid: str) -> AsyncIterator[tuple[str, Outcome]]:
        async for rec in self.lines(f"{self.path}/{bid}/results"):
            cid, result = rec.get("custom_id"), rec.get("result")
            if not isinstance(cid, str):
                continue
            kind = result.get("type") if isinstance(result, dict) else None
            outcome: Outcome
            if kind == "succeeded":
                assert isinstance(result, dict)
                try:
                    outcome = self.client._backend.message(result.get("message"))
                except StreamProtocolError as e:
                    outcome = e
            elif kind == "errored":
                assert isinstance(result, dict)
                outcome = api_error_from_body(result.get("error"))
            elif kind in ("canceled", "expired"):
                outcome = BatchResultError(str(kind), bid)
            else:
                outcome = BatchResultError(f"an unknown result type {kind!r}", bid)
            yield cid, outcome

    async def cancel(self, bid: str) -> None:
        await self.sender.send("POST", f"{self.path}/{bid}/cancel", body={})


# OpenAI's batch statuses that end a batch, and the error codes of requests it did not run.
_OPENAI_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
_OPENAI_UNRUN = {"batch_expired": "expired", "batch_cancelled": "canceled"}


class OpenAIBatches(BatchWire):
    max_requests = 50_000
    max_bytes = 200_000_000

    def __init__(self, client: Client) -> None:
        super().__init__(client)
        self._files: dict[str, tuple[str | None, ...]] = {}  # batch id -> its output and error files
        self._failed: dict[str, object] = {}  # batch id -> why it failed as a whole

    async def create(self, items: Sequence[tuple[int, bytes]]) -> str:
        endpoint = "/v1" + self.client._backend.create_path
        lines = [
            b'{"custom_id":"i%d","method":"POST","url":%s,"body":%s}\n' % (i, orjson.dumps(endpoint), body)
            for i, body in items
        ]
        boundary = secrets.token_hex(16)
        content = b"".join(
            [
                b'--%s\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
                % boundary.encode(),
                b'--%s\r\ncontent-disposition: form-data; name="file"; filename="batch.jsonl"\r\n'
                b"content-type: application/jsonl\r\n\r\n" % boundary.encode(),
                *lines,
                b"\r\n--%s--\r\n" % boundary.encode(),
            ]
        )
        resp = await self.sender.send(
            "POST",
            "/files",
            content=content,
            headers={"content-type": f"multipart/form-data; boundary={boundary}"},
            timeout=max(600.0, len(content) / 1e6),
        )
        file_id = _object(resp.content, "file")["id"]
        body = {"input_file_id": file_id, "endpoint": endpoint, "completion_window": "24h"}
        resp = await self.sender.send("POST", "/batches", body=body)
        return str(_object(resp.content, "batch")["id"])

    async def ended(self, bid: str) -> bool:
        resp = await self.sender.send("GET", f"/batches/{bid}")
        batch = _object(resp.content, "batch")
        status = batch.get("status")
        if status not in _OPENAI_ENDED:
            return False
        files = tuple(
            f if isinstance(f, str) and BATCH_ID.fullmatch(f) else None
            for f in (batch.get("output_file_id"), batch.get("error_file_id"))
        )
        self._files[bid] = files
        if status == "failed":
            self._failed[bid] = batch.get("errors")
        return True

    async def results(self, bid: str) -> AsyncIterator[tuple[str, Outcome]]:
        if bid in self._failed:
            raise APIError(
                f"batch {bid} failed: {orjson.dumps(self._failed.pop(bid)).decode()[:500]}", status=None
            )
        for file_id in self._files.pop(bid, ()):
            if file_id is None:
                continue
            async for rec in self.lines(f"/files/{file_id}/content"):
                cid = rec.get("custom_id")
                if isinstance(cid, str):
                    yield cid, self._outcome(bid, rec)

    def _outcome(self, bid: str, rec: Mapping[str, Any]) -> Outcome:
        response, error = rec.get("response"), rec.get("error")
        if isinstance(error, dict):
            unrun = _OPENAI_UNRUN.get(str(error.get("code")))
            if unrun is not None:
                return BatchResultError(unrun, bid)
            return api_error_from_body({"error": error})
        if not isinstance(response, dict):
            return BatchResultError("an answer without a response", bid)
        status, body = response.get("status_code"), response.get("body")
        if status == 200:
            try:
                return self.client._backend.message(body)
            except StreamProtocolError as e:
                return e
        return api_error_from_body(body, status=status if isinstance(status, int) else None)

    async def cancel(self, bid: str) -> None:
        await self.sender.send("POST", f"/batches/{bid}/cancel", body={})


def wire_for(client: Client) -> BatchWire:
    return MessagesBatches(client) if client.backend_name == "messages" else OpenAIBatches(client)
