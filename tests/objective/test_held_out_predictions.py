"""The registry's held-out predictors, which the guarded default's folds use instead of
scikit-learn's fit and predict, against scikit-learn itself (the oracle)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import StratifiedKFold
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox._lifecycle._guard import fold_scores
from optuna_boxcox._math._transform import BoxCoxTransformer
from optuna_boxcox._objective._evaluators import held_out_predictions
from optuna_boxcox._objective._evaluators.bayes import gaussian_nb_predictions


def _data(seed, n=240, p=6, classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    X = rng.standard_normal((n, p)) + y[:, None] * rng.uniform(0, 1, p)
    X[:, 0] = np.exp(X[:, 0])
    return X, y


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("estimator", [GaussianNB(), GaussianNB(var_smoothing=1e-3)], ids=repr)
def test_naive_bayes_predicts_what_scikit_learn_predicts(seed, estimator):
    X, y = _data(seed, classes=2 + seed % 3)
    answered = 0
    for train, test in StratifiedKFold(5, shuffle=True, random_state=seed).split(X, y):
        predicted = gaussian_nb_predictions(estimator, X[train], y[train], X[test])
        if predicted is not None:
            answered += 1
            expected = clone(estimator).fit(X[train], y[train]).predict(X[test])
            np.testing.assert_array_equal(predicted, expected)
    assert answered >= 4


def test_naive_bayes_leaves_what_it_does_not_cover_to_scikit_learn():
    X, y = _data(0)
    assert gaussian_nb_predictions(GaussianNB(priors=[0.2, 0.3, 0.5]), X, y, X) is None
    assert gaussian_nb_predictions(LogisticRegression(), X, y, X) is None
    X[0, 0] = np.nan
    assert gaussian_nb_predictions(GaussianNB(), X, y, X[1:]) is None
    assert held_out_predictions(GaussianNB(priors=[0.2, 0.3, 0.5]), X[1:], y[1:], X[1:]) is None


@pytest.mark.parametrize("metric", [accuracy_score, balanced_accuracy_score])
def test_the_gates_folds_score_as_a_plain_loop(metric):
    # The gate's fold scores against a plain loop of BoxCoxTransformer and scikit-learn's fit.
    from sklearn.model_selection import RepeatedStratifiedKFold

    X, y = _data(7, n=180, p=5)
    lambdas = np.linspace(-2, 2, 5)
    expected = []
    for train, test in RepeatedStratifiedKFold(n_splits=5, n_repeats=2, random_state=3).split(
        X, y
    ):
        transform = BoxCoxTransformer(lambdas=lambdas).fit(X[train])
        model = GaussianNB().fit(transform.transform(X[train]), y[train])
        expected.append(metric(y[test], model.predict(transform.transform(X[test]))))
    got = fold_scores(GaussianNB(), lambdas, X, y, metric, seed=3)
    np.testing.assert_array_equal(got, expected)
