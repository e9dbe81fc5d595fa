"""The λ search space shared by the objective and the samplers (SPEC §3).

The objective declares it (parameter names in feature order, bounds, the MLE starting point) and
records it in the study, so that a sampler in any worker process finds it there without knowing the
objective. This module knows nothing of scikit-learn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from optuna.distributions import FloatDistribution

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.study import Study

#: Study user attribute under which a :class:`~optuna_boxcox.BoxCoxObjective` records its λ space.
SPACE_ATTR = "boxcox_search_space"

#: The paper's grid spans linspace(-5, 5, L).
DEFAULT_GRID_RANGE = (-5.0, 5.0)
#: The default domain is the hull of this interval and [G - 5, G + 5] around the MLE point G.
DEFAULT_DOMAIN = (-10.0, 10.0)
_DOMAIN_MARGIN = 5.0


@dataclass(frozen=True)
class LambdaSpace:
    """Ordered λ parameters with their bounds and starting point.

    Attributes:
        names: Parameter names in feature order (the coordinate search sweeps in this order).
        low, high: Bounds of each λ.
        initial: The starting point G (by default the per-feature Box-Cox MLE), inside the bounds.
    """

    names: tuple[str, ...]
    low: np.ndarray
    high: np.ndarray
    initial: np.ndarray

    def __post_init__(self) -> None:
        p = len(self.names)
        if len(set(self.names)) != p:
            raise ValueError(f"λ parameter names must be unique, got {list(self.names)}")
        for field in ("low", "high", "initial"):
            value = np.asarray(getattr(self, field), dtype=np.float64)
            if value.shape != (p,):
                raise ValueError(
                    f"{field} must have one entry per λ ({p}), got shape {value.shape}"
                )
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{field} must be finite, got {value.tolist()}")
            object.__setattr__(self, field, value)
        bad = [n for n, lo, hi in zip(self.names, self.low, self.high) if not lo < hi]
        if bad:
            raise ValueError(
                f"λ bounds must satisfy low < high; they do not for {bad} "
                "(was the domain given backwards?)"
            )
        object.__setattr__(self, "initial", self.clip(self.initial))

    @property
    def dim(self) -> int:
        return len(self.names)

    def clip(self, x: np.ndarray) -> np.ndarray:
        return np.clip(np.asarray(x, dtype=np.float64), self.low, self.high)

    def distributions(self) -> dict[str, FloatDistribution]:
        return {
            n: FloatDistribution(float(lo), float(hi))
            for n, lo, hi in zip(self.names, self.low, self.high)
        }

    def to_params(self, x: Sequence[float]) -> dict[str, float]:
        return {n: float(v) for n, v in zip(self.names, x)}

    def to_vector(self, params: Mapping[str, float]) -> np.ndarray:
        missing = [n for n in self.names if n not in params]
        if missing:
            raise KeyError(f"params lack the λ of {missing}")
        return np.array([float(params[n]) for n in self.names])

    # -- persistence in a study ------------------------------------------------------------
    def to_attr(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "initial": self.initial.tolist(),
        }

    @classmethod
    def from_attr(cls, attr: Mapping[str, Any]) -> LambdaSpace:
        return cls(tuple(attr["names"]), attr["low"], attr["high"], attr["initial"])

    @classmethod
    def from_study(cls, study: Study) -> LambdaSpace | None:
        attr = study.user_attrs.get(SPACE_ATTR)
        return None if attr is None else cls.from_attr(attr)

    @classmethod
    def from_distributions(
        cls,
        distributions: Mapping[str, FloatDistribution],
        initial: Mapping[str, float] | None = None,
    ) -> LambdaSpace:
        """A space from Optuna distributions; without ``initial`` it starts at λ = 1 (no transform)."""
        names = tuple(distributions)
        low = [distributions[n].low for n in names]
        high = [distributions[n].high for n in names]
        start = [1.0 if initial is None else initial[n] for n in names]
        return cls(names, low, high, start)


def default_bounds(initial: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SPEC §3: the hull of [-10, 10] and [G - 5, G + 5], per feature."""
    initial = np.asarray(initial, dtype=np.float64)
    low = np.minimum(DEFAULT_DOMAIN[0], initial - _DOMAIN_MARGIN)
    high = np.maximum(DEFAULT_DOMAIN[1], initial + _DOMAIN_MARGIN)
    return low, high
