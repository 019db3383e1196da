#!/usr/bin/env python3
"""HAND-WRITTEN captures of a server's log notification around a client's FIN, in tests/fixtures/crossing/
(see tests/test_crossed_note.py). No SDK peer can be made to hold a segment on cue, so these are written
segment by segment like `scripts/make_crossing_fixtures.py`'s (whose segments, request and opening they reuse), as a
capture at the client's end of a slow link would hold them:

    .venv/bin/python scripts/make_crossed_note_fixtures.py [--out tests/fixtures/crossing]

Both: a 2026-07-28 Streamable HTTP `tools/call` (id 2) POSTed on one connection and answered
`200 text/event-stream`; the client closes the connection (FIN) to cancel it, and the server's next event on
the stream is a `notifications/message` (a log line, not progress: it reaches the request's timeline as a
related message). Then the server's FIN; no result.

  note-before-fin.pcapng   the note's segment is captured after the client's FIN but acknowledges only the
                           POST: the server wrote it before the FIN reached it, so it crossed the close.
  note-after-fin.pcapng    the nearest miss: the same segment acknowledges the FIN: a write after the close.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_crossing_fixtures import ACK, FIN, PSH, open_sse_exchange, segment
from synth_capture import Pcapng

REPO = Path(__file__).resolve().parent.parent


def write(out: Path, *, crossed: bool) -> None:
    cap = Pcapng(out)
    fin, at = open_sse_exchange(cap)
    segment(cap, True, fin, at, ACK | FIN)
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "exporting"}}
    event = f"event: message\ndata: {json.dumps(note)}\n\n".encode()
    segment(cap, False, at, fin if crossed else fin + 1, ACK | PSH, event)
    end = at + len(event)
    segment(cap, False, end, fin + 1, ACK | FIN)
    segment(cap, True, fin + 1, end + 1, ACK)
    cap.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "fixtures" / "crossing")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    write(args.out / "note-before-fin.pcapng", crossed=True)
    write(args.out / "note-after-fin.pcapng", crossed=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
