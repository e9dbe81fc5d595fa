"""The paper's search strategies as Optuna samplers.

- ``_plan``: :class:`PlanSampler`, a paper algorithm's plan as an Optuna sampler, with ``_driver``
  (the plan driver), ``_ledger`` (a study's positions), ``_run`` (the batched runners' protocol)
  and ``_grid`` (plans over a fixed grid);
- ``_coordinate``, ``_diagonal``, ``_spherical``, ``_full_grid``, ``_mle``, ``_nelder_mead``: the
  paper's algorithms and Nelder–Mead;
- ``_registry``: samplers by name (:func:`make_sampler`).
"""

from __future__ import annotations

from optuna_boxcox.samplers._coordinate import PRESETS
from optuna_boxcox.samplers._coordinate import CoordinateGridSampler
from optuna_boxcox.samplers._diagonal import DiagonalSampler
from optuna_boxcox.samplers._driver import SearchResult
from optuna_boxcox.samplers._full_grid import FullGridSampler
from optuna_boxcox.samplers._mle import MLESampler
from optuna_boxcox.samplers._nelder_mead import NelderMeadSampler
from optuna_boxcox.samplers._plan import PlanSampler
from optuna_boxcox.samplers._registry import SAMPLERS
from optuna_boxcox.samplers._registry import make_sampler
from optuna_boxcox.samplers._registry import record_sampler
from optuna_boxcox.samplers._run import PendingPoints
from optuna_boxcox.samplers._run import PlanRun
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
