"""LogisticRegression's fast scorer: the L2 optimum by warm-started Newton steps.

Not exact as the other scorers are, and why that is accepted: scikit-learn's lbfgs stops once the
gradient of its objective is at most ``tol`` (1e-4), short of the optimum, and from zeros, so where
it stops depends on its solver, its tolerance and its path — not on the data alone. Its decision
values differ from the optimum's by up to ``tol · C · n · ‖H⁻¹ x̃‖₁`` to first order
(:func:`optuna_boxcox._math._logistic.decision_radius`): on sonar's first 20 features ~0.01 measured
against a bound of ~0.035, which two to five of the 208 rows fall within on every Λ. Answering None
there (the other scorers' rule) would send ~97 % of the scores to scikit-learn's fit. This scorer
answers the optimum's predictions instead: the model LogisticRegression defines, the one
scikit-learn's fit converges to as ``tol`` shrinks (the tests compare with newton-cholesky at ``tol=1e-12``), and the
same answer for the same matrix whatever the search's path. With the default tolerance ~1 score in
10 differs from scikit-learn's by one row (docs/performance.md). A row within rounding of the
optimum's own boundary is still a near-tie (None: scikit-learn decides).
"""

from __future__ import annotations

from collections.abc import Callable
import math
import numbers
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from optuna_boxcox._math._logistic import LogisticFit
from optuna_boxcox._math._logistic import design
from optuna_boxcox._objective._evaluators._base import _RELATIVE_TIE
from optuna_boxcox._objective._evaluators._base import FastScorer
from optuna_boxcox._objective._evaluators._base import _is_real

if TYPE_CHECKING:
    from collections.abc import Sequence

#: The solvers that minimise the objective of :mod:`optuna_boxcox._math._logistic` and stop on its
#: gradient (liblinear penalises the intercept; sag and saga stop on the change of the weights).
_SOLVERS = ("lbfgs", "newton-cg", "newton-cholesky")
#: Fewer iterations than scikit-learn's default may stop its solver short of its tolerance.
_MIN_MAX_ITER = 100
#: Coefficients (features + intercept, times the classes beyond two) above which the Newton steps'
#: n·d² Hessians cost more than scikit-learn's whole lbfgs fit (~n·d per iteration); the generic
#: path is used above it (measured in docs/performance.md).
_MAX_COEFFICIENTS = 256


def logistic_settings(estimator: Any) -> dict[str, Any] | None:
    """C, tol and fit_intercept of a LogisticRegression whose fit this scorer reproduces, or None
    (an L1 or elastic-net penalty, no penalty, class weights, a one-vs-rest fit, another solver)."""
    params = estimator.get_params(deep=False)
    penalty = params.get("penalty", "l2")
    l1_ratio = params.get("l1_ratio")
    C = params["C"]
    tol = params["tol"]
    max_iter = params["max_iter"]
    supported = (
        penalty in ("l2", "deprecated")
        and (l1_ratio is None or (_is_real(l1_ratio) and l1_ratio == 0))
        and params.get("multi_class", "auto") in ("auto", "multinomial", "deprecated")
        and params["solver"] in _SOLVERS
        and params["class_weight"] is None
        and params["dual"] is False
        and params["fit_intercept"] in (True, False)
        and _is_real(C)
        and C > 0
        and _is_real(tol)
        and tol >= 0
        and isinstance(max_iter, numbers.Integral)
        and max_iter >= _MIN_MAX_ITER
    )
    if not supported or not math.isfinite(C):
        return None
    return {"C": float(C), "tol": float(tol), "fit_intercept": bool(params["fit_intercept"])}


class LogisticScorer(FastScorer):
    """The resubstitution predictions of an L2-penalised ``LogisticRegression`` (lbfgs, newton-cg or
    newton-cholesky; binary or multinomial), from the objective's unique optimum.

    Each score takes Newton steps from the previous optimum (a coordinate search changes one column:
    about four steps) down to rounding (:mod:`optuna_boxcox._math._logistic`). scikit-learn stops
    its solver at a gradient of at most ``tol``, not at the optimum, so its decision values differ
    from the optimum's by up to a first-order bound per row (``tol · C · n · ‖H⁻¹ x̃‖₁``); a row
    whose decision value (for more classes: the winner's lead over any other class) is
    within that bound may be predicted otherwise by scikit-learn (see the module's docstring); a row
    within rounding of the optimum's boundary is a near-tie and the score is None. This assumes scikit-learn's solver converged (it warns when it does not; max_iter below
    scikit-learn's default is declined). Memory: the n × (p+1) design matrix, two (K·(p+1))² Hessians
    and their inverse, and n × K × (p+1) temporaries (K: 1 for two classes, the classes otherwise).
    """

    name = "logistic"
    classifier = LogisticRegression
    shares_sweeps = True
    exact = False

    def __init__(
        self,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
        settings: dict[str, Any],
    ) -> None:
        super().__init__(y, metric)
        self.settings = settings
        self.theta: np.ndarray | None = None  # the optimum of the last matrix solved (warm start)

    @classmethod
    def from_estimator(
        cls,
        estimator: LogisticRegression,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
    ) -> LogisticScorer | None:
        settings = logistic_settings(estimator)
        if settings is None:
            return None
        return cls(y, metric, settings)

    def _adopt(self, other: FastScorer) -> bool:
        if other.settings["fit_intercept"] != self.settings["fit_intercept"]:
            self.theta = None
        self.settings = other.settings
        return True

    def _width(self, n_features: int) -> int:
        return n_features + int(self.settings["fit_intercept"])

    def _coefficients(self, n_features: int) -> int:
        K = len(self.classes)
        return self._width(n_features) * (1 if K == 2 else K)

    def footprint(self, n_features: int) -> int:
        n, K = len(self.y), len(self.classes)
        width = self._width(n_features)
        size = self._coefficients(n_features)
        design_bytes = 2 * n * width * 8  # X̃ and |X̃| for the rounding bound
        hessians = 4 * size * size * 8  # H, its factor, the inverse and an identity
        temporaries = (4 * n * K * width + 256 * K * size + 8 * n * K) * 8
        return super().footprint(n_features) + design_bytes + hessians + temporaries

    def _reset(self) -> None:
        self.theta = None

    def _set_column(self, j: int, column: np.ndarray) -> None:
        pass  # the next score solves again from the current optimum

    def score_sweep(self, j: int, columns: Sequence[np.ndarray]) -> list[float | None]:
        # Each candidate starts from the previous one's optimum (neighbouring λ, neighbouring
        # optima); the current matrix's optimum and score are kept for after the sweep.
        theta, score = self.theta, self._score
        scores = super().score_sweep(j, columns)
        self.theta, self._score = theta, score
        return scores

    def _predict_codes(self) -> np.ndarray | None:
        S = self.S
        if self._coefficients(S.shape[1]) > _MAX_COEFFICIENTS:
            return None
        if self.kept is not None:
            return None  # set_kept refuses; kept stays None
        X = design(S, self.settings["fit_intercept"])
        K = len(self.classes)
        fit = LogisticFit(self.codes, K, self.settings["C"], self.settings["fit_intercept"])
        theta0 = self.theta
        if theta0 is not None and theta0.shape != fit.shape(X.shape[1]):
            theta0 = None
        solved = fit.solve(X, theta0)
        if solved is None:
            self.theta = None
            return None
        theta, _ = solved
        self.theta = theta
        # Within rounding of a tie the optimum's own prediction is ambiguous: scikit-learn decides.
        magnitude = np.abs(X) @ np.abs(theta.T)
        if K == 2:
            decision = X @ theta
            if not np.all(np.abs(decision) > _RELATIVE_TIE * magnitude):
                return None
            return (decision > 0).astype(np.intp)
        scores = X @ theta.T
        best = np.argmax(scores, axis=1)
        rows = np.arange(len(best))
        lead = scores[rows, best][:, None] - scores
        allowed = _RELATIVE_TIE * (magnitude[rows, best][:, None] + magnitude)
        lead[rows, best] = np.inf
        if np.any(lead <= allowed):
            return None
        return best
