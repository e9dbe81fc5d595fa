"""The paper's search strategies as Optuna samplers."""

from __future__ import annotations

from optuna_boxcox.samplers._coordinate import PRESETS
from optuna_boxcox.samplers._coordinate import CoordinateGridSampler
from optuna_boxcox.samplers._diagonal import DiagonalSampler
from optuna_boxcox.samplers._full_grid import FullGridSampler
from optuna_boxcox.samplers._mle import MLESampler
from optuna_boxcox.samplers._nelder_mead import NelderMeadSampler
from optuna_boxcox.samplers._plan import PendingPoints
from optuna_boxcox.samplers._plan import PlanRun
from optuna_boxcox.samplers._plan import PlanSampler
from optuna_boxcox.samplers._plan import SearchResult
from optuna_boxcox.samplers._registry import SAMPLERS
from optuna_boxcox.samplers._registry import make_sampler
from optuna_boxcox.samplers._registry import record_sampler
from optuna_boxcox.samplers._spherical import SphericalSampler

__all__ = [
    "PRESETS",
    "SAMPLERS",
    "CoordinateGridSampler",
    "DiagonalSampler",
    "FullGridSampler",
    "MLESampler",
    "NelderMeadSampler",
    "PendingPoints",
    "PlanRun",
    "PlanSampler",
    "SearchResult",
    "SphericalSampler",
    "make_sampler",
    "record_sampler",
]
