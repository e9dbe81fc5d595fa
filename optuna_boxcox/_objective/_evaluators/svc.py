"""The RBF SVC's fast scorers: libsvm on a precomputed kernel, or its own fit with a block-wise
prediction."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import sklearn
from sklearn.svm import SVC

from optuna_boxcox._math._jit import parallel_map
from optuna_boxcox._math._jit import single_threaded_blas
from optuna_boxcox._math._sklearn_compat import fitted_rbf_gamma

if TYPE_CHECKING:
    from collections.abc import Sequence
from optuna_boxcox._objective._evaluators._base import GEMM_ERROR
from optuna_boxcox._objective._evaluators._base import SVC_BLOCK_BYTES
from optuna_boxcox._objective._evaluators._base import SVM_TIE
from optuna_boxcox._objective._evaluators._base import FastScorer
from optuna_boxcox._objective._evaluators._base import is_real
from optuna_boxcox._objective._evaluators._distances import SquaredDistances
from optuna_boxcox._study._decision import CV
from optuna_boxcox._study._decision import Rule

#: The RBF SVC's gate rule: the best 5×2 CV score of the searched Λ and the anchors (the anchor on
#: a tie). Measured, a margin of one standard error kept the searched Λ in 4 of 120 folds, i.e.
#: gave the anchors, which rank below StandardScaler and Yeo-Johnson; the plain best-of-three
#: ranked first.
GATE_RULE = Rule(CV, 0.0)


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
    classifier = SVC
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
        gamma_ok = gamma in ("scale", "auto") or (is_real(gamma) and gamma > 0)
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
            + SquaredDistances.footprint(n)
            + kernel
            + cache
            + decision
        )

    def _reset(self) -> None:
        self.distances = SquaredDistances(self.S)
        self._kernel: np.ndarray | None = None  # reused: a fresh n × n array every fit page-faults

    def _set_column(self, j: int, column: np.ndarray) -> None:
        self.distances.update(j, column)

    def warm_up(self) -> None:
        SquaredDistances.warm_up_kernels()

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
            if np.any(np.abs(decision) < SVM_TIE):
                return None
            return (decision > 0).astype(np.intp)
        decision = model.decision_function(K)
        if np.any(np.abs(decision) < SVM_TIE):
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
    side_by_side = True

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
        blocks = self.n_threads * SVC_BLOCK_BYTES + 4 * n * 8
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
        unsure = np.flatnonzero(np.abs(decision) <= np.maximum(SVM_TIE, 2.0 * bound))
        if len(unsure):  # libsvm's own arithmetic (and its tie rule) for these rows
            with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
                codes[unsure] = model.predict(self.S[unsure])
        return codes


def svc_cache_bytes(cache_size: Any, n: int) -> int:
    """Bytes libsvm's kernel cache can take: ``cache_size`` MB, and never more than all n columns
    of the kernel in float32 (libsvm's Qfloat) with their bookkeeping."""
    if not is_real(cache_size):
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
    rows = int(min(n, max(1, SVC_BLOCK_BYTES // (8 * max(n_support, 1)))))

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
    relative = gamma * 2.0 * GEMM_ERROR * (norms + np.max(support_norms, initial=0.0))
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
