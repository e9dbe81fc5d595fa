"""Paths users import keep working for one release after the layout moved modules into folders:
every name ``optuna_boxcox`` exports, its public modules, and the old paths of the applications
(now in :mod:`optuna_boxcox.experiments`), which warn that they moved."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import optuna_boxcox

MOVED = {
    "optuna_boxcox.compare": "optuna_boxcox.experiments.compare",
    "optuna_boxcox.benchmark": "optuna_boxcox.experiments.benchmark",
    "optuna_boxcox.meta": "optuna_boxcox.experiments.meta",
    "optuna_boxcox.reproduce": "optuna_boxcox.experiments.reproduce",
}
#: Public modules that did not move.
STAYED = (
    "optuna_boxcox.classifiers",
    "optuna_boxcox.datasets",
    "optuna_boxcox.storage",
    "optuna_boxcox.figures",
    "optuna_boxcox.samplers",
    "optuna_boxcox.experiments",
    "optuna_boxcox.cli",
)


@pytest.mark.parametrize("name", optuna_boxcox.__all__)
def test_every_exported_name_is_importable_from_the_package(name):
    assert getattr(optuna_boxcox, name) is not None


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_leads_to_the_moved_module_with_a_warning(old, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])


def test_names_imported_from_old_paths_are_the_moved_ones():
    # As the README's and the examples' users wrote them, in a fresh interpreter.
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import optuna_boxcox.experiments.compare as new\n"
        "with warnings.catch_warnings():\n"
        "    warnings.simplefilter('ignore', DeprecationWarning)\n"
        "    from optuna_boxcox.compare import compare, format_table\n"
        "    from optuna_boxcox.reproduce import reproduce\n"
        "    from optuna_boxcox import benchmark, meta\n"
        "assert compare is new.compare and format_table is new.format_table\n"
        "import optuna_boxcox.experiments as e\n"
        "assert reproduce is e.reproduce.reproduce and benchmark is e.benchmark and meta is e.meta\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("path", STAYED)
def test_public_modules_that_stayed_import_without_a_warning(path, recwarn):
    importlib.import_module(path)
    assert not [
        w
        for w in recwarn
        if issubclass(w.category, DeprecationWarning) and "moved" in str(w.message)
    ]
