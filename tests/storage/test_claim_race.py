"""Claims and counts on RDB storages: a trial-by-trial claim racing a bulk write not yet committed
(PostgreSQL, row locks), and the count of an interrupted search."""

from __future__ import annotations

from collections import Counter
import threading

import optuna
from optuna.trial import TrialState
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import optimize
from optuna_boxcox._optuna import _write
from optuna_boxcox._optuna._write import TrialRecord
from optuna_boxcox._optuna._write import write_trials
from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.storage import open_storage

POSITION = "boxcox:position"


def _waiting_on_a_lock(url: str) -> bool:
    import psycopg
    from sqlalchemy.engine import make_url

    parts = make_url(url)
    with psycopg.connect(
        host=parts.host, port=parts.port, user=parts.username, dbname=parts.database
    ) as connection:
        (count,) = connection.execute(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
        ).fetchone()
    return count > 0


@pytest.mark.timeout(300)
def test_a_worker_claim_waits_for_a_bulk_write_in_flight_instead_of_doubling_its_position(
    postgres_url, monkeypatch
):
    X, y = load_breast_cancer(return_X_y=True)
    objective = BoxCoxObjective(X[:, :2], y, GaussianNB())
    storage = open_storage(postgres_url)
    study = optuna.create_study(
        storage=storage,
        study_name="race",
        direction="maximize",
        sampler=CoordinateGridSampler.from_preset("iterative", seed=0),
    )
    optimize(study, objective, n_trials=1, batch=False)  # position 0, and the space registered
    first = study.trials[0]

    # A trial-by-trial worker has opened its trial (Optuna takes the study's row lock for that)
    # and is about to claim the next free position...
    created, claim = threading.Event(), threading.Event()
    before_trial = study.sampler.before_trial

    def paused(study_, trial):
        created.set()
        claim.wait(120)
        before_trial(study_, trial)

    study.sampler.before_trial = paused
    worker = threading.Thread(
        target=optimize, args=(study, objective), kwargs=dict(n_trials=1, batch=False)
    )
    worker.start()
    assert created.wait(120)

    # The batched worker's bulk write of position 1, held open after its rows are inserted.
    inserted, commit = threading.Event(), threading.Event()
    real_written = _write.Written

    def held_open(*args):
        inserted.set()
        commit.wait(120)
        return real_written(*args)

    monkeypatch.setattr(_write, "Written", held_open)
    record = TrialRecord(
        params=first.params,
        distributions=first.distributions,
        value=first.value,
        user_attrs={},
        system_attrs={POSITION: 1},
        datetime_start=first.datetime_start,
        datetime_complete=first.datetime_complete,
    )
    bulk_study = optuna.load_study(study_name="race", storage=open_storage(postgres_url))
    bulk = threading.Thread(
        target=write_trials, args=(bulk_study, [record]), kwargs={"position_key": POSITION}
    )
    bulk.start()
    assert inserted.wait(120)
    monkeypatch.setattr(_write, "Written", real_written)  # the worker's own writes

    # ... when a batched worker's bulk write of that position is in flight.
    claim.set()
    while worker.is_alive() and not _waiting_on_a_lock(postgres_url):
        worker.join(0.05)
    commit.set()
    bulk.join(120)
    worker.join(120)
    assert not bulk.is_alive() and not worker.is_alive()

    trials = optuna.load_study(study_name="race", storage=postgres_url).trials
    held = Counter(t.system_attrs.get(POSITION) for t in trials if t.state != TrialState.FAIL)
    assert held == {0: 1, 1: 1, 2: 1}, held


def test_an_interrupted_search_counts_its_trials_without_reading_them_back(tmp_path, monkeypatch):
    # The count after a SIGTERM read every trial back (a minute and 2.6 GB for 143 trials of
    # 50,000 λ), since the storage's cache no longer holds a wide run's trials.
    from optuna_boxcox._optuna import count_trials

    study = optuna.create_study(storage=open_storage(f"sqlite:///{tmp_path / 's.db'}"))
    for k in range(3):
        study.add_trial(optuna.trial.create_trial(value=float(k)))
    study.add_trial(optuna.trial.create_trial(state=TrialState.FAIL))

    def read_back(*args, **kwargs):
        raise AssertionError("the trials were read back")

    monkeypatch.setattr(optuna.Study, "get_trials", read_back)
    assert count_trials(study, (TrialState.COMPLETE, TrialState.PRUNED)) == 3
    assert count_trials(study) == 4
