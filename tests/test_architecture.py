"""The picture of the package's imports: no cycle (not even one hidden by a local import), data flows
one way, and nothing that renders a result depends on how the inputs were read."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "analyzer"
#: Modules that turn an AuditResult into something people or CI systems read.
RENDERING = {
    "results",
    "report",
    "rendering",
    "inert",
    "formats",
    "junit",
    "sarif",
    "github",
    "frames",
    "tables",
    "diagram",
    "diagram_rows",
}
#: Modules that rebuild sessions and timelines from events: `reconstruct` and the rooms it dispatches to.
RECONSTRUCTION = {
    "reconstruct",
    "pending",
    "entrylog",
    "finished",
    "holds",
    "cancels",
    "progress_notifications",
    "streams",
    "tasks",
    "task_traffic",
}
#: The data model, lowest first: each module reaches only the layers below its own (`model` gathers them).
MODEL_LAYERS = ({"kinds"}, {"records"}, {"events"}, {"timelines"}, {"findings"}, {"model"})
#: The capture reader's HTTP layers, lowest first: a module reaches only the layers below its own.
HTTP_LAYERS = (
    {"readers.http1", "readers.http2_bounds"},
    {"readers.http2_events", "readers.http2_mirror"},
    {"readers.http2"},
    {"readers.http2_joined"},
    {"readers.capture_http2"},
)


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "cancelwire"


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Every package module PATH imports at run time (module level or inside a function)."""
    name = _name(path)
    package = name.split(".") if path.name == "__init__.py" and name != "cancelwire" else name.split(".")[:-1]
    found: set[str] = set()
    stack: list[ast.AST] = [ast.parse(path.read_text())]
    while stack:
        node = stack.pop()
        if _is_type_checking(node):
            continue
        stack.extend(ast.iter_child_nodes(node))
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = package[: len(package) - node.level + 1]
        stem = [*base, *(node.module.split(".") if node.module else [])]
        for alias in node.names:
            candidate = ".".join([*stem, alias.name])
            found.add(candidate if candidate in modules else ".".join(stem) or "cancelwire")
    return found - {name}


def _graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {_name(p) for p in paths}
    return {_name(p): _imports(p, modules) & modules for p in paths}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dep in graph[todo.pop()] - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def test_the_graph_is_read() -> None:
    graph = _graph()
    assert "readers.transcript" in graph["readers"]
    assert graph["model"] == {"kinds", "records", "events", "timelines", "findings"}
    assert graph["kinds"] == set()


def test_imports_have_no_cycle() -> None:
    graph = {name: deps - {"cancelwire"} for name, deps in _graph().items() if name != "cancelwire"}
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


@pytest.mark.parametrize("module", sorted(RENDERING))
def test_rendering_does_not_depend_on_readers(module: str) -> None:
    graph = _graph()
    if module not in graph:
        pytest.skip(f"{module} is not a module (any more)")
    reached = _reachable(graph, module)
    assert not {m for m in reached if m == "readers" or m.startswith("readers.")}, sorted(reached)
    assert not reached & (RECONSTRUCTION | {"pipeline"}), sorted(reached)


def test_readers_know_nothing_downstream() -> None:
    graph = _graph()
    downstream = RECONSTRUCTION | {"engine", "pipeline", "report", "results", "cli", "outcomes"}
    for name in graph:
        if name.startswith("readers"):
            assert not _reachable(graph, name) & downstream, name


def test_http_layers_point_down() -> None:
    graph = _graph()
    for level, layer in enumerate(HTTP_LAYERS):
        own_and_above = set().union(*HTTP_LAYERS[level:])
        for name in layer:
            assert not _reachable(graph, name) & own_and_above, name


def test_the_model_depends_only_on_its_lower_layers() -> None:
    graph = _graph()
    for level, layer in enumerate(MODEL_LAYERS):
        below = set().union(*MODEL_LAYERS[:level])
        for name in layer:
            assert _reachable(graph, name) <= below, name


def test_a_loaded_rule_depends_only_on_the_model() -> None:
    """What a rule is (`rule`) is apart from how rule files are found and read (`catalog`): the
    engine and the reports need the one, not the other."""
    assert _reachable(_graph(), "rule") <= set().union(*MODEL_LAYERS)
