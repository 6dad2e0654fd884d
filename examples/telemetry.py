"""Trace a streamed request with OpenTelemetry and read back its span and histograms.

python examples/telemetry.py http://127.0.0.1:8080 "The three primary colors are"

Needs ``pip install 'seam-sdk[otel]' opentelemetry-sdk``. An application that already
configures OpenTelemetry (an OTLP exporter, ``opentelemetry-instrument``) needs none of
the set-up below: every ``Client`` traces into the providers it set.
"""

from __future__ import annotations

import os
import sys

import anyio
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from sdk import Client, Telemetry

spans = InMemorySpanExporter()  # a real application exports (OTLP) instead
tracer_provider = TracerProvider()
tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(tracer_provider)
reader = InMemoryMetricReader()
meter_provider = MeterProvider(metric_readers=[reader])


async def main(base_url: str | None, prompt: str, model: str) -> None:
    # Traced into the global tracer provider set above (telemetry=True would do as much);
    # the meter provider is given here (a Telemetry object takes both).
    telemetry = Telemetry(meter_provider=meter_provider)
    app = trace.get_tracer("example")
    async with Client(base_url=base_url, telemetry=telemetry) as c:
        with app.start_as_current_span("answer a question"):  # the request's span is its child
            async with c.stream(
                model=model,
                max_tokens=24,
                temperature=0,
                messages=[{"role": "user", "content": prompt}],
            ) as s:
                async for text in s.text_deltas():
                    print(text, end="", flush=True)
    print()
    for span in spans.get_finished_spans():
        parent = f" (child of {span.parent.span_id:016x})" if span.parent else ""
        print(f"span {span.name!r} {span.context.span_id:016x}{parent}")
        for key, value in sorted((span.attributes or {}).items()):
            print(f"    {key} = {value}")
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                count = sum(getattr(p, "count", 0) for p in metric.data.data_points)
                print(f"histogram {metric.name}: {count} recorded")


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None
    prompt = sys.argv[2] if len(sys.argv) > 2 else "The three primary colors are"
    model = os.environ.get("MODEL", "claude-sonnet-4-5" if url is None else "default")
    anyio.run(main, url, prompt, model)
