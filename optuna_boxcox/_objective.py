"""The callable an Optuna study optimises: data, transform and classifier joined (SPEC §2)."""

from __future__ import annotations

from collections.abc import Callable
import threading
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
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
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._space import SPACE_ATTR
from optuna_boxcox._space import LambdaSpace
from optuna_boxcox._space import default_bounds
from optuna_boxcox._transform import _check_features

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    import optuna

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

        if method == "box-cox":
            # One line naming a column whose few extreme values would squeeze the rest together.
            _numerics.warn_crowded_columns(self.X, self.names, stacklevel=2)
            # From all rows: with a subsample, a λ still means the transform of all the data.
            self.data_min, self.data_range = _numerics.fit_range(self.X)
            values = _numerics.range_standardise(self.X, self.data_min, self.data_range)
        else:
            values = self.X
        mle = _numerics.mle_lambdas(values, method)
        if self.subsample is not None:
            self.rows = stratified_subsample(self.y, self.subsample, random_state)
            self.X, self.y, values = self.X[self.rows], self.y[self.rows], values[self.rows]
        self.values = values
        self._splits = self._resolve_cv(cv, random_state)
        self.cv = cv
        start = (
            mle if initial_params is None else np.array([initial_params[n] for n in self.names])
        )
        low, high = self._resolve_bounds(bounds, start)
        self.space = LambdaSpace(tuple(self.names), low, high, start)
        self.mle_lambdas = np.clip(mle, low, high)

        self._cache: dict[bytes, float] = {}
        self._log_columns: np.ndarray | None = None
        self._lock = threading.Lock()
        self._local = threading.local()
        self._registered: set[tuple[int, int]] = set()
        self.n_evaluations = 0  # evaluations that fitted a classifier (cache misses)
        self._plan_memory()

    # -- the λ space -----------------------------------------------------------------------
    @property
    def param_names(self) -> list[str]:
        return list(self.space.names)

    @property
    def search_space(self) -> dict[str, optuna.distributions.FloatDistribution]:
        return self.space.distributions()

    @property
    def initial_params(self) -> dict[str, float]:
        """The search's starting point G (default: per-feature Box-Cox MLE), as a params dict."""
        return self.space.to_params(self.space.initial)

    @property
    def mle_params(self) -> dict[str, float]:
        """The per-feature maximum-likelihood λ (clipped into the domain), as a params dict."""
        return self.space.to_params(self.mle_lambdas)

    def to_params(self, lambdas: Sequence[float]) -> dict[str, float]:
        """λ vector in feature order → params dict."""
        if len(lambdas) != self.space.dim:
            raise ValueError(f"expected {self.space.dim} λ, got {len(lambdas)}")
        return self.space.to_params(lambdas)

    def to_lambdas(self, params: Mapping[str, float]) -> np.ndarray:
        """Params dict (e.g. ``study.best_params``) → λ vector in feature order."""
        return self.space.to_vector(params)

    def register(self, study: optuna.Study) -> None:
        """Record the λ space in the study so samplers in every worker can find it, and what the
        objective chose (:meth:`describe`, user attribute ``boxcox_evaluator``).

        Called automatically on the first trial; refuses a study that already holds another space.
        """
        key = (id(storage_of(study)), study_id_of(study))
        if key in self._registered:
            return
        mine = self.space.to_attr()
        attrs = study.user_attrs
        theirs = attrs.get(SPACE_ATTR)
        if theirs is None:
            study.set_user_attr(SPACE_ATTR, mine)
        elif theirs["names"] != mine["names"] or not (
            np.allclose(theirs["low"], mine["low"]) and np.allclose(theirs["high"], mine["high"])
        ):
            raise ValueError(
                f"study {study.study_name!r} was created for another λ search space "
                f"({len(theirs['names'])} parameters {theirs['names'][:3]}…); "
                "use a new study name for this data"
            )
        # What this process's objective chose (evaluator, memory, subsample), for the dashboard.
        described = self.describe()
        if attrs.get(DESCRIPTION_ATTR) != described:
            study.set_user_attr(DESCRIPTION_ATTR, described)
        self._registered.add(key)

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, trial: optuna.Trial) -> float:
        self.register(trial.study)
        lambdas = np.array(
            [
                trial.suggest_float(n, lo, hi)
                for n, lo, hi in zip(self.space.names, self.space.low, self.space.high)
            ]
        )
        return self.evaluate(lambdas)

    @property
    def metric_name(self) -> str:
        """The scoring's name (``accuracy``, ``ml``, …), which names the study's objective."""
        if isinstance(self.scoring, str):
            return self.scoring
        return getattr(self.scoring, "__name__", "score")

    def evaluate(self, lambdas: Sequence[float] | Mapping[str, float]) -> float:
        """Score of one Λ (cached: a Λ scored before is not refitted)."""
        lambdas = self._checked(self._as_vector(lambdas))
        key = lambdas.tobytes()
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
        keys = [x.tobytes() for x in lambdas]
        scores: dict[bytes, float] = {}
        with self._lock:
            for key in keys:
                if key in self._cache:
                    scores[key] = self._cache[key]
        todo = list({key: x for key, x in zip(keys, lambdas) if key not in scores}.items())
        if len(todo) >= 2:
            column = _sweep_column(np.array([x for _, x in todo]))
            if column is not None and self._shares_sweeps():
                for (key, _), score in zip(todo, self._score_sweep([x for _, x in todo], column)):
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
            "n_features": int(self.space.dim),
            "n_threads": int(self.n_threads),
            "batch_threads": int(self._batch_threads),
            "cache_capacity": int(self._cache_capacity),
        }

    def cached_score(self, lambdas: Sequence[float]) -> float | None:
        """The score of a Λ scored before (here or reported by :meth:`remember_score`), else None."""
        key = self._checked(lambdas).tobytes()
        with self._lock:
            return self._cache.get(key)

    def remember_score(self, lambdas: Sequence[float], score: float) -> None:
        """Record a score computed elsewhere (a worker process) as if evaluated here."""
        key = self._checked(lambdas).tobytes()
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
            return self.to_lambdas(lambdas)
        return lambdas

    def warm_up(self) -> None:
        """Build this thread's transform and fast scorer and load its compiled kernels now.

        The first score otherwise pays these one-off costs (about a second for Numba); call this
        before timing, or before forking workers so that they inherit the warm state. Scores nothing
        into the cache.
        """
        _, _, scaled = self._transformed(self._checked(self.space.initial))
        scorer = None if self._is_criterion() else self._fast_scorer(scaled)
        if scorer is not None:
            scorer.score()
            # A fast scorer may leave the kernel of a column change to the first update.
            scorer.warm_up()

    def transform(self, lambdas: Sequence[float]) -> np.ndarray:
        """The standard-scaled transformed training data for ``lambdas`` (a copy)."""
        return self._transformed(self._checked(lambdas))[2].copy()

    def _checked(self, lambdas: Sequence[float]) -> np.ndarray:
        lambdas = np.asarray(lambdas, dtype=np.float64)
        if lambdas.shape != (self.space.dim,):
            raise ValueError(
                f"expected {self.space.dim} λ, one per feature of X, got an array of shape {lambdas.shape}"
            )
        if not np.isfinite(lambdas).all():
            raise ValueError(f"λ must be finite, got {lambdas.tolist()}")
        return lambdas

    def _transformed(self, lambdas: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per thread, keep the last transform and redo only the columns whose λ changed."""
        state = self._local
        if getattr(state, "lambdas", None) is None:
            # C order: scikit-learn copies (or slows down on) Fortran-ordered input.
            state.lambdas = np.full(self.space.dim, np.nan)
            state.transformed = np.empty(self.values.shape)
            state.scaled = np.empty(self.values.shape)
            state.changed = set()  # columns the fast scorer has not seen yet
        for j in np.flatnonzero(lambdas != state.lambdas):
            state.changed.add(int(j))
            column = self._power_column(int(j), float(lambdas[j]))
            state.transformed[:, j] = column
            state.scaled[:, j] = _numerics.scale_column(column)
        state.lambdas = lambdas.copy()
        return self.values, state.transformed, state.scaled

    def _scaled_column(self, j: int, lam: float) -> np.ndarray:
        """Column j of the scaled matrix for λ_j = `lam` (what :meth:`_transformed` stores)."""
        return _numerics.scale_column(self._power_column(j, lam))

    def _power_column(self, j: int, lam: float) -> np.ndarray:
        if self.method != "box-cox":
            return _numerics.power_column(self.values[:, j], lam, self.method)
        if self._log_columns is None:  # log Z per column, contiguous: searches revisit columns
            self._log_columns = np.ascontiguousarray(np.log(self.values).T)
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
        fast = self._fast_scorer(scaled)
        if fast is not None:
            score = fast.score()
            if score is not None:
                return float(score)
        return self.score_features(scaled)

    def _score_sweep(self, points: list[np.ndarray], j: int) -> list[float]:
        """Scores of points that differ in column j only, through the fast scorer's sweep."""
        _, _, scaled = self._transformed(points[0])
        scorer = self._fast_scorer(scaled)
        columns = [self._scaled_column(j, float(x[j])) for x in points]
        scores = scorer.score_sweep(j, columns)
        self.budget.reserve("evaluator", scorer.peak_bytes(self.space.dim))
        for c, score in enumerate(scores):
            if score is None:  # a near-tie: scikit-learn decides
                features = scaled.copy()
                features[:, j] = columns[c]
                scores[c] = self.score_features(features)
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

    def _fast_scorer(self, scaled: np.ndarray) -> Any:
        """This thread's exact specialised scorer, synced with ``scaled``, or None (generic path)."""
        if self._scorer_limit is None:
            return None
        state = self._local
        scorer = getattr(state, "fast", None)
        if scorer is None:
            scorer = self._new_fast_scorer() or False
            state.fast = scorer
            if scorer:
                scorer.reset(scaled)
                state.changed.clear()
        if not scorer:
            return None
        for j in sorted(state.changed):
            scorer.set_column(j, scaled[:, j])
        state.changed.clear()
        return scorer

    def _new_fast_scorer(self) -> Any:
        return make_fast_scorer(
            self.estimator,
            self.y,
            self._score_fn,
            n_features=self.space.dim,
            memory_limit=self._scorer_limit,
            n_threads=self.n_threads,
        )

    def _plan_memory(self) -> None:
        """Choose the evaluator and the cache size from footprints, before anything allocates."""
        n, p = self.X.shape
        matrix = n * p * 8
        self.budget.reserve("data", 3 * matrix)  # X, the [1, 2]-scaled values, their logarithms
        self.budget.reserve("transform", 2 * matrix)  # one thread's transformed and scaled data
        entry = p * 8 + _CACHE_ENTRY_BYTES
        cache = max(entry, min(int(_CACHE_SHARE * self.budget.limit), _CACHE_CAP))
        self._cache_capacity = cache // entry
        self.budget.reserve("cache", self._cache_capacity * entry)
        self._scorer_limit: int | None = None
        self._batch_threads = 1
        self._generic = self.estimator
        if self._is_criterion():
            self._evaluator = f"criterion:{self.scoring}"
            # 1NN-MM's blocks of distances and masks (see _criteria.nn_margin).
            self.budget.reserve("evaluator", _NN_BLOCK_ROWS * n * 40)
            return
        scorer = None
        if self.fast and self._splits is None:
            # scikit-learn's fit after a near-tie runs beside the fast scorer's state; a rare
            # event, so an SVC's kernel cache gets at most an eighth of the memory there.
            self._generic = _within_memory(self.estimator, self.budget.remaining() // 8, n, p)
            self.budget.reserve("near-tie fit", _generic_footprint(self._generic, n, p))
            self._scorer_limit = max(0, self.budget.remaining())
            scorer = self._new_fast_scorer()
        if scorer is None:
            self._scorer_limit = None
            self._evaluator = GENERIC
            self.budget.release("near-tie fit")
            self._generic = _within_memory(self.estimator, self.budget.remaining(), n, p)
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
        if self._splits is None:
            model = clone(self._generic).fit(features, self.y)
            return float(self._score_fn(self.y, model.predict(features)))
        scores = []
        for train, test in self._splits:
            model = clone(self._generic).fit(features[train], self.y[train])
            scores.append(self._score_fn(self.y[test], model.predict(features[test])))
        return float(np.mean(scores))

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
