"""`cancelwire.audit(paths, **options)`: the library entry point, its checks, its frames, lazy import."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import cancelwire
import pytest

ROOT = Path(__file__).resolve().parent.parent
STDIO = ROOT / "sample_captures" / "stdio"


def test_public_names_are_pinned() -> None:
    assert cancelwire.__all__ == [
        "AuditResult",
        "CancelwireError",
        "ConfigError",
        "InputError",
        "Outcome",
        "RuleFileError",
        "Severity",
        "__version__",
        "audit",
    ]
    assert all(getattr(cancelwire, name) is not None for name in cancelwire.__all__)


def test_importing_the_package_loads_no_pipeline() -> None:
    script = (
        "import sys, cancelwire; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cancelwire', 'pandas', 'jinja2', 'orjson')))"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "['cancelwire', 'cancelwire._compiled', 'cancelwire._version']"


def test_the_audit_submodule_does_not_shadow_the_function() -> None:
    import cancelwire.run.pipeline

    assert callable(cancelwire.audit)


def test_keyword_options_and_frames() -> None:
    with cancelwire.audit(STDIO / "handwritten-server-late-result-after-cancel.jsonl", protocol="2025-11-25") as result:
        calls = result.to_dataframe("cancellations")
        findings = result.to_dataframe("findings")
        exchanges = result.to_dataframe("exchanges")
    assert calls[["request_id", "method", "outcome"]].values.tolist() == [["2", "tools/call", "late-result-violation"]]
    assert findings[["rule_id", "severity", "request_id"]].values.tolist() == [
        ["CW101", "warning", "2"],
        ["CW102", "warning", "2"],
    ]
    assert exchanges["method"].tolist() == ["initialize", "tools/call"]
    assert exchanges["cancelled"].tolist() == [False, True]
    assert str(findings["severity"].dtype) == "category"
    assert str(exchanges["progress"].dtype) == "Int64"


def test_select_and_ignore_by_keyword() -> None:
    path = STDIO / "handwritten-server-late-result-after-cancel.jsonl"
    with cancelwire.audit([path], ignore={"CW101": "known, fixed upstream"}) as result:
        assert [f.rule_id for f in result.findings] == ["CW102"]
        assert result.disabled["response-after-cancel"] == "known, fixed upstream"
    with cancelwire.audit([path], ignore=["response-after-cancel"]) as result:
        assert result.disabled["response-after-cancel"] == "ignored by the caller"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"race_window": math.nan}, "race_window: must be a finite number of seconds >= 0, not nan"),
        ({"hold": -1}, "hold: must be a finite number of seconds >= 0, not -1"),
        ({"max_open": 0}, "max_open: must be at least 1, not 0"),
        ({"protocol": "2099-01-01"}, "protocol: unknown revision '2099-01-01'"),
        ({"vantage": "moon"}, "vantage: unknown 'moon'"),
    ],
)
def test_bad_options_are_config_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(cancelwire.ConfigError) as caught:
        cancelwire.audit([STDIO / "sdk-clean-session.jsonl"], **options)  # type: ignore[arg-type]
    assert caught.value.message.startswith(message)


def test_exchanges_can_be_left_out() -> None:
    with cancelwire.audit([STDIO / "sdk-clean-session.jsonl"], exchanges=False) as result:
        assert result.exchanges is None
        with pytest.raises(ValueError, match="kept no exchanges"):
            result.to_dataframe("exchanges")
        with pytest.raises(ValueError, match="unknown table 'calls'"):
            result.to_dataframe("calls")
