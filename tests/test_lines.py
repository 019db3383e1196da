import io

from cancelwire.model import MessageKind
from cancelwire.model.jsonrpc import decode_text
from cancelwire.readers.lines import RawLine, iter_lines


def test_lines_are_numbered_and_crlf_stripped() -> None:
    lines = list(iter_lines(io.BytesIO(b"a\r\nb\n\nc")))
    assert lines == [RawLine(1, b"a"), RawLine(2, b"b"), RawLine(3, b""), RawLine(4, b"c", unterminated=True)]


def test_overlong_line_is_skipped_and_next_line_still_read() -> None:
    data = b"x" * 5000 + b"\n" + b"ok\n"
    stream = io.BufferedReader(io.BytesIO(data), buffer_size=64)
    lines = list(iter_lines(stream, max_line_bytes=100))
    assert lines == [RawLine(1, b"", too_long=5000), RawLine(2, b"ok")]


def test_classify_request_result_error_and_problems() -> None:
    req = decode_text(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}')
    assert req is not None and req.messages[0].kind is MessageKind.REQUEST and req.messages[0].id == 7
    both = decode_text(b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}')
    assert both is not None and [p.name for p in both.problems] == ["jsonrpc.result-and-error"]
    assert decode_text(b"not json") is None
    batch = decode_text(b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":true,"result":{}}]')
    assert batch is not None and batch.batch and len(batch.messages) == 1
    assert [p.name for p in batch.problems] == ["jsonrpc.invalid-message"]
