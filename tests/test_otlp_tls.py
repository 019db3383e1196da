"""`--otlp-endpoint https://...` with a private CA (`--otlp-certificate`) and mutual TLS
(`--otlp-client-certificate`, `--otlp-client-key`), against loopback receivers serving certificates that
trustme issues for the test; bad certificate and key files are refused before the audit, naming the file.
And the backoff's jitter stays within half a step either way."""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
import trustme
from cancelwire.cli.main import main
from cancelwire.reports import otlp_http
from cryptography.hazmat.primitives import serialization
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from test_otlp_http import OK, Receiver, _audit, _document, _names


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1])


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _server_tls(ca: trustme.CA, *, clients: trustme.CA | None = None) -> ssl.SSLContext:
    """A collector's TLS: a certificate for 127.0.0.1 from CA; with CLIENTS, a client certificate from it is
    required."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    if clients is not None:
        clients.configure_trust(context)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> Path:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture
def collector(ca: trustme.CA) -> Iterator[Receiver]:
    with Receiver([OK], _server_tls(ca)) as receiver:
        yield receiver


def test_a_private_ca_verifies_the_collector(
    collector: Receiver, ca_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = _audit(capsys, "--otlp-endpoint", collector.url, "--otlp-certificate", str(ca_file))
    assert status == 0, err
    [(path, _, body)] = collector.seen
    assert path == "/v1/traces"
    assert len(_names(ExportTraceServiceRequest.FromString(body))) == 4
    assert err.endswith(f"cancelwire: {collector.url}/v1/traces: sent 4 span(s) in 1 request(s)\n")


def test_an_unknown_ca_is_refused_and_the_hint_names_the_option(
    collector: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    status, err = _audit(capsys, "--otlp-endpoint", collector.url)  # the system's roots do not know the test CA
    assert status == 2
    assert f"cancelwire: error: {collector.url}/v1/traces: the collector's certificate was refused: " in err
    assert "certificate verify failed" in err
    assert "--otlp-certificate FILE" in err
    assert collector.seen == []


@pytest.fixture
def mutual(ca: trustme.CA) -> Iterator[tuple[Receiver, trustme.CA]]:
    clients = trustme.CA()
    with Receiver([OK], _server_tls(ca, clients=clients)) as receiver:
        yield receiver, clients


def test_mutual_tls_with_the_key_apart_or_in_the_same_file(
    mutual: tuple[Receiver, trustme.CA], ca_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    receiver, clients = mutual
    client = clients.issue_cert("cancelwire@ci.example")
    cert, key, both = tmp_path / "client.pem", tmp_path / "client.key", tmp_path / "both.pem"
    client.cert_chain_pems[0].write_to_path(str(cert))
    client.private_key_pem.write_to_path(str(key))
    client.private_key_and_cert_chain_pem.write_to_path(str(both))
    base = ["--otlp-endpoint", receiver.url, "--otlp-certificate", str(ca_file)]
    status, err = _audit(capsys, *base)
    assert status == 2  # no client certificate: the collector ends the handshake
    assert f"cancelwire: error: {receiver.url}/v1/traces: cannot send the traces: " in err
    assert receiver.seen == []
    status, err = _audit(capsys, *base, "--otlp-client-certificate", str(cert), "--otlp-client-key", str(key))
    assert status == 0, err
    status, err = _audit(capsys, *base, "--otlp-client-certificate", str(both))
    assert status == 0, err
    assert len(receiver.seen) == 2


def _encrypted_key(tmp_path: Path, ca: trustme.CA) -> tuple[Path, Path]:
    issued = ca.issue_cert("client.example")
    cert, key = tmp_path / "c.pem", tmp_path / "enc.key"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    private = serialization.load_pem_private_key(issued.private_key_pem.bytes(), password=None)
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    return cert, key


def test_bad_certificate_files_are_refused_before_the_audit(
    ca: trustme.CA, ca_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage, latin, big, fifo = (tmp_path / n for n in ("garbage.pem", "latin.pem", "big.pem", "fifo.pem"))
    garbage.write_text("not a certificate\n")
    latin.write_bytes(b"-----BEGIN CERTIFICATE-----\n\xe9\n")
    big.write_bytes(b"A" * (otlp_http.MAX_PEM_BYTES + 1))
    os.mkfifo(fifo)
    cert, encrypted = _encrypted_key(tmp_path, ca)
    https = ["--otlp-endpoint", "https://127.0.0.1:9"]
    cases = [
        ([*https, "--otlp-certificate", str(tmp_path / "absent.pem")], "absent.pem: cannot read the certificate file"),
        ([*https, "--otlp-certificate", str(garbage)], "garbage.pem: no CA certificate in it that TLS can use"),
        ([*https, "--otlp-certificate", str(latin)], "latin.pem: no CA certificate in it that TLS can use (not PEM"),
        ([*https, "--otlp-certificate", str(big)], "big.pem: the certificate file is larger than 1024 KiB"),
        ([*https, "--otlp-certificate", str(fifo)], "fifo.pem: the certificate file is a FIFO"),
        (
            [*https, "--otlp-client-certificate", str(cert), "--otlp-client-key", str(encrypted)],
            "enc.key: not a client certificate and its key that TLS can use",
        ),
        ([*https, "--otlp-client-certificate", str(garbage)], "garbage.pem: not a client certificate and its key"),
        ([*https, "--otlp-client-key", str(encrypted)], "--otlp-client-key needs --otlp-client-certificate FILE"),
        (["--otlp-endpoint", "http://127.0.0.1:9", "--otlp-certificate", str(ca_file)], "needs an https://"),
        (["--otlp-certificate", str(ca_file)], "--otlp-certificate needs --otlp-endpoint URL"),
    ]
    for args, said in cases:
        status = main(["audit", "nothing-here.jsonl", *args])  # an input error would come after these
        err = capsys.readouterr().err
        assert status == 2, args
        assert said in err, (args, err)
        assert "Traceback" not in err and "nothing-here" not in err


def test_the_backoff_is_spread_by_half_a_step_either_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = _document(capsys, tmp_path)
    busy: tuple[int, dict[str, str], bytes] = (503, {}, b"")
    for jitter, spread in ((0.0, 0.5), (0.999, 1.499)):
        waits: list[float] = []
        with Receiver([busy, busy, busy, OK]) as receiver:
            otlp_http.send(
                document,
                otlp_http.endpoint(receiver.url),
                timeout=60,
                sleep=waits.append,
                jitter=lambda fixed=jitter: fixed,
            )
        assert waits == pytest.approx([spread, 2 * spread, 4 * spread])
