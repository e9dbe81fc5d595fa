"""k-nearest neighbours' fast scorers: an exactly maintained distance matrix, or block-wise sweeps."""

from __future__ import annotations

from collections.abc import Callable
import numbers
from typing import TYPE_CHECKING

import numpy as np
from sklearn.neighbors import KNeighborsClassifier

from optuna_boxcox._math import _neighbors

if TYPE_CHECKING:
    from collections.abc import Sequence
from optuna_boxcox._objective._evaluators._base import RELATIVE_TIE
from optuna_boxcox._objective._evaluators._base import FastScorer
from optuna_boxcox._objective._evaluators._base import is_real
from optuna_boxcox._objective._evaluators._distances import SquaredDistances


class _NeighbourSweeps(FastScorer):
    """k-NN votes from :func:`optuna_boxcox._math._neighbors.sweep_neighbours`: block-wise, no n × n
    state. Shared by both k-NN scorers for coordinate sweeps; the block-wise scorer also scores
    single points this way."""

    classifier = KNeighborsClassifier
    shares_sweeps = True

    def __init__(
        self, y: np.ndarray, metric: Callable[[np.ndarray, np.ndarray], float], n_neighbors: int
    ) -> None:
        super().__init__(y, metric)
        self.n_neighbors = n_neighbors
        self.members = [np.flatnonzero(self.codes == c) for c in range(len(self.classes))]
        #: (n, k+1) distinct rows per row near it at some recent point: bounds for the next sweep.
        self.hint: np.ndarray | None = None
        # (candidates, block bytes) of the largest sweep so far: its memory grows with both.
        self._largest_sweep = (1, _neighbors.MIN_BLOCK_BYTES)

    @property
    def largest_sweep(self) -> tuple[int, int]:
        """(candidates, block bytes) of the largest sweep scored so far (the memory limit splits
        a sweep into groups of candidates and blocks of rows)."""
        return self._largest_sweep

    @classmethod
    def from_estimator(
        cls,
        estimator: KNeighborsClassifier,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
    ) -> _NeighbourSweeps | None:
        params = estimator.get_params(deep=False)
        euclidean = params["metric"] == "euclidean" or (
            params["metric"] == "minkowski" and is_real(params["p"]) and params["p"] == 2
        )
        k = params["n_neighbors"]
        if (
            not euclidean
            or params["metric_params"] is not None
            or params["weights"] != "uniform"
            or not isinstance(k, numbers.Integral)
            or not 1 <= k <= len(y)
        ):
            return None
        return cls(y, metric, int(k))

    leaves_out_zero_columns = True

    def _adopt(self, other: FastScorer) -> bool:
        if other.n_neighbors != self.n_neighbors:
            self.n_neighbors = other.n_neighbors
            self._forget_neighbours()
        return True

    def _forget_neighbours(self) -> None:
        """Neighbour lists of another k bound nothing for this one."""
        self.hint = None

    def footprint(self, n_features: int) -> int:
        # The smallest sweep: one candidate, the smallest blocks.
        return self._resident_bytes(n_features) + self.sweep_footprint(
            n_features, 1, _neighbors.MIN_BLOCK_BYTES
        )

    def _resident_bytes(self, n_features: int) -> int:
        """Bytes held between scores, and those of a single score besides a sweep's."""
        return super().footprint(n_features) + len(self.y) * (self.n_neighbors + 1) * 8

    def sweep_footprint(self, n_features: int, n_candidates: int, block_bytes: int) -> int:
        """Bytes of one sweep over `n_candidates` columns (its neighbour lists and votes)."""
        n = len(self.y)
        votes = n_candidates * n * 32  # predictions; near-tie margins, differences and flags
        lists = _neighbors.sweep_footprint(
            n, n_features, n_candidates, self.n_neighbors, self.n_threads, block_bytes
        )
        return lists + votes

    def peak_bytes(self, n_features: int) -> int:
        group, block = self._largest_sweep
        return self._resident_bytes(n_features) + self.sweep_footprint(n_features, group, block)

    def _sweep_size(self, n_features: int, n_candidates: int) -> tuple[int, int]:
        """(candidates at a time, block bytes) for a sweep within the memory limit: the largest
        blocks up to BLOCK_BYTES, then as many candidates as fit (at least one, the smallest
        blocks: the footprint checked before the scorer was made)."""
        if self.memory_limit is None:
            return n_candidates, _neighbors.BLOCK_BYTES
        spare = self.memory_limit - self._resident_bytes(n_features)
        block = _neighbors.BLOCK_BYTES
        while (
            block > _neighbors.MIN_BLOCK_BYTES
            and self.sweep_footprint(n_features, 1, block) > spare
        ):
            block //= 2
        block = max(block, _neighbors.MIN_BLOCK_BYTES)
        group = n_candidates
        while group > 1 and self.sweep_footprint(n_features, group, block) > spare:
            group = (group + 1) // 2
        return group, block

    def warm_up(self) -> None:
        _neighbors.warm_up()

    def score_sweep(self, j: int, columns: Sequence[np.ndarray]) -> list[float | None]:
        if self.S is None:
            raise RuntimeError("call reset(S) before score_sweep")
        return [
            None if codes is None else self._score_codes(codes)
            for codes in self._sweep_predictions(j, np.asarray(columns, dtype=np.float64))
        ]

    def _sweep_predictions(self, j: int, columns: np.ndarray) -> list[np.ndarray | None]:
        """Predicted class index of every row (None on a near-tie) for each candidate column,
        as many candidates at a time as the memory limit allows."""
        k, n = self.n_neighbors, len(self.y)
        if k == n:  # every row votes for every row: the most frequent class, first maximum
            majority = int(np.argmax([len(m) for m in self.members]))
            return [np.full(n, majority, dtype=np.intp) for _ in columns]
        p = self.S.shape[1]
        group, block = self._sweep_size(p, len(columns))
        if self.sweep_footprint(p, group, block) > self.sweep_footprint(p, *self._largest_sweep):
            self._largest_sweep = (group, block)
        predictions: list[np.ndarray | None] = []
        for first in range(0, len(columns), group):
            predictions.extend(self._sweep_group(j, columns[first : first + group], block))
        return predictions

    def _sweep_group(
        self, j: int, columns: np.ndarray, block_bytes: int
    ) -> list[np.ndarray | None]:
        k, n_classes = self.n_neighbors, len(self.classes)
        found = _neighbors.sweep_neighbours(
            self.S, j, columns, k, self.hint, self.n_threads, block_bytes
        )
        if not np.all(np.isfinite(found.distance[:, :, k])):  # cannot happen; never guess
            return [None] * len(columns)
        predictions: list[np.ndarray | None] = list(
            _neighbors.vote(found.index, self.codes, k, n_classes)
        )
        flags, margin = _neighbors.near_ties(found, k)
        for c in range(len(columns)):
            for i in np.flatnonzero(flags[:, c]):
                # The band test recomputes distances directly: widen by one more rounding bound.
                votes = _neighbors.band_votes(
                    self.S,
                    j,
                    columns[c],
                    int(i),
                    float(found.distance[i, c, k - 1]),
                    float(margin[i, c] + found.error[i]),
                    self.codes,
                    n_classes,
                    k,
                )
                if votes is None:
                    predictions[c] = None
                    break
                predictions[c][i] = np.argmax(votes)
        hits = [-1 if p is None else np.count_nonzero(p == self.codes) for p in predictions]
        # A copy: a view would keep every candidate's lists alive.
        self.hint = np.ascontiguousarray(found.index[:, int(np.argmax(hits)), :])
        return predictions


class KNeighborsScorer(_NeighbourSweeps):
    """KNeighborsClassifier's resubstitution predictions (uniform weights, Euclidean distance).

    Each sample's neighbours are its k nearest rows of S including itself (``predict(S)`` on the fit
    data does not exclude the point), the vote is the most frequent class, ties to the smallest class
    index (scikit-learn's argmax of the neighbour class frequencies). Changing a column costs O(n²).
    A score first bounds each row's new (k+1)-th distance by the new distances of its previous k+1
    nearest rows, so only the few rows under that bound need sorting; a full partial sort is the
    fallback. Rows whose k-th and (k+1)-th distances lie within a relative 1e-9 (plus the rounding
    bound) are near-ties: which row scikit-learn keeps is then up to its distance rounding and tie
    order, so the answer is None unless every row in that band has the same class.

    The matrix only pays when one or two columns change between scores (a coordinate search
    scored point by point). A score after more changes (TPE, random search, the first score) and
    every sweep (:meth:`score_sweep`) are computed block-wise as :class:`BlockwiseKNeighborsScorer`
    does: one BLAS pass instead of two matrix passes per changed column. Column updates are
    deferred until the matrix is read, which a search scoring only sweeps never does.

    Memory: the n × n int64 distances (:class:`SquaredDistances`) plus one block of rows at a
    time, or a sweep's blocks.
    """

    name = "knn:incremental"
    #: Candidates per row and neighbour (on average) above which the full partial sort is cheaper.
    _MAX_CANDIDATES = 16
    #: Columns changed since the last score up to which the matrix is updated rather than the
    #: score computed block-wise: a sweep's one column is cheaper by the matrix, many columns
    #: cheaper block-wise (measured in docs/performance_log.md).
    _MATRIX_COLUMNS = 2

    def _resident_bytes(self, n_features: int) -> int:
        n = len(self.y)
        # A score's block of rows: a mask, and the partial sort's indices and values (int64).
        block = self._block_rows(n) * n * (1 + 2 * 8)
        nearest = 2 * n * (self.n_neighbors + 1) * 8
        return (
            super()._resident_bytes(n_features) + SquaredDistances.footprint(n) + nearest + block
        )

    @staticmethod
    def _block_rows(n: int) -> int:
        """Rows per block of a score: 2^20 distances (8 MiB), so that the paper's data sets take
        one block (two cost breast cancer's search 60% more in NumPy's per-call overhead)."""
        return int(min(n, max(16, 2**20 // max(n, 1))))

    def _reset(self) -> None:
        # Built when a score needs it: a search that only sweeps never does.
        self.distances: SquaredDistances | None = None
        self._pending: dict[int, np.ndarray] = {}  # changed since the matrix, with old values
        self._changed = set(range(self.S.shape[1]))  # columns changed since the last score
        self.nearest: np.ndarray | None = None  # the k+1 nearest rows of each at the last score

    def _set_column(self, j: int, column: np.ndarray) -> None:
        self._changed.add(j)
        if self.distances is not None and j not in self._pending:
            self._pending[j] = self.S[:, j].copy()

    def _forget_neighbours(self) -> None:
        super()._forget_neighbours()
        if self.S is not None:
            self.nearest = None
            self._changed = set(range(self.S.shape[1]))  # next score: block-wise, as a first one

    def _synced_distances(self) -> SquaredDistances:
        if self.distances is None:
            self.distances = SquaredDistances(self.S)
        elif len(self._pending) > self.S.shape[1] // 2:
            self.distances.rebuild()  # p passes of one term each beat > p/2 passes of two
        else:
            for j, old in self._pending.items():
                if self.distances.update(j, self.S[:, j], old):
                    break  # rebuilt from S: every pending column is in
        self._pending.clear()
        return self.distances

    def warm_up(self) -> None:
        SquaredDistances.warm_up_kernels()
        super().warm_up()

    def score_sweep(self, j: int, columns: Sequence[np.ndarray]) -> list[float | None]:
        if self.hint is None:
            self.hint = self.nearest
        return super().score_sweep(j, columns)

    def _predict_codes(self) -> np.ndarray | None:
        changed, self._changed = len(self._changed), set()
        if changed > self._MATRIX_COLUMNS:
            if self.hint is None:
                self.hint = self.nearest
            return self._sweep_predictions(0, self.S[:, 0][None, :])[0]
        distances = self._synced_distances()
        units = distances.units
        k = self.n_neighbors
        n = len(units)
        if k == n:
            votes = np.tile([len(m) for m in self.members], (n, 1))
            return np.argmax(votes, axis=1)
        nearest = np.empty((n, k + 1), dtype=np.intp)
        rows = self._block_rows(n)
        for start in range(0, n, rows):
            block = slice(start, min(start + rows, n))
            found = self._candidate_nearest(units[block], block)
            if found is None:
                found = np.argpartition(units[block], (k - 1, k), axis=1)[:, : k + 1]
            nearest[block] = found
        self.nearest = nearest
        everyone = np.arange(n)
        kth, next_ = units[everyone, nearest[:, k - 1]], units[everyone, nearest[:, k]]
        margin = RELATIVE_TIE * next_ + distances.rounding_bound()
        votes = _count_classes(self.codes[nearest[:, :k]], len(self.classes))
        for i in np.flatnonzero(next_ - kth <= margin):
            row_votes = self._near_tie_votes(units[i], kth[i], margin[i])
            if row_votes is None:
                return None
            votes[i] = row_votes
        return np.argmax(votes, axis=1)

    def _candidate_nearest(self, units: np.ndarray, block: slice) -> np.ndarray | None:
        """The k+1 nearest rows of each row of the block (`units` holds its rows), sorted by
        distance, found among the rows no farther than the previous k+1 nearest now are; None
        when there is no previous score or too many candidates."""
        if self.nearest is None:
            return None
        (b, n), k = units.shape, self.n_neighbors
        rows = np.arange(b)
        bound = np.max(units[rows[:, None], self.nearest[block]], axis=1)
        flat = np.flatnonzero(units <= bound[:, None])  # much faster than a 2-D np.nonzero
        if len(flat) > self._MAX_CANDIDATES * b * (k + 1):
            return None
        row, col = np.divmod(flat, n)
        # Sorted by row, then distance; every row has at least k+1 candidates.
        order = np.lexsort((units[row, col], row))
        starts = np.searchsorted(row, rows)
        return col[order[starts[:, None] + np.arange(k + 1)]]

    def _near_tie_votes(self, units: np.ndarray, kth: float, margin: float) -> np.ndarray | None:
        """Votes of a row whose k-th neighbour is not clear-cut: the rows within the margin of the
        k-th distance can enter in any order, which only matters when their classes differ (tied
        distances are common on lattice data such as iris, mostly between rows of one class)."""
        certain = units < kth - margin
        band = ~certain & (units <= kth + margin)
        band_classes = np.unique(self.codes[band])
        if len(band_classes) > 1:
            return None
        votes = np.array([np.count_nonzero(certain[m]) for m in self.members])
        votes[band_classes[0]] += self.n_neighbors - np.count_nonzero(certain)
        return votes


class BlockwiseKNeighborsScorer(_NeighbourSweeps):
    """KNeighborsClassifier's resubstitution predictions without any n × n state.

    Every score computes all distances afresh, in blocks of rows and columns with BLAS
    (:func:`optuna_boxcox._math._neighbors.sweep_neighbours`), keeping each row's k+1 nearest rows; the
    previous score's neighbours bound which pairs need more than one comparison. A score costs one
    pass over the n² pairs like scikit-learn's brute force, a sweep of L candidates about one pass
    too (all distances but one column's term are shared). Near-ties as :class:`KNeighborsScorer`.
    Memory: O(b·w + n·k) — blocks of a few MiB per thread and the neighbour lists.
    """

    name = "knn:blockwise"

    def _reset(self) -> None:
        pass

    def _set_column(self, j: int, column: np.ndarray) -> None:
        pass  # every score reads self.S afresh

    def _predict_codes(self) -> np.ndarray | None:
        return self._sweep_predictions(0, self.S[:, 0][None, :])[0]


def _count_classes(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """Per row of `codes`, how many entries hold each class index."""
    return np.stack([np.count_nonzero(codes == c, axis=1) for c in range(n_classes)], axis=1)
