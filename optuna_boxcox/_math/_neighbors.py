"""Exact k nearest neighbours of every row under L variants of one column, without an n × n matrix.

A coordinate sweep (SPEC §4) scores L points that differ only in column j of the transformed data
S. Their squared distances share everything but column j's term::

    D_c(i, m) = D_rest(i, m) + (c_i − c_m)²,      D_rest = ‖s_i‖² + ‖s_m‖² − 2·s_i·s_m  (j excluded)

so :func:`sweep_neighbours` computes ``D_rest`` once per sweep, in b × w blocks with BLAS (GEMM),
and for each block adds the L column terms and keeps every row's k+1 nearest rows per candidate.
Never more than one block per thread exists at a time: memory is O(b·w + n·L·k), not O(n²).

Most pairs cannot be among the k+1 nearest for any candidate: ``D_c ≥ D_rest``, so a pair whose
``D_rest`` exceeds an upper bound on the (k+1)-th distance of every candidate is skipped after one
comparison. The bound comes from k+1 *hint* rows per row (any distinct rows give a valid bound; the
neighbours of a similar earlier point give a tight one), with slack for rounding, so the result does
not depend on the hint. Only the few survivors pay for the L column terms.

Distances carry GEMM rounding, as scikit-learn's brute-force distances do (both are bounded by
:data:`GEMM_ERROR` relative to the squared norms); callers decide near-ties with that bound and
recount such rows with :func:`band_votes`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optuna_boxcox._math._jit import compiled
from optuna_boxcox._math._jit import parallel_map
from optuna_boxcox._math._jit import single_threaded_blas

#: Bound on the rounding error of a GEMM-based squared distance, relative to ‖x‖² + max ‖y‖²
#: (a hundred times the worst case of a 30-term dot product, ~(p + 3)·2⁻⁵³ = 1e-14).
GEMM_ERROR = 1e-12
#: Relative margin below which a k-th and (k+1)-th distance count as a near-tie.
RELATIVE_TIE = 1e-9
#: Rows of a distance block at most; columns are chosen so that one block fills ``block_bytes``.
_BLOCK_ROWS = 256
#: Bytes of one distance block (per thread): a few MiB keeps it in the last-level cache. Under a
#: tight memory limit blocks shrink down to MIN_BLOCK_BYTES, slower but still exact.
BLOCK_BYTES = 4 * 1024**2
MIN_BLOCK_BYTES = 64 * 1024
#: Rows among which the first hint of a sweep without one is found.
_BOOTSTRAP_SAMPLE = 4096


@dataclass
class SweepNeighbours:
    """The k+1 nearest rows of every row, per candidate column.

    Attributes:
        index: (n, L, k+1) int32, the nearest rows by increasing computed distance.
        distance: (n, L, k+1) float64, their computed squared distances.
        error: (n,) float64, a bound on |computed − exact| of any distance of that row (for every
            candidate), and so, doubled, on the difference to scikit-learn's own rounding.
    """

    index: np.ndarray
    distance: np.ndarray
    error: np.ndarray


def sweep_footprint(
    n: int, p: int, n_candidates: int, k: int, n_threads: int, block_bytes: int = BLOCK_BYTES
) -> int:
    """Bytes :func:`sweep_neighbours` holds at its peak for an n × p matrix."""
    state = n * n_candidates * (k + 1) * (8 + 4)  # distance and index
    # The candidate columns and their squares; norms, bounds, thresholds, error, row indices.
    per_row = n * (2 * n_candidates * 8 + 5 * 8)
    data = 2 * n * p * 8  # the matrix without column j, and a sample of its rows (first hint)
    hint = n * (k + 1) * 8
    return state + per_row + data + hint + n_threads * _block_shape(n, block_bytes)[2]


def _block_shape(n: int, block_bytes: int) -> tuple[int, int, int]:
    """(rows, columns, bytes) of the distance blocks for n rows within `block_bytes`."""
    rows = max(1, min(_BLOCK_ROWS, n, block_bytes // (8 * 64)))
    width = max(1, min(n, block_bytes // (8 * rows)))
    return rows, width, rows * width * 8


def sweep_neighbours(
    S: np.ndarray,
    j: int,
    columns: np.ndarray,
    k: int,
    hint: np.ndarray | None = None,
    n_threads: int = 1,
    block_bytes: int = BLOCK_BYTES,
) -> SweepNeighbours:
    """The k+1 nearest rows of every row of S with column j replaced by each row of `columns`.

    Args:
        S: (n, p) float64 matrix (its column j is ignored).
        j: The column the candidates replace.
        columns: (L, n) candidate values of column j.
        k: Neighbours that vote; k+1 are kept to detect near-ties. Requires k + 1 ≤ n.
        hint: (n, ≥ k+1) distinct row indices per row whose distances bound the (k+1)-th one,
            e.g. the neighbours of a previous point; None computes them first (one extra pass).
        n_threads: Threads over row blocks (each runs BLAS on one thread).
        block_bytes: Bytes of the distance block each thread holds.
    """
    S = np.asarray(S, dtype=np.float64)
    columns = np.ascontiguousarray(columns, dtype=np.float64)
    n = len(S)
    if not 1 <= k < n:
        raise ValueError(f"k + 1 = {k + 1} neighbours need more than {n} rows")
    rest = np.array(S, dtype=np.float64, order="C", copy=True)
    rest[:, j] = 0.0
    norms = np.einsum("ij,ij->i", rest, rest)
    square_max = np.max(columns * columns, axis=0)
    # |computed − exact| of D_c(i, m) ≤ GEMM_ERROR · (‖s_i‖² + max_m ‖s_m‖²), norms with column j.
    error_of_row = GEMM_ERROR * (norms + square_max + np.max(norms) + np.max(square_max))
    if hint is None:
        hint = _bootstrap_hint(rest, norms, S[:, j], k, n_threads, block_bytes)
    hint = np.ascontiguousarray(hint[:, : k + 1], dtype=np.int64)
    bound = np.empty(n)
    compiled(_hint_bound)(rest, columns, hint, bound)
    # The (k+1)-th computed distance is at most the hint rows' computed distances; the thresholds
    # also cover the near-tie band above it (see KNeighborsScorer) with room to spare.
    threshold = bound * (1.0 + 4.0 * RELATIVE_TIE) + 8.0 * error_of_row
    result = _scan(rest, norms, columns, k, threshold, n_threads, block_bytes)
    result.error = error_of_row
    return result


def _bootstrap_hint(
    rest: np.ndarray,
    norms: np.ndarray,
    column: np.ndarray,
    k: int,
    n_threads: int,
    block_bytes: int,
) -> np.ndarray:
    """k+1 distinct rows near each row: its nearest among a random sample of the rows (seeded,
    so the result is reproducible). A fifth of a pass at 20,000 rows instead of a whole one; the
    bounds are looser than the true neighbours' but only the first sweep pays for that."""
    n = len(rest)
    size = min(n, max(_BOOTSTRAP_SAMPLE, 4 * (k + 1)))
    sample = np.sort(np.random.default_rng(0).choice(n, size, replace=False))
    base = np.ascontiguousarray(column, dtype=np.float64)[None, :]
    found = _scan(rest, norms, base, k, np.full(n, np.inf), n_threads, block_bytes, sample)
    return found.index[:, 0, :]


def _scan(
    rest: np.ndarray,
    norms: np.ndarray,
    columns: np.ndarray,
    k: int,
    threshold: np.ndarray,
    n_threads: int,
    block_bytes: int,
    among: np.ndarray | None = None,
) -> SweepNeighbours:
    """Each row's k+1 nearest rows per candidate, among all rows or the rows `among`."""
    n = len(rest)
    n_candidates = len(columns)
    distance = np.full((n, n_candidates, k + 1), np.inf)
    index = np.full((n, n_candidates, k + 1), -1, dtype=np.int32)
    kernel = compiled(_scan_block)
    among = np.arange(n) if among is None else among
    others = rest[among] if len(among) < n else rest
    rows, width, _ = _block_shape(n, block_bytes)
    width = min(width, len(among))
    others_t = others.T  # a view: BLAS reads it transposed

    def scan_rows(start: int) -> None:
        stop = min(start + rows, n)
        buffer = np.empty(rows * width)
        for first in range(0, len(among), width):
            last = min(first + width, len(among))
            block = buffer[: (stop - start) * (last - first)].reshape(stop - start, last - first)
            np.dot(rest[start:stop], others_t[:, first:last], out=block)
            kernel(block, start, among[first:last], norms, columns, threshold, distance, index)

    with single_threaded_blas():
        parallel_map(scan_rows, range(0, n, rows), n_threads)
    return SweepNeighbours(index, distance, np.empty(0))


def _scan_block(G, row0, col_index, norms, columns, threshold, distance, index):
    """Fold one block ``G = rest[rows] · rest[col_index]ᵀ`` into the rows' k+1 nearest (Numba).

    Each row's per-candidate list stays sorted by distance; a pair enters when its distance is
    strictly below the list's last one, so equal distances keep the earlier row.
    """
    b, w = G.shape
    n_candidates = columns.shape[0]
    last = distance.shape[2] - 1
    for r in range(b):
        i = row0 + r
        norm_i = norms[i]
        limit = threshold[i]
        for q in range(w):
            m = col_index[q]
            d = (norm_i + norms[m]) - 2.0 * G[r, q]
            if d > limit:
                continue
            for c in range(n_candidates):
                diff = columns[c, i] - columns[c, m]
                dc = d + diff * diff
                if dc < distance[i, c, last]:
                    t = last
                    while t > 0 and distance[i, c, t - 1] > dc:
                        distance[i, c, t] = distance[i, c, t - 1]
                        index[i, c, t] = index[i, c, t - 1]
                        t -= 1
                    distance[i, c, t] = dc
                    index[i, c, t] = m


def _hint_bound(rest, columns, hint, out):
    """out[i] = max over candidates and hint rows h of the direct squared distance (Numba)."""
    n, p = rest.shape
    n_candidates = columns.shape[0]
    n_hint = hint.shape[1]
    base = np.empty(n_hint)
    for i in range(n):
        for t in range(n_hint):
            h = hint[i, t]
            s = 0.0
            for f in range(p):
                diff = rest[i, f] - rest[h, f]
                s += diff * diff
            base[t] = s
        worst = 0.0
        for c in range(n_candidates):
            for t in range(n_hint):
                diff = columns[c, i] - columns[c, hint[i, t]]
                d = base[t] + diff * diff
                if d > worst:
                    worst = d
        out[i] = worst


def vote(index: np.ndarray, codes: np.ndarray, k: int, n_classes: int) -> np.ndarray:
    """(L, n) class index voted by each row's k nearest rows, ties to the smallest class index
    (scikit-learn's argmax of the neighbour class frequencies)."""
    n, n_candidates, _ = index.shape
    out = np.empty((n_candidates, n), dtype=np.intp)
    compiled(_vote)(index, codes.astype(np.intp), k, n_classes, out)
    return out


def _vote(index, codes, k, n_classes, out):
    n, n_candidates, _ = index.shape
    counts = np.zeros(n_classes, dtype=np.intp)
    for i in range(n):
        for c in range(n_candidates):
            counts[:] = 0
            for t in range(k):
                counts[codes[index[i, c, t]]] += 1
            best = 0
            for a in range(1, n_classes):
                if counts[a] > counts[best]:
                    best = a
            out[c, i] = best


def band_votes(
    S: np.ndarray,
    j: int,
    column: np.ndarray,
    i: int,
    kth: float,
    margin: float,
    codes: np.ndarray,
    n_classes: int,
    k: int,
) -> np.ndarray | None:
    """Votes of row i of S with column j replaced by `column`, when its k-th neighbour is not
    clear-cut; None if that matters.

    Rows within `margin` of the k-th distance may enter scikit-learn's k nearest in any order; the
    vote is still certain when all of them share a class (common on lattice data such as iris).
    Distances are recomputed directly (Σ (x − y)², no GEMM), their own rounding far below `margin`.
    """
    votes = np.zeros(n_classes, dtype=np.intp)
    band_class = compiled(_band_votes)(
        np.ascontiguousarray(S, dtype=np.float64),
        j,
        np.ascontiguousarray(column, dtype=np.float64),
        i,
        kth,
        margin,
        codes.astype(np.intp),
        votes,
    )
    certain = int(np.sum(votes))
    if band_class < 0 or certain > k:
        return None
    votes[band_class] += k - certain
    return votes


def _band_votes(S, j, column, i, kth, margin, codes, votes):
    """Certain votes into `votes`; returns the band's class, -1 when it holds several (Numba)."""
    n, p = S.shape
    band_class = -2  # no band row yet
    for m in range(n):
        s = 0.0
        for f in range(p):
            if f != j:
                diff = S[i, f] - S[m, f]
                s += diff * diff
        diff = column[i] - column[m]
        d = s + diff * diff
        if d < kth - margin:
            votes[codes[m]] += 1
        elif d <= kth + margin:
            if band_class == -2:
                band_class = codes[m]
            elif band_class != codes[m]:
                return -1
    return band_class


def warm_up() -> None:
    """Compile (or load from Numba's cache) every kernel of this module."""
    rest = np.zeros((3, 1))
    sweep_neighbours(rest, 0, np.zeros((1, 3)), 1)
    vote(np.zeros((3, 1, 2), dtype=np.int32), np.zeros(3, dtype=np.intp), 1, 2)
    band_votes(rest, 0, np.zeros(3), 0, 0.0, 1.0, np.zeros(3, dtype=np.intp), 2, 1)


def near_ties(result: SweepNeighbours, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(flags, margins), both (n, L): rows whose k-th and (k+1)-th distances are within the margin
    (relative 1e-9 plus this and scikit-learn's rounding bound) of each other."""
    kth = result.distance[:, :, k - 1]
    following = result.distance[:, :, k]
    margin = RELATIVE_TIE * following + 2.0 * result.error[:, None]
    return following - kth <= margin, margin
