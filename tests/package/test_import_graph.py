"""The package's modules import each other one way: no import cycle, not even one hidden in a
function (an import inside a function runs later, but the two modules still need each other)."""

from __future__ import annotations

import ast
from pathlib import Path

import optuna_boxcox

PACKAGE = Path(optuna_boxcox.__file__).parent
ROOT = "optuna_boxcox"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every module of the package ``module`` imports when it runs (at import time or inside a
    function), leaving out imports for type checkers only."""
    modules = set(_all_modules())
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith(ROOT))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join([*parts[:keep], *([node.module] if node.module else [])])
            if base.startswith(ROOT):
                for alias in node.names:
                    child = f"{base}.{alias.name}"
                    found.add(child if child in modules else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(module)
    return {m for m in found if m in modules}


def _all_modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def import_graph() -> dict[str, set[str]]:
    """Module → the package's modules it imports."""
    return {
        name: _imports(ast.parse(path.read_text()), name, path.name == "__init__.py")
        for name, path in _all_modules().items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path back to its start) per strongly connected group of modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                connect(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    found = []
    for group in groups:
        start = min(group)
        path, seen, node = [start], {start}, start
        while True:
            node = min(m for m in graph[node] if m in group)
            path.append(node)
            if node in seen:
                break
            seen.add(node)
        found.append(path[path.index(node) :])
    return found


def test_the_package_has_no_import_cycle_even_inside_functions():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" → ".join(c) for c in found)


def test_the_cycle_finder_sees_a_cycle_hidden_in_a_function():
    spec = ast.parse("from optuna_boxcox._objective._objective import OBJECTIVES\n")
    hidden = ast.parse("def build():\n    from optuna_boxcox._study._spec import SearchSpec\n")
    graph = {
        "optuna_boxcox._study._spec": _imports(spec, "optuna_boxcox._study._spec", False),
        "optuna_boxcox._objective._objective": _imports(
            hidden, "optuna_boxcox._objective._objective", False
        ),
    }
    assert cycles(graph) == [
        [
            "optuna_boxcox._objective._objective",
            "optuna_boxcox._study._spec",
            "optuna_boxcox._objective._objective",
        ]
    ]
