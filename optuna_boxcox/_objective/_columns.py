"""The transformed training data of the last point each thread scored, redone column by column."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from optuna_boxcox._math import _numerics

if TYPE_CHECKING:
    from optuna_boxcox._objective._points import Points


#: Values of each temporary of a sweep's columns transformed together: a few MiB at most.
_ROWS_VALUES = 2**20


class TransformedColumns:
    """Per thread, the last point's transformed and standard-scaled matrices; a new point redoes
    only the columns whose λ (or transform) changed — a coordinate search changes one.

    Args:
        X: The scored rows' raw features.
        values: What each feature's λ transforms: Z in [1, 2] for Box-Cox, raw X for Yeo-Johnson.
        power_inputs: The input of each power transform (``"box-cox"``: Z or None when Box-Cox is
            not searched, ``"yeo-johnson"``: X).
        points: The search's points.
    """

    def __init__(
        self,
        X: np.ndarray,
        values: np.ndarray,
        power_inputs: dict[str, np.ndarray | None],
        points: Points,
    ) -> None:
        self.X, self.values, self.points = X, values, points
        self._power_inputs = power_inputs
        self._log_columns: np.ndarray | None = None
        self._local = threading.local()

    def of(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(values, transformed, scaled) of a checked point, this thread's matrices updated in
        place. A dropped feature's column holds zeros."""
        state = self._local
        lambdas, choices = self.points.features_of(x)
        if getattr(state, "lambdas", None) is None:
            # C order: scikit-learn copies (or slows down on) Fortran-ordered input.
            state.lambdas = np.full(len(self.points.names), np.nan)
            state.choices = np.full(len(self.points.names), -1)
            state.transformed = np.empty(self.values.shape)
            state.scaled = np.empty(self.values.shape)
            state.changed = set()  # columns this thread's fast scorer has not seen yet
        changed = lambdas != state.lambdas
        if choices is not None:
            changed |= choices != state.choices
            state.choices = choices.copy()
        for j in np.flatnonzero(changed):
            state.changed.add(int(j))
            choice = -1 if choices is None else int(choices[j])
            column = self.column(int(j), choice, float(lambdas[j]))
            state.transformed[:, j] = column
            state.scaled[:, j] = _numerics.scale_column(column)
        state.lambdas = lambdas.copy()
        return self.values, state.transformed, state.scaled

    def take_changed(self) -> list[int]:
        """The columns this thread changed since the last call (for its fast scorer), in order."""
        changed = sorted(self._local.changed)
        self._local.changed.clear()
        return changed

    def scaled_column(self, j: int, lam: float, choice: int = -1) -> np.ndarray:
        """Column j of the scaled matrix for λ_j = `lam` and that transform choice (what
        :meth:`of` stores)."""
        return _numerics.scale_column(self.column(j, choice, lam))

    def scaled_columns(self, j: int, lambdas: np.ndarray, choices: np.ndarray) -> np.ndarray:
        """:meth:`scaled_column` of each (λ, choice) pair, as the rows of one array: the Box-Cox
        ones transformed and scaled together, the same floats."""
        out = np.empty((len(lambdas), len(self.X)))
        transforms = [self._transform(int(choice)) for choice in choices]
        together = [c for c, transform in enumerate(transforms) if transform == "box-cox"]
        # A few candidates at a time on long columns: the temporaries stay within _ROWS_VALUES.
        step = max(1, _ROWS_VALUES // max(1, len(self.X)))
        for first in range(0, len(together), step):
            chosen = together[first : first + step]
            rows = _numerics.boxcox_rows(self._log_column(j), lambdas[chosen])
            out[chosen] = _numerics.scale_rows(rows)
        for c in set(range(len(lambdas))) - set(together):
            out[c] = self.scaled_column(j, float(lambdas[c]), int(choices[c]))
        return out

    def column(self, j: int, choice: int, lam: float) -> np.ndarray:
        """Feature j transformed before scaling: by ``method`` (choice -1) or ``transforms[choice]``;
        a dropped feature is a column of zeros (its scaled column is zeros too)."""
        transform = self._transform(choice)
        if transform == "drop":
            return np.zeros(len(self.X))
        if transform == "identity":
            return self.X[:, j].copy()
        if transform != "box-cox":
            return _numerics.power_column(self._power_inputs[transform][:, j], lam, transform)
        return _numerics.boxcox_from_log(self._log_column(j), lam)

    def _transform(self, choice: int) -> str:
        """The transform of a choice: ``method`` (-1) or ``transforms[choice]``."""
        return self.points.method if choice < 0 else self.points.transforms[choice]

    def _log_column(self, j: int) -> np.ndarray:
        """log Z of feature j, contiguous."""
        if self._log_columns is None:  # per column, once: searches revisit columns
            self._log_columns = np.ascontiguousarray(np.log(self._power_inputs["box-cox"]).T)
        return self._log_columns[j]
