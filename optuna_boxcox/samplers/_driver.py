"""The plan driver: a paper algorithm is a generator of batches, and :class:`Plan` is the one thing
that advances it, batch by batch as scores come in; :class:`Ranking` holds the direction's sign."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from optuna.study import StudyDirection
from optuna.trial import TrialState

from optuna_boxcox._study._space import LambdaSpace

if TYPE_CHECKING:
    from collections.abc import Generator
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.study import Study


def is_positive_int(value: Any) -> bool:
    """Whether a sampler setting is a whole number ≥ 1 (``True`` is refused: it is a bool, not a count)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 1


@dataclass
class Batch:
    """Points the plan wants evaluated next, with the bookkeeping shown per trial (user attrs)."""

    points: list[np.ndarray]
    attrs: list[dict[str, Any]]
    #: Λopt when the batch was issued (its history is the trajectory of the search).
    incumbent: np.ndarray | None = None
    incumbent_score: float = -np.inf


@dataclass
class SearchResult:
    """What a finished (or partly finished) plan has chosen.

    Attributes:
        params: The chosen Λ (SPEC's Λopt) by parameter name, or ``None`` before any score.
        best_value: Its objective value (in the study's direction).
        history: Λopt (params dict) after every finished batch, in plan order.
        n_trials: Positions of the plan that are finished.
        budget: All positions of the plan (known once the plan is replayed to its end).
        finished: Whether the plan is complete.
        confirmed: When the search's top rung was capped below all rows (rows as the
            fidelity): the confirmation on all rows (study user attribute
            ``boxcox_confirmed``: ``rows``, ``best``, ``value``, ``found_value``,
            ``start_value``); ``params`` and ``best_value`` are then its ``best`` and ``value``.
    """

    params: dict[str, float] | None
    best_value: float | None
    history: list[dict[str, float]] = field(default_factory=list)
    n_trials: int = 0
    budget: int | None = None
    finished: bool = False
    confirmed: dict[str, Any] | None = None


@dataclass(frozen=True)
class Ranking:
    """How a study's trial values rank in a plan: the one place where the direction's sign is
    applied. Plan scores are higher-is-better; a failed, pruned or NaN trial is the worst."""

    maximize: bool

    @classmethod
    def of(cls, study: Study) -> Ranking:
        return cls(study.direction == StudyDirection.MAXIMIZE)

    def score(self, value: float | None) -> float:
        """A trial value as the plan ranks it."""
        if value is None or np.isnan(value := float(value)):
            return -np.inf
        return value if self.maximize else -value

    def trial_score(self, state: TrialState, values: Sequence[float] | None) -> float:
        return self.score(values[0]) if state == TrialState.COMPLETE and values else -np.inf

    def value(self, score: float) -> float:
        """A plan score as the study's trial value."""
        return score if self.maximize else -score


def plan_result(plan: Plan, space: LambdaSpace, ranking: Ranking) -> SearchResult:
    """What ``plan`` has chosen so far: Λopt, its value and the history of Λopt per batch."""
    history = [space.to_params(b.incumbent) for b in plan.batches[1:]]
    if plan.finished:
        point, score = plan.result
        history.append(space.to_params(point))
        n = plan.n_positions
        return SearchResult(space.to_params(point), ranking.value(score), history, n, n, True)
    current = plan.batches[plan.current]
    best = ranking.value(current.incumbent_score) if np.isfinite(current.incumbent_score) else None
    return SearchResult(
        space.to_params(plan.incumbent(space)), best, history, plan.offsets[plan.current]
    )


#: A paper algorithm: yields batches, receives their scores (higher is better), returns
#: (Λopt, its score).
Algorithm = "Generator[Batch, list[float], tuple[np.ndarray, float]]"


class Plan:
    """An algorithm's plan, advanced batch by batch as scores come in.

    Positions number the points of all batches in order. :meth:`advance` sends the scores of every
    completely scored batch to the algorithm, which issues the next; :meth:`run` drives the plan to
    its end with a scoring function (no study).
    """

    def __init__(self, algorithm: Generator[Batch, list[float], tuple[np.ndarray, float]]) -> None:
        self._plan = algorithm
        self.batches: list[Batch] = []
        self.offsets: list[int] = []
        #: (Λopt, its score) once the plan has returned.
        self.result: tuple[np.ndarray, float] | None = None
        self._issue(None)

    @property
    def finished(self) -> bool:
        return self.result is not None

    @property
    def current(self) -> int:
        """Index of the batch awaiting scores (the last issued one)."""
        return len(self.batches) - 1

    @property
    def n_positions(self) -> int:
        """Positions issued so far (the whole budget once finished)."""
        if not self.batches:
            return 0
        return self.offsets[-1] + len(self.batches[-1].points)

    def _issue(self, scores: list[float] | None) -> None:
        offset = self.n_positions
        try:
            batch = next(self._plan) if scores is None else self._plan.send(scores)
        except StopIteration as stop:
            point, score = stop.value
            self.result = (np.asarray(point, dtype=np.float64), float(score))
            return
        self.batches.append(batch)
        self.offsets.append(offset)

    def positions(self, batch: int) -> range:
        return range(self.offsets[batch], self.offsets[batch] + len(self.batches[batch].points))

    def locate(self, position: int) -> tuple[Batch, int]:
        for b in range(len(self.batches) - 1, -1, -1):
            if position >= self.offsets[b]:
                return self.batches[b], position - self.offsets[b]
        raise IndexError(position)

    def advance(self, scores: Mapping[int, float]) -> None:
        """Send the scores of every completely scored batch, issuing the next ones."""
        while not self.finished:
            span = self.positions(self.current)
            if not all(p in scores for p in span):
                return
            self._issue([scores[p] for p in span])

    def improved(self, position: int, score: float, scores: Mapping[int, float]) -> bool:
        """Whether ``score`` at ``position`` beats Λopt as it stood before that candidate: the best
        at the start of its batch and the batch's earlier candidates (those in ``scores``)."""
        return self.improvements([(position, score)], scores)[0]

    def improvements(
        self, candidates: Sequence[tuple[int, float]], scores: Mapping[int, float]
    ) -> list[bool]:
        """:meth:`improved` of each (position, score): each batch's earlier scores are read once
        for candidates in increasing positions (a batch's trials are told together)."""
        running: dict[int, tuple[int, float]] = {}  # batch start → (position read up to, best)
        out = []
        for position, score in candidates:
            batch, index = self.locate(position)
            start = position - index
            upto, best = running.get(start, (start, batch.incumbent_score))
            if position < upto:  # out of order: read the batch again from its start
                upto, best = start, batch.incumbent_score
            for p in range(upto, position):
                if p in scores:
                    best = max(best, scores[p])
            running[start] = (position, best)
            out.append(bool(score > best))
        return out

    def incumbent(self, space: LambdaSpace) -> np.ndarray:
        """Λopt as the plan stands (the starting point before any score)."""
        if self.result is not None:
            return self.result[0]
        current = self.batches[self.current]
        return space.initial if current.incumbent is None else current.incumbent

    def run(
        self, score: Callable[[list[np.ndarray]], Sequence[float]]
    ) -> tuple[np.ndarray, float]:
        """Score every batch with ``score(points)`` until the plan ends; return (Λopt, its score)."""
        scores: dict[int, float] = {}
        while not self.finished:
            span = self.positions(self.current)
            scores.update(zip(span, map(float, score(self.batches[self.current].points))))
            self.advance(scores)
        return self.result
