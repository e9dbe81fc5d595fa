"""The search space shared by the objective and the samplers (SPEC §3): one coordinate per λ, and
optionally per feature's transform choice and per classifier setting.

The objective declares it (parameter names in search order, bounds, the starting point) and records it
in the study, so that a sampler in any worker process finds it there without knowing the objective.
The paper's space has one λ per feature and nothing else; a space may also hold

- a *transform* coordinate per feature (``"<feature>:transform"``, a categorical parameter over
  :data:`TRANSFORMS`), placed right before that feature's λ;
- *setting* coordinates (``"estimator:<name>"``), one per classifier setting searched, any Optuna
  distribution.

Samplers work on numeric vectors, one entry per coordinate: a λ as it is, every other coordinate in
Optuna's internal representation (a categorical's index, an int's value). The space converts vectors
to Optuna params and back. This module knows nothing of scikit-learn.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.distributions import distribution_to_json
from optuna.distributions import json_to_distribution

from optuna_boxcox._study._spec import SPACE_ATTR

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.study import Study


#: The paper's grid spans linspace(-5, 5, L).
DEFAULT_GRID_RANGE = (-5.0, 5.0)
#: The default domain is the hull of this interval and [G - 5, G + 5] around the MLE point G.
DEFAULT_DOMAIN = (-10.0, 10.0)
_DOMAIN_MARGIN = 5.0

#: Kinds of coordinates: a feature's λ, a feature's transform choice, a classifier setting.
LAMBDA = "lambda"
TRANSFORM = "transform"
SETTING = "setting"
KINDS = (LAMBDA, TRANSFORM, SETTING)
#: What a transform coordinate chooses between: a power transform with the feature's λ, the
#: standardized raw feature, or leaving the feature out.
TRANSFORMS = ("box-cox", "yeo-johnson", "identity", "drop")
#: Suffix of a transform coordinate's name and prefix of a setting's.
TRANSFORM_SUFFIX = ":transform"
SETTING_PREFIX = "estimator:"


@dataclass(frozen=True)
class LambdaSpace:
    """Ordered search coordinates with their bounds and starting point.

    Attributes:
        names: Parameter names in search order (the coordinate search sweeps in this order).
        low, high: Bounds of each coordinate, in vector units (a categorical's indices).
        initial: The starting point G (by default the per-feature Box-Cox MLE for the λ), inside
            the bounds.
        kinds: Each coordinate's kind (:data:`LAMBDA`, :data:`TRANSFORM`, :data:`SETTING`); empty
            when every coordinate is a λ (the paper's space).
        others: The Optuna distribution of each coordinate that is not a λ, by name.
    """

    names: tuple[str, ...]
    low: np.ndarray
    high: np.ndarray
    initial: np.ndarray
    kinds: tuple[str, ...] = ()
    others: Mapping[str, BaseDistribution] = field(default_factory=dict)

    def __post_init__(self) -> None:
        p = len(self.names)
        if len(set(self.names)) != p:
            raise ValueError(f"λ parameter names must be unique, got {list(self.names)}")
        kinds = tuple(self.kinds)
        if kinds and len(kinds) != p:
            raise ValueError(f"kinds must have one entry per coordinate ({p}), got {len(kinds)}")
        if any(k not in KINDS for k in kinds):
            raise ValueError(f"kinds must be among {KINDS}, got {sorted(set(kinds) - set(KINDS))}")
        if all(k == LAMBDA for k in kinds):
            kinds = ()  # the paper's space, recorded as it always was
        object.__setattr__(self, "kinds", kinds)
        wanted = [n for n, k in zip(self.names, kinds) if k != LAMBDA]
        missing = [n for n in wanted if n not in self.others]
        if missing:
            raise ValueError(f"coordinates {missing} that are not λ need a distribution")
        object.__setattr__(self, "others", {n: self.others[n] for n in wanted})
        for field_name in ("low", "high", "initial"):
            value = np.asarray(getattr(self, field_name), dtype=np.float64)
            if value.shape != (p,):
                raise ValueError(
                    f"{field_name} must have one entry per λ ({p}), got shape {value.shape}"
                )
            if not np.all(np.isfinite(value)):
                raise ValueError(f"{field_name} must be finite, got {value.tolist()}")
            object.__setattr__(self, field_name, value)
        is_lambda = self.is_lambda
        bad = [
            n
            for n, lo, hi, lam in zip(self.names, self.low, self.high, is_lambda)
            if not (lo < hi if lam else lo <= hi)
        ]
        if bad:
            raise ValueError(
                f"λ bounds must satisfy low < high; they do not for {bad} "
                "(was the domain given backwards?)"
            )
        object.__setattr__(self, "initial", self.clip(self.initial))

    @classmethod
    def of(
        cls,
        coordinates: Sequence[tuple[str, str, BaseDistribution | tuple[float, float], Any]],
    ) -> LambdaSpace:
        """A space from ``(name, kind, distribution, initial)`` per coordinate, in search order.

        A λ's distribution is its ``(low, high)`` bounds and its initial value a float; any other
        coordinate's is an Optuna distribution and its initial value one of its values (a choice,
        an int, a float).
        """
        names, kinds, low, high, initial, others = [], [], [], [], [], {}
        for name, kind, distribution, start in coordinates:
            names.append(name)
            kinds.append(kind)
            if kind == LAMBDA:
                lo, hi = distribution
                value = float(start)
            else:
                others[name] = distribution
                lo, hi = _numeric_bounds(distribution)
                value = distribution.to_internal_repr(start)
            low.append(float(lo))
            high.append(float(hi))
            initial.append(float(value))
        return cls(tuple(names), low, high, initial, tuple(kinds), others)

    @property
    def dim(self) -> int:
        return len(self.names)

    @property
    def lambdas_only(self) -> bool:
        """Whether every coordinate is a λ (the paper's space)."""
        return not self.kinds

    @property
    def is_lambda(self) -> np.ndarray:
        """Per coordinate, whether it is a λ."""
        if not self.kinds:
            return np.ones(self.dim, dtype=bool)
        return np.array([k == LAMBDA for k in self.kinds], dtype=bool)

    def kind(self, d: int) -> str:
        return self.kinds[d] if self.kinds else LAMBDA

    def clip(self, x: np.ndarray) -> np.ndarray:
        return np.clip(np.asarray(x, dtype=np.float64), self.low, self.high)

    def along(self, base: np.ndarray, d: int, values: Sequence[float]) -> list[np.ndarray]:
        """One point per value: a copy of ``base`` with coordinate ``d`` set to it, clipped to d's bounds."""
        points = []
        # One clip for all values (a clip per value was most of a sweep's planning time).
        for value in np.clip(np.asarray(values, dtype=np.float64), self.low[d], self.high[d]):
            x = base.copy()
            x[d] = value
            points.append(x)
        return points

    def grid(self, d: int, size: int) -> np.ndarray:
        """The candidates of a sweep over coordinate ``d`` that is not a λ, in vector units: every
        choice of a categorical, an int range thinned to at most ``size`` values, ``size`` values of
        a float range (spaced logarithmically for a log distribution)."""
        distribution = self.others[self.names[d]]
        if isinstance(distribution, CategoricalDistribution):
            return np.arange(len(distribution.choices), dtype=np.float64)
        low, high = float(distribution.low), float(distribution.high)
        spaced = np.geomspace if distribution.log else np.linspace
        if isinstance(distribution, IntDistribution):
            step = distribution.step
            count = (int(high) - int(low)) // step + 1
            if count <= size:
                return np.arange(int(low), int(high) + 1, step, dtype=np.float64)
            values = np.round((spaced(low, high, size) - low) / step) * step + low
            return np.unique(np.clip(values, low, high))
        values = spaced(low, high, size)
        if distribution.step is not None:
            values = np.unique(
                np.clip(
                    np.round((values - low) / distribution.step) * distribution.step + low,
                    low,
                    high,
                )
            )
        return values

    def distributions(self) -> dict[str, BaseDistribution]:
        if not self.kinds:
            return {
                n: FloatDistribution(float(lo), float(hi))
                for n, lo, hi in zip(self.names, self.low, self.high)
            }
        return {
            n: self.others[n] if k != LAMBDA else FloatDistribution(float(lo), float(hi))
            for n, k, lo, hi in zip(self.names, self.kinds, self.low, self.high)
        }

    def to_params(self, x: Sequence[float]) -> dict[str, Any]:
        """A vector as Optuna params (a choice for a categorical, an int for an int)."""
        if not self.kinds:
            return {n: float(v) for n, v in zip(self.names, x)}
        others = self.others
        return {
            n: float(v) if n not in others else _external(others[n], float(v))
            for n, v in zip(self.names, x)
        }

    def to_vector(self, params: Mapping[str, Any]) -> np.ndarray:
        """Optuna params as a vector (the inverse of :meth:`to_params`)."""
        missing = [n for n in self.names if n not in params]
        if missing:
            raise KeyError(f"params lack the λ of {missing}")
        if not self.kinds:
            return np.array([float(params[n]) for n in self.names])
        others = self.others
        return np.array(
            [
                float(params[n]) if n not in others else others[n].to_internal_repr(params[n])
                for n in self.names
            ],
            dtype=np.float64,
        )

    def signature(self) -> tuple:
        """Everything that determines a plan on this space, hashable."""
        base = (self.names, tuple(self.low), tuple(self.high), tuple(self.initial))
        if not self.kinds:
            return base
        return (*base, self.kinds, tuple(distribution_to_json(d) for d in self.others.values()))

    # -- persistence in a study ------------------------------------------------------------
    def to_attr(self) -> dict[str, Any]:
        attr: dict[str, Any] = {
            "names": list(self.names),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "initial": self.initial.tolist(),
        }
        if self.kinds:  # only spaces beyond the paper's: theirs stay as they were recorded
            attr["kinds"] = list(self.kinds)
            attr["distributions"] = {n: distribution_to_json(d) for n, d in self.others.items()}
        return attr

    @classmethod
    def from_attr(cls, attr: Mapping[str, Any]) -> LambdaSpace:
        others = {n: json_to_distribution(d) for n, d in attr.get("distributions", {}).items()}
        return cls(
            tuple(attr["names"]),
            attr["low"],
            attr["high"],
            attr["initial"],
            tuple(attr.get("kinds", ())),
            others,
        )

    @classmethod
    def from_study(cls, study: Study) -> LambdaSpace | None:
        attr = study.user_attrs.get(SPACE_ATTR)
        return None if attr is None else cls.from_attr(attr)

    @classmethod
    def from_distributions(
        cls,
        distributions: Mapping[str, BaseDistribution],
        initial: Mapping[str, Any] | None = None,
    ) -> LambdaSpace:
        """A space from Optuna distributions: every FloatDistribution a λ, any other distribution
        a setting. Without ``initial`` it starts at λ = 1 (no transform) and each setting's lowest
        value or first choice."""
        coordinates = []
        for name, distribution in distributions.items():
            if isinstance(distribution, FloatDistribution):
                start = 1.0 if initial is None else initial[name]
                coordinates.append((name, LAMBDA, (distribution.low, distribution.high), start))
            else:
                start = (
                    _external(distribution, _numeric_bounds(distribution)[0])
                    if initial is None
                    else initial[name]
                )
                coordinates.append((name, SETTING, distribution, start))
        return cls.of(coordinates)


def default_bounds(initial: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """SPEC §3: the hull of [-10, 10] and [G - 5, G + 5], per feature."""
    initial = np.asarray(initial, dtype=np.float64)
    low = np.minimum(DEFAULT_DOMAIN[0], initial - _DOMAIN_MARGIN)
    high = np.maximum(DEFAULT_DOMAIN[1], initial + _DOMAIN_MARGIN)
    return low, high


def _numeric_bounds(distribution: BaseDistribution) -> tuple[float, float]:
    """A distribution's range in vector units (a categorical's first and last index)."""
    if isinstance(distribution, CategoricalDistribution):
        return 0.0, float(len(distribution.choices) - 1)
    if isinstance(distribution, (FloatDistribution, IntDistribution)):
        return float(distribution.low), float(distribution.high)
    raise TypeError(f"unsupported distribution {distribution!r}")


def _external(distribution: BaseDistribution, value: float) -> Any:
    """A vector entry as the distribution's value (rounded to an index or an int where needed)."""
    if isinstance(distribution, (CategoricalDistribution, IntDistribution)):
        value = float(round(value))
    return distribution.to_external_repr(value)
