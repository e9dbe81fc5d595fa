"""What the runner recognises a :class:`~optuna_boxcox.BoxCoxObjective` by without importing it:
the objective's module loads scikit-learn, SciPy and pandas, which a run of a plain Optuna
objective should not pay for."""

from __future__ import annotations


class PointsObjective:
    """Base of the objectives that score points (Λ vectors) in batches and name their trials'
    parameters: :class:`~optuna_boxcox.BoxCoxObjective` is the one."""
