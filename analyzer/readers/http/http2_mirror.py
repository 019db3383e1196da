"""The h2 endpoints that follow each side of a captured HTTP/2 connection (`http2`).

h2 is a protocol participant, so each direction of a capture is read by a mirror of the endpoint that
receives it. A mirror is built for a passive observer: no header validation or normalisation (what the
peers sent is what the capture shows), its receive windows opened to the maximum (flow control is
tracked by `Http2Connection` from the real peers' grants instead), and our bounds on streams and header
lists. The settings its own endpoint announces take effect on it (`mirror_settings`), each capped at
our bound.
"""

from __future__ import annotations

from typing import Any

from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.settings import SettingCodes, Settings

from .http2_bounds import MAX_FRAME_BYTES, MAX_HEADER_LIST_BYTES, MAX_HEADER_TABLE_BYTES

DEFAULT_WINDOW = 65535
"""A flow-control window before any SETTINGS or WINDOW_UPDATE (RFC 9113 6.9.2)."""
_MAX_WINDOW = 2**31 - 1
_MIRRORED = {
    SettingCodes.HEADER_TABLE_SIZE: MAX_HEADER_TABLE_BYTES,
    SettingCodes.MAX_FRAME_SIZE: MAX_FRAME_BYTES,
    SettingCodes.ENABLE_PUSH: 1,
    SettingCodes.ENABLE_CONNECT_PROTOCOL: 1,
}
"""The settings a mirror takes from its endpoint's SETTINGS, each capped at our bound."""


def mirror(client_side: bool, max_streams: int) -> H2Connection:
    """A mirror of the client (`client_side`) or the server, accepting at most `max_streams` open streams
    (`Http2Connection`'s bound, which it also applies itself)."""
    config = H2Configuration(
        client_side=client_side,
        header_encoding=None,
        validate_inbound_headers=False,
        normalize_inbound_headers=False,
        validate_outbound_headers=False,
        normalize_outbound_headers=False,
    )
    conn = H2Connection(config)
    conn.local_settings = Settings(
        client=client_side,
        initial_values={
            SettingCodes.MAX_CONCURRENT_STREAMS: max_streams,
            SettingCodes.MAX_HEADER_LIST_SIZE: MAX_HEADER_LIST_BYTES,
            SettingCodes.INITIAL_WINDOW_SIZE: _MAX_WINDOW,
        },
    )
    conn.decoder.max_header_list_size = MAX_HEADER_LIST_BYTES
    conn.increment_flow_control_window(_MAX_WINDOW - DEFAULT_WINDOW)
    conn.clear_outbound_data_buffer()
    return conn


def mirror_settings(conn: H2Connection, changed: dict[Any, Any]) -> None:
    """What an endpoint announced, on its own mirror (in force once the peer's ACK is read)."""
    values = {code: min(c.new_value, _MIRRORED[code]) for code, c in changed.items() if code in _MIRRORED}
    if values:
        conn.update_settings(values)
