"""The OpenTelemetry side of a request: its spans, their attributes and the histograms
(see the package doc). The ``opentelemetry-api`` package is imported only when telemetry
is asked for or an OpenTelemetry SDK is configured, so an application without it pays
nothing. Nothing here may fail a request: a span or a metric that cannot be recorded is
logged and dropped."""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Union

import orjson

from .._models import Message, TextBlock, ThinkingBlock, ToolUseBlock
from ..scheduler import RequestMetrics

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Span, TracerProvider

__all__ = ["RequestTrace", "ServerTrace", "Telemetry", "TelemetryArg", "configured"]

log = logging.getLogger("sdk")

TelemetryArg = Union[bool, "Telemetry", None]

_NAME = "seam-sdk"
_VERSION = "0.1.0"
_SCHEMA = "https://opentelemetry.io/schemas/1.37.0"

# The bucket boundaries the GenAI conventions advise for each histogram.
_DURATION = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_TOKENS: tuple[float, ...] = (
    1,
    4,
    16,
    64,
    256,
    1024,
    4096,
    16384,
    65536,
    262144,
    1048576,
    4194304,
    16777216,
    67108864,
)
_FIRST = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
_PER_TOKEN = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)

# Every histogram: name, unit, description, buckets (in the order Telemetry keeps them).
_HISTOGRAMS: tuple[tuple[str, str, str, tuple[float, ...]], ...] = (
    ("gen_ai.client.operation.duration", "s", "GenAI operation duration", _DURATION),
    ("gen_ai.client.token.usage", "{token}", "Number of input and output tokens used", _TOKENS),
    (
        "gen_ai.client.operation.time_to_first_chunk",
        "s",
        "Time from the request to the first chunk of a streamed response",
        _FIRST,
    ),
    (
        "gen_ai.client.operation.time_per_output_chunk",
        "s",
        "Time between the chunks of a streamed response",
        _PER_TOKEN,
    ),
    ("seam.client.queue.duration", "s", "Time a request waited in the scheduler's queue", _DURATION),
    ("gen_ai.server.request.duration", "s", "Generative AI server request duration", _DURATION),
    ("gen_ai.server.time_to_first_token", "s", "Time to generate the first token", _FIRST),
    (
        "gen_ai.server.time_per_output_token",
        "s",
        "Time per output token generated after the first",
        _PER_TOKEN,
    ),
)


def configured() -> bool:
    """Whether the application has set an OpenTelemetry SDK's tracer or meter provider
    (and ``opentelemetry-api`` is installed)."""
    try:
        from opentelemetry import metrics, trace
    except ImportError:
        return False
    tp = trace.get_tracer_provider()
    if not isinstance(tp, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return True
    mp = metrics.get_meter_provider()
    # (The API's stand-in before one is set is a proxy class of its own, not exported.)
    return not isinstance(mp, metrics.NoOpMeterProvider) and "Proxy" not in type(mp).__name__


def _error_type(error: BaseException) -> str:
    """A low-cardinality name for what ended a request (the conventions' ``error.type``):
    the SDK's own error classes by their public name, others by their module path."""
    cls = type(error)
    if cls.__module__ == "sdk" or cls.__module__.startswith("sdk."):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _failed(tel: Telemetry, span: Span, kind: str) -> str:
    """Mark ``span`` failed as the conventions say (``error.type`` and an ERROR status);
    ``kind``, for the metrics' attributes."""
    span.set_attribute("error.type", kind)
    span.set_status(tel._trace.Status(tel._trace.StatusCode.ERROR, kind))
    return kind


def _parts(content: object) -> list[dict[str, Any]]:
    """A message's content as the conventions' parts (text, tool calls and their
    responses; any other block by its type alone)."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    out: list[dict[str, Any]] = []
    if not isinstance(content, Sequence):
        return out
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append({"type": "text", "content": block.get("text", "")})
        elif kind == "tool_use":
            call = {"id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")}
            out.append({"type": "tool_call", **call})
        elif kind == "tool_result":
            answer = {"id": block.get("tool_use_id"), "response": block.get("content")}
            out.append({"type": "tool_call_response", **answer})
        else:
            out.append({"type": str(kind)})
    return out


def _input_messages(request: Mapping[str, Any]) -> str:
    messages = request.get("messages")
    out = []
    if isinstance(messages, Sequence):
        for m in messages:
            if isinstance(m, Mapping):
                out.append({"role": m.get("role"), "parts": _parts(m.get("content"))})
    return orjson.dumps(out, default=str).decode()


def _output_messages(msg: Message) -> str:
    parts: list[dict[str, Any]] = []
    for block in msg.content:
        if isinstance(block, TextBlock):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ToolUseBlock):
            parts.append({"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.input})
        elif isinstance(block, ThinkingBlock):
            parts.append({"type": "reasoning", "content": block.thinking})
    out = [{"role": "assistant", "parts": parts, "finish_reason": msg.stop_reason or ""}]
    return orjson.dumps(out, default=str).decode()


class Telemetry:
    """Where a client's (or a server's) spans and histograms go: the global OpenTelemetry
    providers unless others are given. ``capture_content``: record the prompts and
    completions on the spans (``gen_ai.input.messages``, ``gen_ai.system_instructions``,
    ``gen_ai.output.messages``); off by default, as the conventions advise, since they
    may hold what the application must not export. ``server``: the requests are a
    scheduling server's (``sdk.server`` sets it): they feed the ``gen_ai.server.*``
    histograms too."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool = False,
        server: bool = False,
    ) -> None:
        try:
            from opentelemetry import metrics, propagate, trace
        except ImportError as e:
            raise ImportError(
                "telemetry needs the opentelemetry-api package: pip install 'seam-sdk[otel]'"
            ) from e
        self.capture_content = capture_content
        self.server = server
        self._trace = trace
        self._propagate = propagate
        self._tracer = trace.get_tracer(_NAME, _VERSION, tracer_provider, schema_url=_SCHEMA)
        meter = metrics.get_meter(_NAME, _VERSION, meter_provider, schema_url=_SCHEMA)

        def histogram(name: str, unit: str, description: str, buckets: Sequence[float]) -> Histogram:
            return meter.create_histogram(
                name, unit=unit, description=description, explicit_bucket_boundaries_advisory=buckets
            )

        (
            self.duration,
            self.tokens,
            self.first_chunk,
            self.per_chunk,
            self.queue,
            self.server_duration,
            self.server_first,
            self.server_per_token,
        ) = (histogram(*spec) for spec in _HISTOGRAMS)

    def for_server(self) -> Telemetry:
        """The same providers and content setting, for a scheduling server's requests."""
        if self.server:
            return self
        twin = copy.copy(self)  # the same tracer and instruments (made once per provider)
        twin.server = True
        return twin

    @classmethod
    def of(cls, arg: TelemetryArg) -> Telemetry | None:
        """What a ``telemetry=`` argument means: ``None`` is on when an OpenTelemetry SDK
        is configured, ``True`` on (the global providers), ``False`` off."""
        if isinstance(arg, Telemetry):
            return arg
        if arg is False or (arg is None and not configured()):
            return None
        return cls()

    def request(
        self,
        request: Mapping[str, Any],
        *,
        provider: Callable[[], str],
        address: str | None,
        port: int | None,
        streaming: bool,
        tier: str,
        tenant: str | None,
    ) -> RequestTrace:
        """Start the span of one request (the current span, if any, is its parent).
        ``provider`` names the provider: asked now and again at the end (a self-hosted
        engine is identified before the request is sent, after its span begins)."""
        model = request.get("model")
        name = provider()
        attrs: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": name,
            "gen_ai.system": name,
        }
        if isinstance(model, str):
            attrs["gen_ai.request.model"] = model
        if address:
            attrs["server.address"] = address
        if port is not None:
            attrs["server.port"] = port
        span_attrs = dict(attrs)
        for field, name in (
            ("max_tokens", "gen_ai.request.max_tokens"),
            ("max_completion_tokens", "gen_ai.request.max_tokens"),
            ("temperature", "gen_ai.request.temperature"),
            ("top_p", "gen_ai.request.top_p"),
            ("top_k", "gen_ai.request.top_k"),
        ):
            value = request.get(field)
            if isinstance(value, int | float) and not isinstance(value, bool):
                span_attrs[name] = value
        stops = request.get("stop_sequences", request.get("stop"))
        if isinstance(stops, list) and all(isinstance(s, str) for s in stops):
            span_attrs["gen_ai.request.stop_sequences"] = stops
        span_attrs["seam.tier"] = tier
        if tenant is not None:
            span_attrs["seam.tenant"] = tenant
        span_attrs["seam.streaming"] = streaming
        if self.capture_content:
            span_attrs["gen_ai.input.messages"] = _input_messages(request)
            system = request.get("system")
            if system is not None:
                span_attrs["gen_ai.system_instructions"] = orjson.dumps(_parts(system), default=str).decode()
        title = f"chat {model}" if isinstance(model, str) else "chat"
        span = self._tracer.start_span(title, kind=self._trace.SpanKind.CLIENT, attributes=span_attrs)
        return RequestTrace(self, span, attrs, provider, streaming=streaming, server=self.server)

    def server_span(self, headers: Mapping[str, str], path: str, method: str) -> ServerTrace:
        """Start a scheduling server's span for one HTTP request, continuing the trace its
        ``traceparent`` names (a malformed one starts a new trace)."""
        parent = self._propagate.extract(headers)
        span = self._tracer.start_span(
            f"{method} {path}",
            context=parent,
            kind=self._trace.SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": path, "gen_ai.operation.name": "chat"},
        )
        return ServerTrace(self, span)


class RequestTrace:
    """One request's span, from its submission to its end (see :meth:`Telemetry.request`)."""

    __slots__ = ("_attrs", "_done", "_provider", "_queue", "_server", "_tel", "span", "streaming")

    def __init__(
        self,
        tel: Telemetry,
        span: Span,
        attrs: dict[str, Any],
        provider: Callable[[], str],
        *,
        streaming: bool,
        server: bool,
    ) -> None:
        self._tel = tel
        self.span = span
        self._attrs = attrs  # the metrics' attributes (the span's have more)
        self._provider = provider
        self.streaming = streaming
        self._server = server
        self._done = False
        self._queue: Span | None = None

    def _context(self) -> Context:
        context: Context = self._tel._trace.set_span_in_context(self.span)
        return context

    def headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        """``extra`` with this span's ``traceparent`` (and ``tracestate``) added."""
        out = dict(extra or {})
        try:
            self._tel._propagate.inject(out, context=self._context())
        except Exception:
            log.exception("the trace context could not be added to a request")
        return out

    def queued(self, *, again: bool = False) -> None:
        """The request waits for the scheduler now (``again``: after a preemption or a
        stall): a child span until :meth:`admitted`."""
        if self._queue is not None or self._done:
            return
        try:
            self._queue = self._tel._tracer.start_span(
                "seam.queue", context=self._context(), attributes={"seam.requeue": again}
            )
        except Exception:
            log.exception("a queue span could not be started")

    def admitted(self) -> None:
        queue, self._queue = self._queue, None
        if queue is not None:
            try:
                queue.end()
            except Exception:
                log.exception("a queue span could not be ended")

    def event(self, name: str, attributes: Mapping[str, Any] | None = None) -> None:
        """An event on the span (a preemption, a resume)."""
        if self._done:
            return
        try:
            self.span.add_event(name, dict(attributes or {}))
        except Exception:
            log.exception("a span event could not be added")

    def finish(
        self,
        *,
        message: Message | None,
        metrics: RequestMetrics | None,
        error: BaseException | None = None,
        resumes: int = 0,
    ) -> None:
        """End the span and record the histograms (once; later calls do nothing)."""
        if self._done:
            return
        self._done = True
        self.admitted()
        try:
            self._attrs["gen_ai.provider.name"] = self._attrs["gen_ai.system"] = self._provider()
            self._finish(message, metrics, error, resumes)
        except Exception:
            log.exception("a request's telemetry could not be recorded")

    def _finish(
        self,
        message: Message | None,
        metrics: RequestMetrics | None,
        error: BaseException | None,
        resumes: int,
    ) -> None:
        tel, span = self._tel, self.span
        attrs = dict(self._attrs)
        span_attrs: dict[str, Any] = {
            "seam.resumes": resumes,
            "gen_ai.provider.name": attrs["gen_ai.provider.name"],
            "gen_ai.system": attrs["gen_ai.system"],
        }
        if message is not None:
            if message.id:
                span_attrs["gen_ai.response.id"] = message.id
            if message.model:
                span_attrs["gen_ai.response.model"] = attrs["gen_ai.response.model"] = message.model
            if message.stop_reason:
                span_attrs["gen_ai.response.finish_reasons"] = [message.stop_reason]
            usage = message.usage
            for value, name in (
                (usage.input_tokens, "gen_ai.usage.input_tokens"),
                (usage.output_tokens, "gen_ai.usage.output_tokens"),
                (usage.cache_read_input_tokens, "gen_ai.usage.cache_read.input_tokens"),
                (usage.cache_creation_input_tokens, "gen_ai.usage.cache_creation.input_tokens"),
            ):
                if value is not None:
                    span_attrs[name] = value
            if tel.capture_content:
                span_attrs["gen_ai.output.messages"] = _output_messages(message)
        if metrics is not None:
            span_attrs["seam.queue_time"] = metrics.queue_time
            span_attrs["seam.preemptions"] = metrics.preemptions
            span_attrs["seam.pauses"] = metrics.pauses
            if metrics.ttft is not None:
                span_attrs["seam.ttft"] = metrics.ttft
        if error is not None:
            attrs["error.type"] = _failed(tel, span, _error_type(error))
            status = getattr(error, "status_code", None)
            if isinstance(status, int):
                span_attrs["http.response.status_code"] = status
        span.set_attributes(span_attrs)
        span.end()
        if metrics is None:
            return
        tel.duration.record(metrics.e2el, attrs)
        tel.queue.record(metrics.queue_time, {"seam.tier": metrics.tier})
        if message is not None:
            usage = message.usage
            for value, kind in ((usage.input_tokens, "input"), (usage.output_tokens, "output")):
                if value is not None:
                    tel.tokens.record(value, {**attrs, "gen_ai.token.type": kind})
        if self.streaming and metrics.ttft is not None:
            tel.first_chunk.record(metrics.ttft, attrs)
            for gap in metrics.itl:
                tel.per_chunk.record(gap, attrs)
        if self._server:
            tel.server_duration.record(metrics.e2el, attrs)
            if metrics.ttft is not None:
                tel.server_first.record(metrics.ttft, attrs)
            tpot = metrics.tpot
            if tpot is not None:
                tel.server_per_token.record(tpot, attrs)


class ServerTrace:
    """A scheduling server's span for one HTTP request (see :meth:`Telemetry.server_span`):
    ``with trace.current():`` makes it the parent of the engine requests made inside."""

    __slots__ = ("_tel", "span")

    def __init__(self, tel: Telemetry, span: Span) -> None:
        self._tel = tel
        self.span = span

    @contextmanager
    def current(self) -> Iterator[None]:
        with self._tel._trace.use_span(self.span, end_on_exit=False, record_exception=False):
            yield

    def end(self, status: int | None, error: BaseException | None = None) -> None:
        try:
            if status is not None:
                self.span.set_attribute("http.response.status_code", status)
            if error is not None or (status is not None and status >= 500):
                _failed(self._tel, self.span, _error_type(error) if error is not None else str(status))
            self.span.end()
        except Exception:
            log.exception("a server span could not be ended")
