"""The picture of the package: folders by stage, imports that run down the stages only, and no circle.

Every import counts: at module level, inside a function, and under `if TYPE_CHECKING:` (a type-only
circle is a definition in the wrong file)."""

from __future__ import annotations

import ast
from collections import Counter
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "analyzer"

#: The stages, lowest first. A module may import its own package and the layers below its own; packages
#: side by side in one layer know nothing of each other. "cancelwire" is the package face.
LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer)
    for layer in (
        {"errors", "_version", "_compiled"},
        {"model"},
        {"support"},
        {"readers", "rebuild", "tables"},
        {"merge"},
        {"judge"},
        {"run"},
        {"fleet", "ci"},
        {"reports"},
        {"config", "recorder"},
        {"cli"},
        {"api"},
        {"pytest_plugin"},
        {"cancelwire", "__main__"},
    )
)
#: What each package may reach at all (itself included), beyond the layer rule: the walls the docs name.
REACHES_ONLY = {
    "model": {"model"},
    "readers": {"readers", "model", "support", "errors"},
    "rebuild": {"rebuild", "model"},
    "tables": {"tables", "model", "support", "errors"},
}
#: What renders a result or gates a CI run never depends on how the inputs were read or rebuilt.
NEVER_REACHED_FROM = {
    "reports": {"readers", "rebuild", "run.pipeline", "fleet", "cli"},
    "ci": {"readers", "rebuild", "run.pipeline", "fleet", "reports", "cli"},
}
#: The data model, lowest first: each module reaches only the layers below its own (`model` gathers them).
MODEL_LAYERS = (
    {"model.kinds", "model.anomalies", "model.timestamps", "model.transcript_format"},
    {"model.records"},
    {"model.events"},
    {"model.timelines"},
    {"model.findings"},
    {"model"},
)
#: The capture reader's HTTP layers, lowest first: a module reaches only the layers below its own.
HTTP_LAYERS = (
    {"readers.http.http1", "readers.http.http2_bounds"},
    {"readers.http.http2_events", "readers.http.http2_mirror"},
    {"readers.http.http2"},
    {"readers.http.http2_joined"},
    {"readers.capture.conn"},
    {"readers.capture.over_http2"},
    {"readers.capture.over_http1"},
)
MAX_MODULES_PER_FOLDER = 20


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "cancelwire"


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every package module PATH imports, wherever the import stands (TYPE_CHECKING blocks included)."""
    name = _name(path)
    own = [] if name == "cancelwire" else name.split(".")
    package = own if path.name == "__init__.py" else own[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.removeprefix("cancelwire.") for a in node.names if a.name.startswith("cancelwire.")}
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            stem = [*package[: len(package) - node.level + 1], *(node.module.split(".") if node.module else [])]
        elif node.module and (node.module + ".").startswith("cancelwire."):
            stem = node.module.split(".")[1:]
        else:
            continue
        for alias in node.names:
            candidate = ".".join([*stem, alias.name])
            found.add(candidate if candidate in modules else ".".join(stem) or "cancelwire")
    return found - {name}


def _graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_name(p) for p in paths}
    return {_name(p): _imports(p, modules) & modules for p in paths}


GRAPH = _graph()


def _package(module: str) -> str:
    return module.split(".")[0]


def _reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dep in GRAPH[todo.pop()] - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def _layer(package: str) -> int:
    return next(level for level, layer in enumerate(LAYERS) if package in layer)


def test_the_graph_is_read_with_type_checking_and_local_imports() -> None:
    assert "readers.text.transcript" in GRAPH["readers"]
    model = {"model.kinds", "model.anomalies", "model.records", "model.events", "model.timelines", "model.findings"}
    assert GRAPH["model"] == model
    assert GRAPH["model.kinds"] == set()
    assert "run.results" in GRAPH["cancelwire"]  # only under TYPE_CHECKING
    assert "fleet.cluster" in GRAPH["fleet.pool"]  # only inside a function


def test_every_package_has_a_layer() -> None:
    assert {_package(m) for m in GRAPH} == set().union(*LAYERS)


def test_imports_have_no_cycle() -> None:
    try:
        tuple(TopologicalSorter(GRAPH).static_order())
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


def test_imports_run_down_the_stages() -> None:
    upward = [
        f"{module} -> {dep}"
        for module, deps in GRAPH.items()
        for dep in deps
        if _package(dep) != _package(module)
        and (_layer(_package(dep)) >= _layer(_package(module)) or _package(dep) == "cancelwire")
    ]
    assert upward == []


@pytest.mark.parametrize("package", sorted(REACHES_ONLY))
def test_walls(package: str) -> None:
    for module in (m for m in GRAPH if _package(m) == package):
        assert {_package(m) for m in _reachable(module)} <= REACHES_ONLY[package], module


@pytest.mark.parametrize("package", sorted(NEVER_REACHED_FROM))
def test_reports_and_ci_never_reach_how_inputs_were_read(package: str) -> None:
    walls = NEVER_REACHED_FROM[package]
    for module in (m for m in GRAPH if _package(m) == package):
        reached = _reachable(module)
        assert not {m for m in reached if any(m == w or m.startswith(w + ".") for w in walls)}, module


def test_http_layers_point_down() -> None:
    for level, layer in enumerate(HTTP_LAYERS):
        own_and_above = set().union(*HTTP_LAYERS[level:])
        for name in layer:
            assert name in GRAPH
            assert not _reachable(name) & own_and_above, name


def test_the_model_depends_only_on_its_lower_layers() -> None:
    for level, layer in enumerate(MODEL_LAYERS):
        below = set().union(*MODEL_LAYERS[:level])
        for name in layer:
            assert _reachable(name) <= below, name


def test_a_loaded_rule_depends_only_on_the_model() -> None:
    """What a rule is (`judge.rule`) is apart from how rule files are found and read (`judge.catalog`):
    the engine and the reports need the one, not the other."""
    assert {_package(m) for m in _reachable("judge.rule")} <= {"model"}


def test_no_folder_holds_more_than_twenty_modules() -> None:
    for folder in [PACKAGE, *(p.parent for p in PACKAGE.rglob("__init__.py"))]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        assert len(modules) <= MAX_MODULES_PER_FOLDER, folder


def test_a_module_name_does_not_repeat_its_folder() -> None:
    """`merge/align.py`, not `merge/merge.py`."""
    assert [p for p in PACKAGE.rglob("*.py") if p.stem == p.parent.name] == []


def test_no_two_classes_share_a_name() -> None:
    names = Counter(
        node.name
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    )
    assert sorted(name for name, count in names.items() if count > 1) == []
