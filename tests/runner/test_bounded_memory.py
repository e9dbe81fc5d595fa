"""A batched run's memory on wide data: the trials it keeps and the writer's backlog are bounded."""

from __future__ import annotations

import datetime
import threading

import numpy as np
import optuna
from optuna.trial import TrialState
from sklearn.datasets import load_breast_cancer
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import optimize
from optuna_boxcox._optuna._write import Written
from optuna_boxcox._runner import _writers
from optuna_boxcox._runner._trials import STORED_BYTES_PER_PARAM
from optuna_boxcox._runner._trials import STORED_BYTES_PER_TRIAL
from optuna_boxcox._runner._trials import Row
from optuna_boxcox._runner._trials import RunStats
from optuna_boxcox._runner._trials import RunTrials
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import open_storage

WIDTH = 30  # breast cancer's features


def _study_and_run(tmp_path):
    X, y = load_breast_cancer(return_X_y=True)
    study = optuna.create_study(
        storage=open_storage(f"sqlite:///{tmp_path / 's.db'}"),
        sampler=make_sampler("iterative"),
        direction="maximize",
    )
    optimize(study, BoxCoxObjective(X, y, GaussianNB()), n_trials=1)
    return study, study.sampler.start_run(study)


def _rows(first: int, n: int) -> list[Row]:
    now = datetime.datetime.now()
    return [
        Row(np.ones(WIDTH), 0.5, {}, first + i, now, now, TrialState.COMPLETE, None)
        for i in range(n)
    ]


def test_written_trials_are_kept_for_the_cache_only_within_their_share_of_memory(tmp_path):
    # A trial of 10,000 λ kept as a FrozenTrial is about a megabyte: a wide search kept them all.
    study, run = _study_and_run(tmp_path)
    per_trial = STORED_BYTES_PER_PARAM * WIDTH + STORED_BYTES_PER_TRIAL
    for callbacks in (False, True):
        trials = RunTrials(study, run, keep_bytes=10 * per_trial, callbacks=callbacks)
        for k in range(5):
            trials.handed(_rows(10 * k, 10))
            ids = list(range(100 + 10 * k, 110 + 10 * k))
            trials.written(Written(list(range(10)), ids, ids, ids[-1]))
            assert len(trials.stored) <= 10 + 10 * callbacks
            if callbacks:
                assert len(trials.stored_since_last_call()) == 10, "none let go before its call"
        assert not trials.whole, "the cache is not handed a part of the trials as all of them"


def test_the_background_writers_backlog_is_bounded_in_values(tmp_path, monkeypatch):
    # An interrupted wide search had minutes of trials to write before it could stop.
    study, run = _study_and_run(tmp_path)
    trials = RunTrials(study, run)
    monkeypatch.setattr(_writers, "BACKLOG_VALUES", 20 * WIDTH)
    release = threading.Event()

    def slow_write(study_, prepared, *, after_trial_id):
        release.wait(60)
        n = len(prepared.trials)
        return Written(list(range(n)), list(range(n)), list(range(n)), after_trial_id)

    monkeypatch.setattr(_writers, "write_prepared", slow_write)
    writer = _writers.ThreadWriter(study, -1, RunStats(), trials, background=True)
    writer.put(_rows(0, 15))  # an empty backlog takes any list
    second = threading.Thread(target=writer.put, args=(_rows(15, 15),))
    second.start()
    second.join(1.0)
    assert second.is_alive(), "a list beyond the backlog's bound waits for the writer"
    release.set()
    second.join(60)
    writer.close()
    assert not second.is_alive() and trials.unwritten() == 0
