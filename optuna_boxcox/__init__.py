"""optuna-boxcox: per-feature Box-Cox λ chosen for a classifier, searched with Optuna samplers.

Blum, Elgendi & Menon (2022), "Impact of Box-Cox Transformation on Machine-Learning Algorithms".

The public names are imported on first use, so that ``import optuna_boxcox`` (and the command
line's ``--help``) does not pay for scikit-learn, Optuna and Numba until they are needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from optuna_boxcox._lazy import lazy_getattr
from optuna_boxcox._version import __version__

if TYPE_CHECKING:
    from optuna_boxcox._classifier import BoxCoxClassifier
    from optuna_boxcox._math._transform import BoxCoxTransformer
    from optuna_boxcox._math._transform import box_cox
    from optuna_boxcox._objective._evaluators import MonotoneInvariantWarning
    from optuna_boxcox._objective._objective import BoxCoxObjective
    from optuna_boxcox._runner import optimize
    from optuna_boxcox._study._fidelity import AutoFidelity
    from optuna_boxcox._study._fidelity import Fidelity
    from optuna_boxcox._study._spec import ForeignStudy
    from optuna_boxcox._study._spec import SearchSpec
    from optuna_boxcox._study._spec import StudyMismatch
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

#: Public name → the module that defines it.
_EXPORTS = {
    "BoxCoxClassifier": "optuna_boxcox._classifier",
    "AutoFidelity": "optuna_boxcox._study._fidelity",
    "Fidelity": "optuna_boxcox._study._fidelity",
    "BoxCoxObjective": "optuna_boxcox._objective._objective",
    "BoxCoxTransformer": "optuna_boxcox._math._transform",
    "box_cox": "optuna_boxcox._math._transform",
    "optimize": "optuna_boxcox._runner",
    "MonotoneInvariantWarning": "optuna_boxcox._objective._evaluators",
    "ForeignStudy": "optuna_boxcox._study._spec",
    "SearchSpec": "optuna_boxcox._study._spec",
    "StudyMismatch": "optuna_boxcox._study._spec",
    "PRESETS": "optuna_boxcox.samplers",
    "SAMPLERS": "optuna_boxcox.samplers",
    "CoordinateGridSampler": "optuna_boxcox.samplers",
    "DiagonalSampler": "optuna_boxcox.samplers",
    "FullGridSampler": "optuna_boxcox.samplers",
    "MLESampler": "optuna_boxcox.samplers",
    "NelderMeadSampler": "optuna_boxcox.samplers",
    "SearchResult": "optuna_boxcox.samplers",
    "SphericalSampler": "optuna_boxcox.samplers",
    "make_sampler": "optuna_boxcox.samplers",
}

__all__ = [
    "PRESETS",
    "SAMPLERS",
    "AutoFidelity",
    "BoxCoxClassifier",
    "BoxCoxObjective",
    "BoxCoxTransformer",
    "CoordinateGridSampler",
    "DiagonalSampler",
    "Fidelity",
    "ForeignStudy",
    "FullGridSampler",
    "MLESampler",
    "MonotoneInvariantWarning",
    "NelderMeadSampler",
    "SearchResult",
    "SearchSpec",
    "SphericalSampler",
    "StudyMismatch",
    "__version__",
    "box_cox",
    "make_sampler",
    "optimize",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
