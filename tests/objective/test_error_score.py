"""``error_score``: what a classifier fit that raises scores, as in scikit-learn's searches.

A setting searched with the transform may be one the classifier refuses (linear discriminant
analysis's ``svd`` solver with shrinkage): with ``error_score=0`` those points lose instead of
stopping the search, and every other point scores exactly what it scores without it. The error
score is part of the experiment (a study recorded with another is refused) and is recorded only
when it is not the default, so studies made before keep their record.
"""

from __future__ import annotations

import warnings

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution
import pytest
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin
from sklearn.datasets import load_wine
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import StratifiedKFold
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import StudyMismatch
from optuna_boxcox import optimize
from optuna_boxcox._lifecycle._search import RunOptions
from optuna_boxcox._lifecycle._search import Where
from optuna_boxcox._lifecycle._search import run_search
from optuna_boxcox._objective._arguments import check_data
from optuna_boxcox._study._spec import SPEC_ATTR
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox.cli import build_parser
from optuna_boxcox.cli._args import UsageError
from optuna_boxcox.cli.search import search_spec
from optuna_boxcox.samplers import CoordinateGridSampler

SOLVER = {"solver": CategoricalDistribution(["lsqr", "svd"])}


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True, as_frame=True)
    return X.iloc[:, :4], y


def _study(objective, trials: int | None = None) -> optuna.Study:
    study = optuna.create_study(
        direction="maximize", sampler=CoordinateGridSampler.from_preset("iterative", seed=0)
    )
    optimize(study, objective, n_trials=trials)
    return study


def test_a_refused_setting_scores_the_error_score_and_the_others_as_without_it(wine):
    X, y = wine
    estimator = LinearDiscriminantAnalysis(solver="lsqr", shrinkage="auto")
    objective = BoxCoxObjective(X, y, estimator, cv=3, estimator_params=SOLVER, error_score=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        study = _study(objective)
    refused = [t for t in study.trials if t.params["estimator:solver"] == "svd"]
    assert refused, "the sweep over the solver tried svd"
    assert all(t.value == 0.0 for t in refused)
    assert any(issubclass(w.category, FitFailedWarning) for w in caught)
    # The oracle: each lsqr point scored by an objective that raises, and by hand.
    plain = BoxCoxObjective(X, y, estimator, cv=3, estimator_params=SOLVER)
    for trial in [t for t in study.trials if t.params["estimator:solver"] == "lsqr"][:5]:
        assert trial.value == plain.evaluate(plain.to_point(trial.params))
    with pytest.raises(NotImplementedError, match="shrinkage"):
        _study(plain)


class _FailsOnSmallFolds(ClassifierMixin, BaseEstimator):
    """GaussianNB that refuses to fit fewer than ``rows`` rows."""

    def __init__(self, rows: int = 0) -> None:
        self.rows = rows

    def fit(self, X, y):
        if len(X) < self.rows:
            raise ValueError(f"needs {self.rows} rows, got {len(X)}")
        self.model_ = GaussianNB().fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


def test_with_inner_folds_each_failed_fold_scores_the_error_score(wine):
    """Folds of 142 and 143 training rows; the classifier refuses fewer than 143: the score is
    the mean over the folds, the refused ones at the error score (a plain loop is the oracle)."""
    X, y = wine
    estimator = _FailsOnSmallFolds(rows=143)
    objective = BoxCoxObjective(X, y, estimator, cv=5, error_score=-1, fast=False)
    point = objective.to_point(objective.initial_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        score = objective.evaluate(point)
    transformed = objective.transform(objective.mle_lambdas)
    folds = StratifiedKFold(5, shuffle=True, random_state=0).split(transformed, y)
    expected = []
    for train, test in folds:
        if len(train) < 143:
            expected.append(-1.0)
            continue
        model = GaussianNB().fit(transformed[train], y.iloc[train])
        expected.append(float(np.mean(model.predict(transformed[test]) == y.iloc[test])))
    assert -1.0 in expected and max(expected) > 0, "some folds fail, some do not"
    assert score == pytest.approx(np.mean(expected), abs=1e-12)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "ignore", True, None])
def test_an_error_score_that_is_not_raise_or_a_finite_number_is_refused(wine, bad):
    X, y = wine
    with pytest.raises(ValueError, match="error_score must be 'raise' or a finite number"):
        BoxCoxObjective(X, y, GaussianNB(), error_score=bad)


def test_the_estimator_refuses_a_bad_error_score(wine):
    X, y = wine
    with pytest.raises(ValueError, match="error_score"):
        BoxCoxClassifier(GaussianNB(), error_score="ignore", n_trials=2).fit(X, y)


def test_the_error_score_is_part_of_the_experiment_and_recorded_only_when_set(wine, tmp_path):
    X, y = wine
    storage = f"sqlite:///{tmp_path}/s.db"
    options = RunOptions(n_trials=10)
    plain = SearchSpec("bayes", sampler="iterative")
    found = run_search(plain, check_data(X, y), Where(storage, study_name="plain"), options)
    assert "error_score" not in found.study.user_attrs[SPEC_ATTR], "the old record, unchanged"
    zero = SearchSpec("bayes", sampler="iterative", error_score=0.0)
    found = run_search(zero, check_data(X, y), Where(storage, study_name="zero"), options)
    assert found.study.user_attrs[SPEC_ATTR]["error_score"] == 0.0
    assert SearchSpec.of_study(found.study).error_score == 0.0
    with pytest.raises(StudyMismatch, match=r"error_score: 'raise' there, 0.0 here"):
        run_search(zero, check_data(X, y), Where(storage, study_name="plain"), options)


def test_the_search_command_takes_error_score():
    parser = build_parser()
    spec = search_spec(parser.parse_args(["search", "--error-score", "0"]))
    assert spec.error_score == 0.0
    assert search_spec(parser.parse_args(["search"])).error_score == "raise"
    for bad in ("zero", "nan"):
        with pytest.raises(UsageError, match="--error-score: must be raise or a"):
            search_spec(parser.parse_args(["search", "--error-score", bad]))
