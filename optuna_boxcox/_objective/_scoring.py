"""How a feature matrix is scored: a metric of a classifier's predictions, by resubstitution or
inner folds, or a classifier-free criterion of the transformed data."""

from __future__ import annotations

from collections.abc import Callable
import math
from typing import Any
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import FitFailedWarning
from sklearn.metrics import accuracy_score
from sklearn.metrics import balanced_accuracy_score
from sklearn.metrics import f1_score
from sklearn.metrics import matthews_corrcoef
from sklearn.model_selection import StratifiedKFold

from optuna_boxcox._math import _criteria
from optuna_boxcox._system import _stop


def _f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    average = "binary" if len(np.unique(y_true)) <= 2 else "macro"
    pos_label = np.unique(y_true)[-1]
    if average == "binary":
        return f1_score(y_true, y_pred, pos_label=pos_label, zero_division=0.0)
    return f1_score(y_true, y_pred, average=average, zero_division=0.0)


#: Metrics of predictions, by name. Binary F1 counts the larger label as positive.
METRICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "accuracy": accuracy_score,
    "balanced_accuracy": balanced_accuracy_score,
    "f1": _f1,
    "mcc": matthews_corrcoef,
}
#: Classifier-free criteria of Bicego & Baldo (seed 001), computed on the transformed data.
CRITERIA = ("ml", "pcml", "fisher", "1nn-mm")


def score_predictions(metric: Any, y_true: Any, y_pred: Any) -> float:
    """``metric(y_true, y_pred)``; accuracy as the exact share of hits, the same float as
    scikit-learn's ``accuracy_score`` (a count of 0/1 hits over n, rounded once) without its
    ~1.5 ms of target checks a call, which cost more than a small classifier's fit."""
    if metric is accuracy_score:
        y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
        if y_true.ndim == 1 and y_pred.shape == y_true.shape and y_true.dtype == y_pred.dtype:
            return np.count_nonzero(y_true == y_pred) / len(y_true)
    return float(metric(y_true, y_pred))


def check_scoring(scoring: Any) -> None:
    """A one-line error for a scoring that is neither known nor callable."""
    if not (callable(scoring) or scoring in METRICS or scoring in CRITERIA):
        raise ValueError(
            f"unknown scoring {scoring!r}; choose one of {sorted(METRICS) + list(CRITERIA)} "
            "or pass a callable metric(y_true, y_pred)"
        )


def check_error_score(error_score: Any) -> None:
    """A one-line error for an ``error_score`` that is neither ``"raise"`` nor a finite number."""
    if isinstance(error_score, str) and error_score == "raise":
        return
    number = isinstance(error_score, (int, float, np.integer, np.floating))
    if isinstance(error_score, bool) or not number or not math.isfinite(error_score):
        raise ValueError(
            f"error_score must be 'raise' or a finite number, got {error_score!r} (a NaN score "
            "fails the trial, and the coordinate search compares every score it records)"
        )


def is_criterion(scoring: Any) -> bool:
    return isinstance(scoring, str) and scoring in CRITERIA


def inner_splits(
    cv: Any, X: np.ndarray, y: np.ndarray, random_state: int | None
) -> list[tuple[np.ndarray, np.ndarray]] | None:
    """The inner folds of ``cv`` on the scored rows (None: resubstitution)."""
    if cv is None or cv == "resubstitution":
        return None
    if isinstance(cv, (int, np.integer)):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}")
        cv = StratifiedKFold(int(cv), shuffle=True, random_state=random_state)
    if not hasattr(cv, "split"):
        raise ValueError(f"cv must be None, an int or a scikit-learn splitter, got {cv!r}")
    return [(train, test) for train, test in cv.split(X, y)]


class Scoring:
    """The score of the scored rows' features: fit and predict (all rows, or per inner fold) and a
    metric, or a criterion of the transformed data.

    Args:
        scoring: A name of :data:`METRICS` or :data:`CRITERIA`, or ``metric(y_true, y_pred)``.
        y: The scored rows' labels.
        method: The power transform the criteria's likelihoods are of.
        splits: The inner folds, or None for resubstitution.
        error_score: What a fit that raises scores (each failed fold, with inner folds), with a
            :class:`~sklearn.exceptions.FitFailedWarning`; ``"raise"``: the error stops the
            search.
    """

    def __init__(
        self,
        scoring: Any,
        y: np.ndarray,
        method: str,
        splits: list[tuple[np.ndarray, np.ndarray]] | None,
        error_score: Any = "raise",
    ) -> None:
        check_scoring(scoring)
        check_error_score(error_score)
        self.scoring, self.y, self.method, self.splits = scoring, y, method, splits
        self.error_score = error_score
        self.is_criterion = is_criterion(scoring)
        #: metric(y_true, y_pred), or criterion(values, transformed, scaled, lambdas).
        self.function = self._criterion() if self.is_criterion else METRICS.get(scoring, scoring)

    def _criterion(self) -> Callable[..., float]:
        method, y, name = self.method, self.y, self.scoring
        if name == "ml":
            return lambda v, t, s, lam: _criteria.log_likelihood(v, t, lam, method)
        if name == "pcml":
            return lambda v, t, s, lam: _criteria.per_class_log_likelihood(v, t, lam, y, method)
        if name == "fisher":
            return lambda v, t, s, lam: _criteria.fisher_criterion(s, y)
        return lambda v, t, s, lam: _criteria.nn_margin(s, y)

    def criterion(
        self, values: np.ndarray, transformed: np.ndarray, scaled: np.ndarray, lambdas: np.ndarray
    ) -> float:
        return float(self.function(values, transformed, scaled, lambdas))

    def fit_score(self, features: np.ndarray, estimator: Any) -> float:
        """scikit-learn's fit and predict of ``estimator`` on the scored rows' features."""
        if self.splits is None:
            model = self._fit(estimator, features, self.y)
            if model is None:
                return float(self.error_score)
            return score_predictions(self.function, self.y, model.predict(features))
        scores = []
        for train, test in self.splits:
            model = self._fit(estimator, features[train], self.y[train])
            if model is None:
                scores.append(self.error_score)
                continue
            scores.append(
                score_predictions(self.function, self.y[test], model.predict(features[test]))
            )
        return float(np.mean(scores))

    def _fit(self, estimator: Any, X: np.ndarray, y: np.ndarray) -> Any:
        """A clone of ``estimator`` fitted on (X, y); None when the fit raised and
        :attr:`error_score` stands in for its score."""
        try:
            model = clone(estimator).fit(X, y)
        except Exception as error:
            if isinstance(self.error_score, str):
                raise
            warnings.warn(
                f"a fit failed and scores error_score={self.error_score}: "
                f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
                FitFailedWarning,
                stacklevel=2,
            )
            return None
        _stop.check()  # a Ctrl-C the fit swallowed (scikit-learn's MLP) still stops the search
        return model

    def majority_score(self) -> float:
        """The score of predicting the most frequent class (of the training rows of each fold):
        a point that drops every feature leaves the classifier nothing else."""
        if self.splits is None:
            return float(self.function(self.y, np.full(len(self.y), _majority(self.y))))
        return float(
            np.mean(
                [
                    self.function(self.y[test], np.full(len(test), _majority(self.y[train])))
                    for train, test in self.splits
                ]
            )
        )


def _majority(y: np.ndarray) -> Any:
    """The most frequent label (the smallest among equally frequent ones)."""
    labels, counts = np.unique(y, return_counts=True)
    return labels[int(np.argmax(counts))]
