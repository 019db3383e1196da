"""Packet captures (pcap, pcapng) of MCP over HTTP/1.1 and HTTP/2: Streamable HTTP and legacy HTTP+SSE.

One of the two modules that import pyshark (to find tshark; `frame` does single-frame look-ups). This
module sniffs the format and chooses what reads the packets (`--capture-reader`): the in-process reader
(`direct`), or tshark, which is found and probed only then (a key log to decrypt TLS with, a link type the
direct reader does not decode, or when asked). The pass itself (`capture_pass`) is imported only when a
capture is read, so an audit of transcripts or logs does not load the HTTP layers (h11, h2: ~40 ms of
start-up).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

from ...errors import InputError, ToolMissingError
from ...model import Event
from ..base import CaptureReaderChoice, InputSource, ReadOptions
from .frames import FrameSource
from .tshark_fields import INSTALL_HINT, TsharkFrames, tshark_version

PCAP_MAGICS = (b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"


def find_tshark() -> str:
    """tshark's path (PATH first, then pyshark's config.ini and default places), or ToolMissingError."""
    found = shutil.which("tshark")
    if found:
        return found
    try:
        from pyshark.tshark.tshark import get_process_path

        path: str = get_process_path()
        return path
    except Exception as exc:  # pyshark raises its own TSharkNotFoundException (and is untyped)
        raise ToolMissingError(
            "tshark", "tshark (Wireshark's command-line tool) is not installed", INSTALL_HINT
        ) from exc


class PcapReader:
    name = "pcap"

    def sniff(self, head: bytes) -> bool:
        return head[:4] in PCAP_MAGICS or head[:4] == PCAPNG_MAGIC

    def read(self, source: InputSource, options: ReadOptions) -> Iterator[Event]:
        if options.keylog is not None and not options.keylog.is_file():
            raise InputError(
                source.name,
                f"keylog file {options.keylog} cannot be read",
                "pass the SSLKEYLOGFILE written while capturing",
            )
        if options.keylog is not None and options.capture_reader is CaptureReaderChoice.DIRECT:
            raise InputError(
                source.name,
                "the direct capture reader does not decrypt TLS",
                "leave out --capture-reader direct (or --keylog): tshark decrypts with the key log",
            )
        from .capture_pass import CapturePass  # here, not at the top: see the module's docstring

        with source.local_file(options.inflate) as path:
            yield from CapturePass(source, options).events(frame_source(source, options, path))


def frame_source(source: InputSource, options: ReadOptions, path: Path) -> FrameSource:
    """What reads the packets of the capture at PATH (`--capture-reader`)."""
    from .direct import DirectFrames, linktypes_known

    choice = options.capture_reader
    if choice is CaptureReaderChoice.DIRECT or (
        choice is CaptureReaderChoice.AUTO and options.keylog is None and linktypes_known(path)
    ):
        return DirectFrames(path, source.name)
    tshark = find_tshark()
    tshark_version(tshark)
    return TsharkFrames(tshark, path, source.name, options.keylog)


READER = PcapReader()
