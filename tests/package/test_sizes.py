"""No class over 450 lines: a class that does several jobs is split where its parts divide.

Modules have no line cap: a cap split files by count, not by concern (a module of one concern
may be long, as Optuna's RDBStorage is); the import-graph tests keep the layers apart instead."""

from __future__ import annotations

import ast
from pathlib import Path

import optuna_boxcox

PACKAGE = Path(optuna_boxcox.__file__).parent
MAX_CLASS_LINES = 450


def module_sizes(root: Path = PACKAGE) -> dict[str, int]:
    return {
        p.relative_to(root).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted(root.rglob("*.py"))
    }


def class_sizes(root: Path = PACKAGE) -> dict[str, int]:
    sizes = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                sizes[f"{path.relative_to(root).as_posix()}:{node.name}"] = (
                    node.end_lineno - node.lineno + 1
                )
    return sizes


def test_no_class_is_over_450_lines():
    long = {name: n for name, n in class_sizes().items() if n > MAX_CLASS_LINES}
    assert long == {}, f"split these classes where their parts divide: {long}"


def test_the_size_checks_see_a_long_module_and_a_long_class(tmp_path):
    # The checks above could pass by measuring nothing: they must see sizes that are there.
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_CLASS_LINES))
    (tmp_path / "big.py").write_text(f"class Big:\n{body}\n" + "y = 1\n" * 200, encoding="utf-8")
    assert module_sizes(tmp_path) == {"big.py": MAX_CLASS_LINES + 201}
    assert class_sizes(tmp_path) == {"big.py:Big": MAX_CLASS_LINES + 1}
