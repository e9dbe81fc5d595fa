"""Ctrl-C inside a trial of ``study.optimize``: the trial is put back, not failed.

Optuna catches a KeyboardInterrupt raised by the objective, marks the trial FAIL, logs it with its
traceback ("Trial 21 failed … KeyboardInterrupt") and raises it again. The objective wrapped by
:func:`resumable` instead leaves the trial to be run again — WAITING with its parameters, which
Optuna's next ``optimize`` scores first; a plan sampler's trial stays RUNNING, re-run as one of a
process that died — and stops the loop with :class:`TrialInterrupted`, which Optuna lets through
untouched (it is no Exception nor KeyboardInterrupt); :func:`optimize` turns it back into a
KeyboardInterrupt. A read or write of the storage that fails inside the objective (a full disk)
stops the loop likewise (:class:`TrialStorageFailed`): Optuna would log the trial as failed, with
its driver's tracebacks, above the one line that says the disk is full.

Outside the objective, while Optuna asks for a trial and tells its result, the command's signals
are only recorded (:func:`~optuna_boxcox._system._stop.deferred`): a KeyboardInterrupt there left
the trial RUNNING. A signal recorded while a trial was asked for is raised when its objective
starts; one recorded while a trial was told, once it is written (:func:`stop_when_asked`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import optuna
from optuna.trial import TrialState

from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._system import _stop
from optuna_boxcox.storage import storage_failure


class TrialInterrupted(BaseException):
    """Ctrl-C (or a signal handled like it) while a trial of ``study.optimize`` was scored."""


class TrialStorageFailed(BaseException):
    """A read or write of the study's storage failed while a trial of ``study.optimize`` was
    scored (a full disk, a lock held too long): ``error``, the driver's error. Optuna would log
    the trial as failed with every traceback of it before raising it again."""

    def __init__(self, error: Exception) -> None:
        super().__init__(error)
        self.error = error


def resumable(objective: Callable[[Any], Any], *, put_back: bool) -> Callable[[Any], Any]:
    """``objective``, whose interrupted trial is left for the next run: WAITING with the
    parameters it drew when ``put_back``, else RUNNING (a plan sampler re-runs it). A trial
    stopped by a failed read or write of the storage is left so too, and the run stops with
    :class:`TrialStorageFailed` (the run resumes once the storage works again)."""

    def run(trial: optuna.Trial) -> Any:
        try:
            with _stop.deferred(False):  # a signal inside the objective stops it at once
                _stop.check()  # one recorded while Optuna asked for this trial
                return objective(trial)
        except KeyboardInterrupt:
            _leave(trial, put_back)
            raise TrialInterrupted from None
        except Exception as error:
            if storage_failure(error) is None:
                raise
            _leave(trial, put_back)
            raise TrialStorageFailed(error) from None

    return run


def _leave(trial: optuna.Trial, put_back: bool) -> None:
    if put_back:
        try:
            trial.storage.set_trial_state_values(trial_id_of(trial), TrialState.WAITING)
        except Exception:
            pass  # the trial stays RUNNING: stopping matters more


def stop_when_asked(study: optuna.Study, _trial: optuna.trial.FrozenTrial) -> None:
    """A callback of ``study.optimize``: a signal recorded while the trial was told stops the loop
    now that it is written, before another trial is asked for."""
    if _stop.requested():
        study.stop()
