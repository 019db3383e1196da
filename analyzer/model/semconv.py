"""The OpenTelemetry semantic conventions for MCP that cancelwire reads (`readers/tools/otlp.py`) and writes.

Attribute names of the conventions' MCP spans (the `mcp` namespace, with the `jsonrpc`, `rpc`, `error`, `gen_ai` and
`network` attributes they reuse), the span kinds and status codes of OTLP (opentelemetry-proto
`trace/v1/trace.proto`), by number as OTLP/JSON writes them and by name as protobuf's JSON mapping may.
"""

from __future__ import annotations

from typing import Final

METHOD: Final = "mcp.method.name"
REQUEST_ID: Final = "jsonrpc.request.id"
SESSION_ID: Final = "mcp.session.id"
PROTOCOL_VERSION: Final = "mcp.protocol.version"
STATUS_CODE: Final = "rpc.response.status_code"
ERROR_TYPE: Final = "error.type"
TOOL_NAME: Final = "gen_ai.tool.name"
PROMPT_NAME: Final = "gen_ai.prompt.name"
NETWORK_TRANSPORT: Final = "network.transport"
SERVICE_NAME: Final = "service.name"
SERVICE_INSTANCE: Final = "service.instance.id"
TOOL_ERROR: Final = "tool_error"
"""`error.type` of a `tools/call` whose result says `isError` (the MCP Python SDK's value): no JSON-RPC error."""

SPAN_KIND_SERVER: Final = 2
SPAN_KIND_CLIENT: Final = 3
SPAN_KINDS: Final = {"SPAN_KIND_SERVER": SPAN_KIND_SERVER, "SPAN_KIND_CLIENT": SPAN_KIND_CLIENT}
STATUS_ERROR: Final = 2
STATUS_CODES: Final = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": STATUS_ERROR}
