"""OpenTelemetry through the scheduling server, in process: a caller's ``traceparent`` is
continued by the server's span, the engine request is its child and carries the trace on
to the engine, and the server's histograms count what it served."""

from __future__ import annotations

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from sdk.server import ServerApp, ServerConfig
from tests.client.test_telemetry import Otel, attrs, make_otel, one

from .engine import FakeEngine, request, serving

pytestmark = pytest.mark.anyio

UPSTREAM = "http://engine.test:8080"
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def app_with(engine: FakeEngine, otel: Otel, **cfg: object) -> ServerApp:
    cfg.setdefault("slots", 1)
    return ServerApp([UPSTREAM], ServerConfig(**cfg), transport=engine, telemetry=otel.telemetry)  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [True, False])
async def test_the_callers_trace_runs_through_the_server_to_the_engine(stream: bool) -> None:
    otel = make_otel()
    engine = FakeEngine(deltas=5)
    async with serving(app_with(engine, otel), engine) as h:
        conn = await h.call(
            "/v1/messages", request(1, stream=stream), {"traceparent": f"00-{TRACE}-{PARENT}-01"}
        )
    assert conn.status == 200
    spans = otel.finished()
    server = one(spans, "POST /v1/messages")
    assert server.kind is SpanKind.SERVER
    assert f"{server.context.trace_id:032x}" == TRACE
    assert server.parent is not None and f"{server.parent.span_id:016x}" == PARENT
    assert attrs(server)["http.response.status_code"] == 200
    call = one(spans, "chat fake")
    assert call.kind is SpanKind.CLIENT
    assert call.parent is not None and call.parent.span_id == server.context.span_id
    assert attrs(call)["seam.tier"] == "default"
    queue = one(spans, "seam.queue")
    assert queue.parent is not None and queue.parent.span_id == call.context.span_id
    # the engine request carried the same trace, the engine call's span as its parent
    assert engine.traced == [f"00-{TRACE}-{call.context.span_id:016x}-01"]
    assert otel.count("gen_ai.server.request.duration", **{"gen_ai.request.model": "fake"}) == 1
    # (a whole answer has no first token the server sees apart)
    assert otel.count("gen_ai.server.time_to_first_token") == int(stream)
    if stream:
        assert otel.count("gen_ai.server.time_per_output_token") == 1
        assert otel.count("gen_ai.client.operation.time_per_output_chunk") >= 1


async def test_a_refused_request_is_an_error_span_without_an_engine_call() -> None:
    otel = make_otel()
    engine = FakeEngine()
    async with serving(app_with(engine, otel), engine) as h:
        conn = await h.call("/v1/messages", {"model": "fake", "messages": "not a list", "max_tokens": 5})
    assert conn.status == 400
    span = one(otel.finished(), "POST /v1/messages")
    assert attrs(span)["http.response.status_code"] == 400
    assert not [s for s in otel.finished() if s.name.startswith("chat")]
    assert engine.traced == []


async def test_a_failing_engine_is_an_error_on_both_spans() -> None:
    otel = make_otel()
    engine = FakeEngine()
    engine.fail_with = 500
    async with serving(app_with(engine, otel), engine) as h:
        conn = await h.call("/v1/messages", request(1, stream=False))
    spans = otel.finished()
    server = one(spans, "POST /v1/messages")
    assert conn.status >= 400
    assert attrs(server)["http.response.status_code"] == conn.status
    call = one(spans, "chat fake")
    assert call.status.status_code is StatusCode.ERROR and "error.type" in attrs(call)
    assert otel.count("gen_ai.server.request.duration", **{"error.type": attrs(call)["error.type"]}) == 1


async def test_health_and_metrics_make_no_span() -> None:
    otel = make_otel()
    engine = FakeEngine()
    async with serving(app_with(engine, otel), engine) as h:
        await h.call("/health", None, method="GET")
        await h.call("/metrics", None, method="GET")
    assert otel.finished() == []
