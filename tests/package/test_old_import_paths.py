"""Every name ``optuna_boxcox`` exports and its public modules import, without a warning."""

from __future__ import annotations

import importlib

import pytest

import optuna_boxcox

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


@pytest.mark.parametrize("path", STAYED)
def test_public_modules_that_stayed_import_without_a_warning(path, recwarn):
    importlib.import_module(path)
    assert not [
        w
        for w in recwarn
        if issubclass(w.category, DeprecationWarning) and "moved" in str(w.message)
    ]
