"""The direct capture reader (`readers/capture/direct.py`) against tshark's field pass, its oracle.

* Every capture in the repository (sample_captures/, tests/): the direct reader's frames are tshark's, record
  for record. tshark costs about 0.3 s of CPU per file, so its records are kept as a digest per file in
  `tests/golden/capture/tshark-frames.json` (`CANCELWIRE_UPDATE_GOLDEN=1` runs tshark on every file and rewrites it;
  `CANCELWIRE_TSHARK_ALL=1` compares live on every file), and a representative set is compared live on
  every run, which also shows that the digests are still tshark's.
* The same set: the JSON report of `--capture-reader direct` is that of `--capture-reader tshark`, byte for
  byte, but for the setting that names the reader.
* Hand-built files (tests/synth_pcap.py) for every container and link type the reader knows, in one pcapng
  tshark reads too; IP fragments, unknown link types and damage (truncated blocks, absurd lengths, wrong
  magic, a 4 GB claimed block) are named with the frame, never a traceback, never read into memory.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import shutil
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
import synth_pcap as sp
from cancelwire.cli.main import main
from cancelwire.errors import InputError
from cancelwire.model import Anomaly, AnomalyName, Event
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.base import CaptureReaderChoice
from cancelwire.readers.capture import pcap_file
from cancelwire.readers.capture import reader as capture_reader
from cancelwire.readers.capture.direct import DirectFrames, linktypes_known
from cancelwire.readers.capture.frames import Frame, ReadProblem
from cancelwire.readers.capture.reader import READER
from cancelwire.readers.capture.tshark_fields import TsharkFrames
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "capture" / "tshark-frames.json"
TSHARK = shutil.which("tshark")
NEEDS_TSHARK = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed")
CAPTURES = sorted(
    p.relative_to(ROOT)
    for folder in ("sample_captures", "tests")
    for p in (ROOT / folder).rglob("*")
    if p.is_file() and p.name.endswith((".pcap", ".pcapng", ".pcap.gz", ".pcapng.gz"))
)
LIVE = [
    "sample_captures/http/bad-server-writes-after-disconnect.pcapng",  # Ethernet-less loopback (raw IP), HTTP/1.1
    "sample_captures/http2/sdk-h2c-gzip-sse-cancel.pcapng",  # HTTP/2, gzip
    "sample_captures/gosdk/gosdk-h2c-cancel-stream-reset-first.pcapng",
    "sample_captures/slow-link/sdk-http-result-crosses-close.server-end.pcapng",  # netem link, retransmissions
    "sample_captures/http/truncated.pcapng",  # cut short
    "tests/corpus/pcap/frame-time-year-2500.pcapng",  # a time past 2106
    "tests/corpus/pcap/snaplen-cut-mid-json.pcapng",
    "tests/rules/tshark-error/triggers.pcapng",  # damaged
    "tests/rules/tcp-overlap-conflict/triggers.pcap",  # pcap, Ethernet
]
DIFFERENT_PROBLEMS = {
    "sample_captures/http/truncated.pcapng": "cut short: each reader words what it found (same anomaly, same frame)",
    "tests/corpus/pcap/frame-of-a-cut-capture.pcapng": "cut short: each reader words what it found",
    "tests/rules/tshark-error/triggers.pcapng": "a block of length 8: tshark says it on stderr (tshark-error); the "
    "direct reader stops there and names it as the capture's end (truncated-input), at the same frame",
}
"""Files whose problems differ by reader, and why; their frames are the same."""


def _local(path: Path, tmp: Path) -> Path:
    if path.suffix != ".gz":
        return ROOT / path
    out = tmp / path.stem
    out.write_bytes(gzip.decompress((ROOT / path).read_bytes()))
    return out


def _digest(frames: list[Frame | int]) -> str:
    return hashlib.sha256(repr(frames).encode()).hexdigest()


def _direct(path: Path) -> tuple[list[Frame | int], list[ReadProblem] | str]:
    source = DirectFrames(path, path.name)
    frames = list(source.frames())
    try:
        return frames, source.problems()
    except InputError as exc:
        return frames, str(exc)


def _tshark(path: Path) -> tuple[list[Frame | int], list[ReadProblem] | str]:
    assert TSHARK is not None
    source = TsharkFrames(TSHARK, path, path.name, None)
    frames = list(source.frames())
    try:
        return frames, source.problems()
    except InputError as exc:
        return frames, str(exc)


def _names(problems: list[ReadProblem] | str) -> list[str] | str:
    return problems if isinstance(problems, str) else [p.name.value for p in problems]


def test_every_capture_is_in_the_golden(tmp_path: Path) -> None:
    if os.environ.get("CANCELWIRE_UPDATE_GOLDEN"):
        assert TSHARK is not None, "regenerating tshark-frames.json needs tshark"
        table = {}
        for path in CAPTURES:
            frames, problems = _tshark(_local(path, tmp_path))
            table[str(path)] = {"frames": len(frames), "sha256": _digest(frames), "problems": _names(problems)}
        GOLDEN.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    assert sorted(json.loads(GOLDEN.read_text())) == [str(p) for p in CAPTURES]


@pytest.mark.parametrize("path", CAPTURES, ids=str)
def test_direct_frames_are_tsharks(path: Path, tmp_path: Path) -> None:
    golden = json.loads(GOLDEN.read_text())[str(path)]
    local = _local(path, tmp_path)
    frames, problems = _direct(local)
    if os.environ.get("CANCELWIRE_TSHARK_ALL") and TSHARK is not None:
        theirs, _ = _tshark(local)
        assert frames == theirs
    assert (len(frames), _digest(frames)) == (golden["frames"], golden["sha256"])
    if str(path) not in DIFFERENT_PROBLEMS:
        assert _names(problems) == golden["problems"]


@NEEDS_TSHARK
@pytest.mark.parametrize("path", LIVE)
def test_live_tshark_gives_the_same_frames_and_digest(path: str, tmp_path: Path) -> None:
    local = _local(Path(path), tmp_path)
    ours, our_problems = _direct(local)
    theirs, their_problems = _tshark(local)
    assert ours == theirs
    assert _digest(theirs) == json.loads(GOLDEN.read_text())[path]["sha256"]
    if path in DIFFERENT_PROBLEMS:
        assert isinstance(our_problems, list) and [p.name for p in our_problems] == [AnomalyName.CAPTURE_TRUNCATED]
        assert (
            f"past frame {len(ours)}" in our_problems[0].detail or f"after frame {len(ours)}" in our_problems[0].detail
        )
    else:
        assert our_problems == their_problems


def _report(path: Path, reader: str, tmp_path: Path) -> str:
    out = tmp_path / f"{reader}.json"
    argv = [str(path), "--format", "json", "-o", str(out), "--fail-on", "never", "--capture-reader", reader]
    assert main(["audit", *argv]) == 0
    report = json.loads(out.read_text())
    report["run"]["generated"] = "X"
    settings_made = report["run"]["settings"]
    assert {"setting": "capture-reader", "value": reader, "source": "command line"} in settings_made
    report["run"]["settings"] = [s for s in settings_made if s["setting"] != "capture-reader"]
    return json.dumps(report, sort_keys=True)


@NEEDS_TSHARK
@pytest.mark.parametrize("path", [p for p in LIVE if p not in DIFFERENT_PROBLEMS])
def test_json_report_is_the_same_with_either_reader(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert _report(Path(path), "direct", tmp_path) == _report(Path(path), "tshark", tmp_path)


# -- hand-built captures ---------------------------------------------------------------------------------

C4, S4, C6, S6 = "10.0.0.1", "10.0.0.2", "fd00::1", "fd00::2"
BODY = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"


def _conversation(sport: int, *, v6: bool = False) -> list[bytes]:
    """A handshake, a request, its ACK and a FIN, as IP packets."""
    ip, c, s = (sp.ipv6, C6, S6) if v6 else (sp.ipv4, C4, S4)
    return [
        ip(c, s, sp.tcp(sport, 8000, 100, 0, 0x02)),
        ip(s, c, sp.tcp(8000, sport, 900, 101, 0x12)),
        ip(c, s, sp.tcp(sport, 8000, 101, 901, 0x18, BODY, window=300)),
        ip(s, c, sp.tcp(8000, sport, 901, 101 + len(BODY), 0x10, window=0)),
        ip(c, s, sp.tcp(sport, 8000, 101 + len(BODY), 901, 0x11)),
    ]


def _every_link(order: str) -> bytes:
    """One section in byte order ORDER: an interface per link type, each with its own conversation and time
    resolution; IPv6 conversations pass a hop-by-hop header and an atomic fragment header."""
    links = [
        (sp.ETHERNET, lambda ip: sp.ether(ip), 6, False),
        (sp.ETHERNET, lambda ip: sp.ether(ip, (0x8100,)), 9, True),
        (sp.ETHERNET, lambda ip: sp.ether(ip, (0x88A8, 0x8100)), 6, False),
        (sp.SLL, sp.sll, 3, True),
        (sp.SLL2, sp.sll2, 0x80 | 20, False),
        (sp.NULL, lambda ip: sp.null(ip, "<"), 6, True),
        (sp.NULL, lambda ip: sp.null(ip, ">"), 6, False),
        (sp.LOOP, lambda ip: sp.null(ip, ">"), 6, True),
        (sp.RAW, lambda ip: ip, 6, False),
        (sp.IPV4, lambda ip: ip, 6, False),
        (sp.IPV6, lambda ip: ip, 6, True),
    ]
    out = sp.section(order)
    out += b"".join(sp.interface(link, order, tsresol=res) for link, _, res, _ in links)
    for n, (_, wrap, res, v6) in enumerate(links):
        per = 2 ** (res & 0x7F) if res & 0x80 else 10 ** (res & 0x7F)
        for k, packet in enumerate(_conversation(40000 + n + (100 if order == ">" else 0), v6=v6)):
            if v6 and k == 2:  # walk a hop-by-hop and an atomic fragment header
                segment = packet[40:]
                extensions = sp.hop_by_hop(44) + sp.fragment_header(6, 0, False)
                packet = sp.ipv6(C6, S6, segment, extensions=extensions, first=0)
            out += sp.epb(n, (1_733_300_000 + n) * per + per // 3 + k, wrap(packet), order)
    return out


@NEEDS_TSHARK
def test_every_link_type_both_byte_orders_as_tshark_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "links.pcapng"
    path.write_bytes(_every_link("<") + _every_link(">"))
    ours, problems = _direct(path)
    assert ours == _tshark(path)[0]
    assert problems == []
    frames = [f for f in ours if isinstance(f, Frame)]
    assert len(frames) == 2 * 11 * 5 and len({f.stream for f in frames}) == 22
    assert {f.window for f in frames if f.number % 5 == 3} == {300 << 7}  # scaled: both SYNs offered 7
    assert linktypes_known(path)


@NEEDS_TSHARK
@pytest.mark.parametrize(("order", "nano"), [("<", False), (">", False), ("<", True), (">", True)])
def test_pcap_in_both_byte_orders_and_resolutions(order: str, nano: bool, tmp_path: Path) -> None:
    path = tmp_path / "c.pcap"
    frac = 123_456_789 if nano else 123_456
    path.write_bytes(
        sp.pcap([(1_733_300_000, frac, p) for p in _conversation(40000)], linktype=sp.RAW, order=order, nano=nano)
    )
    ours, problems = _direct(path)
    assert ours == _tshark(path)[0] and problems == []
    assert (
        isinstance(ours[0], Frame) and ours[0].ts == (1_733_300_000 * 10**9 + (frac if nano else frac * 1000)) / 10**9
    )


@pytest.mark.parametrize("chunk", [1, 7, 64, 1000])
def test_the_read_buffers_size_changes_nothing(chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is read `CHUNK` bytes at a time (1 MB): blocks and records that straddle a refill, in two
    pcapng sections of either byte order, a pcap file and every damaged file, read as in one piece."""
    files = {
        "links.pcapng": _every_link("<") + _every_link(">"),
        "c.pcap": sp.pcap([(1_733_300_000, n, p) for n, p in enumerate(_conversation(40000))], linktype=sp.RAW),
    } | {f"damage-{n}.pcapng": data for n, (data, _, _) in enumerate(DAMAGE.values())}
    whole = {}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        whole[name] = _direct(tmp_path / name)
    monkeypatch.setattr(pcap_file, "CHUNK", chunk)
    for name in files:
        assert _direct(tmp_path / name) == whole[name], name


@NEEDS_TSHARK
def test_port_reuse_starts_a_new_stream_as_in_tshark(tmp_path: Path) -> None:
    first = _conversation(40000)
    again = [
        sp.ipv4(C4, S4, sp.tcp(40000, 8000, 5000, 0, 0x02)),
        sp.ipv4(S4, C4, sp.tcp(8000, 40000, 7000, 5001, 0x12)),
    ]
    retransmitted = [sp.ipv4(C4, S4, sp.tcp(40000, 8000, 5000, 0, 0x02))]
    path = tmp_path / "reuse.pcap"
    path.write_bytes(
        sp.pcap([(1_733_300_000, n, p) for n, p in enumerate(first + again + retransmitted)], linktype=sp.RAW)
    )
    ours = _direct(path)[0]
    assert ours == _tshark(path)[0]
    assert [f.stream for f in ours if isinstance(f, Frame)] == [0] * 5 + [1, 1, 1]


@NEEDS_TSHARK
def test_ip_lengths_that_lie_count_to_the_packets_end_as_in_tshark(tmp_path: Path) -> None:
    v4 = sp.ipv4(C4, S4, sp.tcp(40000, 8000, 5, 6, 0x18, b"hello"))
    v6 = sp.ipv6(C6, S6, sp.tcp(40001, 8000, 5, 6, 0x18, b"hello"))
    packets = [
        v4[:2] + b"\x00\xc8" + v4[4:],  # total length 200 in a packet of 45 bytes
        v4[:2] + b"\x00\x00" + v4[4:],  # 0: segmentation offload
        v6[:4] + b"\x00\xc8" + v6[6:],  # payload length 200
        v4[:2] + b"\x00\x10" + v4[4:],  # shorter than its own header
    ]
    path = tmp_path / "lengths.pcap"
    path.write_bytes(sp.pcap([(1_733_300_000, n, p) for n, p in enumerate(packets)], linktype=sp.RAW))
    ours = _direct(path)[0]
    assert ours == _tshark(path)[0]
    assert [f.length if isinstance(f, Frame) else None for f in ours] == [5, 5, 5, None]


def _events(path: Path, choice: CaptureReaderChoice = CaptureReaderChoice.DIRECT) -> list[Event]:
    return list(READER.read(InputSource(path.name, path), ReadOptions(capture_reader=choice)))


def _anomalies(events: list[Event]) -> list[tuple[AnomalyName, int | None, str]]:
    return [(e.name, e.origin.frame, e.detail) for e in events if isinstance(e, Anomaly)]


def test_ip_fragments_are_named_frame_by_frame(tmp_path: Path) -> None:
    whole = _conversation(40000)
    v4_first = sp.ipv4(C4, S4, sp.tcp(40000, 8000, 200, 901, 0x18, b"x" * 40)[:24], frag=0x2000)
    v4_rest = sp.ipv4(C4, S4, b"y" * 16, frag=3)
    v6_frag = sp.ipv6(C6, S6, b"z" * 16, extensions=sp.fragment_header(6, 8, False), first=44)
    path = tmp_path / "frag.pcap"
    path.write_bytes(
        sp.pcap([(1_733_300_000, n, p) for n, p in enumerate([*whole, v4_first, v4_rest, v6_frag])], linktype=sp.RAW)
    )
    found = _anomalies(_events(path))
    fragments = [a for a in found if a[0] is AnomalyName.CAPTURE_IP_FRAGMENT]
    assert [(a[1], "frames 6, 7, 8;" in a[2]) for a in fragments] == [(6, True)]


def test_unknown_link_type_goes_to_tshark_in_auto_and_is_named_in_direct(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "usb.pcapng"
    path.write_bytes(sp.section("<") + sp.interface(189, "<") + sp.epb(0, 1, b"\x00" * 40, "<"))
    assert not linktypes_known(path)
    found = _anomalies(_events(path))
    assert [(a[0], a[1]) for a in found] == [(AnomalyName.CAPTURE_LINK_UNKNOWN, 1), (AnomalyName.CAPTURE_NO_MCP, 1)]
    asked: list[str] = []

    def find() -> str:
        asked.append("tshark")
        return "/nonexistent/tshark"

    monkeypatch.setattr(capture_reader, "find_tshark", find)
    monkeypatch.setattr(capture_reader, "tshark_version", lambda path: (4, 0, 0))
    source = capture_reader.frame_source(InputSource(path.name, path), ReadOptions(), path)
    assert isinstance(source, TsharkFrames) and asked == ["tshark"]


def test_tunnels_are_named_not_dropped(tmp_path: Path) -> None:
    inner = sp.ipv4(C4, S4, sp.tcp(40000, 8000, 5, 6, 0x18, b"hello"))
    packets = [sp.ipv4("192.0.2.1", "192.0.2.2", inner, proto=4), sp.ipv6(C6, S6, inner, first=4)]
    path = tmp_path / "tunnel.pcap"
    path.write_bytes(sp.pcap([(1_733_300_000, n, p) for n, p in enumerate(packets)], linktype=sp.RAW))
    found = [a for a in _anomalies(_events(path)) if a[0] is AnomalyName.CAPTURE_LINK_UNKNOWN]
    assert [(a[1], "2 frame(s) carry IP in IP or GRE" in a[2]) for a in found] == [(1, True)]


def test_a_direct_read_never_looks_for_tshark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no(*args: object) -> str:
        raise AssertionError("tshark was looked for")

    monkeypatch.setattr(capture_reader, "find_tshark", no)
    monkeypatch.setattr(capture_reader, "tshark_version", no)
    path = tmp_path / "c.pcap"
    path.write_bytes(sp.pcap([(1_733_300_000, n, p) for n, p in enumerate(_conversation(40000))], linktype=sp.RAW))
    assert _events(path, CaptureReaderChoice.AUTO)


def test_a_key_log_is_read_with_tshark_and_refused_by_direct(tmp_path: Path) -> None:
    path = tmp_path / "c.pcap"
    path.write_bytes(sp.pcap([], linktype=sp.RAW))
    keys = tmp_path / "c.keys"
    keys.write_text("")
    options = ReadOptions(keylog=keys, capture_reader=CaptureReaderChoice.DIRECT)
    with pytest.raises(InputError, match="does not decrypt TLS"):
        list(READER.read(InputSource(path.name, path), options))


# -- damage ----------------------------------------------------------------------------------------------


def _good() -> bytes:
    return (
        sp.section("<")
        + sp.interface(sp.RAW, "<")
        + b"".join(sp.epb(0, 1_733_300_000_000_000 + n, p, "<") for n, p in enumerate(_conversation(40000)))
    )


DAMAGE = {
    "4 GB block": (_good() + b"\x06\x00\x00\x00\xf0\xff\xff\xff" + b"\x00" * 64, 5, "claims a length of 4294967280"),
    "block cut short": (_good()[:-7], 4, "is cut short"),
    "block header cut short": (_good() + b"\x06\x00\x00", 5, "block header is cut short"),
    "trailing length differs": (_good()[:-4] + b"\x00\x00\x00\x00", 4, "ends with another length"),
    "absurd captured length": (
        _good() + sp.epb(0, 1, b"\x00" * 40, "<")[:20] + b"\xff\xff\xff\x7f" + sp.epb(0, 1, b"\x00" * 40, "<")[24:],
        5,
        "claims 2147483647 captured bytes",
    ),
    "packet of an unknown interface": (_good() + sp.epb(3, 1, b"\x00" * 40, "<"), 5, "names interface 3"),
    "pcap record of 4 GB": (
        sp.pcap([(1, 1, p) for p in _conversation(40000)], linktype=sp.RAW) + b"\x01\x00\x00\x00" * 2 + b"\xff" * 8,
        5,
        "claims 4294967295 bytes",
    ),
}


@pytest.mark.parametrize("case", DAMAGE)
def test_damage_is_named_with_its_frame_and_the_rest_read(case: str, tmp_path: Path) -> None:
    data, frame, words = DAMAGE[case]
    path = tmp_path / "damaged.pcapng"
    path.write_bytes(data)
    tracemalloc.start()
    events = _events(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20  # the claimed size was never read into memory
    truncated = [a for a in _anomalies(events) if a[0] is AnomalyName.CAPTURE_TRUNCATED]
    assert len(truncated) == 1 and words in truncated[0][2]
    assert f"past frame {frame}:" in truncated[0][2] or f"after frame {frame};" in truncated[0][2]
    assert any(not isinstance(e, Anomaly) for e in events)  # what came before the damage was read


@pytest.mark.parametrize(
    "data",
    [b"\x0a\x0d\x0d\x0a" + b"\x00" * 28, b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00\x4d\x3c\x2b", b"\xd4\xc3\xb2\xa1\x02\x00"],
    ids=["no byte-order magic", "section header cut", "pcap header cut"],
)
def test_a_file_that_is_no_capture_is_an_input_error(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "bad.pcapng"
    path.write_bytes(data)
    with pytest.raises(InputError, match=r"bad\.pcapng: cannot read it as a capture"):
        _events(path)


def test_wrong_magic_when_forced_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "text.pcap"
    path.write_bytes(b'{"not": "a capture"}\n')
    with pytest.raises(InputError, match="not a pcap or pcapng file"):
        _events(path)


def _mutations() -> st.SearchStrategy[bytes]:
    good = _good() + sp.section(">") + sp.interface(sp.ETHERNET, ">") + sp.epb(0, 5, sp.ether(_conversation(1)[2]), ">")
    edit = st.tuples(st.integers(0, len(good) - 1), st.binary(min_size=1, max_size=8))
    return st.builds(
        lambda cut, edits: _apply(good[:cut], edits), st.integers(0, len(good)), st.lists(edit, max_size=4)
    )


def _apply(data: bytes, edits: list[tuple[int, bytes]]) -> bytes:
    out = bytearray(data)
    for at, raw in edits:
        out[at : at + len(raw)] = raw
    return bytes(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutations())
def test_any_damaged_file_gives_events_or_an_input_error(data: bytes) -> None:
    """No tshark: cheap enough for many examples (the tshark-backed fuzzers in test_fuzz_readers.py and
    test_fuzz_cli.py now read captures with the direct reader too, under `auto`)."""
    for events in _read_bytes(data):
        assert all(isinstance(e, Event) for e in events)


def _read_bytes(data: bytes) -> Iterator[list[Event]]:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.pcapng"
        path.write_bytes(data)
        try:
            yield _events(path)
        except InputError:
            yield []


def test_each_conversation_is_remembered_in_little_memory(tmp_path: Path) -> None:
    """Issue 20: every TCP conversation's stream number, first sequence numbers and window scales are
    kept to the capture's end (tshark numbers a segment of ports seen long ago as that stream), so each
    must cost little. 2,000 conversations (a SYN each way), a port used again with a new SYN (a new
    stream): traced memory kept after the last frame 200 B a conversation (its key and the dict's
    share; 409 B with an object and two lists per conversation)."""
    conversations = 2_000
    packets = []
    for n in range(conversations):
        port = 10_000 + n
        packets.append((n, 0, sp.ipv4("10.0.0.1", "10.0.0.2", sp.tcp(port, 80, 1_000_000 + n, 0, 0x02))))
        packets.append((n, 1, sp.ipv4("10.0.0.2", "10.0.0.1", sp.tcp(80, port, 7, 1_000_001 + n, 0x12))))
    again = sp.ipv4("10.0.0.1", "10.0.0.2", sp.tcp(10_000, 80, 5, 0, 0x02))
    path = tmp_path / "many.pcap"
    path.write_bytes(sp.pcap([*packets, (conversations, 0, again)], linktype=228))
    source = DirectFrames(path, path.name)
    expected = [n // 2 for n in range(2 * conversations)] + [conversations]
    tracemalloc.start()
    try:  # no list of the streams read: compiled, each `frame.stream` read is a new int object
        streams = (frame.stream for frame in source.frames() if isinstance(frame, Frame))
        wrong = [n for n, (stream, want) in enumerate(itertools.zip_longest(streams, expected)) if stream != want]
        per_conversation = tracemalloc.get_traced_memory()[0] / conversations
    finally:
        tracemalloc.stop()
    assert not wrong
    assert per_conversation <= 250, per_conversation
