"""LogisticRegression's fast scorer against scikit-learn's own fits.

The scorer answers the optimum's predictions; scikit-learn's fit reaches that optimum as its
tolerance shrinks, so the oracle is scikit-learn itself with newton-cholesky at ``tol=1e-12``. With
the default tolerance scikit-learn stops short; the tests check that its decision values stay
within the documented first-order bound of the optimum's.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from threadpoolctl import threadpool_limits

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox._math._logistic import LogisticFit
from optuna_boxcox._math._logistic import decision_radius
from optuna_boxcox._math._logistic import design
from optuna_boxcox._objective._evaluators import LogisticScorer
from optuna_boxcox._objective._evaluators import make_fast_scorer


class _Recorder:
    """A metric that keeps the predictions it was given (the scorer's predicted labels)."""

    def __init__(self) -> None:
        self.predicted = None

    def __call__(self, y_true, y_pred):
        self.predicted = np.asarray(y_pred).copy()
        return float(np.mean(y_true == y_pred))


def _optimum(estimator):
    # scikit-learn's fit converged to rounding: the unique optimum the scorer solves for.
    return clone(estimator).set_params(solver="newton-cholesky", tol=1e-12, max_iter=1000)


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


def _assert_optimum_predictions(estimator, S, y, predicted):
    with threadpool_limits(1):
        oracle = _optimum(estimator).fit(S, y)
        decision = oracle.decision_function(S)
    assert predicted is not None
    if decision.ndim == 1:
        clear = np.abs(decision) > 1e-6
    else:
        top2 = np.sort(decision, axis=1)[:, -2:]
        clear = top2[:, 1] - top2[:, 0] > 1e-6
    expected = oracle.predict(S)
    assert np.array_equal(predicted[clear], expected[clear])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("C", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_predictions_are_those_of_the_optimum_along_a_walk(seed, n_classes, C, fit_intercept):
    X, y = _data(seed, n_classes)
    estimator = LogisticRegression(C=C, fit_intercept=fit_intercept, max_iter=2000)
    objective = BoxCoxObjective(X, y, estimator)
    recorder = _Recorder()
    scorer = make_fast_scorer(estimator, y, recorder)
    assert isinstance(scorer, LogisticScorer)
    for j, lambdas in _walk(objective, 12, seed):
        S = objective.transform(lambdas)
        if j is None:
            scorer.reset(S)
        else:
            scorer.set_column(j, S[:, j])
        score = scorer.score()
        assert score is not None
        _assert_optimum_predictions(estimator, S, y, recorder.predicted)
        assert score == accuracy_score(y, recorder.predicted)


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
        with threadpool_limits(1):
            expected = accuracy_score(y, _optimum(estimator).fit(matrix, y).predict(matrix))
        assert score == expected
    assert np.array_equal(scorer.S, S)
    assert scorer.score() == before


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_scikit_learns_default_fit_stays_within_the_stated_bound(seed, n_classes):
    # scikit-learn's lbfgs stops at a gradient of tol: its decision values (differences of two
    # classes' values for more classes) differ from the optimum's by at most the first-order
    # bound, so their predictions differ only on rows that close to the boundary.
    X, y = _data(seed, n_classes, n=200)
    estimator = LogisticRegression(max_iter=2000)
    S = BoxCoxObjective(X, y, estimator).transform(np.zeros(X.shape[1]))
    codes = np.unique(y, return_inverse=True)[1]
    Xt = design(S, True)
    theta, factor = LogisticFit(codes, n_classes, 1.0, True).solve(Xt, None)
    with threadpool_limits(1):
        fitted = clone(estimator).fit(S, y)
    bound = estimator.tol * estimator.C * len(y)
    if n_classes == 2:
        offset = np.abs(fitted.decision_function(S) - Xt @ theta)
        radius = decision_radius(Xt, factor, bound)
    else:
        ours = Xt @ theta.T
        best = np.argmax(ours, axis=1)
        rows = np.arange(len(y))
        theirs = fitted.decision_function(S)
        offset = np.abs(
            (theirs[rows, best][:, None] - theirs) - (ours[rows, best][:, None] - ours)
        )
        radius = decision_radius(Xt, factor, bound, best)
    assert np.all(offset <= 2 * radius + 1e-9)


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
        LogisticRegression(max_iter=20),
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
        LogisticRegression(solver="newton-cg", C=3.0),
        LogisticRegression(solver="newton-cholesky", fit_intercept=False),
    ],
    ids=repr,
)
def test_supported_logistic_settings_have_the_fast_path(estimator):
    y = np.array([0, 1, 2] * 20)
    assert isinstance(make_fast_scorer(estimator, y, accuracy_score), LogisticScorer)


def test_the_objective_scores_logistic_regression_through_the_fast_scorer():
    X, y = _data(0, 2)
    objective = BoxCoxObjective(X, y, LogisticRegression(max_iter=2000))
    assert objective.evaluator == "logistic"


def test_data_too_wide_for_newton_steps_is_left_to_scikit_learn():
    # 300 features: each Newton step's Hessian would cost more than scikit-learn's lbfgs fit.
    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 20)
    scorer = make_fast_scorer(LogisticRegression(), y, accuracy_score)
    scorer.reset(rng.normal(size=(40, 300)))
    assert scorer.score() is None
    scorer.reset(rng.normal(size=(40, 30)))
    assert scorer.score() is not None


@pytest.mark.parametrize("n_classes", [2, 3])
def test_adopting_another_c_scores_that_c(n_classes):
    X, y = _data(3, n_classes)
    estimator = LogisticRegression(max_iter=2000)
    S = BoxCoxObjective(X, y, estimator).transform(np.ones(X.shape[1]))
    recorder = _Recorder()
    scorer = make_fast_scorer(estimator, y, recorder)
    scorer.reset(S)
    scorer.score()
    for C in (0.01, 100.0):
        other = clone(estimator).set_params(C=C)
        assert scorer.adopt(other)
        assert scorer.score() is not None
        _assert_optimum_predictions(other, S, y, recorder.predicted)
    assert not scorer.adopt(clone(estimator).set_params(solver="liblinear"))
