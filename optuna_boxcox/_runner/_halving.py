"""Successive halving over one batch of a plan: rows as the fidelity, in the batched runner.

The points of a batch (a sweep) are scored on the objective's first rung (a stratified subset of
its rows); the best ``fidelity.promoted(n)`` of them go up to the next rung, and so on; those
that reach the top rung are the batch's COMPLETE trials, the others PRUNED trials whose value is
their last rung's (as Optuna gives a pruned trial its last intermediate value). Every rung a
point was scored on is one of its intermediate values (step = rows), as
``trial.report(value, step=rows)`` records it.

What is decided here depends on the scores only, never on timing or on which process scored a
point: a run interrupted and resumed prunes and completes the same positions.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from dataclasses import field
import math
import time
from typing import TYPE_CHECKING
from typing import Any

from optuna.trial import TrialState

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np
    import optuna

    from optuna_boxcox.samplers import SearchResult
    from optuna_boxcox.samplers._driver import Ranking

    #: ``score(points, rows)`` → (values, starts, ends), as ``ScoringPool.score`` returns them.
    ScoreAt = Callable[[list[np.ndarray], int], tuple[list[float], list[float], list[float]]]


@dataclass
class Scored:
    """One point of a batch, scored: its trial's state, value, intermediate values (rows →
    value, in the order scored) and the ``time.time()`` its scoring started and ended."""

    state: TrialState
    value: float
    start: float
    end: float
    intermediate: dict[int, float] = field(default_factory=dict)

    @property
    def ranked(self) -> float:
        """The value as the plan ranks it: a pruned candidate's is NaN, the worst (it never
        improved on Λopt, whatever its lower rung scored)."""
        return self.value if self.state == TrialState.COMPLETE else math.nan


def exact(values: list[float], starts: list[float], ends: list[float]) -> list[Scored]:
    """Points scored on all rows: COMPLETE trials without intermediate values."""
    return [Scored(TrialState.COMPLETE, v, s, e) for v, s, e in zip(values, starts, ends)]


class Halving:
    """Successive halving of a batch's points over ``objective.rungs``.

    Args:
        objective: A :class:`~optuna_boxcox.BoxCoxObjective` with a fidelity.
        ranking: The plan's ranking (direction-aware; a NaN value is the worst).
    """

    def __init__(self, objective: Any, ranking: Ranking) -> None:
        if objective.fidelity is None:
            raise ValueError("halving needs an objective with a fidelity")
        self.objective = objective
        self.fidelity = objective.fidelity
        self.rungs: tuple[int, ...] = tuple(objective.rungs)
        self.ranking = ranking

    @property
    def top(self) -> int:
        return self.rungs[-1]

    @property
    def capped(self) -> bool:
        """Whether the top rung has fewer rows than the objective (the result is then confirmed
        on all rows: :func:`confirm`)."""
        return self.top < self.objective.n_samples

    def seed(self, points: list[np.ndarray], values: list[float]) -> None:
        """Values of points COMPLETE in the study before this run (its top rung's): they are
        known at the top rung, as they are in the run that scored them. A resumed run then
        treats a point seen before exactly as the uninterrupted run does."""
        top = self.objective.at_rows(self.top)
        for point, value in zip(points, values):
            top.remember_score(point, value)

    def score(self, points: list[np.ndarray], score_at: ScoreAt) -> list[Scored]:
        """Halve ``points`` (in plan order) with ``score_at``; one :class:`Scored` per point.

        Every point of the batch competes from the first rung, also one scored at the top rung
        before (Λopt, typically: a sweep holds the current λ): it is COMPLETE with that value
        whatever the lower rungs say, and when it is promoted to the top no new point is scored
        there in its stead — the one all-rows evaluation of a sweep is spent only on a candidate
        that beat Λopt on the lower rungs. A batch of known points only is not scored at all.
        Once one candidate is left it goes straight to the top rung: there is nothing to
        compare it with on the rungs between.
        """
        now = time.time()
        top = self.objective.at_rows(self.top)
        known = [top.cached_score(x) for x in points]
        if all(v is not None for v in known):
            return [Scored(TrialState.COMPLETE, v, now, now) for v in known]  # type: ignore[arg-type]
        alive = list(range(len(points)))
        started: dict[int, float] = {}
        ends: dict[int, float] = {}
        intermediate: dict[int, dict[int, float]] = {k: {} for k in alive}
        for rows in self.rungs:
            if not alive:
                break
            if len(alive) == 1:
                rows = self.top
            values, s, e = score_at([points[k] for k in alive], rows)
            for k, value, start, end in zip(alive, values, s, e):
                started.setdefault(k, start)
                ends[k] = end
                intermediate[k][rows] = float(value)
            if rows == self.top:
                break
            alive = self._promoted(alive, [float(v) for v in values])
        out = []
        for k, values_at in intermediate.items():
            if known[k] is not None:
                values_at.setdefault(self.top, float(known[k]))
            last = next(reversed(values_at.values()))
            state = TrialState.COMPLETE if self.top in values_at else TrialState.PRUNED
            out.append(Scored(state, last, started[k], ends[k], values_at))
        return out

    def _promoted(self, alive: list[int], values: list[float]) -> list[int]:
        """The best ``fidelity.promoted(len(alive))`` of ``alive`` (ties: plan order), in plan
        order."""
        score = self.ranking.score
        order = sorted(range(len(alive)), key=lambda i: -score(values[i]))  # stable: plan order
        return sorted(alive[i] for i in order[: self.fidelity.promoted(len(alive))])


#: Study user attribute holding the confirmation of a capped search on all rows.
CONFIRMED_ATTR = "boxcox_confirmed"


def confirm(
    study: optuna.Study, objective: Any, result: SearchResult, ranking: Ranking
) -> SearchResult:
    """A finished search whose top rung was capped below all rows, confirmed on all of them: the
    Λ it found and the starting point G scored with the full objective, the better (ties: the
    found Λ) the result. Recorded in the study (:data:`CONFIRMED_ATTR`) once; a later call reads
    it back instead of scoring again."""
    confirmed = study.user_attrs.get(CONFIRMED_ATTR)
    if confirmed is None:
        start = objective.initial_params
        found_value = float(objective.evaluate(objective.to_point(result.params)))
        start_value = float(objective.evaluate(objective.to_point(start)))
        found_wins = ranking.score(found_value) >= ranking.score(start_value)
        confirmed = {
            "rows": int(objective.n_samples),
            "best": dict(result.params) if found_wins else start,
            "value": found_value if found_wins else start_value,
            "found_value": found_value,
            "start_value": start_value,
        }
        study.set_user_attr(CONFIRMED_ATTR, confirmed)
    return dataclasses.replace(
        result, params=dict(confirmed["best"]), best_value=confirmed["value"], confirmed=confirmed
    )
