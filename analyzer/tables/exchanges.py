"""The exchange table (`--exchanges FILE.csv|FILE.parquet`): one row per request, written in chunks.

Rows are spooled CHUNK_ROWS at a time into a pandas DataFrame with explicit dtypes and appended to
the file, so memory follows the chunk size, not the number of exchanges.

Columns:
    session         session key (input path, plus server name or HTTP session id)
    session_id      the id the transport gave the session (`Mcp-Session-Id`, or a legacy HTTP+SSE
                    endpoint's `sessionId`), as recorded; empty on stdio and when the recording shows none
    requester       who sent the request: client or server
    request_id      the JSON-RPC id, as text (ids may be strings or integers)
    request_id_type integer | string: the id's JSON type, which tells the id 1 from the id "1" (the
                    engine keeps them apart: JSON-RPC ids are equal only with the same type)
    method          JSON-RPC method
    tool            tool name for tools/call, else empty
    tool_effect     read-only | side-effecting | unknown (tools/list annotations) | none (not a tool)
    revision        protocol revision in force for this exchange, empty when unknown
    revision_basis  negotiated | declared | overridden | assumed
    transport       stdio | streamable-http | http-sse
    request_ts      epoch seconds (UTC) of the request; NaN when the input has no timestamps
    reply           result | error-result | none
    error_code      the JSON-RPC error code of an error-result (a 64-bit integer); empty otherwise
    tool_error      whether a tools/call result says the tool failed (`isError` true)
    reply_ts        epoch seconds of the first reply; NaN when none
    duration        reply_ts - request_ts in seconds; NaN when either is missing
    cancelled       whether the requester cancelled it (notification, disconnect or tasks/cancel)
    mechanism       notification | disconnect | tasks-cancel | empty
    outcome         the cancelled-call outcome, empty when not cancelled
    progress        number of progress notifications
    entries         number of messages and transport events on the request's timeline
    first_evidence  where the request was read (file:line or file#frame)
    cancel_ts       epoch seconds of the cancel in force; NaN when not cancelled or without timestamps
    last_ts         epoch seconds of the request's last message (either side, the cancel included; past the
                    entry limit, the first of the last counted run); NaN without timestamps

In CSV, a text cell (every column above but the numbers, timestamps, `cancelled` and `tool_error`) is made inert by
`inert.csv_cell`: control and invisible characters (NUL, escapes, newlines, tabs, bidi overrides) are
shown as escapes such as `\x00` and `\u202e`, and a cell that then begins with `=`, `+`, `-` or `@` gets
a leading single quote, so a spreadsheet shows the recorded text instead of running it as a formula
(OWASP "CSV Injection"): a method named `=HYPERLINK(...)` is written `'=HYPERLINK(...)`, and a request
id of -1 as `'-1`. Parquet keeps the values exactly as recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import CancelwireError
from ..model import TRANSPORT_KINDS, CancelledCall, EntryKind, RequestId, RequestTimeline
from ..support.inert import CSV_FORMULA_STARTS, UNSAFE_CHARACTER, csv_cell

CHUNK_ROWS = 50_000

COLUMNS: dict[str, str] = {
    "session": "category",
    "session_id": "category",
    "requester": "category",
    "request_id": "string",
    "request_id_type": "category",
    "method": "category",
    "tool": "string",
    "tool_effect": "category",
    "revision": "category",
    "revision_basis": "category",
    "transport": "category",
    "request_ts": "float64",
    "reply": "category",
    "error_code": "Int64",
    "tool_error": "bool",
    "reply_ts": "float64",
    "duration": "float64",
    "cancelled": "bool",
    "mechanism": "category",
    "outcome": "category",
    "progress": "Int64",
    "entries": "Int64",
    "first_evidence": "string",
    "cancel_ts": "float64",
    "last_ts": "float64",
}
#: Transport facts, the recording's end and a caller given up on are no messages (for `last_ts`).
_NOT_MESSAGES = TRANSPORT_KINDS | {EntryKind.RECORDING_ENDED, EntryKind.GAVE_UP}


def row(timeline: RequestTimeline, cancelled: CancelledCall | None) -> dict[str, Any]:
    first = timeline.entries[0]
    reply = next((e for e in timeline.entries if e.kind in (EntryKind.RESULT, EntryKind.ERROR_RESULT)), None)
    start, end = first.ts, reply.ts if reply else None
    nan = float("nan")
    cancel_ts = timeline.cancel.entry.ts if timeline.cancel else None
    last = next((e.ts for e in reversed(timeline.entries) if e.kind not in _NOT_MESSAGES), None)
    return {
        "session": timeline.session_key,
        "session_id": timeline.session_id or "",
        "requester": timeline.requester.value,
        "request_id": str(timeline.request_id),
        "request_id_type": id_type(timeline.request_id),
        "method": timeline.method,
        "tool": timeline.tool or "",
        "tool_effect": timeline.tool_effect,
        "revision": timeline.revision or "",
        "revision_basis": timeline.revision_basis.value,
        "transport": timeline.transport.value,
        "request_ts": nan if start is None else start,
        "reply": reply.kind.value if reply else "none",
        "error_code": reply.error_code if reply else None,
        "tool_error": reply.tool_error if reply else False,
        "reply_ts": nan if end is None else end,
        "duration": nan if start is None or end is None else end - start,
        "cancelled": timeline.cancel is not None,
        "mechanism": timeline.cancel.mechanism.value if timeline.cancel else "",
        "outcome": cancelled.outcome.value if cancelled else "",
        "progress": sum(e.repeats for e in timeline.entries if e.kind is EntryKind.PROGRESS),
        "entries": sum(e.repeats for e in timeline.entries),
        "first_evidence": first.origin.display(),
        "cancel_ts": nan if cancel_ts is None else cancel_ts,
        "last_ts": nan if last is None else last,
    }


def id_type(request_id: RequestId | None) -> str:
    """`integer` or `string`: the JSON type of a request id, so that 1 and "1" (two ids, never equal in
    JSON-RPC) are two rows a reader can tell apart; empty for no id. A column of its own keeps
    `request_id` the plain text users already filter on, in CSV as in Parquet (an id rendered as JSON
    would put quotes in every string id, which CSV doubles)."""
    if request_id is None:
        return ""
    return "string" if isinstance(request_id, str) else "integer"


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    data = pd.DataFrame(rows, columns=list(COLUMNS))
    return data.astype(COLUMNS)


def spreadsheet_safe(data: pd.DataFrame) -> pd.DataFrame:
    """`data` with every text cell made inert for a spreadsheet and a terminal (`inert.csv_cell`);
    numbers, booleans and timestamps are left as they are."""
    for column, dtype in COLUMNS.items():
        if dtype not in ("string", "category"):
            continue
        # a category column is checked by its few distinct values (50k rows: 80 -> 8 ms for the table)
        distinct = pd.Series(data[column].cat.categories) if dtype == "category" else data[column]
        if not _risky(distinct.astype("string")).any():
            continue
        values = data[column].astype("string")
        risky = _risky(values)
        data[column] = values.mask(risky, values[risky].map(csv_cell))
    return data


def _risky(values: pd.Series[str]) -> pd.Series[bool]:
    risky = values.str.startswith(CSV_FORMULA_STARTS) | values.str.contains(UNSAFE_CHARACTER)
    return risky.fillna(False).astype(bool)


class ExchangeWriter:
    """Appends exchange rows to a CSV or Parquet file, one chunk at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: list[dict[str, Any]] = []
        self.written = 0
        self._parquet: Any = None
        self._schema: Any = None
        if path.suffix == ".parquet":
            from .arrow import pyarrow_module, schema

            pyarrow_module("--exchanges")  # a clear error naming the extra when pyarrow is missing
            self._schema = schema("exchanges", COLUMNS)  # fixed: never inferred chunk by chunk
        try:
            path.write_bytes(b"")
        except OSError as exc:
            raise CancelwireError(f"{path}: cannot write the exchange table: {exc.strerror}") from exc

    def add(self, row: dict[str, Any]) -> None:
        """One exchange, as `row` made it."""
        self.rows.append(row)
        if len(self.rows) >= CHUNK_ROWS:
            self._flush()

    def _flush(self) -> None:
        data = frame(self.rows)
        self.rows = []
        if self.path.suffix == ".csv":
            spreadsheet_safe(data).to_csv(self.path, mode="a", header=self.written == 0, index=False)
        else:
            from .arrow import pyarrow_module, table_of

            if self._parquet is None:
                writer = pyarrow_module(str(self.path)).parquet.ParquetWriter
                self._parquet = writer(str(self.path), self._schema)
            self._parquet.write_table(table_of(data, self._schema))
        self.written += len(data)

    def close(self) -> None:
        if self.rows or self.written == 0:
            self._flush()
        if self._parquet is not None:
            self._parquet.close()
