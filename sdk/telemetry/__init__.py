"""OpenTelemetry traces and metrics for the client and the scheduling server, named by
the GenAI semantic conventions.

``Client(telemetry=True)`` (or a :class:`Telemetry` with its own providers) makes, per
request, one ``CLIENT`` span ``chat {model}`` with the ``gen_ai.*`` attributes and this
SDK's (``seam.tier``, ``seam.tenant``, ``seam.queue_time``, ``seam.preemptions``,
``seam.resumes``), a child span ``seam.queue`` for each wait in the scheduler's queue,
events for each preemption and resume, and the W3C ``traceparent`` on every request it
sends. Its histograms: ``gen_ai.client.operation.duration``,
``gen_ai.client.token.usage``, ``gen_ai.client.operation.time_to_first_chunk`` and
``gen_ai.client.operation.time_per_output_chunk``, and ``seam.client.queue.duration``.
``sdk.server`` continues the caller's trace in a ``SERVER`` span and records
``gen_ai.server.request.duration``, ``gen_ai.server.time_to_first_token`` and
``gen_ai.server.time_per_output_token``.

With no ``telemetry`` argument, a client traces when the application has configured an
OpenTelemetry SDK (a tracer or meter provider set globally) and the ``opentelemetry-api``
package is installed (``pip install 'seam-sdk[otel]'``); otherwise it costs nothing.
Prompts and completions are not recorded unless ``capture_content=True``.
"""

from __future__ import annotations

from ._otel import RequestTrace, ServerTrace, Telemetry, TelemetryArg

__all__ = ["RequestTrace", "ServerTrace", "Telemetry", "TelemetryArg"]
