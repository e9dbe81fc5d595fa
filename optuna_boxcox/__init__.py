"""optuna-boxcox: per-feature Box-Cox λ chosen for a classifier, searched with Optuna samplers.

Blum, Elgendi & Menon (2022), "Impact of Box-Cox Transformation on Machine-Learning Algorithms".
"""

from __future__ import annotations

from optuna_boxcox._classifier import BoxCoxClassifier
from optuna_boxcox._objective import BoxCoxObjective
from optuna_boxcox._transform import BoxCoxTransformer
from optuna_boxcox._transform import box_cox
from optuna_boxcox.samplers import PRESETS
from optuna_boxcox.samplers import SAMPLERS
from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.samplers import DiagonalSampler
from optuna_boxcox.samplers import FullGridSampler
from optuna_boxcox.samplers import MLESampler
from optuna_boxcox.samplers import NelderMeadSampler
from optuna_boxcox.samplers import SearchResult
from optuna_boxcox.samplers import SphericalSampler
from optuna_boxcox.samplers import make_sampler

__version__ = "0.1.0"

__all__ = [
    "PRESETS",
    "SAMPLERS",
    "BoxCoxClassifier",
    "BoxCoxObjective",
    "BoxCoxTransformer",
    "CoordinateGridSampler",
    "DiagonalSampler",
    "FullGridSampler",
    "MLESampler",
    "NelderMeadSampler",
    "SearchResult",
    "SphericalSampler",
    "box_cox",
    "make_sampler",
]
