"""The guarded default: a searched Λ is kept only if it beats the anchors on rows a fit never saw.

The paper's criterion, resubstitution accuracy, flatters classifiers that can memorise their
training rows (k-NN counts each row among its own neighbours, an RBF SVC fits its training
rows), and choosing among thousands of candidates by a noisy score overfits the choice (Cawley &
Talbot 2010). So after the search, three Λ compete on rows a fit never saw:

- ``searched``: the Λ the search chose;
- ``mle``: the per-feature maximum-likelihood Λ, the search's start point;
- ``ones``: Λ = 1, which after the [1, 2] scaling is exactly standard scaling.

The better anchor is the one of ``mle`` and ``ones`` with the higher score (``mle`` on a tie: it
is where the search started). Each classifier is judged by its own rule (:func:`rule_of`),
chosen from held-out measurements on the development data (``optuna_boxcox.bench.guard``):

- **k-NN** (Euclidean, uniform votes, scored by accuracy; :data:`KNN_RULE`): exact leave-one-out
  accuracy, a row is not its own neighbour, with the transform fitted on all the rows. One
  distance matrix per candidate makes it cheaper than the search. The searched Λ is kept only if
  it beats the better anchor by more than one standard error of the paired per-row differences,
  *and* its 5×2 repeated stratified CV score is above that anchor's: the search tuned the
  neighbours of these same rows, and on permuted labels the leave-one-out win alone is often that
  tuning, while the CV score, where a fifth of the rows are no one's neighbours, rarely agrees.
- **SVC** (:data:`SVC_RULE`): the best 5×2 CV score of the three (the anchor on a tie). Measured,
  a margin of one standard error kept the searched Λ in 4 of 120 folds, i.e. gave the anchors,
  which rank below StandardScaler and Yeo-Johnson; the plain best-of-three ranked first.
- **every other gated classifier** (naive Bayes, the MLP, trees, k-NN with another metric or
  weights; the default :class:`Rule`): 5×2 CV, every fold fitting the transform and the
  classifier on the other folds as ``fit`` does; the searched Λ is kept only if its score beats
  the better anchor's by more than one standard error of the paired per-fold differences,
  corrected for the overlap of the training folds (Nadeau & Bengio 2003: variance × (1/k +
  n_test/n_train) over k folds). Else the anchor is used.

The margins are statistical rules (one standard error of the criterion's noise), not numbers
tuned to data: with them, a search that found nothing the held-out rows can tell apart from the
anchor gives the anchor, the Λ a user could have had from a fixed one-line transform.

Which classifiers are gated: every one but the linear ones (scikit-learn's ``linear_model``, e.g.
the paper's perceptron, and ``LinearSVC``). A linear boundary cannot memorise rows: its training
accuracy is close to its held-out accuracy, so the paper's criterion is not flattered, and the
perceptron's cross-validated accuracy swings from fold to fold (one pass of stochastic updates), so
a gate on it decides by noise. Measured, the gate made the perceptron worse and the search alone
ranked first; for those classifiers the searched Λ is kept ungated, and the decision says so.

:func:`decide` returns a :class:`Decision`; :meth:`Decision.record` writes it into the study's user
attributes (:data:`DECISION_ATTR`), which ``search`` prints and the dashboard shows, with the
settings it was made with (:func:`settings`: the searched Λ and the gate's rules), so that a rerun
on a finished study or another worker of it reads it back (:func:`recorded`) instead of judging
the same Λ again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
import warnings

import numpy as np

#: The name of the guarded default wherever a sampler is named (``BoxCoxClassifier(sampler=…)``,
#: ``search --sampler``): the paper's coordinate search, then the gate.
GUARDED = "guarded"
#: The paper's search the guarded default runs before its gate.
SEARCH_SAMPLER = "coordinate"
#: Study user attribute holding the decision.
DECISION_ATTR = "boxcox_decision"
#: Study user attribute marking a study of the guarded default (its spec names the coordinate
#: search it runs), so that a ``worker`` joining it gates too.
GUARDED_ATTR = "boxcox_guarded"
#: Inner folds × repeats of the gate's cross-validation.
SPLITS = 5
REPEATS = 2
#: How many corrected standard errors the searched Λ must beat the better anchor by.
MARGIN = 1.0
#: The candidates, in the order a tie goes (first wins among equal anchors).
CANDIDATES = ("searched", "mle", "ones")


CV = f"{SPLITS}x{REPEATS} cv"
LOO = "leave-one-out"


@dataclass(frozen=True)
class Rule:
    """How a classifier's searched Λ is judged: by ``criterion`` (:data:`CV` or :data:`LOO`),
    kept when it beats the better anchor by more than ``margin`` standard errors (and, with
    ``confirm``, when its 5×2 CV score is above that anchor's too)."""

    criterion: str = CV
    margin: float = MARGIN
    confirm: bool = False

    def describe(self) -> str:
        if self.criterion == LOO:
            text = (
                f"searched kept if its exact leave-one-out accuracy beats the better anchor (mle or "
                f"ones, by leave-one-out) by more than {self.margin:g} standard error of the paired "
                "per-row differences"
            )
        elif self.margin == 0:
            text = f"the best {SPLITS}-fold x{REPEATS} CV score of searched, mle and ones (ties to the anchor)"
        else:
            text = (
                f"searched kept if its {SPLITS}-fold x{REPEATS} CV score beats the better anchor "
                f"(mle or ones) by more than {self.margin:g} corrected standard error"
            )
        if self.confirm:
            text += f", and its {SPLITS}-fold x{REPEATS} CV score is above that anchor's"
        return text

    @classmethod
    def from_description(cls, criterion: str, text: str) -> Rule:
        for rule in (KNN_RULE, SVC_RULE, Rule()):
            if rule.criterion == criterion and rule.describe() == text:
                return rule
        return Rule(criterion)


#: k-NN: exact leave-one-out (a row is not its own neighbour), confirmed by 5×2 CV.
KNN_RULE = Rule(LOO, MARGIN, confirm=True)
#: The RBF SVC: the best of the three by 5×2 CV.
SVC_RULE = Rule(CV, 0.0)


@dataclass(frozen=True)
class Decision:
    """What the gate chose and the scores that decided it.

    ``chosen`` is ``"searched"``, ``"mle"`` or ``"ones"``; ``scores`` the mean cross-validated
    score of each candidate; ``anchor`` the better anchor; ``difference`` the searched Λ's score
    minus the anchor's, ``threshold`` what it had to exceed (``margin`` corrected standard errors).
    """

    chosen: str
    lambdas: np.ndarray
    scores: dict[str, float]
    anchor: str
    difference: float
    threshold: float
    folds: int
    gated: bool = True
    reason: str = ""
    #: The rule that judged (:func:`rule_of`).
    rule: Rule | None = None
    #: The leave-one-out rule's confirmation: the 5×2 CV scores of the searched Λ and the anchor.
    confirmation: dict[str, float] | None = None
    #: What the decision was made with (:func:`settings`), when a study records it.
    settings: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        attr = self._to_dict()
        if self.settings is not None:
            attr["settings"] = self.settings
        return attr

    def _to_dict(self) -> dict[str, Any]:
        if not self.gated:
            return {
                "chosen": self.chosen,
                "lambdas": [float(v) for v in self.lambdas],
                "gated": False,
                "rule": f"not gated: {self.reason}; the searched Λ is kept",
            }
        rule = self.rule or Rule()
        attr = {
            "chosen": self.chosen,
            "gated": True,
            "lambdas": [float(v) for v in self.lambdas],
            "criterion": rule.criterion,
            "scores": {k: float(v) for k, v in self.scores.items()},
            "anchor": self.anchor,
            "difference": float(self.difference),
            "threshold": float(self.threshold),
            "folds": self.folds,
            "rule": rule.describe(),
        }
        if self.confirmation is not None:
            attr["confirmation"] = {k: float(v) for k, v in self.confirmation.items()}
        return attr

    def record(self, study: Any) -> None:
        """Write the decision into the study's user attributes."""
        study.set_user_attr(DECISION_ATTR, self.to_dict())

    @classmethod
    def from_dict(cls, attr: dict[str, Any]) -> Decision:
        """The decision :meth:`to_dict` wrote."""
        nan = float("nan")
        if not attr["gated"]:
            reason = (
                attr["rule"].removeprefix("not gated: ").removesuffix("; the searched Λ is kept")
            )
            lambdas = np.asarray(attr["lambdas"], dtype=float)
            return cls(
                attr["chosen"],
                lambdas,
                {},
                "",
                nan,
                nan,
                0,
                gated=False,
                reason=reason,
                settings=attr.get("settings"),
            )
        return cls(
            chosen=attr["chosen"],
            lambdas=np.asarray(attr["lambdas"], dtype=float),
            scores=dict(attr["scores"]),
            anchor=attr["anchor"],
            difference=float(attr["difference"]),
            threshold=float(attr["threshold"]),
            folds=int(attr["folds"]),
            rule=Rule.from_description(attr.get("criterion", CV), attr["rule"]),
            confirmation=attr.get("confirmation"),
            settings=attr.get("settings"),
        )

    def describe(self) -> str:
        """One line for ``search``'s report."""
        if not self.gated:
            return f"searched Λ kept, not gated ({self.reason})"
        scores = ", ".join(f"{k} {v:.4f}" for k, v in self.scores.items())
        verdict = "searched Λ kept" if self.chosen == "searched" else f"anchor {self.chosen} used"
        line = (
            f"{verdict}: {(self.rule or Rule()).criterion} {scores}; searched − {self.anchor} = "
            f"{self.difference:+.4f}, needed > {self.threshold:.4f}"
        )
        if self.confirmation is not None:
            line += f"; {CV} searched − {self.anchor} = {self._confirmed_difference():+.4f}, needed > 0"
        return line

    def _confirmed_difference(self) -> float:
        return self.confirmation["searched"] - self.confirmation[self.anchor]


def fold_scores(
    estimator: Any,
    lambdas: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    metric: Any,
    *,
    seed: int,
    method: str = "box-cox",
    extrapolation: str = "extrapolate",
) -> np.ndarray:
    """The metric of each fold of repeated stratified CV, transform and classifier fitted on the
    other folds."""
    from sklearn.base import clone
    from sklearn.model_selection import RepeatedStratifiedKFold

    from optuna_boxcox._math._numerics import ExtremeValueWarning
    from optuna_boxcox._math._transform import BoxCoxTransformer

    splitter = RepeatedStratifiedKFold(n_splits=_splits(y), n_repeats=REPEATS, random_state=seed)
    scores = []
    for train, test in splitter.split(X, y):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ExtremeValueWarning)
            transform = BoxCoxTransformer(
                lambdas=lambdas, method=method, extrapolation=extrapolation
            ).fit(X[train])
            fitted, held = transform.transform(X[train]), transform.transform(X[test])
            predicted = _neighbour_predictions(estimator, fitted, y[train], held)
            if predicted is None:
                predicted = clone(estimator).fit(fitted, y[train]).predict(held)
            scores.append(metric(y[test], predicted))
    return np.asarray(scores, dtype=float)


def _neighbour_predictions(
    estimator: Any, X: np.ndarray, y: np.ndarray, X_test: np.ndarray
) -> np.ndarray | None:
    """``KNeighborsClassifier(...).fit(X, y).predict(X_test)`` by one NumPy distance matrix, for
    the k-NN the fast evaluator scores (Euclidean, uniform votes); None for any other estimator
    or when a row's k-th neighbour is not clear-cut (then scikit-learn answers).

    scikit-learn's fit and predict cost ~25 ms of overhead each on a few hundred rows, the gate's
    30 of them more than the search itself. The votes are scikit-learn's (:func:`_votes`).
    """
    k = _neighbours(estimator, y)
    if k is None or k >= len(y) or not (np.all(np.isfinite(X)) and np.all(np.isfinite(X_test))):
        return None
    classes, codes = np.unique(y, return_inverse=True)
    scale = _norms(X_test) + np.max(_norms(X))
    predicted = np.empty(len(X_test), dtype=np.intp)
    for rows in _blocks(len(X_test), len(X)):
        votes, unsure = _votes(
            _squared_distances(X_test[rows], X), codes, len(classes), k, scale[rows]
        )
        if len(unsure):
            return None
        predicted[rows] = np.argmax(votes, axis=1)
    return classes[predicted]


def leave_one_out_correct(estimator: Any, T: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per row of the transformed rows ``T``, 1.0 if the k-NN fitted on the other rows predicts
    its class, else 0.0: exact leave-one-out, a row is not its own neighbour (resubstitution
    counts it among them). Distances a block of rows at a time (:data:`BLOCK_BYTES`); a row whose k-th neighbour is not clear-cut is
    answered by scikit-learn fitted without it."""
    from sklearn.base import clone

    k = _neighbours(estimator, y)
    classes, codes = np.unique(y, return_inverse=True)
    norms = _norms(T)
    predicted = np.empty(len(T), dtype=np.intp)
    unsure = []
    for rows in _blocks(len(T), len(T)):
        squared = _squared_distances(T[rows], T)
        squared[np.arange(rows.stop - rows.start), np.arange(rows.start, rows.stop)] = np.inf
        votes, block_unsure = _votes(squared, codes, len(classes), k, norms[rows] + np.max(norms))
        predicted[rows] = np.argmax(votes, axis=1)
        unsure.extend(rows.start + block_unsure)
    others = np.ones(len(y), dtype=bool)
    for i in unsure:
        others[i] = False
        model = clone(estimator).fit(T[others], y[others])
        predicted[i] = np.searchsorted(classes, model.predict(T[i : i + 1])[0])
        others[i] = True
    return (predicted == codes).astype(float)


def _neighbours(estimator: Any, y: np.ndarray) -> int | None:
    """k of a k-NN the fast evaluator reproduces on labels ``y`` (its own test), else None."""
    from sklearn.neighbors import KNeighborsClassifier

    from optuna_boxcox._objective._evaluators.knn import BlockwiseKNeighborsScorer

    if type(estimator) is not KNeighborsClassifier:
        return None
    scorer = BlockwiseKNeighborsScorer.from_estimator(estimator, y, _none)
    if scorer is None:
        return None
    return scorer.n_neighbors


def _none(*_: Any) -> float:
    return 0.0


def _norms(A: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", A, A)


def _votes(
    squared: np.ndarray, codes: np.ndarray, n_classes: int, k: int, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``squared`` (its squared distances to the training rows), the class votes of
    its k nearest training rows, and the rows whose votes depend on rounding.

    scikit-learn's k-NN: the k nearest rows vote, the most frequent class wins, ties to the
    smallest class. Which rows are the k nearest is only up to rounding and tie order when the
    k-th and (k+1)-th distances lie within a relative 1e-9 of each other (``scale``, the squared
    norms involved, bounds every computation's rounding); such a row is answered when every row
    in that band has one class (tied distances are common on lattice data such as iris), else it
    is returned as unsure.
    """
    rows = np.arange(len(squared))
    order = np.argpartition(squared, (k - 1, k), axis=1)
    kth, following = squared[rows, order[:, k - 1]], squared[rows, order[:, k]]
    margin = 1e-9 * (np.where(np.isfinite(following), following, 0.0) + scale)
    votes = np.zeros((len(squared), n_classes), dtype=np.intp)
    np.add.at(votes, (np.repeat(rows, k), codes[order[:, :k]].ravel()), 1)
    unsure = []
    for i in np.flatnonzero(following - kth <= margin):
        certain = squared[i] < kth[i] - margin[i]
        band = ~certain & (squared[i] <= kth[i] + margin[i])
        band_classes = np.unique(codes[band])
        if len(band_classes) > 1:
            unsure.append(i)
            continue
        votes[i] = np.bincount(codes[certain], minlength=n_classes)
        votes[i, band_classes[0]] += k - np.count_nonzero(certain)
    return votes, np.asarray(unsure, dtype=np.intp)


#: Bytes of one block of squared distances (and as much again for the votes' work arrays): the
#: gate's memory does not grow with the square of the rows.
BLOCK_BYTES = 32 << 20


def _blocks(n_rows: int, n_columns: int) -> list[slice]:
    """Row slices of at most ``BLOCK_BYTES`` of float64 distances to ``n_columns`` rows each."""
    size = max(1, BLOCK_BYTES // (8 * max(1, n_columns)))
    return [slice(start, min(start + size, n_rows)) for start in range(0, n_rows, size)]


def _squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between the rows of A and B, summed column by column (no
    cancellation as in ‖a‖² − 2a·b + ‖b‖²)."""
    squared = np.zeros((len(A), len(B)))
    for j in range(A.shape[1]):
        squared += np.square(A[:, j, None] - B[None, :, j])
    return squared


def _splits(y: np.ndarray) -> int:
    """SPLITS, or fewer when the smallest class has fewer rows (at least 2)."""
    _, counts = np.unique(y, return_counts=True)
    return int(max(2, min(SPLITS, counts.min())))


def rule_of(estimator: Any, metric: Any, y: np.ndarray) -> Rule:
    """How this classifier's searched Λ is judged (the module's rules): :data:`KNN_RULE` for the
    k-NN the fast evaluator reproduces scored by accuracy (with at least k + 2 rows),
    :data:`SVC_RULE` for scikit-learn's SVC, else 5×2 CV with a margin of :data:`MARGIN`."""
    from sklearn.metrics import accuracy_score
    from sklearn.svm import SVC

    k = _neighbours(estimator, y)
    if metric is accuracy_score and k is not None and k + 1 < len(y):
        return KNN_RULE
    if type(estimator) is SVC:
        return SVC_RULE
    return Rule()


def decide(
    estimator: Any,
    X: np.ndarray,
    y: np.ndarray,
    candidates: dict[str, np.ndarray],
    metric: Any,
    *,
    seed: int = 0,
    method: str = "box-cox",
    extrapolation: str = "extrapolate",
    rule: Rule | None = None,
) -> Decision:
    """Choose among ``candidates`` (``searched``, ``mle``, ``ones`` → Λ) by ``rule`` (default
    :func:`rule_of` the estimator)."""
    rule = rule or rule_of(estimator, metric, y)
    lambdas = {name: np.asarray(candidates[name], dtype=float) for name in CANDIDATES}

    def cv(name: str) -> np.ndarray:
        return fold_scores(
            estimator,
            lambdas[name],
            X,
            y,
            metric,
            seed=seed,
            method=method,
            extrapolation=extrapolation,
        )

    confirmation = None
    if rule.criterion == LOO:
        transformed = {
            name: _transformed(lambdas[name], X, method, extrapolation) for name in CANDIDATES
        }
        if not all(np.all(np.isfinite(T)) for T in transformed.values()):
            rule = Rule()  # scikit-learn's folds say what such values do
    if rule.criterion == LOO:
        scores = {
            name: leave_one_out_correct(estimator, transformed[name], y) for name in CANDIDATES
        }
        means = {name: float(values.mean()) for name, values in scores.items()}
        anchor = "ones" if means["ones"] > means["mle"] else "mle"
        d = scores["searched"] - scores[anchor]
        # The standard error of a mean over the rows' paired differences.
        error = float(np.std(d, ddof=1)) / np.sqrt(len(d))
    else:
        scores = {name: cv(name) for name in CANDIDATES}
        means = {name: float(values.mean()) for name, values in scores.items()}
        anchor = "ones" if means["ones"] > means["mle"] else "mle"
        d = scores["searched"] - scores[anchor]
        n_test = len(y) / _splits(y)
        # Nadeau & Bengio's corrected variance of a mean over overlapping CV folds.
        error = float(np.sqrt((1.0 / len(d) + n_test / (len(y) - n_test)) * np.var(d, ddof=1)))
    threshold = rule.margin * error
    difference = float(d.mean())
    chosen = "searched" if difference > threshold else anchor
    if rule.confirm and chosen == "searched":
        confirmation = {name: float(cv(name).mean()) for name in ("searched", anchor)}
        if confirmation["searched"] <= confirmation[anchor]:
            chosen = anchor
    return Decision(
        chosen=chosen,
        lambdas=lambdas[chosen],
        scores=means,
        anchor=anchor,
        difference=difference,
        threshold=threshold,
        folds=len(d),
        rule=rule,
        confirmation=confirmation,
    )


def _transformed(
    lambdas: np.ndarray, X: np.ndarray, method: str, extrapolation: str
) -> np.ndarray:
    """X through the transform with these Λ fitted on X (it does not see the labels)."""
    from optuna_boxcox._math._numerics import ExtremeValueWarning
    from optuna_boxcox._math._transform import BoxCoxTransformer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtremeValueWarning)
        transform = BoxCoxTransformer(lambdas=lambdas, method=method, extrapolation=extrapolation)
        return transform.fit_transform(X)


def applies(objective: Any) -> bool:
    """Whether the gate can judge this search: one score, λ only (no transform choices or
    classifier settings searched with it; the anchors are Λ vectors only)."""
    return (
        len(objective.directions) == 1
        and set(objective.transforms) == {objective.method}
        and not objective.estimator_params
    )


def metric_of(scoring: Any) -> Any:
    """The metric the gate scores folds with: the search's own, accuracy for a classifier-free
    criterion."""
    from sklearn.metrics import accuracy_score

    from optuna_boxcox._objective._objective import METRICS

    if callable(scoring):
        return scoring
    return METRICS.get(scoring, accuracy_score)


def search_sampler(name: str) -> str:
    """The registry sampler that searches for ``name``: the paper's coordinate search for the
    guarded default, ``name`` itself otherwise."""
    return SEARCH_SAMPLER if name == GUARDED else name


def gated(estimator: Any) -> bool:
    """Whether the gate judges searches for this classifier: all but the linear ones."""
    from sklearn.svm import LinearSVC

    if isinstance(estimator, LinearSVC):
        return False
    return not type(estimator).__module__.startswith("sklearn.linear_model")


def guard(
    objective: Any,
    estimator: Any,
    X: np.ndarray,
    y: np.ndarray,
    params: dict[str, Any],
    *,
    seed: int = 0,
    extrapolation: str = "extrapolate",
) -> Decision:
    """The gate after a search of ``objective`` chose ``params``: searched Λ, MLE, Λ = 1."""
    searched = objective.to_lambdas(params)
    reason = ""
    if not gated(estimator):
        reason = "a linear classifier's training accuracy is not flattered"
    elif np.unique(y, return_counts=True)[1].min() < 2:
        reason = "a class has a single row: no stratified folds to judge on"
    if reason:
        nan = float("nan")
        return Decision("searched", searched, {}, "", nan, nan, 0, gated=False, reason=reason)
    candidates = {
        "searched": searched,
        "mle": np.asarray(objective.mle_lambdas, dtype=float),
        "ones": np.ones(len(objective.param_names)),
    }
    return decide(
        estimator,
        np.asarray(X, dtype=float),
        np.asarray(y),
        candidates,
        metric_of(objective.scoring),
        seed=seed,
        method=objective.method,
        extrapolation=extrapolation,
    )


def settings(searched: np.ndarray, *, seed: int, extrapolation: str) -> dict[str, Any]:
    """What a decision depends on besides the data and the study's experiment (which the study
    already pins): the searched Λ it judged and the gate's own settings."""
    return {
        "searched": [float(v) for v in searched],
        "seed": int(seed),
        "extrapolation": extrapolation,
        "splits": SPLITS,
        "repeats": REPEATS,
        "margin": MARGIN,
        "rules": [KNN_RULE.describe(), SVC_RULE.describe(), Rule().describe()],
    }


def recorded(study: Any, settings: dict[str, Any]) -> Decision | None:
    """The decision the study holds when it was made with these ``settings`` (a rerun of
    ``search`` on a finished study, another ``worker`` of it), else None: the gate is not run
    again for the same searched Λ."""
    attr = study.user_attrs.get(DECISION_ATTR)
    if not isinstance(attr, dict) or attr.get("settings") != settings:
        return None
    return Decision.from_dict(attr)
