"""LogisticRegression's fast scorer: scikit-learn's own lbfgs fit, retraced in compiled code.

scikit-learn's default solver runs SciPy's L-BFGS-B from zeros; on a few hundred rows most of a
fit's time is Python around two dozen iterations. :func:`optuna_boxcox._math._lbfgs.lbfgs_fit`
takes the same steps without it, twice in two roundings (13× faster per evaluation than the
paper's plain loop on sonar's first 20 features), and reaches the same coefficients to rounding,
so the predictions are scikit-learn's, as the other scorers' are. A row whose decision value is
within :data:`_SPREAD_SAFETY` times what the two roundings' spread moves it, or a run whose
stopping test was within rounding of its threshold (or that ended any other way than on the
gradient), is left to scikit-learn (None). An earlier version answered the penalised
optimum instead, warm-started by Newton steps: 16× faster than the plain loop, but scikit-learn
stops short of that optimum, about one score in ten differed by a row, and on sonar the search
followed those rows to a best score 2.7 points lower (docs/performance_log.md).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from optuna_boxcox._math._lbfgs import fit_kernel
from optuna_boxcox._math._lbfgs import lbfgs_fit
from optuna_boxcox._objective._evaluators._base import RELATIVE_TIE
from optuna_boxcox._objective._evaluators._base import RefitScorer
from optuna_boxcox._objective._evaluators._base import is_real
from optuna_boxcox._objective._evaluators._base import valid_parameters

#: How many times the spread between two roundings of the fit a decision must clear: SciPy's own
#: rounding is a third (measured spreads: docs/performance_log.md).
_SPREAD_SAFETY = 100.0
#: The solver retraced (the default); the newton solvers stop elsewhere and go to scikit-learn.
_SOLVERS = ("lbfgs",)


def logistic_settings(estimator: Any) -> dict[str, Any] | None:
    """C, tol, max_iter and fit_intercept of a LogisticRegression whose fit this scorer retraces,
    or None (an L1 or elastic-net penalty, no penalty, class weights, a one-vs-rest fit, another
    solver, ``tol=0``)."""
    params = estimator.get_params(deep=False)
    penalty = params.get("penalty", "l2")
    l1_ratio = params.get("l1_ratio")
    C = params["C"]
    tol = params["tol"]
    max_iter = params["max_iter"]
    supported = (
        penalty in ("l2", "deprecated")
        and (l1_ratio is None or (is_real(l1_ratio) and l1_ratio == 0))
        and params.get("multi_class", "auto") in ("auto", "multinomial", "deprecated")
        and params["solver"] in _SOLVERS
        and params["class_weight"] is None
        and params["dual"] is False
        and params["fit_intercept"] in (True, False)
        and is_real(C)
        and C > 0
        and is_real(tol)
        and tol > 0
        and isinstance(max_iter, numbers.Integral)
        and max_iter >= 1
    )
    if not supported or not math.isfinite(C):
        return None
    return {
        "C": float(C),
        "tol": float(tol),
        "max_iter": int(max_iter),
        "fit_intercept": bool(params["fit_intercept"]),
    }


class LogisticScorer(RefitScorer):
    """The resubstitution predictions of an L2-penalised ``LogisticRegression(solver="lbfgs")``,
    binary or multinomial, from scikit-learn's own L-BFGS-B steps retraced
    (:mod:`optuna_boxcox._math._lbfgs`); None where rounding could change a prediction (see the
    module's docstring). Each score is a fit from zeros, as scikit-learn's is: nothing carries from
    one matrix to the next, so candidates score side by side in threads. Memory: the n × (p+1)
    design matrix and n × K temporaries (K: 1 for two classes, the classes otherwise).
    """

    name = "logistic"
    classifier = LogisticRegression

    @staticmethod
    def settings_of(estimator: LogisticRegression, y: np.ndarray) -> dict[str, Any] | None:
        return logistic_settings(estimator)

    def footprint(self, n_features: int) -> int:
        n, K = len(self.y), len(self.classes)
        coefficients = (n_features + 1) * K
        temporaries = (n * K + 8 * 10 * coefficients) * 8  # raw scores; s, y and work vectors
        return super().footprint(n_features) + temporaries

    kernels = staticmethod(fit_kernel)

    def warm_up(self) -> None:
        lbfgs_fit(np.zeros((2, 1)), np.array([0, 1]), 2, 1.0, True, 1e-4, 10)

    def _predict_codes(self) -> np.ndarray | None:
        if self.kept is not None:
            return None  # set_kept refuses; kept stays None
        fitted = _fit(self.S, self.codes, len(self.classes), self.settings)
        return None if fitted is None else _predict(self.S, fitted, self.settings["fit_intercept"])


def logistic_predictions(
    estimator: Any, X: np.ndarray, y: np.ndarray, X_test: np.ndarray
) -> np.ndarray | None:
    """``clone(estimator).fit(X, y).predict(X_test)`` for a LogisticRegression the scorer covers,
    by the retraced lbfgs fit; None for any other estimator, or where rounding could change a
    prediction (then scikit-learn answers). The gate's 5 × 2 folds per candidate cost more in
    scikit-learn's fits than the whole search did."""
    if type(estimator) is not LogisticRegression or not valid_parameters(estimator):
        return None
    settings = logistic_settings(estimator)
    if settings is None or not (np.all(np.isfinite(X)) and np.all(np.isfinite(X_test))):
        return None
    classes, codes = np.unique(y, return_inverse=True)
    if len(classes) < 2:
        return None  # scikit-learn's error
    X = np.asarray(X, dtype=np.float64)
    fitted = _fit(X, codes, len(classes), settings)
    if fitted is None:
        return None
    predicted = _predict(np.asarray(X_test, dtype=np.float64), fitted, settings["fit_intercept"])
    return None if predicted is None else classes[predicted]


def _fit(
    S: np.ndarray, codes: np.ndarray, n_classes: int, settings: dict
) -> tuple[np.ndarray, np.ndarray] | None:
    """The retraced fit's coefficients and their spread between two roundings, or None."""
    w, spread = lbfgs_fit(
        S,
        codes,
        n_classes,
        settings["C"],
        settings["fit_intercept"],
        settings["tol"],
        settings["max_iter"],
    )
    return None if spread is None else (w, spread)


def _predict(
    S: np.ndarray, fitted: tuple[np.ndarray, np.ndarray], fit_intercept: bool
) -> np.ndarray | None:
    """Class indices from the coefficients (K × d), or None where a decision is within its
    margin: :data:`_SPREAD_SAFETY` times what the two roundings' spread moves it, plus rounding."""
    w, spread = fitted
    p = S.shape[1]
    coef = w[:, :p]
    intercept = w[:, -1] if fit_intercept else np.zeros(len(w))
    size = np.abs(S)
    wobble = size @ spread[:, :p].T + (spread[:, -1] if fit_intercept else 0.0)
    margin = RELATIVE_TIE * (size @ np.abs(coef.T) + np.abs(intercept))
    margin = margin + _SPREAD_SAFETY * wobble
    decision = S @ coef.T + intercept
    if len(w) == 1:
        if not np.all(np.abs(decision[:, 0]) > margin[:, 0]):
            return None
        return (decision[:, 0] > 0).astype(np.intp)
    best = np.argmax(decision, axis=1)
    rows = np.arange(len(best))
    lead = decision[rows, best][:, None] - decision
    allowed = margin[rows, best][:, None] + margin
    lead[rows, best] = np.inf
    if np.any(lead <= allowed):
        return None
    return best
