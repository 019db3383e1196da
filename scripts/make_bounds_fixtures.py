#!/usr/bin/env python3
"""Writes the hostile stdio-transcript and capture reproducers of the bounds helper into tests/corpus/
(each with its `.expect.toml`), and the fixtures of the rules it added (tests/rules/<slug>/).

Transcripts are rendered from plain data here, never edited by hand. Captures are real samples from
sample_captures/ with single pcapng blocks rewritten by `Pcapng` below (a frame's time, a frame's
captured length), so a reader of this script sees exactly what each fixture changed and why.
Regenerate with `.venv/bin/python scripts/make_bounds_fixtures.py`.
"""

from __future__ import annotations

import gzip
import json
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth_capture  # the hostile captures written frame by frame

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus"
RULES = ROOT / "tests" / "rules"
CANCEL_SAMPLE = ROOT / "sample_captures" / "http" / "sdk-http-cancel-notification.pcapng"
"""A POST tools/call (id 3) cancelled by a notification in frame 70, its late result in frame 77."""

Message = dict[str, Any]
T0 = 1_796_227_626.0
"""2026-12-02: when the sessions below were 'recorded'."""


def req(i: int, method: str, params: Message | None = None) -> Message:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}}


def res(i: int, result: Message | None = None) -> Message:
    return {"jsonrpc": "2.0", "id": i, "result": result or {}}


INIT = req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}})
INIT_OK = res(1, {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}})
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL = req(2, "tools/call", {"name": "slow", "arguments": {}, "_meta": {"progressToken": "t2"}})
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t2", "progress": 1}}
CANCEL = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
SESSION: list[tuple[str, Message]] = [("c2s", INIT), ("s2c", INIT_OK), ("c2s", INITIALIZED), ("c2s", CALL)]
SESSION += [("s2c", PROGRESS), ("c2s", CANCEL), ("s2c", res(2, {"content": []}))]
"""A handshake, a call with progress, its cancel and a late reply: lines 2-8 of a transcript."""


def header(ts: Any = T0) -> Message:
    return {"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy", "ts": ts}


def record(direction: str, message: Message | str, ts: Any) -> Message:
    line = message if isinstance(message, str) else json.dumps(message, separators=(",", ":"))
    return {"ts": ts, "dir": direction, "line": line}


def transcript(stamps: dict[int, Any] | None = None, *, head: Message | None = None, exit_ts: Any = None) -> bytes:
    """The session as `cancelwire record` writes it; `stamps` replaces the time of a line (2-8)."""
    stamps = stamps or {}
    rows = [head or header()]
    for n, (direction, message) in enumerate(SESSION, start=2):
        rows.append(record(direction, message, stamps.get(n, T0 + n / 10)))
    rows.append({"ts": T0 + 1 if exit_ts is None else exit_ts, "event": "process-exited", "status": 0})
    return b"".join(json.dumps(row).encode() + b"\n" for row in rows)


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def expect(path: Path, **keys: Any) -> None:
    lines = []
    for key, value in keys.items():
        lines.append(f"{key} = {json.dumps(value)}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# -- pcapng -------------------------------------------------------------------------------------------


class Pcapng:
    """The blocks of a little-endian pcapng with one interface: enough to rewrite a frame's time or cut
    its captured bytes (Enhanced Packet Blocks only, as dumpcap writes them)."""

    def __init__(self, data: bytes) -> None:
        assert data[:4] == b"\x0a\x0d\x0d\x0a" and data[8:12] == b"\x4d\x3c\x2b\x1a", "little-endian pcapng"
        self.blocks: list[bytearray] = []
        self.units = 10**6  # the default if_tsresol
        at = 0
        while at < len(data):
            kind, size = struct.unpack_from("<II", data, at)
            block = bytearray(data[at : at + size])
            if kind == 1:
                self.units = self._tsresol(block) or self.units
            self.blocks.append(block)
            at += size

    @staticmethod
    def _tsresol(block: bytearray) -> int | None:
        at = 16
        while at + 4 <= len(block) - 4:
            code, size = struct.unpack_from("<HH", block, at)
            if code == 0:
                return None
            if code == 9:
                value = block[at + 4]
                return 2 ** (value & 0x7F) if value & 0x80 else 10 ** (value & 0x7F)
            at += 4 + (size + 3) // 4 * 4
        return None

    def frames(self) -> list[bytearray]:
        return [b for b in self.blocks if struct.unpack_from("<I", b, 0)[0] == 6]

    def time(self, number: int) -> float:
        high, low = struct.unpack_from("<II", self.frames()[number - 1], 12)
        return ((high << 32) | low) / self.units

    def set_time(self, number: int, seconds: float) -> None:
        units = int(seconds * self.units)
        struct.pack_into("<II", self.frames()[number - 1], 12, units >> 32, units & 0xFFFFFFFF)

    def cut(self, number: int, keep: int) -> None:
        """Frame `number` keeps its first `keep` captured bytes (its original length says what was sent)."""
        frames = self.frames()
        block = frames[number - 1]
        captured = struct.unpack_from("<I", block, 20)[0]
        assert keep < captured
        options = block[28 + (captured + 3) // 4 * 4 : -4]
        data = bytes(block[28 : 28 + keep]).ljust((keep + 3) // 4 * 4, b"\0")
        body = bytes(block[8:20]) + struct.pack("<II", keep, struct.unpack_from("<I", block, 24)[0]) + data + options
        size = 12 + len(body)
        new = struct.pack("<II", 6, size) + body + struct.pack("<I", size)
        self.blocks[self.blocks.index(block)] = bytearray(new)

    def data(self) -> bytes:
        return b"".join(bytes(b) for b in self.blocks)


# -- the fixtures -------------------------------------------------------------------------------------


def implausible_transcript_times() -> None:
    """Each kind of record of a transcript with a time no clock reads: the header (year 9999), the
    progress (negative), the late reply (1e308) and the process's exit (10**30)."""
    folder = CORPUS / "transcript"
    data = transcript({5: -5e9, 8: 1e308}, head=header(253_402_300_799.0), exit_ts=10**30)
    write(folder / "times-implausible.jsonl", data)
    expect(
        folder / "times-implausible.expect.toml",
        why='the fast path took year 9999, negative and 1e308 times: "crossed the cancel 1e308 s after it"',
        owner="bounds (readers/transcript)",
        exit=0,
        findings=["implausible-time", "late-result-race"],
    )


def implausible_frame_time() -> None:
    """The capture's late result (frame 77) stamped in year 2500."""
    capture = Pcapng(CANCEL_SAMPLE.read_bytes())
    capture.set_time(77, 16_725_225_600.5)  # 2500-01-01: nanosecond units end in 2554
    write(CORPUS / "pcap" / "frame-time-year-2500.pcapng", capture.data())
    expect(
        CORPUS / "pcap" / "frame-time-year-2500.expect.toml",
        why='a frame stamped year 2500 made "server answered 14928998056.8 s after the cancel"',
        owner="bounds (readers/pcap_pass)",
        exit=0,
        findings=["implausible-time", "response-after-cancel"],
    )


def task_call_id_reused() -> None:
    """A task's call (id 2) held for its tasks/cancel; the client reuses id 2 for a call it cancels, which
    is never answered; 800 s of pings follow, so both holds (300 s) end before the recording does."""
    task = {"taskId": "task-1", "status": "working"}
    rows: list[tuple[str, Message]] = [("c2s", INIT), ("s2c", INIT_OK), ("c2s", INITIALIZED)]
    rows += [("c2s", req(2, "tools/call", {"task": {"ttl": 60000}, "name": "export", "arguments": {}}))]
    rows += [("s2c", res(2, {"task": task})), ("c2s", req(3, "tasks/cancel", {"taskId": "task-1"}))]
    rows += [("s2c", res(3, {**task, "status": "cancelled"})), ("c2s", req(2, "tools/call", {"name": "write"}))]
    rows += [("c2s", CANCEL)]
    lines = [header()] + [record(d, m, T0 + n / 10) for n, (d, m) in enumerate(rows)]
    for k in range(4):
        lines += [record("c2s", req(100 + k, "ping"), T0 + 200 * (k + 1))]
        lines += [record("s2c", res(100 + k), T0 + 200 * (k + 1) + 0.01)]
    folder = CORPUS / "transcript"
    write(folder / "task-call-id-reused.jsonl", b"".join(json.dumps(row).encode() + b"\n" for row in lines))
    expect(
        folder / "task-call-id-reused.expect.toml",
        why="a call reusing the id of a task's held call lost its own hold: judged only at the recording's end",
        owner="bounds (pending: holds keyed by request seq)",
        exit=1,
        findings=["id-reused"],
    )


def response_budget() -> None:
    """One HTTP/2 connection: three tools/call POSTs answered with 12 MiB JSON bodies sent round-robin, so
    36 MiB are open at once (the budget is 32 MiB per connection); two such bodies (24 MiB) are clean."""
    folder = RULES / "response-budget-exceeded"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, streams in (("triggers", 3), ("clean", 2)):
            raw = Path(tmp) / f"{name}.pcapng"
            synth_capture.h2_bodies(raw, streams, 12, end=True)
            (folder / f"{name}.pcapng.gz").write_bytes(gzip.compress(raw.read_bytes(), 9, mtime=0))
    (folder / "triggers.expect.toml").write_text(
        "# three 12 MiB JSON bodies open at once on one HTTP/2 connection: the third stream's (tools/call id 2)\n"
        "# would take the bytes held past 32 MiB at frame 692; dropped and named, the other two are read\n"
        '[[finding]]\nrequest_id = 2\nseverity = "warning"\ncertainty = "exact"\nevidence = [692]\n'
    )
    (folder / "clean.expect.toml").write_text("# two 12 MiB bodies open at once (24 MiB): both read\nfinding = []\n")


def too_many_connections() -> None:
    """One tools/call answered as JSON on a keep-alive connection, then thousands of handshakes left open: past
    4,096 connections at once the least recently active are finished early and named; 4,000 are clean."""
    folder = RULES / "too-many-connections"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, opened in (("triggers", 4100), ("clean", 4000)):
            raw = Path(tmp) / f"{name}.pcapng"
            cap = synth_capture.Pcapng(raw)
            first = synth_capture.Tcp(cap, 9000)
            synth_capture.post(first, json.loads(synth_capture.call(1)), None)
            answer = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": False}}).encode()
            head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(answer)}\r\n\r\n"
            first.send(False, head.encode() + answer)
            for n in range(opened):
                synth_capture.Tcp(cap, 10_000 + n)
            cap.close()
            (folder / f"{name}.pcapng.gz").write_bytes(gzip.compress(raw.read_bytes(), 9, mtime=0))
    (folder / "triggers.expect.toml").write_text(
        "# 4,101 connections open at once (one answered, 4,100 handshakes): the 4,097th is one too many at\n"
        "# frame 12291; the 256 least recently active are finished early and named\n"
        '[[finding]]\nseverity = "warning"\ncertainty = "exact"\nevidence = [12291]\n'
    )
    (folder / "clean.expect.toml").write_text("# 4,001 connections open at once: all kept\nfinding = []\n")


def lines_of(rows: list[Any]) -> bytes:
    """Records (dicts) or raw record text (str, for what json.dumps cannot write; TS is a time), one per line."""
    texts = (row.replace("TS", repr(T0 + 2)) if isinstance(row, str) else json.dumps(row) for row in rows)
    return b"".join(text.encode() + b"\n" for text in texts)


def handshake() -> list[Any]:
    """The handshake, initialize answered in 10 ms: a round trip that leaves the race window at its default."""
    stamps = [T0 + 0.1, T0 + 0.11, T0 + 0.3]
    return [header()] + [record(d, m, ts) for (d, m), ts in zip(SESSION[:3], stamps, strict=True)]


#: Ids of every JSON type, as wire text: each one a tools/call, its cancel and its reply.
IDS = ["18446744073709551616", "1" + "0" * 400, "1.5", "1e999", "-0", '{"a":1}', "[1]", "true", "null"]
IDS += ['"\\ud800"', '"a\\u0000b"', '"\\u202eevil"']


def hostile_transcripts() -> None:
    """The stdio transcript sweep's reproducers (tests/test_bounds_hostile.py says what each must give)."""
    folder = CORPUS / "transcript"
    rows = handshake()
    for n, wire_id in enumerate(IDS):
        t = T0 + 1 + n
        call = '{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"w"}}'.replace("ID", wire_id)
        cancel = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":ID}}'.replace("ID", wire_id)
        reply = '{"jsonrpc":"2.0","id":ID,"result":{}}'.replace("ID", wire_id)
        rows += [record("c2s", call, t), record("c2s", cancel, t + 0.1), record("s2c", reply, t + 0.2)]
    write(folder / "ids-of-every-type.jsonl", lines_of(rows))

    rows = handshake()
    rows.append(record("c2s", '{"jsonrpc":"2.0","id":2,"id":3,"method":"tools/call","method":"tools/list"}', T0 + 1))
    reply = json.dumps(json.dumps({"jsonrpc": "2.0", "id": 3, "result": {}}))
    rows.append('{"ts": TS, "dir": "c2s", "dir": "s2c", "line": "{}", "line": REPLY}'.replace("REPLY", reply))
    rows.append(record("s2c", '{"jsonrpc":"2.0","id":2,"result":{},"error":{"code":1,"message":"x"}}', T0 + 1.2))
    write(folder / "duplicate-keys.jsonl", lines_of(rows))

    rows = handshake()
    call = '{"jsonrpc":"2.0","id":2,"method":"tools/call\\udc00","params":{"name":"s\\ud800"}}'
    cancel = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"\\ud83d"}}'
    rows += [record("c2s", call, T0 + 1), record("c2s", cancel, T0 + 1.1)]
    rows.append(record("s2c", '{"jsonrpc":"2.0","id":2,"result":{}}', T0 + 1.2))
    rows.append('{"ts": TS, "dir": "s2c\\ud800", "line": "x"}')
    write(folder / "lone-surrogates.jsonl", lines_of(rows))

    rows = handshake()
    meta = {"name": "w", "_meta": {"progressToken": 2}}
    rows.append(record("c2s", req(2, "tools/call", meta), T0 + 1))
    progress = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":2,"progress":1e999}}'
    rows.append(record("s2c", progress, T0 + 1.1))
    rows.append('{"ts": 1e999, "dir": "s2c", "line": "{}"}')
    rows.append(record("s2c", '{"jsonrpc":"2.0","id":2,"result":{"n":-1e999}}', T0 + 1.3))
    rows.append('{"ts": -1e999, "event": "process-exited", "status": 1e999}')
    write(folder / "numbers-1e999.jsonl", lines_of(rows))

    text = lines_of(handshake() + [record(d, m, T0 + 1 + n / 10) for n, (d, m) in enumerate(SESSION[3:])])
    write(folder / "bom-crlf.jsonl", b"\xef\xbb\xbf" + text.replace(b"\n", b"\r\n"))

    depth = 100_000
    rows = [*handshake(), "[" * depth, record("c2s", "[" * depth, T0 + 1)]
    deep = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":' + "[" * depth + "]" * depth + "}"
    rows += [record("c2s", deep, T0 + 2), record("c2s", '{"jsonrpc":"2.0","id":3,"method":"ping"}', T0 + 3)]
    write(folder / "deep-nesting.jsonl.gz", gzip.compress(lines_of(rows), 9, mtime=0))

    garbage = bytes((n * 7919 + 13) % 256 for n in range(65_536))  # every byte value, no structure
    write(folder / "binary-after-header.jsonl", lines_of(handshake()) + garbage)

    data = lines_of(handshake() + [record(d, m, T0 + 1 + n / 10) for n, (d, m) in enumerate(SESSION[3:])])
    data = data.replace(b'\\"slow\\"', b'\\"sl\\u0000ow\xff\xfe\\"', 1)
    data += b'{"ts": 1796227630.0, "dir": "s2c", "line": "\x00\x01\x1b[2J\xc3\x28"}\n' + b"\x00" * 100 + b"\n"
    write(folder / "nul-and-invalid-utf8.jsonl", data)


def hostile_captures() -> None:
    """The late result (frame 77) stamped 5 s before the cancel (frame 70) and frame 72 an hour before it;
    and the late result cut by a snaplen inside its JSON (60 of its 110 payload bytes kept)."""
    capture = Pcapng(CANCEL_SAMPLE.read_bytes())
    cancel = capture.time(70)
    capture.set_time(77, cancel - 5.0)
    capture.set_time(72, cancel - 3600.0)
    write(CORPUS / "pcap" / "frames-out-of-time-order.pcapng", capture.data())
    capture = Pcapng(CANCEL_SAMPLE.read_bytes())
    capture.cut(77, 4 + 20 + 32 + 60)  # pcapng's 4-byte loopback header, IPv4, TCP with options, payload
    write(CORPUS / "pcap" / "snaplen-cut-mid-json.pcapng", capture.data())


#: The sweep's reproducers: what each checks (none crashed; tests/test_bounds_hostile.py holds their exact
#: findings and checks every output format).
SWEEP = {
    "transcript/ids-of-every-type.jsonl": "ids of every JSON type (huge integers, 1.5, 1e999, -0, object, array, "
    "true, null, a lone surrogate, a NUL, a bidi override)",
    "transcript/duplicate-keys.jsonl": "duplicate keys in a message and in a record (the last wins)",
    "transcript/lone-surrogates.jsonl": "lone surrogates in \\u escapes: a method, a tool, a reason, a record key",
    "transcript/numbers-1e999.jsonl": "1e999 and -1e999 as a time, a progress, a result value and an exit status",
    "transcript/bom-crlf.jsonl": "a byte order mark and CRLF line ends together",
    "transcript/binary-after-header.jsonl": "64 KiB of binary after a valid handshake",
    "transcript/nul-and-invalid-utf8.jsonl": "NUL and invalid UTF-8 inside records, raw and escaped",
    "transcript/deep-nesting.jsonl.gz": "100,000 levels of nesting in a record, a line and a call's params",
    "pcap/frames-out-of-time-order.pcapng": "frames out of time order (the reply 5 s before the cancel)",
    "pcap/snaplen-cut-mid-json.pcapng": "the late reply's frame cut by a snaplen inside its JSON",
}


def sweep_expectations() -> None:
    for name, what in SWEEP.items():
        stem = name.split(".")[0]
        expect(
            CORPUS / f"{stem}.expect.toml",
            why=f"not covered by the fuzzers: {what}",
            owner="bounds (scripts/make_bounds_fixtures.py; exact findings in tests/test_bounds_hostile.py)",
            exit=0,
            args=["--fail-on", "never"],
        )


def main() -> None:
    implausible_transcript_times()
    implausible_frame_time()
    task_call_id_reused()
    response_budget()
    too_many_connections()
    hostile_transcripts()
    hostile_captures()
    sweep_expectations()


if __name__ == "__main__":
    main()
