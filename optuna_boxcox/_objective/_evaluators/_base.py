"""What every fast scorer is (:class:`FastScorer`), and the bounds that decide a near-tie."""

from __future__ import annotations

import abc
from collections.abc import Callable
import math
import numbers
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from sklearn.metrics import accuracy_score

from optuna_boxcox._math._sklearn_compat import validate_estimator_params
from optuna_boxcox._objective._scoring import score_predictions

if TYPE_CHECKING:
    from collections.abc import Sequence

#: Relative margin below which a decision counts as a near-tie (rounding errors are ~1e-13).
RELATIVE_TIE = 1e-9
#: Absolute |decision value| below which an SVM prediction counts as a near-tie.
SVM_TIE = 1e-7
#: Bound on the rounding error of scikit-learn's GEMM-based distances, relative to ‖x‖² + ‖y‖².
GEMM_ERROR = 1e-12
#: A recomputed GaussianNB epsilon this close to the one a column was scored with keeps the column.
EPSILON_DRIFT = 1e-12
#: Rows per block where a scorer works on an n × n matrix a block of rows at a time.
ROW_BLOCK = 256
#: Bytes of one block of kernel values in a block-wise SVC prediction (per thread).
SVC_BLOCK_BYTES = 4 * 1024**2
#: Evaluator names, as :attr:`BoxCoxObjective.evaluator` reports them, for the generic paths.
GENERIC = "sklearn"


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
    #: The scikit-learn classifier whose predictions it gives (its exact type: a subclass may
    #: override fit).
    classifier: type | None = None
    #: Whether :meth:`score_sweep` shares so much of a coordinate sweep's work (k-NN's
    #: distances) that its batches are not shared out to processes.
    shares_sweeps: bool = False
    #: Whether candidates are worth scoring side by side in threads, one scorer each (its own fit
    #: is the cost, not a matrix shared by all).
    side_by_side: bool = False

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
        if type(estimator) is not self.classifier:
            return False
        if not valid_parameters(estimator):
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

    @classmethod  # noqa: B027 - optional hook; most scorers compile nothing
    def ready_kernels(cls, estimator: Any, y: np.ndarray) -> None:
        """Name the compiled kernels a scorer for ``estimator`` would use, without compiling or
        loading them: where Numba's cache lacks one, its notice is printed now, before the
        search's set-up (the MLE Λ, Numba's import) that would otherwise come first."""

    def _compute_score(self) -> float | None:
        codes = self._predict_codes()
        if codes is None:
            return None
        return self._score_codes(codes)

    def _score_codes(self, codes: np.ndarray) -> float:
        """The metric of predicted class indices."""
        if self.metric is accuracy_score:  # a hit is a hit in codes as in labels
            return score_predictions(accuracy_score, self.codes, codes)
        return score_predictions(self.metric, self.y, self.classes[codes])

    @abc.abstractmethod
    def _reset(self) -> None:
        """Rebuild all state from ``self.S``."""

    @abc.abstractmethod
    def _set_column(self, j: int, column: np.ndarray) -> None:
        """Update state for column j; ``self.S[:, j]`` still holds the old column."""

    @abc.abstractmethod
    def _predict_codes(self) -> np.ndarray | None:
        """Predicted class index of every row of S, or None on a near-tie."""


class RefitScorer(FastScorer):
    """A scorer whose every score is a fit from scratch on S, with settings read off the
    estimator once: nothing carries from one matrix to the next, so candidates score side by side
    in threads, one scorer each."""

    side_by_side = True

    def __init__(
        self,
        y: np.ndarray,
        metric: Callable[[np.ndarray, np.ndarray], float],
        settings: dict[str, Any],
    ) -> None:
        super().__init__(y, metric)
        self.settings = settings

    @classmethod
    def from_estimator(
        cls, estimator: Any, y: np.ndarray, metric: Callable[[np.ndarray, np.ndarray], float]
    ) -> RefitScorer | None:
        settings = cls.settings_of(estimator, y)
        return None if settings is None else cls(y, metric, settings)

    @staticmethod
    @abc.abstractmethod
    def settings_of(estimator: Any, y: np.ndarray) -> dict[str, Any] | None:
        """The settings of the fit retraced for ``estimator`` on labels ``y``, or None when this
        scorer has no exact path for them."""

    @staticmethod
    def kernels() -> Any:
        """Make the compiled kernels the fit uses known to Numba without compiling them (None:
        it uses none)."""
        return None

    @classmethod
    def ready_kernels(cls, estimator: Any, y: np.ndarray) -> None:
        if cls.settings_of(estimator, y) is not None:
            cls.kernels()

    def _adopt(self, other: FastScorer) -> bool:
        self.settings = other.settings
        return True

    def _reset(self) -> None:
        pass

    def _set_column(self, j: int, column: np.ndarray) -> None:
        pass  # every score is a fresh fit on self.S


def valid_parameters(estimator: Any) -> bool:
    """Whether scikit-learn's fit would accept the parameters; if not, the generic path raises the
    user's error instead of a fast path silently ignoring, say, an invalid leaf_size."""
    try:
        validate_estimator_params(estimator)
    except Exception:
        return False
    return True


def is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
