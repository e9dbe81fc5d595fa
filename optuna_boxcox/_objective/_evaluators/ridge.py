"""RidgeClassifier's fast scorer: its closed form, with the Gram matrix updated one column at a time.

scikit-learn's ``RidgeClassifier`` codes the classes as ±1 targets (one column for two classes, one
per class beyond), centres the data and solves ``(XᵀX + αI) W = XᵀY`` by Cholesky (or its dual
``(XXᵀ + αI)`` form when the columns outnumber the rows). A coordinate search changes one column per
trial, so :class:`RidgeScorer` keeps the centred matrix, its Gram matrix and ``XᵀY``, updates one
row and column of each per changed column (n·p operations), and solves the p × p system. The
solution agrees with scikit-learn's to rounding; a row whose decision is within
:data:`_SAFETY` times a bound on both roundings of a tie is left to scikit-learn (None), as the other
scorers do.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import linalg
from sklearn.linear_model import RidgeClassifier

from optuna_boxcox._objective._evaluators._base import FastScorer
from optuna_boxcox._objective._evaluators._base import is_real

#: How many times the rounding bound of a decision value it must clear (the bound is already a
#: worst case; the factor covers the dual form's other summation order).
_SAFETY = 1e3
_EPS = float(np.finfo(np.float64).eps)


def ridge_settings(estimator: Any) -> dict[str, Any] | None:
    """alpha and fit_intercept of a RidgeClassifier solved in closed form (the default ``auto`` or
    ``cholesky`` solver on dense data, one positive alpha, no class weights, not ``positive``),
    else None."""
    params = estimator.get_params(deep=False)
    alpha = params["alpha"]
    supported = (
        is_real(alpha)
        and alpha > 0
        and params["solver"] in ("auto", "cholesky")
        and not params["positive"]
        and params["class_weight"] is None
        and params["fit_intercept"] in (True, False)
    )
    if not supported:
        return None
    return {"alpha": float(alpha), "fit_intercept": bool(params["fit_intercept"])}


class RidgeScorer(FastScorer):
    """The resubstitution predictions of ``RidgeClassifier`` from its closed form on S, with the
    centred matrix's Gram matrix updated one column at a time. Memory: the centred copy of S, the
    n × K targets and a p × p Gram matrix."""

    name = "ridge"
    classifier = RidgeClassifier

    def __init__(self, y: np.ndarray, metric: Any, settings: dict[str, Any]) -> None:
        super().__init__(y, metric)
        self.settings = settings
        # LabelBinarizer(pos_label=1, neg_label=-1): one column for two classes.
        K = len(self.classes)
        Y = -np.ones((len(self.y), K if K > 2 else 1))
        if K > 2:
            Y[np.arange(len(self.y)), self.codes] = 1.0
        else:
            Y[self.codes == 1, 0] = 1.0
        self.y_offset = Y.mean(axis=0) if settings["fit_intercept"] else np.zeros(Y.shape[1])
        self.Y = Y - self.y_offset
        self.C: np.ndarray | None = None  # S centred (as is, without an intercept)
        self.gram: np.ndarray | None = None
        self.XY: np.ndarray | None = None

    @classmethod
    def from_estimator(cls, estimator: Any, y: np.ndarray, metric: Any) -> RidgeScorer | None:
        settings = ridge_settings(estimator)
        return None if settings is None else cls(y, metric, settings)

    def _adopt(self, other: FastScorer) -> bool:
        if other.settings["fit_intercept"] != self.settings["fit_intercept"]:
            return False
        self.settings = other.settings  # alpha only enters the solve
        return True

    def footprint(self, n_features: int) -> int:
        n, K = len(self.y), max(1, len(self.classes) - (len(self.classes) == 2))
        return (
            super().footprint(n_features)
            + (n * n_features + 2 * n * K) * 8
            + (3 * n_features * (n_features + K)) * 8
        )

    def _centred(self, column: np.ndarray) -> np.ndarray:
        return column - column.mean() if self.settings["fit_intercept"] else column.copy()

    def _reset(self) -> None:
        S = self.S
        self.C = S - S.mean(axis=0) if self.settings["fit_intercept"] else S.copy()
        self.gram = self.C.T @ self.C
        self.XY = self.C.T @ self.Y

    def _set_column(self, j: int, column: np.ndarray) -> None:
        centred = self._centred(column)
        self.C[:, j] = centred
        row = self.C.T @ centred
        self.gram[j, :] = row
        self.gram[:, j] = row
        self.XY[j] = centred @ self.Y

    def _predict_codes(self) -> np.ndarray | None:
        if self.kept is not None:
            return None
        C, alpha = self.C, self.settings["alpha"]
        if not np.all(np.isfinite(self.gram)):
            return None
        A = self.gram.copy()
        A.flat[:: A.shape[0] + 1] += alpha
        try:
            W = linalg.solve(A, self.XY, assume_a="pos", check_finite=False)
        except (linalg.LinAlgError, ValueError):
            return None
        decision = C @ W + self.y_offset
        margin = _rounding_bound(C, self.Y, W, A, alpha, self.y_offset)
        if W.shape[1] == 1:
            if not np.all(np.abs(decision[:, 0]) > margin):
                return None
            return (decision[:, 0] > 0).astype(np.intp)
        best = np.argmax(decision, axis=1)
        rows = np.arange(len(best))
        lead = decision[rows, best][:, None] - decision
        lead[rows, best] = np.inf
        if np.any(lead <= 2 * margin[:, None]):
            return None
        return best


def _rounding_bound(
    C: np.ndarray, Y: np.ndarray, W: np.ndarray, A: np.ndarray, alpha: float, offset: np.ndarray
) -> np.ndarray:
    """Per row, a bound on how far two roundings of the closed form (ours, and scikit-learn's
    primal or dual Cholesky) may move a decision value. Forming CᵀC and CᵀY rounds each entry by
    at most n·ε times the products of the magnitudes, which moves the solution by at most that
    over the smallest eigenvalue of ``A`` = CᵀC + αI (at least α, as is the dual form's CCᵀ + αI);
    the Cholesky solve adds p·ε times the condition number."""
    n, p = C.shape
    low, high = linalg.eigvalsh(A, check_finite=False)[[0, -1]]
    low = max(float(low), alpha)
    norm_C, norm_W = np.sqrt(float(np.einsum("ij,ij->", C, C))), float(np.linalg.norm(W))
    formed = (n + p) * _EPS * norm_C * (np.linalg.norm(Y) + norm_C * norm_W) / low
    solved = (p + 2) * _EPS * (max(float(high), alpha) / low) * norm_W
    row_norms = np.sqrt(np.einsum("ij,ij->i", C, C))
    size = np.abs(C) @ np.abs(W).max(axis=1) + np.abs(offset).max()
    return _SAFETY * (row_norms * (formed + solved) + (p + 2) * _EPS * size)
