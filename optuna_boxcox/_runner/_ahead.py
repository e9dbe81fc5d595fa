"""Scoring past the sweep barrier: workers that would wait for a batch's last points score the
next batches' likely points instead, and share them on a board in the study.

A coordinate sweep's points depend on where the sweeps before it left Λopt, so each sweep waits
for its last point: k workers gain at most a sweep's new fits over the rounds they need for them
(11 fits over 8 workers: 2 rounds, 5.5×; over 16 workers one round of 11, 0.69·k), and in the
later epochs a sweep has a few new fits or none. A worker with nothing of the current batch left
to claim replays the plan assuming that the points still being scored do not beat Λopt — the
most likely outcome: the paper's iterative search on 8 features moved λ in 5 of its 32 sweeps —
and scores the first points of the next :data:`DEPTH` batches that nobody scored or took
(:meth:`~optuna_boxcox.samplers.PlanRun.ahead`). It takes them on the board first
(:func:`~optuna_boxcox._optuna._claims.take_ahead`: a study system attribute per Λ, taken in one
transaction, so two workers never score the same point ahead), then puts their scores there.

Nothing ahead is a trial: a score on the board is the objective's value of that Λ, which every
worker reads back into its cache when its batch comes, so the plan's trials stay exactly those
of one worker, written through the claims and writes of :mod:`._cooperation`. Where the outcome
was another (a point did beat Λopt), the points scored ahead are simply never asked for: the
waste is bounded by what the idle workers scored while they waited. Only the exact search scores
ahead (with rows as the fidelity a worker halves among the points it claimed).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING
from typing import Any

from optuna.trial import TrialState

from optuna_boxcox._optuna import _claims

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np
    import optuna

    from optuna_boxcox._runner._halving import Scored
    from optuna_boxcox.samplers import PlanRun

#: Batches past the current one that are scored ahead: with 16 workers and 11-point sweeps, the
#: current sweep's last points and the next ones keep every worker busy while nothing moves.
#: Any depth from 2 to 16 did as well, and a depth that follows how likely "no move" is did
#: worse: idle workers lose more than points scored for an outcome that did not come.
DEPTH = 4
#: Plans longer than this many positions are not replayed to score ahead (a replay runs the
#: algorithm from its start: on wide data that would cost more than the waits it fills).
MAX_POSITIONS = 50_000
#: Points ahead looked at in one step (the next ones in plan order): a large batch (a grid's)
#: would otherwise be read from the board, and replayed, point by point.
MAX_POINTS = 64
#: Seconds a batch waits at least for a point another worker took ahead before claiming it.
PATIENCE_SECONDS = 5.0


class Ahead:
    """One worker's scoring ahead on a study (see the module's docstring)."""

    def __init__(
        self,
        study: optuna.Study,
        run: PlanRun,
        top: Any,
        score: Callable[[list[np.ndarray]], list[Scored]],
        owner: str,
        processes: int,
        seconds_per_point: Callable[[], float | None] = lambda: None,
    ) -> None:
        self.study, self.run, self.top, self.score_points = study, run, top, score
        self.seconds_per_point = seconds_per_point
        self.owner, self.processes = owner, max(1, processes)
        #: Points this worker scored ahead.
        self.scored = 0

    def known(self, points: list[np.ndarray]) -> tuple[list[float | None], dict[int, float]]:
        """The values of ``points`` from this worker's cache, else from the board (read into the
        cache); None where neither has one. And the points a live worker is scoring ahead:
        index → the time past which the batch stops waiting for them and claims them."""
        values: list[float | None] = [self.top.cached_score(x) for x in points]
        missing = [k for k, v in enumerate(values) if v is None]
        if not missing:
            return values, {}
        found, dead = self.read(points, missing)
        taken: dict[int, float] = {}
        for k in missing:
            if found.get(k) is not None:
                values[k] = found[k]
            elif k in found and k not in dead:
                taken[k] = time.time() + self.patience()
        return values, taken

    def read(
        self, points: list[np.ndarray], which: list[int]
    ) -> tuple[dict[int, float | None], set[int]]:
        """The board's entries of ``points[k]`` for ``k`` in ``which``: index → value (None:
        taken, not scored yet; absent: not on the board), the values read into the cache; and
        the indices taken by a worker of this host that is gone."""
        keys = {k: _claims.ahead_key(points[k]) for k in which}
        entries = _claims.read_ahead(self.study, list(set(keys.values())))
        found: dict[int, float | None] = {}
        dead: set[int] = set()
        for k, key in keys.items():
            if key not in entries:
                continue
            value, owner = entries[key]
            found[k] = value
            if value is not None:
                self.top.remember_score(points[k], value)
            elif _claims.is_dead(owner):
                dead.add(k)
        return found, dead

    def patience(self) -> float:
        """Seconds a batch waits for a point taken ahead by another worker before claiming it
        (that worker may be stopped, or gone on another machine): ten points' scoring, at least
        :data:`PATIENCE_SECONDS`."""
        cost = self.seconds_per_point() or 0.0
        return max(PATIENCE_SECONDS, 10 * cost)

    def step(self) -> bool:
        """Score a few points ahead (one per scoring process), or learn others' scores of them;
        False when there is nothing to do (every likely point is scored, or taken by a worker
        still scoring it)."""
        if self.run.n_done > MAX_POSITIONS:
            return False
        likely = self.run.ahead(self.top.cached_score, DEPTH)[:MAX_POINTS]
        if not likely:
            return False
        # A position a trial holds already is being scored by workers that are a batch further
        # than this one (or the outcome was another): not a point to score ahead.
        held = _claims.read_positions(
            self.study, self.run.position_key, [position for position, _ in likely]
        )
        by_key: dict[str, np.ndarray] = {}
        for position, point in likely:
            if not any(state != TrialState.FAIL for state, *_ in held.get(position, ())):
                by_key.setdefault(_claims.ahead_key(point), point)
        if not by_key:
            return False
        found = _claims.read_ahead(self.study, list(by_key))
        learned = False
        for key, (value, _) in found.items():
            if value is not None:
                self.top.remember_score(by_key[key], value)
                learned = True
        if learned:
            return True  # the plan ahead may look different now: replay before taking
        free = [key for key in by_key if key not in found]
        if not free:
            return False
        mine = _claims.take_ahead(self.study, free[: self.processes], self.owner)
        if not mine:
            return True  # others took them first: look again
        points = [by_key[key] for key in mine]
        scored = self.score_points(points)
        values = {key: float(s.value) for key, s in zip(mine, scored)}
        for point, value in zip(points, values.values()):
            self.top.remember_score(point, value)
        _claims.put_ahead(self.study, values, self.owner)
        self.scored += len(points)
        return True
