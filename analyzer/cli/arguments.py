"""The `cancelwire` command line: its parser, the checks on each value, and the audit options it gives
with the settings file under it (cli/main.py runs the commands).

Numbers are checked here as argparse types, so `--race-window nan`, `--hold -1` or `--max-open 0` is a
usage error (exit 2) that names the option, the same checks the settings file gets (config.py).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

from .._compiled import COMPILED
from .._version import __version__
from ..config import Settings, find_settings, load_settings
from ..model import REVISIONS, Vantage
from ..readers import ReadOptions, reader_names
from ..readers.base import CaptureReaderChoice
from ..readers.inflate import InflateLimits, ratio_of
from ..rebuild.reconstruct import DEFAULT_MAX_OPEN, ReconstructOptions
from ..reports import otlp_http
from ..reports.formats import FORMATS
from ..reports.otlp_http import DEFAULT_TIMEOUT
from ..run.pipeline import AuditOptions
from ..run.results import Setting
from ..support import inert
from ..support.values import count_of, seconds_of

#: Frame numbers are 32-bit in pcap/pcapng tools (tshark's frame.number is a uint32).
MAX_FRAME = 2**32 - 1
MAX_OTLP_TIMEOUT = 600.0
"""The longest `--otlp-timeout`: a send never holds a CI job longer than this per request."""
N = TypeVar("N", int, float)
T = TypeVar("T")


def _number(parse: Callable[[str], N], check: Callable[[N], N], what: str) -> Callable[[str], N]:
    """An argparse type that parses TEXT and applies the settings file's check to it."""

    def convert(text: str) -> N:
        try:
            value = parse(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {what}: {text!r}") from None
        try:
            return check(value)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


_seconds = _number(float, seconds_of, "a number of seconds")
_count = _number(int, count_of, "a whole number")


def _ranged(low: int, high: int, what: str) -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{what} runs from {low} to {high}, not {value}")
        return value

    return convert


def _revision(text: str) -> str:
    if text not in REVISIONS:
        raise argparse.ArgumentTypeError(f"unknown revision {text!r}; one of {', '.join(REVISIONS)}")
    return text


def _table(text: str) -> Path:
    path = Path(text)
    if path.suffix not in (".csv", ".parquet"):
        raise argparse.ArgumentTypeError("needs a .csv or .parquet file name")
    return path


def _debug(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--debug", action="store_true", default=default, help="show the traceback of an internal error (a bug)"
    )


class _Parser(argparse.ArgumentParser):
    """argparse quotes what was typed in its errors (`unrecognized arguments: ...`): made inert like any
    message; its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        super().error(inert.terminal(message))


def _file_name(text: str) -> str:
    """`-o`: an empty name (`-o "$UNSET"` in a CI script) is an error, not the report on stdout; so is a
    name ending in a slash (`-o reports/`)."""
    if not text:
        raise argparse.ArgumentTypeError("needs a file name (or - for standard output), not an empty one")
    if text.endswith(os.sep):  # Path() would drop the slash and write a file named like the folder
        raise argparse.ArgumentTypeError(f"needs a file name, not a folder: {text!r}")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="cancelwire", description="Audit recorded MCP sessions for what happens around cancellation.")
    build = "compiled by mypyc" if COMPILED else "pure Python"
    parser.add_argument("--version", action="version", version=f"cancelwire {__version__} ({build})")
    _debug(parser, False)
    sub = parser.add_subparsers(dest="command", required=True)
    _audit_parser(sub.add_parser("audit", help="audit recordings (transcripts, host logs, pcap/pcapng)"))
    for name, text in (("rules", "list the rule catalogue"), ("explain", "show one rule's documentation")):
        p = sub.add_parser(name, help=text)
        if name == "explain":
            p.add_argument("rule", metavar="SLUG|ID")
        p.add_argument("--rules", action="append", type=Path, default=[], metavar="DIR")
        _debug(p, argparse.SUPPRESS)

    f = sub.add_parser("frame", help="show one capture frame in full (what a finding's #N points at)")
    f.add_argument("capture", type=Path, metavar="CAPTURE")
    f.add_argument("number", type=_ranged(1, MAX_FRAME, "a frame number"), metavar="N")
    _debug(f, argparse.SUPPRESS)

    d = sub.add_parser("diagram", help="draw one request's sequence diagram from recordings or a JSON report")
    d.add_argument("paths", nargs="+", metavar="PATH", help="recordings, or one report of --format json")
    d.add_argument("--request", required=True, metavar="ID", help="the request's id (as the exchange table shows it)")
    d.add_argument(
        "--id-type",
        choices=("integer", "string"),
        help='the id\'s JSON type, when an integer id and a string id read the same (1 and "1")',
    )
    d.add_argument("--session", metavar="KEY", help="its session, when the id is in several")
    d.add_argument("-o", "--output", type=Path, metavar="FILE.svg|FILE.html", help="default: SVG on stdout")
    d.add_argument("--redact", action="store_true", help="payload values by type and length, as audit --redact")
    d.add_argument("--merge", action="store_true", help="the two PATHs record the same session(s), as audit --merge")
    _debug(d, argparse.SUPPRESS)

    c = sub.add_parser("diff", help="what appeared, disappeared or changed between two JSON audits")
    c.add_argument("old", type=Path, metavar="OLD.json", help="the audit before (--format json)")
    c.add_argument("new", type=Path, metavar="NEW.json", help="the audit after")
    c.add_argument("--format", choices=("text", "md", "html", "json"), default="text", help="(default: text)")
    c.add_argument("-o", "--output", type=_file_name, metavar="FILE", help="write it here (default: stdout)")
    color_option(c)
    _debug(c, argparse.SUPPRESS)

    r = sub.add_parser("record", help="run a stdio MCP server and record its traffic as a transcript")
    r.add_argument("-o", "--output", type=Path, metavar="FILE", help="transcript path")
    r.add_argument("server", nargs=argparse.REMAINDER, metavar="-- COMMAND ARGS...")
    return parser


def _audit_parser(a: argparse.ArgumentParser) -> None:
    a.add_argument("paths", nargs="+", metavar="PATH", help="files or directories ('-' for stdin); .gz accepted")
    a.add_argument("--format", choices=tuple(FORMATS), help="report format (default: text)")
    a.add_argument("-o", "--output", type=_file_name, metavar="FILE", help="write the report here (default: stdout)")
    a.add_argument(
        "--report", action="append", default=[], metavar="FORMAT=FILE", help="one more output (FILE - is stdout)"
    )
    a.add_argument(
        "--fail-on",
        choices=["error", "warning", "info", "never"],
        default="error",
        help="exit 1 when a new finding or gated outcome is at or above this severity (default: error)",
    )
    a.add_argument(
        "--gate", action="append", default=[], metavar="OUTCOME=GATE", help="gate an outcome class (see docs/ci.md)"
    )
    a.add_argument("--baseline", type=Path, metavar="FILE", help="fail only on what this baseline does not hold")
    a.add_argument("--write-baseline", type=Path, metavar="FILE", help="record this run's issues as the baseline")
    a.add_argument(
        "--protocol", type=_revision, metavar="REVISION", help=f"judge under this revision ({', '.join(REVISIONS)})"
    )
    a.add_argument(
        "--vantage",
        choices=[v.value for v in Vantage if v not in (Vantage.WIRE, Vantage.UNKNOWN)],
        help="where the recording was made, overriding the format's own",
    )
    a.add_argument(
        "--race-window",
        type=_seconds,
        metavar="SECONDS",
        help="a reply this soon after a cancel counts as a race (default per vantage; see docs/judging.md)",
    )
    a.add_argument(
        "--rules", action="append", type=Path, default=[], metavar="DIR", help="extra rule files (*.toml); repeatable"
    )
    a.add_argument("--select", action="append", default=[], metavar="RULE", help="run only these rules (id or slug)")
    a.add_argument("--ignore", action="append", default=[], metavar="RULE", help="do not run this rule")
    a.add_argument("--preview", action="store_true", help="also run preview rules")
    a.add_argument(
        "--merge", action="store_true", help="the two PATHs record the same session(s): align them and judge once"
    )
    a.add_argument("--input-format", choices=reader_names(), help="skip detection and read every input as this")
    a.add_argument(
        "--http-port",
        action="append",
        type=_ranged(1, 65535, "a TCP port"),
        default=[],
        metavar="N",
        help="captures: decode this TCP port as HTTP",
    )
    a.add_argument("--keylog", type=Path, metavar="FILE", help="captures: TLS key log (SSLKEYLOGFILE format)")
    a.add_argument(
        "--capture-reader",
        choices=[c.value for c in CaptureReaderChoice],
        metavar="auto|direct|tshark",
        help="captures: read packets in-process (direct) or with tshark; auto (default): direct, except tshark "
        "for a key log and for link types the direct reader does not decode",
    )
    a.add_argument("--max-inflated", type=_count, metavar="BYTES", help="inflate a .gz input no further (16 GiB)")
    a.add_argument(
        "--max-inflate-ratio",
        type=_number(float, ratio_of, "a number"),
        metavar="N",
        help="... nor past N times its compressed size once past 64 MiB (default 200)",
    )
    a.add_argument(
        "--hold",
        type=_seconds,
        metavar="SECONDS",
        help="how long (recording time) a silent cancelled call waits for a late reply or a verifying read "
        f"(default {ReconstructOptions().hold_seconds:g})",
    )
    a.add_argument(
        "--max-open",
        type=_count,
        metavar="N",
        help=f"open requests per session before the oldest are flushed unjudged (default {DEFAULT_MAX_OPEN})",
    )
    a.add_argument(
        "--exchanges", type=_table, metavar="FILE.csv|FILE.parquet", help="also export every exchange as a table"
    )
    a.add_argument(
        "--jobs",
        type=_count,
        metavar="N",
        help="audit inputs in N worker processes (default: one per core from 8 inputs on, else 1)",
    )
    a.add_argument(
        "--dataset",
        type=Path,
        metavar="DIR",
        help="append findings, cancellations and exchanges to Parquet datasets under DIR (see docs/scale.md)",
    )
    a.add_argument("--dask", metavar="ADDRESS", help="audit inputs as tasks on this Dask scheduler (cancelwire[dask])")
    _otlp_options(a)
    a.add_argument(
        "--redact",
        action="store_true",
        help="replace payload values (arguments, results, errors, messages, reasons) by type and length in every "
        "output; ids, methods, tool names, timings and structure stay",
    )
    a.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    a.add_argument("-v", "--verbose", action="store_true", help="the text report also lists every session")
    color_option(a)
    a.add_argument("--config", type=Path, metavar="FILE", help="settings file to use instead of the one found")
    a.add_argument("--isolated", action="store_true", help="use no settings file")
    _debug(a, argparse.SUPPRESS)


def _otlp_options(a: argparse.ArgumentParser) -> None:
    a.add_argument(
        "--otlp-endpoint",
        type=_checked(otlp_http.endpoint),
        metavar="URL",
        help="also send the traces of --format otlp to this OTLP/HTTP collector (v1/traces is appended)",
    )
    a.add_argument(
        "--otlp-header",
        action="append",
        type=_checked(otlp_http.header),
        default=[],
        metavar="NAME=VALUE",
        help="an HTTP header for --otlp-endpoint (an API key); repeatable",
    )
    a.add_argument(
        "--otlp-timeout",
        type=_number(float, _positive_seconds, "a number of seconds"),
        metavar="SECONDS",
        help=f"how long each request to --otlp-endpoint may take, retries included (default {DEFAULT_TIMEOUT:g})",
    )
    a.add_argument(
        "--otlp-protocol",
        choices=tuple(otlp_http.PROTOCOLS),
        help="http/protobuf (default; cancelwire[otlp]) or http/json",
    )
    a.add_argument(
        "--otlp-certificate",
        type=Path,
        metavar="FILE",
        help="verify an https --otlp-endpoint with the CA certificates in FILE (PEM) instead of the system's",
    )
    a.add_argument(
        "--otlp-client-certificate",
        type=Path,
        metavar="FILE",
        help="present this client certificate (PEM) to an https --otlp-endpoint (mutual TLS)",
    )
    a.add_argument(
        "--otlp-client-key",
        type=Path,
        metavar="FILE",
        help="the unencrypted private key (PEM) of --otlp-client-certificate, when not in the same file",
    )


def _checked(parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse type from a parser that raises ValueError with the reason."""

    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def _positive_seconds(value: float) -> float:
    seconds = seconds_of(value)
    if not 0 < seconds <= MAX_OTLP_TIMEOUT:
        raise ValueError(f"must be more than 0 and at most {MAX_OTLP_TIMEOUT:g} seconds, not {value:g}")
    return seconds


def color_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="colour the text report (auto: on a terminal, unless NO_COLOR is set or TERM is dumb)",
    )


def settings_of(args: argparse.Namespace) -> Settings:
    """The settings file: --isolated uses none, --config names one, else the first found upwards."""
    if args.isolated:
        return Settings()
    if args.config is not None:
        return load_settings(args.config)
    return find_settings(Path.cwd())


def audit_options(args: argparse.Namespace, settings: Settings) -> AuditOptions:
    """The command line over the settings file; every changed value is recorded with its source."""
    given = {
        "race-window": args.race_window,
        "hold": args.hold,
        "max-open": args.max_open,
        "protocol": args.protocol,
        "vantage": args.vantage,
        "max-inflated": args.max_inflated,
        "max-inflate-ratio": args.max_inflate_ratio,
    }
    changed = [Setting(k, v, str(settings.path)) for k, v in settings.values() if given.get(k) is None]
    changed += [Setting(k, _text(v), "command line") for k, v in given.items() if v is not None]
    changed += [Setting(f"ignore.{name}", "--ignore", "command line") for name in args.ignore]
    changed += [Setting("select", ", ".join(args.select), "command line")] if args.select else []
    changed += [Setting("rules", str(folder), "command line") for folder in args.rules]
    flags = {
        "preview": args.preview or None,
        "merge": args.merge or None,
        "input-format": args.input_format,
        "keylog": args.keylog,
        "capture-reader": args.capture_reader,
        "redact": args.redact or None,
    }
    changed += [Setting(k, "on" if v is True else str(v), "command line") for k, v in flags.items() if v]
    changed += [Setting("http-port", str(port), "command line") for port in args.http_port]
    changed += [
        Setting(f"gates.{text.partition('=')[0]}", text.partition("=")[2], "command line") for text in args.gate
    ]
    defaults = ReconstructOptions()
    vantage = Vantage(args.vantage) if args.vantage else None
    return AuditOptions(
        input_format=args.input_format,
        read=ReadOptions(
            vantage=vantage,
            http_ports=tuple(args.http_port),
            keylog=args.keylog,
            capture_reader=CaptureReaderChoice(args.capture_reader or "auto"),
            inflate=InflateLimits.given(args.max_inflated, args.max_inflate_ratio),
        ),
        reconstruct=ReconstructOptions(
            protocol=args.protocol,
            race_window=args.race_window if args.race_window is not None else settings.race_window,
            max_open=_first(args.max_open, settings.max_open, defaults.max_open),
            hold_seconds=_first(args.hold, settings.hold, defaults.hold_seconds),
            verifying_reads=settings.verifying_reads,
        ),
        rule_dirs=tuple(args.rules),
        select=frozenset(args.select),
        ignore={**settings.disabled, **{name: "--ignore on the command line" for name in args.ignore}},
        preview=args.preview,
        merge=args.merge,
        settings_file=settings.path,
        settings=tuple(changed),
        redact=args.redact,
    )


def _text(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _first(*values: T | None) -> T:
    return next(v for v in values if v is not None)
