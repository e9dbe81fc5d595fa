"""The callable an Optuna study optimises: data, transform and classifier joined (SPEC §2).

:class:`BoxCoxObjective` is a thin adapter, the way Optuna's samplers wrap their estimators: an
immutable :class:`~._experiment.Experiment` (the checked data, the MLE Λ, the inner folds, the λ
domain and the space), a :class:`~._scorer.Scorer` (the evaluator, each thread's transformed data,
the cache) and :class:`~._rungs.Rungs` (rows as the fidelity). Optuna calls :meth:`__call__`;
:meth:`register` records the experiment in the study and refuses a study of another.
"""

from __future__ import annotations

from collections.abc import Callable
import functools
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution

from optuna_boxcox._objective._arguments import check_data
from optuna_boxcox._objective._experiment import Experiment
from optuna_boxcox._objective._experiment import prepare_experiment
from optuna_boxcox._objective._kind import PointsObjective
from optuna_boxcox._objective._points import Configuration
from optuna_boxcox._objective._rungs import Rungs
from optuna_boxcox._objective._rungs import score_by_rungs
from optuna_boxcox._objective._scorer import Scorer
from optuna_boxcox._objective._scoring import CRITERIA
from optuna_boxcox._objective._scoring import METRICS
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna._capabilities import refuse_long_names
from optuna_boxcox._study._fidelity import Fidelity
from optuna_boxcox._study._fidelity import FidelityChoice
from optuna_boxcox._study._fidelity import parse_fidelity
from optuna_boxcox._study._plan_size import plan_size
from optuna_boxcox._study._spec import OBJECTIVES
from optuna_boxcox._study._spec import SPEC_ATTR
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox._study._spec import check_study
from optuna_boxcox._study._spec import record_search

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

__all__ = ["CRITERIA", "METRICS", "OBJECTIVES", "BoxCoxObjective", "Configuration"]

Point = Any  # a vector, a λ vector or a params dict (see BoxCoxObjective.evaluate)


def _forward(part: str, kind: type, name: str) -> Any:
    """The objective's attribute that is ``name`` of its ``part`` (of class ``kind``): a method
    or property with the part's own signature and docstring, or a plain attribute."""
    found = getattr(kind, name, None)
    if callable(found) and not isinstance(found, property):

        @functools.wraps(found)
        def method(objective: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(getattr(objective, part), name)(*args, **kwargs)

        return method
    doc = found.__doc__ if isinstance(found, property) else None
    return property(lambda objective: getattr(getattr(objective, part), name), doc=doc)


_experiments = functools.partial(_forward, "experiment", Experiment)
_scorers = functools.partial(_forward, "scorer", Scorer)
_rungs = functools.partial(_forward, "_rungs", Rungs)


def _storage_keeping(study: optuna.Study, names: Sequence[str]) -> Any:
    """The study's storage, once it is known to keep parameters named ``names``: a column name
    longer than a database server keeps is refused (ValueError) before anything is written."""
    storage = storage_of(study)
    refuse_long_names(storage, names, "column")
    return storage


class BoxCoxObjective(PointsObjective):
    r"""Score of a classifier on Box-Cox transformed data, for one Λ per Optuna trial.

    Each feature's λ is a float parameter named after the feature (DataFrame column names;
    ``lambda_0``, … for arrays). The score is the paper's resubstitution accuracy (SPEC §2)
    unless ``cv`` asks for inner folds. The objective records its experiment and λ space in the
    study (``boxcox_spec``, ``boxcox_search_space``), where the plugin's samplers read them in
    every worker. A Λ scored before is a cache hit; a new Λ redoes only the columns it changes.

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
        X, y: Training data (finite numbers; an array or a DataFrame) and class labels.
        estimator: A scikit-learn classifier (cloned for every fit).
        scoring: ``"accuracy"`` (default), ``"f1"``, ``"mcc"``, ``"balanced_accuracy"``, a
            criterion of Bicego & Baldo (``"ml"``, ``"pcml"``, ``"fisher"``, ``"1nn-mm"``) or a
            callable ``metric(y_true, y_pred)``, higher is better.
        cv: ``None`` for resubstitution (the paper), k for stratified k-fold (shuffled with
            ``random_state``) or a scikit-learn splitter.
        error_score: What a fit that raises scores (``"raise"``: the error stops the search).
        method, extrapolation: ``"box-cox"`` or ``"yeo-johnson"``; values outside the training
            range are ``"extrapolate"``\ d or ``"clip"``\ ped (SPEC §1).
        bounds: The λ domain: ``None`` (SPEC §3), one ``(low, high)``, or feature → pair.
        initial_params: The starting point G; default the per-feature MLE λ.
        random_state: Seed of the inner folds, the subsample and the rungs' rows.
        fast: Use an exact specialised scorer where one exists (:attr:`evaluator`).
        memory_limit: Bytes it may allocate (an int, or ``"512MiB"``); default half the
            available memory, at most 2 GiB. Nothing that does not fit is allocated.
        subsample: Score every Λ on this many rows, drawn once and stratified.
        n_threads: Threads of the fast kernels and side-by-side batches (``None``: every core).
        transforms: What each feature may be given: ``"box-cox"``, ``"yeo-johnson"``,
            ``"identity"``, ``"drop"`` (a parameter ``"<feature>:transform"`` when several).
        estimator_params: Classifier settings searched too, name → Optuna distribution.
        objectives: ``("score",)``, or ``("score", "n_features")`` to keep few features too.
        fidelity: ``None`` or ``"exact"``, N rows or a ``Fidelity`` (successive halving, see
            :attr:`rungs`), or ``"auto"`` (chosen from the classifier's cost class).
    The guide says more of each (:doc:`/guide/beyond_the_paper`, :doc:`/guide/large_data`).

    Attributes:
        X, y: The rows scored (all rows, or the subsample).
        rows: Indices of the scored rows in the data given, or None without subsampling.
        n_samples: Rows of the data given.
        bounds: The λ domain, feature name → (low, high).
    """

    # The experiment's and the scorer's names, as the objective's (the parts document them).
    X = _experiments("X")
    y = _experiments("y")
    rows = _experiments("rows")
    n_samples = _experiments("n_samples")
    bounds = _experiments("bounds")
    names = _experiments("names")
    space = _experiments("space")
    mle_lambdas = _experiments("mle_lambdas")
    estimator = _experiments("estimator")
    values = _experiments("values")
    data_min = _experiments("data_min")
    data_range = _experiments("data_range")
    extrapolation = _experiments("extrapolation")
    subsample = _experiments("subsample")
    transforms = _experiments("transforms")
    estimator_params = _experiments("estimator_params")
    objectives = _experiments("objectives")
    method = _experiments("method")
    scoring = _experiments("scoring")
    cv = _experiments("cv")
    metric_name = _experiments("metric_name")
    directions = _experiments("directions")
    param_names = _experiments("param_names")
    search_space = _experiments("search_space")
    initial_params = _experiments("initial_params")
    mle_params = _experiments("mle_params")
    to_params = _experiments("to_params")
    to_lambdas = _experiments("to_lambdas")
    to_point = _experiments("to_point")
    configuration = _experiments("configuration")
    cache_key = _experiments("cache_key")
    n_kept = _experiments("n_kept")
    n_threads = _scorers("n_threads")
    fast = _scorers("fast")
    budget = _scorers("budget")
    evaluate = _scorers("evaluate")
    evaluate_batch = _scorers("evaluate_batch")
    n_evaluations = _scorers("n_evaluations")
    cached_score = _scorers("cached_score")
    remember_score = _scorers("remember_score")
    evaluator = _scorers("evaluator")
    generic_estimator = _scorers("generic_estimator")
    batch_work = _scorers("batch_work")
    warm_up = _scorers("warm_up")
    transform = _scorers("transform")
    score_features = _scorers("score_features")

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
        fidelity: str | int | Fidelity | None = None,
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
            fidelity=parse_fidelity(fidelity),
            seed=random_state,
        )
        data = check_data(X, y)
        experiment = prepare_experiment(
            spec, data, initial_params=initial_params, kernels=fast, resolve=True
        )
        self._start(
            experiment,
            Scorer(experiment, memory_limit=memory_limit, n_threads=n_threads, fast=fast),
        )

    @classmethod
    def from_spec(
        cls,
        spec: SearchSpec,
        X: Any,
        y: Any = None,
        *,
        memory_limit: int | str | None = None,
        n_threads: int | None = 1,
        fast: bool = True,
        initial_params: Mapping[str, float] | None = None,
    ) -> BoxCoxObjective:
        """The objective of ``spec`` on (X, y) (or on a ``CheckedData``); its :attr:`spec` is
        ``spec`` with the data filled in. A spec holding a fidelity choice keeps its rungs."""
        data = check_data(X, y)
        experiment = prepare_experiment(spec, data, initial_params=initial_params, kernels=fast)
        return cls.of(experiment, memory_limit=memory_limit, n_threads=n_threads, fast=fast)

    @classmethod
    def of(
        cls,
        experiment: Experiment,
        *,
        memory_limit: int | str | None = None,
        n_threads: int | None = 1,
        fast: bool = True,
    ) -> BoxCoxObjective:
        """The objective of a prepared experiment (:func:`~._experiment.prepare_experiment`),
        with a scorer of its own."""
        objective = cls.__new__(cls)
        scorer = Scorer(experiment, memory_limit=memory_limit, n_threads=n_threads, fast=fast)
        cls._start(objective, experiment, scorer)
        return objective

    def _start(self, experiment: Experiment, scorer: Scorer) -> None:
        self.experiment, self.scorer = experiment, scorer
        spec = experiment.spec
        self._rungs = Rungs(spec.fidelity, spec.fidelity_choice, self)
        #: The experiment scored, recorded in the study by :meth:`register`.
        self.spec = self._rungs.recorded_in(spec)
        #: (id of the storage, study id) → the storage, for the studies registered: holding the
        #: storage keeps its id from being reused by a new in-memory storage.
        self._registered: dict[tuple[int, int], Any] = {}

    # -- rows as the fidelity (see optuna_boxcox._study._fidelity) ---------------------------
    @property
    def fidelity(self) -> Fidelity | None:
        """The successive halving's rungs, or None for exact."""
        return self._rungs.choice.fidelity

    fidelity_choice = _rungs("choice")
    rungs = _rungs("rows")
    at_rows = _rungs("at")
    prepare_rungs = _rungs("prepare")

    # -- Optuna ----------------------------------------------------------------------------
    def register(self, study: optuna.Study) -> None:
        """Record the experiment (:attr:`spec`, user attribute ``boxcox_spec``), the search space
        and :meth:`describe` in the study, so samplers in every worker find them; called on the
        first trial. Refuses (:class:`~optuna_boxcox.StudyMismatch`) a study that holds another
        experiment, and one not made by optuna-boxcox unless it is empty."""
        storage = _storage_keeping(study, self.space.names)
        key = (id(storage), study_id_of(study))
        if self._registered.get(key) is storage:
            return
        attrs = study.user_attrs
        recorded = (attrs.get(SPEC_ATTR) or {}).get("fidelity_choice")
        if recorded is not None:  # what it chose is part of what the study is: before the check
            self._rungs.adopt(FidelityChoice.from_attrs(recorded))
            self.spec = self._rungs.recorded_in(self.spec)
        write = check_study(study, self.spec, attrs)
        if self._rungs.pending:  # an objective optimised directly: priced with the study's plan
            self._rungs.settle(plan_size(study.sampler, self.space))
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

    def __call__(self, trial: optuna.Trial) -> float | tuple[float, int]:
        self.register(trial.study)
        x = self.experiment.points.suggest(trial)
        score = score_by_rungs(self, trial, x) if self.rungs else self.scorer.evaluate(x)
        if len(self.objectives) == 1:
            return score
        return score, self.n_kept(x)

    def describe(self) -> dict[str, Any]:
        """What the objective chose and why, JSON-ready (recorded on the study): ``evaluator``,
        ``batch``, ``memory_limit``, ``estimated_peak_bytes``, ``memory`` (per part),
        ``n_samples``, ``n_scored``, ``subsample``, ``n_features``, ``n_threads``,
        ``batch_threads``, ``cache_capacity`` and ``fidelity`` (the rungs and why)."""
        return {**self.scorer.describe(), "fidelity": self._rungs.choice.to_attrs()}
