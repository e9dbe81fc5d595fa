"""Two facets of :class:`~optuna_boxcox.BoxCoxObjective`, each a part of its public interface over
one of its parts (its class docstring documents the whole)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution

from optuna_boxcox._objective._points import Configuration
from optuna_boxcox._study._spec import OBJECTIVES

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence


class PointsFacet:
    """The objective's questions about points, answered by its λ space and :class:`~._points.Points`:
    the parameters, params ↔ vectors, what a point makes of each feature and keeps."""

    @property
    def param_names(self) -> list[str]:
        """The λ parameters' names, in feature order (the features' names)."""
        return list(self.names)

    @property
    def search_space(self) -> dict[str, BaseDistribution]:
        """Every parameter of a trial: the λ, and any transform choice and setting."""
        return self.space.distributions()

    @property
    def directions(self) -> list[str]:
        """The study directions ``objectives`` needs (``optuna.create_study(directions=...)``)."""
        return [OBJECTIVES[o] for o in self.objectives]

    @property
    def initial_params(self) -> dict[str, Any]:
        """The search's starting point G (default: per-feature Box-Cox MLE), as a params dict."""
        return self.space.to_params(self.space.initial)

    @property
    def mle_params(self) -> dict[str, float]:
        """The per-feature maximum-likelihood λ (clipped into the domain), as a params dict."""
        return {n: float(v) for n, v in zip(self.names, self.mle_lambdas)}

    def to_params(self, lambdas: Sequence[float]) -> dict[str, Any]:
        """Point (or λ vector, see :meth:`evaluate`) → params dict."""
        return self._points.to_params(lambdas)

    def to_lambdas(self, params: Mapping[str, Any]) -> np.ndarray:
        """Params dict (e.g. ``study.best_params``) → λ vector in feature order."""
        return self._points.to_lambdas(params)

    def to_point(self, params: Mapping[str, Any]) -> np.ndarray:
        """Params dict → the point's vector (λ, transform indices, settings in search order); the
        same as :meth:`to_lambdas` for the paper's space."""
        return self.space.to_vector(params)

    def configuration(self, point: Sequence[float] | Mapping[str, Any]) -> Configuration:
        """What a point (vector, λ vector or params dict) makes of each feature and the classifier."""
        return self._points.configuration(self._points.vector(point))

    def cache_key(self, point: Sequence[float] | Mapping[str, Any]) -> bytes:
        """What identifies a point's score: equal keys, equal models (a λ a feature's transform
        ignores does not count)."""
        return self._points.key(self._points.vector(point))

    def n_kept(self, point: Sequence[float] | Mapping[str, Any]) -> int:
        """Features a point keeps (those not dropped), the second objective's value."""
        return self._points.n_kept(self._points.vector(point))


class ChoiceFacet:
    """What the objective chose to compute with, and why: the evaluator, how a batch shares work,
    the memory and fidelity (:meth:`describe`, recorded on a study)."""

    @property
    def evaluator(self) -> str:
        """How a Λ is scored here: ``"knn:incremental"``, ``"knn:blockwise"``, ``"svc:precomputed"``,
        ``"svc:blockwise"``, ``"gaussian-nb"``, ``"sgd"``, ``"logistic"``, ``"criterion:<name>"`` or
        ``"sklearn"`` (scikit-learn's fit and predict), chosen once from the classifier, the scoring
        and the memory limit (see :mod:`optuna_boxcox._objective._evaluators`)."""
        return self._evaluation.name

    @property
    def generic_estimator(self) -> Any:
        """The estimator scikit-learn's path fits at the starting settings: the classifier, or an
        SVC with its kernel cache cut to fit the memory limit."""
        return self._evaluation.generic

    @property
    def batch_work(self) -> str:
        """How :meth:`evaluate_batch` shares work between the points of a batch: ``"sweep"``
        (k-NN: the distances over the unswept columns once per sweep), ``"threads"`` (points side
        by side) or ``"sequential"`` (one after another, nothing shared)."""
        if self._evaluation.shares_sweeps:
            return "sweep"
        return "threads" if self._evaluation.batch_threads > 1 else "sequential"

    def describe(self) -> dict[str, Any]:
        """What the objective chose and why, JSON-serialisable (for recording on a study).

        Keys: ``evaluator`` (see :attr:`evaluator`), ``batch`` (how :meth:`evaluate_batch` shares
        work: ``"sweep"``, ``"threads"`` or ``"sequential"``), ``memory_limit`` and
        ``estimated_peak_bytes`` (the objective's own allocations at their peak, by the footprints
        stated before allocating), ``memory`` (that estimate per part), ``n_samples`` (rows given),
        ``n_scored`` (rows each Λ is scored on), ``subsample``, ``n_features``, ``n_threads``,
        ``batch_threads``, ``cache_capacity`` (scores kept before the oldest are dropped) and
        ``fidelity`` (the :attr:`rungs` and why: ``auto``'s timings and estimates).
        """
        return {
            "evaluator": self.evaluator,
            "batch": self.batch_work,
            "memory_limit": int(self.budget.limit),
            "estimated_peak_bytes": int(self.budget.used),
            "memory": {name: int(size) for name, size in self.budget.reserved.items()},
            "n_samples": int(self.n_samples),
            "n_scored": len(self.X),
            "subsample": None if self.subsample is None else int(self.subsample),
            "n_features": len(self.names),
            "n_threads": int(self.n_threads),
            "batch_threads": int(self._evaluation.batch_threads),
            "cache_capacity": int(self._cache.capacity),
            "fidelity": self._rungs.choice.to_attrs(),
        }
