"""Exact fast resubstitution scores for the paper's classifiers, updated one column at a time.

The paper's score (SPEC §2) refits a classifier on the transformed training data S and predicts the
same S. A coordinate search changes one λ, i.e. one column of S, per trial, so most of that work
repeats. The scorers here keep per-column state and give the predictions of
``clone(estimator).fit(S, y).predict(S)`` without scikit-learn's fit/predict round trip:

- :class:`GaussianNBScorer`: class means and variances per column, joint log-likelihood as
  ``GaussianNB._joint_log_likelihood``.
- :class:`KNeighborsScorer`: an exactly maintained squared-distance matrix, votes as scikit-learn.
- :class:`RBFSVCScorer`: libsvm itself, fitted on the RBF kernel built from that distance matrix.

"Exact" means the same predictions, hence the same metric value, not bit-identical intermediate
numbers: summation orders differ from scikit-learn's by rounding. Each scorer therefore checks its
margin (top-two log-likelihoods, k-th/(k+1)-th neighbour distance, SVM decision value) and answers
``None`` when the margin is within a bound far above both rounding errors; the caller then uses the
generic scikit-learn path.

- :class:`SGDScorer`: the binary perceptron/hinge ``SGDClassifier`` refitted by
  :func:`optuna_boxcox._sgd.fit_sgd_binary`, which returns scikit-learn's weights bit for bit
  without its ~1.4 ms of validation and set-up per fit.

No other classifier or parameter setting has a fast path (:func:`make_fast_scorer` returns ``None``):
the MLP, for one, refits from scratch with nothing to reuse.

Memory: every scorer states its :meth:`~FastScorer.footprint` before it allocates, and
:func:`make_fast_scorer` only returns one that fits the caller's limit. The incremental k-NN and the
precomputed-kernel SVC hold n × n matrices; above the limit k-NN switches to
:class:`BlockwiseKNeighborsScorer` (no n × n state, :mod:`optuna_boxcox._neighbors`) and a binary
SVC to :class:`BlockwiseRBFSVCScorer` (libsvm's own fit, whose kernel cache is bounded by
``cache_size``, and a block-wise prediction); beyond those, the caller's generic path.

A coordinate sweep scores points that differ in one column only: :meth:`FastScorer.score_sweep`
scores them together, which for k-NN shares all distances but that column's term.

A search may also vary the classifier's settings and leave features out. :meth:`FastScorer.adopt`
moves a scorer to another setting of its classifier, keeping what does not depend on it (k-NN's and
the SVC's distances hold for every k, C and γ); :meth:`FastScorer.set_kept` scores the matrix as if
the columns not kept, held as zeros, were left out, where the scorer can tell (k-NN, GaussianNB and
the SVCs: a zero column adds nothing to a distance, nor anything but a term common to all classes
to GaussianNB's likelihood; the SVC's ``gamma="scale"`` is computed on the kept columns).
"""

from __future__ import annotations

import abc
from collections.abc import Callable
import math
import numbers
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import sklearn
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import accuracy_score
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC

from optuna_boxcox import _neighbors
from optuna_boxcox._jit import compiled
from optuna_boxcox._jit import parallel_map
from optuna_boxcox._jit import single_threaded_blas
from optuna_boxcox._sklearn_compat import fitted_rbf_gamma
from optuna_boxcox._sklearn_compat import validate_estimator_params

if TYPE_CHECKING:
    from collections.abc import Sequence

#: Relative margin below which a decision counts as a near-tie (rounding errors are ~1e-13).
_RELATIVE_TIE = 1e-9
#: Absolute |decision value| below which an SVM prediction counts as a near-tie.
_SVM_TIE = 1e-7
#: Bound on the rounding error of scikit-learn's GEMM-based distances, relative to ‖x‖² + ‖y‖².
_GEMM_ERROR = 1e-12
#: A recomputed GaussianNB epsilon this close to the one a column was scored with keeps the column.
_EPSILON_DRIFT = 1e-12
#: Rows per block where a scorer works on an n × n matrix a block of rows at a time.
_ROW_BLOCK = 256
#: Bytes of one block of kernel values in a block-wise SVC prediction (per thread).
_SVC_BLOCK_BYTES = 4 * 1024**2
#: Evaluator names, as :attr:`BoxCoxObjective.evaluator` reports them, for the generic paths.
GENERIC = "sklearn"


def make_fast_scorer(
    estimator: Any,
    y: np.ndarray,
    metric: Callable[[np.ndarray, np.ndarray], float],
    *,
    n_features: int | None = None,
    memory_limit: int | None = None,
    n_threads: int = 1,
) -> FastScorer | None:
    """A specialised resubstitution scorer for `estimator`, or None when it has no exact fast path
    (unsupported class or parameters) or none that fits `memory_limit` — the caller then uses the
    generic scikit-learn path.

    Args:
        estimator: The user's classifier (only read).
        y: Class labels of the rows scored.
        metric: ``metric(y_true, y_pred) -> float``.
        n_features: Columns of the matrices to score; needed with `memory_limit`.
        memory_limit: Bytes the scorer may hold at its peak (None: no limit). Of the scorers for
            the estimator, the first whose :meth:`~FastScorer.footprint` fits is returned.
        n_threads: Threads the scorer may run its kernels on.
    """
    y = np.asarray(y)
    if y.ndim != 1 or len(np.unique(y)) < 2 or not _valid_parameters(estimator):
        return None
    if memory_limit is not None and n_features is None:
        raise ValueError("make_fast_scorer needs n_features to check a memory_limit")
    for kind in _SCORERS.get(type(estimator), ()):  # exact types: a subclass may override fit
        scorer = kind.from_estimator(estimator, y, metric)
        if scorer is None:
            return None  # the estimator's settings, not its size, rule the fast path out
        scorer.n_threads = max(1, int(n_threads))
        if memory_limit is None or scorer.footprint(n_features) <= memory_limit:
            scorer.memory_limit = memory_limit
            return scorer
    return None


class FastScorer(abc.ABC):
    """Resubstitution score of one classifier on an n×p matrix S that changes column by column.

    Call :meth:`reset` with the whole matrix first, then :meth:`set_column` for every changed column
    (several may change between two scores) and :meth:`score`, or :meth:`score_sweep` for several
    variants of one column. Not thread-safe: use one per thread.

    Args:
        y: Class labels, one per row of S.
        metric: ``metric(y_true, y_pred) -> float`` applied to the predictions.
    """

    #: The evaluator's name in :meth:`BoxCoxObjective.describe`.
    name: str = ""

    def __init__(self, y: np.ndarray, metric: Callable[[np.ndarray, np.ndarray], float]) -> None:
        self.y = np.asarray(y)
        self.metric = metric
        # classes_ and the class index of each sample, as every scikit-learn classifier encodes them.
        self.classes, self.codes = np.unique(self.y, return_inverse=True)
        self.S: np.ndarray | None = None
        self._score: float | None = None  # of the current S, until a column changes
        self.n_threads = 1
        self.memory_limit: int | None = None  # bytes; sizes the blocks of block-wise scorers
        self.kept: np.ndarray | None = None  # the columns scored (None: all)

    #: Whether :meth:`set_kept` can leave columns out (a zero column then changes nothing else).
    leaves_out_zero_columns: bool = False

    def adopt(self, estimator: Any) -> bool:
        """Score the predictions of ``estimator`` from now on: the same classifier with other
        settings. State that does not depend on the settings is kept. False, with nothing changed,
        when this scorer has no exact path for those settings."""
        if type(estimator) not in _SCORERS or type(self) not in _SCORERS[type(estimator)]:
            return False
        if not _valid_parameters(estimator):
            return False
        other = type(self).from_estimator(estimator, self.y, self.metric)
        if other is None or not self._adopt(other):
            return False
        self._score = None
        return True

    def _adopt(self, other: FastScorer) -> bool:
        """Take ``other``'s settings (a scorer of the same class); False if this scorer cannot."""
        return False

    def set_kept(self, kept: np.ndarray | None) -> bool:
        """Score as if only the columns ``kept`` (a mask; None: all) were there, the others
        holding zeros. False, with nothing changed, when this scorer cannot leave columns out."""
        if kept is not None and kept.all():
            kept = None
        if kept is not None and not self.leaves_out_zero_columns:
            return False
        if (kept is None) != (self.kept is None) or (
            kept is not None and not np.array_equal(kept, self.kept)
        ):
            self.kept = None if kept is None else kept.copy()
            self._score = None
        return True

    def footprint(self, n_features: int) -> int:
        """Bytes this scorer holds at its peak on an n × `n_features` matrix (n = len(y)), including
        its copy of the matrix and the temporaries of a score."""
        n = len(self.y)
        return 2 * n * n_features * 8 + 4 * n * 8

    def peak_bytes(self, n_features: int) -> int:
        """:meth:`footprint`, plus what the largest :meth:`score_sweep` so far took beyond it."""
        return self.footprint(n_features)

    def reset(self, S: np.ndarray) -> None:
        """Full (re)initialisation from the n×p scaled matrix."""
        S = np.array(S, dtype=np.float64, order="C", copy=True)
        if S.ndim != 2 or S.shape[0] != len(self.y):
            raise ValueError(f"S must be {len(self.y)} × p, got shape {S.shape}")
        self.S = S
        self._score = None
        self._reset()

    def set_column(self, j: int, column: np.ndarray) -> None:
        """Column j of S changed to `column`."""
        if self.S is None:
            raise RuntimeError("call reset(S) before set_column")
        column = np.asarray(column, dtype=np.float64)
        if np.array_equal(column, self.S[:, j]):
            return
        self._set_column(j, column)
        self.S[:, j] = column
        self._score = None

    def score(self) -> float | None:
        """metric(y, predictions) for the current S, or None when S is numerically ambiguous."""
        if self.S is None:
            raise RuntimeError("call reset(S) before score")
        if self._score is None:
            self._score = self._compute_score()
        return self._score

    def score_sweep(self, j: int, columns: Sequence[np.ndarray]) -> list[float | None]:
        """Scores of S with column j replaced by each of `columns` in turn (None: near-tie, as
        :meth:`score`). S is left as it was. The default sets and scores each column."""
        if self.S is None:
            raise RuntimeError("call reset(S) before score_sweep")
        original = self.S[:, j].copy()
        scores = []
        for column in columns:
            self.set_column(j, column)
            scores.append(self.score())
        self.set_column(j, original)
        return scores

    def warm_up(self) -> None:  # noqa: B027 - optional hook; most scorers compile nothing
        """Load any compiled kernel the scorer uses later (one-off cost, seconds at most)."""

    def _compute_score(self) -> float | None:
        codes = self._predict_codes()
        if codes is None:
            return None
        return self._score_codes(codes)

    def _score_codes(self, codes: np.ndarray) -> float:
        """The metric of predicted class indices."""
        if self.metric is accuracy_score:
            # accuracy_score is the mean of the 0/1 hits: an exact count over n, the same float.
            return np.count_nonzero(codes == self.codes) / len(codes)
        return float(self.metric(self.y, self.classes[codes]))

    @abc.abstractmethod
    def _reset(self) -> None:
        """Rebuild all state from ``self.S``."""

    @abc.abstractmethod
    def _set_column(self, j: int, column: np.ndarray) -> None:
        """Update state for column j; ``self.S[:, j]`` still holds the old column."""

    @abc.abstractmethod
    def _predict_codes(self) -> np.ndarray | None:
        """Predicted class index of every row of S, or None on a near-tie."""


class GaussianNBScorer(FastScorer):
    """GaussianNB's resubstitution predictions from per-class, per-column statistics.

    Changing column j recomputes only the class means and variances of column j and its n×classes
    block of squared standardised deviations; the joint log-likelihood is a fresh sum over the
    stored blocks (no running sums, so no drift). scikit-learn's variance floor
    ``epsilon = var_smoothing · max_j var(S[:, j])`` couples all columns; a column is rescored only
    when epsilon moved by more than a relative 1e-12 since, far below the near-tie margin.
    Memory: the p × classes × n slab of deviations, O(n) per column.
    """

    name = "gaussian-nb"
    leaves_out_zero_columns = True

    def __init__(
        self,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
        var_smoothing: float,
    ) -> None:
        super().__init__(y, metric)
        self.var_smoothing = float(var_smoothing)
        self.members = [np.flatnonzero(self.codes == c) for c in range(len(self.classes))]
        counts = np.array([len(m) for m in self.members], dtype=np.float64)
        self.log_prior = np.log(counts / np.sum(counts))

    @classmethod
    def from_estimator(
        cls,
        estimator: GaussianNB,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
    ) -> GaussianNBScorer | None:
        params = estimator.get_params(deep=False)
        smoothing = params["var_smoothing"]
        if params["priors"] is not None or not _is_real(smoothing) or smoothing < 0:
            return None
        return cls(y, metric, smoothing)

    def _adopt(self, other: FastScorer) -> bool:
        self.var_smoothing = other.var_smoothing
        if self.S is not None:
            self.epsilon_used[:] = np.nan  # every column is rescored with the new epsilon
        return True

    def footprint(self, n_features: int) -> int:
        n, n_classes = len(self.y), len(self.classes)
        slab = n_features * n_classes * n * 8
        # A score sums the slab over columns and compares every class with the winner: a handful
        # of classes × n temporaries.
        return super().footprint(n_features) + slab + 8 * n_classes * n * 8

    def _reset(self) -> None:
        n, p = self.S.shape
        n_classes = len(self.classes)
        self.column_var = np.empty(p)
        self.theta = np.empty((p, n_classes))
        self.raw_var = np.empty((p, n_classes))
        self.deviations = np.empty((p, n_classes, n))  # (x - θ)² / σ², one slab per column
        self.log_det = np.empty((p, n_classes))  # log(2π σ²)
        self.epsilon_used = np.full(p, np.nan)  # NaN: the column's slab is stale
        for j in range(p):
            self._column_statistics(j, self.S[:, j])

    def _set_column(self, j: int, column: np.ndarray) -> None:
        self._column_statistics(j, column)

    def _column_statistics(self, j: int, column: np.ndarray) -> None:
        self.column_var[j] = np.var(column)
        for c, members in enumerate(self.members):
            values = column[members]
            self.theta[j, c] = np.mean(values)
            self.raw_var[j, c] = np.var(values)
        self.epsilon_used[j] = np.nan

    def _predict_codes(self) -> np.ndarray | None:
        epsilon = self.var_smoothing * np.max(self.column_var)
        drift = np.abs(self.epsilon_used - epsilon) > _EPSILON_DRIFT * epsilon
        for j in np.flatnonzero(np.isnan(self.epsilon_used) | drift):
            self._score_column(j, epsilon)
        if not np.all(self.raw_var + self.epsilon_used[:, None] > 0):
            return None  # scikit-learn divides by a zero variance here
        squared = np.sum(self.deviations, axis=0)
        log_det = np.sum(self.log_det, axis=0)
        joint = self.log_prior[:, None] - 0.5 * log_det[:, None] - 0.5 * squared
        if not np.all(np.isfinite(joint)):
            return None
        magnitude = (
            np.abs(self.log_prior)[:, None]
            + 0.5 * np.sum(np.abs(self.log_det), axis=0)[:, None]
            + 0.5 * squared
        )
        # Each class's log-likelihood carries a rounding error relative to its own magnitude: compare
        # the winner with every other class against both magnitudes (a class with a near-zero
        # variance has a huge one but loses by far more).
        best = np.argmax(joint, axis=0)
        samples = np.arange(joint.shape[1])
        lead = joint[best, samples] - joint
        allowed = _RELATIVE_TIE * (magnitude[best, samples] + magnitude)
        lead[best, samples] = np.inf
        if np.any(lead <= allowed):
            return None
        return best

    def _score_column(self, j: int, epsilon: float) -> None:
        var = self.raw_var[j] + epsilon
        column = self.S[:, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            self.deviations[j] = (column[None, :] - self.theta[j][:, None]) ** 2 / var[:, None]
            self.log_det[j] = np.log(2.0 * np.pi * var)
        self.epsilon_used[j] = epsilon


class _SquaredDistances:
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
        return n * n * 8 + 2 * min(n, _ROW_BLOCK) * n * 8

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
        replace, add = compiled(_replace_column_units), compiled(_add_column_units)
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
        for start in range(0, n, _ROW_BLOCK):
            rows = slice(start, min(start + _ROW_BLOCK, n))
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
        gemm = _GEMM_ERROR * (norms + np.max(norms))
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


class _NeighbourSweeps(FastScorer):
    """k-NN votes from :func:`optuna_boxcox._neighbors.sweep_neighbours`: block-wise, no n × n
    state. Shared by both k-NN scorers for coordinate sweeps; the block-wise scorer also scores
    single points this way."""

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

    @classmethod
    def from_estimator(
        cls,
        estimator: KNeighborsClassifier,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
    ) -> _NeighbourSweeps | None:
        params = estimator.get_params(deep=False)
        euclidean = params["metric"] == "euclidean" or (
            params["metric"] == "minkowski" and _is_real(params["p"]) and params["p"] == 2
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

    Memory: the n × n int64 distances (:class:`_SquaredDistances`) plus one block of rows at a
    time, or a sweep's blocks.
    """

    name = "knn:incremental"
    #: Candidates per row and neighbour (on average) above which the full partial sort is cheaper.
    _MAX_CANDIDATES = 16
    #: Columns changed since the last score up to which the matrix is updated rather than the
    #: score computed block-wise (measured: 1 column 2-5× faster by the matrix, all 30 of breast
    #: cancer's ~2× and of 5,000 rows ~10× slower).
    _MATRIX_COLUMNS = 2

    def _resident_bytes(self, n_features: int) -> int:
        n = len(self.y)
        # A score's block of rows: a mask, and the partial sort's indices and values (int64).
        block = self._block_rows(n) * n * (1 + 2 * 8)
        nearest = 2 * n * (self.n_neighbors + 1) * 8
        return (
            super()._resident_bytes(n_features) + _SquaredDistances.footprint(n) + nearest + block
        )

    @staticmethod
    def _block_rows(n: int) -> int:
        """Rows per block of a score: 2^20 distances (8 MiB), so that the paper's data sets take
        one block (two cost breast cancer's search 60% more in NumPy's per-call overhead)."""
        return int(min(n, max(16, 2**20 // max(n, 1))))

    def _reset(self) -> None:
        # Built when a score needs it: a search that only sweeps never does.
        self.distances: _SquaredDistances | None = None
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

    def _synced_distances(self) -> _SquaredDistances:
        if self.distances is None:
            self.distances = _SquaredDistances(self.S)
        elif len(self._pending) > self.S.shape[1] // 2:
            self.distances.rebuild()  # p passes of one term each beat > p/2 passes of two
        else:
            for j, old in self._pending.items():
                if self.distances.update(j, self.S[:, j], old):
                    break  # rebuilt from S: every pending column is in
        self._pending.clear()
        return self.distances

    def warm_up(self) -> None:
        _SquaredDistances.warm_up_kernels()
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
        margin = _RELATIVE_TIE * next_ + distances.rounding_bound()
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
    (:func:`optuna_boxcox._neighbors.sweep_neighbours`), keeping each row's k+1 nearest rows; the
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


class RBFSVCScorer(FastScorer):
    """SVC's resubstitution predictions (RBF kernel) from libsvm on a precomputed kernel matrix.

    The kernel exp(−γ·D²) comes from the exactly maintained squared distances of
    :class:`KNeighborsScorer`, so the O(n²p) kernel evaluations of libsvm's fit and predict become
    one O(n²) exponential; libsvm's solver (same C, tol, shrinking, max_iter) runs unchanged on it.
    The kernel differs from libsvm's own by rounding (~1e-15), so the solver takes the same steps
    and the decision values agree to far below 1e-7; a |decision value| under 1e-7 answers None.
    Votes of the one-vs-one classifiers follow libsvm: a positive value votes for the first class of
    the pair, ties go to the smallest class index.

    Memory: the n × n distances and the n × n kernel, and libsvm's kernel cache (``cache_size``
    MB). Where they do not fit, libsvm computes the kernel itself (its cache is bounded), see
    :class:`BlockwiseRBFSVCScorer`.
    """

    name = "svc:precomputed"
    leaves_out_zero_columns = True

    def __init__(
        self, y: np.ndarray, metric: Callable[[np.ndarray, np.ndarray], float], svc_params: dict
    ) -> None:
        super().__init__(y, metric)
        self.gamma = svc_params.pop("gamma")
        self.svc_params = svc_params
        n_classes = len(self.classes)
        self.pairs = [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]

    @classmethod
    def from_estimator(
        cls, estimator: SVC, y: np.ndarray, metric: Callable[[np.ndarray, np.ndarray], float]
    ) -> RBFSVCScorer | None:
        params = estimator.get_params(deep=False)
        gamma = params["gamma"]
        gamma_ok = gamma in ("scale", "auto") or (_is_real(gamma) and gamma > 0)
        if (
            params["kernel"] != "rbf"
            or not gamma_ok
            or params["class_weight"] is not None
            or params["break_ties"]
            or params["decision_function_shape"] not in ("ovr", "ovo")
        ):
            return None
        svc_params = {
            "gamma": gamma,
            "C": params["C"],
            "tol": params["tol"],
            "shrinking": params["shrinking"],
            "cache_size": params["cache_size"],
            "max_iter": params["max_iter"],
            "verbose": params["verbose"],
        }
        return cls(y, metric, svc_params)

    def _adopt(self, other: FastScorer) -> bool:
        self.gamma, self.svc_params = other.gamma, other.svc_params
        return True

    def footprint(self, n_features: int) -> int:
        n = len(self.y)
        kernel = n * n * 8
        cache = svc_cache_bytes(self.svc_params["cache_size"], len(self.y))
        decision = n * len(self.pairs) * 8 * 2
        return (
            super().footprint(n_features)
            + _SquaredDistances.footprint(n)
            + kernel
            + cache
            + decision
        )

    def _reset(self) -> None:
        self.distances = _SquaredDistances(self.S)
        self._kernel: np.ndarray | None = None  # reused: a fresh n × n array every fit page-faults

    def _set_column(self, j: int, column: np.ndarray) -> None:
        self.distances.update(j, column)

    def warm_up(self) -> None:
        _SquaredDistances.warm_up_kernels()

    def kernel(self) -> np.ndarray:
        """The RBF kernel matrix of the current S, with scikit-learn's γ (a buffer that the next
        call overwrites)."""
        if self._kernel is None:
            self._kernel = np.empty(self.distances.units.shape)
        K = self._kernel
        # unit is a power of two: units·(−γ·unit) is the product of the float distances and −γ.
        np.multiply(self.distances.units, -self._gamma() * self.distances.unit, out=K)
        return np.exp(K, out=K)

    def _gamma(self) -> float:
        # As BaseLibSVM.fit computes it: X.var() over the C-ordered matrix, the same summation
        # (the kept columns are copied into a C-ordered matrix, as scikit-learn would get them).
        X = self.S if self.kept is None else self.S[:, self.kept]
        if self.gamma == "scale":
            X_var = X.var()
            return 1.0 / (X.shape[1] * X_var) if X_var != 0 else 1.0
        if self.gamma == "auto":
            return 1.0 / X.shape[1]
        return float(self.gamma)

    def _predict_codes(self) -> np.ndarray | None:
        K = self.kernel()
        model = SVC(kernel="precomputed", decision_function_shape="ovo", **self.svc_params)
        # K is finite by construction and the parameters were validated with the user's estimator:
        # skipping both checks saves most of scikit-learn's overhead around libsvm.
        with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
            model.fit(K, self.codes)
        if len(self.classes) == 2:
            # The kernel expansion of decision_function as one matrix-vector product (libsvm sums
            # the same terms per sample). scikit-learn flips libsvm's sign for binary problems:
            # dual_coef_ and intercept_ are such that a positive value means classes_[1].
            weights = np.zeros(len(K))
            weights[model.support_] = model.dual_coef_[0]
            decision = K @ weights + model.intercept_[0]
            if np.any(np.abs(decision) < _SVM_TIE):
                return None
            return (decision > 0).astype(np.intp)
        decision = model.decision_function(K)
        if np.any(np.abs(decision) < _SVM_TIE):
            return None
        return _ovo_votes(decision, self.pairs, len(self.classes))


class BlockwiseRBFSVCScorer(RBFSVCScorer):
    """A binary SVC's resubstitution predictions: libsvm's own fit, the prediction block-wise.

    The fit is scikit-learn's (libsvm computes the kernel columns it needs, within its
    ``cache_size``); predicting the n training rows, which libsvm does row by row, single-threaded,
    in as much time again, becomes GEMM blocks of ``S · SVᵀ``, one exponential and a matrix-vector
    product per block, on ``n_threads`` threads. Rows whose decision value is within its rounding
    bound of zero (or 1e-7) are predicted by libsvm itself. Memory: one block per thread, the
    support vectors and libsvm's cache — O(n·p), no n × n matrix. Binary problems only.
    """

    name = "svc:blockwise"

    @classmethod
    def from_estimator(
        cls, estimator: SVC, y: np.ndarray, metric: Callable[[np.ndarray, np.ndarray], float]
    ) -> BlockwiseRBFSVCScorer | None:
        if len(np.unique(y)) != 2:
            return None
        return super().from_estimator(estimator, y, metric)

    def footprint(self, n_features: int) -> int:
        n = len(self.y)
        cache = svc_cache_bytes(self.svc_params["cache_size"], len(self.y))
        support = n * n_features * 8  # at most every row
        blocks = self.n_threads * _SVC_BLOCK_BYTES + 4 * n * 8
        return FastScorer.footprint(self, n_features) + cache + support + blocks

    def _reset(self) -> None:
        pass

    def _set_column(self, j: int, column: np.ndarray) -> None:
        pass  # every score is a fresh fit on self.S

    def warm_up(self) -> None:
        pass

    def _predict_codes(self) -> np.ndarray | None:
        # γ as scikit-learn computes it on the kept columns; a zero column adds exact zeros to
        # libsvm's dot products, so the kernel and the solver's steps are those without it.
        model = SVC(kernel="rbf", gamma=self._gamma(), **self.svc_params)
        with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
            model.fit(self.S, self.codes)
        weights = model.dual_coef_[0]  # scikit-learn's sign: positive means classes_[1]
        decision, bound = _rbf_decision(
            self.S, model.support_vectors_, weights, fitted_rbf_gamma(model), self.n_threads
        )
        decision += model.intercept_[0]
        codes = (decision > 0).astype(np.intp)
        unsure = np.flatnonzero(np.abs(decision) <= np.maximum(_SVM_TIE, 2.0 * bound))
        if len(unsure):  # libsvm's own arithmetic (and its tie rule) for these rows
            with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
                codes[unsure] = model.predict(self.S[unsure])
        return codes


def svc_cache_bytes(cache_size: Any, n: int) -> int:
    """Bytes libsvm's kernel cache can take: ``cache_size`` MB, and never more than all n columns
    of the kernel in float32 (libsvm's Qfloat) with their bookkeeping."""
    if not _is_real(cache_size):
        return 0
    return int(min(float(cache_size) * 1024**2, n * (4 * n + 64)))


def _rbf_decision(
    S: np.ndarray, support: np.ndarray, weights: np.ndarray, gamma: float, n_threads: int
) -> tuple[np.ndarray, np.ndarray]:
    """Σ_s w_s·exp(−γ‖x − sv_s‖²) for every row x of S, block by block, and a bound on its
    difference to libsvm's sum (which expands ‖x − sv‖² the same way, with other rounding)."""
    n, n_support = len(S), len(support)
    support = np.ascontiguousarray(support)
    support_norms = np.einsum("ij,ij->i", support, support)
    norms = np.einsum("ij,ij->i", S, S)
    decision = np.empty(n)
    magnitude = np.empty(n)  # Σ_s |w_s|·k(x, sv_s)
    magnitudes = np.abs(weights)
    rows = int(min(n, max(1, _SVC_BLOCK_BYTES // (8 * max(n_support, 1)))))

    def block(start: int) -> None:
        stop = min(start + rows, n)
        K = S[start:stop] @ support.T
        K *= -2.0
        K += norms[start:stop, None]
        K += support_norms[None, :]
        K *= -gamma
        np.exp(K, out=K)
        decision[start:stop] = K @ weights
        magnitude[start:stop] = K @ magnitudes

    with single_threaded_blas():
        parallel_map(block, range(0, n, rows), n_threads)
    eps = np.finfo(np.float64).eps
    # |Δ distance| ≤ GEMM_ERROR·(‖x‖² + ‖sv‖²) on either side moves each kernel value by a factor
    # of at most γ times that; the exponentials and the sums of n_support terms round too.
    relative = gamma * 2.0 * _GEMM_ERROR * (norms + np.max(support_norms, initial=0.0))
    bound = magnitude * (relative + (n_support + 4) * eps)
    return decision, bound


def _ovo_votes(
    decision: np.ndarray, pairs: Sequence[tuple[int, int]], n_classes: int
) -> np.ndarray:
    """libsvm's one-vs-one vote: value > 0 votes for the pair's first class; first maximum wins."""
    votes = np.zeros((len(decision), n_classes), dtype=np.intp)
    rows = np.arange(len(decision))
    for column, (a, b) in enumerate(pairs):
        winner = np.where(decision[:, column] > 0, a, b)
        np.add.at(votes, (rows, winner), 1)
    return np.argmax(votes, axis=1)


class SGDScorer(FastScorer):
    """A binary ``SGDClassifier`` (perceptron or hinge loss) refitted on S with scikit-learn's own
    arithmetic (:mod:`optuna_boxcox._sgd`); predictions from the sign of S·w + b, ``None`` when a
    decision value is within rounding of zero (scikit-learn's matrix product may round it the
    other way) or when scikit-learn would raise on non-finite weights. Memory: O(n·p)."""

    name = "sgd"

    def __init__(
        self,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
        settings: dict[str, Any],
    ) -> None:
        super().__init__(y, metric)
        self.settings = settings
        self.signs = np.where(
            self.codes == 1, 1.0, -1.0
        )  # fit_binary's ±1 labels: classes_[1] is +1

    @classmethod
    def from_estimator(
        cls,
        estimator: SGDClassifier,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
    ) -> SGDScorer | None:
        from optuna_boxcox._sgd import sgd_settings

        settings = sgd_settings(estimator)
        if settings is None or len(np.unique(y)) != 2:
            return None
        return cls(y, metric, settings)

    def _adopt(self, other: FastScorer) -> bool:
        self.settings = other.settings
        return True

    def footprint(self, n_features: int) -> int:
        # |S| for the rounding bound of the decision values.
        return super().footprint(n_features) + len(self.y) * n_features * 8

    def _reset(self) -> None:
        pass

    def _set_column(self, j: int, column: np.ndarray) -> None:
        pass  # every score is a fresh fit on self.S

    def _predict_codes(self) -> np.ndarray | None:
        from optuna_boxcox._sgd import fit_sgd_binary

        fitted = fit_sgd_binary(self.S, self.signs, self.settings)
        if fitted is None:
            return None
        w, intercept, _ = fitted
        decision = self.S @ w + intercept
        allowed = _RELATIVE_TIE * (np.abs(self.S) @ np.abs(w) + abs(intercept))
        if not np.all(np.abs(decision) > allowed):
            return None
        return (decision > 0).astype(np.intp)


#: The fast scorers of each classifier class, fastest first; the first that fits the memory wins.
_SCORERS: dict[type, tuple[type[FastScorer], ...]] = {
    GaussianNB: (GaussianNBScorer,),
    KNeighborsClassifier: (KNeighborsScorer, BlockwiseKNeighborsScorer),
    SVC: (RBFSVCScorer, BlockwiseRBFSVCScorer),
    SGDClassifier: (SGDScorer,),
}


def _valid_parameters(estimator: Any) -> bool:
    """Whether scikit-learn's fit would accept the parameters; if not, the generic path raises the
    user's error instead of a fast path silently ignoring, say, an invalid leaf_size."""
    try:
        validate_estimator_params(estimator)
    except Exception:
        return False
    return True


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
