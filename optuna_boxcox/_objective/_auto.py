"""``auto``'s decision: price the search from the classifier's cost class and the data's shape,
then choose exact or halving (:func:`~optuna_boxcox._study._fidelity.choose_fidelity`).

Nothing is timed: a timing depends on the machine and on what else runs on it, and a choice made
from one gave other rungs, hence other λ, on a busy machine than on a quiet one. The price of a
new point on ``n`` rows is the cost class's (:class:`~optuna_boxcox._objective._evaluators.CostClass`,
seconds on the reference machine) times the inner folds; a classifier the evaluators' registry
does not know is priced by ``GENERIC_COST``. The rule's inputs are recorded with the choice.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from optuna_boxcox._objective._evaluators import CostClass
from optuna_boxcox._study._fidelity import TYPICAL_BATCH
from optuna_boxcox._study._fidelity import TYPICAL_POSITIONS_PER_FEATURE
from optuna_boxcox._study._fidelity import AutoFidelity
from optuna_boxcox._study._fidelity import CostModel
from optuna_boxcox._study._fidelity import FidelityChoice
from optuna_boxcox._study._fidelity import choose_fidelity
from optuna_boxcox._study._fidelity import expected_new_points
from optuna_boxcox._study._fidelity import rung_floor
from optuna_boxcox._study._plan_size import plan_size

#: Rows at which the cost class is priced for the cost model (then every doubling up to the
#: data's rows): the model interpolates between them in log-log, which is exact for a power law.
PRICE_FROM_ROWS = 100


@dataclass(frozen=True)
class Pricing:
    """What ``auto`` prices a search from: the classifier's cost class and the data's shape.

    Args:
        cost: The cost class (seconds a new point costs on the reference machine).
        features: Columns of the data (λ parameters).
        classes: Classes of the labels.
        folds: Fits a score takes (1 for resubstitution, else the inner folds).
        classifier: The classifier's class name, for the record.
    """

    cost: CostClass
    features: int
    classes: int
    folds: int = 1
    classifier: str = ""

    def seconds(self, rows: int) -> float:
        """Seconds a new point costs on ``rows`` rows."""
        return self.folds * self.cost.seconds(rows, self.features, self.classes)

    def model(self, n_samples: int) -> CostModel:
        """The cost model of :func:`choose_fidelity`, priced at 100, 200, … rows and at all."""
        rows, priced = min(PRICE_FROM_ROWS, n_samples), []
        while rows < n_samples:
            priced.append((rows, self.seconds(rows)))
            rows *= 2
        priced.append((n_samples, self.seconds(n_samples)))
        return CostModel(tuple(priced), self.cost.sweep_ratio, TYPICAL_BATCH)

    def to_attrs(self) -> dict[str, Any]:
        """The rule's inputs, recorded with the choice."""
        return {
            "classifier": self.classifier,
            "cost_class": self.cost.to_attrs(),
            "features": int(self.features),
            "classes": int(self.classes),
            "folds": int(self.folds),
        }


def choose_auto(
    request: AutoFidelity,
    pricing: Pricing,
    n_samples: int,
    n_params: int,
    sampler: Any = None,
) -> FidelityChoice:
    """Price and choose: :func:`choose_fidelity` with the cost model of ``pricing`` and the
    plan's size from the request, else from the sampler, else the typical one. Exact where the
    rows are too few for two rungs. A function of its arguments alone."""
    size = plan_size(sampler, n_params)
    positions = request.positions or size.trials or TYPICAL_POSITIONS_PER_FEATURE * n_params
    batch = request.batch or size.batch or TYPICAL_BATCH
    new_points = expected_new_points(positions, n_params, batch)
    sizes = dict(positions=positions, batch=batch, new_points=new_points, default=request.default)
    inputs = pricing.to_attrs()
    floor = request.eta * rung_floor(pricing.classes)
    if n_samples < floor:
        # Too few rows for two rungs: exact is the only choice.
        return FidelityChoice(None, "auto", f"fewer than {floor:,} rows", inputs=inputs, **sizes)
    choice = choose_fidelity(
        n_samples,
        pricing.classes,
        pricing.model(n_samples),
        positions=positions,
        batch=batch,
        budget_seconds=request.budget_seconds,
        eta=request.eta,
        new_points=new_points,
    )
    return dataclasses.replace(choice, default=request.default, inputs=inputs)
