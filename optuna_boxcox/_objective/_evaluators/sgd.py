"""The binary perceptron/hinge SGDClassifier's fast scorer."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from sklearn.linear_model import SGDClassifier

from optuna_boxcox._math._sgd import fit_sgd_binary
from optuna_boxcox._math._sgd import sgd_kernel
from optuna_boxcox._math._sgd import sgd_settings
from optuna_boxcox._objective._evaluators._base import RELATIVE_TIE
from optuna_boxcox._objective._evaluators._base import RefitScorer


class SGDScorer(RefitScorer):
    """A binary ``SGDClassifier`` (perceptron or hinge loss) refitted on S with scikit-learn's own
    arithmetic (:mod:`optuna_boxcox._math._sgd`); predictions from the sign of S·w + b, ``None`` when a
    decision value is within rounding of zero (scikit-learn's matrix product may round it the
    other way) or when scikit-learn would raise on non-finite weights. Memory: O(n·p)."""

    name = "sgd"
    classifier = SGDClassifier

    @functools.cached_property
    def signs(self) -> np.ndarray:
        """fit_binary's ±1 labels: classes_[1] is +1 (once per scorer, from the class codes)."""
        return np.where(self.codes == 1, 1.0, -1.0)

    kernels = staticmethod(sgd_kernel)

    @staticmethod
    def settings_of(estimator: SGDClassifier, y: np.ndarray) -> dict[str, Any] | None:
        return sgd_settings(estimator) if len(np.unique(y)) == 2 else None

    def footprint(self, n_features: int) -> int:
        # |S| for the rounding bound of the decision values (:attr:`magnitudes`).
        return super().footprint(n_features) + len(self.y) * n_features * 8

    def _reset(self) -> None:
        self.magnitudes = np.abs(self.S)  # |S|, kept column by column

    def _set_column(self, j: int, column: np.ndarray) -> None:
        self.magnitudes[:, j] = np.abs(column)

    def _predict_codes(self) -> np.ndarray | None:
        fitted = fit_sgd_binary(self.S, self.signs, self.settings)
        if fitted is None:
            return None
        w, intercept, _ = fitted
        decision = self.S @ w + intercept
        allowed = RELATIVE_TIE * (self.magnitudes @ np.abs(w) + abs(intercept))
        if not (np.abs(decision) > allowed).all():
            return None
        return (decision > 0).astype(np.intp)
