"""The cancelwire transcript format: written by `recorder`, read by `readers.transcript`.

JSON Lines, one record per line:

    {"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy", "command": [...], "ts": T}
    {"ts": T, "dir": "c2s" | "s2c" | "stderr", "line": "<exact line without its newline>"}
    {"ts": T, "event": "process-exited", "status": N}            (+ "signal": S when killed)

The header is optional (a transcript written by another tool may start with records). The
version counts changes of this format, not releases: a reader refuses a newer one by name.
"""

from __future__ import annotations

FORMAT_VERSION = 1
"""The version `recorder` writes and the newest `readers.transcript` reads."""
HEADER_KEY = "cancelwire_transcript"
"""The header record's member holding `FORMAT_VERSION`."""
