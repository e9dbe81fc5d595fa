"""A plan run for runners that score whole batches: :class:`PlanRun` (from
:meth:`PlanSampler.start_run`) replays the plan over the study's finished trials, hands out the
next points and takes their scores."""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from optuna_boxcox._study._space import LambdaSpace
from optuna_boxcox.samplers._driver import Plan
from optuna_boxcox.samplers._driver import Ranking
from optuna_boxcox.samplers._driver import SearchResult
from optuna_boxcox.samplers._driver import plan_result
from optuna_boxcox.samplers._ledger import POSITION_KEY

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.study import Study
    from optuna.trial import FrozenTrial


@dataclass
class PendingPoints:
    """Positions of the current batch that a runner is to score, in plan order."""

    positions: list[int]
    points: list[np.ndarray]
    #: Each trial's user attributes (the search's bookkeeping; ``improved`` comes with the score).
    attrs: list[dict[str, Any]]


class PlanRun:
    """A runner's pass over a plan sampler's plan on one study (:meth:`PlanSampler.start_run`).

    The protocol between the paper's samplers and :func:`optuna_boxcox.optimize`: the run is the
    plan replayed over the study's finished trials when it started (failed positions are retried
    as the sampler would). A runner asks for the positions still to score (:meth:`pending`),
    scores them, :meth:`tell` s their values (and learns each trial's user attributes),
    :meth:`adopt` s the values other workers wrote for positions of the batch, writes the
    trials, and at the end :meth:`finish` es (the result is recorded in the study). Every
    decision about values — the direction's sign, whether a candidate improved on Λopt — is
    taken here; a ``study.optimize`` worker on the same study sees the runner's trials once they
    are written.

    Attributes:
        study: The study.
        space: Its λ space.
        owner: This process, as recorded on the trials it writes (system attribute
            :data:`~optuna_boxcox._system._process.OWNER_KEY`).
        position_key: The trial system attribute holding a trial's plan position.
        trials: The study's trials when the run started (read once).
        budget: The plan's number of positions, when the sampler knows it in advance.
    """

    position_key = POSITION_KEY

    def __init__(
        self,
        study: Study,
        plan: Plan,
        space: LambdaSpace,
        ranking: Ranking,
        *,
        scores: Mapping[int, float],
        trials: list[FrozenTrial],
        owner: str,
        budget: int | None,
        record: Callable[[Study, SearchResult], None],
        replay: Callable[[], Plan] | None = None,
    ) -> None:
        self.study, self.space, self.owner, self.trials = study, space, owner, trials
        self.budget = budget
        self._plan, self._ranking, self._record = plan, ranking, record
        self._scores = dict(scores)  # plan scores (higher is better) of the finished positions
        #: A fresh plan of the same algorithm (for :meth:`ahead`), None where there is none.
        self._replay = replay

    @property
    def finished(self) -> bool:
        return self._plan.finished

    @property
    def n_done(self) -> int:
        """Positions of the plan with a score."""
        return len(self._scores)

    def pending(self, limit: int | None = None) -> PendingPoints | None:
        """The current batch's positions not scored yet (at most ``limit``); None once the plan
        has ended."""
        plan = self._plan
        if plan.finished:
            return None
        span = plan.positions(plan.current)
        batch = plan.batches[plan.current]
        todo = [p for p in span if p not in self._scores]
        if limit is not None:
            todo = todo[: max(0, int(limit))]
        return PendingPoints(
            todo,
            [batch.points[p - span.start] for p in todo],
            [dict(batch.attrs[p - span.start]) for p in todo],
        )

    def attrs(
        self, pending: PendingPoints, values: Sequence[float | None], which: Sequence[int]
    ) -> list[dict[str, Any]]:
        """The user attributes of the trials of ``pending[k]`` for each ``k`` in ``which``, given
        the values known so far (None: not known yet): the batch's own ones and ``improved``,
        whether the value beat Λopt as it stood before that candidate — the best at the start of
        its batch and the batch's earlier candidates known (finished before, or in ``values``)."""
        batch = {
            p: self._ranking.score(v) for p, v in zip(pending.positions, values) if v is not None
        }
        known = collections.ChainMap(batch, self._scores)  # no copy of every score
        improved = self._plan.improvements(
            [(pending.positions[k], self._ranking.score(values[k])) for k in which], known
        )
        return [{**pending.attrs[k], "improved": up} for k, up in zip(which, improved)]

    def tell(self, pending: PendingPoints, values: Sequence[float]) -> list[dict[str, Any]]:
        """The objective's values of ``pending``'s points, in order: records them, advances the
        plan when its batch is complete, and returns each trial's user attributes (see
        :meth:`attrs`). Values other workers wrote for the batch are adopted first."""
        attrs = self.attrs(pending, values, range(len(values)))
        self.adopt(pending.positions, values)
        return attrs

    def adopt(self, positions: Sequence[int], values: Sequence[float]) -> None:
        """Values of positions whose trials another worker wrote: recorded, the plan advanced."""
        for position, value in zip(positions, values):
            self._scores[position] = self._ranking.score(value)
        self._plan.advance(self._scores)

    def prune(self, positions: Sequence[int]) -> None:
        """Positions whose trials were pruned (rows as the fidelity): the worst score, as the
        sampler's replay reads a PRUNED trial; the plan advanced."""
        for position in positions:
            self._scores[position] = -np.inf
        self._plan.advance(self._scores)

    def ahead(
        self, known: Callable[[np.ndarray], float | None], depth: int
    ) -> list[tuple[int, np.ndarray]]:
        """The points of the next ``depth`` batches under the most likely outcome of the current
        one, in plan order: the points not scored yet — of the current batch and of those
        ahead — taken for no better than Λopt (in the coordinate search's later epochs most
        sweeps do not move λ), each with its position. ``known(point)`` is a point's value
        where known (scored before, here or ahead by another worker), else None; a point known
        is not returned, and its value steers the plan as it will. A fresh plan is replayed from its start (the
        algorithm is deterministic given the scores): empty where there is no replay, or the
        plan has ended."""
        if self._replay is None or self._plan.finished or depth < 1:
            return []
        plan = self._replay()
        scores = dict(self._scores)
        last = self._plan.current + depth
        points: list[tuple[int, np.ndarray]] = []
        while not plan.finished and plan.current <= last:
            batch, span = plan.batches[plan.current], plan.positions(plan.current)
            for position, point in zip(span, batch.points):
                if position in scores:
                    continue
                value = known(point)
                if value is None:
                    if plan.current > self._plan.current:
                        points.append((position, point))
                    scores[position] = -np.inf
                else:
                    scores[position] = self._ranking.score(value)
            plan.advance(scores)
        return points

    def result(self) -> SearchResult:
        """What the plan has chosen so far (from this run's state: no study read)."""
        return plan_result(self._plan, self.space, self._ranking)

    def finish(self) -> SearchResult:
        """Record the result in the study once the plan has ended (and stop the study, as the
        trial-by-trial sampler does); return it."""
        result = self.result()
        if result.finished:
            self._record(self.study, result)
        return result
