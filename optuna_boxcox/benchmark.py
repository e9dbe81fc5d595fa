"""Moved to :mod:`optuna_boxcox.experiments.benchmark` (the applications that run many studies live in
:mod:`optuna_boxcox.experiments`); this path leads there, with a DeprecationWarning, for one release."""

from optuna_boxcox._lazy import moved_module

moved_module(__name__, "optuna_boxcox.experiments.benchmark")
