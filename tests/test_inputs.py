"""Finding and opening inputs: pipes and special files never block, gzip is inflated within limits and
read up to any damage, folders that cannot be read are said to be so, and temporary copies go away."""

from __future__ import annotations

import gzip
import io
import json
import os
import socket
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from cancelwire.errors import InputError
from cancelwire.model import Anomaly, MessageEvent
from cancelwire.readers import ReadOptions, choose_reader, expand_inputs
from cancelwire.readers.inflate import InflateLimits, Inflater
from cancelwire.readers.source import InputSource
from cancelwire.readers.text.transcript import READER
from cancelwire.run.pipeline import audit

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_captures" / "stdio" / "handwritten-client-cancels-unknown-id.jsonl"
SAMPLE_FINDINGS = sorted((f.rule, f.evidence[0].line) for f in audit([str(SAMPLE)]).findings)


def _findings(paths: list[str]) -> list[tuple[str, int | None]]:
    return sorted((f.rule, f.evidence[0].line) for f in audit(paths).findings)


def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    # generous: a regression here is a hang, which this turns into a failure instead of a stuck suite
    return subprocess.run(
        [sys.executable, "-m", "cancelwire", *args], capture_output=True, input=stdin, timeout=120, check=False
    )


def _transcript(requests: int) -> bytes:
    """A transcript with `requests` tools/call requests, each answered."""
    lines = [json.dumps({"cancelwire_transcript": 1, "transport": "stdio", "vantage": "proxy"})]
    for i in range(requests):
        call = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "t", "arguments": {}}}
        lines.append(json.dumps({"ts": i, "dir": "c2s", "line": json.dumps(call)}))
        reply = {"jsonrpc": "2.0", "id": i, "result": {"content": []}}
        lines.append(json.dumps({"ts": i + 0.5, "dir": "s2c", "line": json.dumps(reply)}))
    return ("\n".join(lines) + "\n").encode()


def _events(path: Path, options: ReadOptions | None = None) -> Iterator[object]:
    return READER.read(InputSource(path.name, path), options or ReadOptions())


# --- pipes and special files -------------------------------------------------------------------


def _write_in_thread(fd: int, data: bytes) -> threading.Thread:
    def write() -> None:
        with os.fdopen(fd, "wb") as out:
            out.write(data)

    thread = threading.Thread(target=write, daemon=True)  # daemon: a failed test must not hang on it
    thread.start()
    return thread


@pytest.mark.parametrize("packed", [False, True], ids=["plain", "gzip"])
def test_a_pipe_named_as_dev_fd_reads_like_the_file(packed: bool) -> None:
    """`audit <(zcat x.gz)` names /dev/fd/N, a pipe: sniffing must not seek it (it crashed)."""
    data = SAMPLE.read_bytes()
    read_end, write_end = os.pipe()
    writer = _write_in_thread(write_end, gzip.compress(data) if packed else data)
    try:
        assert _findings([f"/dev/fd/{read_end}"]) == SAMPLE_FINDINGS
    finally:
        writer.join(timeout=60)  # cleanup only: a reader that failed leaves the writer blocked
        os.close(read_end)


def test_standard_input_is_read_as_a_pipe() -> None:
    proc = _cli("audit", "-", "--format", "json", stdin=gzip.compress(SAMPLE.read_bytes()))
    findings = json.loads(proc.stdout)["findings"]
    assert sorted((f["rule"], f["evidence"][0]["line"]) for f in findings) == SAMPLE_FINDINGS


def test_a_fifo_named_on_the_command_line_with_no_writer_is_not_waited_for(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    proc = _cli("audit", str(fifo))
    assert proc.returncode == 2
    assert f"cancelwire: error: {fifo}: the input is empty".encode() in proc.stderr


def test_special_files_found_in_a_folder_are_skipped_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    os.mkfifo(tmp_path / "b-fifo")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "c-socket"))
    (tmp_path / "d-zero").symlink_to("/dev/zero")
    (tmp_path / "e-folder-link").symlink_to(tmp_path / "sub")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.jsonl").write_bytes(SAMPLE.read_bytes())
    try:
        proc = _cli("audit", str(tmp_path), "--format", "json")
    finally:
        sock.close()
    inputs = {Path(i["path"]).name: (i["format"], i["skipped"]) for i in json.loads(proc.stdout)["inputs"]}
    assert inputs == {
        "a.jsonl": ("cancelwire-transcript", None),
        "b-fifo": (None, "a FIFO (named pipe), not a regular file: not read"),
        "c-socket": (None, "a socket, not a regular file: not read"),
        "d-zero": (None, "a character device, not a regular file: not read"),
        "e-folder-link": (None, "a link to a folder: not followed"),
        "f.jsonl": ("cancelwire-transcript", None),
    }


def test_a_device_named_on_the_command_line_is_refused_not_read(tmp_path: Path) -> None:
    proc = _cli("audit", "/dev/zero")
    assert proc.returncode == 2
    assert b"cancelwire: error: /dev/zero: a character device, not a regular file: not read" in proc.stderr


def test_a_pipe_read_past_its_kept_head_cannot_be_read_again() -> None:
    read_end, write_end = os.pipe()
    writer = _write_in_thread(write_end, b"x" * (3 << 20))
    try:
        for source in expand_inputs([f"/dev/fd/{read_end}"]):
            assert source.head() == b"x" * (64 << 10)
            with source.open_binary() as stream:
                assert len(stream.read()) == 3 << 20
            with pytest.raises(InputError, match="a pipe can be read only once"), source.open_binary():
                pass
    finally:
        writer.join(timeout=60)  # cleanup only: a reader that failed leaves the writer blocked
        os.close(read_end)


# --- folders ------------------------------------------------------------------------------------


def test_an_empty_folder_is_an_error_that_says_so(tmp_path: Path) -> None:
    (tmp_path / ".hidden").write_text("x")
    proc = _cli("audit", str(tmp_path))
    assert proc.returncode == 2
    assert f"cancelwire: error: {tmp_path}: the folder holds no file to read".encode() in proc.stderr


def test_folders_that_cannot_be_listed_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.jsonl").write_bytes(SAMPLE.read_bytes())
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "b.jsonl").write_bytes(SAMPLE.read_bytes())
    real_scandir = os.scandir

    def scandir(path: os.PathLike[str]) -> object:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    errors: list[str] = []
    result = audit([str(tmp_path)], on_input_error=lambda e: errors.append(str(e)))
    locked = tmp_path / "locked"
    message = f"{locked}: cannot list the folder: Permission denied; nothing in it was read"
    assert errors == [message]
    assert [(i.path, i.format, i.error) for i in result.inputs] == [
        (str(tmp_path / "a.jsonl"), "cancelwire-transcript", None),
        (str(locked), None, message),
    ]
    errors.clear()
    audit([str(locked)], on_input_error=lambda e: errors.append(str(e)))
    assert errors == [message]


def test_a_folder_walk_keeps_its_order_and_does_not_recurse_on_the_stack(tmp_path: Path) -> None:
    deep = tmp_path
    for _ in range(1100):  # deeper than Python's recursion limit (os.walk recursed)
        deep = deep / "d"
        deep.mkdir()
    (deep / "x.jsonl").write_text("{}\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "y.jsonl").write_text("{}\n")
    (tmp_path / "z.jsonl").write_text("{}\n")
    try:
        names = [Path(s.name).relative_to(tmp_path).parts for s in expand_inputs([str(tmp_path)])]
        assert names == [("z.jsonl",), ("b", "y.jsonl"), ("d",) * 1100 + ("x.jsonl",)]
    finally:  # shutil.rmtree (pytest's clean-up) recurses too: take the tree down from the bottom
        (deep / "x.jsonl").unlink()
        while deep != tmp_path:
            deep.rmdir()
            deep = deep.parent


# --- gzip: damage, limits, temporary copies ----------------------------------------------------


def test_damaged_gzip_keeps_every_line_before_the_damage(tmp_path: Path) -> None:
    """20,000 answered requests, then garbage: the gzip module lost up to its last MiB of lines."""
    path = tmp_path / "t.jsonl.gz"
    packed = gzip.compress(_transcript(20_000), mtime=0)
    path.write_bytes(packed + b"garbage after the gzip data")
    events = list(_events(path))
    messages = [e for e in events if isinstance(e, MessageEvent)]
    assert len(messages) == 40_000
    assert [(e.name, e.origin.line, e.detail) for e in events if isinstance(e, Anomaly)] == [
        (
            "input.compression-damaged",
            40_001,
            f"bytes after the end of the gzip data at compressed byte {len(packed)} are not gzip; "
            f"ignored after the {len(_transcript(20_000))} bytes inflated before them",
        )
    ]


def test_corrupt_deflate_data_is_named_at_its_offset_and_everything_before_it_is_read(tmp_path: Path) -> None:
    """A deflate block of the reserved type 3 after 2000 requests: zlib fails at that byte, and
    everything before it (more than one compressed piece) is read."""
    data = _transcript(2000)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = deflate.compress(data) + deflate.flush(zlib.Z_FULL_FLUSH)  # byte-aligned: all of `data` is out
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(header + body + b"\x07" + b"\x00" * 100)  # 0x07: final block, type 3 (invalid)
    events = list(_events(path))
    assert [(e.name, e.detail) for e in events if isinstance(e, Anomaly)] == [
        (
            "input.compression-damaged",
            f"damaged gzip data at compressed byte {len(header) + len(body)} (Error -3 while decompressing "
            f"data: invalid block type); the {len(data)} bytes inflated before it were read",
        )
    ]
    assert sum(isinstance(e, MessageEvent) for e in events) == 4000


def test_the_inflater_stops_at_the_size_limit_exactly() -> None:
    data = b"line\n" * 100_000
    inflater = Inflater(io.BytesIO(gzip.compress(data)), InflateLimits(max_bytes=12_345, max_ratio=1e9))
    assert inflater.read() == data[:12_345]
    assert inflater.problem is not None
    assert inflater.problem.detail == "stopped after 12345 inflated bytes (the limit; raise it with --max-inflated)"


def test_the_inflater_stops_past_the_ratio_limit() -> None:
    data = b"\n" * (8 << 20)
    packed = gzip.compress(data)
    inflater = Inflater(io.BytesIO(packed), InflateLimits(max_ratio=100, ratio_after=1 << 20))
    out = inflater.read()
    assert (1 << 20) < len(out) <= (2 << 20)
    assert inflater.problem is not None
    assert inflater.problem.name == "input.inflate-limit"
    assert "more than 100x (the limit; raise it with --max-inflate-ratio)" in inflater.problem.detail


def test_multi_member_gzip_and_zero_padding_are_read_whole() -> None:
    stream = io.BytesIO(gzip.compress(b"a\n") + gzip.compress(b"b\n") + b"\0" * 100)
    inflater = Inflater(stream, InflateLimits())
    assert inflater.read() == b"a\nb\n"
    assert inflater.problem is None


def _cancelwire_temp_folders() -> set[str]:
    import tempfile

    return {p.name for p in Path(tempfile.gettempdir()).glob("cancelwire-*") if p.is_dir()}


def test_a_temporary_copy_is_capped_and_removed_on_every_way_out(tmp_path: Path) -> None:
    path = tmp_path / "x.pcap.gz"
    path.write_bytes(gzip.compress(b"\0" * (4 << 20)))
    source = InputSource(path.name, path)
    before = _cancelwire_temp_folders()
    limits = InflateLimits(max_bytes=1 << 20)
    with pytest.raises(InputError) as raised, source.local_file(limits) as copy:
        assert copy.stat().st_size == 1 << 20
        assert _cancelwire_temp_folders() != before
    assert str(raised.value) == (
        "x.pcap.gz: stopped after 1048576 inflated bytes (the limit; raise it with --max-inflated)"
    )
    assert _cancelwire_temp_folders() == before
    with pytest.raises(RuntimeError), source.local_file(limits):
        raise RuntimeError("the tool failed")
    assert _cancelwire_temp_folders() == before


def test_inflate_limits_given_on_the_command_line_are_checked() -> None:
    proc = _cli("audit", str(SAMPLE), "--max-inflate-ratio", "nan")
    assert proc.returncode == 2
    assert b"argument --max-inflate-ratio: must be a finite number >= 1, not nan" in proc.stderr


def test_choose_reader_on_a_pipe_then_read_it() -> None:
    read_end, write_end = os.pipe()
    writer = _write_in_thread(write_end, SAMPLE.read_bytes())
    try:
        for source in expand_inputs([f"/dev/fd/{read_end}"]):
            reader = choose_reader(source, None)
            assert reader.name == "cancelwire-transcript"
            assert sum(isinstance(e, MessageEvent) for e in reader.read(source, ReadOptions())) == 9
    finally:
        writer.join(timeout=60)  # cleanup only: a reader that failed leaves the writer blocked
        os.close(read_end)
