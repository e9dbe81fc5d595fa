"""The configurations a :class:`~optuna_boxcox.BoxCoxClassifier` predicts with: one fitted
configuration (its feature map and classifier), the ℓ best distinct ones of a study, and their vote
(the ensembles of kernel model selection, seed 004)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple
import warnings

import numpy as np
from optuna.trial import TrialState
from sklearn.base import clone
from sklearn.dummy import DummyClassifier
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._math._numerics import ConstantColumnWarning
from optuna_boxcox._math._numerics import ExtremeValueWarning
from optuna_boxcox._math._transform import BoxCoxTransformer

if TYPE_CHECKING:
    import optuna

    from optuna_boxcox._objective._objective import BoxCoxObjective
    from optuna_boxcox._objective._points import Configuration


class Member(NamedTuple):
    """One configuration of an ensemble, fitted: its study params and score, its feature map and
    its classifier."""

    params: dict[str, Any]
    score: float
    transformer: Any
    estimator: Any


def _tie_breaker(
    members: list[Member], outputs: list[np.ndarray], predicted: list[np.ndarray], n_classes: int
) -> np.ndarray:
    """Per sample and class, a number in [0, 1) that orders the classes tied in the vote: the
    members' mean probability, else their mean logistic decision value, else the weight
    Σ 2^-(rank + 1) of the members voting for the class."""
    n = len(predicted[0])
    estimators = [member.estimator for member in members]
    if all(hasattr(e, "predict_proba") for e in estimators):
        return np.mean([e.predict_proba(Xt) for e, Xt in zip(estimators, outputs)], axis=0)
    if all(hasattr(e, "decision_function") for e in estimators):
        decisions = [np.asarray(e.decision_function(Xt)) for e, Xt in zip(estimators, outputs)]
        if n_classes == 2 and all(d.ndim == 1 for d in decisions):
            positive = np.mean([_logistic(d) for d in decisions], axis=0)
            return np.column_stack([1.0 - positive, positive])
        if all(d.shape == (n, n_classes) for d in decisions):
            return np.mean([_logistic(d) for d in decisions], axis=0)
    weights = np.zeros((n, n_classes))
    for rank, codes in enumerate(predicted):
        weights[np.arange(n), codes] += 0.5 ** (rank + 1)
    return weights


#: Scales the tie breaker below 1: one vote more always wins over it.
_BELOW_ONE = 1.0 - 2.0**-20


def _logistic(values: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * values))


def _feature_map(
    configuration: Configuration, method: str, extrapolation: str, range_scale: bool = False
) -> Any:
    """The transform a configuration gives the features: the paper's BoxCoxTransformer when every
    feature has the same power transform (min-max scaled after it with ``range_scale``, which
    only the guarded default's choice of a range-scaled anchor asks for), else a
    :class:`_FeatureMap`."""
    if set(configuration.transforms) == {method}:
        return BoxCoxTransformer(
            lambdas=configuration.lambdas,
            method=method,
            extrapolation=extrapolation,
            range_scale=range_scale,
        )
    return _FeatureMap(configuration, extrapolation)


class _FeatureMap:
    """Each feature's own transform: the Box-Cox and the Yeo-Johnson features by a
    :class:`BoxCoxTransformer` each (with their λ), the identity ones standard scaled, the dropped
    ones left out; the output keeps the features' order. With every feature dropped, one column of
    zeros (the classifier is then the most frequent class)."""

    def __init__(self, configuration: Configuration, extrapolation: str) -> None:
        self.configuration = configuration
        self.extrapolation = extrapolation

    def fit(self, X: np.ndarray) -> _FeatureMap:
        transforms, lambdas = self.configuration.transforms, self.configuration.lambdas
        self.parts_ = []
        for kind in ("box-cox", "yeo-johnson", "identity"):
            columns = [j for j, t in enumerate(transforms) if t == kind]
            if not columns:
                continue
            if kind == "identity":
                part = StandardScaler()
            else:
                part = BoxCoxTransformer(
                    lambdas=lambdas[columns], method=kind, extrapolation=self.extrapolation
                )
            self.parts_.append((columns, part.fit(X[:, columns])))
        placed = [j for columns, _ in self.parts_ for j in columns]
        self.order_ = np.argsort(placed, kind="stable")
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        if not self.parts_:
            return np.zeros((len(X), 1))
        blocks = [part.transform(X[:, columns]) for columns, part in self.parts_]
        return np.hstack(blocks)[:, self.order_]


def fit_member(
    configuration: Configuration,
    params: dict,
    score: float,
    estimator: Any,
    X: np.ndarray,
    y: np.ndarray,
    *,
    method: str,
    extrapolation: str,
    range_scale: bool = False,
) -> Member:
    """The configuration of ``params`` fitted on (X, y): its feature map (min-max scaled after
    the power step with ``range_scale``) and a clone of ``estimator`` with the configuration's
    settings."""
    with warnings.catch_warnings():
        # The objective has said it already, about the same columns.
        warnings.simplefilter("ignore", ExtremeValueWarning)
        warnings.simplefilter("ignore", ConstantColumnWarning)
        transformer = _feature_map(configuration, method, extrapolation, range_scale).fit(X)
    estimator = clone(estimator).set_params(**configuration.settings)
    if set(configuration.transforms) == {"drop"}:
        estimator = DummyClassifier(strategy="most_frequent")
    return Member(
        dict(params), float(score), transformer, estimator.fit(transformer.transform(X), y)
    )


def best_members(
    objective: BoxCoxObjective,
    study: optuna.Study,
    chosen: Member,
    size: int,
    fit: Callable[[dict, float], Member],
) -> list[Member]:
    """The ``size`` best distinct configurations of the study, ``chosen`` first, each fitted by
    ``fit(params, score)``."""
    members = [chosen]
    seen = {objective.cache_key(chosen.params)}
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    ranked = sorted(trials, key=lambda t: (-t.value, t.number))
    for trial in ranked:
        if len(members) >= size:
            break
        try:
            key = objective.cache_key(trial.params)
        except (KeyError, ValueError):
            continue  # a trial of other parameters (an enqueued one, say)
        if key in seen or objective.n_kept(trial.params) == 0:
            continue
        seen.add(key)
        members.append(fit(trial.params, trial.value))
    return members


def ballot(members: list[Member], classes: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Per sample and class, the members' votes plus a tie breaker in [0, 1) (see
    ``BoxCoxClassifier``'s ``ensemble``): its argmax is the prediction."""
    n, n_classes = len(X), len(classes)
    votes = np.zeros((n, n_classes))
    rows = np.arange(n)
    outputs = [member.transformer.transform(X) for member in members]
    predicted = []
    for member, Xt in zip(members, outputs):
        codes = np.searchsorted(classes, member.estimator.predict(Xt))
        votes[rows, codes] += 1
        predicted.append(codes)
    # Scaled below 1, the tie breaker orders only classes with equal votes.
    return votes + _BELOW_ONE * _tie_breaker(members, outputs, predicted, n_classes)
