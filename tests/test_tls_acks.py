"""Decrypted TLS records carry the acknowledgement their first bytes left with, as plain TCP bytes do
(issue 18 class 5): a reply record sent before the server's TCP had the client's FIN crossed the close.

Frames are built by hand (no tshark): `CapturePass` reads them as tshark's field output gives them, the
decrypted plaintext of a record in the frame that completes it."""

from __future__ import annotations

from pathlib import Path

from cancelwire.model import MessageEvent, MessageKind
from cancelwire.readers import InputSource, ReadOptions
from cancelwire.readers.capture.capture_pass import CapturePass
from cancelwire.readers.capture.frames import Frame

C, S = ("10.0.0.1", 40000), ("10.0.0.2", 8443)
OVERHEAD = 22
"""A TLS 1.3 record's ciphertext beyond its plaintext: header 5, content type 1, AEAD tag 16."""
BODY = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}'
POST = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(BODY),
    BODY,
)
REPLY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[]}}'
ANSWER = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(REPLY), REPLY)
FIN_SEQ = 1101 + len(POST) + OVERHEAD
"""The client's FIN: its bytes were the 100-byte ClientHello and the POST's record."""


def _frame(number: int, from_client: bool, seq: int, ack: int, flags: int, size: int, *records: bytes) -> Frame:
    src, dst = (C, S) if from_client else (S, C)
    payload = (b"\x16\x03\x01" if number == 3 else b"\x17\x03\x03") + bytes(max(size - 3, 0)) if size else b""
    return Frame(
        number=number,
        ts=float(number),
        stream=0,
        src=src[0],
        dst=dst[0],
        sport=src[1],
        dport=dst[1],
        seq=seq,
        ack=ack,
        flags=flags,
        window=65535,
        payload=payload,
        length=size,
        decrypted=records,
    )


def _reply_crossed(server_segments: list[tuple[int, int, tuple[bytes, ...]]]) -> bool:
    """The reply message's `crossed`, the server's answer sent as SERVER_SEGMENTS (ack, size, records
    completed in it) after the client's FIN."""
    path = Path("tls.pcapng")
    run = CapturePass(InputSource(path.name, path), ReadOptions(keylog=Path("tls.keys")))
    frames = [
        _frame(1, True, 1000, 0, 0x02, 0),
        _frame(2, False, 5000, 1001, 0x12, 0),
        _frame(3, True, 1001, 5001, 0x18, 100),  # ClientHello
        _frame(4, False, 5001, 1101, 0x18, 100),  # ServerHello ... Finished
        _frame(5, True, 1101, 5101, 0x18, len(POST) + OVERHEAD, POST),
        _frame(6, True, FIN_SEQ, 5101, 0x11, 0),
    ]
    seq = 5101
    for ack, size, records in server_segments:
        frames.append(_frame(len(frames) + 1, False, seq, ack, 0x18, size, *records))
        seq += size
    for frame in frames:
        run.sessions.frame, run.sessions.ts = frame.number, frame.ts
        run._frame(frame)
    run._finish()
    (reply,) = [e for e in run.sessions.out if isinstance(e, MessageEvent) and e.message.kind is MessageKind.RESULT]
    return reply.crossed


def test_a_record_sent_before_the_fin_was_acknowledged_crossed_the_close() -> None:
    assert _reply_crossed([(FIN_SEQ, len(ANSWER) + OVERHEAD, (ANSWER,))])


def test_a_record_whose_segment_acknowledges_the_fin_was_written_after_it() -> None:
    assert not _reply_crossed([(FIN_SEQ + 1, len(ANSWER) + OVERHEAD, (ANSWER,))])


def test_a_record_over_two_segments_keeps_the_acknowledgement_of_its_first() -> None:
    """The first segment left before the FIN came, the one completing the record after: the record's first
    bytes crossed the close (the completing frame's acknowledgement alone would say it did not)."""
    assert _reply_crossed([(FIN_SEQ, 40, ()), (FIN_SEQ + 1, len(ANSWER) + OVERHEAD - 40, (ANSWER,))])


def test_records_of_a_later_segment_take_its_acknowledgement_not_the_one_before() -> None:
    """The head's record fills the first segment (sent before the FIN came); the body's record, wholly in the
    next one (which acknowledges the FIN), was written after the close."""
    head, body = ANSWER[: -len(REPLY)], REPLY
    segments = [(FIN_SEQ, len(head) + OVERHEAD, (head,)), (FIN_SEQ + 1, len(body) + OVERHEAD, (body,))]
    assert not _reply_crossed(segments)
