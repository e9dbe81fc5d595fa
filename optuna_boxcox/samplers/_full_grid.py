"""Algorithm 5 of the paper: every point of grid^p."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from optuna_boxcox._system._advice import Advised
from optuna_boxcox.samplers._driver import Batch
from optuna_boxcox.samplers._grid import GridPlanSampler

if TYPE_CHECKING:
    from collections.abc import Generator

    from optuna_boxcox._study._space import LambdaSpace

#: Default refusal threshold of the full grid (L^p trials).
MAX_GRID_POINTS = 10_000


def full_grid_search(
    space: LambdaSpace, grid: np.ndarray
) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
    """Algorithm 5: all of grid^p in lexicographic order (λ_1 outermost); the first maximum wins.

    The points come one grid row (λ_p over the grid) per batch, made as they are needed, so the
    first trials of a grid too large to finish cost no more memory than a row.
    """
    indices = itertools.product(range(len(grid)), repeat=space.dim)
    best_point, best = space.initial.copy(), -np.inf
    k = 0
    while True:
        row = list(itertools.islice(indices, len(grid)))
        if not row:
            return best_point, best
        points = [space.clip(grid[list(ix)]) for ix in row]
        attrs = [{"phase": "grid", "candidate": k + i} for i in range(len(points))]
        scores = yield Batch(points, attrs, best_point.copy(), best)
        for x, score in zip(points, scores):
            if score > best:  # strictly: the first maximum wins
                best_point, best = x.copy(), float(score)
        k += len(points)


class GridTooLarge(Advised, ValueError):
    """A full grid larger than its sampler's ``max_points``, run to its end."""


class FullGridSampler(GridPlanSampler):
    """The paper's full grid search (Algorithm 5): ``grid_size ** n_features`` trials.

    Refuses (``ValueError``) to run a grid larger than ``max_points`` (default 10 000) to its end;
    raise it knowingly. A run bounded by ``n_trials`` (:func:`optuna_boxcox.optimize`) may take
    the first points of any grid.
    """

    name = "grid"
    checks_own_size = True

    def __init__(self, *, max_points: int = MAX_GRID_POINTS, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_points = int(max_points)

    def budget(self, n_params: int) -> int:
        return self.grid_size**n_params

    def _refuse(self, space: LambdaSpace, max_trials: int | None) -> None:
        size = self.budget(space.dim)
        if size > self.max_points and (max_trials is None or max_trials > self.max_points):
            raise GridTooLarge(
                f"the full grid has {self.grid_size}^{space.dim} = {size} points, more than "
                f"max_points={self.max_points}; use a coordinate search, fewer grid points "
                f"({{grid_size}}), or score at most {self.max_points} of them ({{n_trials}})"
            )

    def _plan(self, space: LambdaSpace) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
        return full_grid_search(space, self.grid)
