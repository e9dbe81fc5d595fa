"""The prepared experiment: what a spec means on checked data, computed once and never changed.

:func:`prepare_experiment` turns a :class:`~optuna_boxcox.SearchSpec` and a
:class:`~._arguments.CheckedData` into an :class:`Experiment`: the spec's choices resolved against
the data, the rows scored (a subsample), the [1, 2] range fitted on all rows, the MLE Λ, the inner
folds, the λ domain and the search space. What scores a point on it, and holds per-thread state
and a cache, is :class:`~._scorer.Scorer`; what Optuna calls is
:class:`~optuna_boxcox.BoxCoxObjective`, an adapter over the two.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING
from typing import Any
import warnings

import numpy as np
from sklearn.model_selection import RepeatedStratifiedKFold

from optuna_boxcox._math import _numerics
from optuna_boxcox._objective._arguments import CheckedData
from optuna_boxcox._objective._arguments import check_choices
from optuna_boxcox._objective._arguments import check_criterion
from optuna_boxcox._objective._arguments import make_space
from optuna_boxcox._objective._arguments import resolve_bounds
from optuna_boxcox._objective._arguments import resolve_estimator_params
from optuna_boxcox._objective._arguments import resolve_objectives
from optuna_boxcox._objective._arguments import resolve_transforms
from optuna_boxcox._objective._evaluators import ready_kernels
from optuna_boxcox._objective._points import Configuration
from optuna_boxcox._objective._points import Points
from optuna_boxcox._objective._scoring import Scoring
from optuna_boxcox._objective._scoring import inner_splits
from optuna_boxcox._objective._scoring import is_criterion
from optuna_boxcox._study._spec import OBJECTIVES
from optuna_boxcox._system._advice import AdvisedValueError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.distributions import BaseDistribution

    from optuna_boxcox._study._space import LambdaSpace
    from optuna_boxcox._study._spec import SearchSpec


@dataclass(frozen=True, eq=False)
class Experiment:
    """A spec on checked data, prepared: every array and choice a score depends on.

    Attributes:
        spec: The spec, with the data's columns, fingerprint and rows filled in (and, for an
            experiment made from arguments, the transforms, settings, objectives and subsample
            as resolved).
        estimator: The classifier (the spec's).
        names: The features' names (the λ parameters').
        X, y: The rows scored (all rows, or the subsample).
        rows: Indices of the scored rows in the data given, or None without subsampling.
        n_samples: Rows of the data given.
        values: What each feature's λ transforms on the scored rows: Z in [1, 2] for Box-Cox, raw
            X for Yeo-Johnson.
        power_inputs: The input of each power transform (``"box-cox"``: Z or None when Box-Cox
            is not searched, ``"yeo-johnson"``: X).
        data_min, data_range: The [1, 2] scaling fitted on all rows (None without Box-Cox).
        mle_lambdas: The per-feature MLE λ, clipped into the domain.
        bounds: The λ domain, feature name → (low, high).
        space: The search space; ``points`` converts and checks its points.
        score_rule: The metric or criterion, by resubstitution or the inner folds.
        transforms, estimator_params, objectives, subsample: The spec's, as resolved.
    """

    spec: SearchSpec
    estimator: Any
    names: list[str]
    X: np.ndarray
    y: np.ndarray
    rows: np.ndarray | None
    n_samples: int
    values: np.ndarray
    power_inputs: dict[str, np.ndarray | None]
    data_min: np.ndarray | None
    data_range: np.ndarray | None
    mle_lambdas: np.ndarray
    bounds: dict[str, tuple[float, float]]
    space: LambdaSpace
    points: Points
    score_rule: Scoring
    transforms: tuple[str, ...]
    estimator_params: dict[str, Any]
    objectives: tuple[str, ...]
    subsample: int | None

    # -- the spec's choices, by name ---------------------------------------------------------
    @property
    def sampled(self) -> bool:
        """The rows scored are the default's stratified sample of more rows (the plan's), in
        the Box-Cox range of all of them: the gate judges them so too."""
        return self.rows is not None and _default_sample(self.spec)

    @property
    def method(self) -> str:
        return self.spec.method

    @property
    def scoring(self) -> Any:
        return self.spec.scoring

    @property
    def cv(self) -> Any:
        return self.spec.cv

    @property
    def extrapolation(self) -> str:
        return self.spec.extrapolation

    @property
    def metric_name(self) -> str:
        """The scoring's name (``accuracy``, ``ml``, …), which names the study's objective."""
        scoring = self.spec.scoring
        return scoring if isinstance(scoring, str) else getattr(scoring, "__name__", "score")

    @property
    def directions(self) -> list[str]:
        """The study directions ``objectives`` needs (``optuna.create_study(directions=...)``)."""
        return [OBJECTIVES[o] for o in self.objectives]

    # -- the search space and its points ---------------------------------------------------
    @property
    def param_names(self) -> list[str]:
        """The λ parameters' names, in feature order (the features' names)."""
        return list(self.names)

    @property
    def search_space(self) -> dict[str, BaseDistribution]:
        """Every parameter of a trial: the λ, and any transform choice and setting."""
        return self.space.distributions()

    @property
    def initial_params(self) -> dict[str, Any]:
        """The search's starting point G (default: per-feature Box-Cox MLE), as a params dict."""
        return self.space.to_params(self.space.initial)

    @property
    def mle_params(self) -> dict[str, float]:
        """The per-feature maximum-likelihood λ (clipped into the domain), as a params dict."""
        return {n: float(v) for n, v in zip(self.names, self.mle_lambdas)}

    def to_params(self, lambdas: Sequence[float]) -> dict[str, Any]:
        """Point (or λ vector, see :meth:`~optuna_boxcox.BoxCoxObjective.evaluate`) → params
        dict."""
        return self.points.to_params(lambdas)

    def to_lambdas(self, params: Mapping[str, Any]) -> np.ndarray:
        """Params dict (e.g. ``study.best_params``) → λ vector in feature order."""
        return self.points.to_lambdas(params)

    def to_point(self, params: Mapping[str, Any]) -> np.ndarray:
        """Params dict → the point's vector (λ, transform indices, settings in search order); the
        same as :meth:`to_lambdas` for the paper's space."""
        return self.space.to_vector(params)

    def configuration(self, point: Any) -> Configuration:
        """What a point (vector, λ vector or params dict) makes of each feature and the
        classifier."""
        return self.points.configuration(self.points.vector(point))

    def cache_key(self, point: Any) -> bytes:
        """What identifies a point's score: equal keys, equal models (a λ a feature's transform
        ignores does not count)."""
        return self.points.key(self.points.vector(point))

    def n_kept(self, point: Any) -> int:
        """Features a point keeps (those not dropped), the second objective's value."""
        return self.points.n_kept(self.points.vector(point))


def resolved_spec(spec: SearchSpec, data: CheckedData) -> SearchSpec:
    """``spec`` with its choices checked and resolved against ``data`` (transforms, classifier
    settings, objectives, subsample) and the data's columns, fingerprint and rows filled in: what
    an experiment made from arguments records."""
    check_choices(spec.method, spec.extrapolation, spec.scoring)
    estimator = spec.estimator()
    transforms = resolve_transforms(spec.transforms, spec.method)
    estimator_params = resolve_estimator_params(spec.estimator_params, estimator)
    check_criterion(spec.scoring, transforms, estimator_params)
    return _with_data(
        dataclasses.replace(
            spec,
            transforms=transforms,
            estimator_params=estimator_params,
            objectives=resolve_objectives(spec.objectives, transforms),
            subsample=resolve_subsample(spec.subsample, data.labels),
        ),
        data,
    )


def _with_data(spec: SearchSpec, data: CheckedData) -> SearchSpec:
    return dataclasses.replace(
        spec, columns=tuple(data.names), fingerprint=data.fingerprint, n_samples=data.n_samples
    )


def prepare_experiment(
    spec: SearchSpec,
    data: CheckedData,
    *,
    initial_params: Mapping[str, float] | None = None,
    kernels: bool = True,
    resolve: bool = False,
) -> Experiment:
    """The experiment ``spec`` asks for on ``data``.

    ``resolve``: record the spec's choices as resolved here (an objective made from arguments);
    else the spec stays as given (a spec recorded in a study stays as it was recorded), its
    choices still checked. ``kernels``: name a fast scorer's compiled kernels to Numba first, so
    that a fresh installation's compile notice comes before the MLE (the caller knows whether
    a fast scorer will run). ``initial_params``: the search's start G instead of the MLE Λ.
    """
    checked = resolved_spec(spec, data)
    spec = checked if resolve else _with_data(spec, data)
    estimator, method = spec.estimator(), spec.method
    transforms, estimator_params = checked.transforms, checked.estimator_params
    if estimator_params and spec.cv in (None, "resubstitution"):
        warnings.warn(
            "classifier settings searched by resubstitution favour the ones that memorise the "
            "training data (k-NN with n_neighbors=1 scores 1.0): pass cv=k",
            UserWarning,
            stacklevel=3,  # this, the objective's constructor, then the user's line
        )
    if kernels and not is_criterion(spec.scoring):
        ready_kernels(estimator, data.y)
    X, y, rows = data.X, data.y, None
    if data.whole is not None:  # the rows drawn already, of all rows' range
        rows = _drawn(data, checked.subsample, spec.seed)
        fitted = (data.whole.data_min, data.whole.data_range) if "box-cox" in transforms else None
        boxcox_values = None if fitted is None else _numerics.range_standardise(X, *fitted)
        mle = _numerics.mle_lambdas(boxcox_values if method == "box-cox" else X, method)
    elif checked.subsample is not None and _default_sample(spec):
        # The default's sample: the MLE anchor of the sample too, and no Z of all rows.
        rows = stratified_subsample(y, checked.subsample, spec.seed)
        X, y = X[rows], y[rows]
        fitted, boxcox_values = boxcox_input(data.X, data.shown, transforms, rows)
        mle = _numerics.mle_lambdas(boxcox_values if method == "box-cox" else X, method)
    else:
        # All rows, a subsample asked for or a rung: the MLE start point of all rows (a rung
        # searches the space of all rows).
        fitted, boxcox_values = boxcox_input(data.X, data.shown, transforms)
        mle = _numerics.mle_lambdas(boxcox_values if method == "box-cox" else X, method)
        if checked.subsample is not None:
            rows = stratified_subsample(y, checked.subsample, spec.seed)
            X, y = X[rows], y[rows]
            if boxcox_values is not None:
                boxcox_values = boxcox_values[rows]
    values = boxcox_values if method == "box-cox" else X
    scoring = Scoring(
        spec.scoring,
        y,
        method,
        inner_splits(_splitter(spec), X, y, spec.seed),
        error_score=spec.error_score,
    )
    check_neighbours(estimator, spec.scoring, scoring.splits, len(y))
    names = list(data.names)
    start = mle if initial_params is None else np.array([initial_params[n] for n in names])
    low, high = resolve_bounds(spec.bounds, names, start)
    space = make_space(
        names,
        method,
        transforms,
        estimator,
        estimator_params,
        low,
        high,
        start,
        initial_params or {},
    )
    return Experiment(
        spec=spec,
        estimator=estimator,
        names=names,
        X=X,
        y=y,
        rows=rows,
        n_samples=data.n_samples,
        values=values,
        power_inputs={"box-cox": boxcox_values, "yeo-johnson": X},
        data_min=None if fitted is None else fitted[0],
        data_range=None if fitted is None else fitted[1],
        mle_lambdas=np.clip(mle, low, high),
        bounds={n: (float(lo), float(hi)) for n, lo, hi in zip(names, low, high)},
        space=space,
        points=Points(space, names, method, transforms, estimator_params),
        score_rule=scoring,
        transforms=transforms,
        estimator_params=estimator_params,
        objectives=checked.objectives,
        subsample=checked.subsample,
    )


def _default_sample(spec: SearchSpec) -> bool:
    """Whether the spec's subsample is the default's sample (its fidelity choice drew it)."""
    return spec.fidelity_choice is not None and spec.fidelity_choice.sample is not None


def _drawn(data: CheckedData, subsample: int | None, seed: int | None) -> np.ndarray:
    """The rows of data held in part: those its sample drew, which must be the spec's."""
    assert data.whole is not None
    rows = data.whole.rows
    expected = None if subsample is None else stratified_subsample(data.whole.y, subsample, seed)
    if rows is None or expected is None or not np.array_equal(rows, expected):
        raise ValueError(
            "the rows held in memory are not the sample this search draws: draw them with "
            "the search's own sample size and seed"
        )
    return rows


def _splitter(spec: SearchSpec) -> Any:
    """The inner folds' splitter: ``cv`` itself, or its folds repeated ``cv_repeats`` times, each
    shuffled anew (a score with less noise)."""
    cv, repeats = spec.cv, spec.cv_repeats
    if repeats == 1:
        return cv
    if not isinstance(cv, Integral) or isinstance(cv, bool) or repeats < 1:
        raise AdvisedValueError(
            "{cv_repeats} repeats the inner folds of {cv} given as a number of folds, "
            "at least once; got {repeats} repeats of cv={given}",
            repeats=repr(repeats),
            given=repr(cv),
        )
    return RepeatedStratifiedKFold(
        n_splits=int(cv), n_repeats=int(repeats), random_state=spec.seed
    )


def space_layout(spec: SearchSpec, data: CheckedData) -> LambdaSpace:
    """The coordinates ``spec``'s space has on ``data`` (each λ, transform choice and setting,
    with their grids), before the MLE: what a plan's size depends on. Its λ bounds and start
    are placeholders; the experiment's space has the real ones."""
    resolved = resolved_spec(spec, data)
    p = len(data.names)
    return make_space(
        list(data.names),
        resolved.method,
        resolved.transforms,
        resolved.estimator(),
        resolved.estimator_params,
        -np.ones(p),
        np.ones(p),
        np.zeros(p),
        {},
    )


def check_neighbours(
    estimator: Any, scoring: Any, splits: list[tuple[np.ndarray, np.ndarray]] | None, n: int
) -> None:
    """Refuse a k-NN with more neighbours than the rows it is fitted on (all ``n`` rows, or the
    smallest training fold of ``splits``): scikit-learn says so only at the first trial, once a
    study exists."""
    params = estimator.get_params() if hasattr(estimator, "get_params") else {}
    k = params.get("n_neighbors")
    if is_criterion(scoring) or not isinstance(k, (int, np.integer)):
        return
    rows = n if splits is None else min(len(train) for train, _ in splits)
    if k > rows:
        folds = "" if splits is None else f" and each of the {len(splits)} folds trains on {rows}"
        raise ValueError(
            f"{type(estimator).__name__} needs at least n_neighbors={k} rows to fit; the data "
            f"have {n}{folds}: give it fewer neighbours, or more rows"
        )


def boxcox_input(
    X: np.ndarray,
    names: list[str],
    transforms: tuple[str, ...],
    rows: np.ndarray | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray] | None, np.ndarray | None]:
    """Box-Cox's input Z in [1, 2] of ``rows`` (None: all) and the (min, range) it is fitted
    with, from all rows (with a subsample, a λ still means the transform of all the data, and
    no Z of all rows is made); (None, None) without Box-Cox."""
    if "box-cox" not in transforms:
        return None, None
    # One line naming a column whose few extreme values would squeeze the rest together.
    _numerics.warn_crowded_columns(X, names, stacklevel=3)
    data_min, data_range = _numerics.fit_range(X)
    scored = X if rows is None else X[rows]
    return (data_min, data_range), _numerics.range_standardise(scored, data_min, data_range)


def resolve_subsample(subsample: Any, y: np.ndarray) -> int | None:
    """The subsample size to draw, or None for all rows; a one-line error for an impossible one."""
    if subsample is None:
        return None
    if isinstance(subsample, bool) or not isinstance(subsample, (int, np.integer)):
        raise ValueError(f"subsample must be a number of rows (int) or None, got {subsample!r}")
    n_classes = len(np.unique(y))
    if subsample < 2 * n_classes:
        raise ValueError(
            f"subsample={subsample} is too small: it needs at least 2 rows per class "
            f"({2 * n_classes} for {n_classes} classes)"
        )
    if subsample > len(y):
        raise ValueError(f"subsample={subsample} exceeds the {len(y)} rows of X")
    return None if subsample == len(y) else int(subsample)


def stratified_subsample(y: np.ndarray, size: int, random_state: int | None) -> np.ndarray:
    """`size` row indices (sorted), each class in proportion to its frequency, drawn without
    replacement with ``numpy.random.default_rng(random_state)``.

    Each class gets its share ``size·n_c/n`` rounded down, at least 2 rows (or all it has), and
    the rows left over go to the classes with the largest remainders (first class on ties).
    """
    classes, codes = np.unique(y, return_inverse=True)
    counts = np.bincount(codes, minlength=len(classes))
    ideal = size * counts / len(y)
    floor = np.minimum(counts, 2)
    quota = np.minimum(counts, np.maximum(np.floor(ideal).astype(int), floor))
    while quota.sum() < size:  # give to the largest remainders that still have rows
        remainder = np.where(quota < counts, ideal - quota, -np.inf)
        quota[int(np.argmax(remainder))] += 1
    while quota.sum() > size:  # take from the smallest remainders above their floor
        remainder = np.where(quota > floor, ideal - quota, np.inf)
        quota[int(np.argmin(remainder))] -= 1
    rng = np.random.default_rng(random_state)
    chosen = [
        rng.choice(np.flatnonzero(codes == c), size=int(q), replace=False)
        for c, q in enumerate(quota)
    ]
    return np.sort(np.concatenate(chosen))
