"""GaussianNB's fast scorer: class means and variances per column."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox._math._numerics import mean_var
from optuna_boxcox._math._numerics import mean_var_rows
from optuna_boxcox._objective._evaluators._base import EPSILON_DRIFT
from optuna_boxcox._objective._evaluators._base import RELATIVE_TIE
from optuna_boxcox._objective._evaluators._base import FastScorer
from optuna_boxcox._objective._evaluators._base import is_real
from optuna_boxcox._objective._evaluators._base import valid_parameters

#: Values of one candidates × classes × rows array of a sweep group: a few MiB keeps the
#: group's temporaries in the cache.
_SWEEP_VALUES = 2**18


class GaussianNBScorer(FastScorer):
    """GaussianNB's resubstitution predictions from per-class, per-column statistics.

    Changing column j recomputes only the class means and variances of column j and its n×classes
    block of squared standardised deviations; the joint log-likelihood is a fresh sum over the
    stored blocks (no running sums, so no drift). scikit-learn's variance floor
    ``epsilon = var_smoothing · max_j var(S[:, j])`` couples all columns; a column is rescored only
    when epsilon moved by more than a relative 1e-12 since, far below the near-tie margin.
    A coordinate sweep's candidates for column j share the sum of the other columns' blocks and
    are scored together (:meth:`score_sweep`), a few arrays of candidates × classes × n at a time.
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
        self._largest_group = 1  # candidates of the largest sweep group so far

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

    def _candidate_bytes(self) -> int:
        """Bytes one more candidate of a sweep group holds: its column, its deviations and the
        arrays of the tie test, each classes × n."""
        n, n_classes = len(self.y), len(self.classes)
        return (n + 8 * n_classes * n) * 8

    def peak_bytes(self, n_features: int) -> int:
        return self.footprint(n_features) + (self._largest_group - 1) * self._candidate_bytes()

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
        epsilon = self._epsilon(np.max(self.column_var))
        self._refresh(epsilon)
        if not np.all(self.raw_var + self.epsilon_used[:, None] > 0):
            return None  # scikit-learn divides by a zero variance here
        squared = np.sum(self.deviations, axis=0)
        return _winners(self.log_prior, self.log_det, squared)

    def _epsilon(self, largest_var: Any) -> Any:
        """scikit-learn's variance floor for the largest column variance (array-wise too)."""
        return self.var_smoothing * largest_var

    def _refresh(self, epsilon: float, skip: int = -1) -> None:
        """Rescore each column but ``skip`` whose block is stale or was scored with an epsilon
        that drifted from ``epsilon``."""
        drift = np.abs(self.epsilon_used - epsilon) > EPSILON_DRIFT * epsilon
        for j in np.flatnonzero(np.isnan(self.epsilon_used) | drift):
            if j != skip:
                self._score_column(j, epsilon)

    def score_sweep(self, j: int, columns: Sequence[np.ndarray]) -> list[float | None]:
        """The scores of S with column j replaced by each of ``columns``, the other columns'
        blocks summed once. A candidate whose variance floor moves the other columns' beyond
        :data:`EPSILON_DRIFT` is scored alone, as :meth:`score` would."""
        if self.S is None:
            raise RuntimeError("call reset(S) before score_sweep")
        if not len(columns):
            return []
        columns = np.asarray(columns, dtype=np.float64).reshape(len(columns), -1)
        p = self.S.shape[1]
        others = np.delete(self.column_var, j)
        largest_other = float(np.max(others)) if len(others) else -np.inf
        self._refresh(self._epsilon(np.max(self.column_var)), skip=j)
        rest_used = np.delete(self.epsilon_used, j)
        if not np.all(np.delete(self.raw_var, j, axis=0) + rest_used[:, None] > 0):
            return [None] * len(columns)  # another column has a zero variance: as score()
        # The other columns' blocks and log-determinants, summed once (views: no copy of the slab).
        rest_squared = np.sum(self.deviations[:j], axis=0) + np.sum(
            self.deviations[j + 1 :], axis=0
        )
        rest_log_det = np.delete(self.log_det, j, axis=0)
        n, n_classes = len(self.y), len(self.classes)
        spare = None if self.memory_limit is None else self.memory_limit - self.footprint(p)
        group = _sweep_group(len(columns), n_classes * n, spare, self._candidate_bytes())
        self._largest_group = max(self._largest_group, group)
        scores: list[float | None] = []
        alone: list[int] = []
        for first in range(0, len(columns), group):
            block = columns[first : first + group]
            column_var, theta, raw_var = self._candidate_statistics(block)
            epsilon = self._epsilon(np.maximum(column_var, largest_other))
            if p > 1:
                moved = (
                    np.abs(rest_used[None, :] - epsilon[:, None])
                    > EPSILON_DRIFT * epsilon[:, None]
                )
                alone += [first + c for c in np.flatnonzero(np.any(moved, axis=1))]
            var = raw_var + epsilon[:, None]  # candidates × classes
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                deviations = (block[:, None, :] - theta[:, :, None]) ** 2 / var[:, :, None]
                log_det = np.log(2.0 * np.pi * var)
            best = _sweep_winners(
                self.log_prior,
                np.sum(rest_log_det, axis=0)[None, :] + log_det,
                np.sum(np.abs(rest_log_det), axis=0)[None, :] + np.abs(log_det),
                rest_squared[None, :, :] + deviations,
            )
            for c, codes in enumerate(best):
                positive = np.all(var[c] > 0)  # scikit-learn divides by a zero variance
                scores.append(self._score_codes(codes) if positive and codes is not None else None)
        if alone:
            for c, score in zip(
                alone, FastScorer.score_sweep(self, j, [columns[c] for c in alone])
            ):
                scores[c] = score
        return scores

    def _candidate_statistics(
        self, block: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each candidate column's variance, and its class means and variances (candidates ×
        classes), by NumPy's arithmetic along each row (:func:`mean_var_rows`)."""
        column_var = mean_var_rows(block)[1]
        theta = np.empty((len(block), len(self.members)))
        raw_var = np.empty_like(theta)
        for c, members in enumerate(self.members):
            theta[:, c], raw_var[:, c] = mean_var_rows(block[:, members])
        return column_var, theta, raw_var

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
    return _sweep_winners(
        log_prior,
        np.sum(log_det, axis=0)[None, :],
        np.sum(np.abs(log_det), axis=0)[None, :],
        squared[None, :, :],
    )[0]


def _sweep_winners(
    log_prior: np.ndarray, log_det: np.ndarray, abs_log_det: np.ndarray, squared: np.ndarray
) -> list[np.ndarray | None]:
    """:func:`_winners` of several candidates at once: ``log_det`` and ``abs_log_det`` are
    candidates × classes sums over the columns of log(2π σ²) and of its magnitude, ``squared``
    candidates × classes × rows. None for a candidate with a row's lead within rounding."""
    joint = log_prior[None, :, None] - 0.5 * log_det[:, :, None] - 0.5 * squared
    magnitude = np.abs(log_prior)[None, :, None] + 0.5 * abs_log_det[:, :, None] + 0.5 * squared
    # Each class's log-likelihood carries a rounding error relative to its own magnitude: compare
    # the winner with every other class against both magnitudes (a class with a near-zero
    # variance has a huge one but loses by far more).
    best = np.argmax(joint, axis=1)  # candidates × rows
    winner = (np.arange(len(joint))[:, None], best, np.arange(joint.shape[2])[None, :])
    lead = joint[winner][:, None, :] - joint
    allowed = RELATIVE_TIE * (magnitude[winner][:, None, :] + magnitude)
    lead[winner] = np.inf
    decided = np.all(np.isfinite(joint), axis=(1, 2)) & ~np.any(lead <= allowed, axis=(1, 2))
    return [codes if ok else None for codes, ok in zip(best, decided)]


def _sweep_group(candidates: int, size: int, spare: int | None, per_candidate: int) -> int:
    """Candidates of a sweep scored together: all, unless their arrays of ``size`` values would
    outgrow the cache's few megabytes or the ``spare`` bytes of the memory limit."""
    group = max(1, min(candidates, _SWEEP_VALUES // max(1, size)))
    if spare is not None:
        group = max(1, min(group, 1 + max(0, spare) // per_candidate))
    return group


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
