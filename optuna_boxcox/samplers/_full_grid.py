"""Algorithm 5 of the paper: every point of grid^p."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from optuna_boxcox.samplers._plan import Batch
from optuna_boxcox.samplers._plan import GridPlanSampler

if TYPE_CHECKING:
    from collections.abc import Generator

    from optuna_boxcox._space import LambdaSpace

#: Default refusal threshold of the full grid (L^p trials).
MAX_GRID_POINTS = 10_000


def full_grid_search(
    space: LambdaSpace, grid: np.ndarray
) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
    """Algorithm 5: all of grid^p in lexicographic order (λ_1 outermost); the first maximum wins."""
    indices = list(itertools.product(range(len(grid)), repeat=space.dim))
    points = [space.clip(grid[list(ix)]) for ix in indices]
    attrs = [{"phase": "grid", "candidate": k} for k in range(len(points))]
    scores = yield Batch(points, attrs, space.initial.copy(), -np.inf)
    best = int(np.argmax(scores))
    return points[best], float(scores[best])


class FullGridSampler(GridPlanSampler):
    """The paper's full grid search (Algorithm 5): ``grid_size ** n_features`` trials.

    Refuses (``ValueError``) a grid larger than ``max_points`` (default 10 000); raise it knowingly.
    """

    name = "grid"

    def __init__(self, *, max_points: int = MAX_GRID_POINTS, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_points = int(max_points)

    def budget(self, n_params: int) -> int:
        return self.grid_size**n_params

    def _plan(self, space: LambdaSpace) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
        size = self.budget(space.dim)
        if size > self.max_points:
            raise ValueError(
                f"the full grid has {self.grid_size}^{space.dim} = {size} points, more than "
                f"max_points={self.max_points}; use a coordinate search, or raise max_points"
            )
        return full_grid_search(space, self.grid)
