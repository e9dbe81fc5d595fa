"""optuna-boxcox: per-feature Box-Cox λ chosen for a classifier, searched with Optuna samplers."""

from __future__ import annotations

__version__ = "0.1.0"
