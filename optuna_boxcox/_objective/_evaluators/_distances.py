"""Squared Euclidean distances between the rows of S, kept exact under column updates
(shared by the k-NN and the SVC scorers)."""

from __future__ import annotations

from collections.abc import Callable
import math
from typing import TYPE_CHECKING

import numpy as np

from optuna_boxcox._math._jit import compiled

if TYPE_CHECKING:
    pass
from optuna_boxcox._objective._evaluators._base import GEMM_ERROR
from optuna_boxcox._objective._evaluators._base import ROW_BLOCK


class SquaredDistances:
    """The n×n matrix of squared Euclidean distances between the rows of S, kept exact under updates.

    Each column's contribution (x_ij − x_kj)² is truncated to a multiple of 2^-k and summed as an
    int64. Integer sums are associative, so the matrix after any sequence of column updates is
    bit-identical to one built from scratch: no floating-point drift, without storing the p slabs
    (n = 569, p = 30 would need 78 MB in float64). The truncation costs at most p·2^-k absolute;
    k is chosen so that the largest possible entry still fits with a factor 4 to spare, which is
    ~1e-15 for standard-scaled data, and the matrix is rebuilt with a smaller k if a new column
    would overflow it. Memory: the n×n int64 matrix and, without Numba, one block of rows of
    scratch (:meth:`footprint`).
    """

    def __init__(self, S: np.ndarray) -> None:
        self.S = S  # shared with the scorer, which writes the new column after the update
        n = S.shape[0]
        self.units = np.zeros((n, n), dtype=np.int64)
        self.rebuild()

    @staticmethod
    def footprint(n: int) -> int:
        return n * n * 8 + 2 * min(n, ROW_BLOCK) * n * 8

    def rebuild(self) -> None:
        self.spans = np.array([_squared_span(self.S[:, j]) for j in range(self.S.shape[1])])
        bound = 4.0 * float(np.sum(self.spans))
        # The largest even k with bound·2^k ≤ 2^62: k/2 scales the columns exactly by a power of 2.
        half = math.floor((62 - math.log2(bound)) / 2) if bound > 0 else 0
        self.half_shift = int(min(max(half, -500), 500))
        self.unit = 2.0 ** (-2 * self.half_shift)
        self.capacity = 2.0**62 * self.unit
        self.units.fill(0)
        kernel = compiled(_add_column_units)
        for j in range(self.S.shape[1]):
            scaled = np.ldexp(self.S[:, j], self.half_shift)  # exact: a power-of-two scaling
            if kernel is None:
                self._add(scaled, np.add)
            else:
                kernel(self.units, scaled)

    @staticmethod
    def warm_up_kernels() -> None:
        replace = compiled(_replace_column_units, announce="the fast pairwise distances")
        add = compiled(_add_column_units)
        if replace is not None:
            replace(np.zeros((1, 1), dtype=np.int64), np.zeros(1), np.zeros(1))
            add(np.zeros((1, 1), dtype=np.int64), np.zeros(1))

    def update(self, j: int, column: np.ndarray, old: np.ndarray | None = None) -> bool:
        """Column j changes from `old` (default ``S[:, j]``; the caller then stores `column`) to
        `column`. Returns True when the matrix was rebuilt from S instead (S[:, j] is then set
        to `column` and every other column of S counts as it is)."""
        span = _squared_span(column)
        if np.sum(self.spans) - self.spans[j] + span > self.capacity / 1.01:
            self.S[:, j] = column
            self.rebuild()
            return True
        old = np.ldexp(self.S[:, j] if old is None else old, self.half_shift)
        new = np.ldexp(column, self.half_shift)
        kernel = compiled(_replace_column_units)
        if kernel is None:
            self._add(old, np.subtract)
            self._add(new, np.add)
        else:  # the same truncated integers, in one pass
            kernel(self.units, old, new)
        self.spans[j] = span
        return False

    def _add(self, scaled: np.ndarray, op: Callable[..., np.ndarray]) -> None:
        """units ±= trunc((x_i − x_k)²) without Numba, a block of rows at a time."""
        n = len(scaled)
        for start in range(0, n, ROW_BLOCK):
            rows = slice(start, min(start + ROW_BLOCK, n))
            block = np.square(scaled[rows, None] - scaled[None, :])
            truncated = block.astype(np.int64)  # truncation, deterministic per column
            op(self.units[rows], truncated, out=self.units[rows])

    def squared(self) -> np.ndarray:
        """The squared distances as float64 (each within p·2^-k of the exact sum)."""
        squared = self.units.astype(np.float64)
        return np.multiply(squared, self.unit, out=squared)  # exact: a power of two

    def rounding_bound(self) -> np.ndarray:
        """Per row, an absolute bound (in units of 2^-k) on the difference between this matrix and
        scikit-learn's GEMM-based ‖x‖² − 2x·y + ‖y‖² for that row's distances."""
        norms = np.einsum("ij,ij->i", self.S, self.S)
        gemm = GEMM_ERROR * (norms + np.max(norms))
        return self.S.shape[1] + 1.0 + gemm / self.unit


def _replace_column_units(units: np.ndarray, old: np.ndarray, new: np.ndarray) -> None:
    """units[i, k] += trunc((new_i − new_k)²) − trunc((old_i − old_k)²), for Numba. Row by row
    over the whole matrix: computing each pair twice beats the strided writes of a half matrix."""
    n = units.shape[0]
    for i in range(n):
        old_i = old[i]
        new_i = new[i]
        for k in range(n):
            d_new = new_i - new[k]
            d_old = old_i - old[k]
            units[i, k] += np.int64(d_new * d_new) - np.int64(d_old * d_old)


def _add_column_units(units: np.ndarray, scaled: np.ndarray) -> None:
    """units[i, k] += trunc((x_i − x_k)²), for Numba (a rebuild, without n × n scratch)."""
    n = units.shape[0]
    for i in range(n):
        x_i = scaled[i]
        for k in range(n):
            d = x_i - scaled[k]
            units[i, k] += np.int64(d * d)


def _squared_span(column: np.ndarray) -> float:
    """An upper bound on every (x_i − x_k)² of the column (1% over for rounding)."""
    span = float(np.max(column) - np.min(column)) if len(column) else 0.0
    return 1.01 * span * span
