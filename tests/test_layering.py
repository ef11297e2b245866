"""The layers stay as DESIGN.md draws them: read from the source, so a change that breaks one fails here.

* the import graph of ``backend`` and ``web`` has no circle (type-only imports under
  ``if TYPE_CHECKING:`` do not count: they never run);
* no arrow runs up: a package imports only packages below it (:data:`LAYERS`), and within the
  core, the controller and the broker side use the core's shared modules, never each other;
* only ``backend/zk`` imports kazoo;
* ``backend/core`` and ``backend/view`` are pure: no threads, clocks, random sources, I/O or kazoo.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {
    "web": 8,
    "backend.lessons": 7,
    "backend.stats": 6,
    "backend.runtime": 6,
    "backend.faultscript": 5,
    "backend.zk": 4,
    "backend.zkserver": 3,
    "backend.view": 2,
    "backend.core": 1,
}
"""Each package's height: it may import packages of a smaller height (and itself)."""
IMPURE = {"threading", "time", "random", "socket", "subprocess", "os", "kazoo", "queue", "asyncio", "select"}


def modules() -> dict[str, Path]:
    found = {}
    for path in [*ROOT.glob("backend/**/*.py"), *ROOT.glob("web/**/*.py")]:
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


MODULES = modules()


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(name: str) -> set[str]:
    """Every module ``name`` imports when it runs (top level or inside functions)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[:len(package.split(".")) - child.level + 1]
                    module = ".".join(base + ([child.module] if child.module else []))
                else:
                    module = child.module
                found.add(module)
                found.update(f"{module}.{alias.name}" for alias in child.names if f"{module}.{alias.name}" in MODULES)
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


GRAPH = {name: {m for m in imports(name) if m in MODULES and m not in (name, "backend")} for name in MODULES
         if name != "backend"}


def layer(name: str) -> str | None:
    return next((package for package in LAYERS if name == package or name.startswith(package + ".")), None)


def test_every_module_belongs_to_a_layer():
    assert [name for name in GRAPH if layer(name) is None] == []


def test_the_import_graph_has_no_circle():
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(name: str) -> list[str] | None:
        state[name] = 1
        path.append(name)
        for other in sorted(GRAPH[name]):
            if state.get(other) == 1:
                return path[path.index(other):] + [other]
            if other not in state and (circle := walk(other)):
                return circle
        path.pop()
        state[name] = 2
        return None

    for name in sorted(GRAPH):
        if name not in state:
            circle = walk(name)
            assert circle is None, "an import circle: " + " -> ".join(circle)


def test_no_arrow_runs_up():
    upward = [f"{name} -> {other}" for name, others in GRAPH.items() for other in others
              if LAYERS[layer(other)] > LAYERS[layer(name)]
              or (LAYERS[layer(other)] == LAYERS[layer(name)] and layer(other) != layer(name))]
    assert upward == []


@pytest.mark.parametrize("side,other", [("backend.core.controller", "backend.core.broker"),
                                        ("backend.core.broker", "backend.core.controller")])
def test_the_controller_and_the_broker_side_of_the_core_do_not_import_each_other(side, other):
    assert [f"{name} -> {m}" for name, ms in GRAPH.items() if name.startswith(side) for m in ms
            if m.startswith(other)] == []


def test_the_core_s_shared_modules_import_neither_side():
    shared = [name for name in GRAPH if layer(name) == "backend.core" and name.count(".") == 2]
    assert [f"{name} -> {m}" for name in shared for m in GRAPH[name]
            if m.startswith(("backend.core.controller", "backend.core.broker"))] == []


def test_only_backend_zk_imports_kazoo():
    assert sorted(name for name in GRAPH if not name.startswith("backend.zk.") and name != "backend.zk"
                  and any(m == "kazoo" or m.startswith("kazoo.") for m in imports(name))) == []


@pytest.mark.parametrize("package", ["backend.core", "backend.view"])
def test_the_pure_packages_import_no_thread_clock_random_io_or_kazoo(package):
    impure = {name: sorted(m for m in imports(name) if m.split(".")[0] in IMPURE)
              for name in GRAPH if layer(name) == package}
    assert {name: found for name, found in impure.items() if found} == {}
