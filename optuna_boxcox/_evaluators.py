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

from optuna_boxcox._jit import compiled

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


def make_fast_scorer(
    estimator: Any,
    y: np.ndarray,
    metric: Callable[[np.ndarray, np.ndarray], float],
) -> FastScorer | None:
    """A specialised resubstitution scorer for `estimator`, or None when it has no exact fast path
    (unsupported class or parameters) — the caller then uses the generic scikit-learn path."""
    y = np.asarray(y)
    if y.ndim != 1 or len(np.unique(y)) < 2 or not _valid_parameters(estimator):
        return None
    # Exact types only: a subclass may override fit or predict.
    if type(estimator) is GaussianNB:
        return GaussianNBScorer.from_estimator(estimator, y, metric)
    if type(estimator) is KNeighborsClassifier:
        return KNeighborsScorer.from_estimator(estimator, y, metric)
    if type(estimator) is SVC:
        return RBFSVCScorer.from_estimator(estimator, y, metric)
    if type(estimator) is SGDClassifier:
        return SGDScorer.from_estimator(estimator, y, metric)
    return None


class FastScorer(abc.ABC):
    """Resubstitution score of one classifier on an n×p matrix S that changes column by column.

    Call :meth:`reset` with the whole matrix first, then :meth:`set_column` for every changed column
    (several may change between two scores) and :meth:`score`. Not thread-safe: use one per thread.

    Args:
        y: Class labels, one per row of S.
        metric: ``metric(y_true, y_pred) -> float`` applied to the predictions.
    """

    def __init__(self, y: np.ndarray, metric: Callable[[np.ndarray, np.ndarray], float]) -> None:
        self.y = np.asarray(y)
        self.metric = metric
        # classes_ and the class index of each sample, as every scikit-learn classifier encodes them.
        self.classes, self.codes = np.unique(self.y, return_inverse=True)
        self.S: np.ndarray | None = None
        self._score: float | None = None  # of the current S, until a column changes

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

    def warm_up(self) -> None:  # noqa: B027 - optional hook; most scorers compile nothing
        """Load any compiled kernel the scorer uses later (one-off cost, seconds at most)."""

    def _compute_score(self) -> float | None:
        codes = self._predict_codes()
        if codes is None:
            return None
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
    """

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
    would overflow it.
    """

    def __init__(self, S: np.ndarray) -> None:
        self.S = S  # shared with the scorer, which writes the new column after the update
        n = S.shape[0]
        self._float = np.empty((n, n))
        self._int = np.empty((n, n), dtype=np.int64)
        self.rebuild()

    def rebuild(self) -> None:
        self.spans = np.array([_squared_span(self.S[:, j]) for j in range(self.S.shape[1])])
        bound = 4.0 * float(np.sum(self.spans))
        # The largest even k with bound·2^k ≤ 2^62: k/2 scales the columns exactly by a power of 2.
        half = math.floor((62 - math.log2(bound)) / 2) if bound > 0 else 0
        self.half_shift = int(min(max(half, -500), 500))
        self.unit = 2.0 ** (-2 * self.half_shift)
        self.capacity = 2.0**62 * self.unit
        self.units = np.zeros(self._int.shape, dtype=np.int64)
        for j in range(self.S.shape[1]):
            self._add(self.S[:, j], np.add)

    def warm_up(self) -> None:
        kernel = compiled(_replace_column_units)
        if kernel is not None:
            kernel(np.zeros((1, 1), dtype=np.int64), np.zeros(1), np.zeros(1))

    def update(self, j: int, column: np.ndarray) -> None:
        """Column j changes from ``S[:, j]`` to `column` (the caller then stores it)."""
        span = _squared_span(column)
        if np.sum(self.spans) - self.spans[j] + span > self.capacity / 1.01:
            self.S[:, j] = column
            self.rebuild()
            return
        kernel = compiled(_replace_column_units)
        if kernel is None:
            self._add(self.S[:, j], np.subtract)
            self._add(column, np.add)
        else:  # the same truncated integers, in one pass
            kernel(
                self.units,
                np.ldexp(self.S[:, j], self.half_shift),
                np.ldexp(column, self.half_shift),
            )
        self.spans[j] = span

    def _add(self, column: np.ndarray, op: Callable[..., np.ndarray]) -> None:
        scaled = np.ldexp(column, self.half_shift)  # exact: a power-of-two scaling
        np.subtract(scaled[:, None], scaled[None, :], out=self._float)
        np.square(self._float, out=self._float)
        np.copyto(self._int, self._float, casting="unsafe")  # truncation, deterministic per column
        op(self.units, self._int, out=self.units)

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


def _squared_span(column: np.ndarray) -> float:
    """An upper bound on every (x_i − x_k)² of the column (1% over for rounding)."""
    span = float(np.max(column) - np.min(column)) if len(column) else 0.0
    return 1.01 * span * span


class KNeighborsScorer(FastScorer):
    """KNeighborsClassifier's resubstitution predictions (uniform weights, Euclidean distance).

    Each sample's neighbours are its k nearest rows of S including itself (``predict(S)`` on the fit
    data does not exclude the point), the vote is the most frequent class, ties to the smallest class
    index (scikit-learn's argmax of the neighbour class frequencies). Changing a column costs O(n²).
    A score first bounds each row's new (k+1)-th distance by the new distances of its previous k+1
    nearest rows, so only the few rows under that bound need sorting; a full partial sort is the
    fallback. Rows whose k-th and (k+1)-th distances lie within a relative 1e-9 (plus the rounding
    bound) are near-ties: which row scikit-learn keeps is then up to its distance rounding and tie
    order, so the answer is None unless every row in that band has the same class.
    """

    #: Candidates per row and neighbour (on average) above which the full partial sort is cheaper.
    _MAX_CANDIDATES = 16

    def __init__(
        self, y: np.ndarray, metric: Callable[[np.ndarray, np.ndarray], float], n_neighbors: int
    ) -> None:
        super().__init__(y, metric)
        self.n_neighbors = n_neighbors
        self.members = [np.flatnonzero(self.codes == c) for c in range(len(self.classes))]

    @classmethod
    def from_estimator(
        cls,
        estimator: KNeighborsClassifier,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
    ) -> KNeighborsScorer | None:
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

    def _reset(self) -> None:
        self.distances = _SquaredDistances(self.S)
        self.nearest: np.ndarray | None = (
            None  # the k+1 nearest rows of each row at the last score
        )

    def _set_column(self, j: int, column: np.ndarray) -> None:
        self.distances.update(j, column)

    def warm_up(self) -> None:
        self.distances.warm_up()

    def _predict_codes(self) -> np.ndarray | None:
        units = self.distances.units
        k = self.n_neighbors
        n = len(units)
        if k == n:
            votes = np.tile([len(m) for m in self.members], (n, 1))
            return np.argmax(votes, axis=1)
        nearest = self._candidate_nearest(units)
        if nearest is None:
            nearest = np.argpartition(units, (k - 1, k), axis=1)[:, : k + 1]
        self.nearest = nearest
        rows = np.arange(n)
        kth, next_ = units[rows, nearest[:, k - 1]], units[rows, nearest[:, k]]
        margin = _RELATIVE_TIE * next_ + self.distances.rounding_bound()
        votes = _count_classes(self.codes[nearest[:, :k]], len(self.classes))
        for i in np.flatnonzero(next_ - kth <= margin):
            row_votes = self._near_tie_votes(units[i], kth[i], margin[i])
            if row_votes is None:
                return None
            votes[i] = row_votes
        return np.argmax(votes, axis=1)

    def _candidate_nearest(self, units: np.ndarray) -> np.ndarray | None:
        """The k+1 nearest rows of each row, sorted by distance, found among the rows no farther
        than the previous k+1 nearest now are; None when there is no previous score or too many
        candidates."""
        if self.nearest is None:
            return None
        n, k = len(units), self.n_neighbors
        rows = np.arange(n)
        bound = np.max(units[rows[:, None], self.nearest], axis=1)
        flat = np.flatnonzero(units <= bound[:, None])  # much faster than a 2-D np.nonzero
        if len(flat) > self._MAX_CANDIDATES * n * (k + 1):
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
    """

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

    def _reset(self) -> None:
        self.distances = _SquaredDistances(self.S)

    def _set_column(self, j: int, column: np.ndarray) -> None:
        self.distances.update(j, column)

    def warm_up(self) -> None:
        self.distances.warm_up()

    def kernel(self) -> np.ndarray:
        """The RBF kernel matrix of the current S, with scikit-learn's γ."""
        K = self.distances.units.astype(np.float64)
        np.multiply(K, -self._gamma() * self.distances.unit, out=K)  # unit: a power of two, exact
        return np.exp(K, out=K)

    def _gamma(self) -> float:
        # As BaseLibSVM.fit computes it: X.var() over the C-ordered matrix, the same summation.
        if self.gamma == "scale":
            X_var = self.S.var()
            return 1.0 / (self.S.shape[1] * X_var) if X_var != 0 else 1.0
        if self.gamma == "auto":
            return 1.0 / self.S.shape[1]
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
    other way) or when scikit-learn would raise on non-finite weights."""

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


def _valid_parameters(estimator: Any) -> bool:
    """Whether scikit-learn's fit would accept the parameters; if not, the generic path raises the
    user's error instead of a fast path silently ignoring, say, an invalid leaf_size."""
    try:
        estimator._validate_params()
    except Exception:
        return False
    return True


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
