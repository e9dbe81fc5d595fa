"""Private members stay in their module: a module of the package reaches into another class's
``_name`` only in the three modules that exist for it — :mod:`optuna_boxcox._optuna` (Optuna's
internals), :mod:`optuna_boxcox._math._sklearn_compat` (scikit-learn's) and
:mod:`optuna_boxcox._math._jit` (Numba's)."""

from __future__ import annotations

import ast
from pathlib import Path

import optuna_boxcox

PACKAGE = Path(optuna_boxcox.__file__).parent
#: Where the internals of Optuna, scikit-learn and Numba may be used.
COMPAT = ("_optuna", "_math/_sklearn_compat.py", "_math/_jit.py")
#: The standard library's documented ``os._exit`` (a worker or a command that must end at once).
SAME_MODULE = {
    "_system/_parallel.py": {"os"},
    "cli/__init__.py": {"os"},
    "bench/workers_child.py": {"os"},
}


def _private_uses(path: Path, root: Path = PACKAGE) -> list[str]:
    allowed = SAME_MODULE.get(path.relative_to(root).as_posix(), set())
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or name.startswith("__"):
            continue
        base = ast.unparse(node.value)
        if base in ("self", "cls", "super()") or base in allowed:
            continue
        found.append(f"{path.relative_to(root)}:{node.lineno}: {base}.{name}")
    return found


def test_no_module_reaches_into_another_modules_private_members():
    uses = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix().startswith(COMPAT):
            continue
        uses += _private_uses(path)
    assert uses == []


def test_the_check_finds_a_private_use(tmp_path):
    # The test above could pass by finding nothing at all: it must see one when there is one.
    module = tmp_path / "probe.py"
    module.write_text("def f(study):\n    return study._storage, self._own\n", encoding="utf-8")
    assert _private_uses(module, tmp_path) == ["probe.py:2: study._storage"]


def _private_imports(path: Path, root: Path = PACKAGE) -> list[str]:
    """``from optuna_boxcox.x import _name`` where ``_name`` is not a module of the package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (
            isinstance(node, ast.ImportFrom) and (node.module or "").startswith("optuna_boxcox")
        ):
            continue
        folder = root.parent.joinpath(*node.module.split("."))
        for alias in node.names:
            name = alias.name
            if not name.startswith("_") or name.startswith("__"):
                continue
            if (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists():
                continue  # a private module: the package's layout, not another module's name
            found.append(f"{path.relative_to(root)}:{node.lineno}: {node.module}.{name}")
    return found


def test_no_module_imports_another_modules_private_names():
    # A name another module imports is part of that module's interface: it has a public name.
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += _private_imports(path, PACKAGE)
    assert found == []


def test_the_import_check_finds_a_private_name_and_passes_a_private_module(tmp_path):
    package = tmp_path / "optuna_boxcox"
    (package / "_sub").mkdir(parents=True)
    (package / "_sub" / "__init__.py").write_text("", encoding="utf-8")
    (package / "_sub" / "_mod.py").write_text("_hidden = 1\n", encoding="utf-8")
    probe = package / "probe.py"
    probe.write_text(
        "from optuna_boxcox._sub import _mod\nfrom optuna_boxcox._sub._mod import _hidden\n",
        encoding="utf-8",
    )
    assert _private_imports(probe, package) == ["probe.py:2: optuna_boxcox._sub._mod._hidden"]
