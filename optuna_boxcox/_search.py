"""One study's lifecycle: :func:`run_search`, the one path every search takes.

Open (or resume) the study → refuse it if it holds another experiment → set the pruner → decide
the trial count → optimise → report the best. The command line's ``search``, ``worker`` and
``demo`` and :class:`~optuna_boxcox.BoxCoxClassifier` all run their study here, so a change to what
a search does is made once:

- :func:`plan_search` is the *default search policy*: from the spec (and the trials asked for) it
  decides the sampler, the fidelity and the trial count before anything runs. A policy that
  chooses the sampler or the criterion, or the default fidelity, belongs there.
- :func:`run_search` runs the plan; what the search chose (and, for a plan capped below all rows,
  the confirmation between the found Λ and the start point) is :attr:`SearchRun.result`.

Errors are the library's own: :class:`~optuna_boxcox._spec.StudyMismatch` and
:class:`~optuna_boxcox._spec.ForeignStudy` for a study of another experiment,
:class:`NoFinishedTrial`, :class:`SearchInterrupted`, and ``ValueError`` for a spec that cannot be
searched. The command line only translates them into its one-line messages.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import functools
import time
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from optuna_boxcox import _guard
from optuna_boxcox._defaults import DEFAULT_OPEN_ENDED_TRIALS
from optuna_boxcox._defaults import DEFAULT_PRUNER
from optuna_boxcox._fidelity import AutoFidelity
from optuna_boxcox._fidelity import make_pruner
from optuna_boxcox._objective import BoxCoxObjective
from optuna_boxcox._optuna import count_trials
from optuna_boxcox._runner import RunStats
from optuna_boxcox._runner import optimize
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers import record_sampler

if TYPE_CHECKING:
    from optuna.storages import BaseStorage

    from optuna_boxcox._spec import SearchSpec
    from optuna_boxcox.samplers import SearchResult

__all__ = [
    "NoFinishedTrial",
    "SearchInterrupted",
    "SearchPlan",
    "SearchRun",
    "default_study_name",
    "plan_search",
    "run_search",
]


class NoFinishedTrial(ValueError):
    """The study holds no finished trial to report (the budget stopped it before any)."""

    def __init__(self, study_name: str) -> None:
        super().__init__(f"study {study_name!r} has no finished trial to report")
        self.study_name = study_name


class SearchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a search: what was scored is written; the same call resumes.

    Attributes:
        n_trials: Scored trials the study holds (COMPLETE or PRUNED).
    """

    def __init__(self, n_trials: int) -> None:
        super().__init__(
            f"interrupted after {n_trials} trials; what was scored is written, the same call resumes"
        )
        self.n_trials = n_trials


@dataclass(frozen=True)
class SearchPlan:
    """How a spec is searched, decided before anything runs (:func:`plan_search`).

    Attributes:
        spec: The spec to search (its fidelity made concrete where the policy decides it).
        sampler: The sampler that searches.
        n_trials: New trials to run; None runs a plan sampler's plan to its end.
        guarded: The guarded default (:mod:`optuna_boxcox._guard`): after the paper's search
            (``spec.sampler``), the searched Λ is kept only if it beats the anchors on rows no
            fit saw.
    """

    spec: SearchSpec
    sampler: optuna.samplers.BaseSampler
    n_trials: int | None
    guarded: bool = False


@dataclass
class SearchRun:
    """What one run of :func:`run_search` did and found.

    Attributes:
        study, study_name, storage: The study searched, its name and the storage as given.
        objective: The objective the study was scored with.
        sampler: The sampler that searched.
        elapsed: Seconds of the optimisation.
        written_at: When the last trial was written (``time.time()``).
        n_trials: Trials the study holds.
        new_trials: Trials this run wrote, where the runner counts them (a batched run of a plan
            sampler); None for a run through ``study.optimize``.
        result: What the search chose (a plan sampler's Λopt, or the best trial).
        params, best: The chosen point and its score (single-objective studies).
        front: The Pareto front, best-first by features kept (two-objective studies).
        decision: The guarded default's decision (None when no gate ran); ``params`` and
            ``best`` are then the chosen Λ and its score, ``search_params`` and
            ``search_best`` what the search found.
    """

    study: optuna.Study
    study_name: str
    storage: Any
    objective: BoxCoxObjective
    sampler: Any
    elapsed: float
    written_at: float
    n_trials: int
    new_trials: int | None
    result: SearchResult
    params: dict[str, Any] | None = None
    best: float | None = None
    front: list[Any] | None = None
    decision: _guard.Decision | None = None
    search_params: dict[str, Any] | None = None
    search_best: float | None = None

    @functools.cached_property
    def base(self) -> float:
        """The score of λ = 1 for every feature (no transform)."""
        return self.objective.evaluate(np.ones(len(self.objective.param_names)))

    @functools.cached_property
    def mle(self) -> float:
        """The score of the per-feature maximum-likelihood λ."""
        return self.objective.evaluate(self.objective.mle_lambdas)


def default_study_name(spec: SearchSpec, data_name: str, *, guarded: bool = False) -> str:
    """``<data>/<classifier>/<sampler>`` (``…/guarded`` for the guarded default); data read from
    a CSV file add ``@<fingerprint>``, so a file edited since starts a study of its own instead of
    reporting the old data's result."""
    if spec.source and spec.source.get("csv"):
        data_name = f"{data_name}@{spec.short_fingerprint}"
    return f"{data_name}/{spec.classifier}/{_guard.GUARDED if guarded else spec.sampler}"


def plan_search(
    spec: SearchSpec,
    *,
    n_trials: int | None = None,
    sampler: optuna.samplers.BaseSampler | None = None,
) -> SearchPlan:
    """The default search policy: which sampler searches ``spec``, at which fidelity, for how many
    trials. ``sampler`` (a sampler object, or a study's own) overrides the spec's.

    Raises:
        ValueError: The spec names a sampler that cannot be made (unknown, or wrong settings).
    """
    guarded = spec.sampler == _guard.GUARDED
    if guarded:  # the paper's search first, in a study of its own; the gate after it
        spec = dataclasses.replace(spec, sampler=_guard.SEARCH_SAMPLER)
    if sampler is None:
        try:
            sampler = spec.make_sampler()
        except TypeError as error:
            raise ValueError(str(error)) from None
    plan_sampler = isinstance(sampler, PlanSampler)
    if spec.fidelity == "auto" and not plan_sampler:
        # Optuna's samplers run their trials one by one and the pruner halves them all.
        trials = n_trials or DEFAULT_OPEN_ENDED_TRIALS
        spec = dataclasses.replace(spec, fidelity=AutoFidelity(positions=trials, batch=trials))
    if n_trials is None and not plan_sampler:
        n_trials = DEFAULT_OPEN_ENDED_TRIALS
    return SearchPlan(spec, sampler, n_trials, guarded=guarded)


def run_search(
    spec: SearchSpec,
    X: Any,
    y: Any,
    *,
    storage: str | BaseStorage | None = None,
    study: optuna.Study | None = None,
    study_name: str | None = None,
    data_name: str | None = None,
    sampler: optuna.samplers.BaseSampler | None = None,
    restart: bool = False,
    memory_limit: int | str | None = None,
    bounds: Any = None,
    n_jobs: int = 1,
    n_trials: int | None = None,
    timeout: float | None = None,
    batch: bool = True,
    progress: bool = False,
    figures: bool = False,
) -> SearchRun:
    """Run (or resume) the study of ``spec`` on (X, y) and return what was found.

    Args:
        spec: The experiment and how it is searched.
        X, y: The data.
        storage: Where the study lives: a URL (opened with
            :func:`~optuna_boxcox.storage.open_storage`), a storage, or None (in memory).
        study: A study to search as it is, with its own sampler and pruner (instead of
            ``storage``, ``study_name`` and ``restart``).
        study_name: The study's name; default :func:`default_study_name` when ``data_name`` is
            given, else a name Optuna makes up.
        data_name: What the data are called, for the default study name.
        sampler: A sampler object to search with instead of the spec's (which then names none).
        restart: Delete the study of this name first.
        memory_limit, bounds: As :meth:`~optuna_boxcox.SearchSpec.objective`.
        n_jobs, timeout, batch: As :func:`~optuna_boxcox.optimize`.
        n_trials: New trials to run (default: a plan sampler's plan, others
            :data:`~optuna_boxcox._defaults.DEFAULT_OPEN_ENDED_TRIALS`).
        progress: Show the run's progress.
        figures: Attach the search's figures and note to the study (shown by the dashboard).

    Raises:
        StudyMismatch: The study holds another experiment (nothing is written into it).
        ForeignStudy: The study was not made by optuna-boxcox and holds trials.
        NoFinishedTrial: The study has no finished trial to report.
        SearchInterrupted: Ctrl-C; what was scored is written.
    """
    plan = plan_search(
        spec,
        n_trials=n_trials,
        sampler=sampler if study is None else study.sampler,
    )
    objective = BoxCoxObjective.from_spec(
        plan.spec, X, y, memory_limit=memory_limit, bounds=bounds
    )
    owned = study is None
    if study is None:
        if study_name is None and data_name is not None:
            study_name = default_study_name(objective.spec, data_name, guarded=plan.guarded)
        study = _open_study(storage, study_name, plan.sampler, objective.directions, restart)
    # A study of another experiment is refused before anything is written into it.
    objective.register(study)
    # Optuna's samplers: their arguments recorded, or a study run with other ones refused.
    record_sampler(study, study.sampler)
    if objective.fidelity is not None and owned:  # study.optimize's trials report their rungs
        study.pruner = make_pruner(
            plan.spec.pruner or DEFAULT_PRUNER, objective.fidelity, objective.n_samples
        )
    stats = RunStats()
    started = time.perf_counter()
    try:
        result = optimize(
            study,
            objective,
            n_trials=plan.n_trials,
            timeout=timeout,
            n_jobs=n_jobs,
            show_progress_bar=progress,
            batch=batch,
            stats=stats,
        )
    except KeyboardInterrupt:
        scored = (TrialState.COMPLETE, TrialState.PRUNED)
        raise SearchInterrupted(count_trials(study, scored)) from None
    found = SearchRun(
        study=study,
        study_name=study.study_name,
        storage=storage,
        objective=objective,
        sampler=study.sampler,
        elapsed=time.perf_counter() - started,
        written_at=time.time(),
        n_trials=len(study.get_trials(deepcopy=False)),
        # RunStats counts the trials of a batched run of a plan sampler only.
        new_trials=stats.trials if batch and isinstance(study.sampler, PlanSampler) else None,
        result=result,
    )
    _report(found)
    if plan.guarded and found.front is None and _guard.applies(objective):
        _gate(found, plan.spec, X, y)
    if figures:
        _attach_figures(found)
    return found


def _open_study(
    storage: str | BaseStorage | None,
    study_name: str | None,
    sampler: optuna.samplers.BaseSampler,
    directions: list[str],
    restart: bool,
) -> optuna.Study:
    """Create the study, or load it when it exists (after deleting it, with ``restart``)."""
    from optuna_boxcox.storage import open_storage

    # open_storage: an unusable URL is refused with a message naming it (password redacted).
    opened = open_storage(storage) if isinstance(storage, str) else storage
    if restart and study_name is not None:
        try:
            optuna.delete_study(study_name=study_name, storage=opened)
        except KeyError:
            pass  # nothing to start over
    return optuna.create_study(
        storage=opened,
        study_name=study_name,
        sampler=sampler,
        directions=directions,
        load_if_exists=True,
    )


def _report(found: SearchRun) -> None:
    """Fill in the best point (one objective) or the Pareto front (two)."""
    study = found.study
    finished = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(study.directions) > 1:
        if not finished:
            raise NoFinishedTrial(found.study_name)
        found.front = sorted(study.best_trials, key=lambda t: (t.values[1], -t.values[0]))
        return
    params, best = found.result.params, found.result.best_value
    if best is None and finished:
        # The trial budget stopped the plan before its first batch was scored: the best so far.
        params, best = study.best_params, study.best_value
    if best is None:
        raise NoFinishedTrial(found.study_name)
    found.params, found.best = dict(params), float(best)


def _gate(found: SearchRun, spec: SearchSpec, X: Any, y: Any) -> None:
    """The guarded default's gate: the searched Λ against the MLE and Λ = 1 anchors on rows no
    fit saw; the decision is recorded in the study, and an anchor that wins is the result."""
    objective = found.objective
    decision = _guard.guard(
        objective,
        spec.estimator(),
        X,
        y,
        found.params,
        seed=spec.seed,
        extrapolation=spec.extrapolation,
    )
    decision.record(found.study)
    found.decision = decision
    found.search_params, found.search_best = found.params, found.best
    if decision.chosen != "searched":
        found.params = objective.to_params(decision.lambdas)
        found.best = objective.evaluate(decision.lambdas)


def _attach_figures(found: SearchRun) -> None:
    from optuna_boxcox.figures import attach_figures
    from optuna_boxcox.figures import search_figures

    study = found.study
    if found.front is not None:
        trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        drawn, note = search_figures(
            study, found.objective, found.sampler, trials=trials, user_attrs=study.user_attrs
        )
    else:
        drawn, note = search_figures(
            study,
            found.objective,
            found.sampler,
            result=found.result,
            trials=study.get_trials(deepcopy=False),
            user_attrs=study.user_attrs,
            base_score=found.base,
            mle_score=found.mle,
        )
    attach_figures(study, drawn, note)
