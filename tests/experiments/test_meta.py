"""The meta-study over the iterative grid search's settings (optuna-boxcox meta)."""

from __future__ import annotations

import argparse

import numpy as np
import optuna
import pytest

from optuna_boxcox.cli.meta import register
from optuna_boxcox.experiments import Protocol
from optuna_boxcox.experiments import evaluate_fold
from optuna_boxcox.experiments import paper_features
from optuna_boxcox.experiments.meta import SPACE
from optuna_boxcox.experiments.meta import meta_study
from optuna_boxcox.samplers import PRESETS
from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.storage import open_storage

TINY = dict(classifier="bayes", features=1, folds=2, repeats=1)


def test_table4_rows_come_first_then_tpe_and_a_rerun_continues(tmp_path):
    storage = f"sqlite:///{tmp_path / 'meta.db'}"
    result = meta_study(n_trials=7, storage=storage, **TINY)
    trials = result.study.trials
    assert len(trials) == 7
    assert [t.user_attrs.get("preset") for t in trials[:6]] == list(PRESETS)
    for t, settings in zip(trials, PRESETS.values()):
        assert t.params == settings, "the Table-4 rows are stored as the trial's params"
    assert trials[6].user_attrs.get("preset") is None
    assert set(trials[6].params) == set(SPACE)
    assert result.study.user_attrs["meta"]["protocol"] == {
        "n_splits": 2,
        "n_repeats": 1,
        "random_state": 42,
    }
    # Its TPE is built with explicit arguments (the same on Optuna 4.2 and 5.x) and recorded.
    recorded = result.study.user_attrs["boxcox_sampler"]
    assert recorded["name"] == "tpe" and recorded["settings"]["multivariate"] is True

    # The objective is the outer cross-validated accuracy of the Box-Cox pipeline with that sampler.
    X, y = paper_features("breast_cancer")
    X = X[:, :1]
    splits = Protocol(2, 1).splits(X, y)
    sampler = CoordinateGridSampler.from_preset("iterative", seed=42)
    expected = np.mean([evaluate_fold(X, y, s, "bayes", sampler).test_accuracy for s in splits])
    assert trials[0].value == pytest.approx(expected)

    again = meta_study(n_trials=8, storage=storage, **TINY)
    assert len(again.study.trials) == 8
    assert [t.params for t in again.study.trials[:7]] == [t.params for t in trials]


def test_meta_command_prints_settings_and_importances(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'meta.db'}"
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(
        [
            "meta",
            "--classifier",
            "bayes",
            "--features",
            "1",
            "--folds",
            "2",
            "--repeats",
            "1",
            "--n-trials",
            "8",
            "--storage",
            storage,
        ]
    )
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "combined2" in out and "grid_size" in out
    study = optuna.load_study(
        study_name="meta/breast_cancer/bayes/2x1/first1", storage=open_storage(storage)
    )
    importances = study.user_attrs.get("param_importances")
    if importances is None:
        assert "parameter importances: not yet" in out
    else:
        assert set(importances) == set(SPACE)
        assert "parameter importances (fANOVA)" in out
        assert abs(sum(importances.values()) - 1.0) < 1e-6


def test_meta_refuses_a_study_run_with_another_protocol(tmp_path):
    storage = f"sqlite:///{tmp_path / 'meta.db'}"
    meta_study(n_trials=1, storage=storage, study_name="m", **TINY)
    with pytest.raises(ValueError, match="was run with"):
        meta_study(n_trials=1, storage=storage, study_name="m", **{**TINY, "folds": 3})
