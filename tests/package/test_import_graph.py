"""The package's modules import each other one way, from the numerics up to the commands: every
import goes to a module of the same layer or of one below (:data:`LAYERS`), there is no import
cycle, and the package's own modules are imported at the top of a module, not inside a function
(an import inside a function runs later, but the two modules still need each other, and a reader
of the module's head does not see it). Imports for type checkers (``if TYPE_CHECKING:``) count:
they are dependencies a reader follows too.

:data:`LAYERS` is the source of truth for the layer table in docs/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

import optuna_boxcox

PACKAGE = Path(optuna_boxcox.__file__).parent
ROOT = "optuna_boxcox"

#: The layers, lowest first, each a name and the module-name prefixes it holds (a module belongs
#: to the layer of its longest prefix; the package itself, ``optuna_boxcox``, is only its
#: ``__init__``). A module imports modules of its own layer or of a layer below.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "plain utilities",
        (
            "optuna_boxcox._version",
            "optuna_boxcox._defaults",
            "optuna_boxcox._lazy",
            "optuna_boxcox._system",
        ),
    ),
    ("numerics", ("optuna_boxcox._math", "optuna_boxcox._dask")),
    ("classifiers and data sets", ("optuna_boxcox.classifiers", "optuna_boxcox.datasets")),
    ("what a study is", ("optuna_boxcox._study",)),
    ("Optuna internals", ("optuna_boxcox._optuna",)),
    ("storage", ("optuna_boxcox.storage",)),
    ("objective", ("optuna_boxcox._objective",)),
    ("samplers", ("optuna_boxcox.samplers",)),
    ("runner", ("optuna_boxcox._runner",)),
    ("figures", ("optuna_boxcox.figures",)),
    ("one study's lifecycle", ("optuna_boxcox._lifecycle",)),
    ("estimator", ("optuna_boxcox._classifier", "optuna_boxcox._ensemble")),
    ("public names", ("optuna_boxcox",)),
    ("experiments", ("optuna_boxcox.experiments",)),
    ("measurement", ("optuna_boxcox.bench",)),
    ("commands", ("optuna_boxcox.cli",)),
]
#: Folders whose functions may import the package's modules: the command line defers them for
#: its start-up time (``--help`` imports none of scikit-learn, Optuna or Numba), and a
#: measurement imports what it measures.
DEFERRING = ("optuna_boxcox.cli", "optuna_boxcox.bench")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every module of the package ``module`` imports: at import time, inside a function, or for
    type checkers."""
    return {target for target, _ in _imports_at(tree, module, is_package)}


def _imports_at(tree: ast.AST, module: str, is_package: bool) -> set[tuple[str, bool]]:
    """(module of the package, imported inside a function) for each import of ``module``."""
    modules = set(_all_modules())
    found: set[tuple[str, bool]] = set()

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            in_function = True
        if isinstance(node, ast.Import):
            found.update(
                (alias.name, in_function) for alias in node.names if alias.name.startswith(ROOT)
            )
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join([*parts[:keep], *([node.module] if node.module else [])])
            if base.startswith(ROOT):
                for alias in node.names:
                    child = f"{base}.{alias.name}"
                    found.add((child if child in modules else base, in_function))
        for child in ast.iter_child_nodes(node):
            visit(child, in_function)

    visit(tree, False)
    return {(m, f) for m, f in found if m in modules and m != module}


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


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the layer holding ``module``."""
    best, length = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            holds = module == prefix or (prefix != ROOT and module.startswith(prefix + "."))
            if holds and len(prefix) > length:
                best, length = index, len(prefix)
    if best is None:
        raise LookupError(f"{module} is in no layer: add it to LAYERS and docs/architecture.md")
    return best


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Each import of a module of a higher layer, as text."""
    return [
        f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} "
        f"({LAYERS[layer_of(target)][0]})"
        for module in sorted(graph)
        for target in sorted(graph[module])
        if layer_of(target) > layer_of(module)
    ]


def in_function_imports() -> list[str]:
    """Each import of the package's own modules inside a function, outside :data:`DEFERRING`."""
    found = []
    for name, path in sorted(_all_modules().items()):
        if any(name == d or name.startswith(d + ".") for d in DEFERRING):
            continue
        tree = ast.parse(path.read_text())
        found += [
            f"{name} imports {target} in a function"
            for target, inside in sorted(_imports_at(tree, name, path.name == "__init__.py"))
            if inside
        ]
    return found


def test_every_module_is_in_a_layer():
    for module in _all_modules():
        layer_of(module)


def test_no_module_imports_one_of_a_layer_above():
    found = upward_imports(import_graph())
    assert not found, "imports from a lower layer up:\n" + "\n".join(found)


def test_the_package_imports_its_own_modules_at_the_top_of_modules():
    found = in_function_imports()
    assert not found, "\n".join(found)


def test_the_checks_see_an_upward_import_a_type_import_and_an_import_in_a_function():
    module = "optuna_boxcox._study._spec"
    code = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from optuna_boxcox.samplers import PlanSampler\n"
        "def build():\n"
        "    from optuna_boxcox._math import _numerics\n"
    )
    found = _imports_at(ast.parse(code), module, False)
    assert found == {("optuna_boxcox.samplers", False), ("optuna_boxcox._math._numerics", True)}
    graph = {module: {target for target, _ in found}}
    assert upward_imports(graph) == [
        "optuna_boxcox._study._spec (what a study is) imports optuna_boxcox.samplers (samplers)"
    ]


def test_the_architecture_document_lists_the_layers_of_this_test():
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    table = text[text.index("| layer | modules |") :].split("\n\n")[0].splitlines()[2:]
    rows = []
    for line in table:
        name, modules = (cell.strip() for cell in line.strip("|").split("|")[:2])
        rows.append((name, tuple(part.strip("`") for part in modules.split(", "))))
    assert rows == LAYERS
