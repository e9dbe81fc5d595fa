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
  :func:`optuna_boxcox._math._sgd.fit_sgd_binary`, which returns scikit-learn's weights bit for bit
  without its ~1.4 ms of validation and set-up per fit.
- :class:`LogisticScorer`: an L2-penalised ``LogisticRegression(solver="lbfgs")``, binary or
  multinomial, refitted by :func:`optuna_boxcox._math._lbfgs.lbfgs_fit`, which retraces
  scikit-learn's L-BFGS-B steps to rounding without its Python around them; a prediction or a
  stopping test within rounding of a threshold is left to scikit-learn.

- :class:`RidgeScorer`: ``RidgeClassifier``'s closed form, its Gram matrix updated one column at
  a time; a decision within a bound on rounding is left to scikit-learn.

No other classifier or parameter setting has a fast path (:func:`make_fast_scorer` returns ``None``):
the MLP, for one, refits from scratch with nothing to reuse.

Memory: every scorer states its :meth:`~FastScorer.footprint` before it allocates, and
:func:`make_fast_scorer` only returns one that fits the caller's limit. The incremental k-NN and the
precomputed-kernel SVC hold n × n matrices; above the limit k-NN switches to
:class:`BlockwiseKNeighborsScorer` (no n × n state, :mod:`optuna_boxcox._math._neighbors`) and a binary
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

from collections.abc import Callable
import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.linear_model import RidgeClassifier
from sklearn.linear_model import SGDClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC
from sklearn.svm import LinearSVC

from optuna_boxcox._objective._evaluators import knn_held_out
from optuna_boxcox._objective._evaluators import svc
from optuna_boxcox._objective._evaluators._base import GENERIC
from optuna_boxcox._objective._evaluators._base import FastScorer
from optuna_boxcox._objective._evaluators._base import valid_parameters
from optuna_boxcox._objective._evaluators.bayes import GaussianNBScorer
from optuna_boxcox._objective._evaluators.bayes import gaussian_nb_predictions
from optuna_boxcox._objective._evaluators.knn import BlockwiseKNeighborsScorer
from optuna_boxcox._objective._evaluators.knn import KNeighborsScorer
from optuna_boxcox._objective._evaluators.logistic import LogisticScorer
from optuna_boxcox._objective._evaluators.logistic import logistic_predictions
from optuna_boxcox._objective._evaluators.ridge import RidgeScorer
from optuna_boxcox._objective._evaluators.sgd import SGDScorer
from optuna_boxcox._objective._evaluators.svc import BlockwiseRBFSVCScorer
from optuna_boxcox._objective._evaluators.svc import RBFSVCScorer
from optuna_boxcox._objective._evaluators.svc import svc_cache_bytes
from optuna_boxcox._objective._evaluators.trees import MonotoneInvariantWarning
from optuna_boxcox._objective._evaluators.trees import monotone_invariant
from optuna_boxcox._study._decision import ALL_ANCHORS
from optuna_boxcox._study._decision import Rule

__all__ = [
    "GENERIC",
    "GENERIC_COST",
    "LINEAR",
    "REGISTRY",
    "BlockwiseKNeighborsScorer",
    "BlockwiseRBFSVCScorer",
    "CostClass",
    "Evaluators",
    "FastScorer",
    "GaussianNBScorer",
    "KNeighborsScorer",
    "LogisticScorer",
    "MonotoneInvariantWarning",
    "RBFSVCScorer",
    "RidgeScorer",
    "SGDScorer",
    "evaluators_of",
    "gate_rule",
    "gate_rules",
    "held_out_predictions",
    "make_fast_scorer",
    "min_fold_rows",
    "monotone_invariant",
    "ready_kernels",
    "searches",
    "svc_cache_bytes",
    "ungated_reason",
]


#: Why a linear classifier is not gated: a linear boundary cannot memorise rows, so its training
#: accuracy is close to its held-out accuracy and the paper's criterion is not flattered; and the
#: perceptron's cross-validated accuracy swings from fold to fold (one pass of stochastic
#: updates), so a gate on it decides by noise. Measured, the gate made the perceptron worse.
LINEAR = "a linear classifier's training accuracy is not flattered"


@dataclass(frozen=True)
class CostClass:
    """The seconds one new point costs this classifier's evaluator on data of ``rows`` ×
    ``features`` with ``classes`` classes, on the reference machine (the 2-core development
    machine): ``max(floor, unit · rows^rows_exponent · features^features_exponent · (classes
    when there are more than two, if per_class))``.

    What it is for: ``fidelity="auto"`` prices the search from it — exact or halving, the rungs
    and the top rung's cap — so that the choice is a function of the data's shape and the
    classifier alone, never of how fast or busy the machine is
    (:mod:`optuna_boxcox._objective._auto`).

    ``sweep_ratio``: for an evaluator that shares a sweep's work (k-NN), the cost per point of a
    sweep of 11 points over that of a sweep of 2 (a sweep's fixed part, paid for one point too).
    """

    unit: float
    rows_exponent: float
    features_exponent: float = 0.0
    per_class: bool = False
    floor: float = 0.0
    sweep_ratio: float | None = None

    def seconds(self, rows: int, features: int, classes: int) -> float:
        classes_factor = classes if self.per_class and classes > 2 else 1
        return max(
            self.floor,
            self.unit
            * float(rows) ** self.rows_exponent
            * float(features) ** self.features_exponent
            * classes_factor,
        )

    def to_attrs(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Evaluators:
    """What the package knows of a classifier: its evaluators, its cost, and how the guarded
    default's gate judges it (``optuna_boxcox._lifecycle._guard`` reads these traits and names no
    classifier).

    Attributes:
        scorers: Its fast scorers, fastest first; the first that fits the memory wins.
        generic_side_by_side: scikit-learn's own resubstitution fit of it is worth running side by
            side in threads (the SVC: libsvm's fit is the cost).
        generic_cache_bytes: ``(estimator, n) -> bytes`` that scikit-learn's fit holds beyond the
            data (the SVC's kernel cache), or None.
        cost: Its cost class (how a new point's cost grows with rows, features and classes);
            None: :data:`GENERIC_COST`.
        ungated: Why the gate does not judge its searched Λ (empty: it does).
        rule: The gate's rule for it (None: the default :class:`Rule`), where ``rule_applies``
            ``(estimator, metric, y)`` holds (None: always).
        held_out: ``(estimator, X, y, X_test) -> predictions or None``: its
            ``clone(estimator).fit(X, y).predict(X_test)`` without scikit-learn's overhead, for the
            gate's folds (None, or a None answer: scikit-learn's fit).
        leave_one_out: ``(estimator, T, y) -> per-row 1.0/0.0``: exact leave-one-out correctness,
            for a rule whose criterion is leave-one-out.
        min_fold_rows: ``estimator -> (rows, setting) or None``: the fewest rows a fold of the
            gate must train on for it to predict, and its setting that needs them (None, or a
            None answer: any number will do).
    """

    scorers: tuple[type[FastScorer], ...] = ()
    generic_side_by_side: bool = False
    generic_cache_bytes: Callable[[Any, int], int] | None = None
    cost: CostClass | None = None
    ungated: str = ""
    rule: Rule | None = None
    rule_applies: Callable[[Any, Any, np.ndarray], bool] | None = None
    held_out: Callable[[Any, np.ndarray, np.ndarray, np.ndarray], np.ndarray | None] | None = None
    leave_one_out: Callable[[Any, np.ndarray, np.ndarray], np.ndarray] | None = None
    min_fold_rows: Callable[[Any], tuple[int, str] | None] | None = None


#: The cost class of a classifier the registry does not know (any scikit-learn classifier,
#: through scikit-learn's fit and predict): priced as a fit linear in rows × features, with the
#: floor of a small iterative fit (the measurements are in docs/performance_log.md).
GENERIC_COST = CostClass(1.5e-5, 1.0, 1.0, floor=0.02)


#: The MLP's rule: its fits cost seconds and its best fixed transforms are range scalers, so the
#: default searches nothing and judges the four anchors by its own CV (docs/performance_log.md,
#: "Why each classifier's gate traits are what they are").
MLP_RULE = Rule(anchors=ALL_ANCHORS, search=False)

#: LinearSVC's rule: the default rule against all four anchors (the MLE Λ and Λ = 1, each standard
#: or min-max scaled), better on the development sets than the two standard-scaled ones alone
#: (docs/performance_log.md, "Why each classifier's gate traits are what they are").
LINEAR_SVC_RULE = Rule(anchors=ALL_ANCHORS)


def _neighbours_needed(knn: Any) -> tuple[int, str] | None:
    # scikit-learn's k-NN refuses to predict with more neighbours than the rows it was fitted on.
    k = knn.get_params().get("n_neighbors")
    return (int(k), f"n_neighbors={int(k)}") if isinstance(k, (int, np.integer)) else None


#: The evaluators of each classifier class (exact types: a subclass may override fit). Why each
#: cost class and gate trait is what it is: docs/performance_log.md, "The cost classes" and "Why each
#: classifier's gate traits are what they are"; the cost's shape is beside each entry.
REGISTRY: dict[type, Evaluators] = {
    # One column's likelihoods updated: rows × classes.
    GaussianNB: Evaluators(
        (GaussianNBScorer,),
        cost=CostClass(2e-7, 1.0, per_class=True),
        held_out=gaussian_nb_predictions,
    ),
    # One column's term of the distances and the votes: rows².
    KNeighborsClassifier: Evaluators(
        (KNeighborsScorer, BlockwiseKNeighborsScorer),
        cost=CostClass(8.25e-10, 2.0, sweep_ratio=0.19),
        rule=knn_held_out.GATE_RULE,
        rule_applies=knn_held_out.gate_rule_applies,
        held_out=knn_held_out.neighbour_predictions,
        leave_one_out=knn_held_out.leave_one_out_correct,
        min_fold_rows=_neighbours_needed,
    ),
    # libsvm refitted on the kernel: rows².
    SVC: Evaluators(
        (RBFSVCScorer, BlockwiseRBFSVCScorer),
        generic_side_by_side=True,
        generic_cache_bytes=lambda svc, n: svc_cache_bytes(svc.cache_size, n),
        cost=CostClass(5.75e-8, 2.0),
        rule=svc.GATE_RULE,
    ),
    # SGD refitted: rows × features, a weight vector per class beyond two.
    SGDClassifier: Evaluators(
        (SGDScorer,), cost=CostClass(1.75e-7, 1.0, 1.0, per_class=True), ungated=LINEAR
    ),
    # Refitted from scratch through scikit-learn: rows × features, at least its iterations. Seconds
    # a fit: the default searches no Λ (a search is thousands of fits) and its gate picks the best
    # of the anchors and their range-scaled forms by the MLP's own 5×2 CV (40 fits).
    MLPClassifier: Evaluators(cost=CostClass(3.7e-5, 1.0, 1.0, floor=0.4), rule=MLP_RULE),
    # lbfgs refitted from zeros in compiled code: rows × features, a coefficient vector per class
    # beyond two, at least the fit's set-up. Gated: its fit converges to an optimum, so its CV
    # score is not the perceptron's noise.
    LogisticRegression: Evaluators(
        (LogisticScorer,),
        cost=CostClass(6e-8, 1.0, 1.0, per_class=True, floor=0.0004),
        held_out=logistic_predictions,
    ),
    # No fast scorer: scikit-learn's path, priced as any classifier the registry does not know.
    # Gated as the other convex linear fits are, against the anchors min-max scaled too.
    LinearSVC: Evaluators(cost=GENERIC_COST, rule=LINEAR_SVC_RULE),
    # One column of its Gram matrix updated and its closed form solved: rows × features, per class
    # beyond two, at least the solve. Gated as LogisticRegression is.
    RidgeClassifier: Evaluators(
        (RidgeScorer,), cost=CostClass(2.5e-8, 1.0, 1.0, per_class=True, floor=0.0004)
    ),
}
#: What a classifier without an entry has: scikit-learn's path only, priced by GENERIC_COST.
_NONE = Evaluators()


def evaluators_of(estimator: Any) -> Evaluators:
    """The registry's entry for ``estimator``'s exact class (none: scikit-learn's path only)."""
    return REGISTRY.get(type(estimator), _NONE)


def ungated_reason(estimator: Any) -> str:
    """Why the gate does not judge ``estimator``'s searched Λ, or "" when it does: the trait of
    the nearest class in its ancestry that the registry knows; else any other linear classifier of
    scikit-learn's ``linear_model`` (the perceptron, RidgeClassifierCV, …) is not gated
    (:data:`LINEAR`), and every other classifier is."""
    for kind in type(estimator).__mro__:
        if kind in REGISTRY:
            return REGISTRY[kind].ungated
    return LINEAR if type(estimator).__module__.startswith("sklearn.linear_model") else ""


def min_fold_rows(estimator: Any) -> tuple[int, str] | None:
    """The fewest rows a fold of the gate must train on for ``estimator`` to predict, and its
    setting that needs them, or None when any number will do: the trait of the nearest class in
    its ancestry that the registry knows (a subclass predicts as its base does)."""
    for kind in type(estimator).__mro__:
        if kind in REGISTRY:
            needed = REGISTRY[kind].min_fold_rows
            return None if needed is None else needed(estimator)
    return None


def gate_rule(estimator: Any, metric: Any, y: np.ndarray) -> Rule:
    """How the gate judges ``estimator``'s searched Λ scored by ``metric`` on labels ``y``: its
    entry's rule where it applies, else the default :class:`Rule` (5×2 CV, a one-standard-error
    margin)."""
    entry = evaluators_of(estimator)
    if entry.rule is None or (
        entry.rule_applies is not None and not entry.rule_applies(estimator, metric, y)
    ):
        return Rule()
    return entry.rule


def gate_rules() -> list[Rule]:
    """Every rule the gate may judge by, the entries' in the registry's order, then the default:
    what a recorded decision was made with (``_lifecycle._guard.settings``)."""
    rules = [entry.rule for entry in REGISTRY.values() if entry.rule is not None]
    return [*dict.fromkeys(rules), Rule()]


def ready_kernels(estimator: Any, y: np.ndarray) -> None:
    """Name the compiled kernels ``estimator``'s fast scorers would use on labels ``y`` to Numba,
    without compiling them: a fresh installation's notice comes before a search's set-up."""
    for kind in evaluators_of(estimator).scorers:
        kind.ready_kernels(estimator, y)


def searches(estimator: Any) -> bool:
    """Whether the guarded default searches Λ for ``estimator`` before its gate (its entry's rule
    says; a rule without search judges the anchors only)."""
    rule = evaluators_of(estimator).rule
    return rule is None or rule.search


def held_out_predictions(
    estimator: Any, X: np.ndarray, y: np.ndarray, X_test: np.ndarray
) -> np.ndarray | None:
    """``clone(estimator).fit(X, y).predict(X_test)`` by the entry's fast predictor, or None when
    it has none or it cannot answer (then the caller fits with scikit-learn)."""
    held_out = evaluators_of(estimator).held_out
    return None if held_out is None else held_out(estimator, X, y, X_test)


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
    if y.ndim != 1 or len(np.unique(y)) < 2 or not valid_parameters(estimator):
        return None
    if memory_limit is not None and n_features is None:
        raise ValueError("make_fast_scorer needs n_features to check a memory_limit")
    for kind in evaluators_of(estimator).scorers:
        scorer = kind.from_estimator(estimator, y, metric)
        if scorer is None:
            return None  # the estimator's settings, not its size, rule the fast path out
        scorer.n_threads = max(1, int(n_threads))
        if memory_limit is None or scorer.footprint(n_features) <= memory_limit:
            scorer.memory_limit = memory_limit
            return scorer
    return None
