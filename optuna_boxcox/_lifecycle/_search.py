"""One study's lifecycle: :func:`run_search`, the one path every search takes.

Open (or resume) the study → refuse it if it holds another experiment → set the pruner → decide
the trial count → optimise → report the best. The command line's ``search``, ``worker`` and
``demo`` and :class:`~optuna_boxcox.BoxCoxClassifier` all run their study here, so a change to what
a search does is made once:

- :func:`plan_search` is the *default search policy*: from the spec (and the trials asked for, and
  what a resumed study records) it decides the sampler, the fidelity and the trial count before
  anything runs. A policy that chooses the sampler or the criterion, or the default fidelity,
  belongs there: a spec whose fidelity is ``"default"`` (none asked for) gets the fidelity the
  study it resumes was made with (an ``exact`` study made before stays exact), else ``auto``
  (which decides exact without timing anything on data obviously small for the classifier).
- :func:`run_search` runs the plan; what the search chose (and, for a plan capped below all rows,
  the confirmation between the found Λ and the start point) is :attr:`SearchRun.result`.

Errors are the library's own: :class:`~optuna_boxcox._study._spec.StudyMismatch` and
:class:`~optuna_boxcox._study._spec.ForeignStudy` for a study of another experiment,
:class:`NoFinishedTrial`, :class:`SearchInterrupted`, and ``ValueError`` for a spec that cannot be
searched. The command line only translates them into its one-line messages.
"""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from dataclasses import dataclass
import functools
import time
from typing import TYPE_CHECKING
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.trial import TrialState

from optuna_boxcox._defaults import DEFAULT_OPEN_ENDED_TRIALS
from optuna_boxcox._defaults import DEFAULT_PRUNER
from optuna_boxcox._lifecycle import _guard
from optuna_boxcox._lifecycle._open import FINISHED
from optuna_boxcox._lifecycle._open import Recorded
from optuna_boxcox._lifecycle._open import open_study
from optuna_boxcox._lifecycle._open import prepare_study
from optuna_boxcox._lifecycle._open import trials_left
from optuna_boxcox._objective._arguments import CheckedData
from optuna_boxcox._objective._experiment import prepare_experiment
from optuna_boxcox._objective._experiment import space_layout
from optuna_boxcox._objective._objective import BoxCoxObjective
from optuna_boxcox._objective._rungs import choose
from optuna_boxcox._objective._rungs import make_pruner
from optuna_boxcox._objective._rungs import pricing_of
from optuna_boxcox._optuna import count_trials
from optuna_boxcox._runner import RunStats
from optuna_boxcox._runner import optimize
from optuna_boxcox._runner._memory import first_best
from optuna_boxcox._runner._memory import optimize_in_memory
from optuna_boxcox._study._decision import NAMES
from optuna_boxcox._study._decision import SPLITS
from optuna_boxcox._study._fidelity import EXACT
from optuna_boxcox._study._fidelity import AutoFidelity
from optuna_boxcox._study._fidelity import Exact
from optuna_boxcox._study._fidelity import Unasked
from optuna_boxcox._study._plan_size import PlanSize
from optuna_boxcox._study._plan_size import plan_size
from optuna_boxcox._study._spec import SPEC_ATTR
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox._system._advice import AdvisedValueError
from optuna_boxcox.figures import attach_figures
from optuna_boxcox.figures import search_figures
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers._plan import RESULT_ATTR
from optuna_boxcox.samplers._registry import sampler_key
from optuna_boxcox.samplers._registry import sampler_of
from optuna_boxcox.storage import StorageError
from optuna_boxcox.storage import open_storage

if TYPE_CHECKING:
    from optuna.storages import BaseStorage

    from optuna_boxcox.samplers import SearchResult

__all__ = [
    "NoFinishedTrial",
    "PlanTooLarge",
    "RunOptions",
    "SearchInterrupted",
    "SearchPlan",
    "SearchRun",
    "Where",
    "attach_note",
    "default_study_name",
    "plan_search",
    "run_search",
]


class NoFinishedTrial(ValueError):
    """The study holds no finished trial to report (the budget stopped it before any)."""

    def __init__(self, study_name: str) -> None:
        super().__init__(f"study {study_name!r} has no finished trial to report")
        self.study_name = study_name


class FewRowsWarning(UserWarning):
    """Data with fewer rows than the guarded default's held-out folds need of each class: too
    few to tell one Λ from another."""


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


class PlanTooLarge(ValueError):
    """The search plans more trials, or more study data, than a search writes unasked
    (:attr:`PlanSize.too_large <optuna_boxcox._study._plan_size.PlanSize.too_large>`).

    Attributes:
        size: The plan's size.
    """

    def __init__(self, size: PlanSize) -> None:
        super().__init__(size.refusal("fewer trials or parameters", "allow_large"))
        self.size = size


@dataclass(frozen=True)
class SearchPlan:
    """How a spec is searched, decided before anything runs (:func:`plan_search`).

    Attributes:
        spec: The spec to search (its fidelity made concrete where the policy decides it).
        sampler: The sampler that searches.
        n_trials: New trials to run; None runs a plan sampler's plan to its end.
        guarded: The guarded default (:mod:`optuna_boxcox._lifecycle._guard`): after the paper's search
            (``spec.sampler``), the searched Λ is kept only if it beats the anchors on rows no
            fit saw.
        size: The sampler's plan on the data's space, asked once (None: planned without data).
        fast: Whether the objective sets up its fast scorer (not for a one-trial plan).
    """

    spec: SearchSpec
    sampler: optuna.samplers.BaseSampler
    n_trials: int | None
    guarded: bool = False
    size: PlanSize | None = None
    fast: bool = True


@dataclass(frozen=True)
class SearchRun:
    """What one run of :func:`run_search` did and found: a value, built where the search ends
    (:func:`_found`), and replaced by the gate's result where the guarded default judges it.

    Attributes:
        study, study_name, storage: The study searched, its name and the storage as given.
        make_objective: Gives the objective of the study's experiment (built once, when first
            asked for: a study read back is not scored); :attr:`objective` is what it gives.
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
            ``search_best`` what the search found, and ``used_trial`` the first trial holding
            the chosen Λ (None: no trial does).
        ran: False when the study held its budget already (``total``) and was read back.
        total: The study's budget the run was given (``total``, or ``n_trials`` counted as the
            study's total), None when it ran new trials without one.
    """

    study: optuna.Study
    study_name: str
    storage: str | BaseStorage | None
    make_objective: Callable[[], BoxCoxObjective]
    sampler: optuna.samplers.BaseSampler
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
    used_trial: int | None = None
    ran: bool = True
    total: int | None = None

    @property
    def range_scaled(self) -> bool:
        """Whether the model the result makes min-max scales after the power step (the gate
        chose a range-scaled anchor)."""
        return self.decision is not None and self.decision.range_scaled

    @functools.cached_property
    def objective(self) -> BoxCoxObjective:
        """The objective of the study's experiment."""
        return self.make_objective()

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
    if _named_by_fingerprint(spec):
        data_name = f"{data_name}@{spec.short_fingerprint}"
    return f"{data_name}/{spec.classifier}/{_guard.GUARDED if guarded else spec.sampler}"


def _named_by_fingerprint(spec: SearchSpec) -> bool:
    """Whether a study's default name carries its data's fingerprint: data from a CSV file, or
    with columns dropped (another experiment than the data set's own study)."""
    source = spec.source or {}
    return bool(source.get("csv") or source.get("drop_columns"))


def plan_search(
    spec: SearchSpec,
    *,
    n_trials: int | None = None,
    sampler: optuna.samplers.BaseSampler | None = None,
    recorded: SearchSpec | None = None,
    data: CheckedData | None = None,
) -> SearchPlan:
    """The default search policy: which sampler searches ``spec``, at which fidelity, for how many
    trials. ``sampler`` (a sampler object, or a study's own) overrides the spec's.

    The fidelity, when the spec asks for none (``"default"``): that of ``recorded``, the spec of
    the study the search resumes (a study keeps the fidelity it was made with, exact included),
    else ``auto`` for a new study, marked as the default in what it chooses — exact where a
    subsample or a second objective rule rows as the fidelity out. With ``data``, the plan is
    also sized (the sampler asked once, on the data's space) and the fidelity chosen: ``auto``
    takes the choice ``recorded`` holds of it, else prices the plan; the plan's spec holds the
    choice, and nothing after it chooses again.

    Raises:
        ValueError: The spec names a sampler that cannot be made (unknown, or wrong settings).
    """
    if isinstance(spec.fidelity, Unasked):
        spec = _default_fidelity(spec, recorded)
    guarded = spec.sampler == _guard.GUARDED
    if guarded:  # the paper's search first, in a study of its own; the gate after it
        spec = dataclasses.replace(
            spec, sampler=_guard.search_sampler(_guard.GUARDED, _estimator_or_none(spec))
        )
    if sampler is None:
        if spec.sampler is not None and sampler_key(spec.sampler) is None:
            # Named here, not by make_sampler: a search also takes the guarded default.
            raise ValueError(
                f"unknown sampler {spec.sampler!r}; choose one of "
                f"{', '.join(_guard.sampler_names())}"
            )
        try:
            sampler = sampler_of(spec)
        except TypeError as error:
            raise ValueError(str(error)) from None
    plan_sampler = isinstance(sampler, PlanSampler)
    if (
        isinstance(spec.fidelity, AutoFidelity)
        and spec.fidelity_choice is None
        and not plan_sampler
    ):
        # Optuna's samplers run their trials one by one and the pruner halves them all.
        trials = n_trials or DEFAULT_OPEN_ENDED_TRIALS
        spec = dataclasses.replace(
            spec,
            fidelity=AutoFidelity(positions=trials, batch=trials, default=spec.fidelity.default),
        )
    if n_trials is None and not plan_sampler:
        n_trials = DEFAULT_OPEN_ENDED_TRIALS
    if data is None:
        return SearchPlan(spec, sampler, n_trials, guarded=guarded)
    size = plan_size(sampler, space_layout(spec, data))
    if not isinstance(spec.fidelity, Exact):
        estimator = spec.estimator()
        pricing = pricing_of(estimator, len(data.names), data.labels, spec.cv)
        recorded_choice = None if recorded is None else recorded.fidelity_choice
        chosen = spec.fidelity_choice or recorded_choice
        choice = choose(spec.fidelity, chosen, pricing, data.n_samples, size, may_sample=True)
        spec = dataclasses.replace(spec, fidelity_choice=choice)
        if choice.sample is not None:  # the default's sample: the spec's subsample, recorded
            spec = dataclasses.replace(spec, subsample=choice.sample)
    # A one-trial plan (the MLE's) is not worth a fast scorer's set-up: LogisticRegression's loads
    # its compiled fit (about a second) where scikit-learn's fit takes milliseconds. Same scores.
    return SearchPlan(spec, sampler, n_trials, guarded=guarded, size=size, fast=not size.one_trial)


def sample_size(spec: SearchSpec, data: CheckedData) -> int | None:
    """The rows of the stratified sample a new search of ``spec`` on ``data`` scores, as its plan
    decides (:func:`plan_search`), or None for all of them: what data held in part (a Dask
    collection) draw into memory before the search. ``data`` need only know its names, labels
    and rows."""
    return plan_search(spec, data=data).spec.subsample


def _estimator_or_none(spec: SearchSpec) -> Any:
    """The spec's classifier, or None when its record cannot rebuild it (the caller's object
    decides then)."""
    try:
        return spec.estimator()
    except ValueError:
        return None


def _default_fidelity(spec: SearchSpec, recorded: SearchSpec | None) -> SearchSpec:
    """``spec`` with the fidelity of a search that asked for none (see :func:`plan_search`)."""
    if recorded is not None:
        choice = recorded.fidelity_choice
        # A study whose default searched a sample keeps it (the same rows, the same study).
        sampled = choice is not None and choice.sample is not None and spec.subsample is None
        return dataclasses.replace(
            spec,
            fidelity=recorded.fidelity,
            fidelity_choice=choice,
            subsample=recorded.subsample if sampled else spec.subsample,
        )
    if spec.subsample is not None or len(spec.objectives) > 1:
        return dataclasses.replace(spec, fidelity=EXACT)
    return dataclasses.replace(spec, fidelity=AutoFidelity(default=True))


@dataclass(frozen=True)
class Where:
    """Where a search's study lives.

    Attributes:
        storage: A URL (opened with :func:`~optuna_boxcox.storage.open_storage`), a storage, or
            None (in memory).
        study: A study to search as it is, with its own sampler and pruner (instead of
            ``storage``, ``study_name`` and ``restart``).
        study_name: The study's name; default :func:`default_study_name` when ``data_name`` is
            given, else a name Optuna makes up.
        data_name: What the data are called, for the default study name.
        restart: Delete the study of this name first.
    """

    storage: str | BaseStorage | None = None
    study: optuna.Study | None = None
    study_name: str | None = None
    data_name: str | None = None
    restart: bool = False

    def __post_init__(self) -> None:
        name = self.study_name
        if name is not None and not (isinstance(name, str) and name.strip()):
            raise AdvisedValueError(
                "{study_name} {given} names no study: give it a name, or leave {study_name} "
                "out for the default one",
                given=repr(name),
            )


@dataclass(frozen=True)
class RunOptions:
    """How a search runs, beyond what its spec says: what a command, a comparison or the
    estimator adds.

    Attributes:
        sampler: A sampler object to search with instead of the spec's (which then names none).
        memory_limit: The objective's memory budget (as in
            :class:`~optuna_boxcox.BoxCoxObjective`).
        n_jobs, timeout, batch: As :func:`~optuna_boxcox.optimize`.
        n_trials: New trials to run (default: a plan sampler's plan, others
            :data:`~optuna_boxcox._defaults.DEFAULT_OPEN_ENDED_TRIALS`).
        total: The study's budget instead of ``n_trials``: finished trials (COMPLETE or PRUNED)
            it should hold. A study that holds them is read back: nothing is scored and the
            objective is not built (``SearchRun.ran`` is False).
        n_trials_total: ``n_trials`` (or its default for Optuna's samplers) is the study's
            ``total``, not new trials: the command line's meaning, where the same command again
            runs only the trials still missing (a plan sampler's whole plan, without
            ``n_trials``, stays bounded by its own end). The Python API keeps Optuna's meaning.
        in_memory: Optuna's samplers search an in-memory copy of the study, written back a chunk
            of trials at a time (:func:`~optuna_boxcox._runner._memory.optimize_in_memory`):
            for many short searches, whose samplers would read every trial from the storage at
            each step.
        settings: Settings the study records beside the spec, and may only be continued with
            (a comparison's budget and outer fold, say).
        objective: Gives the objective of ``spec`` on (X, y) when one is built already (studies of
            the same data share it); called only when something is scored. Default: built
            from the spec (before the storage is opened, so bad input creates nothing).
        progress: Show the run's progress.
        note: Attach the search's Markdown note to the study (shown by optuna-dashboard): the Λ
            used, the decision in words and the search's settings (:func:`attach_note`).
        figures: Attach the search's figures too (and the note).
        announce: Called with the objective once the study is opened and the fidelity decided,
            before the first trial (the command line prints the decision).
        refuse_large: Refuse (:class:`PlanTooLarge`) a plan too large to write, before anything
            is computed (the command line's, unless ``--allow-large``).
    """

    sampler: optuna.samplers.BaseSampler | None = None
    memory_limit: int | str | None = None
    n_jobs: int = 1
    n_trials: int | None = None
    total: int | None = None
    n_trials_total: bool = False
    timeout: float | None = None
    batch: bool = True
    in_memory: bool = False
    settings: Recorded | None = None
    objective: Callable[[], BoxCoxObjective] | None = None
    progress: bool = False
    note: bool = False
    figures: bool = False
    announce: Callable[[BoxCoxObjective], None] | None = None
    refuse_large: bool = False


def run_search(
    spec: SearchSpec,
    data: CheckedData,
    where: Where | None = None,
    options: RunOptions | None = None,
) -> SearchRun:
    """Run (or resume) the study of ``spec`` on ``data`` and return what was found.

    Each step is a function of its own, in this order: the study's name and the spec a study to
    resume was made with (:func:`_recorded`), the spec and fidelity decided (:func:`plan_search`),
    the objective (:func:`_objective`), the study (:func:`_study`), its pruner
    (:func:`_set_pruner`), the run (:func:`_run`), the gate (:func:`_gate`) and the note and
    figures (:func:`attach_note`).

    Args:
        spec: The experiment and how it is searched.
        data: The data, checked where they entered
            (:func:`~optuna_boxcox._objective._arguments.check_data`).
        where: Where the study lives (default: a new study in memory).
        options: How the search runs (default: :class:`RunOptions`'s).

    Raises:
        StudyMismatch: The study holds another experiment (nothing is written into it).
        ForeignStudy: The study was not made by optuna-boxcox and holds trials.
        NoFinishedTrial: The study has no finished trial to report.
        SearchInterrupted: Ctrl-C; what was scored is written.
        PlanTooLarge: ``options.refuse_large`` and the plan would write too much.
    """
    where = _named(spec, data, where or Where())
    options = options or RunOptions()
    opened, recorded = _recorded(spec, where)
    plan = plan_search(
        spec,
        n_trials=options.n_trials,
        sampler=options.sampler if where.study is None else where.study.sampler,
        recorded=recorded,
        data=data,
    )
    _refuse_large(plan, options)
    built, objective = _objective(plan, data, options)
    # Said once the objective is built: data it refuses (too few rows to fit) get one line.
    _warn_few_rows(data)
    study = _study(where, opened, plan, built, options.settings)
    total = options.total
    if options.n_trials_total and total is None:
        total = plan.n_trials
        _record_total(study, total)
    to_run = plan.n_trials if total is None else trials_left(study, total)
    if total is not None and to_run == 0:
        found = _read_back(study, where.storage, objective, plan, total)
    else:
        found = _search(study, plan, objective, built, where, to_run, total, options)
    # The guarded default's gate, unless the study records its decision (the objective of a
    # study read back is built only now, if at all).
    if found.decision is None and _guarded(found, plan) and _guard.applies(found.objective):
        found = _gate(found, plan.spec)
    if found.ran and (options.note or options.figures):
        attach_note(found, figures=options.figures)
    return found


def _search(
    study: optuna.Study,
    plan: SearchPlan,
    objective: Callable[[], BoxCoxObjective],
    built: BoxCoxObjective | None,
    where: Where,
    to_run: int | None,
    total: int | None,
    options: RunOptions,
) -> SearchRun:
    """The search itself: the objective registered and announced, the study marked as the
    guarded default's, its pruner set, and the trials run."""
    scored = objective()
    if built is None:
        scored.register(study)
    if options.announce is not None:
        options.announce(scored)
    _mark_guarded(study, plan, gated=_guard.applies(scored))
    if scored.fidelity is not None and where.study is None:
        _set_pruner(study, plan, scored)
    return _run(study, scored, objective, where.storage, to_run, total, options)


#: Study user attribute of a study of Optuna's samplers: the trials it holds when done, as its
#: last search was asked (``n_trials_total``), for the workers that join it.
TOTAL_ATTR = "boxcox_total"


def _record_total(study: optuna.Study, total: int | None) -> None:
    """Record the study's total for the workers that join it: Optuna's samplers only (a plan
    sampler's workers run the plan to its end, whatever the search that began it stopped at)."""
    if total is None or isinstance(study.sampler, PlanSampler):
        return
    if study.user_attrs.get(TOTAL_ATTR) != total:
        study.set_user_attr(TOTAL_ATTR, int(total))


def recorded_total(study: optuna.Study) -> int | None:
    """The total the study's last search was asked for (:data:`TOTAL_ATTR`), if it records one."""
    total = study.user_attrs.get(TOTAL_ATTR)
    return total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None


def _named(spec: SearchSpec, data: CheckedData, where: Where) -> Where:
    """``where`` with the default study name of a study the search opens, when it has data's."""
    if where.study is not None or where.study_name is not None or where.data_name is None:
        return where
    named = spec
    if _named_by_fingerprint(spec):
        named = dataclasses.replace(spec, fingerprint=data.fingerprint)
    name = default_study_name(named, where.data_name, guarded=spec.sampler == _guard.GUARDED)
    return dataclasses.replace(where, study_name=name)


def _recorded(spec: SearchSpec, where: Where) -> tuple[BaseStorage | None, SearchSpec | None]:
    """The storage when it had to be opened already, and the spec the study to resume was made
    with: read for the default fidelity only (the fidelity that study was made with)."""
    if not isinstance(spec.fidelity, (Unasked, AutoFidelity)):
        return None, None
    if where.study is not None:
        return None, SearchSpec.of_study(where.study)
    if where.restart:
        return None, None
    # Only a storage that exists is opened here: a new one is created (and said so) once
    # the objective is built, so bad input is refused before anything is created.
    opened = _existing(where.storage)
    return opened, _recorded_spec(opened, where.study_name)


def _warn_few_rows(data: CheckedData) -> None:
    """One line, before the search, when the data have fewer rows than :data:`SPLITS` of each
    class: every Λ then scores alike on so few rows (4 rows, naive Bayes: all of them 1.0), and
    no held-out fold can tell the searched Λ from the anchors."""
    classes = len(np.unique(data.labels))
    if data.n_samples < SPLITS * classes:
        warnings.warn(
            f"the data have {data.n_samples} rows for {classes} classes, fewer than the "
            f"{SPLITS * classes} ({SPLITS} a class) that tell one Λ from another: most Λ score "
            "alike on so few rows, and the search's Λ fits these rows only; give more rows",
            FewRowsWarning,
            stacklevel=3,  # run_search's caller
        )


def _refuse_large(plan: SearchPlan, options: RunOptions) -> None:
    """Refuse a plan too large to write, before anything is computed (a sampler that refuses a
    plan too large by its own rule, the full grid's, is left to it)."""
    sampler = plan.sampler
    own = isinstance(sampler, PlanSampler) and sampler.checks_own_size
    if not options.refuse_large or plan.size is None or own:
        return
    size = plan.size.cut(options.n_trials)
    if size.too_large:
        raise PlanTooLarge(size)


def _objective(
    plan: SearchPlan, data: CheckedData, options: RunOptions
) -> tuple[BoxCoxObjective | None, Callable[[], BoxCoxObjective]]:
    """The objective built now from the plan's spec (None when the caller gives one) and what
    gives the objective when something is scored."""
    if options.objective is not None:
        return None, options.objective
    experiment = prepare_experiment(plan.spec, data, kernels=plan.fast)
    built = BoxCoxObjective.of(experiment, memory_limit=options.memory_limit, fast=plan.fast)
    if options.memory_limit is not None and built.fidelity is not None:
        built.prepare_rungs()  # a limit too small for the rungs is refused before the study opens
    return built, functools.partial(_given, built)


def _study(
    where: Where,
    opened: BaseStorage | None,
    plan: SearchPlan,
    built: BoxCoxObjective | None,
    settings: Recorded | None,
) -> optuna.Study:
    """The study opened (or the one given) and checked. A study of another experiment is refused
    before anything is written into it (an objective given as built is checked once it is
    needed: a study read back is not scored)."""
    check = None if built is None else built.register
    if where.study is not None:
        prepare_study(where.study, check=check, settings=settings)
        return where.study
    return open_study(
        _opened(where.storage) if opened is None else opened,
        where.study_name,
        directions=built.directions if built is not None else plan.spec.directions,
        sampler=plan.sampler,
        restart=where.restart,
        check=check,
        settings=settings,
        param_names=() if built is None else built.space.names,
    )


def _mark_guarded(study: optuna.Study, plan: SearchPlan, *, gated: bool) -> None:
    """The study records that it is the guarded default's:
    its spec names the search it runs (coordinate), and a worker joining it with that spec gates
    the result as search does."""
    if plan.guarded and not study.user_attrs.get(_guard.GUARDED_ATTR):
        study.set_user_attr(_guard.GUARDED_ATTR, True)
        if gated:
            # Written now, among the study's first attributes, so that the dashboard lists it on
            # the first page of its table, beside the Best Trial card it corrects; a search the
            # gate cannot judge (transforms, settings, two objectives) never gets it.
            study.set_user_attr(USED_ATTR, "not yet decided: the search is running")


def _set_pruner(study: optuna.Study, plan: SearchPlan, scored: BoxCoxObjective) -> None:
    """study.optimize's trials report their rungs to the pruner the spec names."""
    study.pruner = make_pruner(
        plan.spec.pruner or DEFAULT_PRUNER, scored.fidelity, scored.n_samples
    )


def _run(
    study: optuna.Study,
    scored: BoxCoxObjective,
    objective: Callable[[], BoxCoxObjective],
    storage: str | BaseStorage | None,
    to_run: int | None,
    total: int | None,
    options: RunOptions,
) -> SearchRun:
    """Optimise (the runner, or an in-memory copy for Optuna's samplers) and report the best."""
    stats = RunStats()
    started = time.perf_counter()
    memory = options.in_memory and not isinstance(study.sampler, PlanSampler)
    try:
        if memory:
            result = optimize_in_memory(study, scored, to_run)
        else:
            result = optimize(
                study,
                scored,
                n_trials=to_run,
                timeout=options.timeout,
                n_jobs=options.n_jobs,
                show_progress_bar=options.progress,
                batch=options.batch,
                stats=stats,
                total=total,
            )
    except KeyboardInterrupt:
        raise SearchInterrupted(count_trials(study, FINISHED)) from None
    return _found(
        study,
        storage,
        objective,
        result,
        elapsed=time.perf_counter() - started,
        n_trials=len(study.get_trials(deepcopy=False)),
        # RunStats counts the trials of a batched run of a plan sampler only.
        new_trials=(
            stats.trials
            if options.batch and not memory and isinstance(study.sampler, PlanSampler)
            else None
        ),
        total=total,
    )


def _given(objective: BoxCoxObjective) -> BoxCoxObjective:
    return objective


def _read_back(
    study: optuna.Study,
    storage: Any,
    objective: Callable[[], BoxCoxObjective],
    plan: SearchPlan,
    total: int,
) -> SearchRun:
    """A study that holds its budget: what it chose, read back without scoring, with the guarded
    default's decision where the study records it."""
    sampler = study.sampler
    result = sampler.result(study) if isinstance(sampler, PlanSampler) else first_best(study)
    found = _found(
        study,
        storage,
        objective,
        result,
        elapsed=0.0,
        n_trials=count_trials(study),
        new_trials=0,
        ran=False,
        total=total,
    )
    attr = study.user_attrs.get(_guard.DECISION_ATTR)
    if _guarded(found, plan) and isinstance(attr, dict):
        # A finished study's searched Λ is the one it judged.
        return _chosen(found, _guard.Decision.from_dict(attr))
    return found


def _guarded(found: SearchRun, plan: SearchPlan) -> bool:
    """Whether the search's result is the guarded default's to judge (a one-objective study of
    the guarded default, made here or joined)."""
    return (plan.guarded or bool(found.study.user_attrs.get(_guard.GUARDED_ATTR))) and (
        found.front is None
    )


def _opened(storage: str | BaseStorage | None) -> BaseStorage | None:
    """The storage of a URL (an unusable one is refused with a message naming it, password
    redacted), or the one given."""
    return open_storage(storage) if isinstance(storage, str) else storage


def _existing(storage: str | BaseStorage | None) -> BaseStorage | None:
    """The storage, when it exists already (None for a file not made yet, or none at all)."""
    if not isinstance(storage, str):
        return storage
    try:
        return open_storage(storage, create=False)
    except StorageError:
        return None  # a file to create (or a server to reach): opened, and refused, later


def _recorded_spec(storage: BaseStorage | None, study_name: str | None) -> SearchSpec | None:
    """The spec recorded in the study ``study_name`` of ``storage``, None when there is no such
    study (or it records none)."""
    if storage is None or study_name is None:
        return None
    try:
        study_id = storage.get_study_id_from_name(study_name)
    except KeyError:
        return None
    record = storage.get_study_user_attrs(study_id).get(SPEC_ATTR)
    return None if record is None else SearchSpec.from_dict(record)


def _found(
    study: optuna.Study,
    storage: Any,
    objective: Callable[[], BoxCoxObjective],
    result: SearchResult,
    **run: Any,
) -> SearchRun:
    """The search's result as it ends: with the best point (one objective) or the Pareto front
    (two); ``run`` the run's counts (elapsed, n_trials, new_trials, ran, total)."""
    finished = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    best: dict[str, Any]
    if len(study.directions) > 1:
        if not finished:
            raise NoFinishedTrial(study.study_name)
        front = sorted(study.best_trials, key=lambda t: (t.values[1], -t.values[0]))
        best = {"front": front}
    else:
        params, value = result.params, result.best_value
        if value is None and finished:
            # The trial budget stopped the plan before its first batch was scored: the best so far.
            params, value = study.best_params, study.best_value
        if value is None:
            raise NoFinishedTrial(study.study_name)
        best = {"params": dict(params), "best": float(value)}
    return SearchRun(
        study=study,
        study_name=study.study_name,
        storage=storage,
        # Once: the gate's result replaces this value, and must not build the objective again.
        make_objective=functools.cache(objective),
        sampler=study.sampler,
        written_at=time.time(),
        result=result,
        **best,
        **run,
    )


def _gate(found: SearchRun, spec: SearchSpec) -> SearchRun:
    """The guarded default's gate: the searched Λ against the MLE and Λ = 1 anchors on rows no
    fit saw; the decision is recorded in the study, and an anchor that wins is the result (see
    :func:`_record_result`). Returns the result with the decision and the number of a trial
    holding the Λ used (``used_trial``; None: none does)."""
    objective = found.objective
    settings = _guard.settings(
        objective.to_lambdas(found.params), seed=spec.seed, extrapolation=spec.extrapolation
    )
    # A rerun on a finished study, or another worker of it: the same searched Λ, judged already.
    decision = _guard.recorded(found.study, settings)
    if decision is None:
        # On the rows the search scored: all of them, or the default's sample.
        decision = _guard.guard(
            objective,
            spec.estimator(),
            objective.X,
            objective.y,
            found.params,
            seed=spec.seed,
            extrapolation=spec.extrapolation,
        )
        decision = dataclasses.replace(decision, settings=settings)
        decision.record(found.study)
    found = _chosen(found, decision)
    return dataclasses.replace(found, used_trial=_record_result(found))


def _chosen(found: SearchRun, decision: _guard.Decision) -> SearchRun:
    """The result the guarded default's decision makes: an anchor that won replaces the searched
    Λ, which is kept beside it."""
    params, best = found.params, found.best
    if decision.chosen != "searched":
        params = found.objective.to_params(decision.lambdas)
        best = found.objective.evaluate(decision.lambdas)
    return dataclasses.replace(
        found,
        decision=decision,
        params=params,
        best=best,
        search_params=found.params,
        search_best=found.best,
    )


def _record_result(found: SearchRun) -> int | None:
    """The Λ the gate chose as the study's result (``boxcox_result``, which the dashboard shows),
    with the decision in words and the searched Λ beside it (``searched_params``,
    ``searched_best_value``); written once the search's plan is finished, as the sampler writes
    its own. Returns the number of the first trial holding the Λ used (None: no trial does, e.g.
    an anchor the search never scored)."""
    study, decision = found.study, found.decision
    trial = next(
        (
            t.number
            for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if t.params == found.params
        ),
        None,
    )
    record = {
        "params": found.params,
        "best_value": float(found.best),
        "chosen": decision.chosen,
        "decision": decision.explain(),
        "trial": trial,
        "searched_params": found.search_params,
        "searched_best_value": found.search_best,
    }
    if found.result.finished and study.user_attrs.get(RESULT_ATTR) != record:
        study.set_user_attr(RESULT_ATTR, record)
    if found.result.finished:
        used = used_in_words(found.params, decision, trial, study.best_trial.number)
        if study.user_attrs.get(USED_ATTR) != used:
            study.set_user_attr(USED_ATTR, used)
    return trial


#: Study user attribute saying in words which Λ a guarded study uses: optuna-dashboard's Best
#: Trial card shows the best resubstitution score, the searched Λ, even where the gate used an
#: anchor.
USED_ATTR = "boxcox_chosen"
#: Features whose λ the words list; the rest are in ``boxcox_result``.
_USED_SHOWN = 8


def used_in_words(params: dict[str, float], decision: Any, trial: int | None, best: int) -> str:
    """``Λ = 1 (standard scaling), the gate's choice, not the Best Trial's searched Λ (number
    65): alcohol 1, …`` — the Λ a guarded study uses, for the dashboard."""
    if decision.chosen == "searched":
        what = f"the searched Λ of the Best Trial (number {best}), kept by the gate"
    else:
        held = "" if trial is None else f", held by trial {trial}"
        what = (
            f"{NAMES[decision.chosen]}, the gate's choice{held}; not the Best Trial's "
            f"searched Λ (number {best})"
        )
    shown = [f"{name} {value:.4g}" for name, value in list(params.items())[:_USED_SHOWN]]
    more = len(params) - _USED_SHOWN
    if more > 0:
        shown.append(f"and {more} more (boxcox_result)")
    return f"{what}: {', '.join(shown)}"


def attach_note(found: SearchRun, *, figures: bool = False) -> None:
    """Attach the search's note (and with ``figures`` its figures) to its study, where
    optuna-dashboard shows them: every study the package makes gets its note here.

    The note leads with the Λ used and the decision in words (the guarded default's gate, or
    none), then the data, classifier, scoring, sampler and settings, and the scores at the Λ used,
    at λ = 1 and at the MLE (two more scorings of the objective). The figures cost more (the
    grid heatmap of a two-feature search scores a whole grid).
    """
    study = found.study
    if found.front is not None:
        trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        drawn, note = search_figures(
            study,
            found.objective,
            found.sampler,
            trials=trials,
            user_attrs=study.user_attrs,
            draw=figures,
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
            decision=found.decision,
            used_trial=found.used_trial,
            draw=figures,
        )
    attach_figures(study, drawn, note)
