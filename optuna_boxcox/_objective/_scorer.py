"""What scores points of a prepared experiment: its evaluator, each thread's transformed data and
the scores it has computed, within one memory budget.

An :class:`~._experiment.Experiment` never changes; a :class:`Scorer` holds all the state a
search builds up on it (per-thread transformed columns, the cache, the fast scorers), so several
scorers of one experiment never meet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from optuna_boxcox._math._jit import resolve_threads
from optuna_boxcox._objective._columns import TransformedColumns
from optuna_boxcox._objective._evaluation import Evaluation
from optuna_boxcox._objective._memory import MemoryBudget
from optuna_boxcox._objective._memory import MemoryLimitTooSmall
from optuna_boxcox._objective._memory import parse_memory
from optuna_boxcox._objective._memory import round_up_size
from optuna_boxcox._objective._score_cache import ScoreCache

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Sequence

    from optuna_boxcox._objective._experiment import Experiment

#: Plans tried in search of the least limit that fits; each adds only a share of the previous
#: increase (the cache's, or another evaluator's), so the search ends after two or three.
_REPLANS = 8


def least_limit(planned: Callable[[int], int], start: int) -> int:
    """The least limit, rounded up as a message writes it, whose plan fits, from ``start`` (what
    a smaller limit planned): ``planned(limit)`` is what a plan under ``limit`` reserves, and a
    larger limit may plan more (a larger cache, another evaluator), so it is planned again
    until it fits."""
    limit = start
    for _ in range(_REPLANS):
        limit = parse_memory(round_up_size(limit))
        used = planned(limit)
        if used <= limit:
            break
        limit = used
    return limit


class Scorer:
    """Scores of points of ``experiment`` (vectors checked by its ``points``), cached.

    Args:
        experiment: What is scored.
        memory_limit: Bytes its evaluator, transformed data and cache may take (as in
            :class:`~optuna_boxcox.BoxCoxObjective`); a limit given that they cannot fit is
            refused (:class:`~._memory.MemoryLimitTooSmall`, with the least that fits).
        n_threads: Threads of the fast kernels and of side-by-side batches (None or -1: every
            core).
        fast: Whether fast scorers may be used.
    """

    def __init__(
        self,
        experiment: Experiment,
        *,
        memory_limit: int | str | None = None,
        n_threads: int | None = 1,
        fast: bool = True,
    ) -> None:
        self.experiment = experiment
        self.n_threads = resolve_threads(n_threads)
        self.budget = MemoryBudget(memory_limit)
        self.fast = fast
        self.columns = TransformedColumns(
            experiment.X, experiment.values, experiment.power_inputs, experiment.points
        )
        self.evaluation = self._planned(self.budget)
        if memory_limit is not None and self.budget.used > self.budget.limit:
            raise MemoryLimitTooSmall(
                memory_limit,
                self._least_limit(),
                *experiment.X.shape,
                type(experiment.estimator).__name__,
            )
        self.cache = ScoreCache(self.evaluation.cache_capacity)

    def _planned(self, budget: MemoryBudget) -> Evaluation:
        """The evaluation planned within ``budget`` (its reservations made, nothing allocated)."""
        experiment = self.experiment
        return Evaluation(
            experiment.estimator,
            experiment.score_rule,
            experiment.points,
            self.columns,
            budget,
            n_threads=self.n_threads,
            fast=self.fast,
        )

    def planned_bytes(self, limit: int) -> int:
        """Bytes a plan under ``limit`` reserves (planned afresh: nothing allocated, nothing of
        this scorer changed)."""
        budget = MemoryBudget(limit)
        self._planned(budget)
        return budget.used

    def _least_limit(self) -> int:
        return least_limit(self.planned_bytes, self.budget.used)

    def evaluate(self, lambdas: Any) -> float:
        """Score of one Λ (cached: a Λ scored before is not refitted).

        With transform or setting coordinates, a point is their whole vector (or a params dict);
        a vector of one λ per feature stands for the point with those λ and the starting transform
        and settings.
        """
        return self._score(self.experiment.points.vector(lambdas))

    def _score(self, x: np.ndarray) -> float:
        key = self.experiment.points.key(x)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        return self.cache.store(key, self.evaluation.score(x))

    def evaluate_batch(self, points: Sequence[Any]) -> list[float]:
        """Scores of several Λ, in order: the same numbers as :meth:`evaluate` on each, the same
        cache.

        Work is shared where the points allow it. The points of a coordinate sweep (SPEC §4)
        differ in one column j only: k-NN then computes the distances over all other columns
        once, block by block, and scores every candidate from them. Classifiers without shared
        work (the perceptron, SVC) score the points side by side on up to ``n_threads`` threads,
        as far as the memory limit allows one state per thread; the rest one after another.
        """
        points_ = self.experiment.points
        vectors = [points_.vector(x) for x in points]
        keys = [points_.key(x) for x in vectors]
        scores = self.cache.found(keys)
        todo = list({key: x for key, x in zip(keys, vectors) if key not in scores}.items())
        found = self.evaluation.score_batch([x for _, x in todo], self._score)
        for (key, _), score in zip(todo, found):
            scores[key] = self.cache.store(key, score)  # _score stored it already: no-op
        return [scores[key] for key in keys]

    @property
    def n_evaluations(self) -> int:
        """Scores computed (cache misses that fitted a classifier) or remembered from elsewhere."""
        return self.cache.n_stored

    def cached_score(self, lambdas: Sequence[float]) -> float | None:
        """The score of a Λ scored before (here or reported by :meth:`remember_score`), else
        None."""
        return self.cache.get(self.experiment.points.key(self.experiment.points.checked(lambdas)))

    def remember_score(self, lambdas: Sequence[float], score: float) -> None:
        """Record a score computed elsewhere (a worker process) as if evaluated here."""
        points = self.experiment.points
        self.cache.store(points.key(points.checked(lambdas)), float(score))

    @property
    def evaluator(self) -> str:
        """How a Λ is scored here: ``"knn:incremental"``, ``"knn:blockwise"``,
        ``"svc:precomputed"``, ``"svc:blockwise"``, ``"gaussian-nb"``, ``"sgd"``, ``"logistic"``,
        ``"ridge"``, ``"criterion:<name>"`` or ``"sklearn"`` (scikit-learn's fit and predict),
        chosen once from the classifier, the scoring and the memory limit (the user guide's
        "Large data sets and fidelity" says when block-wise ones replace the others)."""
        return self.evaluation.name

    @property
    def generic_estimator(self) -> Any:
        """The estimator scikit-learn's path fits at the starting settings: the classifier, or an
        SVC with its kernel cache cut to fit the memory limit."""
        return self.evaluation.generic

    @property
    def batch_work(self) -> str:
        """How :meth:`evaluate_batch` shares work between the points of a batch: ``"sweep"``
        (k-NN: the distances over the unswept columns once per sweep), ``"threads"`` (points side
        by side) or ``"sequential"`` (a worker process's share of a sweep still goes to the fast
        scorer's sweep: naive Bayes sums the other columns once, the others transform the
        columns together)."""
        if self.evaluation.shares_sweeps:
            return "sweep"
        return "threads" if self.evaluation.batch_threads > 1 else "sequential"

    def warm_up(self) -> None:
        """Build this thread's transform and fast scorer and load its compiled kernels now.

        The first score otherwise pays these one-off costs (about a second for Numba); call this
        before timing, or before forking workers so that they inherit the warm state. Scores
        nothing into the cache.
        """
        self.evaluation.warm_up()

    def transform(self, lambdas: Sequence[float]) -> np.ndarray:
        """The standard-scaled transformed training data for ``lambdas`` (a copy), without the
        features the point drops."""
        x = self.experiment.points.vector(lambdas)
        scaled = self.columns.of(x)[2]
        kept = self.experiment.points.kept(x)
        return scaled.copy() if kept is None else scaled[:, kept]

    def score_features(self, features: np.ndarray) -> float:
        """The objective's classifier score on a ready feature matrix (one row per training
        sample).

        This is how other transforms (StandardScaler, PowerTransformer, …) are scored the same
        way as a Λ; classifier-free criteria need the Box-Cox internals and are refused here.
        With a subsample, `features` may have a row per scored row or per row of the data given
        (the scored rows are then taken).
        """
        experiment = self.experiment
        if experiment.score_rule.is_criterion:
            raise ValueError(
                f"scoring {experiment.spec.scoring!r} scores Box-Cox λ, not arbitrary features"
            )
        if experiment.rows is not None and len(features) == experiment.n_samples:
            features = features[experiment.rows]
        return experiment.score_rule.fit_score(features, self.evaluation.generic)

    def describe(self) -> dict[str, Any]:
        """What it chose, JSON-ready (the keys of
        :meth:`~optuna_boxcox.BoxCoxObjective.describe` but ``fidelity``)."""
        experiment, budget = self.experiment, self.budget
        return {
            "evaluator": self.evaluator,
            "batch": self.batch_work,
            "memory_limit": int(budget.limit),
            "estimated_peak_bytes": int(budget.used),
            "memory": {name: int(size) for name, size in budget.reserved.items()},
            "n_samples": int(experiment.n_samples),
            "n_scored": len(experiment.X),
            "subsample": None if experiment.subsample is None else int(experiment.subsample),
            "n_features": len(experiment.names),
            "n_threads": int(self.n_threads),
            "batch_threads": int(self.evaluation.batch_threads),
            "cache_capacity": int(self.cache.capacity),
        }
