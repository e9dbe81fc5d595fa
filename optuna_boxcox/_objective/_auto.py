"""``auto``'s decision: time the search's classifier on growing subsets of the rows, then choose
exact or halving (:func:`~optuna_boxcox._objective._fidelity.choose_fidelity`) from that cost."""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
import time
from typing import Any

from optuna_boxcox._objective import _fidelity
from optuna_boxcox._objective._fidelity import MEASURE_REPEATS
from optuna_boxcox._objective._fidelity import MEASURE_ROWS
from optuna_boxcox._objective._fidelity import MEASURE_UNTIL_SECONDS
from optuna_boxcox._objective._fidelity import REPEAT_SECONDS
from optuna_boxcox._objective._fidelity import TYPICAL_BATCH
from optuna_boxcox._objective._fidelity import TYPICAL_POSITIONS_PER_FEATURE
from optuna_boxcox._objective._fidelity import VERIFY_REPEATS
from optuna_boxcox._objective._fidelity import VERIFY_SWEEP_POINTS
from optuna_boxcox._objective._fidelity import VERIFY_UNDER_SECONDS
from optuna_boxcox._objective._fidelity import AutoFidelity
from optuna_boxcox._objective._fidelity import CostModel
from optuna_boxcox._objective._fidelity import FidelityChoice
from optuna_boxcox._objective._fidelity import choose_fidelity
from optuna_boxcox._objective._fidelity import expected_new_points
from optuna_boxcox._objective._fidelity import is_int
from optuna_boxcox._objective._fidelity import minutes_text
from optuna_boxcox._objective._fidelity import rung_floor


def measure_cost(
    at_rows: Callable[[int], Any],
    n_samples: int,
    *,
    first_rows: int = MEASURE_ROWS,
    batch: int = TYPICAL_BATCH,
) -> CostModel:
    """Time evaluations of new points on stratified subsets, doubling the rows from
    ``first_rows`` until one takes :data:`MEASURE_UNTIL_SECONDS` (two timings at least) or half
    the rows are reached.

    ``at_rows(r)`` is an objective on ``r`` rows (the search's evaluator on them). Each timing
    scores the starting point once untimed (it builds the transform and compiled kernels), then
    :data:`MEASURE_REPEATS` points that differ from it in one λ, as a sweep's candidates do. An
    evaluator that shares a sweep's work (k-NN) is timed on sweeps of ``batch`` points, and the
    doubling stops when one *sweep* takes :data:`MEASURE_UNTIL_SECONDS` (its points' share of
    it would otherwise let the rows, and the time spent deciding, grow ``batch`` times further);
    at the last rows a sweep of :data:`VERIFY_SWEEP_POINTS` is timed too (``sweep_ratio``).
    """
    measured: list[tuple[int, float]] = []
    rows = min(first_rows, max(2, n_samples // 2))
    ratio = None
    while True:
        objective = at_rows(rows)
        seconds = time_evaluations(objective, MEASURE_REPEATS, batch)
        measured.append((rows, seconds))
        swept = getattr(objective, "batch_work", None) == "sweep"
        per_call = seconds * batch if swept else seconds
        slow = per_call >= MEASURE_UNTIL_SECONDS and len(measured) >= 2
        if slow or 2 * rows > n_samples // 2:
            if swept:
                short = time_evaluations(objective, 1, VERIFY_SWEEP_POINTS, first=MEASURE_REPEATS)
                ratio = seconds / short if short > 0 else 1.0
            break
        rows *= 2
    return CostModel(tuple(measured), ratio, batch)


def time_evaluations(
    objective: Any, repeats: int, batch: int = TYPICAL_BATCH, *, first: int = 0
) -> float:
    """Seconds of the fastest of ``repeats`` evaluations of new points, each a λ away from the
    start point in one coordinate as a sweep's candidates are; the start is scored first,
    untimed (it builds the transform and loads compiled kernels).

    An evaluator that scores a sweep's points together (k-NN: the distances over the other
    columns once a sweep) is timed the way the search runs it: a sweep of ``batch`` new points
    through ``evaluate_batch``, per point. Timed one by one, k-NN looks several times dearer
    than it is, and ``auto`` chose halving where the exact search was faster. The repeats stop
    once they took :data:`REPEAT_SECONDS` together. ``first``: the first repeat's index
    (another timing of the same objective takes other points, not cached ones).
    """
    start = dict(objective.initial_params)
    objective.evaluate(start)
    names = objective.param_names
    times = []
    if objective.batch_work == "sweep":
        for repeat in range(first, first + repeats):
            name = names[repeat % len(names)]
            sweep = [
                {**start, name: start[name] + 0.25 * (repeat + 1) + 0.01 * i} for i in range(batch)
            ]
            began = time.perf_counter()
            objective.evaluate_batch(sweep)
            times.append((time.perf_counter() - began) / batch)
            if sum(times) * batch >= REPEAT_SECONDS:
                break
        return min(times)
    for repeat in range(first, first + repeats):
        point = dict(start)
        name = names[repeat % len(names)]
        point[name] = start[name] + 0.25 * (repeat + 1)
        began = time.perf_counter()
        objective.evaluate(point)
        times.append(time.perf_counter() - began)
        if sum(times) >= REPEAT_SECONDS:
            break
    return min(times)


def plan_size(sampler: Any, n_params: int) -> tuple[int | None, int | None]:
    """(positions, batch) the sampler's plan takes for ``n_params`` parameters, as far as the
    sampler says (the paper's samplers have a ``budget`` and the grid ones a ``grid_size``)."""
    positions = None
    budget = getattr(sampler, "budget", None)
    if callable(budget):
        try:
            positions = int(budget(n_params))
        except (NotImplementedError, TypeError, ValueError):
            positions = None
    batch = getattr(sampler, "grid_size", None)
    return positions, batch if is_int(batch) else None


def choose_auto(
    request: AutoFidelity,
    at_rows: Callable[[int], Any],
    n_samples: int,
    n_classes: int,
    n_params: int,
    sampler: Any = None,
    kept: Callable[[int], Any] | None = None,
    bound: Callable[[int], float] | None = None,
) -> FidelityChoice:
    """Measure and choose: :func:`measure_cost`, then :func:`choose_fidelity` with the plan's
    size from the request, else from the sampler, else the typical one; then the rows the search
    spends most on (its top rung, or all rows when exact) are timed too when the model says that
    is cheap (:data:`VERIFY_UNDER_SECONDS`), and the choice is made again with that timing.
    ``kept(rows)`` is the objective the search will use on those rows (default ``at_rows``).

    Nothing is timed — exact — where the rows are too few for two rungs, or where ``bound(n)``
    (an upper bound of the seconds a new point costs on ``n`` rows: the classifier's cost class)
    puts the whole exact search, every position a new point, under :data:`SMALL_SECONDS`."""
    planned, grid = plan_size(sampler, n_params)
    positions = request.positions or planned or TYPICAL_POSITIONS_PER_FEATURE * n_params
    batch = request.batch or grid or TYPICAL_BATCH
    new_points = expected_new_points(positions, n_params, batch)
    sizes = dict(positions=positions, batch=batch, new_points=new_points, default=request.default)
    if n_samples < request.eta * rung_floor(n_classes):
        # Too few rows for two rungs: nothing to measure, exact is the only choice.
        floor = request.eta * rung_floor(n_classes)
        return FidelityChoice(None, "auto", f"fewer than {floor:,} rows, not timed", **sizes)
    if bound is not None and positions * bound(n_samples) <= _fidelity.SMALL_SECONDS:
        # Even were every position a new point: obviously small, nothing to time.
        most = positions * bound(n_samples)
        return FidelityChoice(
            None,
            "auto",
            f"small data for the classifier: the exact search takes at most "
            f"~{minutes_text(most / 60)} by its cost class, not timed",
            exact_minutes=round(most / 60, 2),
            **sizes,
        )

    def choose(cost: CostModel) -> FidelityChoice:
        choice = choose_fidelity(
            n_samples,
            n_classes,
            cost,
            positions=positions,
            batch=batch,
            budget_seconds=request.budget_seconds,
            eta=request.eta,
            new_points=new_points,
        )
        return dataclasses.replace(choice, default=request.default)

    cost = measure_cost(at_rows, n_samples, batch=batch)
    choice = choose(cost)
    rows = n_samples if choice.fidelity is None else choice.fidelity.rungs(n_samples)[-1]
    if rows > cost.measured[-1][0] and cost.seconds(rows) <= VERIFY_UNDER_SECONDS:
        objective = (kept or at_rows)(rows)
        if cost.sweep_ratio is not None and objective.batch_work == "sweep":
            # One short sweep, converted to the sweep's per-point cost measured on fewer rows.
            short = time_evaluations(objective, 1, VERIFY_SWEEP_POINTS)
            seconds = short * cost.sweep_ratio
        else:
            seconds = time_evaluations(objective, VERIFY_REPEATS, batch)
        choice = choose(dataclasses.replace(cost, measured=(*cost.measured, (rows, seconds))))
    return choice
