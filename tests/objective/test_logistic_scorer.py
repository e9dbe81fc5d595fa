"""LogisticRegression's fast scorer against scikit-learn's own fits.

The scorer retraces scikit-learn's lbfgs fit (:mod:`optuna_boxcox._math._lbfgs`); the oracle is
scikit-learn's ``LogisticRegression.fit`` and ``predict`` on the same matrix, and for a whole
search the same objective on scikit-learn's path (``fast=False``).
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import optuna
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from threadpoolctl import threadpool_limits

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import CoordinateGridSampler
from optuna_boxcox._math._lbfgs import lbfgs_fit
from optuna_boxcox._objective._evaluators import LogisticScorer
from optuna_boxcox._objective._evaluators import make_fast_scorer
from optuna_boxcox._objective._evaluators.logistic import logistic_predictions


def _data(seed, n_classes, n=150, p=6):
    X, y = make_classification(
        n,
        p,
        n_informative=4,
        n_redundant=1,
        n_classes=n_classes,
        flip_y=0.1,
        random_state=seed,
    )
    return np.exp(X / 2), y


def _walk(objective, steps, seed):
    """Λ for a reset, then (column changed, Λ) one column at a time."""
    rng = np.random.default_rng(seed)
    lambdas = rng.uniform(-3, 3, objective.space.dim)
    yield None, lambdas.copy()
    for _ in range(steps):
        j = int(rng.integers(objective.space.dim))
        lambdas[j] = rng.uniform(-5, 5)
        yield j, lambdas.copy()


def _sklearn_score(estimator, S, y):
    with threadpool_limits(1):
        return accuracy_score(y, clone(estimator).fit(S, y).predict(S))


@pytest.mark.long
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_lbfgs_fit_reaches_scikit_learns_coefficients(seed, n_classes, C, fit_intercept):
    X, y = _data(seed, n_classes)
    estimator = LogisticRegression(C=C, fit_intercept=fit_intercept, max_iter=2000)
    S = BoxCoxObjective(X, y, estimator).transform(np.random.default_rng(seed).uniform(-2, 2, 6))
    with threadpool_limits(1):
        fitted = clone(estimator).fit(S, y)
    codes = np.unique(y, return_inverse=True)[1]
    w, spread = lbfgs_fit(S, codes, n_classes, C, fit_intercept, estimator.tol, estimator.max_iter)
    assert spread is not None
    theirs = np.c_[fitted.coef_, fitted.intercept_] if fit_intercept else fitted.coef_
    assert w.shape == theirs.shape == spread.shape
    # The same steps to rounding: far closer than lbfgs's tolerance would place two solvers,
    # and within the margin the scorer allows from the spread of its own two roundings.
    assert np.max(np.abs(w - theirs)) <= 1e-9 * np.max(np.abs(theirs))
    assert np.all(np.abs(w - theirs) <= 100 * spread + 1e-12 * np.max(np.abs(theirs)))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("C", [0.1, 10.0])
def test_scores_are_scikit_learns_along_a_walk(seed, n_classes, C):
    X, y = _data(seed, n_classes)
    estimator = LogisticRegression(C=C, max_iter=2000)
    objective = BoxCoxObjective(X, y, estimator)
    scorer = make_fast_scorer(estimator, y, accuracy_score)
    assert isinstance(scorer, LogisticScorer)
    for j, lambdas in _walk(objective, 12, seed):
        S = objective.transform(lambdas)
        if j is None:
            scorer.reset(S)
        else:
            scorer.set_column(j, S[:, j])
        score = scorer.score()
        assert score is not None
        assert score == _sklearn_score(estimator, S, y)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_coordinate_search_records_the_values_of_scikit_learns_path(n_classes):
    # The batched search (sweeps, side-by-side threads) against the same objective fitting every
    # point through scikit-learn: every trial's value, not only the best.
    X, y = _data(7, n_classes, n=120, p=5)
    estimator = LogisticRegression(max_iter=2000)
    values = {}
    for fast in (True, False):
        objective = BoxCoxObjective(X, y, estimator, fast=fast)
        assert (objective.evaluator == "logistic") is fast
        study = optuna.create_study(
            direction="maximize", sampler=CoordinateGridSampler.from_preset("iterative")
        )
        study.optimize(objective, n_trials=60)
        values[fast] = [(t.params, t.value) for t in study.trials]
    assert values[True] == values[False]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_a_sweep_scores_each_column_and_leaves_the_matrix_as_it_was(seed, n_classes):
    X, y = _data(seed, n_classes)
    estimator = LogisticRegression(max_iter=2000)
    objective = BoxCoxObjective(X, y, estimator)
    scorer = make_fast_scorer(estimator, y, accuracy_score)
    lambdas = np.random.default_rng(seed).uniform(-2, 2, objective.space.dim)
    S = objective.transform(lambdas)
    scorer.reset(S)
    before = scorer.score()
    j = seed % objective.space.dim
    columns = []
    for lam in np.linspace(-4, 4, 9):
        swept = lambdas.copy()
        swept[j] = lam
        columns.append(objective.transform(swept)[:, j])
    scores = scorer.score_sweep(j, columns)
    for column, score in zip(columns, scores):
        matrix = S.copy()
        matrix[:, j] = column
        assert score == _sklearn_score(estimator, matrix, y)
    assert np.array_equal(scorer.S, S)
    assert scorer.score() == before


def test_a_fit_that_stops_on_max_iter_is_left_to_scikit_learn():
    # scikit-learn warns that it did not converge; the scorer does not retrace that ending.
    X, y = _data(0, 2)
    estimator = LogisticRegression(max_iter=2)
    objective = BoxCoxObjective(X, y, estimator)
    S = objective.transform(np.ones(6))
    scorer = make_fast_scorer(estimator, y, accuracy_score)
    scorer.reset(S)
    assert scorer.score() is None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert objective.evaluate(np.ones(6)) == _sklearn_score(estimator, S, y)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_long_multinomial_fit_is_scikit_learns_or_left_to_it(seed):
    # 12 classes, 60 features, 240 rows: lbfgs runs long enough for rounding to grow (on
    # movement_libras two roundings of one fit ended 5e-5 apart): the scorer's answer is
    # scikit-learn's or None.
    X, y = make_classification(
        240, 60, n_informative=30, n_classes=12, n_clusters_per_class=1, random_state=seed
    )
    estimator = LogisticRegression(max_iter=2000)
    scorer = make_fast_scorer(estimator, y, accuracy_score)
    for lam in (1.0, 0.0):
        S = BoxCoxObjective(X, y, estimator).transform(np.full(60, lam))
        scorer.reset(S)
        score = scorer.score()
        assert score is None or score == _sklearn_score(estimator, S, y)


def test_wide_data_is_scored_as_scikit_learn_scores_it():
    # 300 features on 120 rows (separable: scikit-learn's lbfgs needs many iterations).
    X, y = make_classification(120, 300, n_informative=20, random_state=0)
    estimator = LogisticRegression(max_iter=2000)
    scorer = make_fast_scorer(estimator, y, accuracy_score)
    scorer.reset(X)
    score = scorer.score()
    assert score is None or score == _sklearn_score(estimator, X, y)


class _MyLogistic(LogisticRegression):
    pass


@pytest.mark.parametrize(
    "estimator",
    [
        LogisticRegression(l1_ratio=1.0, solver="saga"),
        LogisticRegression(l1_ratio=0.5, solver="saga"),
        LogisticRegression(C=np.inf),
        LogisticRegression(class_weight="balanced"),
        LogisticRegression(solver="liblinear"),
        LogisticRegression(solver="sag"),
        LogisticRegression(solver="saga"),
        LogisticRegression(solver="newton-cg"),  # stops elsewhere than lbfgs
        LogisticRegression(solver="newton-cholesky"),
        LogisticRegression(tol=0.0),  # runs until the objective stalls: not retraced
        LogisticRegression(C=-1.0),  # invalid: scikit-learn's error must reach the user
        _MyLogistic(),
    ],
    ids=repr,
)
def test_unsupported_logistic_settings_have_no_fast_path(estimator):
    y = np.array([0, 1] * 20)
    assert make_fast_scorer(estimator, y, accuracy_score) is None


@pytest.mark.parametrize(
    "estimator",
    [
        LogisticRegression(),
        LogisticRegression(C=3.0, max_iter=50),
        LogisticRegression(fit_intercept=False, tol=1e-6),
    ],
    ids=repr,
)
def test_supported_logistic_settings_have_the_fast_path(estimator):
    y = np.array([0, 1, 2] * 20)
    assert isinstance(make_fast_scorer(estimator, y, accuracy_score), LogisticScorer)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_adopting_another_c_scores_that_c(n_classes):
    X, y = _data(3, n_classes)
    estimator = LogisticRegression(max_iter=2000)
    S = BoxCoxObjective(X, y, estimator).transform(np.ones(X.shape[1]))
    scorer = make_fast_scorer(estimator, y, accuracy_score)
    scorer.reset(S)
    scorer.score()
    for C in (0.01, 100.0):
        other = clone(estimator).set_params(C=C)
        assert scorer.adopt(other)
        assert scorer.score() == _sklearn_score(other, S, y)
    assert not scorer.adopt(clone(estimator).set_params(solver="liblinear"))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_held_out_predictions_are_scikit_learns(n_classes):
    X, y = _data(5, n_classes, n=200)
    S = BoxCoxObjective(X, y, LogisticRegression()).transform(np.full(6, 0.5))
    estimator = LogisticRegression(C=0.5, max_iter=2000)
    predicted = logistic_predictions(estimator, S[:150], y[:150], S[150:])
    with threadpool_limits(1):
        expected = clone(estimator).fit(S[:150], y[:150]).predict(S[150:])
    assert np.array_equal(predicted, expected)
    assert logistic_predictions(LogisticRegression(solver="saga"), S, y, S) is None
    assert logistic_predictions(_MyLogistic(), S, y, S) is None


def test_the_gates_folds_score_as_scikit_learns_fits(monkeypatch):
    # The gate's repeated CV through the retraced fit, against the same folds through scikit-learn.
    import dataclasses

    import optuna_boxcox._lifecycle._guard as guard
    from optuna_boxcox._objective._evaluators import REGISTRY

    entry = REGISTRY[LogisticRegression]
    assert entry.held_out is logistic_predictions, "the registry's held-out predictor"
    X, y = _data(6, 2, n=160)
    lambdas = np.linspace(-1, 2, 6)
    args = (LogisticRegression(max_iter=2000), lambdas, X, y, accuracy_score)
    answered = []

    def counted(*a):
        predicted = logistic_predictions(*a)
        answered.append(predicted is not None)
        return predicted

    monkeypatch.setitem(REGISTRY, LogisticRegression, dataclasses.replace(entry, held_out=counted))
    fast = guard.fold_scores(*args, seed=3)
    assert answered and all(answered), "every fold went through the retraced fit"
    monkeypatch.setitem(REGISTRY, LogisticRegression, dataclasses.replace(entry, held_out=None))
    assert np.array_equal(fast, guard.fold_scores(*args, seed=3))


def test_the_mle_sampler_scores_its_single_trial_with_scikit_learn(tmp_path):
    """One trial is not worth loading the compiled fit (about a second): a fresh process fits by
    scikit-learn, never imports Numba, and records the plain pipeline's score."""
    script = """
import sys, warnings
warnings.simplefilter("ignore")
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
import numpy as np
from optuna_boxcox import BoxCoxClassifier, BoxCoxTransformer
X, y = make_classification(300, 5, random_state=0)
X = np.exp(X / 2)
fitted = BoxCoxClassifier(LogisticRegression(), sampler="mle").fit(X, y)
plain = make_pipeline(BoxCoxTransformer(lambdas="mle"), LogisticRegression()).fit(X, y)
print(fitted.study_.user_attrs["boxcox_evaluator"]["evaluator"], "numba" in sys.modules,
      fitted.best_score_ == plain.score(X, y), len(fitted.study_.trials))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert done.stdout.split() == ["sklearn", "False", "True", "1"], done.stderr[-2000:]
