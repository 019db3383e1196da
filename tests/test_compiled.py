"""The modules setup.py compiles with mypyc behave as their sources do, and the right ones run.

The rest of the suite runs whichever the install built (compiled, on CI); here the sources are run too, on
every shipped sample, and the reports compared byte for byte."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cancelwire import _compiled
from cancelwire._compiled import COMPILED, stale_sources

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "cancelwire"]
needs_build = pytest.mark.skipif(not COMPILED, reason="installed as pure Python: nothing compiled to compare")


def _run(args: list[str], *, pure: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CANCELWIRE_PURE"}
    if pure:
        env["CANCELWIRE_PURE"] = "1"
    return subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


def _report(path: Path) -> dict[str, object]:
    report = json.loads(path.read_text())
    report["run"].pop("generated")
    return report


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="only CI promises a compiler")
def test_ci_installs_the_compiled_modules() -> None:
    assert COMPILED, "scripts/install built pure Python on CI: gcc or Python's headers missing, or setup.py failed"


@needs_build
def test_sources_and_build_give_the_same_report_on_every_sample(tmp_path: Path) -> None:
    reports = {}
    for pure in (False, True):
        out = tmp_path / f"pure-{pure}.json"
        args = [*CLI, "audit", "sample_captures", "--format", "json", "--fail-on", "never", "-o", str(out)]
        proc = _run(args, pure=pure)
        assert proc.returncode == 0, proc.stderr
        reports[pure] = _report(out)
    assert reports[True]["inputs"] == reports[False]["inputs"]
    assert reports[True] == reports[False]


@needs_build
def test_cancelwire_pure_runs_the_sources() -> None:
    probe = (
        "import cancelwire.readers.capture.tcp as m, cancelwire.rebuild.reconstruct as r; print(m.__file__, r.__file__)"
    )
    compiled = _run([sys.executable, "-c", probe], pure=False).stdout.split()
    pure = _run([sys.executable, "-c", probe], pure=True).stdout.split()
    assert all(name.endswith(".so") for name in compiled), compiled
    assert [Path(name).name for name in pure] == ["tcp.py", "reconstruct.py"]
    assert _run([*CLI, "--version"], pure=False).stdout.endswith("(compiled by mypyc)\n")
    assert _run([*CLI, "--version"], pure=True).stdout.endswith("(pure Python)\n")


def _checkout(tmp_path: Path) -> Path:
    """A source checkout's package as a build leaves it: a library, one compiled module beside its source."""
    package = tmp_path / "analyzer"
    (package / "rebuild").mkdir(parents=True)
    source = package / "rebuild" / "pending.py"
    source.write_text("")
    (package / "rebuild" / f"pending{_compiled.EXTENSION}").write_bytes(b"")
    (package / f"_native_rebuild__mypyc{_compiled.EXTENSION}").write_bytes(b"")
    past = time.time() - 60
    os.utime(source, (past, past))
    return package


def test_a_source_edited_after_the_build_is_stale(tmp_path: Path) -> None:
    package = _checkout(tmp_path)
    assert stale_sources(package) == []
    (package / "rebuild" / "pending.py").write_text("# edited\n")
    assert stale_sources(package) == ["rebuild/pending.py"]


def test_an_installed_package_is_never_stale(tmp_path: Path) -> None:
    package = _checkout(tmp_path)
    (package / "rebuild" / "pending.py").write_text("# edited\n")
    installed = package.rename(tmp_path / "cancelwire")
    assert stale_sources(installed) == []


@needs_build
def test_the_tests_that_look_inside_the_sources_pass_on_them() -> None:
    proc = _run([sys.executable, "-m", "pytest", "-q", "-m", "sources", "-p", "no:cacheprovider"], pure=True)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert " passed" in proc.stdout.splitlines()[-1]


def _written_inits() -> Iterator[tuple[str, ast.ClassDef]]:
    """Every dataclass of the package that writes its own `__init__` (`@dataclass(..., init=False)`)."""
    for path in sorted((ROOT / "analyzer").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(d, ast.Call)
                and isinstance(d.func, ast.Name)
                and d.func.id == "dataclass"
                and any(
                    k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False for k in d.keywords
                )
                for d in node.decorator_list
            ):
                yield f"{path.relative_to(ROOT)}: {node.name}", node


def _self_attributes(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Tuple):
        for element in target.elts:
            yield from _self_attributes(element)
    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        yield target.attr


def test_a_written_init_sets_every_field_it_declares() -> None:
    """The records built per packet or message write their `__init__` (mypyc compiles it, not the dataclass's:
    docs/contributing.md). Neither mypy nor mypyc says when one leaves a field unset, which fails only when
    the field is read; this does."""
    wrong = []
    classes = list(_written_inits())
    for where, cls in classes:
        declared = {s.target.id for s in cls.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
        init = next(f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
        assigned = {
            name
            for node in ast.walk(init)
            if isinstance(node, ast.Assign)
            for target in node.targets
            for name in _self_attributes(target)
        }
        if declared != assigned:
            wrong.append(
                f"{where}: never set {sorted(declared - assigned)}, not declared {sorted(assigned - declared)}"
            )
    assert not wrong
    assert len(classes) >= 20  # the test sees them


@needs_build
def test_a_reply_after_a_hold_of_no_time_is_judged_as_the_sources_judge_it(tmp_path: Path) -> None:
    """mypyc 2.4.1 let go of a reference it had not taken on one path of `rebuild.finished._reply_after_hold`
    (a reply to a call whose hold had ended, from a peer whose log has no times): the compiled audit crashed
    where the sources judged (found by test_fuzz_cli with `--hold 0`). Both builds give one report."""
    sample = ROOT / "sample_captures/stdio/handwritten-server-late-result-after-cancel.jsonl"
    reports = []
    for pure in (False, True):
        out = tmp_path / f"pure-{pure}.json"
        run = _run([*CLI, "audit", str(sample), "--hold", "0", "--format", "json", "-o", str(out)], pure=pure)
        assert run.returncode == 1, run.stderr  # findings
        reports.append(_report(out))
    assert reports[0] == reports[1]
    assert any(finding["rule"] for finding in reports[0]["findings"])
