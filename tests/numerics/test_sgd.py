"""The compiled SGD core (optuna_boxcox._math._sgd) returns scikit-learn's SGDClassifier weights bit for bit.

The oracle is scikit-learn itself: ``clone(estimator).fit(S, y)`` on the same transformed data. The
core may decline (``None``) when a decision lies within rounding; it must rarely need to. The port
mirrors a private scikit-learn loop, so it is only used on the releases verified here.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier

from optuna_boxcox._math import _sklearn_compat
from optuna_boxcox._math._sgd import fit_sgd_binary
from optuna_boxcox._math._sgd import sgd_settings
from optuna_boxcox._objective._objective import BoxCoxObjective


@pytest.fixture(params=["sonar", "breast_cancer"])
def binary_data(request):
    bunch = request.getfixturevalue(request.param)
    return bunch.data, np.asarray(bunch.target)


@pytest.mark.parametrize(
    "estimator",
    [
        SGDClassifier(loss="perceptron", random_state=42),  # the paper's linear classifier
        SGDClassifier(loss="perceptron", random_state=7, alpha=1e-3, n_iter_no_change=3),
        SGDClassifier(loss="hinge", random_state=0),
        SGDClassifier(loss="perceptron", random_state=1, penalty=None),
        SGDClassifier(loss="perceptron", random_state=2, tol=None, max_iter=7),
        SGDClassifier(loss="perceptron", random_state=3, shuffle=False, fit_intercept=False),
    ],
    ids=repr,
)
def test_weights_equal_scikit_learns_bit_for_bit(binary_data, estimator, monkeypatch):
    # Compared against whichever scikit-learn is installed, verified or not: this is the test that
    # verifies a release for PLAIN_SGD_VERIFIED.
    monkeypatch.setattr(_sklearn_compat, "PLAIN_SGD_PORT_MATCHES", True)
    X, y = binary_data
    objective = BoxCoxObjective(X, y, estimator)
    settings = sgd_settings(estimator)
    assert settings is not None
    signs = np.where(y == np.unique(y)[1], 1.0, -1.0)
    rng = np.random.default_rng(0)
    declined = 0
    for _ in range(25):
        S = np.ascontiguousarray(objective.transform(rng.uniform(-4, 4, objective.space.dim)))
        fitted = fit_sgd_binary(S, signs, settings)
        if fitted is None:
            declined += 1
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = clone(estimator).fit(S, y)
        w, intercept, n_iter = fitted
        assert n_iter == model.n_iter_
        assert np.array_equal(w, model.coef_[0]), np.max(np.abs(w - model.coef_[0]))
        assert intercept == model.intercept_[0]
    assert declined <= 2


def test_non_finite_weights_are_left_to_scikit_learn():
    # Huge features overflow the weights; scikit-learn raises, the core answers None.
    X = np.array([[1e308, -1e308], [-1e308, 1e308], [1e308, 1e308], [-1e308, -1e308]] * 5)
    y = np.array([1.0, -1.0, 1.0, -1.0] * 5)
    assert (
        fit_sgd_binary(X, y, sgd_settings(SGDClassifier(loss="perceptron", random_state=0)))
        is None
    )
    # scikit-learn's own check of the data sums the overflowing squares first.
    with (
        pytest.raises(ValueError, match="Floating-point under-/overflow"),
        np.errstate(invalid="ignore"),
    ):
        SGDClassifier(loss="perceptron", random_state=0).fit(X, y)


def test_installed_scikit_learn_is_one_the_port_was_verified_against():
    assert _sklearn_compat.PLAIN_SGD_PORT_MATCHES, (
        f"scikit-learn {_sklearn_compat.SKLEARN_VERSION} is not in PLAIN_SGD_VERIFIED: the "
        "perceptron fast path is off. If test_weights_equal_scikit_learns_bit_for_bit passes with "
        "it, add the release to optuna_boxcox/_math/_sklearn_compat.py"
    )


def test_an_unverified_scikit_learn_leaves_the_fit_to_scikit_learn(breast_cancer, monkeypatch):
    monkeypatch.setattr(_sklearn_compat, "PLAIN_SGD_PORT_MATCHES", False)
    estimator = SGDClassifier(loss="perceptron", random_state=42)
    assert sgd_settings(estimator) is None
    X, y = breast_cancer.data, breast_cancer.target
    lambdas = np.linspace(-2.0, 2.0, X.shape[1])
    objective = BoxCoxObjective(X, y, estimator)
    S = objective.transform(lambdas)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        expected = clone(estimator).fit(S, y).score(S, y)
        assert objective.evaluate(lambdas) == expected
