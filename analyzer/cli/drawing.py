"""`cancelwire diagram`: any one request drawn on demand, from recordings or from a saved JSON report.

From recordings, every request can be drawn (a cancelled one exactly as the report draws it, with its
verdict and findings; any other one from its whole timeline). A JSON report holds cancelled calls only.
The output is the SVG itself, or a small HTML page around it that loads and runs nothing. With
`redact`, payload values are drawn by type and length, as `audit --redact` shows them (redact.py): a
recording's timeline passes through the same redaction as an audit's, and a report that was not made
with `--redact` is redacted as it is read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import CancelwireError, InputError
from ..model import CancelledCall, RequestTimeline, forms
from ..reports import diagram, document
from ..run import redact
from ..run.pipeline import AuditOptions, audit
from ..tables.exchanges import id_type as type_of_id

#: Requests kept while looking for one id (the same id can be in many sessions, and in both id spaces).
MAX_MATCHES = 50
#: A JSON report is read whole: past this size, draw from the recordings instead.
MAX_REPORT_BYTES = 1 << 30


@dataclass(frozen=True, slots=True)
class Found:
    """The request to draw, in the report's shape, with its session entry and race window."""

    call: Mapping[str, Any]
    session: Mapping[str, Any] | None
    race_window: float | None

    def svg(self, *, standalone: bool = False) -> str:
        return diagram.draw(self.call, session=self.session, race_window=self.race_window, standalone=standalone)


@dataclass(frozen=True, slots=True)
class Wanted:
    """The request asked for: its id as text (as the exchange table's `request_id` shows it), the id's
    JSON type when given (`integer` or `string`, the table's `request_id_type`), and its session."""

    request_id: str
    session: str | None = None
    id_type: str | None = None

    def matches(self, call: Mapping[str, Any]) -> bool:
        request_id = call.get("request_id")
        return (
            str(request_id) == self.request_id
            and (self.id_type is None or type_of_id(request_id) == self.id_type)
            and (self.session is None or call.get("session") == self.session)
        )


def find(paths: list[str], wanted: Wanted, *, redacted: bool = False, merge: bool = False) -> Found:
    """The request WANTED, from one JSON report of `cancelwire audit --format json` or from recordings
    audited with the default settings; REDACTED: its payload values by type and length (`--redact`);
    MERGE: the two recordings judged as one (`--merge`, as the audit checks them)."""
    if len(paths) == 1 and _is_report(Path(paths[0])) and not merge:
        return _from_report(Path(paths[0]), wanted, redacted=redacted)
    return _from_recordings(paths, wanted, redacted=redacted, merge=merge)


def _is_report(path: Path) -> bool:
    if path.suffix != ".json" or not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(256).lstrip()
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    return head.startswith(b"{") and b'"schema_version"' in head


def _from_report(path: Path, wanted: Wanted, *, redacted: bool) -> Found:
    if path.stat().st_size > MAX_REPORT_BYTES:
        raise InputError(str(path), f"a JSON report over {MAX_REPORT_BYTES >> 20} MiB; draw from the recordings")
    try:
        data = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(str(path), f"not a JSON report: {exc}") from None
    except OSError as exc:
        raise InputError(str(path), exc.strerror or str(exc)) from None
    if not isinstance(data, dict) or not isinstance(data.get("cancellations"), list):
        raise InputError(str(path), "not a JSON report of cancelwire audit (no list of cancellations)")
    calls = [c for c in data["cancellations"] if isinstance(c, dict) and wanted.matches(c)]
    hint = "a JSON report holds cancelled calls only: draw any other request from the recordings"
    call = _one(calls, wanted, f"{path}: no cancelled call", hint)
    entry, window = _session_of(data, call)
    if redacted and not redact.was_redacted(data):
        call, entry = redact.report_call(call), redact.report_session(entry) if entry else None
    return Found(call, entry, window)


def _session_of(data: Mapping[str, Any], call: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, float | None]:
    sessions = data.get("sessions")
    listed = sessions if isinstance(sessions, list) else []
    entry = next((s for s in listed if isinstance(s, dict) and s.get("id") == call.get("session")), None)
    run = data.get("run")
    windows = run.get("race_windows") if isinstance(run, dict) else None
    window = windows.get(entry.get("vantage")) if isinstance(windows, dict) and entry else None
    return entry, window if isinstance(window, int | float) else None


def _from_recordings(paths: list[str], wanted: Wanted, *, redacted: bool, merge: bool = False) -> Found:
    found: list[dict[str, Any]] = []

    def keep(timeline: RequestTimeline, cancelled: CancelledCall | None) -> None:
        if len(found) < MAX_MATCHES and wanted.matches(
            {"request_id": timeline.request_id, "session": timeline.session_key}
        ):
            if redacted:  # the audit redacts what it keeps; the timeline handed here is the recording's
                timeline, cancelled = redact.timeline(timeline), redact.cancelled(cancelled) if cancelled else None
            found.append(forms.cancellation(cancelled) if cancelled else forms.exchange(timeline))

    result = audit(paths, AuditOptions(redact=redacted, merge=merge), on_exchange=keep)
    unreadable = [i for i in result.inputs if i.error and not i.sessions]
    if not found and unreadable:
        raise InputError(unreadable[0].path, str(unreadable[0].error))
    call = _one(found, wanted, "no request", "the exchange table (--exchanges) lists every id")
    entry = next((s for s in result.sessions if s.key == call["session"]), None)
    window = result.made.race_windows.get(entry.vantage.value) if entry else None
    return Found(call, document.session(entry) if entry else None, window)


def _one(calls: list[dict[str, Any]], wanted: Wanted, none: str, hint: str) -> dict[str, Any]:
    """The one request meant: an id text that is both an integer id and a string id needs --id-type (the
    engine keeps 1 and "1" apart), the same id in several sessions needs --session; within one session
    (both peers number their requests) the cancelled one, else the first."""
    request_id, session = wanted.request_id, wanted.session
    within = f" in session {session!r}" if session is not None else ""
    if not calls:
        raise CancelwireError(f"{none} with id {request_id!r}{within}", hint)
    if len({type_of_id(c.get("request_id")) for c in calls}) > 1:
        raise CancelwireError(
            f"id {request_id} is both an integer id and a string id{within}: two requests",
            f"say which: --request {request_id} --id-type integer (the id {request_id}), or --request {request_id} "
            f'--id-type string (the id "{request_id}")',
        )
    sessions = list(dict.fromkeys(str(c.get("session")) for c in calls))
    if len(sessions) > 1:
        shown = ", ".join(repr(s) for s in sessions[:10]) + (" …" if len(sessions) > 10 else "")
        raise CancelwireError(f"id {request_id!r} is in {len(sessions)} sessions: {shown}", "choose one with --session")
    return next((c for c in calls if c.get("outcome")), calls[0])


def svg_document(found: Found) -> str:
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + found.svg(standalone=True) + "\n"


def html_page(found: Found) -> str:
    """The diagram in a page of its own; like the report, it loads and runs nothing."""
    title = diagram.caption(found.call)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; base-uri 'none'; "
        "form-action 'none'\">\n"
        f"<title>{title}</title>\n</head>\n<body>\n<h1>{title}</h1>\n{found.svg()}\n</body>\n</html>\n"
    )
