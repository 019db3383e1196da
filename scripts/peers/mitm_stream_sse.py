"""A mitmproxy addon: pass `text/event-stream` responses on as they come (``flow.response.stream``).

Without it mitmdump buffers a response whole before forwarding it, so an HTTP+SSE (2024-11-05) session
through it stalls: the client never gets the stream's first `endpoint` event. A streamed body is not
stored, so the HAR keeps none for that stream (what scripts/record_har.py's legacy sample shows).
Loaded with ``mitmdump -s scripts/peers/mitm_stream_sse.py``.
"""

from typing import Any


def responseheaders(flow: Any) -> None:
    if "text/event-stream" in flow.response.headers.get("content-type", ""):
        flow.response.stream = True
