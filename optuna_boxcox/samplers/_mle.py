"""The paper's MLE baseline: one trial at the per-feature maximum-likelihood λ."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from optuna_boxcox.samplers._driver import Batch
from optuna_boxcox.samplers._plan import PlanSampler

if TYPE_CHECKING:
    from collections.abc import Generator

    from optuna_boxcox._study._space import LambdaSpace


def mle_search(space: LambdaSpace) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
    """One trial at the starting point G, which the objective sets to the Box-Cox MLE (SPEC §5)."""
    scores = yield Batch([space.initial.copy()], [{"phase": "mle"}], space.initial.copy(), -np.inf)
    return space.initial.copy(), float(scores[0])


class MLESampler(PlanSampler):
    """One trial: each λ at the Box-Cox maximum-likelihood estimate of its [1, 2]-scaled column.

    The MLE point is the objective's starting point (``BoxCoxObjective.initial_params``), clipped
    into the domain.
    """

    name = "mle"

    def settings(self) -> dict[str, Any]:
        return {}

    def budget(self, n_params: int) -> int:
        return 1

    def _plan(self, space: LambdaSpace) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
        return mle_search(space)
