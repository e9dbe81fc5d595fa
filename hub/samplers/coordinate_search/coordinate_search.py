"""Iterative coordinate-wise grid search with Shift, Shuffle and Finer, as an Optuna sampler.

One file, Optuna and NumPy only, so that it can live in a plugin registry on its own. The search
is a *plan*: a generator that yields one sweep (the grid of one parameter, the others fixed),
receives the sweep's scores and decides the next. Given the seed and the scores the plan is
deterministic, so it is replayed from the study's finished trials instead of being kept in the
sampler: a sampler built afresh (another process, a restarted script) continues the same search.
"""

from __future__ import annotations

from collections.abc import Generator
from collections.abc import Mapping
from collections.abc import Sequence
import math
import threading
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.distributions import FloatDistribution
from optuna.samplers import BaseSampler
from optuna.samplers import RandomSampler
from optuna.study import Study
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

#: Settings of the refinements, after Table 4 of Blum, Elgendi & Menon (2022).
PRESETS: dict[str, dict[str, int]] = {
    "iterative": dict(grid_size=11, epochs=4, shift_epoch=4, shuffle_epoch=4, finer_epoch=4),
    "shift": dict(grid_size=11, epochs=8, shift_epoch=4, shuffle_epoch=8, finer_epoch=8),
    "shuffle": dict(grid_size=11, epochs=8, shift_epoch=8, shuffle_epoch=2, finer_epoch=8),
    "finer": dict(grid_size=11, epochs=8, shift_epoch=8, shuffle_epoch=8, finer_epoch=4),
    "combined1": dict(grid_size=11, epochs=16, shift_epoch=8, shuffle_epoch=2, finer_epoch=4),
    "combined2": dict(grid_size=21, epochs=16, shift_epoch=8, shuffle_epoch=2, finer_epoch=4),
}

#: Trial system attribute holding the plan position a trial evaluates.
POSITION_KEY = "coordinate_search:position"

Sweep = list[np.ndarray]  # the points of one sweep, in evaluation order


def coordinate_plan(
    low: np.ndarray,
    high: np.ndarray,
    start: np.ndarray,
    *,
    grid_size: int,
    epochs: int,
    shift_epoch: int,
    shuffle_epoch: int,
    finer_epoch: int,
    seed: int,
) -> Generator[Sweep, list[float], tuple[np.ndarray, float]]:
    """Yield one sweep at a time, receive its scores (higher is better), return (best, score).

    An epoch sweeps every parameter in turn over ``grid_size`` values, the others at the working
    point, and moves the working point to the best value found. Every ``shift_epoch`` epochs the
    working point restarts at a uniformly random point and the grid is reset (Shift); otherwise
    every ``finer_epoch`` epochs since the last Shift the grid is halved and centred on the best
    point (Finer); every ``shuffle_epoch`` epochs the sweep order is permuted (Shuffle). The first
    of equal scores wins.
    """
    dim = len(low)
    finer_epoch = min(finer_epoch, shift_epoch)
    half = (high - low) / 2.0
    offsets = [np.linspace(-h, h, grid_size) for h in half]
    centre = (low + high) / 2.0
    scale, local = offsets, False
    best_point = np.array(start, dtype=float)
    working = best_point.copy()
    best = -math.inf
    order = list(range(dim))
    since = 0
    rng = np.random.default_rng(seed)
    for epoch in range(epochs):
        if epoch > 0:
            since += 1
            if epoch % shift_epoch == 0:
                since, scale, local = 0, offsets, False
                working = rng.random(dim) * (high - low) + low
            elif since % finer_epoch == 0:
                scale, local = [0.5 * o for o in scale], True
            if epoch % shuffle_epoch == 0:
                rng.shuffle(order)
        for d in order:
            values = scale[d] + (best_point[d] if local else centre[d])
            sweep = []
            for value in values:
                x = working.copy()
                x[d] = min(max(value, low[d]), high[d])
                sweep.append(x)
            scores = yield sweep
            for x, score in zip(sweep, scores):
                if score > best:
                    best, best_point = score, x.copy()
            working[d] = best_point[d]
    return best_point, best


class _Replay:
    """The plan advanced over the scores known so far (sweeps and where each starts)."""

    def __init__(self, plan: Generator[Sweep, list[float], tuple[np.ndarray, float]]) -> None:
        self._plan = plan
        self.sweeps: list[Sweep] = [next(plan)]
        self.starts = [0]
        self.result: tuple[np.ndarray, float] | None = None

    def positions(self) -> range:
        """Positions of the sweep awaiting scores."""
        return range(self.starts[-1], self.starts[-1] + len(self.sweeps[-1]))

    def point(self, position: int) -> np.ndarray:
        for start, sweep in zip(reversed(self.starts), reversed(self.sweeps)):
            if position >= start:
                return sweep[position - start]
        raise IndexError(position)

    def advance(self, scores: Mapping[int, float]) -> None:
        while self.result is None and all(p in scores for p in self.positions()):
            span = self.positions()
            try:
                sweep = self._plan.send([scores[p] for p in span])
            except StopIteration as stop:
                self.result = stop.value
                return
            self.starts.append(span.stop)
            self.sweeps.append(sweep)


class CoordinateSearchSampler(BaseSampler):
    """Coordinate-wise grid search over float parameters, with Shift, Shuffle and Finer.

    Starting from ``initial_params`` (default: the middle of each range), each sweep tries
    ``grid_size`` evenly spaced values of one parameter across its range with the others fixed
    and keeps the best; an epoch sweeps every parameter. The search takes exactly
    ``epochs · len(search_space) · grid_size`` trials, then stops the study.

    Args:
        search_space: The float parameters to search (name → ``FloatDistribution``, linear
            scale). Parameters the objective suggests outside it are sampled by
            ``independent_sampler``.
        grid_size: Values per sweep.
        epochs: Passes over all parameters.
        shift_epoch: Restart at a random point every ``shift_epoch`` epochs (≥ epochs: never).
        shuffle_epoch: Permute the sweep order every ``shuffle_epoch`` epochs.
        finer_epoch: Halve the grid around the best point every ``finer_epoch`` epochs since the
            last restart.
        initial_params: The starting point.
        seed: Seed of Shift and Shuffle; the same seed gives the same search.
        independent_sampler: Samples parameters outside ``search_space`` (default: random).

    A failed or pruned trial scores worst; an enqueued trial is not part of the plan. The plan is
    replayed from the study's finished trials, so a study can be continued by another process or
    after a restart; with ``n_jobs > 1`` the candidates of one sweep run concurrently.
    """

    def __init__(
        self,
        search_space: Mapping[str, FloatDistribution],
        *,
        grid_size: int = 11,
        epochs: int = 4,
        shift_epoch: int = 4,
        shuffle_epoch: int = 4,
        finer_epoch: int = 4,
        initial_params: Mapping[str, float] | None = None,
        seed: int = 0,
        independent_sampler: BaseSampler | None = None,
    ) -> None:
        for name, distribution in search_space.items():
            if not isinstance(distribution, FloatDistribution) or distribution.log:
                raise ValueError(
                    f"{name}: the coordinate search takes linear float ranges, got {distribution}"
                )
        counts = dict(
            grid_size=grid_size,
            epochs=epochs,
            shift_epoch=shift_epoch,
            shuffle_epoch=shuffle_epoch,
            finer_epoch=finer_epoch,
        )
        for name, value in counts.items():
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self._space = dict(search_space)
        self._names = list(self._space)
        self._low = np.array([d.low for d in self._space.values()], dtype=float)
        self._high = np.array([d.high for d in self._space.values()], dtype=float)
        if initial_params is None:
            self._start = (self._low + self._high) / 2.0
        else:
            self._start = np.array([float(initial_params[n]) for n in self._names])
        self._settings = dict(counts, seed=int(seed))
        self._independent = independent_sampler or RandomSampler(seed=seed)
        self._lock = threading.Lock()
        self._replays: dict[tuple[int, str], tuple[_Replay, dict[int, float]]] = {}

    @classmethod
    def from_preset(
        cls, preset: str, search_space: Mapping[str, FloatDistribution], **kwargs: Any
    ) -> CoordinateSearchSampler:
        """A sampler with one of :data:`PRESETS` (iterative, shift, shuffle, finer, combined1,
        combined2); keyword arguments override its settings."""
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; choose one of {list(PRESETS)}")
        return cls(search_space, **{**PRESETS[preset], **kwargs})

    @property
    def budget(self) -> int:
        """The number of trials of the whole search."""
        return self._settings["epochs"] * len(self._names) * self._settings["grid_size"]

    def reseed_rng(self) -> None:
        # The plan's draws come from the seed alone (every worker must derive the same plan).
        self._independent.reseed_rng()

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return dict(self._space)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        _single_objective(study)
        if not search_space:
            return {}
        # An enqueued trial evaluates its own point: it takes no position of the plan.
        point = None if "fixed_params" in trial.system_attrs else self._claim(study, trial)
        params = {}
        for name, distribution in search_space.items():
            if point is not None and name in self._space and distribution == self._space[name]:
                params[name] = _fit(distribution, point[self._names.index(name)])
            else:
                params[name] = self._independent.sample_independent(
                    study, trial, name, distribution
                )
        return params

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        _single_objective(study)
        return self._independent.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(
        self,
        study: Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        position = trial.system_attrs.get(POSITION_KEY)
        if position is None or position < 0:
            return
        with self._lock:
            replay, scores = self._sync(study)
            # This trial is not finished in the storage yet: count it to see whether it ends the plan.
            scores = {**scores, position: _score(study, state, values)}
            replay.advance(scores)
            finished = replay.result is not None
        if finished:
            try:
                study.stop()
            except RuntimeError:
                pass  # ask-and-tell: no optimize loop to stop

    def _claim(self, study: Study, trial: FrozenTrial) -> np.ndarray:
        """The point of the plan this trial evaluates (its position is stored in the trial)."""
        with self._lock:
            replay, scores = self._sync(study)
            if replay.result is not None:  # the plan is spent: evaluate the best point again
                self._set_position(study, trial, -1)
                return replay.result[0]
            held = {
                t.system_attrs.get(POSITION_KEY)
                for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                if t.number != trial.number
            }
            todo = [p for p in replay.positions() if p not in scores]
            free = [p for p in todo if p not in held]
            # Every candidate of the sweep is running elsewhere: evaluate one of them twice (the
            # first finished score counts) rather than wait for the sweep to end.
            position = (free or todo)[0]
            self._set_position(study, trial, position)
            return replay.point(position)

    def _set_position(self, study: Study, trial: FrozenTrial, position: int) -> None:
        # Optuna has no public way for a sampler to annotate a trial; GridSampler does the same.
        study._storage.set_trial_system_attr(trial._trial_id, POSITION_KEY, position)

    def _sync(self, study: Study) -> tuple[_Replay, dict[int, float]]:
        """This study's replay, advanced over the scores of its finished trials."""
        key = (id(study._storage), study.study_name)
        if key not in self._replays:
            plan = coordinate_plan(self._low, self._high, self._start, **self._settings)
            self._replays[key] = (_Replay(plan), {})
        replay, scores = self._replays[key]
        finished = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
        for t in study.get_trials(deepcopy=False, states=finished):
            position = t.system_attrs.get(POSITION_KEY)
            if position is not None and position >= 0 and position not in scores:
                scores[position] = _score(study, t.state, t.values)
        replay.advance(scores)
        return replay, scores


def _single_objective(study: Study) -> None:
    if len(study.directions) > 1:
        raise ValueError("CoordinateSearchSampler optimises a single objective")


def _score(study: Study, state: TrialState, values: Sequence[float] | None) -> float:
    """A trial's value as the plan ranks it: higher is better, failed and pruned trials worst."""
    if state != TrialState.COMPLETE or not values or math.isnan(values[0]):
        return -math.inf
    return values[0] if study.direction == StudyDirection.MAXIMIZE else -values[0]


def _fit(distribution: FloatDistribution, value: float) -> float:
    """A plan coordinate as a valid value of its distribution (clipped, rounded to its step)."""
    value = min(max(float(value), distribution.low), distribution.high)
    if distribution.step is not None:
        steps = round((value - distribution.low) / distribution.step)
        value = min(distribution.low + steps * distribution.step, distribution.high)
    return float(value)
