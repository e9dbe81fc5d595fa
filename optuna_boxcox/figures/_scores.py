"""What figures need scored that the study does not hold: the objective and the classifier-free
criteria along a sweep, the score over a λ grid, and the reference scores of a search's note (at
λ = 1 and at the MLE). Every number is asked of the objective; nothing here draws."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import optuna
from optuna.trial import FrozenTrial

from optuna_boxcox._math import _criteria
from optuna_boxcox._math import _numerics

if TYPE_CHECKING:
    from collections.abc import Mapping

    from optuna_boxcox._objective._objective import BoxCoxObjective

    #: One search's finished trials: the study, or the trials themselves.
    Run = optuna.Study | Sequence[FrozenTrial]


def spherical_curves(
    objective: BoxCoxObjective, c: Sequence[float], criteria: Sequence[str]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The objective's score and each criterion at every point λ = (c, …, c) of the spherical sweep."""
    unknown = [name for name in criteria if name not in _criteria.CRITERIA]
    if unknown:
        raise ValueError(f"unknown criteria {unknown}; choose from {list(_criteria.CRITERIA)}")
    p = objective.space.dim
    score = np.array([objective.evaluate(np.full(p, float(ci))) for ci in c])
    curves = {name: np.empty(len(score)) for name in criteria}
    for i, ci in enumerate(c):
        lambdas = np.full(p, float(ci))
        for name in criteria:
            curves[name][i] = _criterion_value(objective, name, lambdas)
    return score, curves


def _criterion_value(objective: BoxCoxObjective, name: str, lambdas: np.ndarray) -> float:
    criterion = _criteria.CRITERIA[name]
    labels = (objective.y,) if criterion.needs_labels else ()
    if criterion.data == "scaled":
        return float(criterion.function(objective.transform(lambdas), *labels))
    transformed = _numerics.power_columns(objective.values, lambdas, objective.method)
    return float(
        criterion.function(
            objective.values, transformed, lambdas, *labels, method=objective.method
        )
    )


def grid_scores(objective: BoxCoxObjective, grid: np.ndarray) -> list[list[float]]:
    """The objective's score at every (λ1, λ2) of ``grid`` × ``grid``, a row per λ2."""
    return [[objective.evaluate(np.array([l1, l2])) for l1 in grid] for l2 in grid]


def note_scores(
    objective: BoxCoxObjective,
    params: Mapping[str, float],
    *,
    base_score: float | None,
    mle_score: float | None,
    chosen_score: float | None,
) -> tuple[float, float, float]:
    """The scores at λ = 1, at the MLE and at ``params``, each computed unless given."""
    base = (
        objective.evaluate(np.ones(len(objective.param_names)))
        if base_score is None
        else base_score
    )
    mle = objective.evaluate(objective.mle_lambdas) if mle_score is None else mle_score
    chosen = (
        objective.evaluate(objective.to_point(params)) if chosen_score is None else chosen_score
    )
    return base, mle, chosen
