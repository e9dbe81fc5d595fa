"""Points of a Box-Cox search: a vector ↔ a trial's params, and what it makes of each feature.

A point is one value per coordinate of the :class:`~optuna_boxcox._study._space.LambdaSpace`: each
feature's λ, its transform choice when several transforms are searched (an index into
``transforms``), and the classifier settings searched. :class:`Points` converts and checks points
and says what a point keeps, which settings it names, and what identifies its score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution

from optuna_boxcox._study._space import LAMBDA
from optuna_boxcox._study._space import SETTING
from optuna_boxcox._study._space import TRANSFORM

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    import optuna

    from optuna_boxcox._study._space import LambdaSpace


class Configuration(NamedTuple):
    """One point of the search space as a model is built from it.

    Attributes:
        lambdas: The λ of every feature, in feature order.
        transforms: The transform of every feature (``"box-cox"``, ``"yeo-johnson"``,
            ``"identity"`` or ``"drop"``).
        settings: The classifier settings searched, by estimator parameter name.
    """

    lambdas: np.ndarray
    transforms: tuple[str, ...]
    settings: dict[str, Any]


class Points:
    """Conversion and checking of the points of one search space.

    Args:
        space: The search space.
        names: The features, in order (each has a λ coordinate).
        method: The transform of every feature when only one is searched.
        transforms: The transforms a feature may be given.
        estimator_params: The classifier settings searched, in the space's order.
    """

    def __init__(
        self,
        space: LambdaSpace,
        names: Sequence[str],
        method: str,
        transforms: tuple[str, ...],
        estimator_params: Mapping[str, Any],
    ) -> None:
        self.space, self.names, self.method = space, list(names), method
        self.transforms, self.setting_names = transforms, list(estimator_params)
        kinds = [space.kind(d) for d in range(space.dim)]
        #: True for the paper's space: one λ per feature and nothing else.
        self.plain = space.lambdas_only
        self.lambda_at = np.array([d for d, k in enumerate(kinds) if k == LAMBDA])
        self.transform_at = np.array([d for d, k in enumerate(kinds) if k == TRANSFORM], int)
        self.setting_at = [d for d, k in enumerate(kinds) if k == SETTING]
        #: The feature whose column a coordinate changes (-1 for a setting).
        self.feature_at = np.full(space.dim, -1)
        self.feature_at[self.lambda_at] = np.arange(len(self.names))
        if len(self.transform_at):
            self.feature_at[self.transform_at] = np.arange(len(self.names))
        self.drop_choice = transforms.index("drop") if "drop" in transforms else -1
        #: Choices whose column ignores λ (its λ is left out of the cache key).
        self.without_lambda = [c for c, t in enumerate(transforms) if t in ("identity", "drop")]

    # -- conversion ----------------------------------------------------------------------------
    def vector(self, point: Sequence[float] | Mapping[str, Any]) -> np.ndarray:
        """The checked vector of a point given as a vector, a λ vector or a params dict."""
        return self.checked(self.as_vector(point))

    def as_vector(self, point: Any) -> Any:
        if not isinstance(point, np.ndarray) and hasattr(point, "keys"):
            return self.space.to_vector(point)
        if not self.plain and np.shape(point) == (len(self.names),):
            return self.completed(np.asarray(point, dtype=np.float64))
        return point

    def suggest(self, trial: optuna.Trial) -> np.ndarray:
        """The point a trial suggests (its parameters asked of its sampler)."""
        space = self.space
        if self.plain:
            return np.array(
                [
                    trial.suggest_float(n, lo, hi)
                    for n, lo, hi in zip(space.names, space.low, space.high)
                ]
            )
        return space.to_vector(
            {n: _suggest(trial, n, d) for n, d in space.distributions().items()}
        )

    def completed(self, lambdas: np.ndarray) -> np.ndarray:
        """The starting point with these λ (a λ vector in a space with more coordinates)."""
        x = self.space.initial.copy()
        x[self.lambda_at] = lambdas
        return x

    def checked(self, lambdas: Sequence[float]) -> np.ndarray:
        lambdas = np.asarray(lambdas, dtype=np.float64)
        if lambdas.shape != (self.space.dim,):
            expected = (
                "one per feature of X"
                if self.plain
                else f"one per parameter ({', '.join(self.space.names[:3])}, …)"
            )
            raise ValueError(
                f"expected {self.space.dim} λ, {expected}, got an array of shape {lambdas.shape}"
            )
        if not np.isfinite(lambdas).all():
            raise ValueError(f"λ must be finite, got {lambdas.tolist()}")
        if len(self.transform_at):
            choices = lambdas[self.transform_at]
            if np.any((choices != np.rint(choices)) | (choices < 0)) or np.any(
                choices >= len(self.transforms)
            ):
                raise ValueError(
                    f"transform entries must be indices into {list(self.transforms)}, got "
                    f"{choices.tolist()}"
                )
        return lambdas

    def to_params(self, lambdas: Sequence[float]) -> dict[str, Any]:
        """Point (or λ vector) → params dict."""
        lambdas = np.asarray(lambdas, dtype=np.float64)
        if len(lambdas) == len(self.names) and not self.plain:
            lambdas = self.completed(lambdas)
        if len(lambdas) != self.space.dim:
            raise ValueError(f"expected {self.space.dim} λ, got {len(lambdas)}")
        return self.space.to_params(lambdas)

    def to_lambdas(self, params: Mapping[str, Any]) -> np.ndarray:
        """Params dict → λ vector in feature order."""
        if self.plain:
            return self.space.to_vector(params)
        missing = [n for n in self.names if n not in params]
        if missing:
            raise KeyError(f"params lack the λ of {missing}")
        return np.array([float(params[n]) for n in self.names])

    # -- what a point makes of the features and the classifier ----------------------------------
    def features_of(
        self, x: np.ndarray, *, canonical: bool = True
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The λ and the transform choice (an index into ``transforms``; None when there is one
        transform) of every feature; ``canonical``: the λ of a feature whose transform ignores it
        is 0."""
        if self.plain:
            return x, None
        lambdas = x[self.lambda_at]
        if not len(self.transform_at):
            return lambdas, None
        choices = np.rint(x[self.transform_at]).astype(np.intp)
        if canonical and self.without_lambda:
            lambdas = np.where(np.isin(choices, self.without_lambda), 0.0, lambdas)
        return lambdas, choices

    def settings_of(self, x: np.ndarray) -> tuple:
        """The classifier settings of a point, as a hashable tuple in ``estimator_params`` order."""
        if not self.setting_at:
            return ()
        distributions = self.space.others
        return tuple(
            distributions[self.space.names[d]].to_external_repr(
                float(round(x[d]))
                if not isinstance(distributions[self.space.names[d]], FloatDistribution)
                else float(x[d])
            )
            for d in self.setting_at
        )

    def settings_dict(self, settings: tuple) -> dict[str, Any]:
        return dict(zip(self.setting_names, settings))

    def kept(self, x: np.ndarray) -> np.ndarray | None:
        """Which features a point keeps; None when it keeps them all."""
        if self.drop_choice < 0:
            return None
        _, choices = self.features_of(x)
        kept = choices != self.drop_choice
        return None if kept.all() else kept

    def n_kept(self, x: np.ndarray) -> int:
        _, choices = self.features_of(x)
        if choices is None or self.drop_choice < 0:
            return len(self.names)
        return int(np.count_nonzero(choices != self.drop_choice))

    def key(self, x: np.ndarray) -> bytes:
        """The cache key of a checked point: the λ of a feature that is "identity" or "drop" do
        not change its score, and are left out."""
        if self.plain:
            return x.tobytes()
        lambdas, _ = self.features_of(x)
        canonical = x.copy()
        canonical[self.lambda_at] = lambdas
        return canonical.tobytes()

    def configuration(self, x: np.ndarray) -> Configuration:
        lambdas, choices = self.features_of(x, canonical=False)
        transforms = (
            (self.method,) * len(self.names)
            if choices is None
            else tuple(self.transforms[c] for c in choices)
        )
        return Configuration(lambdas.copy(), transforms, self.settings_dict(self.settings_of(x)))


def _suggest(trial: optuna.Trial, name: str, distribution: BaseDistribution) -> Any:
    """``trial.suggest_*`` for one distribution."""
    if isinstance(distribution, CategoricalDistribution):
        return trial.suggest_categorical(name, distribution.choices)
    if isinstance(distribution, IntDistribution):
        return trial.suggest_int(
            name, distribution.low, distribution.high, step=distribution.step, log=distribution.log
        )
    return trial.suggest_float(
        name, distribution.low, distribution.high, step=distribution.step, log=distribution.log
    )


def sweep_column(points: np.ndarray) -> int | None:
    """The one column in which all rows of `points` may differ (the others equal), else None."""
    varies = np.flatnonzero(np.any(points != points[0], axis=0))
    return int(varies[0]) if len(varies) == 1 else None
