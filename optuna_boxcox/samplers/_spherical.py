"""Algorithm 7 of the paper: one λ shared by every feature."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from optuna_boxcox.samplers._driver import Batch
from optuna_boxcox.samplers._grid import GridPlanSampler

if TYPE_CHECKING:
    from collections.abc import Generator

    from optuna_boxcox._study._space import LambdaSpace


def spherical_search(
    space: LambdaSpace, grid: np.ndarray
) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
    """Algorithm 7: λ_j = c for every j, c over the grid; the first maximum wins."""
    points = [space.clip(np.full(space.dim, c)) for c in grid]
    attrs = [
        {"phase": "spherical", "candidate": i, "lambda": float(c)} for i, c in enumerate(grid)
    ]
    scores = yield Batch(points, attrs, space.initial.copy(), -np.inf)
    best = int(np.argmax(scores))  # argmax returns the first maximum
    return points[best], float(scores[best])


class SphericalSampler(GridPlanSampler):
    """The paper's Spherical search (Algorithm 7): the same λ for all features, over the grid.

    Takes ``grid_size`` trials and keeps the first maximum in grid order.

    Example::

        sampler = SphericalSampler(grid_size=11)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        study.optimize(objective)   # stops after 11 trials
    """

    name = "spherical"

    def budget(self, n_params: int) -> int:
        return self.grid_size

    def _plan(self, space: LambdaSpace) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
        return spherical_search(space, self.grid)
