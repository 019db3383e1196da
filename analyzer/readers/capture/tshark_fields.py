"""tshark's field output (`--capture-reader tshark`): the one command cancelwire runs, its version check, one
frame per line, and what tshark says on its standard error.

No pyshark here: `capture/reader.py` finds tshark.
"""

from __future__ import annotations

import binascii
import functools
import re
import subprocess
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import IO

from ...errors import InputError, ToolMissingError
from ...model import AnomalyName
from ...model.timestamps import EARLIEST, LATEST
from .frames import Frame, ReadProblem

_NOISE = re.compile(r"^Running as user .* This could be dangerous\.$")
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
            "" if EARLIEST <= ts < LATEST else first[1][:40].decode("ascii", "replace"),
        )
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return number


class TsharkFrames:
    """The frames of one capture as tshark's field pass prints them, then what tshark said on stderr."""

    def __init__(self, tshark: str, path: Path, name: str, keylog: Path | None) -> None:
        self.tshark = tshark
        self.path = path
        self.name = name
        self.keylog = keylog
        self.count = 0
        self.last = 0
        self.rc = 0
        self.stderr = ""

    def frames(self) -> Iterator[Frame | int]:
        with tempfile.TemporaryFile() as stderr:
            self.rc = yield from self._run(stderr)
            stderr.seek(0)
            self.stderr = stderr.read().decode("utf-8", "replace")

    def _run(self, stderr: IO[bytes]) -> Generator[Frame | int, None, int]:
        cmd = tshark_command(self.tshark, self.path, self.keylog)
        try:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise ToolMissingError(self.name, f"cannot run tshark: {exc}", INSTALL_HINT) from exc
        try:
            assert proc.stdout is not None  # Popen with stdout=PIPE always has one
            for line in proc.stdout:
                parsed = parse_line(line)
                if parsed is None:
                    continue
                self.count += 1
                self.last = parsed if isinstance(parsed, int) else parsed.number
                yield parsed
            status: int = proc.wait()
            return status
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def problems(self) -> list[ReadProblem]:
        """tshark's complaints: an unreadable file is an InputError, anything else an anomaly."""
        messages = [ln.strip() for ln in self.stderr.splitlines() if ln.strip() and not _NOISE.match(ln.strip())]
        shown = [m.replace(str(self.path), self.name) for m in messages]
        if self.rc != 0 and self.count == 0:
            raise InputError(
                self.name,
                f"tshark cannot read it: {'; '.join(shown) or f'exit status {self.rc}'}",
                "is it a pcap/pcapng capture?",
            )
        return [
            ReadProblem(
                AnomalyName.CAPTURE_TRUNCATED,
                f"the capture ends in the middle of a packet after frame {self.last}; "
                f"everything before it was read ({message})",
                None,
            )
            if "cut short in the middle of a packet" in message
            else ReadProblem(AnomalyName.CAPTURE_TSHARK_ERROR, message, None)
            for message in shown
        ]
