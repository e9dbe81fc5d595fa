"""The guarded default: a searched Λ is kept only if it beats the anchors on rows a fit never saw.

The paper's criterion, resubstitution accuracy, flatters classifiers that can memorise their
training rows (k-NN counts each row among its own neighbours, an RBF SVC fits its training rows),
and choosing among thousands of candidates by a noisy score overfits the choice (Cawley & Talbot
2010). So after the search, three Λ compete on repeated stratified cross-validation of the
training rows (every fold fits the transform and the classifier on the other folds, as ``fit``
does, and predicts rows it never saw):

- ``searched``: the Λ the search chose;
- ``mle``: the per-feature maximum-likelihood Λ, the search's start point;
- ``ones``: Λ = 1, which after the [1, 2] scaling is exactly standard scaling.

Which classifiers are gated: every one but the linear ones (scikit-learn's ``linear_model``, e.g.
the paper's perceptron, and ``LinearSVC``). A linear boundary cannot memorise rows: its training
accuracy is close to its held-out accuracy, so the paper's criterion is not flattered, and the
perceptron's cross-validated accuracy swings from fold to fold (one pass of stochastic updates), so
a gate on it decides by noise. Measured (``optuna_boxcox.bench.guard``), the gate made the
perceptron worse and the search alone ranked first; for those classifiers the searched Λ is kept
ungated, and the decision says so.

The better anchor is the one of ``mle`` and ``ones`` with the higher cross-validated score (``mle``
on a tie: it is where the search started). The searched Λ is kept only if its score beats that
anchor's by more than the noise of the criterion: ``margin`` standard errors of the paired
per-fold differences, corrected for the overlap of the training folds (Nadeau & Bengio 2003:
variance × (1/k + n_test/n_train) over k folds). Else the anchor is used. The margin is a
statistical rule, not a number tuned to data: with it, a search that found nothing the
cross-validation can tell apart from the anchor gives the anchor, the Λ a user could have had
from a fixed one-line transform.

:func:`decide` returns a :class:`Decision`; :meth:`Decision.record` writes it into the study's user
attributes (:data:`DECISION_ATTR`), which ``search`` prints and the dashboard shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
import warnings

import numpy as np

#: The name of the guarded default wherever a sampler is named (``BoxCoxClassifier(sampler=…)``,
#: ``search --sampler``): the paper's coordinate search, then the gate.
GUARDED = "guarded"
#: The paper's search the guarded default runs before its gate.
SEARCH_SAMPLER = "coordinate"
#: Study user attribute holding the decision.
DECISION_ATTR = "boxcox_decision"
#: Inner folds × repeats of the gate's cross-validation.
SPLITS = 5
REPEATS = 2
#: How many corrected standard errors the searched Λ must beat the better anchor by.
MARGIN = 1.0
#: The candidates, in the order a tie goes (first wins among equal anchors).
CANDIDATES = ("searched", "mle", "ones")


@dataclass(frozen=True)
class Decision:
    """What the gate chose and the scores that decided it.

    ``chosen`` is ``"searched"``, ``"mle"`` or ``"ones"``; ``scores`` the mean cross-validated
    score of each candidate; ``anchor`` the better anchor; ``difference`` the searched Λ's score
    minus the anchor's, ``threshold`` what it had to exceed (``margin`` corrected standard errors).
    """

    chosen: str
    lambdas: np.ndarray
    scores: dict[str, float]
    anchor: str
    difference: float
    threshold: float
    folds: int
    gated: bool = True
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        if not self.gated:
            return {
                "chosen": self.chosen,
                "lambdas": [float(v) for v in self.lambdas],
                "gated": False,
                "rule": f"not gated: {self.reason}; the searched Λ is kept",
            }
        return {
            "chosen": self.chosen,
            "gated": True,
            "lambdas": [float(v) for v in self.lambdas],
            "scores": {k: float(v) for k, v in self.scores.items()},
            "anchor": self.anchor,
            "difference": float(self.difference),
            "threshold": float(self.threshold),
            "folds": self.folds,
            "rule": (
                f"searched kept if its {SPLITS}-fold x{REPEATS} CV score beats the better anchor "
                f"(mle or ones) by more than {MARGIN:g} corrected standard error"
            ),
        }

    def record(self, study: Any) -> None:
        """Write the decision into the study's user attributes."""
        study.set_user_attr(DECISION_ATTR, self.to_dict())

    def describe(self) -> str:
        """One line for ``search``'s report."""
        if not self.gated:
            return f"searched Λ kept, not gated ({self.reason})"
        scores = ", ".join(f"{k} {v:.4f}" for k, v in self.scores.items())
        verdict = "searched Λ kept" if self.chosen == "searched" else f"anchor {self.chosen} used"
        return (
            f"{verdict}: cross-validated {scores}; searched − {self.anchor} = "
            f"{self.difference:+.4f}, needed > {self.threshold:.4f}"
        )


def fold_scores(
    estimator: Any,
    lambdas: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    metric: Any,
    *,
    seed: int,
    method: str = "box-cox",
    extrapolation: str = "extrapolate",
) -> np.ndarray:
    """The metric of each fold of repeated stratified CV, transform and classifier fitted on the
    other folds."""
    from sklearn.base import clone
    from sklearn.model_selection import RepeatedStratifiedKFold

    from optuna_boxcox._math._numerics import ExtremeValueWarning
    from optuna_boxcox._math._transform import BoxCoxTransformer

    splitter = RepeatedStratifiedKFold(n_splits=_splits(y), n_repeats=REPEATS, random_state=seed)
    scores = []
    for train, test in splitter.split(X, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtremeValueWarning)
            transform = BoxCoxTransformer(
                lambdas=lambdas, method=method, extrapolation=extrapolation
            ).fit(X[train])
            model = clone(estimator).fit(transform.transform(X[train]), y[train])
            scores.append(metric(y[test], model.predict(transform.transform(X[test]))))
    return np.asarray(scores, dtype=float)


def _splits(y: np.ndarray) -> int:
    """SPLITS, or fewer when the smallest class has fewer rows (at least 2)."""
    _, counts = np.unique(y, return_counts=True)
    return int(max(2, min(SPLITS, counts.min())))


def decide(
    estimator: Any,
    X: np.ndarray,
    y: np.ndarray,
    candidates: dict[str, np.ndarray],
    metric: Any,
    *,
    seed: int = 0,
    method: str = "box-cox",
    extrapolation: str = "extrapolate",
    margin: float = MARGIN,
) -> Decision:
    """Choose among ``candidates`` (``searched``, ``mle``, ``ones`` → Λ) by the module's rule."""
    scores = {
        name: fold_scores(
            estimator,
            np.asarray(candidates[name], dtype=float),
            X,
            y,
            metric,
            seed=seed,
            method=method,
            extrapolation=extrapolation,
        )
        for name in CANDIDATES
    }
    means = {name: float(values.mean()) for name, values in scores.items()}
    anchor = "ones" if means["ones"] > means["mle"] else "mle"
    d = scores["searched"] - scores[anchor]
    k = len(d)
    n_test = len(y) / _splits(y)
    # Nadeau & Bengio's corrected variance of a mean over overlapping CV folds.
    variance = (1.0 / k + n_test / (len(y) - n_test)) * float(np.var(d, ddof=1))
    threshold = margin * float(np.sqrt(variance))
    difference = float(d.mean())
    chosen = "searched" if difference > threshold else anchor
    return Decision(
        chosen=chosen,
        lambdas=np.asarray(candidates[chosen], dtype=float),
        scores=means,
        anchor=anchor,
        difference=difference,
        threshold=threshold,
        folds=k,
    )


def applies(objective: Any) -> bool:
    """Whether the gate can judge this search: one score, λ only (no transform choices or
    classifier settings searched with it; the anchors are Λ vectors only)."""
    return (
        len(objective.directions) == 1
        and set(objective.transforms) == {objective.method}
        and not objective.estimator_params
    )


def metric_of(scoring: Any) -> Any:
    """The metric the gate scores folds with: the search's own, accuracy for a classifier-free
    criterion."""
    from sklearn.metrics import accuracy_score

    from optuna_boxcox._objective._objective import METRICS

    if callable(scoring):
        return scoring
    return METRICS.get(scoring, accuracy_score)


def search_sampler(name: str) -> str:
    """The registry sampler that searches for ``name``: the paper's coordinate search for the
    guarded default, ``name`` itself otherwise."""
    return SEARCH_SAMPLER if name == GUARDED else name


def gated(estimator: Any) -> bool:
    """Whether the gate judges searches for this classifier: all but the linear ones."""
    from sklearn.svm import LinearSVC

    if isinstance(estimator, LinearSVC):
        return False
    return not type(estimator).__module__.startswith("sklearn.linear_model")


def guard(
    objective: Any,
    estimator: Any,
    X: np.ndarray,
    y: np.ndarray,
    params: dict[str, Any],
    *,
    seed: int = 0,
    extrapolation: str = "extrapolate",
) -> Decision:
    """The gate after a search of ``objective`` chose ``params``: searched Λ, MLE, Λ = 1."""
    searched = objective.to_lambdas(params)
    reason = ""
    if not gated(estimator):
        reason = "a linear classifier's training accuracy is not flattered"
    elif np.unique(y, return_counts=True)[1].min() < 2:
        reason = "a class has a single row: no stratified folds to judge on"
    if reason:
        nan = float("nan")
        return Decision("searched", searched, {}, "", nan, nan, 0, gated=False, reason=reason)
    candidates = {
        "searched": searched,
        "mle": np.asarray(objective.mle_lambdas, dtype=float),
        "ones": np.ones(len(objective.param_names)),
    }
    return decide(
        estimator,
        np.asarray(X, dtype=float),
        np.asarray(y),
        candidates,
        metric_of(objective.scoring),
        seed=seed,
        method=objective.method,
        extrapolation=extrapolation,
    )
