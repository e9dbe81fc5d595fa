"""The guarded default: a searched Λ is kept only if it beats the anchors on rows a fit never saw.

The paper's criterion, resubstitution accuracy, flatters classifiers that can memorise their
training rows (k-NN counts each row among its own neighbours, an RBF SVC fits its training
rows), and choosing among thousands of candidates by a noisy score overfits the choice (Cawley &
Talbot 2010). So after the search, three Λ compete on rows a fit never saw:

- ``searched``: the Λ the search chose;
- ``mle``: the per-feature maximum-likelihood Λ, the search's start point;
- ``ones``: Λ = 1, which after the [1, 2] scaling is exactly standard scaling.

The better anchor is the one of ``mle`` and ``ones`` with the higher score (``mle`` on a tie: it
is where the search started); a rule may judge fewer anchors (k-NN's: ``ones`` alone, with the
MLE Λ as its fallback where it scores as well as a kept searched Λ) or more (below). Each
classifier is judged by its own rule (:func:`rule_of`), a trait
of its entry in the classifier registry (``optuna_boxcox._objective._evaluators.REGISTRY``),
chosen from held-out measurements on the development data (``optuna_boxcox.bench.guard``; the
results: docs/performance_log.md, "Why each classifier's gate traits are what they are"). The default
:class:`Rule`, for every gated classifier without a rule of its own: 5×2 CV, every fold fitting
the transform and the classifier on the other folds as ``fit`` does; the searched Λ is kept only
if its score beats the better anchor's by more than one standard error of the paired per-fold
differences, corrected for the overlap of the training folds (Nadeau & Bengio 2003: variance ×
(1/k + n_test/n_train) over k folds). Else the anchor is used. The registry's held-out predictors
answer the folds' fits where they can; scikit-learn otherwise.

Data whose smallest class has fewer rows than the gate's folds (:data:`SPLITS`) cannot be judged
on held-out rows (a 5×2 CV of 4 rows scores every Λ 0.5 or 1): Λ = 1 is used ungated, the
decision saying why; the search on so few rows only fitted them.

More than :data:`MAX_ROWS` rows are judged on a stratified sample of that many (drawn with the
search's seed): the gate's 30 fits on all of 50,000 rows took longer than the search.

The margins are statistical rules (one standard error of the criterion's noise), not numbers
tuned to data: with them, a search that found nothing the held-out rows can tell apart from the
anchor gives the anchor, the Λ a user could have had from a fixed one-line transform.

Which classifiers are gated is the registry's trait too (``ungated_reason``), and so is how many
rows a fold must train on for one to predict (``min_fold_rows``): the gate reads them and names no
classifier. Where a classifier is not gated, or the gate's folds are too small for it, the searched
Λ is kept ungated and the decision says why. As of now the registry leaves ungated
``SGDClassifier`` (the paper's perceptron) and the other classifiers of scikit-learn's
``linear_model`` with no entry in their ancestry (``Perceptron``, ``PassiveAggressiveClassifier``,
``RidgeClassifierCV``); LogisticRegression, RidgeClassifier and LinearSVC, whose fits converge to
an optimum, are gated, as is every other classifier the search reaches (tree models are not
searched at all). A rule may also judge other anchors (the MLE Λ and Λ = 1 min-max scaled after the
power step, ``RANGE_SCALED``) and say that the default searches no Λ at all (the MLP's: its fits
cost seconds): the best anchor is then used, and the study records the MLE Λ as its one trial
(:data:`ANCHOR_SAMPLER`).

:func:`decide` returns a :class:`Decision`; :meth:`Decision.record` writes it into the study's user
attributes (:data:`DECISION_ATTR`), which ``search`` prints and the dashboard shows, with the
settings it was made with (:func:`settings`: the searched Λ and the gate's rules), so that a rerun
on a finished study or another worker of it reads it back (:func:`recorded`) instead of judging
the same Λ again.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.model_selection import StratifiedKFold
from sklearn.model_selection import train_test_split

from optuna_boxcox._math._numerics import ConstantColumnWarning
from optuna_boxcox._math._numerics import ExtremeValueWarning
from optuna_boxcox._math._numerics import PowerSettings
from optuna_boxcox._math._numerics import RangedPair
from optuna_boxcox._math._numerics import fit_columns
from optuna_boxcox._math._numerics import fitted_pair
from optuna_boxcox._math._numerics import range_pair
from optuna_boxcox._math._numerics import range_standardise
from optuna_boxcox._math._transform import BoxCoxTransformer
from optuna_boxcox._objective._evaluators import evaluators_of
from optuna_boxcox._objective._evaluators import gate_rule
from optuna_boxcox._objective._evaluators import gate_rules
from optuna_boxcox._objective._evaluators import held_out_predictions
from optuna_boxcox._objective._evaluators import min_fold_rows
from optuna_boxcox._objective._evaluators import searches
from optuna_boxcox._objective._evaluators import ungated_reason
from optuna_boxcox._objective._objective import METRICS
from optuna_boxcox._objective._scoring import score_predictions
from optuna_boxcox._study._decision import DECISION_ATTR
from optuna_boxcox._study._decision import LOO
from optuna_boxcox._study._decision import MARGIN
from optuna_boxcox._study._decision import RANGE_SCALED
from optuna_boxcox._study._decision import REPEATS
from optuna_boxcox._study._decision import SPLITS
from optuna_boxcox._study._decision import Decision
from optuna_boxcox._study._decision import Rule
from optuna_boxcox._study._decision import lambda_source
from optuna_boxcox._system import _stop
from optuna_boxcox.samplers import SAMPLERS

_logger = logging.getLogger(__name__)

#: The name of the guarded default wherever a sampler is named (``BoxCoxClassifier(sampler=…)``,
#: ``search --sampler``): the paper's coordinate search, then the gate.
GUARDED = "guarded"
#: The paper's search the guarded default runs before its gate.
SEARCH_SAMPLER = "coordinate"
#: What the guarded default runs for a classifier whose rule searches no Λ: the MLE Λ, one trial
#: (the study still records the Λ and the decision).
ANCHOR_SAMPLER = "mle"


def sampler_names() -> tuple[str, ...]:
    """Every sampler name a search takes: the guarded default, then the registry's
    (:data:`~optuna_boxcox.samplers.SAMPLERS`)."""
    return (GUARDED, *SAMPLERS)


#: Study user attribute marking a study of the guarded default (its spec names the coordinate
#: search it runs), so that a ``worker`` joining it gates too.
GUARDED_ATTR = "boxcox_guarded"
#: The most rows the gate judges on: more rows are a stratified sample of this many (drawn with
#: the search's seed). The gate fits each classifier 5 × 2 times per candidate, which on tens of
#: thousands of rows takes longer than the search, while 5,000 rows measure a difference of
#: accuracy to a few tenths of a point.
MAX_ROWS = 5_000


#: The largest X whose folds' range step :class:`Folds` shares between candidates.
SHARED_RANGE_BYTES = 64 * 1024**2


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
    range_scale: bool = False,
) -> np.ndarray:
    """The metric of each fold of repeated stratified CV, transform and classifier fitted on the
    other folds (min-max scaled after the power step with ``range_scale``)."""
    folds = Folds(X, y, seed=seed, method=method, extrapolation=extrapolation)
    return folds.scores(estimator, {"": (lambdas, range_scale)}, metric)[""]


class Folds:
    """One decision's repeated stratified CV folds of (X, y): split once, and each fold's Λ-free
    range scaling done once for every candidate scored on it (:meth:`scores`). The candidates'
    numbers are those of scoring each alone."""

    def __init__(
        self,
        X: np.ndarray,
        y: np.ndarray,
        *,
        seed: int,
        method: str,
        extrapolation: str,
        whole_range: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.X, self.y = X, y
        self.method, self.extrapolation = method, extrapolation
        self.whole_range = whole_range
        splitter = RepeatedStratifiedKFold(
            n_splits=_splits(y), n_repeats=REPEATS, random_state=seed
        )
        self.splits = list(splitter.split(X, y))  # index arrays: n per fold

    def scores(
        self, estimator: Any, candidates: dict[str, tuple[np.ndarray, bool]], metric: Any
    ) -> dict[str, np.ndarray]:
        """Each candidate's (name → (Λ, min-max scaled after the power step)) metric per fold."""
        X, y = self.X, self.y
        # The shared range step is one more copy of X alive beside a candidate's transform:
        # worth it for the many small fits it saves, not on wide data.
        share = len(candidates) > 1 and X.nbytes <= SHARED_RANGE_BYTES
        scores: dict[str, list[float]] = {name: [] for name in candidates}
        for train, test in self.splits:
            # The search has said it already, about the same columns. A held-out value far
            # outside the fold's range may come out of a candidate's transform near 1e300, which
            # the classifier's own arithmetic (a squared distance) overflows: that fold scores
            # what the classifier predicts there, without NumPy's warning.
            with warnings.catch_warnings(), np.errstate(over="ignore", invalid="ignore"):
                warnings.simplefilter("ignore", ExtremeValueWarning)
                warnings.simplefilter("ignore", ConstantColumnWarning)
                # A fold's fit is the gate's own business; the model the user gets warns for
                # itself.
                warnings.simplefilter("ignore", ConvergenceWarning)
                rows, held_rows = X[train], X[test]
                ranged = None
                if self.method == "box-cox" and self.whole_range is not None:
                    ranged = _whole_ranged(self.whole_range, rows, held_rows, self.extrapolation)
                elif self.method == "box-cox" and share:
                    ranged = range_pair(rows, held_rows, extrapolation=self.extrapolation)
                for name, (lambdas, range_scale) in candidates.items():
                    # BoxCoxTransformer's numbers without its checks, which cost more than the
                    # transform on a few hundred rows (X is float64, checked once by the search).
                    fitted, held = fitted_pair(
                        lambdas,
                        rows,
                        held_rows,
                        method=self.method,
                        extrapolation=self.extrapolation,
                        range_scale=range_scale,
                        ranged=ranged,
                    )
                    predicted = held_out_predictions(estimator, fitted, y[train], held)
                    if predicted is None:
                        model = clone(estimator).fit(fitted, y[train])
                        _stop.check()  # a Ctrl-C the fit swallowed (scikit-learn's MLP) still stops
                        predicted = model.predict(held)
                    scores[name].append(score_predictions(metric, y[test], predicted))
        return {name: np.asarray(values, dtype=float) for name, values in scores.items()}


def _whole_ranged(
    whole_range: tuple[np.ndarray, np.ndarray],
    rows: np.ndarray,
    held: np.ndarray | None,
    extrapolation: str,
) -> RangedPair:
    """A fold of a sample scaled into Z by the range of all the rows the sample was drawn from:
    as the search scored it, and as the fit on all rows will transform."""
    data_min, data_range = whole_range
    with np.errstate(all="ignore"):
        return RangedPair(
            data_min,
            data_range,
            range_standardise(rows, data_min, data_range, extrapolation),
            None if held is None else range_standardise(held, data_min, data_range, extrapolation),
        )


def _splits(y: np.ndarray) -> int:
    """SPLITS, or fewer when the smallest class has fewer rows (at least 2)."""
    _, counts = np.unique(y, return_counts=True)
    return int(max(2, min(SPLITS, counts.min())))


def rule_of(estimator: Any, metric: Any, y: np.ndarray) -> Rule:
    """How this classifier's searched Λ is judged: its registry entry's rule where it applies
    (e.g. k-NN's exact leave-one-out, the SVC's best of three), else 5×2 CV with a margin of
    :data:`MARGIN`."""
    return gate_rule(estimator, metric, y)


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
    whole_range: tuple[np.ndarray, np.ndarray] | None = None,
) -> Decision:
    """Choose among ``candidates`` (``searched``, ``mle``, ``ones`` → Λ; a range-scaled anchor
    uses its anchor's Λ) by ``rule`` (default :func:`rule_of` the estimator): the best of the
    rule's anchors, then, where the rule searches, the searched Λ if it beats that anchor by the
    rule's margin (or the rule's fallback, where it scores as well). ``whole_range``: X is a
    sample of more rows, whose Box-Cox range every fold uses (else each fold fits its own, as
    ``fit`` on those rows would)."""
    rule = rule or rule_of(estimator, metric, y)
    names = rule.judged
    if not rule.search:  # its fits take seconds, its gate minutes: say what it waits for
        _logger.info(
            f"{type(estimator).__name__}: no Λ search (its fits cost seconds); the gate judges "
            f"{', '.join(names)} by {SPLITS}-fold × {REPEATS} CV, "
            f"{len(names) * SPLITS * REPEATS} fits"
        )
    lambdas = {name: np.asarray(candidates[lambda_source(name)], dtype=float) for name in names}
    folds: Folds | None = None  # split when the rule first scores by CV

    def cv(*which: str) -> dict[str, np.ndarray]:
        nonlocal folds
        if folds is None:
            folds = Folds(
                X,
                y,
                seed=seed,
                method=method,
                extrapolation=extrapolation,
                whole_range=whole_range,
            )
        chosen = {name: (lambdas[name], name in RANGE_SCALED) for name in which}
        return folds.scores(estimator, chosen, metric)

    confirmation = None
    nan = float("nan")
    if rule.criterion == LOO:
        transformed = {
            name: _transformed(
                lambdas[name], X, method, extrapolation, name in RANGE_SCALED, whole_range
            )
            for name in names
        }
        if not all(np.all(np.isfinite(T)) for T in transformed.values()):
            rule = Rule()  # scikit-learn's folds say what such values do
            names = rule.judged
    if rule.criterion == LOO:
        leave_one_out = evaluators_of(estimator).leave_one_out
        scores = {name: leave_one_out(estimator, transformed[name], y) for name in names}
    else:
        scores = cv(*names)
    means = {name: float(values.mean()) for name, values in scores.items()}
    # The first of the best anchors: a tie goes to the MLE Λ, where the search started.
    anchor = max(rule.anchors, key=lambda name: means[name])
    if rule.search:
        chosen, difference, threshold, confirmation = _judge_searched(
            rule,
            scores,
            anchor,
            y,
            lambda *which: {k: float(v.mean()) for k, v in cv(*which).items()},
        )
        # The searched Λ was tuned on these rows, so its score here is optimistic: a fixed
        # transform scoring as well is preferred.
        if chosen == "searched" and rule.fallback and means[rule.fallback] >= means["searched"]:
            chosen = rule.fallback
    else:
        chosen, difference, threshold = anchor, nan, nan
    return Decision(
        chosen=chosen,
        lambdas=lambdas[chosen],
        scores=means,
        anchor=anchor,
        difference=difference,
        threshold=threshold,
        folds=len(scores[anchor]),
        rule=rule,
        confirmation=confirmation,
    )


def _judge_searched(
    rule: Rule, scores: dict[str, np.ndarray], anchor: str, y: np.ndarray, cv_means: Any
) -> tuple[str, float, float, dict[str, float] | None]:
    """The searched Λ against ``anchor`` by ``rule``: (chosen, difference, threshold,
    confirmation); ``cv_means(*names)`` maps candidates to their mean 5×2 CV scores, for the
    confirmation."""
    d = scores["searched"] - scores[anchor]
    if rule.criterion == LOO:
        # The standard error of a mean over the rows' paired differences.
        error = float(np.std(d, ddof=1)) / np.sqrt(len(d))
    else:
        n_test = len(y) / _splits(y)
        # Nadeau & Bengio's corrected variance of a mean over overlapping CV folds.
        error = float(np.sqrt((1.0 / len(d) + n_test / (len(y) - n_test)) * np.var(d, ddof=1)))
    threshold = rule.margin * error
    difference = float(d.mean())
    chosen = "searched" if difference > threshold else anchor
    confirmation = None
    if rule.confirm and chosen == "searched":
        confirmation = cv_means("searched", anchor)
        if confirmation["searched"] <= confirmation[anchor]:
            chosen = anchor
    return chosen, difference, threshold, confirmation


def _transformed(
    lambdas: np.ndarray,
    X: np.ndarray,
    method: str,
    extrapolation: str,
    range_scale: bool,
    whole_range: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """X through the transform with these Λ fitted on X (it does not see the labels); with
    ``whole_range``, Box-Cox's range is that of all the rows X was drawn from."""
    if whole_range is not None and method == "box-cox":
        settings = PowerSettings(method, extrapolation, range_scale)
        ranged = _whole_ranged(whole_range, X, None, extrapolation)
        names = [f"x{j}" for j in range(X.shape[1])]
        with np.errstate(all="ignore"):
            return fit_columns(X, lambdas, settings, names, ranged=ranged).train
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtremeValueWarning)
        warnings.simplefilter("ignore", ConstantColumnWarning)
        transform = BoxCoxTransformer(
            lambdas=lambdas, method=method, extrapolation=extrapolation, range_scale=range_scale
        )
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
    if callable(scoring):
        return scoring
    return METRICS.get(scoring, accuracy_score)


def search_sampler(name: str, estimator: Any = None) -> str:
    """The registry sampler that searches for ``name``: for the guarded default the paper's
    coordinate search, or the MLE Λ alone for an ``estimator`` whose rule searches nothing;
    ``name`` itself otherwise."""
    if name != GUARDED:
        return name
    return SEARCH_SAMPLER if estimator is None or searches(estimator) else ANCHOR_SAMPLER


def gated(estimator: Any) -> bool:
    """Whether the gate judges searches for this classifier (its registry trait,
    :func:`~optuna_boxcox._objective._evaluators.ungated_reason`)."""
    return not ungated_reason(estimator)


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
    nan = float("nan")
    fewest = int(np.unique(y, return_counts=True)[1].min())
    if gated(estimator) and fewest < SPLITS:
        # No held-out judgement means anything here (a 5x2 CV of 4 rows scores 0.5 or 1 for
        # every Λ): the searched Λ fitted those few rows, and standard scaling is what a user
        # would have had without the search.
        reason = (
            f"the smallest class has {fewest} row{'s' if fewest != 1 else ''}, too few for the "
            f"gate's {SPLITS} held-out folds"
        )
        ones = np.ones(len(searched))
        return Decision("ones", ones, {}, "", nan, nan, 0, gated=False, reason=reason)
    reason = ungated_reason(estimator) or _folds_too_small(estimator, y)
    if reason:
        return Decision("searched", searched, {}, "", nan, nan, 0, gated=False, reason=reason)
    candidates = {
        "searched": searched,
        "mle": np.asarray(objective.mle_lambdas, dtype=float),
        "ones": np.ones(len(objective.param_names)),
    }
    X, y = np.asarray(X, dtype=float), np.asarray(y)
    rows = sample_rows(y, seed)
    # The default's sample of more rows: every fold in the range of all of them, as searched.
    whole_range = None
    if objective.experiment.sampled and objective.data_min is not None:
        whole_range = (objective.data_min, objective.data_range)
    decision = decide(
        estimator,
        X if rows is None else X[rows],
        y if rows is None else y[rows],
        candidates,
        metric_of(objective.scoring),
        seed=seed,
        method=objective.method,
        extrapolation=extrapolation,
        whole_range=whole_range,
    )
    if rows is None:
        return decision
    return dataclasses.replace(decision, sample=(len(rows), len(y)))


def _folds_too_small(estimator: Any, y: np.ndarray) -> str:
    """Why the fewest rows a fold of :func:`fold_scores` trains on are too few for the classifier
    to predict (its registry trait, :func:`min_fold_rows`), or ""."""
    needed = min_fold_rows(estimator)
    if needed is None:
        return ""
    fewest, setting = needed
    folds = StratifiedKFold(n_splits=_splits(y)).split(np.zeros(len(y)), y)
    rows = min(len(train) for train, _ in folds)
    if fewest <= rows:
        return ""
    return f"{setting} is more than the {rows} rows a fold of the gate trains on"


def sample_rows(y: np.ndarray, seed: int) -> np.ndarray | None:
    """The rows the gate judges on: None for all of them (at most :data:`MAX_ROWS`), else a
    stratified sample of :data:`MAX_ROWS` rows drawn with ``seed``, in their order."""
    if len(y) <= MAX_ROWS:
        return None
    _, counts = np.unique(y, return_counts=True)
    stratify = y if counts.min() >= 2 else None
    rows, _ = train_test_split(
        np.arange(len(y)), train_size=MAX_ROWS, stratify=stratify, random_state=seed
    )
    return np.sort(rows)


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
        "max_rows": MAX_ROWS,
        "rules": [rule.describe() for rule in gate_rules()],
    }


def recorded(study: Any, settings: dict[str, Any]) -> Decision | None:
    """The decision the study holds when it was made with these ``settings`` (a rerun of
    ``search`` on a finished study, another ``worker`` of it), else None: the gate is not run
    again for the same searched Λ."""
    attr = study.user_attrs.get(DECISION_ATTR)
    if not isinstance(attr, dict) or attr.get("settings") != settings:
        return None
    return Decision.from_dict(attr)
