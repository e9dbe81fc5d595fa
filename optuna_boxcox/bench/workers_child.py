"""One process of the workers bench (:mod:`optuna_boxcox.bench.workers`); its argument is a JSON job.

``search``: join the study and run :func:`optuna_boxcox.optimize` (the runner ``search`` uses) to
the plan's end. ``ceiling``: the same start-up (imports, data, objective, a storage connection),
then ``evaluations`` of the objective at points shaped like the plan's (one λ swept over the grid
at a time), without plan or claims. Each prints ``ready`` when it is, waits for a line on its
input (the bench releases a run's processes together), and at the end prints one JSON line: the
fits it made (scores read back from other workers not counted).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import optuna

from optuna_boxcox import optimize
from optuna_boxcox.bench.workers import WorkersCase
from optuna_boxcox.bench.workers import case_objective
from optuna_boxcox.bench.workers import case_sampler
from optuna_boxcox.storage import close_opened_storages
from optuna_boxcox.storage import open_storage


def _sweep_points(objective, evaluations: int, grid_size: int) -> list[np.ndarray]:
    """Points like a coordinate search's: each run of ``grid_size`` sweeps one λ of the start."""
    dim = objective.space.dim
    grid = np.linspace(-5.0, 5.0, grid_size)
    points = []
    for i in range(evaluations):
        sweep, candidate = divmod(i, grid_size)
        point = objective.space.initial.copy()
        # Past one pass over the features, a small offset keeps every point new (uncached).
        point[sweep % dim] = grid[candidate] + 0.01 * (sweep // dim)
        points.append(point)
    return points


def _count_remembered(objective) -> list[int]:
    """A counter of the scores other workers computed that this process read back: the objective
    counts those among its evaluations, this bench counts fits."""
    remembered = [0]
    remember = objective.remember_score

    def counted(lambdas, score) -> None:
        before = objective.n_evaluations
        remember(lambdas, score)
        remembered[0] += objective.n_evaluations - before

    objective.remember_score = counted
    return remembered


def main(job: dict) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    case = WorkersCase(**job["case"])
    objective = case_objective(case)
    remembered = _count_remembered(objective)
    storage = open_storage(job["storage"])
    if job["mode"] == "search":
        study = optuna.load_study(
            study_name=job["study"], storage=storage, sampler=case_sampler(case)
        )
        _ready()
        optimize(study, objective)
    else:
        optuna.get_all_study_names(storage)  # connected, as a worker is
        sampler = case_sampler(case)
        points = _sweep_points(objective, int(job["evaluations"]), sampler.grid_size)
        _ready()
        for point in points:
            objective.evaluate(point)
    fits = objective.n_evaluations - remembered[0]
    print(json.dumps({"fits": fits}), flush=True)


def _ready() -> None:
    """Say so, and wait for the bench to release every process of the run together."""
    print("ready", flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
    # The end of the console script (optuna_boxcox.cli.run): storages closed, output flushed,
    # and no interpreter finalisation, which takes over half a second with scikit-learn, SciPy
    # and Numba loaded.
    close_opened_storages()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
