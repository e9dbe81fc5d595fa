"""The callable an Optuna study optimises: data, transform and classifier joined (SPEC §2)."""

from __future__ import annotations

from collections.abc import Callable
import threading
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple
import warnings

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from sklearn.base import clone
from sklearn.metrics import accuracy_score
from sklearn.metrics import balanced_accuracy_score
from sklearn.metrics import f1_score
from sklearn.metrics import matthews_corrcoef
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_array

from optuna_boxcox import _numerics
from optuna_boxcox._criteria import _NN_BLOCK_ROWS
from optuna_boxcox._evaluators import GENERIC
from optuna_boxcox._evaluators import make_fast_scorer
from optuna_boxcox._evaluators import svc_cache_bytes
from optuna_boxcox._jit import parallel_map
from optuna_boxcox._jit import resolve_threads
from optuna_boxcox._memory import MemoryBudget
from optuna_boxcox._optuna import distribution_contains
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._space import LAMBDA
from optuna_boxcox._space import SETTING
from optuna_boxcox._space import SETTING_PREFIX
from optuna_boxcox._space import SPACE_ATTR
from optuna_boxcox._space import TRANSFORM
from optuna_boxcox._space import TRANSFORM_SUFFIX
from optuna_boxcox._space import TRANSFORMS
from optuna_boxcox._space import LambdaSpace
from optuna_boxcox._space import default_bounds
from optuna_boxcox._spec import SPEC_ATTR
from optuna_boxcox._spec import SearchSpec
from optuna_boxcox._spec import StudyMismatch
from optuna_boxcox._spec import check_study
from optuna_boxcox._spec import data_fingerprint
from optuna_boxcox._transform import _check_features

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

#: Study user attribute holding :meth:`BoxCoxObjective.describe` of the process that ran it last.
DESCRIPTION_ATTR = "boxcox_evaluator"


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
#: What a study's objectives may be, with their directions: the score, and the features kept
#: (those whose transform is not "drop").
OBJECTIVES = {"score": "maximize", "n_features": "minimize"}


class Configuration(NamedTuple):
    """One point of the search space as a model is built from it.

    Attributes:
        lambdas: The λ of every feature, in feature order.
        transforms: The transform of every feature (``"box-cox"``, ``"yeo-johnson"``,
            ``"identity"`` or ``"drop"``).
        settings: The classifier settings searched, by estimator parameter name.
    """

    lambdas: np.ndarray
    transforms: tuple[str, ...]
    settings: dict[str, Any]


#: Bytes of one score-cache entry besides its key's 8 bytes per λ (bytes object, float, dict slot).
_CACHE_ENTRY_BYTES = 160
#: Share of the memory limit the score cache may take (~150,000 scores of 30 λ by default).
_CACHE_SHARE = 1 / 64
_CACHE_CAP = 256 * 1024**2
#: Evaluators whose candidates :meth:`BoxCoxObjective.evaluate_batch` scores on threads side by
#: side: their work runs without the GIL (Numba's SGD, libsvm) and shares nothing between points.
#: Not the precomputed SVC: a second n × n kernel per thread, for a fit that is fast already.
_SIDE_BY_SIDE = ("sgd", "svc:blockwise")
#: Rows below which side-by-side threads cost more than they save (a fit takes about a
#: millisecond, of which the transform's Python part holds the GIL).
_SIDE_BY_SIDE_ROWS = 2000
#: The smallest kernel cache (MB) the generic SVC gets under a tight memory limit.
_MIN_SVC_CACHE_MB = 1.0

# Scores a search maximises; the paper minimises 1 - accuracy, the same search.


class BoxCoxObjective:
    """Score of a classifier on Box-Cox transformed data, for one Λ per Optuna trial.

    Each feature's λ is a float parameter named after the feature (DataFrame column names;
    ``lambda_0``, ``lambda_1``, … for arrays). The score is the paper's resubstitution accuracy
    (fit and predict the training data, SPEC §2) unless ``cv`` asks for an inner stratified k-fold
    score; other metrics and the classifier-free criteria of Bicego & Baldo can be chosen.

    The objective records its λ space in the study (user attribute ``boxcox_search_space``), which is
    how the plugin's samplers learn the parameter order, bounds and the MLE starting point in every
    worker. Re-scoring a Λ it has seen is a cache hit; a new Λ re-transforms only changed columns.

    Example::

        import optuna
        from sklearn.datasets import load_breast_cancer
        from sklearn.neighbors import KNeighborsClassifier
        from optuna_boxcox import BoxCoxObjective, CoordinateGridSampler

        X, y = load_breast_cancer(return_X_y=True, as_frame=True)
        objective = BoxCoxObjective(X, y, KNeighborsClassifier())
        study = optuna.create_study(direction="maximize",
                                    sampler=CoordinateGridSampler.from_preset("iterative"))
        study.optimize(objective)

    Args:
        X: Training data, (n_samples, n_features) array or DataFrame with finite numeric values.
        y: Class labels.
        estimator: scikit-learn classifier (cloned for every fit).
        scoring: ``"accuracy"`` (default), ``"f1"``, ``"mcc"``, ``"balanced_accuracy"``, one of the
            criteria ``"ml"``, ``"pcml"``, ``"fisher"``, ``"1nn-mm"``, or a callable
            ``metric(y_true, y_pred) -> float`` (higher is better).
        cv: ``None`` for resubstitution (the paper), an int k for stratified k-fold on the training
            data (shuffled with ``random_state``), or a scikit-learn splitter. The transform's
            min/max and scaling come from all of X (they are unsupervised); the classifier is refit
            per fold.
        method: ``"box-cox"`` (the paper) or ``"yeo-johnson"``.
        extrapolation: How the fitted transform treats values outside the training range
            (``"extrapolate"`` or ``"clip"``, SPEC §1). Resubstitution never meets any.
        bounds: The λ domain: ``None`` for SPEC §3's default (hull of [-10, 10] and [G-5, G+5]), a
            ``(low, high)`` pair for every feature, or a mapping feature name → ``(low, high)``.
        initial_params: The starting point G; default the per-feature maximum-likelihood λ.
        random_state: Seed of the inner folds and of the subsample.
        fast: Use an exact specialised scorer where one exists (GaussianNB, k-NN, RBF SVC, the
            binary perceptron, with resubstitution): same predictions as scikit-learn's fit and
            predict, several times faster; it defers to scikit-learn whenever a result would hinge
            on a near-tie. Which one runs is :attr:`evaluator`.
        memory_limit: Bytes the objective may allocate (int, or a string such as ``"512MiB"`` or
            ``"2GB"``). Every evaluator and cache states its footprint before it allocates; the
            fastest exact evaluator that fits is chosen (:attr:`evaluator`), down to block-wise
            computation or scikit-learn's own path, and never an n × n matrix that does not fit.
            Default: half the available memory, and at most 2 GiB for the whole process (what the
            process holds already is deducted). Worker processes each have their own.
        subsample: Score every Λ on this many rows only, drawn once, stratified by class and
            seeded with `random_state` (``None`` or the number of rows: all rows). The range
            standardisation and the MLE start point still use all rows, so a λ means the same
            transform on all rows; the classifier is fitted and scored on the subsample.
        n_threads: Threads of the objective's own kernels (k-NN sweeps, the block-wise SVC
            prediction, BLAS inside them) and of :meth:`evaluate_batch` where candidates are
            scored side by side (perceptron, SVC). Default 1: a search's parallelism is its worker
            processes (``n_jobs``), and threads competing with them, or with anything else on the
            machine, only slow each other down. ``None`` or -1: every core this process may use,
            for a search in one process on an otherwise idle machine. scikit-learn's generic path
            keeps its own threading.
        transforms: What each feature may be given, searched per feature when there are several:
            ``"box-cox"``, ``"yeo-johnson"`` (with the feature's λ), ``"identity"`` (the
            standardized raw feature, what λ = 1 gives) and ``"drop"`` (the classifier is fitted
            without the feature). Default ``(method,)``: the paper's search, one λ per feature
            and nothing else. With several, each feature gets a categorical parameter
            ``"<feature>:transform"`` beside its λ; ``method`` must be among them (the search
            starts from it, and G is its MLE). A λ is the one of whichever power transform is
            chosen; it is ignored (and need not be refitted) while the feature is ``"identity"``
            or ``"drop"``. A point that drops every feature scores as predicting the most
            frequent class.
        estimator_params: Classifier settings to search with the transform, name → Optuna
            distribution (e.g. ``{"n_neighbors": IntDistribution(1, 21)}``), each a parameter
            ``"estimator:<name>"``. The search starts from the estimator's own value where the
            distribution holds it, else its lowest value or first choice. The fast evaluators
            follow the settings they cover (k-NN's k, an SVC's C and γ, GaussianNB's smoothing)
            and leave the others to scikit-learn.
        objectives: ``("score",)`` (default), or ``("score", "n_features")`` for a
            two-objective study that also minimises the features kept (create it with
            ``directions=objective.directions``).

    Attributes:
        X, y: The rows scored (all rows, or the subsample).
        rows: Indices of the scored rows in the data given, or None without subsampling.
        n_samples: Rows of the data given.
    """

    def __init__(
        self,
        X: Any,
        y: Any,
        estimator: Any,
        *,
        scoring: str | Callable[[np.ndarray, np.ndarray], float] = "accuracy",
        cv: int | Any | None = None,
        method: str = "box-cox",
        extrapolation: str = "extrapolate",
        bounds: tuple[float, float] | Mapping[str, tuple[float, float]] | None = None,
        initial_params: Mapping[str, float] | None = None,
        random_state: int | None = 0,
        fast: bool = True,
        memory_limit: int | str | None = None,
        subsample: int | None = None,
        n_threads: int | None = 1,
        transforms: Sequence[str] | None = None,
        estimator_params: Mapping[str, BaseDistribution] | None = None,
        objectives: Sequence[str] = ("score",),
    ) -> None:
        if method not in _numerics.METHODS:
            raise ValueError(f"method must be one of {_numerics.METHODS}, got {method!r}")
        if extrapolation not in _numerics.EXTRAPOLATIONS:
            raise ValueError(
                f"extrapolation must be one of {_numerics.EXTRAPOLATIONS}, got {extrapolation!r}"
            )
        self.names = _feature_names(X)
        _check_features(X)
        self.X = check_array(X, dtype=np.float64, ensure_min_samples=2, input_name="X")
        self.y = np.asarray(y)
        if self.y.ndim != 1 or len(self.y) != len(self.X):
            raise ValueError(
                f"y must be 1-D with one label per row of X ({len(self.X)}), got shape {self.y.shape}"
            )
        if len(np.unique(self.y)) < 2:
            raise ValueError("y has a single class; a classifier needs at least two")
        if type_of_target(self.y) not in ("binary", "multiclass"):
            raise ValueError(
                f"y must hold class labels, got target type {type_of_target(self.y)!r}"
            )
        fingerprint = data_fingerprint(self.X, self.y)
        self.n_threads = resolve_threads(n_threads)
        self.budget = MemoryBudget(memory_limit)
        self.n_samples = len(self.X)
        self.subsample = _resolve_subsample(subsample, self.y)
        self.rows: np.ndarray | None = None
        self.estimator = estimator
        self.fast = fast
        self.method = method
        self.extrapolation = extrapolation
        self.scoring = scoring
        self._score_fn = self._resolve_scoring(scoring)
        self.transforms = _resolve_transforms(transforms, method)
        self.estimator_params = _resolve_estimator_params(estimator_params, estimator)
        self.objectives = _resolve_objectives(objectives, self.transforms)
        if self._is_criterion() and (len(self.transforms) > 1 or self.estimator_params):
            raise ValueError(
                f"scoring {self.scoring!r} is a criterion of the Box-Cox λ alone: search "
                "transforms or estimator_params with a classifier's score"
            )

        boxcox_values = None
        if "box-cox" in self.transforms:
            # One line naming a column whose few extreme values would squeeze the rest together.
            _numerics.warn_crowded_columns(self.X, self.names, stacklevel=2)
            # From all rows: with a subsample, a λ still means the transform of all the data.
            self.data_min, self.data_range = _numerics.fit_range(self.X)
            boxcox_values = _numerics.range_standardise(self.X, self.data_min, self.data_range)
        values = boxcox_values if method == "box-cox" else self.X
        mle = _numerics.mle_lambdas(values, method)
        if self.subsample is not None:
            self.rows = stratified_subsample(self.y, self.subsample, random_state)
            self.X, self.y, values = self.X[self.rows], self.y[self.rows], values[self.rows]
            if boxcox_values is not None:
                boxcox_values = boxcox_values[self.rows]
        self.values = values
        #: The input of each power transform: Z in [1, 2] for Box-Cox, raw X for Yeo-Johnson.
        self._power_inputs = {"box-cox": boxcox_values, "yeo-johnson": self.X}
        self._splits = self._resolve_cv(cv, random_state)
        self.cv = cv
        if self.estimator_params and (cv is None or cv == "resubstitution"):
            warnings.warn(
                "classifier settings searched by resubstitution favour the ones that memorise the "
                "training data (k-NN with n_neighbors=1 scores 1.0): pass cv=k",
                UserWarning,
                stacklevel=2,
            )
        start = (
            mle if initial_params is None else np.array([initial_params[n] for n in self.names])
        )
        low, high = self._resolve_bounds(bounds, start)
        self.space = self._make_space(low, high, start, initial_params or {})
        self.mle_lambdas = np.clip(mle, low, high)
        self._index_space()

        self._cache: dict[bytes, float] = {}
        self._log_columns: np.ndarray | None = None
        self._lock = threading.Lock()
        self._local = threading.local()
        self._registered: set[tuple[int, int]] = set()
        self.n_evaluations = 0  # evaluations that fitted a classifier (cache misses)
        self._plan_memory()
        #: The experiment this objective scores (:class:`~optuna_boxcox.SearchSpec`), recorded in
        #: the study by :meth:`register`; built by a spec, the spec with the data filled in.
        self.spec = SearchSpec(
            estimator,
            scoring=scoring,
            cv=cv,
            method=method,
            extrapolation=extrapolation,
            transforms=self.transforms,
            estimator_params=self.estimator_params,
            objectives=self.objectives,
            subsample=self.subsample,
            seed=random_state,
            columns=tuple(self.names),
            fingerprint=fingerprint,
            n_samples=self.n_samples,
        )

    # -- the search space ------------------------------------------------------------------
    def _make_space(
        self,
        low: np.ndarray,
        high: np.ndarray,
        start: np.ndarray,
        initial: Mapping[str, Any],
    ) -> LambdaSpace:
        """One λ per feature, after its transform choice when there are several; then the
        classifier's settings."""
        if len(self.transforms) == 1 and not self.estimator_params:
            return LambdaSpace(tuple(self.names), low, high, start)
        coordinates: list[tuple[str, str, Any, Any]] = []
        choices = CategoricalDistribution(list(self.transforms))
        for name, lo, hi, lam in zip(self.names, low, high, start):
            if len(self.transforms) > 1:
                transform = name + TRANSFORM_SUFFIX
                coordinates.append(
                    (transform, TRANSFORM, choices, initial.get(transform, self.method))
                )
            coordinates.append((name, LAMBDA, (lo, hi), lam))
        own = self.estimator.get_params()
        for name, distribution in self.estimator_params.items():
            key = SETTING_PREFIX + name
            value = initial.get(key, _starting_value(distribution, own.get(name)))
            coordinates.append((key, SETTING, distribution, value))
        return LambdaSpace.of(coordinates)

    def _index_space(self) -> None:
        """Where each feature's λ and transform, and each setting, sit in a point's vector."""
        kinds = [self.space.kind(d) for d in range(self.space.dim)]
        self._plain = self.space.lambdas_only
        self._lambda_at = np.array([d for d, k in enumerate(kinds) if k == LAMBDA])
        self._transform_at = np.array([d for d, k in enumerate(kinds) if k == TRANSFORM], int)
        self._setting_at = [d for d, k in enumerate(kinds) if k == SETTING]
        #: The feature whose column a coordinate changes (-1 for a setting).
        self._feature_at = np.full(self.space.dim, -1)
        self._feature_at[self._lambda_at] = np.arange(len(self.names))
        if len(self._transform_at):
            self._feature_at[self._transform_at] = np.arange(len(self.names))
        self._drop_choice = self.transforms.index("drop") if "drop" in self.transforms else -1
        #: Choices whose column ignores λ (its λ is left out of the cache key).
        self._without_lambda = [
            c for c, t in enumerate(self.transforms) if t in ("identity", "drop")
        ]
        self._own_settings = self._settings_of(self.space.initial)
        self._estimators: dict[tuple, Any] = {self._own_settings: self._start_estimator()}
        self._generics: dict[tuple, Any] = {}

    def _start_estimator(self) -> Any:
        """The estimator with the starting settings (the estimator itself when they are its own)."""
        settings = self._settings_dict(self._own_settings)
        own = self.estimator.get_params()
        if all(name in own and _same_value(own[name], v) for name, v in settings.items()):
            return self.estimator
        return clone(self.estimator).set_params(**settings)

    @property
    def param_names(self) -> list[str]:
        """The λ parameters' names, in feature order (the features' names)."""
        return list(self.names)

    @property
    def search_space(self) -> dict[str, BaseDistribution]:
        """Every parameter of a trial: the λ, and any transform choice and setting."""
        return self.space.distributions()

    @property
    def directions(self) -> list[str]:
        """The study directions ``objectives`` needs (``optuna.create_study(directions=...)``)."""
        return [OBJECTIVES[o] for o in self.objectives]

    @property
    def initial_params(self) -> dict[str, Any]:
        """The search's starting point G (default: per-feature Box-Cox MLE), as a params dict."""
        return self.space.to_params(self.space.initial)

    @property
    def mle_params(self) -> dict[str, float]:
        """The per-feature maximum-likelihood λ (clipped into the domain), as a params dict."""
        return {n: float(v) for n, v in zip(self.names, self.mle_lambdas)}

    def to_params(self, lambdas: Sequence[float]) -> dict[str, Any]:
        """Point (or λ vector, see :meth:`evaluate`) → params dict."""
        lambdas = np.asarray(lambdas, dtype=np.float64)
        if len(lambdas) == len(self.names) and not self._plain:
            lambdas = self._completed(lambdas)
        if len(lambdas) != self.space.dim:
            raise ValueError(f"expected {self.space.dim} λ, got {len(lambdas)}")
        return self.space.to_params(lambdas)

    def to_lambdas(self, params: Mapping[str, Any]) -> np.ndarray:
        """Params dict (e.g. ``study.best_params``) → λ vector in feature order."""
        if self._plain:
            return self.space.to_vector(params)
        missing = [n for n in self.names if n not in params]
        if missing:
            raise KeyError(f"params lack the λ of {missing}")
        return np.array([float(params[n]) for n in self.names])

    def to_point(self, params: Mapping[str, Any]) -> np.ndarray:
        """Params dict → the point's vector (λ, transform indices, settings in search order); the
        same as :meth:`to_lambdas` for the paper's space."""
        return self.space.to_vector(params)

    def configuration(self, point: Sequence[float] | Mapping[str, Any]) -> Configuration:
        """What a point (vector, λ vector or params dict) makes of each feature and the classifier."""
        x = self._checked(self._as_vector(point))
        lambdas, choices = self._features_of(x, canonical=False)
        transforms = (
            (self.method,) * len(self.names)
            if choices is None
            else tuple(self.transforms[c] for c in choices)
        )
        return Configuration(lambdas.copy(), transforms, self._settings_dict(self._settings_of(x)))

    def cache_key(self, point: Sequence[float] | Mapping[str, Any]) -> bytes:
        """What identifies a point's score: equal keys, equal models (a λ a feature's transform
        ignores does not count)."""
        return self._key(self._checked(self._as_vector(point)))

    def n_kept(self, point: Sequence[float] | Mapping[str, Any]) -> int:
        """Features a point keeps (those not dropped), the second objective's value."""
        _, choices = self._features_of(self._checked(self._as_vector(point)))
        if choices is None or self._drop_choice < 0:
            return len(self.names)
        return int(np.count_nonzero(choices != self._drop_choice))

    def register(self, study: optuna.Study) -> None:
        """Record the experiment (:attr:`spec`, user attribute ``boxcox_spec``) and the search space
        in the study, so samplers in every worker can find them, and what the objective chose
        (:meth:`describe`, user attribute ``boxcox_evaluator``).

        Called automatically on the first trial. Refuses (:class:`~optuna_boxcox.StudyMismatch`) a
        study that holds another experiment — other data, classifier or parameters, scoring, cv,
        directions, transforms, estimator parameters or subsample — or another λ space, and one
        not made by optuna-boxcox unless it is empty: its trials would be reported as this
        search's result.
        """
        key = (id(storage_of(study)), study_id_of(study))
        if key in self._registered:
            return
        attrs = study.user_attrs
        if check_study(study, self.spec, attrs):
            study.set_user_attr(SPEC_ATTR, self.spec.to_dict())
        mine = self.space.to_attr()
        theirs = attrs.get(SPACE_ATTR)
        if theirs is None:
            study.set_user_attr(SPACE_ATTR, mine)
        elif (
            theirs["names"] != mine["names"]
            or not (
                np.allclose(theirs["low"], mine["low"])
                and np.allclose(theirs["high"], mine["high"])
            )
            or theirs.get("distributions") != mine.get("distributions")
        ):
            raise StudyMismatch(
                study.study_name,
                "λ search space",
                f"({len(theirs['names'])} parameters {theirs['names'][:3]}…)",
                f"({len(mine['names'])} parameters {mine['names'][:3]}…)",
            )
        if len(self.objectives) > 1 and study.metric_names is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                study.set_metric_names([self.metric_name, *self.objectives[1:]])
        # What this process's objective chose (evaluator, memory, subsample), for the dashboard.
        described = self.describe()
        if attrs.get(DESCRIPTION_ATTR) != described:
            study.set_user_attr(DESCRIPTION_ATTR, described)
        self._registered.add(key)

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, trial: optuna.Trial) -> float | tuple[float, int]:
        self.register(trial.study)
        if self._plain:
            x = np.array(
                [
                    trial.suggest_float(n, lo, hi)
                    for n, lo, hi in zip(self.space.names, self.space.low, self.space.high)
                ]
            )
        else:
            x = self.space.to_vector(
                {n: _suggest(trial, n, d) for n, d in self.space.distributions().items()}
            )
        score = self.evaluate(x)
        if len(self.objectives) == 1:
            return score
        return score, self.n_kept(x)

    @property
    def metric_name(self) -> str:
        """The scoring's name (``accuracy``, ``ml``, …), which names the study's objective."""
        if isinstance(self.scoring, str):
            return self.scoring
        return getattr(self.scoring, "__name__", "score")

    def evaluate(self, lambdas: Sequence[float] | Mapping[str, Any]) -> float:
        """Score of one Λ (cached: a Λ scored before is not refitted).

        With transform or setting coordinates, a point is their whole vector (or a params dict);
        a vector of one λ per feature stands for the point with those λ and the starting transform
        and settings.
        """
        lambdas = self._checked(self._as_vector(lambdas))
        key = self._key(lambdas)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        values, transformed, scaled = self._transformed(lambdas)
        score = self._score(values, transformed, scaled, lambdas)
        self._store(key, score)
        return score

    def evaluate_batch(
        self, points: Sequence[Sequence[float] | Mapping[str, float]]
    ) -> list[float]:
        """Scores of several Λ, in order: the same numbers as :meth:`evaluate` on each, the same cache.

        Work is shared where the points allow it. The points of a coordinate sweep (SPEC §4) differ
        in one column j only: k-NN then computes the distances over all other columns once, block
        by block, and scores every candidate from them. Classifiers without shared work (the
        perceptron, SVC) score the points side by side on up to ``n_threads`` threads, as far as
        the memory limit allows one state per thread; the rest one after another.
        """
        lambdas = [self._checked(self._as_vector(x)) for x in points]
        keys = [self._key(x) for x in lambdas]
        scores: dict[bytes, float] = {}
        with self._lock:
            for key in keys:
                if key in self._cache:
                    scores[key] = self._cache[key]
        todo = list({key: x for key, x in zip(keys, lambdas) if key not in scores}.items())
        if len(todo) >= 2:
            column = _sweep_column(np.array([x for _, x in todo]))
            swept = None
            if column is not None and self._shares_sweeps() and self._feature_at[column] >= 0:
                swept = self._score_sweep([x for _, x in todo], column)
            if swept is not None:
                for (key, _), score in zip(todo, swept):
                    scores[key] = self._store(key, score)
                todo = []
            elif self._batch_threads > 1:
                found = parallel_map(self.evaluate, [x for _, x in todo], self._batch_threads)
                scores.update(zip([key for key, _ in todo], found))
                todo = []
        for key, x in todo:
            scores[key] = self.evaluate(x)
        return [scores[key] for key in keys]

    @property
    def evaluator(self) -> str:
        """How a Λ is scored here: ``"knn:incremental"``, ``"knn:blockwise"``, ``"svc:precomputed"``,
        ``"svc:blockwise"``, ``"gaussian-nb"``, ``"sgd"``, ``"criterion:<name>"`` or ``"sklearn"``
        (scikit-learn's fit and predict), chosen once from the classifier, the scoring and the
        memory limit (see :mod:`optuna_boxcox._evaluators`)."""
        return self._evaluator

    def describe(self) -> dict[str, Any]:
        """What the objective chose and why, JSON-serialisable (for recording on a study).

        Keys: ``evaluator`` (see :attr:`evaluator`), ``batch`` (how :meth:`evaluate_batch` shares
        work: ``"sweep"``, ``"threads"`` or ``"sequential"``), ``memory_limit`` and
        ``estimated_peak_bytes`` (the objective's own allocations at their peak, by the footprints
        stated before allocating), ``memory`` (that estimate per part), ``n_samples`` (rows given),
        ``n_scored`` (rows each Λ is scored on), ``subsample``, ``n_features``, ``n_threads``,
        ``batch_threads`` and ``cache_capacity`` (scores kept before the oldest are dropped).
        """
        return {
            "evaluator": self._evaluator,
            "batch": self.batch_work,
            "memory_limit": int(self.budget.limit),
            "estimated_peak_bytes": int(self.budget.used),
            "memory": {name: int(size) for name, size in self.budget.reserved.items()},
            "n_samples": int(self.n_samples),
            "n_scored": len(self.X),
            "subsample": None if self.subsample is None else int(self.subsample),
            "n_features": len(self.names),
            "n_threads": int(self.n_threads),
            "batch_threads": int(self._batch_threads),
            "cache_capacity": int(self._cache_capacity),
        }

    def cached_score(self, lambdas: Sequence[float]) -> float | None:
        """The score of a Λ scored before (here or reported by :meth:`remember_score`), else None."""
        key = self._key(self._checked(lambdas))
        with self._lock:
            return self._cache.get(key)

    def remember_score(self, lambdas: Sequence[float], score: float) -> None:
        """Record a score computed elsewhere (a worker process) as if evaluated here."""
        key = self._key(self._checked(lambdas))
        with self._lock:
            if key in self._cache:
                return
        self._store(key, float(score))

    def _store(self, key: bytes, score: float) -> float:
        """Cache a new score; beyond the cache's share of the memory the oldest scores go (a
        search revisits recent points: the Λopt of earlier sweeps)."""
        with self._lock:
            if key not in self._cache:
                while len(self._cache) >= self._cache_capacity:
                    del self._cache[next(iter(self._cache))]
                self._cache[key] = score
                self.n_evaluations += 1
        return score

    def _as_vector(self, lambdas: Any) -> Any:
        if not isinstance(lambdas, np.ndarray) and hasattr(lambdas, "keys"):
            return self.to_point(lambdas)
        if not self._plain and np.shape(lambdas) == (len(self.names),):
            return self._completed(np.asarray(lambdas, dtype=np.float64))
        return lambdas

    def _completed(self, lambdas: np.ndarray) -> np.ndarray:
        """The starting point with these λ (a λ vector in a space with more coordinates)."""
        x = self.space.initial.copy()
        x[self._lambda_at] = lambdas
        return x

    def _key(self, x: np.ndarray) -> bytes:
        """The cache key of a checked point: the λ of a feature that is "identity" or "drop" do
        not change its score, and are left out."""
        if self._plain:
            return x.tobytes()
        lambdas, _ = self._features_of(x)
        canonical = x.copy()
        canonical[self._lambda_at] = lambdas
        return canonical.tobytes()

    def _features_of(
        self, x: np.ndarray, *, canonical: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The λ and the transform choice (an index into ``transforms``; None when there is one
        transform) of every feature; ``canonical``: the λ of a feature whose transform ignores it
        is 0."""
        if self._plain:
            return x, None
        lambdas = x[self._lambda_at]
        if not len(self._transform_at):
            return lambdas, None
        choices = np.rint(x[self._transform_at]).astype(np.intp)
        if canonical and self._without_lambda:
            lambdas = np.where(np.isin(choices, self._without_lambda), 0.0, lambdas)
        return lambdas, choices

    def _settings_of(self, x: np.ndarray) -> tuple:
        """The classifier settings of a point, as a hashable tuple in ``estimator_params`` order."""
        if not self._setting_at:
            return ()
        distributions = self.space.others
        return tuple(
            distributions[self.space.names[d]].to_external_repr(
                float(round(x[d]))
                if not isinstance(distributions[self.space.names[d]], FloatDistribution)
                else float(x[d])
            )
            for d in self._setting_at
        )

    def _settings_dict(self, settings: tuple) -> dict[str, Any]:
        return dict(zip(self.estimator_params, settings))

    def _estimator_for(self, settings: tuple) -> Any:
        """The estimator with these settings (made once per distinct settings)."""
        estimator = self._estimators.get(settings)
        if estimator is None:
            estimator = clone(self.estimator).set_params(**self._settings_dict(settings))
            with self._lock:
                self._estimators[settings] = estimator
        return estimator

    def _generic_for(self, settings: tuple) -> Any:
        """The estimator scikit-learn's path fits for these settings (within the memory)."""
        if settings == self._own_settings:
            return self._generic
        generic = self._generics.get(settings)
        if generic is None:
            n, p = self.X.shape
            generic = _within_memory(self._estimator_for(settings), self._generic_spare, n, p)
            with self._lock:
                self._generics[settings] = generic
        return generic

    def warm_up(self) -> None:
        """Build this thread's transform and fast scorer and load its compiled kernels now.

        The first score otherwise pays these one-off costs (about a second for Numba); call this
        before timing, or before forking workers so that they inherit the warm state. Scores nothing
        into the cache.
        """
        _, _, scaled = self._transformed(self._checked(self.space.initial))
        scorer = None if self._is_criterion() else self._fast_scorer(scaled, None, None)
        if scorer is not None:
            scorer.score()
            # A fast scorer may leave the kernel of a column change to the first update.
            scorer.warm_up()

    def transform(self, lambdas: Sequence[float]) -> np.ndarray:
        """The standard-scaled transformed training data for ``lambdas`` (a copy), without the
        features the point drops."""
        x = self._checked(self._as_vector(lambdas))
        scaled = self._transformed(x)[2]
        kept = self._kept(x)
        return scaled.copy() if kept is None else scaled[:, kept]

    def _checked(self, lambdas: Sequence[float]) -> np.ndarray:
        lambdas = np.asarray(lambdas, dtype=np.float64)
        if lambdas.shape != (self.space.dim,):
            expected = (
                "one per feature of X"
                if self._plain
                else f"one per parameter ({', '.join(self.space.names[:3])}, …)"
            )
            raise ValueError(
                f"expected {self.space.dim} λ, {expected}, got an array of shape {lambdas.shape}"
            )
        if not np.isfinite(lambdas).all():
            raise ValueError(f"λ must be finite, got {lambdas.tolist()}")
        if len(self._transform_at):
            choices = lambdas[self._transform_at]
            if np.any((choices != np.rint(choices)) | (choices < 0)) or np.any(
                choices >= len(self.transforms)
            ):
                raise ValueError(
                    f"transform entries must be indices into {list(self.transforms)}, got "
                    f"{choices.tolist()}"
                )
        return lambdas

    def _kept(self, x: np.ndarray) -> np.ndarray | None:
        """Which features a point keeps; None when it keeps them all."""
        if self._drop_choice < 0:
            return None
        _, choices = self._features_of(x)
        kept = choices != self._drop_choice
        return None if kept.all() else kept

    def _transformed(self, lambdas: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per thread, keep the last transform and redo only the columns whose λ (or transform)
        changed. A dropped feature's column holds zeros."""
        state = self._local
        lambdas, choices = self._features_of(lambdas)
        if getattr(state, "lambdas", None) is None:
            # C order: scikit-learn copies (or slows down on) Fortran-ordered input.
            state.lambdas = np.full(len(self.names), np.nan)
            state.choices = np.full(len(self.names), -1)
            state.transformed = np.empty(self.values.shape)
            state.scaled = np.empty(self.values.shape)
            state.changed = set()  # columns the fast scorer has not seen yet
        changed = lambdas != state.lambdas
        if choices is not None:
            changed |= choices != state.choices
            state.choices = choices.copy()
        for j in np.flatnonzero(changed):
            state.changed.add(int(j))
            choice = -1 if choices is None else int(choices[j])
            column = self._column(int(j), choice, float(lambdas[j]))
            state.transformed[:, j] = column
            state.scaled[:, j] = _numerics.scale_column(column)
        state.lambdas = lambdas.copy()
        return self.values, state.transformed, state.scaled

    def _scaled_column(self, j: int, lam: float, choice: int = -1) -> np.ndarray:
        """Column j of the scaled matrix for λ_j = `lam` and that transform choice (what
        :meth:`_transformed` stores)."""
        return _numerics.scale_column(self._column(j, choice, lam))

    def _column(self, j: int, choice: int, lam: float) -> np.ndarray:
        """Feature j transformed before scaling: by ``method`` (choice -1) or ``transforms[choice]``;
        a dropped feature is a column of zeros (its scaled column is zeros too)."""
        transform = self.method if choice < 0 else self.transforms[choice]
        if transform == "drop":
            return np.zeros(len(self.X))
        if transform == "identity":
            return self.X[:, j].copy()
        return self._power_column(j, lam, transform)

    def _power_column(self, j: int, lam: float, method: str | None = None) -> np.ndarray:
        method = self.method if method is None else method
        if method != "box-cox":
            return _numerics.power_column(self._power_inputs[method][:, j], lam, method)
        if self._log_columns is None:  # log Z per column, contiguous: searches revisit columns
            self._log_columns = np.ascontiguousarray(np.log(self._power_inputs["box-cox"]).T)
        return _numerics.boxcox_from_log(self._log_columns[j], lam)

    def _score(
        self,
        values: np.ndarray,
        transformed: np.ndarray,
        scaled: np.ndarray,
        lambdas: np.ndarray,
    ) -> float:
        if self._is_criterion():
            return float(self._score_fn(values, transformed, scaled, lambdas))
        if self._plain:
            settings, kept = (), None
        else:
            settings, kept = self._settings_of(lambdas), self._kept(lambdas)
            if kept is not None and not kept.any():
                return self._majority_score()
        fast = self._fast_scorer(scaled, settings, kept)
        if fast is not None:
            score = fast.score()
            if score is not None:
                return float(score)
        return self._generic_score(scaled, settings, kept)

    def _score_sweep(self, points: list[np.ndarray], d: int) -> list[float] | None:
        """Scores of points that differ in coordinate d only, which changes one column, through
        the fast scorer's sweep; None when the fast scorer does not cover the points' settings."""
        j = int(self._feature_at[d])
        _, _, scaled = self._transformed(points[0])
        settings = self._settings_of(points[0])
        # A column of zeros is a dropped feature for k-NN, the one evaluator that shares sweeps.
        scorer = self._fast_scorer(scaled, settings, None)
        if scorer is None:
            return None
        features = [self._features_of(x) for x in points]
        columns = [
            self._scaled_column(j, float(lam[j]), -1 if ch is None else int(ch[j]))
            for lam, ch in features
        ]
        kept = [self._kept(x) for x in points]
        alive = [c for c in range(len(points)) if kept[c] is None or kept[c].any()]
        scores: list[float | None] = [None] * len(points)
        for c in range(len(points)):
            if c not in alive:
                scores[c] = self._majority_score()
        if alive:
            swept = scorer.score_sweep(j, [columns[c] for c in alive])
            for c, score in zip(alive, swept):
                scores[c] = score
        self.budget.reserve("evaluator", scorer.peak_bytes(len(self.names)))
        for c, score in enumerate(scores):
            if score is None:  # a near-tie: scikit-learn decides
                matrix = scaled.copy()
                matrix[:, j] = columns[c]
                scores[c] = self._generic_score(matrix, settings, kept[c])
        return [float(score) for score in scores]

    def _shares_sweeps(self) -> bool:
        return self._evaluator.startswith("knn:")

    @property
    def batch_work(self) -> str:
        """How :meth:`evaluate_batch` shares work between the points of a batch: ``"sweep"``
        (k-NN: the distances over the unswept columns once per sweep), ``"threads"`` (points side
        by side) or ``"sequential"`` (one after another, nothing shared)."""
        if self._shares_sweeps():
            return "sweep"
        return "threads" if self._batch_threads > 1 else "sequential"

    def _is_criterion(self) -> bool:
        return isinstance(self.scoring, str) and self.scoring in CRITERIA

    def _fast_scorer(
        self, scaled: np.ndarray, settings: tuple | None = None, kept: np.ndarray | None = None
    ) -> Any:
        """This thread's exact specialised scorer, synced with ``scaled``, the classifier
        ``settings`` (default: the starting ones) and the features ``kept``; or None (generic
        path) when there is none, or it does not cover those settings or dropped features."""
        if self._scorer_limit is None:
            return None
        state = self._local
        scorer = getattr(state, "fast", None)
        if scorer is None:
            scorer = self._new_fast_scorer() or False
            state.fast = scorer
            state.fast_settings = self._own_settings
            if scorer:
                scorer.reset(scaled)
                state.changed.clear()
        if not scorer:
            return None
        if settings is not None and settings != state.fast_settings:
            if not scorer.adopt(self._estimator_for(settings)):
                return None
            state.fast_settings = settings
        if not scorer.set_kept(kept):
            return None
        for j in sorted(state.changed):
            scorer.set_column(j, scaled[:, j])
        state.changed.clear()
        return scorer

    def _new_fast_scorer(self) -> Any:
        return make_fast_scorer(
            self._estimators[self._own_settings],
            self.y,
            self._score_fn,
            n_features=len(self.names),
            memory_limit=self._scorer_limit,
            n_threads=self.n_threads,
        )

    def _plan_memory(self) -> None:
        """Choose the evaluator and the cache size from footprints, before anything allocates."""
        n, p = self.X.shape
        matrix = n * p * 8
        self.budget.reserve("data", 3 * matrix)  # X, the [1, 2]-scaled values, their logarithms
        if "box-cox" in self.transforms and self.method != "box-cox":
            self.budget.reserve("second transform", 2 * matrix)
        self.budget.reserve("transform", 2 * matrix)  # one thread's transformed and scaled data
        entry = self.space.dim * 8 + _CACHE_ENTRY_BYTES
        cache = max(entry, min(int(_CACHE_SHARE * self.budget.limit), _CACHE_CAP))
        self._cache_capacity = cache // entry
        self.budget.reserve("cache", self._cache_capacity * entry)
        self._scorer_limit: int | None = None
        self._batch_threads = 1
        self._generic = self.estimator
        self._generic_spare = 0
        if self._is_criterion():
            self._evaluator = f"criterion:{self.scoring}"
            # 1NN-MM's blocks of distances and masks (see _criteria.nn_margin).
            self.budget.reserve("evaluator", _NN_BLOCK_ROWS * n * 40)
            return
        scorer = None
        start = self._estimators[self._own_settings]
        if self.fast and self._splits is None:
            # scikit-learn's fit after a near-tie runs beside the fast scorer's state; a rare
            # event, so an SVC's kernel cache gets at most an eighth of the memory there.
            self._generic_spare = self.budget.remaining() // 8
            self._generic = _within_memory(start, self._generic_spare, n, p)
            self.budget.reserve("near-tie fit", _generic_footprint(self._generic, n, p))
            self._scorer_limit = max(0, self.budget.remaining())
            scorer = self._new_fast_scorer()
        if scorer is None:
            self._scorer_limit = None
            self._evaluator = GENERIC
            self.budget.release("near-tie fit")
            self._generic_spare = self.budget.remaining()
            self._generic = _within_memory(start, self._generic_spare, n, p)
            per_thread = _generic_footprint(self._generic, n, p)
        else:
            self._evaluator = scorer.name
            per_thread = scorer.footprint(p)
        self.budget.reserve("evaluator", per_thread)
        side_by_side = self._evaluator in _SIDE_BY_SIDE or (
            self._evaluator == GENERIC and type(self.estimator) is SVC and self._splits is None
        )
        if side_by_side and n >= _SIDE_BY_SIDE_ROWS:
            # Each extra thread of evaluate_batch holds its own transform and evaluator.
            extra_thread = 2 * matrix + per_thread
            affordable = max(0, self.budget.remaining()) // extra_thread
            self._batch_threads = 1 + int(min(self.n_threads - 1, affordable))
            self.budget.reserve("batch threads", (self._batch_threads - 1) * extra_thread)

    def score_features(self, features: np.ndarray) -> float:
        """The objective's classifier score on a ready feature matrix (one row per training sample).

        This is how other transforms (StandardScaler, PowerTransformer, …) are scored the same way
        as a Λ; classifier-free criteria need the Box-Cox internals and are refused here. With a
        subsample, `features` may have a row per scored row or per row of the data given (the
        scored rows are then taken).
        """
        if self._is_criterion():
            raise ValueError(f"scoring {self.scoring!r} scores Box-Cox λ, not arbitrary features")
        if self.rows is not None and len(features) == self.n_samples:
            features = features[self.rows]
        return self._fit_score(features, self._generic)

    def _fit_score(self, features: np.ndarray, estimator: Any) -> float:
        """scikit-learn's fit and predict of ``estimator`` on the scored rows' features."""
        if self._splits is None:
            model = clone(estimator).fit(features, self.y)
            return float(self._score_fn(self.y, model.predict(features)))
        scores = []
        for train, test in self._splits:
            model = clone(estimator).fit(features[train], self.y[train])
            scores.append(self._score_fn(self.y[test], model.predict(features[test])))
        return float(np.mean(scores))

    def _generic_score(
        self, scaled: np.ndarray, settings: tuple, kept: np.ndarray | None
    ) -> float:
        """scikit-learn's score of the scaled matrix without the dropped features."""
        features = scaled if kept is None else scaled[:, kept]
        return self._fit_score(features, self._generic_for(settings))

    def _majority_score(self) -> float:
        """The score of predicting the most frequent class (of the training rows of each fold):
        a point that drops every feature leaves the classifier nothing else."""
        if self._splits is None:
            return float(self._score_fn(self.y, np.full(len(self.y), _majority(self.y))))
        return float(
            np.mean(
                [
                    self._score_fn(self.y[test], np.full(len(test), _majority(self.y[train])))
                    for train, test in self._splits
                ]
            )
        )

    # -- argument resolution ---------------------------------------------------------------
    def _resolve_scoring(self, scoring: Any) -> Callable[..., float]:
        if callable(scoring):
            return scoring
        if scoring in METRICS:
            return METRICS[scoring]
        if scoring in CRITERIA:
            return self._criterion(scoring)
        raise ValueError(
            f"unknown scoring {scoring!r}; choose one of {sorted(METRICS) + list(CRITERIA)} "
            "or pass a callable metric(y_true, y_pred)"
        )

    def _criterion(self, name: str) -> Callable[..., float]:
        from optuna_boxcox import _criteria

        method, y = self.method, self.y
        if name == "ml":
            return lambda v, t, s, lam: _criteria.log_likelihood(v, t, lam, method)
        if name == "pcml":
            return lambda v, t, s, lam: _criteria.per_class_log_likelihood(v, t, lam, y, method)
        if name == "fisher":
            return lambda v, t, s, lam: _criteria.fisher_criterion(s, y)
        return lambda v, t, s, lam: _criteria.nn_margin(s, y)

    def _resolve_cv(
        self, cv: Any, random_state: int | None
    ) -> list[tuple[np.ndarray, np.ndarray]] | None:
        if cv is None or cv == "resubstitution":
            return None
        if isinstance(cv, (int, np.integer)):
            if cv < 2:
                raise ValueError(f"cv must be at least 2 folds, got {cv}")
            cv = StratifiedKFold(int(cv), shuffle=True, random_state=random_state)
        if not hasattr(cv, "split"):
            raise ValueError(f"cv must be None, an int or a scikit-learn splitter, got {cv!r}")
        return [(train, test) for train, test in cv.split(self.X, self.y)]

    def _resolve_bounds(self, bounds: Any, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if bounds is None:
            return default_bounds(start)
        p = len(self.names)
        if hasattr(bounds, "keys"):
            missing = [n for n in self.names if n not in bounds]
            if missing:
                raise ValueError(f"bounds lack the features {missing}")
            pairs = [bounds[n] for n in self.names]
        else:
            pairs = [bounds] * p
        low = np.array([float(lo) for lo, _ in pairs])
        high = np.array([float(hi) for _, hi in pairs])
        if np.any(low >= high):
            raise ValueError(
                f"λ bounds must be given as (low, high) with low < high, got {bounds}"
            )
        return low, high


def _resolve_transforms(transforms: Sequence[str] | None, method: str) -> tuple[str, ...]:
    if transforms is None:
        return (method,)
    if isinstance(transforms, str):
        transforms = [part.strip() for part in transforms.split(",")]
    transforms = tuple(transforms)
    unknown = [t for t in transforms if t not in TRANSFORMS]
    if unknown or not transforms:
        raise ValueError(f"transforms must be among {TRANSFORMS}, got {list(transforms)}")
    if len(set(transforms)) != len(transforms):
        raise ValueError(f"transforms must not repeat a choice, got {list(transforms)}")
    if method not in transforms:
        raise ValueError(
            f"method {method!r} must be one of transforms {list(transforms)}: the search starts "
            "from it"
        )
    return transforms


def _resolve_estimator_params(
    estimator_params: Mapping[str, BaseDistribution] | None, estimator: Any
) -> dict[str, BaseDistribution]:
    if not estimator_params:
        return {}
    own = estimator.get_params() if hasattr(estimator, "get_params") else {}
    unknown = [n for n in estimator_params if n not in own]
    if unknown:
        raise ValueError(
            f"estimator_params {unknown} are not parameters of {type(estimator).__name__} "
            f"(it has {sorted(own)[:8]}…)"
        )
    wrong = [
        n
        for n, d in estimator_params.items()
        if not isinstance(d, (FloatDistribution, IntDistribution, CategoricalDistribution))
    ]
    if wrong:
        raise ValueError(
            f"estimator_params {wrong} must be Optuna distributions (FloatDistribution, "
            "IntDistribution or CategoricalDistribution)"
        )
    return dict(estimator_params)


def _resolve_objectives(objectives: Sequence[str], transforms: tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(objectives, str):
        objectives = [part.strip() for part in objectives.split(",")]
    objectives = tuple(objectives)
    if objectives not in (("score",), ("score", "n_features")):
        raise ValueError(
            f"objectives must be ('score',) or ('score', 'n_features'), got {list(objectives)}"
        )
    if "n_features" in objectives and "drop" not in transforms:
        raise ValueError(
            "objectives 'n_features' needs 'drop' among transforms (else every point keeps all "
            "features)"
        )
    return objectives


def _starting_value(distribution: BaseDistribution, own: Any) -> Any:
    """The estimator's own value of a setting if the distribution holds it, else its first."""
    if distribution_contains(distribution, own):
        return own
    if isinstance(distribution, CategoricalDistribution):
        return distribution.choices[0]
    return distribution.low


def _same_value(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except (ValueError, TypeError):
        return False


def _suggest(trial: optuna.Trial, name: str, distribution: BaseDistribution) -> Any:
    """``trial.suggest_*`` for one distribution."""
    if isinstance(distribution, CategoricalDistribution):
        return trial.suggest_categorical(name, distribution.choices)
    if isinstance(distribution, IntDistribution):
        return trial.suggest_int(
            name, distribution.low, distribution.high, step=distribution.step, log=distribution.log
        )
    return trial.suggest_float(
        name, distribution.low, distribution.high, step=distribution.step, log=distribution.log
    )


def _majority(y: np.ndarray) -> Any:
    """The most frequent label (the smallest among equally frequent ones)."""
    labels, counts = np.unique(y, return_counts=True)
    return labels[int(np.argmax(counts))]


def _sweep_column(points: np.ndarray) -> int | None:
    """The one column in which all rows of `points` may differ (the others equal), else None."""
    varies = np.flatnonzero(np.any(points != points[0], axis=0))
    return int(varies[0]) if len(varies) == 1 else None


def _generic_footprint(estimator: Any, n: int, p: int) -> int:
    """Bytes of scikit-learn's fit and predict on n × p data, roughly: copies of the data and the
    predictions, and an SVC's kernel cache."""
    cache = svc_cache_bytes(estimator.cache_size, n) if type(estimator) is SVC else 0
    return 3 * n * p * 8 + 4 * n * 8 + cache


def _within_memory(estimator: Any, spare: int, n: int, p: int) -> Any:
    """The estimator for the generic path: an SVC whose kernel cache would not fit `spare` bytes
    gets a smaller ``cache_size`` (libsvm then recomputes kernel columns instead of keeping them:
    the same solver steps, the same model, only slower); any other estimator as it is."""
    needed = _generic_footprint(estimator, n, p)
    if type(estimator) is not SVC or needed <= spare:
        return estimator
    without_cache = needed - svc_cache_bytes(estimator.cache_size, n)
    cache_mb = max(_MIN_SVC_CACHE_MB, (spare - without_cache) / 1024**2)
    return clone(estimator).set_params(cache_size=cache_mb)


def _resolve_subsample(subsample: Any, y: np.ndarray) -> int | None:
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


def _feature_names(X: Any) -> list[str]:
    columns = getattr(X, "columns", None)
    if columns is not None:
        names = [str(c) for c in columns]
        if len(set(names)) == len(names):
            return names
        raise ValueError("X has duplicate column names; each λ parameter is named after one")
    n_features = np.shape(X)[1] if np.ndim(X) == 2 else 0
    return [f"lambda_{j}" for j in range(n_features)]
