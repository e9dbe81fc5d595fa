"""The callable an Optuna study optimises: data, transform and classifier joined (SPEC §2).

:class:`BoxCoxObjective` is a facade over parts of one concern each: :class:`~._points.Points`
(converting and checking points), :class:`~._columns.TransformedColumns` (each thread's
transformed data), :class:`~._scoring.Scoring` (metric or criterion, resubstitution or inner
folds), :class:`~._evaluation.Evaluation` (the evaluator and the memory plan) and
:class:`~._score_cache.ScoreCache`; the study's identity is its :class:`~._spec.SearchSpec`.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
import functools
from numbers import Integral
from typing import TYPE_CHECKING
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
import pandas as pd
from sklearn.model_selection import RepeatedStratifiedKFold

from optuna_boxcox._math import _numerics
from optuna_boxcox._math._jit import resolve_threads
from optuna_boxcox._objective._arguments import boxcox_input
from optuna_boxcox._objective._arguments import check_choices
from optuna_boxcox._objective._arguments import check_criterion
from optuna_boxcox._objective._arguments import check_neighbours
from optuna_boxcox._objective._arguments import checked_data
from optuna_boxcox._objective._arguments import make_space
from optuna_boxcox._objective._arguments import resolve_bounds
from optuna_boxcox._objective._arguments import resolve_estimator_params
from optuna_boxcox._objective._arguments import resolve_objectives
from optuna_boxcox._objective._arguments import resolve_subsample
from optuna_boxcox._objective._arguments import resolve_transforms
from optuna_boxcox._objective._arguments import stratified_subsample
from optuna_boxcox._objective._columns import TransformedColumns
from optuna_boxcox._objective._evaluation import Evaluation
from optuna_boxcox._objective._evaluators import ready_kernels
from optuna_boxcox._objective._kind import PointsObjective
from optuna_boxcox._objective._memory import DEFAULT_FLOOR
from optuna_boxcox._objective._memory import MemoryBudget
from optuna_boxcox._objective._points import Configuration
from optuna_boxcox._objective._points import Points
from optuna_boxcox._objective._rungs import Rungs
from optuna_boxcox._objective._rungs import score_by_rungs
from optuna_boxcox._objective._score_cache import ScoreCache
from optuna_boxcox._objective._scoring import CRITERIA
from optuna_boxcox._objective._scoring import METRICS
from optuna_boxcox._objective._scoring import Scoring
from optuna_boxcox._objective._scoring import inner_splits
from optuna_boxcox._objective._scoring import is_criterion
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._study._fidelity import Fidelity
from optuna_boxcox._study._fidelity import FidelityChoice
from optuna_boxcox._study._spec import OBJECTIVES
from optuna_boxcox._study._spec import SPEC_ATTR
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox._study._spec import check_study
from optuna_boxcox._study._spec import data_fingerprint
from optuna_boxcox._study._spec import record_search
from optuna_boxcox._system._advice import AdvisedValueError

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

__all__ = ["CRITERIA", "METRICS", "OBJECTIVES", "BoxCoxObjective", "Configuration"]


class BoxCoxObjective(PointsObjective):
    """Score of a classifier on Box-Cox transformed data, for one Λ per Optuna trial.

    Each feature's λ is a float parameter named after the feature (DataFrame column names;
    ``lambda_0``, ``lambda_1``, … for arrays). The score is the paper's resubstitution accuracy
    (fit and predict the training data, SPEC §2) unless ``cv`` asks for an inner stratified k-fold
    score; other metrics and the classifier-free criteria of Bicego & Baldo can be chosen.

    The objective records its λ space in the study (user attribute ``boxcox_search_space``), which is
    how the plugin's samplers learn the parameter order, bounds and the MLE starting point in every
    worker. Re-scoring a Λ it has seen is a cache hit; a new Λ re-transforms only changed columns.

    Example::

        import optuna
        from sklearn.datasets import load_breast_cancer
        from sklearn.neighbors import KNeighborsClassifier
        from optuna_boxcox import BoxCoxObjective, CoordinateGridSampler

        X, y = load_breast_cancer(return_X_y=True, as_frame=True)
        objective = BoxCoxObjective(X, y, KNeighborsClassifier())
        study = optuna.create_study(direction="maximize",
                                    sampler=CoordinateGridSampler.from_preset("iterative"))
        study.optimize(objective)

    Args:
        X: Training data, (n_samples, n_features) array or DataFrame with finite numeric values.
        y: Class labels.
        estimator: scikit-learn classifier (cloned for every fit).
        scoring: ``"accuracy"`` (default), ``"f1"``, ``"mcc"``, ``"balanced_accuracy"``, one of the
            criteria ``"ml"``, ``"pcml"``, ``"fisher"``, ``"1nn-mm"``, or a callable
            ``metric(y_true, y_pred) -> float`` (higher is better).
        cv: ``None`` for resubstitution (the paper), an int k for stratified k-fold on the training
            data (shuffled with ``random_state``), or a scikit-learn splitter. The transform's
            min/max and scaling come from all of X (they are unsupervised); the classifier is refit
            per fold.
        error_score: What a classifier fit that raises scores, as in scikit-learn's searches
            (e.g. ``0``: a searched setting the classifier refuses, such as linear discriminant
            analysis's ``solver="svd"`` with shrinkage, loses instead of stopping the search),
            with a ``FitFailedWarning``; with inner folds, each failed fold. ``"raise"``
            (default): the error stops the search.
        method: ``"box-cox"`` (the paper) or ``"yeo-johnson"``.
        extrapolation: How the fitted transform treats values outside the training range
            (``"extrapolate"`` or ``"clip"``, SPEC §1). Resubstitution never meets any.
        bounds: The λ domain: ``None`` for SPEC §3's default (hull of [-10, 10] and [G-5, G+5]), a
            ``(low, high)`` pair for every feature, or a mapping feature name → ``(low, high)``.
        initial_params: The starting point G; default the per-feature maximum-likelihood λ.
        random_state: Seed of the inner folds and of the subsample.
        fast: Use an exact specialised scorer where one exists (GaussianNB, k-NN, RBF SVC, the
            binary perceptron, with resubstitution): same predictions as scikit-learn's fit and
            predict, several times faster; it defers to scikit-learn whenever a result would hinge
            on a near-tie. Which one runs is :attr:`evaluator`.
        memory_limit: Bytes the objective may allocate (int, or a string such as ``"512MiB"`` or
            ``"2GB"``). Every evaluator and cache states its footprint before it allocates; the
            fastest exact evaluator that fits is chosen (:attr:`evaluator`), down to block-wise
            computation or scikit-learn's own path, and never an n × n matrix that does not fit.
            Default: half the available memory, and at most 2 GiB for the whole process (what the
            process holds already is deducted). Worker processes each have their own.
        subsample: Score every Λ on this many rows only, drawn once, stratified by class and
            seeded with `random_state` (``None`` or the number of rows: all rows). The range
            standardisation and the MLE start point still use all rows, so a λ means the same
            transform on all rows; the classifier is fitted and scored on the subsample.
        n_threads: Threads of the objective's own kernels (k-NN sweeps, the block-wise SVC
            prediction, BLAS inside them) and of :meth:`evaluate_batch` where candidates are
            scored side by side (perceptron, SVC). Default 1: a search's parallelism is its worker
            processes (``n_jobs``), and threads competing with them, or with anything else on the
            machine, only slow each other down. ``None`` or -1: every core this process may use,
            for a search in one process on an otherwise idle machine. scikit-learn's generic path
            keeps its own threading.
        transforms: What each feature may be given, searched per feature when there are several:
            ``"box-cox"``, ``"yeo-johnson"`` (with the feature's λ), ``"identity"`` (the
            standardized raw feature, what λ = 1 gives) and ``"drop"`` (the classifier is fitted
            without the feature). Default ``(method,)``: the paper's search, one λ per feature
            and nothing else. With several, each feature gets a categorical parameter
            ``"<feature>:transform"`` beside its λ; ``method`` must be among them (the search
            starts from it, and G is its MLE). A λ is the one of whichever power transform is
            chosen; it is ignored (and need not be refitted) while the feature is ``"identity"``
            or ``"drop"``. A point that drops every feature scores as predicting the most
            frequent class.
        estimator_params: Classifier settings to search with the transform, name → Optuna
            distribution (e.g. ``{"n_neighbors": IntDistribution(1, 21)}``), each a parameter
            ``"estimator:<name>"``. The search starts from the estimator's own value where the
            distribution holds it, else its lowest value or first choice. The fast evaluators
            follow the settings they cover (k-NN's k, an SVC's C and γ, GaussianNB's smoothing)
            and leave the others to scikit-learn.
        objectives: ``("score",)`` (default), or ``("score", "n_features")`` for a
            two-objective study that also minimises the features kept (create it with
            ``directions=objective.directions``).
        fidelity: ``None``/``"exact"`` (all rows), an int N (a :class:`~._fidelity.Fidelity` from
            N rows: successive halving over stratified row subsets, see :attr:`rungs`), or
            ``"auto"``: chosen from the classifier's measured cost (see :mod:`~._fidelity`).

    Attributes:
        X, y: The rows scored (all rows, or the subsample).
        rows: Indices of the scored rows in the data given, or None without subsampling.
        n_samples: Rows of the data given.
        bounds: The λ domain, feature name → (low, high).
    """

    def __init__(
        self,
        X: Any,
        y: Any,
        estimator: Any,
        *,
        scoring: str | Callable[[np.ndarray, np.ndarray], float] = "accuracy",
        cv: int | Any | None = None,
        error_score: str | float = "raise",
        method: str = "box-cox",
        extrapolation: str = "extrapolate",
        bounds: tuple[float, float] | Mapping[str, tuple[float, float]] | None = None,
        initial_params: Mapping[str, float] | None = None,
        random_state: int | None = 0,
        fast: bool = True,
        memory_limit: int | str | None = None,
        subsample: int | None = None,
        n_threads: int | None = 1,
        transforms: Sequence[str] | None = None,
        estimator_params: Mapping[str, BaseDistribution] | None = None,
        objectives: Sequence[str] = ("score",),
        fidelity: Any = None,
    ) -> None:
        spec = SearchSpec(
            estimator,
            scoring=scoring,
            cv=cv,
            error_score=error_score,
            method=method,
            extrapolation=extrapolation,
            transforms=None if transforms is None else tuple(transforms),
            estimator_params=estimator_params or {},
            objectives=tuple(objectives),
            subsample=subsample,
            bounds=bounds,
            fidelity=fidelity,
            seed=random_state,
        )
        self._build(
            spec,
            X,
            y,
            estimator,
            initial_params=initial_params,
            fast=fast,
            memory_limit=memory_limit,
            n_threads=n_threads,
            resolved_spec=True,
        )

    @classmethod
    def from_spec(
        cls,
        spec: SearchSpec,
        X: Any,
        y: Any,
        *,
        memory_limit: int | str | None = None,
        n_threads: int | None = 1,
        fast: bool = True,
        initial_params: Mapping[str, float] | None = None,
    ) -> BoxCoxObjective:
        """The objective of ``spec`` on (X, y); its :attr:`spec` is ``spec`` with the data's
        columns, fingerprint and rows filled in. The arguments are how it computes (memory,
        threads, the fast evaluators) and where a search starts (``initial_params``).
        An objective built from a spec that holds a fidelity choice uses those rungs without
        measuring again."""
        objective = cls.__new__(cls)
        cls._build(
            objective,
            spec,
            X,
            y,
            spec.estimator(),
            initial_params=initial_params,
            fast=fast,
            memory_limit=memory_limit,
            n_threads=n_threads,
            resolved_spec=False,
        )
        return objective

    def _build(
        self,
        spec: SearchSpec,
        X: Any,
        y: Any,
        estimator: Any,
        *,
        initial_params: Mapping[str, float] | None,
        fast: bool,
        memory_limit: int | str | None,
        n_threads: int | None,
        resolved_spec: bool,
    ) -> None:
        """Everything the objective holds, read from ``spec`` (what is scored) and the arguments
        (how it computes). ``resolved_spec``: the spec records the transforms, classifier
        settings, objectives and subsample as resolved here (an objective made directly), else
        as the spec gives them (a spec recorded in a study stays as it was recorded)."""
        scoring, cv, method = spec.scoring, spec.cv, spec.method
        extrapolation, random_state = spec.extrapolation, spec.seed
        transforms, estimator_params = spec.transforms, spec.estimator_params
        objectives, subsample = spec.objectives, spec.subsample
        check_choices(method, extrapolation, scoring)
        self.names, self.X, self.y = checked_data(X, y)
        fingerprint = data_fingerprint(self.X, self.y)
        self.n_threads = resolve_threads(n_threads)
        self.budget = MemoryBudget(memory_limit)
        self.n_samples = len(self.X)
        self.subsample = resolve_subsample(subsample, self.y)
        self.rows: np.ndarray | None = None
        self.estimator = estimator
        self.fast = fast
        self.method = method
        self.extrapolation = extrapolation
        self.scoring = scoring
        self.transforms = resolve_transforms(transforms, method)
        self.estimator_params = resolve_estimator_params(estimator_params, estimator, cv)
        self.objectives = resolve_objectives(objectives, self.transforms)
        check_criterion(scoring, self.transforms, self.estimator_params)
        if fast and not is_criterion(scoring):
            # Before the MLE Λ and Numba's import: a fresh installation's compile notice at once.
            ready_kernels(estimator, self.y)

        fitted, boxcox_values = boxcox_input(self.X, self.names, self.transforms)
        if fitted is not None:
            self.data_min, self.data_range = fitted
        values = boxcox_values if method == "box-cox" else self.X
        mle = _numerics.mle_lambdas(values, method)
        if self.subsample is not None:
            self.rows = stratified_subsample(self.y, self.subsample, random_state)
            self.X, self.y, values = self.X[self.rows], self.y[self.rows], values[self.rows]
            if boxcox_values is not None:
                boxcox_values = boxcox_values[self.rows]
        self.values = values
        self.cv = cv
        splitter = cv
        if spec.cv_repeats != 1:
            # More repeats of the folds, each shuffled anew: a score with less noise.
            if not isinstance(cv, Integral) or isinstance(cv, bool) or spec.cv_repeats < 1:
                raise AdvisedValueError(
                    "{cv_repeats} repeats the inner folds of {cv} given as a number of folds, "
                    "at least once; got {repeats} repeats of cv={given}",
                    repeats=repr(spec.cv_repeats),
                    given=repr(cv),
                )
            splitter = RepeatedStratifiedKFold(
                n_splits=int(cv), n_repeats=int(spec.cv_repeats), random_state=random_state
            )
        self._scoring = Scoring(
            scoring,
            self.y,
            method,
            inner_splits(splitter, self.X, self.y, random_state),
            error_score=spec.error_score,
        )
        check_neighbours(estimator, scoring, self._scoring.splits, len(self.y))
        start = (
            mle if initial_params is None else np.array([initial_params[n] for n in self.names])
        )
        low, high = resolve_bounds(spec.bounds, self.names, start)
        self.bounds = {n: (float(lo), float(hi)) for n, lo, hi in zip(self.names, low, high)}
        self.space = make_space(
            self.names,
            method,
            self.transforms,
            estimator,
            self.estimator_params,
            low,
            high,
            start,
            initial_params or {},
        )
        self.mle_lambdas = np.clip(mle, low, high)
        self._points = Points(
            self.space, self.names, method, self.transforms, self.estimator_params
        )
        #: The input of each power transform: Z in [1, 2] for Box-Cox, raw X for Yeo-Johnson.
        power_inputs = {"box-cox": boxcox_values, "yeo-johnson": self.X}
        self._columns = TransformedColumns(self.X, values, power_inputs, self._points)
        self._evaluation = Evaluation(
            estimator,
            self._scoring,
            self._points,
            self._columns,
            self.budget,
            n_threads=self.n_threads,
            fast=fast,
        )
        self._cache = ScoreCache(self._evaluation.cache_capacity)
        #: (id of the storage, study id) → the storage, for the studies registered: holding the
        #: storage keeps its id from being reused by a new in-memory storage (whose study would
        #: then be taken as registered and searched without its λ space).
        self._registered: dict[tuple[int, int], Any] = {}
        #: The experiment this objective scores (:class:`~optuna_boxcox.SearchSpec`), recorded in
        #: the study by :meth:`register`; built by a spec, the spec with the data filled in.
        if resolved_spec:
            spec = dataclasses.replace(
                spec,
                transforms=self.transforms,
                estimator_params=self.estimator_params,
                objectives=self.objectives,
                subsample=self.subsample,
            )
        # The choice recorded with the spec: its rungs, without measuring again.
        chosen = spec.fidelity_choice
        fidelity = spec.fidelity if chosen is None else FidelityChoice.from_attrs(chosen)
        self._rungs = Rungs(fidelity, self, functools.partial(_on_rows, self))
        self.spec = self._rungs.recorded_in(
            dataclasses.replace(
                spec,
                columns=tuple(self.names),
                fingerprint=fingerprint,
                n_samples=self.n_samples,
                fidelity_choice=None,
            )
        )

    # -- the search space ------------------------------------------------------------------

    @property
    def param_names(self) -> list[str]:
        """The λ parameters' names, in feature order (the features' names)."""
        return list(self.names)

    @property
    def search_space(self) -> dict[str, BaseDistribution]:
        """Every parameter of a trial: the λ, and any transform choice and setting."""
        return self.space.distributions()

    @property
    def directions(self) -> list[str]:
        """The study directions ``objectives`` needs (``optuna.create_study(directions=...)``)."""
        return [OBJECTIVES[o] for o in self.objectives]

    @property
    def initial_params(self) -> dict[str, Any]:
        """The search's starting point G (default: per-feature Box-Cox MLE), as a params dict."""
        return self.space.to_params(self.space.initial)

    @property
    def mle_params(self) -> dict[str, float]:
        """The per-feature maximum-likelihood λ (clipped into the domain), as a params dict."""
        return {n: float(v) for n, v in zip(self.names, self.mle_lambdas)}

    @property
    def n_evaluations(self) -> int:
        """Scores computed (cache misses that fitted a classifier) or remembered from elsewhere."""
        return self._cache.n_stored

    def to_params(self, lambdas: Sequence[float]) -> dict[str, Any]:
        """Point (or λ vector, see :meth:`evaluate`) → params dict."""
        return self._points.to_params(lambdas)

    def to_lambdas(self, params: Mapping[str, Any]) -> np.ndarray:
        """Params dict (e.g. ``study.best_params``) → λ vector in feature order."""
        return self._points.to_lambdas(params)

    def to_point(self, params: Mapping[str, Any]) -> np.ndarray:
        """Params dict → the point's vector (λ, transform indices, settings in search order); the
        same as :meth:`to_lambdas` for the paper's space."""
        return self.space.to_vector(params)

    def configuration(self, point: Sequence[float] | Mapping[str, Any]) -> Configuration:
        """What a point (vector, λ vector or params dict) makes of each feature and the classifier."""
        return self._points.configuration(self._points.vector(point))

    def cache_key(self, point: Sequence[float] | Mapping[str, Any]) -> bytes:
        """What identifies a point's score: equal keys, equal models (a λ a feature's transform
        ignores does not count)."""
        return self._points.key(self._points.vector(point))

    def n_kept(self, point: Sequence[float] | Mapping[str, Any]) -> int:
        """Features a point keeps (those not dropped), the second objective's value."""
        return self._points.n_kept(self._points.vector(point))

    # -- rows as the fidelity (see optuna_boxcox._study._fidelity) -----------------------------------
    @property
    def fidelity(self) -> Fidelity | None:
        """The successive halving's rungs, or None for exact (``auto``: chosen on first use)."""
        return self._rungs.choice.fidelity

    @property
    def rungs(self) -> tuple[int, ...]:
        """The rows of each rung, growing, the last the top rung; () when exact."""
        return self._rungs.rows

    def at_rows(self, rows: int) -> BoxCoxObjective:
        """This objective on a stratified subset of ``rows`` rows, transformed as all rows are
        (scaling, MLE), built once, own cache; ``at_rows(n_samples)`` is this objective."""
        return self._rungs.at(rows)

    def prepare_rungs(self) -> None:
        """Build every rung's objective now (before worker processes fork, to share them)."""
        self._rungs.prepare()

    def register(self, study: optuna.Study) -> None:
        """Record the experiment (:attr:`spec`, user attribute ``boxcox_spec``) and the search space
        in the study, so samplers in every worker can find them, and what the objective chose
        (:meth:`describe`, user attribute ``boxcox_evaluator``; rewritten when another worker's
        choices differ, not when only the memory it had does).

        Called automatically on the first trial. Refuses (:class:`~optuna_boxcox.StudyMismatch`) a
        study that holds another experiment — other data, classifier or parameters, scoring, cv,
        directions, transforms, estimator parameters or subsample — or another λ space, and one
        not made by optuna-boxcox unless it is empty: its trials would be reported as this
        search's result.
        """
        storage = storage_of(study)
        key = (id(storage), study_id_of(study))
        if self._registered.get(key) is storage:
            return
        attrs = study.user_attrs
        # auto's rungs: those the study records (before the check: what it chose is part of what
        # it is) ...
        if self._rungs.adopt(attrs.get(SPEC_ATTR)):
            self.spec = self._rungs.recorded_in(self.spec)
        write = check_study(study, self.spec, attrs)
        # ... else priced now, with the sampler's plan size.
        self._rungs.choose(study.sampler, attrs.get(SPEC_ATTR))
        self.spec = self._rungs.recorded_in(self.spec)
        names = [self.metric_name, *self.objectives[1:]] if len(self.objectives) > 1 else None
        record_search(
            study,
            attrs,
            self.spec if write else None,
            self.space.to_attr(),
            names,
            self.describe(),
        )
        self._registered[key] = storage

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, trial: optuna.Trial) -> float | tuple[float, int]:
        self.register(trial.study)
        x = self._points.suggest(trial)
        score = score_by_rungs(self, trial, x) if self.rungs else self.evaluate(x)
        if len(self.objectives) == 1:
            return score
        return score, self.n_kept(x)

    @property
    def metric_name(self) -> str:
        """The scoring's name (``accuracy``, ``ml``, …), which names the study's objective."""
        if isinstance(self.scoring, str):
            return self.scoring
        return getattr(self.scoring, "__name__", "score")

    def evaluate(self, lambdas: Sequence[float] | Mapping[str, Any]) -> float:
        """Score of one Λ (cached: a Λ scored before is not refitted).

        With transform or setting coordinates, a point is their whole vector (or a params dict);
        a vector of one λ per feature stands for the point with those λ and the starting transform
        and settings.
        """
        x = self._points.vector(lambdas)
        key = self._points.key(x)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        return self._cache.store(key, self._evaluation.score(x))

    def evaluate_batch(
        self, points: Sequence[Sequence[float] | Mapping[str, float]]
    ) -> list[float]:
        """Scores of several Λ, in order: the same numbers as :meth:`evaluate` on each, the same cache.

        Work is shared where the points allow it. The points of a coordinate sweep (SPEC §4) differ
        in one column j only: k-NN then computes the distances over all other columns once, block
        by block, and scores every candidate from them. Classifiers without shared work (the
        perceptron, SVC) score the points side by side on up to ``n_threads`` threads, as far as
        the memory limit allows one state per thread; the rest one after another.
        """
        vectors = [self._points.vector(x) for x in points]
        keys = [self._points.key(x) for x in vectors]
        scores = self._cache.found(keys)
        todo = list({key: x for key, x in zip(keys, vectors) if key not in scores}.items())
        found = self._evaluation.score_batch([x for _, x in todo], self.evaluate)
        for (key, _), score in zip(todo, found):
            scores[key] = self._cache.store(key, score)  # evaluate stored it already: no-op
        return [scores[key] for key in keys]

    @property
    def evaluator(self) -> str:
        """How a Λ is scored here: ``"knn:incremental"``, ``"knn:blockwise"``, ``"svc:precomputed"``,
        ``"svc:blockwise"``, ``"gaussian-nb"``, ``"sgd"``, ``"logistic"``, ``"criterion:<name>"`` or
        ``"sklearn"`` (scikit-learn's fit and predict), chosen once from the classifier, the scoring
        and the memory limit (see :mod:`optuna_boxcox._objective._evaluators`)."""
        return self._evaluation.name

    @property
    def generic_estimator(self) -> Any:
        """The estimator scikit-learn's path fits at the starting settings: the classifier, or an
        SVC with its kernel cache cut to fit the memory limit."""
        return self._evaluation.generic

    @property
    def batch_work(self) -> str:
        """How :meth:`evaluate_batch` shares work between the points of a batch: ``"sweep"``
        (k-NN: the distances over the unswept columns once per sweep), ``"threads"`` (points side
        by side) or ``"sequential"`` (a worker process's share of a sweep still goes to the fast
        scorer's sweep: naive Bayes sums the other columns once, the others transform the
        columns together)."""
        if self._evaluation.shares_sweeps:
            return "sweep"
        return "threads" if self._evaluation.batch_threads > 1 else "sequential"

    def describe(self) -> dict[str, Any]:
        """What the objective chose and why, JSON-serialisable (for recording on a study).

        Keys: ``evaluator`` (see :attr:`evaluator`), ``batch`` (how :meth:`evaluate_batch` shares
        work: ``"sweep"``, ``"threads"`` or ``"sequential"``), ``memory_limit`` and
        ``estimated_peak_bytes`` (the objective's own allocations at their peak, by the footprints
        stated before allocating), ``memory`` (that estimate per part), ``n_samples`` (rows given),
        ``n_scored`` (rows each Λ is scored on), ``subsample``, ``n_features``, ``n_threads``,
        ``batch_threads``, ``cache_capacity`` (scores kept before the oldest are dropped) and
        ``fidelity`` (the :attr:`rungs` and why: ``auto``'s timings and estimates).
        """
        return {
            "evaluator": self.evaluator,
            "batch": self.batch_work,
            "memory_limit": int(self.budget.limit),
            "estimated_peak_bytes": int(self.budget.used),
            "memory": {name: int(size) for name, size in self.budget.reserved.items()},
            "n_samples": int(self.n_samples),
            "n_scored": len(self.X),
            "subsample": None if self.subsample is None else int(self.subsample),
            "n_features": len(self.names),
            "n_threads": int(self.n_threads),
            "batch_threads": int(self._evaluation.batch_threads),
            "cache_capacity": int(self._cache.capacity),
            "fidelity": self._rungs.choice.to_attrs(),
        }

    def cached_score(self, lambdas: Sequence[float]) -> float | None:
        """The score of a Λ scored before (here or reported by :meth:`remember_score`), else None."""
        return self._cache.get(self._points.key(self._points.checked(lambdas)))

    def remember_score(self, lambdas: Sequence[float], score: float) -> None:
        """Record a score computed elsewhere (a worker process) as if evaluated here."""
        self._cache.store(self._points.key(self._points.checked(lambdas)), float(score))

    def warm_up(self) -> None:
        """Build this thread's transform and fast scorer and load its compiled kernels now.

        The first score otherwise pays these one-off costs (about a second for Numba); call this
        before timing, or before forking workers so that they inherit the warm state. Scores nothing
        into the cache.
        """
        self._evaluation.warm_up()

    def transform(self, lambdas: Sequence[float]) -> np.ndarray:
        """The standard-scaled transformed training data for ``lambdas`` (a copy), without the
        features the point drops."""
        x = self._points.vector(lambdas)
        scaled = self._columns.of(x)[2]
        kept = self._points.kept(x)
        return scaled.copy() if kept is None else scaled[:, kept]

    def score_features(self, features: np.ndarray) -> float:
        """The objective's classifier score on a ready feature matrix (one row per training sample).

        This is how other transforms (StandardScaler, PowerTransformer, …) are scored the same way
        as a Λ; classifier-free criteria need the Box-Cox internals and are refused here. With a
        subsample, `features` may have a row per scored row or per row of the data given (the
        scored rows are then taken).
        """
        if self._scoring.is_criterion:
            raise ValueError(f"scoring {self.scoring!r} scores Box-Cox λ, not arbitrary features")
        if self.rows is not None and len(features) == self.n_samples:
            features = features[self.rows]
        return self._scoring.fit_score(features, self._evaluation.generic)


# -- argument resolution -----------------------------------------------------------------------


def _on_rows(objective: BoxCoxObjective, rows: int) -> BoxCoxObjective:
    """A new objective like ``objective`` on a stratified subset of ``rows`` of its rows (its
    subsample: the transform's scaling and MLE start from all rows), within what is left of its
    memory budget: built from its spec, as scikit-learn's halving search subsamples in its
    splitter, so a field added to the spec reaches the rungs without being passed here."""
    spec = dataclasses.replace(objective.spec, subsample=rows, fidelity=None, fidelity_choice=None)
    with warnings.catch_warnings():  # the objective has warned about its data already
        warnings.simplefilter("ignore")
        return BoxCoxObjective.from_spec(
            spec,
            pd.DataFrame(objective.X, columns=objective.names, copy=False),  # the λ names
            objective.y,
            memory_limit=max(objective.budget.remaining(), DEFAULT_FLOOR),
            n_threads=objective.n_threads,
            fast=objective.fast,
            initial_params=objective.initial_params,
        )


def fingerprint_of(X: Any, y: Any) -> str:
    """The data fingerprint an objective built on (X, y) records in its spec (for a study's default
    name before the objective is built)."""
    _, X, y = checked_data(X, y)
    return data_fingerprint(X, y)
