"""GaussianNB's fast scorer: class means and variances per column."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox._math._numerics import mean_var
from optuna_boxcox._objective._evaluators._base import EPSILON_DRIFT
from optuna_boxcox._objective._evaluators._base import RELATIVE_TIE
from optuna_boxcox._objective._evaluators._base import FastScorer
from optuna_boxcox._objective._evaluators._base import is_real
from optuna_boxcox._objective._evaluators._base import valid_parameters


class GaussianNBScorer(FastScorer):
    """GaussianNB's resubstitution predictions from per-class, per-column statistics.

    Changing column j recomputes only the class means and variances of column j and its n×classes
    block of squared standardised deviations; the joint log-likelihood is a fresh sum over the
    stored blocks (no running sums, so no drift). scikit-learn's variance floor
    ``epsilon = var_smoothing · max_j var(S[:, j])`` couples all columns; a column is rescored only
    when epsilon moved by more than a relative 1e-12 since, far below the near-tie margin.
    Memory: the p × classes × n slab of deviations, O(n) per column.
    """

    name = "gaussian-nb"
    classifier = GaussianNB
    leaves_out_zero_columns = True

    def __init__(
        self,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
        var_smoothing: float,
    ) -> None:
        super().__init__(y, metric)
        self.var_smoothing = float(var_smoothing)
        self.members = [np.flatnonzero(self.codes == c) for c in range(len(self.classes))]
        counts = np.array([len(m) for m in self.members], dtype=np.float64)
        self.log_prior = np.log(counts / np.sum(counts))

    @classmethod
    def from_estimator(
        cls,
        estimator: GaussianNB,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
    ) -> GaussianNBScorer | None:
        params = estimator.get_params(deep=False)
        smoothing = params["var_smoothing"]
        if not _supported(params):
            return None
        return cls(y, metric, smoothing)

    def _adopt(self, other: FastScorer) -> bool:
        self.var_smoothing = other.var_smoothing
        if self.S is not None:
            self.epsilon_used[:] = np.nan  # every column is rescored with the new epsilon
        return True

    def footprint(self, n_features: int) -> int:
        n, n_classes = len(self.y), len(self.classes)
        slab = n_features * n_classes * n * 8
        # A score sums the slab over columns and compares every class with the winner: a handful
        # of classes × n temporaries.
        return super().footprint(n_features) + slab + 8 * n_classes * n * 8

    def _reset(self) -> None:
        n, p = self.S.shape
        n_classes = len(self.classes)
        self.column_var = np.empty(p)
        self.theta = np.empty((p, n_classes))
        self.raw_var = np.empty((p, n_classes))
        self.deviations = np.empty((p, n_classes, n))  # (x - θ)² / σ², one slab per column
        self.log_det = np.empty((p, n_classes))  # log(2π σ²)
        self.epsilon_used = np.full(p, np.nan)  # NaN: the column's slab is stale
        for j in range(p):
            self._column_statistics(j, self.S[:, j])

    def _set_column(self, j: int, column: np.ndarray) -> None:
        self._column_statistics(j, column)

    def _column_statistics(self, j: int, column: np.ndarray) -> None:
        self.column_var[j] = mean_var(column)[1]
        for c, members in enumerate(self.members):
            self.theta[j, c], self.raw_var[j, c] = mean_var(column[members])
        self.epsilon_used[j] = np.nan

    def _predict_codes(self) -> np.ndarray | None:
        epsilon = self.var_smoothing * np.max(self.column_var)
        drift = np.abs(self.epsilon_used - epsilon) > EPSILON_DRIFT * epsilon
        for j in np.flatnonzero(np.isnan(self.epsilon_used) | drift):
            self._score_column(j, epsilon)
        if not np.all(self.raw_var + self.epsilon_used[:, None] > 0):
            return None  # scikit-learn divides by a zero variance here
        squared = np.sum(self.deviations, axis=0)
        return _winners(self.log_prior, self.log_det, squared)

    def _score_column(self, j: int, epsilon: float) -> None:
        var = self.raw_var[j] + epsilon
        column = self.S[:, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            self.deviations[j] = (column[None, :] - self.theta[j][:, None]) ** 2 / var[:, None]
            self.log_det[j] = np.log(2.0 * np.pi * var)
        self.epsilon_used[j] = epsilon


def _supported(params: dict[str, Any]) -> bool:
    """GaussianNB settings the closed form covers: no priors given, a finite var_smoothing ≥ 0."""
    smoothing = params["var_smoothing"]
    return params["priors"] is None and is_real(smoothing) and smoothing >= 0


def _winners(log_prior: np.ndarray, log_det: np.ndarray, squared: np.ndarray) -> np.ndarray | None:
    """The class index of the largest joint log-likelihood per row (``squared``: classes × rows of
    summed squared standardised deviations; ``log_det``: columns × classes of log(2π σ²)), or None
    when a row's lead is within rounding."""
    total_log_det = np.sum(log_det, axis=0)
    joint = log_prior[:, None] - 0.5 * total_log_det[:, None] - 0.5 * squared
    if not np.all(np.isfinite(joint)):
        return None
    magnitude = (
        np.abs(log_prior)[:, None] + 0.5 * np.sum(np.abs(log_det), axis=0)[:, None] + 0.5 * squared
    )
    # Each class's log-likelihood carries a rounding error relative to its own magnitude: compare
    # the winner with every other class against both magnitudes (a class with a near-zero
    # variance has a huge one but loses by far more).
    best = np.argmax(joint, axis=0)
    samples = np.arange(joint.shape[1])
    lead = joint[best, samples] - joint
    allowed = RELATIVE_TIE * (magnitude[best, samples] + magnitude)
    lead[best, samples] = np.inf
    if np.any(lead <= allowed):
        return None
    return best


def gaussian_nb_predictions(
    estimator: Any, X: np.ndarray, y: np.ndarray, X_test: np.ndarray
) -> np.ndarray | None:
    """``clone(estimator).fit(X, y).predict(X_test)`` for a GaussianNB the scorer covers, from its
    class means and variances; None for any other estimator, or where rounding could change a
    prediction (then scikit-learn answers). The gate's folds cost more in scikit-learn's checks
    than in the fit."""
    if type(estimator) is not GaussianNB or not valid_parameters(estimator):
        return None
    if not _supported(estimator.get_params(deep=False)):
        return None
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(X_test))):
        return None
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        return None
    epsilon = estimator.var_smoothing * np.max(np.var(X, axis=0))
    members = [codes == c for c in range(len(classes))]
    theta = np.array([np.mean(X[m], axis=0) for m in members])  # classes × columns
    var = np.array([np.var(X[m], axis=0) for m in members]) + epsilon
    if not np.all(var > 0):
        return None  # scikit-learn divides by a zero variance here
    counts = np.array([np.count_nonzero(m) for m in members], dtype=np.float64)
    log_prior = np.log(counts / np.sum(counts))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        squared = np.stack(
            [np.sum((X_test - theta[c]) ** 2 / var[c], axis=1) for c in range(len(classes))]
        )
        log_det = np.log(2.0 * np.pi * var).T  # columns × classes
    best = _winners(log_prior, log_det, squared)
    return None if best is None else classes[best]
