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
from sklearn.naive_bayes import GaussianNB
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._math._numerics import ConstantColumnWarning
from optuna_boxcox._math._numerics import ExtremeValueWarning
from optuna_boxcox._math._transform import BoxCoxTransformer
from optuna_boxcox._math._transform import transform_checked

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
    names: Any = None,
) -> Member:
    """The configuration of ``params`` fitted on (X, y): its feature map (min-max scaled after
    the power step with ``range_scale``) and a clone of ``estimator`` with the configuration's
    settings. ``names``: the columns' names the user's data had, which a BoxCoxTransformer then
    keeps (as if it had been fitted on the user's DataFrame)."""
    with warnings.catch_warnings():
        # The objective has said it already, about the same columns.
        warnings.simplefilter("ignore", ExtremeValueWarning)
        warnings.simplefilter("ignore", ConstantColumnWarning)
        transformer = _feature_map(configuration, method, extrapolation, range_scale).fit(X)
    if names is not None and isinstance(transformer, BoxCoxTransformer):
        transformer.feature_names_in_ = np.asarray(names, dtype=object)
    estimator = clone(estimator).set_params(**configuration.settings)
    if set(configuration.transforms) == {"drop"}:
        estimator = DummyClassifier(strategy="most_frequent")
    return Member(dict(params), float(score), transformer, fit_final(estimator, transformer, X, y))


#: A GaussianNB's final fit reads the transformed rows a block at a time once they would take
#: more than this many bytes: GaussianNB.fit's variances of all rows and of each class are each
#: a temporary as large as its input, which, beside the input and the user's data, triples the
#: peak (docs/performance_log.md, "The data users have").
BLOCKWISE_BYTES = 256 * 2**20
#: Rows per block of the blockwise fit.
BLOCK_ROWS = 65_536


def fit_final(estimator: Any, transformer: Any, X: np.ndarray, y: np.ndarray) -> Any:
    """``estimator`` fitted on ``transformer.transform(X)`` and y; a plain GaussianNB on more
    than :data:`BLOCKWISE_BYTES` of transformed rows is fitted block by block, never holding
    them whole (:func:`_fit_gaussian_nb_blocks`)."""
    if type(estimator) is GaussianNB and X.size * 8 > BLOCKWISE_BYTES:
        return _fit_gaussian_nb_blocks(estimator, transformer, X, y)
    return estimator.fit(transform_checked(transformer, X), y)


class _Moments:
    """Count, mean and sum of squared deviations of rows, merged block by block (Chan et al.'s
    pairwise update, which the variance of GaussianNB's ``partial_fit`` also uses)."""

    def __init__(self, width: int) -> None:
        self.count, self.mean, self.squares = 0, np.zeros(width), np.zeros(width)

    def add(self, rows: np.ndarray) -> None:
        m = len(rows)
        if m == 0:
            return
        mean = rows.mean(axis=0)
        squares = ((rows - mean) ** 2).sum(axis=0)
        n = self.count + m
        delta = mean - self.mean
        self.squares += squares + delta**2 * (self.count * m / n)
        self.mean += delta * (m / n)
        self.count = n

    @property
    def variance(self) -> np.ndarray:
        return self.squares / max(self.count, 1)


def _fit_gaussian_nb_blocks(
    estimator: GaussianNB, transformer: Any, X: np.ndarray, y: np.ndarray
) -> GaussianNB:
    """``estimator.fit(transformer.transform(X), y)`` to rounding, one block of transformed rows at
    a time: the per-class means and variances and the variance of all rows (its ``epsilon_``)
    merged over blocks. The estimator is first fitted on one row per class, which sets up what
    scikit-learn's version keeps beside the statistics; these are then replaced by those of all
    rows (its public fitted attributes, which its predictions read)."""
    classes, first = np.unique(y, return_index=True)
    estimator.fit(transform_checked(transformer, X[np.sort(first)]), y[np.sort(first)])
    width = len(estimator.theta_[0])
    whole, per_class = _Moments(width), [_Moments(width) for _ in classes]
    for start in range(0, len(X), BLOCK_ROWS):
        rows = transform_checked(transformer, X[start : start + BLOCK_ROWS])
        codes = np.searchsorted(classes, y[start : start + BLOCK_ROWS])
        whole.add(rows)
        for k, moments in enumerate(per_class):
            moments.add(rows[codes == k])
    estimator.epsilon_ = estimator.var_smoothing * float(whole.variance.max())
    estimator.theta_ = np.array([m.mean for m in per_class])
    estimator.var_ = np.array([m.variance for m in per_class]) + estimator.epsilon_
    estimator.class_count_ = np.array([float(m.count) for m in per_class])
    if estimator.priors is None:
        estimator.class_prior_ = estimator.class_count_ / estimator.class_count_.sum()
    return estimator


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
    outputs = [transform_checked(member.transformer, X) for member in members]
    predicted = []
    for member, Xt in zip(members, outputs):
        codes = np.searchsorted(classes, member.estimator.predict(Xt))
        votes[rows, codes] += 1
        predicted.append(codes)
    # Scaled below 1, the tie breaker orders only classes with equal votes.
    return votes + _BELOW_ONE * _tie_breaker(members, outputs, predicted, n_classes)
