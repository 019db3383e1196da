"""tshark's field output: the one command cancelwire runs, its version check, and one frame per line.

No pyshark here: `capture/reader.py` finds tshark and drives the pass.
"""

from __future__ import annotations

import binascii
import functools
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ...errors import ToolMissingError
from ...model.timestamps import EARLIEST, LATEST

INSTALL_HINT = "install it: sudo apt-get install tshark (Debian/Ubuntu), or Wireshark's installer elsewhere"
MIN_TSHARK = (3, 6)
FIELDS = (
    "frame.number",
    "frame.time_epoch",
    "tcp.stream",
    "ip.src",
    "ipv6.src",
    "ip.dst",
    "ipv6.dst",
    "tcp.srcport",
    "tcp.dstport",
    "tcp.seq",
    "tcp.ack",
    "tcp.len",
    "tcp.flags",
    "tcp.window_size",
    "tcp.payload",
)
"""Sequence and acknowledgement numbers are absolute (no sequence analysis, which costs time): `tcp.Reassembly`
works modulo 2**32. `tcp.len` against the captured payload shows a snaplen that cut the segment.
A zero window is `tcp.window_size == 0` (the scaled window) on a frame without SYN/FIN/RST."""
DECRYPTED_FIELD = "data.data"
"""With a keylog, decrypted TLS records reach the `data` dissector once http's TLS heuristics are off."""


@functools.lru_cache(maxsize=4)
def tshark_version(tshark: str) -> tuple[int, ...]:
    """Checked once per tshark binary; older than MIN_TSHARK is refused (field names differ)."""
    try:
        out = subprocess.run([tshark, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolMissingError("tshark", f"cannot run {tshark}: {exc}", INSTALL_HINT) from exc
    match = re.search(r"TShark \(Wireshark\) (\d+)\.(\d+)\.(\d+)", out.stdout)
    if not match:
        raise ToolMissingError("tshark", f"{tshark} --version did not say its version", INSTALL_HINT)
    version = tuple(int(part) for part in match.groups())
    if version[:2] < MIN_TSHARK:
        raise ToolMissingError(
            "tshark",
            f"tshark {'.'.join(map(str, version))} is too old (need {MIN_TSHARK[0]}.{MIN_TSHARK[1]}+)",
            INSTALL_HINT,
        )
    return version


def tshark_command(tshark: str, capture: Path, keylog: Path | None) -> list[str]:
    """The one tshark pass: TCP fields per frame, tab-separated, every occurrence joined by commas."""
    cmd = [
        tshark,
        "-r",
        str(capture),
        "-n",
        "-T",
        "fields",
        "-E",
        "separator=/t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
        "-E",
        "header=n",
        "-o",
        "tcp.analyze_sequence_numbers:FALSE",
    ]
    fields = list(FIELDS)
    if keylog is not None:
        cmd += [
            "-o",
            f"tls.keylog_file:{keylog}",
            "--disable-heuristic",
            "http_tls",
            "--disable-heuristic",
            "http2_tls",
            # one protocol per flag: tshark 4.0 disables only the first name of a comma list, and an
            # enabled http2 takes the decrypted bytes of an ALPN h2 session away from `data`
            "--disable-protocol",
            "http",
            "--disable-protocol",
            "http2",
        ]
        fields.append(DECRYPTED_FIELD)
    else:
        # nothing above TCP is needed: tshark's own HTTP would only cost time (it also drops open
        # bodies), and without TLS to decrypt, TCP reassembly is ours
        cmd += ["-o", "tcp.desegment_tcp_streams:FALSE"]
        for name in ("http", "http2", "tls"):
            cmd += ["--disable-protocol", name]
    for name in fields:
        cmd += ["-e", name]
    return cmd


@dataclass(frozen=True, slots=True)
class Frame:
    number: int
    ts: float | None
    """Seconds since 1970; None when the capture's time for the frame cannot be a clock reading."""
    stream: int
    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int
    window: int
    """The scaled receive window; -1 when tshark gave none."""
    payload: bytes
    """The captured TCP payload (shorter than `length` when the snaplen cut the frame)."""
    length: int
    """The TCP payload length on the wire (`tcp.len`)."""
    decrypted: tuple[bytes, ...]


def parse_line(line: bytes) -> Frame | int | None:
    """A frame with TCP, the number of a frame without TCP, or None for a line that is not a frame."""
    cols = line.rstrip(b"\r\n").split(b"\t")
    if len(cols) < len(FIELDS) or not cols[0].isdigit():
        return None
    number = int(cols[0])
    if not cols[2]:
        return number
    # a field occurs more than once only in tunnels and multi-record TLS frames: split only then
    first = [c.split(b",", 1)[0] for c in cols[:15]] if b"," in line else cols
    try:
        payload = binascii.a2b_hex(first[14]) if first[14] else b""
        ts = float(first[1])
        return Frame(
            number,
            ts if EARLIEST <= ts < LATEST else None,  # the pass names frames without a time
            int(first[2]),
            (first[3] or first[4]).decode(),
            (first[5] or first[6]).decode(),
            int(first[7]),
            int(first[8]),
            int(first[9] or 0),
            int(first[10] or 0),
            int(first[12] or b"0", 16),
            int(first[13] or -1),
            payload,
            int(first[11] or 0),
            tuple(binascii.a2b_hex(x) for x in cols[15].split(b",")) if len(cols) > 15 and cols[15] else (),
        )
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return number
