"""OpenTelemetry tracing for an MCP SDK peer: spans exported as OTLP/JSON, one `TracesData` a line.

The official Python SDK for OpenTelemetry (`opentelemetry-sdk`) with its OTLP JSON file exporter
(`opentelemetry-exporter-otlp-json-file`, `FileSpanExporter`): the MCP Python SDK 2.x makes its spans through
the OpenTelemetry API (`mcp/server/_otel.py`, `mcp/shared/_otel.py`) and they are no-ops until a provider is
installed. A `SimpleSpanProcessor` exports each span when it ends, so each line is one ended span.
"""

from __future__ import annotations

from pathlib import Path


def install(path: Path, service: str) -> None:
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.json.file import FileSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    path.unlink(missing_ok=True)  # the exporter appends
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(path)))
    trace.set_tracer_provider(provider)
