"""The bulk writer's pieces: the runner's encoder, and SQLite checkpoints left to another process."""

from __future__ import annotations

import datetime
import sqlite3
import threading
import time

import numpy as np
import optuna
import pytest
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import optimize
from optuna_boxcox._optuna import _write as _write_module
from optuna_boxcox._optuna import rdb_backend
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._optuna._encode import FloatTrialEncoder
from optuna_boxcox._optuna._encode import encode_trials
from optuna_boxcox._optuna._write import TrialRecord
from optuna_boxcox._optuna._write import TrialRows
from optuna_boxcox._optuna._write import checkpoint
from optuna_boxcox._optuna._write import take_over_writes
from optuna_boxcox._optuna._write import write_encoded
from optuna_boxcox._optuna._write import write_prepared
from optuna_boxcox._optuna._write import write_trials
from optuna_boxcox._runner import _writers
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import open_storage

NAMES = ["mean radius", "it's", "λ_2"]
DISTRIBUTIONS = {
    name: optuna.distributions.FloatDistribution(low, high)
    for name, low, high in zip(NAMES, (-10.0, -12.5, -3.25), (10.0, 7.75, 13.0))
}


def some_trials(n, seed=0):
    rng = np.random.default_rng(seed)
    start = datetime.datetime(2026, 11, 23, 12, 0, 0, 123456)
    for i in range(n):
        values = rng.uniform(-3, 3, len(NAMES))
        yield (
            values,
            float(rng.choice([0.5, 1.0, -np.inf, np.inf, 0.123456789])),
            {
                "epoch": i // 7,
                "direction": int(rng.integers(3)),
                "phase": "grid",
                "improved": bool(i % 2),
            },
            {"optuna_boxcox:owner": "host:1:2", "optuna_boxcox:position": i},
            start,
            start + datetime.timedelta(seconds=i),
        )


def test_the_runners_encoder_encodes_exactly_what_encode_trials_does():
    encoder = FloatTrialEncoder(DISTRIBUTIONS, "optuna_boxcox:position")
    for values, value, user_attrs, system_attrs, started, finished in some_trials(40):
        record = TrialRecord(
            params=dict(zip(NAMES, map(float, values))),
            distributions=DISTRIBUTIONS,
            value=value,
            user_attrs=user_attrs,
            system_attrs=system_attrs,
            datetime_start=started,
            datetime_complete=finished,
        )
        (expected,) = encode_trials([record], "optuna_boxcox:position")
        assert (
            encoder(values.tolist(), value, user_attrs, system_attrs, started, finished)
            == expected
        )


def test_the_encoder_refuses_parameters_that_are_not_floats():
    with pytest.raises(TypeError, match="FloatDistribution"):
        FloatTrialEncoder({"k": optuna.distributions.IntDistribution(1, 5)})


def wal_frames(path):
    """(frames in the write-ahead log, frames of it already copied into the database file)."""
    with sqlite3.connect(path) as connection:
        _busy, log, copied = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return log, copied


def test_a_writer_that_defers_checkpoints_leaves_them_to_checkpoint(tmp_path):
    url = f"sqlite:///{tmp_path / 'w.db'}"
    storage = open_storage(url)
    study = optuna.create_study(storage=storage, study_name="s", direction="maximize")
    take_over_writes(storage, defer_checkpoints=True)  # as the runner's writing worker does
    with rdb_backend(storage).engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
    # 60 λ a trial, as on sonar: 600 trials are about 1,500 pages.
    distributions = {
        f"x{j}": optuna.distributions.FloatDistribution(-10.0, 10.0) for j in range(60)
    }
    encoder = FloatTrialEncoder(distributions, "optuna_boxcox:position")
    trials = [
        encoder(np.resize(v, 60).tolist(), x, u, s, a, b) for v, x, u, s, a, b in some_trials(600)
    ]
    last = -1
    for first in range(0, len(trials), 100):
        last = write_encoded(study, trials[first : first + 100], after_trial_id=last).last_trial_id
    checkpoint(storage)
    log, copied = wal_frames(tmp_path / "w.db")
    # The writer never checkpointed: SQLite's default would have, after 1000 pages, and the next
    # transaction would have started the log afresh.
    assert log > 1400
    assert log == copied  # checkpoint copied everything committed into the database file
    loaded = optuna.load_study(study_name="s", storage=url)
    assert len(loaded.trials) == 600
    assert loaded.trials[599].params == dict(zip(distributions, trials[599].param_values))


def test_checkpoint_leaves_other_databases_alone(tmp_path):
    assert checkpoint(optuna.storages.InMemoryStorage()) is False
    assert checkpoint(open_storage(str(tmp_path / "j.jsonl"))) is False


def test_a_checkpoint_that_fails_is_not_an_error_of_the_search(tmp_path):
    path = tmp_path / "gone" / "w.db"
    path.parent.mkdir()
    storage = open_storage(f"sqlite:///{path}")
    optuna.create_study(storage=storage, study_name="s")
    assert checkpoint(storage) is True
    rdb_backend(storage).engine.dispose()
    for leftover in path.parent.iterdir():
        leftover.unlink()
    path.parent.rmdir()  # SQLite cannot even create the file again
    assert checkpoint(storage) is False


def test_worker_processes_checkpoint_what_they_write_and_write_the_same_study(
    tmp_path, breast_cancer, monkeypatch
):
    # A small checkpoint interval, so that the search process checkpoints while the writer writes.
    monkeypatch.setattr(_writers, "CHECKPOINT_EVERY", 100)
    X, y = breast_cancer.data.iloc[:, :6], breast_cancer.target
    contents = []
    for n_jobs in (1, 2):
        sampler = make_sampler("iterative")
        path = tmp_path / f"jobs{n_jobs}.db"
        study = optuna.create_study(
            storage=open_storage(f"sqlite:///{path}"),
            study_name="s",
            direction="maximize",
            sampler=sampler,
        )
        optimize(study, BoxCoxObjective(X, y, GaussianNB()), n_jobs=n_jobs)
        log, copied = wal_frames(path)
        if n_jobs == 2:
            assert log == copied
        loaded = optuna.load_study(study_name="s", storage=f"sqlite:///{path}")
        contents.append(
            [
                (
                    t.number,
                    t.params,
                    t.value,
                    t.user_attrs,
                    t.system_attrs.get("optuna_boxcox:position"),
                )
                for t in loaded.trials
            ]
        )
    assert len(contents[0]) == 4 * 6 * 11
    assert contents[1] == contents[0]


def content(study):
    return [
        (t.number, t.state, t.params, t.value, t.user_attrs, t.system_attrs, t.distributions)
        for t in study.get_trials(deepcopy=False)
    ]


def test_prepared_trials_are_renumbered_when_other_writers_wrote_since(tmp_path):
    """Rows are built ahead with forecast trial ids and numbers; when trials of this study and of
    another one were written in between, the write renumbers them. The oracle: the same trials
    and interleaving written through Optuna's own ``create_new_trial`` into memory."""
    url = f"sqlite:///{tmp_path / 'r.db'}"
    storage = open_storage(url)
    study = optuna.create_study(storage=storage, study_name="s", direction="maximize")
    other = optuna.create_study(storage=storage, study_name="other")
    reference = optuna.create_study(direction="maximize")
    encoder = FloatTrialEncoder(DISTRIBUTIONS, "optuna_boxcox:position")
    records, encoded = [], []
    for values, value, user_attrs, system_attrs, started, finished in some_trials(30):
        records.append(
            TrialRecord(
                dict(zip(NAMES, map(float, values))),
                DISTRIBUTIONS,
                value,
                user_attrs,
                system_attrs,
                started,
                finished,
            )
        )
        encoded.append(
            encoder(values.tolist(), value, user_attrs, system_attrs, started, finished)
        )
    rows = TrialRows(study)
    batches = [rows(encoded[:10]), rows(encoded[10:20]), rows(encoded[20:])]
    intruder = optuna.trial.create_trial(value=0.25, user_attrs={"by": "someone else"})

    last = write_prepared(study, batches[0]).last_trial_id
    other.add_trial(intruder)  # later trial ids, same numbers
    study.add_trial(intruder)  # later trial ids and numbers
    last = write_prepared(study, batches[1], after_trial_id=last).last_trial_id
    last = write_prepared(study, batches[2], after_trial_id=last).last_trial_id

    write_trials(reference, records[:10])
    reference.add_trial(intruder)
    write_trials(reference, records[10:])
    loaded = optuna.load_study(study_name="s", storage=url)
    assert [t.number for t in loaded.trials] == list(range(31))
    assert content(loaded) == content(reference)
    # The writer's mark passes its own trials only: never past the trial another writer added,
    # so its later writes still check the positions that trial (and later ones) hold.
    assert last == trial_id_of(loaded.trials[9])


def test_a_prepared_batch_drops_the_positions_another_writer_took(tmp_path):
    url = f"sqlite:///{tmp_path / 'p.db'}"
    study = optuna.create_study(storage=open_storage(url), study_name="s", direction="maximize")
    encoder = FloatTrialEncoder(DISTRIBUTIONS, "optuna_boxcox:position")
    encoded = [encoder(v.tolist(), x, u, s, a, b) for v, x, u, s, a, b in some_trials(6)]
    rows = TrialRows(study)
    mine = rows(encoded)
    write_encoded(study, [encoded[1], encoded[4]])  # another writer finished positions 1 and 4
    write_prepared(study, mine)
    loaded = optuna.load_study(study_name="s", storage=url)
    assert [t.system_attrs["optuna_boxcox:position"] for t in loaded.trials] == [1, 4, 0, 2, 3, 5]
    assert [t.number for t in loaded.trials] == list(range(6))
    assert [t.params for t in loaded.trials[2:]] == [
        dict(zip(NAMES, encoded[i].param_values)) for i in (0, 2, 3, 5)
    ]


def test_a_batch_whose_positions_others_finished_is_dropped_without_the_write_lock(tmp_path):
    url = f"sqlite:///{tmp_path / 'p.db'}?timeout=1"  # a write that waits for the lock fails
    study = optuna.create_study(storage=open_storage(url), study_name="s", direction="maximize")
    encoder = FloatTrialEncoder(DISTRIBUTIONS, "optuna_boxcox:position")
    encoded = [encoder(v.tolist(), x, u, s, a, b) for v, x, u, s, a, b in some_trials(4)]
    mine = TrialRows(study)(encoded[1:3])
    write_encoded(study, encoded)  # another writer finished every position, these two too
    # A third process holds the write lock: a write that needed it would wait (and time out).
    holder = sqlite3.connect(tmp_path / "p.db", timeout=0)
    holder.execute("BEGIN IMMEDIATE")
    try:
        written = write_prepared(study, mine)
    finally:
        holder.rollback()
        holder.close()
    assert written.indices == [] and written.trial_ids == []
    loaded = optuna.load_study(study_name="s", storage=url)
    assert [t.system_attrs["optuna_boxcox:position"] for t in loaded.trials] == [0, 1, 2, 3]
    # One position still free: the write takes the lock, and drops only the finished one.
    rest = TrialRows(study)(
        [encoded[3], encoder([0.0, 0.0, 0.0], 0.25, {}, {"optuna_boxcox:position": 9}, *_times())]
    )
    assert write_prepared(study, rest).indices == [1]


def _times():
    start = datetime.datetime(2026, 11, 26, 1, 0, 0)
    return start, start + datetime.timedelta(seconds=1)


def _hold_study_lock_and_finish(url, study_id, positions, seconds, ready):
    """Another writer on PostgreSQL: takes the study's write lock, writes finished trials holding
    ``positions``, keeps the lock ``seconds`` and commits. ``ready`` is set once it holds it."""
    import psycopg

    plain = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain) as connection:
        cursor = connection.cursor()
        cursor.execute(
            "UPDATE studies SET study_name = study_name WHERE study_id = %s", (study_id,)
        )
        (count,) = cursor.execute(
            "SELECT COUNT(*) FROM trials WHERE study_id = %s", (study_id,)
        ).fetchone()
        now = datetime.datetime.now()
        for k, position in enumerate(positions):
            (trial_id,) = cursor.execute(
                "INSERT INTO trials (number, study_id, state, datetime_start, datetime_complete)"
                " VALUES (%s, %s, 'COMPLETE', %s, %s) RETURNING trial_id",
                (count + k, study_id, now, now),
            ).fetchone()
            cursor.execute(
                "INSERT INTO trial_system_attributes (trial_id, key, value_json) VALUES (%s, %s, %s)",
                (trial_id, "optuna_boxcox:position", str(position)),
            )
        ready.set()
        time.sleep(seconds)
        connection.commit()


@pytest.mark.parametrize(
    ("theirs", "waits"),
    [([1, 2], 4), ([1], 4), ([1, 2], 0)],
    ids=["all-theirs", "one-left", "queues-after-waiting"],
)
def test_on_postgresql_a_write_waits_for_the_writer_holding_the_lock_then_reads_again(
    postgres_url, monkeypatch, theirs, waits
):
    # Sixteen workers that end a plan together each hold its last trials: each queued for the
    # lock in turn only to find them written. Now a write that finds the lock taken waits for
    # its holder to end and reads again, taking the lock only for what is still unwritten.
    study = optuna.create_study(
        storage=open_storage(postgres_url), study_name="s", direction="maximize"
    )
    encoder = FloatTrialEncoder(DISTRIBUTIONS, "optuna_boxcox:position")
    encoded = [encoder(v.tolist(), x, u, s, a, b) for v, x, u, s, a, b in some_trials(3)]
    mine = TrialRows(study)(encoded[1:3])
    locked = []
    original = _write_module._write_locked
    # A write that found the lock taken this many times queues for it (as every write did).
    monkeypatch.setattr(_write_module, "WAITS_FOR_WRITERS", waits)
    monkeypatch.setattr(
        _write_module,
        "_write_locked",
        lambda *args: locked.append(time.perf_counter()) or original(*args),
    )
    ready = threading.Event()
    holder = threading.Thread(
        target=_hold_study_lock_and_finish,
        args=(postgres_url, study._study_id, theirs, 1.0, ready),
    )
    holder.start()
    try:
        assert ready.wait(30)
        tick = time.perf_counter()
        written = write_prepared(study, mine)
        waited = time.perf_counter() - tick
    finally:
        holder.join()
    assert waited > 0.5  # it waited for the holder ...
    loaded = optuna.load_study(study_name="s", storage=postgres_url)
    positions = [t.system_attrs["optuna_boxcox:position"] for t in loaded.trials]
    if waits == 0:
        # ... in the queue: its turn came once the holder was done, and it wrote nothing.
        assert len(locked) == 1 and written.indices == [] and written.unsettled == []
        assert positions == [1, 2]
    elif theirs == [1, 2]:
        # ... and, finding its trials written, took no lock and wrote nothing.
        assert locked == [] and written.indices == []
        assert positions == [1, 2]
    else:
        # ... and wrote, under the lock, only the position still unwritten.
        assert len(locked) == 1 and written.indices == [1]
        assert positions == [1, 2] and [t.number for t in loaded.trials] == [0, 1]


def test_only_the_trials_a_running_trial_held_are_left_to_settle(tmp_path):
    # A run settles at its end the positions its writes dropped: those another worker still
    # runs. Those a finished trial holds are done for good, and reading them all back again was
    # most of a shared run's last tenth of a second (16 workers, ~300 positions each).
    from optuna_boxcox._optuna import _claims

    url = f"sqlite:///{tmp_path / 'p.db'}"
    study = optuna.create_study(storage=open_storage(url), study_name="s", direction="maximize")
    key = "optuna_boxcox:position"
    encoder = FloatTrialEncoder(DISTRIBUTIONS, key)
    encoded = [encoder(v.tolist(), x, u, s, a, b) for v, x, u, s, a, b in some_trials(4)]
    mine = TrialRows(study)(encoded)
    write_encoded(study, [encoded[1]])  # finished by another writer
    _claims.claim(  # running on another machine
        study,
        [_claims.Claim(2, dict(zip(NAMES, encoded[2].param_values)), {})],
        DISTRIBUTIONS,
        position_key=key,
        owner="elsewhere:1:1",
    )
    written = write_prepared(study, mine)
    assert written.indices == [0, 3]
    assert written.unsettled == [2]
    # Every position finished elsewhere (read without the lock): nothing to settle.
    assert write_prepared(study, TrialRows(study)([encoded[0], encoded[1]])).unsettled == []


def test_trials_written_in_bulk_read_back_as_the_ones_optuna_writes(url):
    # On PostgreSQL the rows go in by COPY: every kind of value and text (tabs, newlines,
    # backslashes, quotes, non-ASCII) must come back as Optuna's own writes of the same trials.
    start = datetime.datetime(2026, 11, 26, 4, 0, 0, 654321)
    odd = "tab\there\nnew line \\ back\\slash 'quote' \"double\" λ ∞ \\N"
    records = [
        TrialRecord(
            params=dict(zip(NAMES, (0.5 * k, -1.25, 3.0))),
            distributions=DISTRIBUTIONS,
            value=value,
            user_attrs={"text": odd, "k": k, "list": [odd, None, 1.5]},
            system_attrs={"optuna_boxcox:position": k, odd: odd},
            datetime_start=start,
            datetime_complete=start + datetime.timedelta(seconds=k),
            state=state,
            intermediate_values=intermediate,
        )
        for k, (value, state, intermediate) in enumerate(
            8  # enough rows for every table to go by COPY
            * [
                (0.75, optuna.trial.TrialState.COMPLETE, None),
                (float("inf"), optuna.trial.TrialState.COMPLETE, {0: 0.5}),
                (float("-inf"), optuna.trial.TrialState.COMPLETE, None),
                (
                    0.25,
                    optuna.trial.TrialState.PRUNED,
                    {0: float("nan"), 1: float("-inf"), 2: 0.25},
                ),
                (float("nan"), optuna.trial.TrialState.PRUNED, {3: float("nan")}),
            ]
        )
    ]
    storage = optuna.storages.RDBStorage(url)
    bulk = optuna.create_study(storage=open_storage(url), study_name="bulk")
    written = write_trials(bulk, records, position_key="optuna_boxcox:position")
    assert len(written.indices) == len(records)
    theirs = optuna.create_study(storage=storage, study_name="optuna")
    for record in records:
        storage.create_new_trial(theirs._study_id, template_trial=record.frozen())

    def read(name):
        return [
            (
                t.number,
                t.state,
                t.value,
                t.params,
                t.user_attrs,
                t.system_attrs,
                t.datetime_start,
                t.datetime_complete,
                {step: repr(v) for step, v in t.intermediate_values.items()},
            )
            for t in optuna.load_study(study_name=name, storage=storage).trials
        ]

    assert read("bulk") == read("optuna")
    assert len(read("bulk")) == 40


def test_lists_that_piled_up_are_handed_to_the_writer_together_up_to_a_bound():
    # Batches of points all known go by without scoring, so nothing hands their trials over
    # meanwhile: the lists that piled up go as one write (one transaction), never more than
    # max_rows at once, in order.
    from optuna_boxcox._runner._batched import Handover

    class Writer:
        def __init__(self):
            self.lists = []

        def put(self, rows):
            self.lists.append(list(rows))

    for max_rows, expected in [
        (250, [250]),
        (200, [200, 50]),
        (150, [100, 150]),
        (50, [100, 100, 50]),
    ]:
        writer = Writer()
        handover = Handover(writer, at_least=1, max_rows=max_rows)
        handover.ready = [list(range(0, 100)), list(range(100, 200)), list(range(200, 250))]
        assert handover.rows == 250
        handover()
        assert [len(rows) for rows in writer.lists] == expected
        assert [row for rows in writer.lists for row in rows] == list(range(250))
        assert handover.ready == [] and handover.rows == 0
