"""A plan sampler over a fixed grid of points (the diagonal, spherical and full-grid searches)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from optuna.distributions import FloatDistribution
from optuna.samplers import BaseSampler

from optuna_boxcox.samplers._driver import is_positive_int
from optuna_boxcox.samplers._plan import PlanSampler

if TYPE_CHECKING:
    from collections.abc import Mapping


class GridPlanSampler(PlanSampler):
    """A plan sampler over the paper's grid ``linspace(*grid_range, grid_size)`` (Algorithms 5, 7, 8)."""

    def __init__(
        self,
        *,
        grid_size: int = 11,
        grid_range: tuple[float, float] = (-5.0, 5.0),
        seed: int = 0,
        search_space: Mapping[str, FloatDistribution] | None = None,
        initial_params: Mapping[str, float] | None = None,
        independent_sampler: BaseSampler | None = None,
        max_retries: int = 3,
    ) -> None:
        if not is_positive_int(grid_size):
            raise ValueError(f"grid_size must be a positive integer, got {grid_size!r}")
        lo, hi = (float(v) for v in grid_range)
        if not lo < hi:
            raise ValueError(f"grid_range must be (low, high) with low < high, got {grid_range}")
        super().__init__(
            search_space=search_space,
            initial_params=initial_params,
            seed=seed,
            independent_sampler=independent_sampler,
            max_retries=max_retries,
        )
        self.grid_size = int(grid_size)
        self.grid_range = (lo, hi)

    @property
    def sweep_size(self) -> int:  # type: ignore[override]
        return self.grid_size

    @property
    def grid(self) -> np.ndarray:
        return np.linspace(self.grid_range[0], self.grid_range[1], self.grid_size)

    def settings(self) -> dict[str, Any]:
        return {"grid_size": self.grid_size, "grid_range": list(self.grid_range)}
