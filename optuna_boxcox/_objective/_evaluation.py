"""Which evaluator scores a point, chosen once within the memory limit, and the estimators of the
classifier settings a search visits."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from sklearn.base import clone

from optuna_boxcox._math._criteria import NN_BLOCK_ROWS
from optuna_boxcox._math._jit import parallel_map
from optuna_boxcox._objective._evaluators import GENERIC
from optuna_boxcox._objective._evaluators import evaluators_of
from optuna_boxcox._objective._evaluators import make_fast_scorer
from optuna_boxcox._objective._points import sweep_column
from optuna_boxcox._objective._score_cache import ENTRY_BYTES

if TYPE_CHECKING:
    from collections.abc import Callable

    from optuna_boxcox._objective._columns import TransformedColumns
    from optuna_boxcox._objective._memory import MemoryBudget
    from optuna_boxcox._objective._points import Points
    from optuna_boxcox._objective._scoring import Scoring

#: Share of the memory limit the score cache may take (~150,000 scores of 30 λ by default).
_CACHE_SHARE = 1 / 64
_CACHE_CAP = 256 * 1024**2
#: Rows below which side-by-side threads cost more than they save (a fit takes about a
#: millisecond, of which the transform's Python part holds the GIL).
_SIDE_BY_SIDE_ROWS = 2000
#: The smallest kernel cache (MB) the generic SVC gets under a tight memory limit.
_MIN_SVC_CACHE_MB = 1.0


class Evaluation:
    """The evaluator of one objective, the memory it plans for before anything allocates, and the
    score of a point by it.

    The fastest exact evaluator whose stated footprint fits the budget is chosen (a fast scorer
    of :mod:`optuna_boxcox._objective._evaluators`, else scikit-learn's fit and predict with an SVC's kernel
    cache cut to fit); the score cache and side-by-side batch threads get what their share allows.
    Each thread keeps its own fast scorer, synced with its transformed columns.

    Args:
        estimator: The classifier.
        scoring: How features are scored.
        points: The search's points (its settings and the starting one).
        columns: The transformed data of each thread.
        budget: The objective's memory budget; reservations are made in it.
        n_threads: Threads of the kernels and of side-by-side batches.
        fast: Whether fast scorers may be used.
    """

    def __init__(
        self,
        estimator: Any,
        scoring: Scoring,
        points: Points,
        columns: TransformedColumns,
        budget: MemoryBudget,
        *,
        n_threads: int,
        fast: bool,
    ) -> None:
        self.estimator, self.scoring, self.points = estimator, scoring, points
        self.columns, self.shape = columns, columns.X.shape
        self.budget, self.n_threads, self.fast = budget, n_threads, fast
        self.own_settings = points.settings_of(points.space.initial)
        self._estimators: dict[tuple, Any] = {self.own_settings: self._start_estimator()}
        self._generics: dict[tuple, Any] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._plan()

    @property
    def name(self) -> str:
        """The evaluator (see :attr:`~optuna_boxcox.BoxCoxObjective.evaluator`)."""
        return self._evaluator

    @property
    def shares_sweeps(self) -> bool:
        return self._shares_sweeps

    @property
    def generic(self) -> Any:
        """The estimator scikit-learn's path fits at the starting settings (within the memory)."""
        return self._generic

    def _start_estimator(self) -> Any:
        """The estimator with the starting settings (the estimator itself when they are its own)."""
        settings = self.points.settings_dict(self.own_settings)
        own = self.estimator.get_params()
        if all(name in own and _same_value(own[name], v) for name, v in settings.items()):
            return self.estimator
        return clone(self.estimator).set_params(**settings)

    def _plan(self) -> None:
        """Choose the evaluator and the cache size from footprints, before anything allocates."""
        n, p = self.shape
        transforms, method = self.points.transforms, self.points.method
        matrix = n * p * 8
        self.budget.reserve("data", 3 * matrix)  # X, the [1, 2]-scaled values, their logarithms
        if "box-cox" in transforms and method != "box-cox":
            self.budget.reserve("second transform", 2 * matrix)
        self.budget.reserve("transform", 2 * matrix)  # one thread's transformed and scaled data
        entry = self.points.space.dim * 8 + ENTRY_BYTES
        cache = max(entry, min(int(_CACHE_SHARE * self.budget.limit), _CACHE_CAP))
        #: Scores the cache may keep.
        self.cache_capacity = cache // entry
        self.budget.reserve("cache", self.cache_capacity * entry)
        self._scorer_limit: int | None = None
        #: Threads :meth:`~optuna_boxcox.BoxCoxObjective.evaluate_batch` scores points on.
        self.batch_threads = 1
        self._generic = self.estimator
        self._generic_spare = 0
        self._shares_sweeps = False
        if self.scoring.is_criterion:
            self._evaluator = f"criterion:{self.scoring.scoring}"
            # 1NN-MM's blocks of distances and masks (see _criteria.nn_margin).
            self.budget.reserve("evaluator", NN_BLOCK_ROWS * n * 40)
            return
        scorer = None
        start = self._estimators[self.own_settings]
        resubstitution = self.scoring.splits is None
        if self.fast and resubstitution:
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
            self._shares_sweeps = scorer.shares_sweeps
            per_thread = scorer.footprint(p)
        self.budget.reserve("evaluator", per_thread)
        # Candidates scored on threads side by side (evaluate_batch): where the work runs without
        # the GIL and shares nothing between points (the registry's traits).
        side_by_side = (scorer is not None and scorer.side_by_side) or (
            self._evaluator == GENERIC
            and evaluators_of(self.estimator).generic_side_by_side
            and resubstitution
        )
        if side_by_side and n >= _SIDE_BY_SIDE_ROWS:
            # Each extra thread of evaluate_batch holds its own transform and evaluator.
            extra_thread = 2 * matrix + per_thread
            affordable = max(0, self.budget.remaining()) // extra_thread
            self.batch_threads = 1 + int(min(self.n_threads - 1, affordable))
            self.budget.reserve("batch threads", (self.batch_threads - 1) * extra_thread)

    def _new_fast_scorer(self) -> Any:
        return make_fast_scorer(
            self._estimators[self.own_settings],
            self.scoring.y,
            self.scoring.function,
            n_features=len(self.points.names),
            memory_limit=self._scorer_limit,
            n_threads=self.n_threads,
        )

    def fast_scorer(
        self, scaled: np.ndarray, settings: tuple | None = None, kept: np.ndarray | None = None
    ) -> Any:
        """This thread's exact specialised scorer, synced with ``scaled`` (this thread's matrix of
        :attr:`columns`), the classifier ``settings`` (default: the starting ones) and the features
        ``kept``; or None (generic path) when there is none, or it does not cover those settings
        or dropped features."""
        if self._scorer_limit is None:
            return None
        state = self._local
        scorer = getattr(state, "fast", None)
        if scorer is None:
            scorer = self._new_fast_scorer() or False
            state.fast = scorer
            state.settings = self.own_settings
            if scorer:
                scorer.reset(scaled)
                self.columns.take_changed()
        if not scorer:
            return None
        # What the budget has left now: the rungs built since the plan hold their share of it.
        scorer.memory_limit = self._scorer_room()
        if settings is not None and settings != state.settings:
            if not scorer.adopt(self.estimator_for(settings)):
                return None
            state.settings = settings
        if not scorer.set_kept(kept):
            return None
        for j in self.columns.take_changed():
            scorer.set_column(j, scaled[:, j])
        return scorer

    def _scorer_room(self) -> int:
        """Bytes a fast scorer may hold now: its own reservation and what the budget has left."""
        return max(0, self.budget.remaining() + self.budget.reserved.get("evaluator", 0))

    def score(self, x: np.ndarray) -> float:
        """The score of a checked point not in the cache."""
        values, transformed, scaled = self.columns.of(x)
        if self.scoring.is_criterion:
            lambdas, _ = self.points.features_of(x)
            return self.scoring.criterion(values, transformed, scaled, lambdas)
        if self.points.plain:
            settings, kept = (), None
        else:
            settings, kept = self.points.settings_of(x), self.points.kept(x)
            if kept is not None and not kept.any():
                return self.scoring.majority_score()
        fast = self.fast_scorer(scaled, settings, kept)
        if fast is not None:
            score = fast.score()
            if score is not None:
                return float(score)
        return self.generic_score(scaled, settings, kept)

    def score_batch(
        self, points: list[np.ndarray], score_one: Callable[[np.ndarray], float]
    ) -> list[float]:
        """Scores of distinct points, sharing work where they allow it: a coordinate sweep
        through the fast scorer's :meth:`score_sweep` (k-NN's distances and naive Bayes's other
        columns once; for the others, the sweep's columns transformed together), except where
        the points go side by side on :attr:`batch_threads` threads; else one after another.
        ``score_one`` scores (and caches) a single point."""
        if len(points) >= 2:
            column = sweep_column(np.array(points))
            swept = None
            if (
                column is not None
                and self._scorer_limit is not None  # a fast scorer, not scikit-learn's path
                and (self.shares_sweeps or self.batch_threads == 1)
                and self.points.feature_at[column] >= 0
            ):
                swept = self.score_sweep(points, column)
            if swept is not None:
                return swept
            if self.batch_threads > 1:
                return parallel_map(score_one, points, self.batch_threads)
        return [score_one(x) for x in points]

    def score_sweep(self, points: list[np.ndarray], d: int) -> list[float] | None:
        """Scores of points that differ in coordinate d only, which changes one column, through
        the fast scorer's sweep; None when the fast scorer does not cover the points' settings."""
        j = int(self.points.feature_at[d])
        _, _, scaled = self.columns.of(points[0])
        settings = self.points.settings_of(points[0])
        kept = [self.points.kept(x) for x in points]
        # A column of zeros is a dropped feature for k-NN, the scorer that shares sweeps. Any
        # other is told which columns are kept (an SVC's gamma="auto" counts them), which must
        # then be the same for every point.
        common = None
        if not self.shares_sweeps:
            common = kept[0]
            if any((k is None) != (common is None) or not np.array_equal(k, common) for k in kept):
                return None
        scorer = self.fast_scorer(scaled, settings, common)
        if scorer is None:
            return None
        features = [self.points.features_of(x) for x in points]
        columns = self.columns.scaled_columns(
            j,
            np.array([float(lam[j]) for lam, _ in features]),
            np.array([-1 if ch is None else int(ch[j]) for _, ch in features]),
        )
        alive = [c for c in range(len(points)) if kept[c] is None or kept[c].any()]
        scores: list[float | None] = [None] * len(points)
        for c in range(len(points)):
            if c not in alive:
                scores[c] = self.scoring.majority_score()
        if alive:
            swept = scorer.score_sweep(j, [columns[c] for c in alive])
            for c, score in zip(alive, swept):
                scores[c] = score
        self.budget.reserve("evaluator", scorer.peak_bytes(len(self.points.names)))
        for c, score in enumerate(scores):
            if score is None:  # a near-tie: scikit-learn decides
                matrix = scaled.copy()
                matrix[:, j] = columns[c]
                scores[c] = self.generic_score(matrix, settings, kept[c])
        return [float(score) for score in scores]

    def warm_up(self) -> None:
        """Build this thread's transform and fast scorer and run its compiled kernels once."""
        _, _, scaled = self.columns.of(self.points.checked(self.points.space.initial))
        scorer = None if self.scoring.is_criterion else self.fast_scorer(scaled)
        if scorer is not None:
            scorer.score()
            # A fast scorer may leave the kernel of a column change to the first update.
            scorer.warm_up()

    def estimator_for(self, settings: tuple) -> Any:
        """The estimator with these settings (made once per distinct settings)."""
        estimator = self._estimators.get(settings)
        if estimator is None:
            estimator = clone(self.estimator).set_params(**self.points.settings_dict(settings))
            with self._lock:
                self._estimators[settings] = estimator
        return estimator

    def generic_for(self, settings: tuple) -> Any:
        """The estimator scikit-learn's path fits for these settings (within the memory)."""
        if settings == self.own_settings:
            return self._generic
        generic = self._generics.get(settings)
        if generic is None:
            n, p = self.shape
            generic = _within_memory(self.estimator_for(settings), self._generic_spare, n, p)
            with self._lock:
                self._generics[settings] = generic
        return generic

    def generic_score(self, scaled: np.ndarray, settings: tuple, kept: np.ndarray | None) -> float:
        """scikit-learn's score of the scaled matrix without the dropped features."""
        features = scaled if kept is None else scaled[:, kept]
        return self.scoring.fit_score(features, self.generic_for(settings))


def _same_value(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except (ValueError, TypeError):
        return False


def _generic_footprint(estimator: Any, n: int, p: int) -> int:
    """Bytes of scikit-learn's fit and predict on n × p data, roughly: copies of the data and the
    predictions, and an SVC's kernel cache."""
    cache_bytes = evaluators_of(estimator).generic_cache_bytes
    cache = 0 if cache_bytes is None else cache_bytes(estimator, n)
    return 3 * n * p * 8 + 4 * n * 8 + cache


def _within_memory(estimator: Any, spare: int, n: int, p: int) -> Any:
    """The estimator for the generic path: an SVC whose kernel cache would not fit `spare` bytes
    gets a smaller ``cache_size`` (libsvm then recomputes kernel columns instead of keeping them:
    the same solver steps, the same model, only slower); any other estimator as it is."""
    needed = _generic_footprint(estimator, n, p)
    cache_bytes = evaluators_of(estimator).generic_cache_bytes
    if cache_bytes is None or needed <= spare:
        return estimator
    without_cache = needed - cache_bytes(estimator, n)
    cache_mb = max(_MIN_SVC_CACHE_MB, (spare - without_cache) / 1024**2)
    return clone(estimator).set_params(cache_size=cache_mb)
