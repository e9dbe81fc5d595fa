"""``optuna_boxcox.optimize``: the plugin's ``study.optimize``.

``study.optimize`` asks the sampler for one point at a time and the storage commits every parameter
separately: about 50 ms a trial on SQLite, whatever the classifier costs. For the paper's samplers
(:class:`~optuna_boxcox.samplers.PlanSampler`) with a :class:`~optuna_boxcox.BoxCoxObjective`,
:func:`optimize` instead takes the sampler's whole next batch (a coordinate sweep, a spherical
pass, …) through its :class:`~optuna_boxcox.samplers.PlanRun`, scores it (over ``n_jobs``
processes when that pays), and appends the finished trials in one transaction. The study it writes
is the one ``study.optimize`` with the same sampler writes: same params, values, user attributes
and order. Any other sampler or objective goes through ``study.optimize`` unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any
import warnings

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_boxcox._objective._kind import PointsObjective
from optuna_boxcox._runner._batched import BatchedRun
from optuna_boxcox._runner._interrupt import TrialInterrupted
from optuna_boxcox._runner._interrupt import resumable
from optuna_boxcox._runner._interrupt import stop_when_asked
from optuna_boxcox._runner._trials import RunStats
from optuna_boxcox._system import _parallel
from optuna_boxcox._system import _stop
from optuna_boxcox._system._progress import Progress
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers import SearchResult

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterable
    from collections.abc import Sequence


def optimize(
    study: optuna.Study,
    objective: Any,
    *,
    n_trials: int | None = None,
    timeout: float | None = None,
    n_jobs: int = 1,
    catch: Iterable[type[Exception]] | type[Exception] = (),
    callbacks: Sequence[Callable[[optuna.Study, FrozenTrial], None]] | None = None,
    gc_after_trial: bool = False,
    show_progress_bar: bool = False,
    batch: bool = True,
    stats: RunStats | None = None,
) -> SearchResult:
    """Optimise ``objective`` on ``study``, as ``study.optimize`` does, batch by batch where it can.

    With one of the paper's samplers (``study.sampler`` a
    :class:`~optuna_boxcox.samplers.PlanSampler`) and a :class:`~optuna_boxcox.BoxCoxObjective`,
    whole batches of the plan are scored and their trials written in one transaction each — the
    same trials ``study.optimize`` would write, about a hundred times faster on SQLite. Every other
    combination runs ``study.optimize(objective, ...)`` with the same arguments.

    Example::

        import optuna
        import optuna_boxcox
        from sklearn.datasets import load_breast_cancer
        from sklearn.svm import SVC

        X, y = load_breast_cancer(return_X_y=True, as_frame=True)
        objective = optuna_boxcox.BoxCoxObjective(X, y, SVC())
        sampler = optuna_boxcox.CoordinateGridSampler.from_preset("iterative")
        study = optuna.create_study(direction="maximize", sampler=sampler)
        result = optuna_boxcox.optimize(study, objective)   # 4 · 30 · 11 trials
        print(result.params, result.best_value)

    Args:
        study: The study to optimise; a batched run resumes from its finished trials.
        objective: A :class:`~optuna_boxcox.BoxCoxObjective` (batched with a plan sampler), or any
            callable ``study.optimize`` accepts.
        n_trials: Stop after this many new trials; ``None`` runs a plan sampler's plan to its end
            (other samplers then run until ``timeout`` or ``study.stop()``, as in Optuna).
            Batched with an objective's fidelity, the batch that reaches it is finished whole:
            its points are halved together.
        timeout: Stop starting new work after this many seconds (batched: between batches); what
            was scored is written, and the same call later resumes.
        n_jobs: Batched: processes scoring each batch (-1: one per CPU), this one included; the
            first worker also writes the trials. Otherwise: ``study.optimize``'s threads.
        catch: As ``study.optimize``; batched runs stop on any error of the objective, after
            writing what was scored.
        callbacks: Called as ``callback(study, frozen_trial)`` after each trial is stored; a
            batched run stores trials in groups (at least :data:`~optuna_boxcox._runner._batched.WRITE_AT_LEAST` at a time), and
            calls them then, in trial order. ``study.stop()`` in a callback ends the run after
            the batch being scored.
        gc_after_trial: As ``study.optimize`` (batched: after each batch).
        show_progress_bar: A progress bar on a terminal, or a line with the time left every few
            seconds when the output is a log.
        batch: False runs a plan sampler trial by trial through ``study.optimize`` too (each
            trial claims its plan position in the storage, so it can share a study with other
            ``study.optimize`` workers).
        stats: Filled with what a batched run did (counts, seconds scoring and writing).

    Returns:
        What the search chose: for a plan sampler its Λopt (also when the plan is not finished
        yet), its value and the history of Λopt per batch; for other samplers the best trial.
    """
    if n_trials is not None and (isinstance(n_trials, bool) or n_trials < 0):
        raise ValueError(f"n_trials must be a non-negative integer or None, got {n_trials!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    sampler = study.sampler
    if batch and isinstance(sampler, PlanSampler) and _is_boxcox_objective(objective):
        n_jobs = _parallel.resolve_n_jobs(n_jobs)
        objective.register(study)
        _name_metric(study, objective)
        run = sampler.start_run(study, max_trials=n_trials)
        runner = BatchedRun(
            study,
            objective,
            run,
            n_jobs=n_jobs,
            callbacks=list(callbacks or ()),
            gc_after_trial=gc_after_trial,
            stats=stats if stats is not None else RunStats(),
        )
        return runner.run(n_trials=n_trials, timeout=timeout, progress=show_progress_bar)
    if _is_boxcox_objective(objective):
        objective.register(study)
        _name_metric(study, objective)
    n_jobs = _parallel.resolve_threads(n_jobs)
    if isinstance(sampler, PlanSampler):
        finished = sampler.result(study)
        if finished.finished:  # study.optimize would open one more trial before stopping
            return finished
    total = n_trials
    if total is None and isinstance(sampler, PlanSampler) and _is_boxcox_objective(objective):
        planned = sampler.plan_size(objective.space).trials
        if planned is not None:
            total = max(0, planned - len(study.get_trials(deepcopy=False)))
    with Progress(total, label="search", enabled=show_progress_bar) as bar:
        try:
            # The command's signals raise inside the objective only (see _interrupt).
            with _stop.deferred():
                study.optimize(
                    resumable(objective, put_back=not isinstance(sampler, PlanSampler)),
                    n_trials=n_trials,
                    timeout=timeout,
                    n_jobs=n_jobs,
                    catch=catch,
                    callbacks=[
                        *(callbacks or ()),
                        lambda _study, _trial: bar.update(),
                        stop_when_asked,
                    ],
                    gc_after_trial=gc_after_trial,
                )
            _stop.check()  # a signal recorded after the last trial was told
        except TrialInterrupted:
            raise KeyboardInterrupt from None
    if isinstance(sampler, PlanSampler):
        return sampler.result(study)
    return _best_of(study)


def _is_boxcox_objective(objective: Any) -> bool:
    # By its base class: the objective's module would load scikit-learn, SciPy and pandas into a
    # run of a plain Optuna objective (docs/performance.md).
    return isinstance(objective, PointsObjective)


def _name_metric(study: optuna.Study, objective: Any) -> None:
    """Name the study's objective after the scoring (the dashboard shows it instead of
    "Objective 0"), unless the study names its metrics already."""
    name = objective.metric_name
    if not name or study.metric_names is not None or len(study.directions) != 1:
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names([name])


def _best_of(study: optuna.Study) -> SearchResult:
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not trials or len(study.directions) != 1:
        return SearchResult(None, None, n_trials=len(trials))
    best = study.best_trial
    return SearchResult(dict(best.params), best.value, n_trials=len(trials))
