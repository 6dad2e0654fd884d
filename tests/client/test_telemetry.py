"""OpenTelemetry from the client, read back through the OpenTelemetry SDK's in-memory
exporters: a streamed request, one preempted and resumed, one that fails, and what a
span may and may not hold (content only on request; never the key)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from sdk import Client, SDKError
from sdk.scheduler import Scheduler
from sdk.telemetry import Telemetry
from tests.llama import LlamaServer

from .fault_server import FaultServer, Reply, Request, fault_server
from .test_scheduling import TEXT, answer, cut_in, cut_in_server, msg, tag_of

pytestmark = pytest.mark.anyio

KEY = "sk-ant-otel-0123456789abcdef"
ROOT = Path(__file__).resolve().parents[2]
DEADLINE = 30


@dataclass
class Otel:
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    telemetry: Telemetry
    provider: TracerProvider

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def points(self, name: str) -> list[HistogramDataPoint]:
        data = self.reader.get_metrics_data()
        out: list[HistogramDataPoint] = []
        if data is None:
            return out
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == name:
                        out.extend(p for p in m.data.data_points if isinstance(p, HistogramDataPoint))
        return out

    def count(self, name: str, **attrs: Any) -> int:
        return sum(
            p.count
            for p in self.points(name)
            if all(p.attributes is not None and p.attributes.get(k) == v for k, v in attrs.items())
        )


def make_otel(*, capture_content: bool = False) -> Otel:
    spans = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    mp = MeterProvider(metric_readers=[reader])
    tel = Telemetry(tracer_provider=tp, meter_provider=mp, capture_content=capture_content)
    return Otel(spans, reader, tel, tp)


@pytest.fixture
def otel() -> Iterator[Otel]:
    yield make_otel()


def client(server: FaultServer, otel: Otel, **kw: Any) -> Client:
    kw.setdefault("prefill_echo", False)
    return Client(base_url=server.url, api_key=KEY, telemetry=otel.telemetry, **kw)


def one(spans: list[ReadableSpan], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def all_values(spans: list[ReadableSpan]) -> str:
    parts = []
    for s in spans:
        parts += [str(v) for v in (s.attributes or {}).values()]
        for e in s.events:
            parts += [str(v) for v in (e.attributes or {}).values()]
    return "\n".join(parts)


async def test_a_streamed_request_is_one_span_with_its_queue_wait_and_its_histograms(
    anyio_backend: str, otel: Otel
) -> None:
    pieces = ["a ", "b ", "c ", "d"]

    async def handler(req: Request, reply: Reply) -> None:
        await answer(req, reply, pieces)

    async with fault_server(handler) as server, client(server, otel) as c:
        with anyio.fail_after(DEADLINE):
            async with c.stream(
                model="m", max_tokens=50, temperature=0.5, messages=msg("hello"), tenant="acme"
            ) as s:
                text = "".join([t async for t in s.text_deltas()])
    assert text == "a b c d"
    spans = otel.finished()
    span = one(spans, "chat m")
    assert span.kind is SpanKind.CLIENT
    a = attrs(span)
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.request.model"] == "m"
    assert a["gen_ai.request.max_tokens"] == 50
    assert a["gen_ai.request.temperature"] == 0.5
    assert a["gen_ai.response.id"] == "msg_1"
    assert a["gen_ai.response.model"] == "m"
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("end_turn",)
    assert a["gen_ai.usage.input_tokens"] == 5
    assert a["gen_ai.usage.output_tokens"] == 4
    assert a["seam.tier"] == "default" and a["seam.tenant"] == "acme"
    assert a["seam.preemptions"] == 0 and a["seam.resumes"] == 0
    assert a["seam.queue_time"] >= 0 and a["server.address"] == "127.0.0.1"
    assert "error.type" not in a and span.status.status_code is not StatusCode.ERROR
    # content is off by default
    assert not any(k.startswith("gen_ai.input") or k.startswith("gen_ai.output") for k in a)
    queue = one(spans, "seam.queue")
    assert queue.parent is not None and queue.parent.span_id == span.context.span_id
    # the trace went with the request
    sent = server.requests[0].headers["traceparent"]
    assert sent.split("-")[1] == f"{span.context.trace_id:032x}"
    assert sent.split("-")[2] == f"{span.context.span_id:016x}"
    # histograms: one request, its tokens by type, its first chunk and the gaps after it
    assert otel.count("gen_ai.client.operation.duration", **{"gen_ai.request.model": "m"}) == 1
    assert otel.count("gen_ai.client.token.usage", **{"gen_ai.token.type": "input"}) == 1
    assert otel.count("gen_ai.client.token.usage", **{"gen_ai.token.type": "output"}) == 1
    assert otel.count("gen_ai.client.operation.time_to_first_chunk") == 1
    assert otel.count("gen_ai.client.operation.time_per_output_chunk") == len(pieces) - 1
    assert otel.count("seam.client.queue.duration", **{"seam.tier": "default"}) == 1
    assert otel.count("gen_ai.server.request.duration") == 0  # a client is not a server
    assert KEY not in all_values(spans)


async def test_a_preempted_stream_records_the_preemption_the_requeue_and_the_resume(otel: Otel) -> None:
    first_piece = anyio.Event()
    handler = cut_in_server(first_piece)
    async with (
        fault_server(handler) as server,
        client(server, otel, scheduler=Scheduler(slots=1, min_run=0)) as c,
    ):
        texts, _, _ = await cut_in(c, first_piece)
    assert "".join(texts) == TEXT
    spans = otel.finished()
    requests = [s for s in spans if s.name == "chat m"]
    assert len(requests) == 2
    bulk = next(s for s in requests if attrs(s)["seam.tier"] == "batch")
    urgent = next(s for s in requests if attrs(s)["seam.tier"] == "interactive")
    a = attrs(bulk)
    assert a["seam.preemptions"] == 1 and a["seam.resumes"] == 1
    names = [e.name for e in bulk.events]
    assert names == ["seam.preempted", "seam.resume"]
    resume = dict(bulk.events[1].attributes or {})
    assert resume["seam.resume.mode"] == "continuation" and resume["seam.resume.cause"] == "preempted"
    queues = [
        s for s in spans if s.name == "seam.queue" and s.parent and s.parent.span_id == bulk.context.span_id
    ]
    assert sorted(bool(attrs(q)["seam.requeue"]) for q in queues) == [False, True]
    assert "gen_ai.request.max_tokens" in attrs(urgent) and not urgent.events
    # every request of the bulk stream carried its trace, the resume included
    bulk_sent = [r.headers["traceparent"] for r in server.requests if tag_of(r) == "bulk"]
    assert len(bulk_sent) == 2 and len(set(bulk_sent)) == 1
    assert otel.count("gen_ai.client.operation.duration") == 2
    assert otel.count("seam.client.queue.duration", **{"seam.tier": "batch"}) == 1


async def test_a_failed_request_is_an_error_span_and_an_error_duration(
    anyio_backend: str, otel: Otel
) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.respond(
            400, {"type": "error", "error": {"type": "invalid_request_error", "message": f"bad key {KEY}"}}
        )

    async with fault_server(handler) as server, client(server, otel) as c:
        with anyio.fail_after(DEADLINE), pytest.raises(SDKError) as caught:
            await c.create(model="m", max_tokens=5, messages=msg("x"))
    assert type(caught.value).__name__ == "BadRequestError"
    spans = otel.finished()
    span = one(spans, "chat m")
    a = attrs(span)
    assert span.status.status_code is StatusCode.ERROR
    assert a["error.type"] == "BadRequestError" and a["http.response.status_code"] == 400
    assert otel.count("gen_ai.client.operation.duration", **{"error.type": "BadRequestError"}) == 1
    assert otel.count("gen_ai.client.token.usage") == 0
    assert KEY not in all_values(spans) and KEY not in (span.status.description or "")


async def test_a_stream_that_fails_before_its_first_byte_ends_its_span(otel: Otel) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await reply.respond(
            404, {"type": "error", "error": {"type": "not_found_error", "message": "no model"}}
        )

    async with fault_server(handler) as server, client(server, otel) as c:
        with anyio.fail_after(DEADLINE), pytest.raises(SDKError):
            async with c.stream(model="m", max_tokens=5, messages=msg("x")):
                pass
    span = one(otel.finished(), "chat m")
    assert attrs(span)["error.type"] == "NotFoundError"
    assert otel.count("gen_ai.client.operation.duration", **{"error.type": "NotFoundError"}) == 1


async def test_content_is_recorded_only_when_asked() -> None:
    otel = make_otel(capture_content=True)

    async def handler(req: Request, reply: Reply) -> None:
        await answer(req, reply, ["fine ", "thanks"])

    async with fault_server(handler) as server, client(server, otel) as c:
        with anyio.fail_after(DEADLINE):
            msg_ = await c.create(model="m", max_tokens=5, system="be brief", messages=msg("how are you"))
    assert msg_.text == "fine thanks"
    a = attrs(one(otel.finished(), "chat m"))
    assert '"content":"how are you"' in a["gen_ai.input.messages"]
    assert '"role":"user"' in a["gen_ai.input.messages"]
    assert '"content":"be brief"' in a["gen_ai.system_instructions"]
    assert '"content":"fine thanks"' in a["gen_ai.output.messages"]
    assert '"finish_reason":"end_turn"' in a["gen_ai.output.messages"]


async def test_the_callers_span_is_the_parent(otel: Otel) -> None:
    async def handler(req: Request, reply: Reply) -> None:
        await answer(req, reply, ["x"])

    from opentelemetry import trace

    tracer = otel.provider.get_tracer("app")  # the application traces with the same provider
    async with fault_server(handler) as server, client(server, otel) as c:
        with tracer.start_as_current_span("handle") as outer, anyio.fail_after(DEADLINE):
            await c.create(model="m", max_tokens=5, messages=msg("x"))
    span = one(otel.finished(), "chat m")
    assert span.parent is not None and span.parent.span_id == outer.get_span_context().span_id
    assert trace.get_current_span().get_span_context().is_valid is False


def test_telemetry_is_off_without_an_sdk_and_on_once_one_is_configured() -> None:
    code = """
import sdk
c = sdk.Client(base_url="http://127.0.0.1:9", api_key="k")
print(c.telemetry is None)
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
trace.set_tracer_provider(TracerProvider())
print(sdk.Client(base_url="http://127.0.0.1:9", api_key="k").telemetry is not None)
print(sdk.Client(base_url="http://127.0.0.1:9", api_key="k", telemetry=False).telemetry is None)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["True", "True", "True"]


def test_the_example_traces_a_stream_from_the_real_llama_server(llama_server: LlamaServer) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "telemetry.py"), llama_server.url, "One, two, three,"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MODEL": llama_server.model},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "span 'seam.queue'" in out and "span 'answer a question'" in out
    assert f"span 'chat {llama_server.model}'" in out
    assert "gen_ai.provider.name = llama.cpp" in out
    assert "gen_ai.usage.output_tokens = " in out and "gen_ai.response.finish_reasons = " in out
    assert "histogram gen_ai.client.operation.duration: 1 recorded" in out
    assert "histogram gen_ai.client.operation.time_to_first_chunk: 1 recorded" in out
