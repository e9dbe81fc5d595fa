"""One registry of samplers by name, used by the estimator, the command line and the experiments."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import optuna

from optuna_boxcox.samplers._coordinate import PRESETS
from optuna_boxcox.samplers._coordinate import CoordinateGridSampler
from optuna_boxcox.samplers._diagonal import DiagonalSampler
from optuna_boxcox.samplers._full_grid import FullGridSampler
from optuna_boxcox.samplers._mle import MLESampler
from optuna_boxcox.samplers._nelder_mead import NelderMeadSampler
from optuna_boxcox.samplers._spherical import SphericalSampler

if TYPE_CHECKING:
    from collections.abc import Callable

    from optuna.samplers import BaseSampler


def _tpe(seed: int, **kwargs: Any) -> BaseSampler:
    return optuna.samplers.TPESampler(seed=seed, multivariate=True, **kwargs)


def _gp(seed: int, **kwargs: Any) -> BaseSampler:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise ValueError("the 'gp' sampler (Optuna's GPSampler) needs PyTorch: pip install torch")
    return _quietly(optuna.samplers.GPSampler, seed=seed, **kwargs)


def _quietly(cls: Callable[..., BaseSampler], **kwargs: Any) -> BaseSampler:
    """``cls(**kwargs)`` without Optuna's ExperimentalWarning ("QMCSampler is experimental …"):
    the user chose the sampler by name, and the warning says nothing they can act on."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return cls(**kwargs)


def _cmaes(seed: int, **kwargs: Any) -> BaseSampler:
    return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False, **kwargs)


def _nsga2(seed: int, **kwargs: Any) -> BaseSampler:
    # Multi-objective: the Pareto front of score and features kept (BoxCoxObjective's
    # objectives=("score", "n_features")); on one objective a genetic algorithm.
    return optuna.samplers.NSGAIISampler(seed=seed, **kwargs)


def _paper(cls: type, **fixed: Any) -> Callable[..., BaseSampler]:
    def make(seed: int, **kwargs: Any) -> BaseSampler:
        return cls(seed=seed, **{**fixed, **kwargs})

    make.__doc__ = cls.__doc__
    return make


#: Sampler factories by name: ``factory(seed, **settings) -> BaseSampler``.
SAMPLERS: dict[str, Callable[..., BaseSampler]] = {
    "coordinate": _paper(CoordinateGridSampler),
    **{preset: _paper(CoordinateGridSampler, **settings) for preset, settings in PRESETS.items()},
    "spherical": _paper(SphericalSampler),
    "diagonal": _paper(DiagonalSampler),
    "grid": _paper(FullGridSampler),
    "mle": _paper(MLESampler),
    "nelder-mead": _paper(NelderMeadSampler),
    "tpe": _tpe,
    "random": lambda seed, **kw: optuna.samplers.RandomSampler(seed=seed, **kw),
    "cmaes": _cmaes,
    "qmc": lambda seed, **kw: _quietly(optuna.samplers.QMCSampler, seed=seed, **kw),
    "gp": _gp,
    "nsga2": _nsga2,
}


def make_sampler(name: str, seed: int = 0, **settings: Any) -> BaseSampler:
    """A sampler by registry name (see :data:`SAMPLERS`); ``coordinate:<preset>`` also works.

    ``coordinate`` alone is the paper's plain iterative search (Table 4, first row).
    """
    key = name.strip().lower()
    if key.startswith("coordinate:"):
        key = key.split(":", 1)[1]
    if key not in SAMPLERS:
        raise ValueError(f"unknown sampler {name!r}; choose one of {', '.join(SAMPLERS)}")
    return SAMPLERS[key](seed, **settings)
