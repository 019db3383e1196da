"""The built wheel installs one package, `cancelwire`, carries rules/ and templates/, and audits from a clean
virtual environment.

Built pure (`CANCELWIRE_PURE=1`): compiling again would take about a minute of the suite, and what the
compiled build adds is tested on the install itself (`tests/test_compiled.py`)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_installs_and_audits_outside_the_checkout(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(ROOT)],
        check=True,
        timeout=300,
        env={**os.environ, "CANCELWIRE_PURE": "1"},
    )
    wheel = next(dist.glob("cancelwire-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "cancelwire/_data/rules/CW101-response-after-cancel.toml" in names
    assert "cancelwire/_data/templates/report.html.j2" in names
    assert "cancelwire/report.schema.json" in names
    assert "cancelwire/py.typed" in names
    modules = {f"cancelwire/{p.relative_to(ROOT / 'analyzer')}" for p in (ROOT / "analyzer").rglob("*.py")}
    assert sorted(modules - set(names)) == []  # every folder of analyzer/ is listed in pyproject.toml
    top_level = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top_level == {"cancelwire"}  # no other import name is installed (such as the source folder's)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert (
        "[pytest11]\ncancelwire = cancelwire.pytest_plugin.hooks" in zipfile.ZipFile(wheel).read(entry_points).decode()
    )
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        timeout=300,
    )
    sample = ROOT / "sample_captures" / "stdio" / "handwritten-client-cancels-unknown-id.jsonl"
    script = (
        "import cancelwire, sys; from cancelwire.cli.main import main;"
        " print(cancelwire.__file__); sys.exit(main(sys.argv[1:]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "audit", str(sample), "--format", "html", "-o", str(tmp_path / "r.html")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin"},
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith(str(target))  # the installed copy ran, not the checkout
    assert "cancel-unknown-request" in (tmp_path / "r.html").read_text()
