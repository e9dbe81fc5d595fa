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

import functools
import time
from typing import TYPE_CHECKING
from typing import Any
import warnings

import optuna
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_boxcox._objective._kind import PointsObjective
from optuna_boxcox._optuna import _claims
from optuna_boxcox._optuna import count_trials
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._optuna._capabilities import capabilities_of
from optuna_boxcox._optuna._read import refresh_optuna_cache
from optuna_boxcox._runner._batched import BatchedRun
from optuna_boxcox._runner._interrupt import TrialInterrupted
from optuna_boxcox._runner._interrupt import TrialStorageFailed
from optuna_boxcox._runner._interrupt import resumable
from optuna_boxcox._runner._interrupt import stop_when_asked
from optuna_boxcox._runner._trials import RunStats
from optuna_boxcox._system import _parallel
from optuna_boxcox._system import _stop
from optuna_boxcox._system._process import process_identity
from optuna_boxcox._system._progress import Progress
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers import SearchResult
from optuna_boxcox.samplers._ledger import POSITION_KEY
from optuna_boxcox.samplers._ledger import UNCLAIMED
from optuna_boxcox.storage import storage_error

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Iterable
    from collections.abc import Sequence


def _storage_failures_described(run: Callable[..., SearchResult]) -> Callable[..., SearchResult]:
    """``run(study, …)``, which raises a failed read or write of the study's storage (a full
    disk, a lock held too long) as a :class:`~optuna_boxcox.storage.StorageError` saying why and
    what to do in one line, raised from the driver's error; other errors as they are."""

    @functools.wraps(run)
    def described(study: optuna.Study, *args: Any, **kwargs: Any) -> SearchResult:
        try:
            return run(study, *args, **kwargs)
        except TrialStorageFailed as stopped:
            failure = stopped.error
        except Exception as error:
            said = storage_error(error, storage_of(study))
            if said is None:
                raise
            raise said from error
        said = storage_error(failure, storage_of(study))
        if said is None:
            raise failure
        raise said from failure

    return described


@_storage_failures_described
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
    total: int | None = None,
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
            batched run stores trials in groups of several batches, and
            calls them then, in trial order. ``study.stop()`` in a callback ends the run after
            the batch being scored.
        gc_after_trial: As ``study.optimize`` (batched: after each batch).
        show_progress_bar: A progress bar on a terminal, or a line with the time left every few
            seconds when the output is a log.
        batch: False runs a plan sampler trial by trial through ``study.optimize`` too (each
            trial claims its plan position in the storage, so it can share a study with other
            ``study.optimize`` workers).
        stats: Filled with what a batched run did (counts, seconds scoring and writing).
        total: Optuna's samplers: the study's total of finished trials, whichever processes
            run them: the run stops once the study holds them (``n_trials`` still bounds this
            process's), and on a database a trial begun past them, as processes started
            together begin theirs, is withdrawn before it is scored.

    Returns:
        What the search chose: for a plan sampler its Λopt (also when the plan is not finished
        yet), its value and the history of Λopt per batch; for other samplers the best trial.

    Raises:
        StorageError: Reading or writing the study's storage failed (a full disk, a lock held
            for longer than the timeout): the message says why and what to do; what was written
            is kept, and the same call resumes once the storage works again.
    """
    if n_trials is not None and (isinstance(n_trials, bool) or n_trials < 0):
        raise ValueError(f"n_trials must be a non-negative integer or None, got {n_trials!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout!r}")
    # A study opened by Optuna (create_study with a URL) is read back in bulk, not trial by trial.
    refresh_optuna_cache(storage_of(study), study_id_of(study))
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
        result = runner.run(n_trials=n_trials, timeout=timeout, progress=show_progress_bar)
        if result.finished and capabilities_of(storage_of(study)).sql_claims:
            _await_withdrawals(study)
        return result
    if _is_boxcox_objective(objective):
        objective.register(study)
        _name_metric(study, objective)
    n_jobs = _parallel.resolve_threads(n_jobs)
    if isinstance(sampler, PlanSampler):
        finished = sampler.result(study)
        if finished.finished:  # study.optimize would open one more trial before stopping
            return finished
    left = n_trials  # for the progress bar
    if left is None and isinstance(sampler, PlanSampler) and _is_boxcox_objective(objective):
        planned = sampler.plan_size(objective.space).trials
        if planned is not None:
            left = max(0, planned - len(study.get_trials(deepcopy=False)))
    sql = capabilities_of(storage_of(study)).sql_claims
    if isinstance(sampler, PlanSampler):
        total = None  # the plan is the total
    elif sql:
        # The trials a killed run left RUNNING are run again first, by the next trial asked for.
        _claims.put_back_dead(study)
    surplus = _surplus_test(study, total) if sql else None
    with Progress(left, label="search", enabled=show_progress_bar) as bar:
        try:
            # The command's signals raise inside the objective only (see _interrupt).
            with _stop.deferred():
                study.optimize(
                    resumable(
                        objective if surplus is None else _withdrawing(study, objective, surplus),
                        put_back=not isinstance(sampler, PlanSampler),
                    ),
                    n_trials=n_trials,
                    timeout=timeout,
                    n_jobs=n_jobs,
                    catch=catch,
                    callbacks=[
                        *(callbacks or ()),
                        *_stop_at(total),
                        lambda _study, _trial: bar.update(),
                        stop_when_asked,
                    ],
                    gc_after_trial=gc_after_trial,
                )
            _stop.check()  # a signal recorded after the last trial was told
        except TrialInterrupted:
            raise KeyboardInterrupt from None
        except TrialWithdrawn:
            pass  # the study has what it needs
    if isinstance(sampler, PlanSampler):
        result = sampler.result(study)
        if sql and result.finished:
            _await_withdrawals(study)
        return result
    if sql and total is not None and count_trials(study, _FINISHED) >= total:
        _await_withdrawals(study)
    return _best_of(study)


class TrialWithdrawn(BaseException):
    """A trial the study turned out not to need was withdrawn: the run ends (Optuna lets it
    through, as :class:`~optuna_boxcox._runner._interrupt.TrialInterrupted`)."""


#: Seconds a withdrawn trial waits for the newer ones to be withdrawn first (their workers see
#: the study done within a poll of theirs); past it, it is scored after all.
WITHDRAW_WAIT = 5.0


def _surplus_test(study: optuna.Study, total: int | None) -> Callable[[Any], bool] | None:
    """Whether a trial just begun is one the study does not need: one a plan sampler found
    the plan finished for, or one past ``total`` (trials before it that did not fail)."""
    sampler = study.sampler
    if isinstance(sampler, PlanSampler):

        def after_the_plan(trial: optuna.Trial) -> bool:
            _ = trial.relative_params  # claims the trial's position (Optuna 5 samples lazily)
            return sampler.came_after_the_plan(trial)

        return after_the_plan
    if total is None:
        return None
    return lambda trial: _claims.trials_up_to(study, trial_id_of(trial)) > total


def _withdrawing(
    study: optuna.Study, objective: Callable[[Any], Any], surplus: Callable[[Any], bool]
) -> Callable[[Any], Any]:
    """``objective``, but a trial the study turns out not to need is withdrawn (deleted, if the
    newest trial) and the run ends, instead of scoring one trial more than one worker would."""

    def run(trial: optuna.Trial) -> Any:
        if surplus(trial) and _withdraw(study, trial):
            study.stop()
            raise TrialWithdrawn
        return objective(trial)

    return run


def _withdraw(study: optuna.Study, trial: optuna.Trial) -> bool:
    """Withdraw ``trial`` once it is the study's newest (the newer ones, not needed either, are
    withdrawn by their workers); False when it cannot be, and is scored."""
    deadline = time.monotonic() + WITHDRAW_WAIT
    delay = 0.005
    while True:
        done = _claims.withdraw(
            study, trial_id_of(trial), position_key=POSITION_KEY, unclaimed=UNCLAIMED
        )
        if done is not None:
            return done
        if time.monotonic() > deadline:
            return False
        time.sleep(delay)
        delay = min(2 * delay, 0.1)


def _await_withdrawals(study: optuna.Study) -> None:
    """Wait, up to :data:`WITHDRAW_WAIT`, while other workers' trials that hold no position
    run, once the study holds what it needs: they are withdrawn (or finished) in a moment, and
    the count this run reports is then the storage's."""
    deadline = time.monotonic() + WITHDRAW_WAIT
    owner = process_identity()
    while time.monotonic() < deadline and _claims.positionless_running(
        study, position_key=POSITION_KEY, unclaimed=UNCLAIMED, owner=owner
    ):
        time.sleep(0.02)


#: States of the trials a study's total counts.
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


def _stop_at(total: int | None) -> list[Callable[..., None]]:
    """A callback that stops the run once the study holds ``total`` finished trials: processes
    running the same search each count what is missing when they start, and together would run
    that many again. Optuna's ``MaxTrialsCallback`` does the same by reading every trial after
    each one; this is one count."""
    if total is None:
        return []

    def stop(study: optuna.Study, _trial: FrozenTrial) -> None:
        if count_trials(study, _FINISHED) >= total:
            study.stop()

    return [stop]


def _is_boxcox_objective(objective: Any) -> bool:
    # By its base class: the objective's module would load scikit-learn, SciPy and pandas into a
    # run of a plain Optuna objective (docs/performance_log.md).
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
