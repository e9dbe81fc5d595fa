"""open_storage's RDB storages write a trial's parameters together: nothing lost, reordered or
hidden from this process, and distributions still refused when they are suggested."""

from __future__ import annotations

import optuna
from optuna.distributions import FloatDistribution
import pytest
from shared import disk_full_after

from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox.storage import open_storage

NAMES = [f"lambda_{i}" for i in range(6)]


def objective(trial: optuna.Trial) -> float:
    return sum(trial.suggest_float(n, -5.0, 5.0) for n in NAMES) + trial.suggest_int("k", 0, 3)


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'params.db'}"


def test_another_process_reads_every_parameter_of_finished_trials_in_suggestion_order(sqlite_url):
    study = optuna.create_study(
        storage=open_storage(sqlite_url),
        study_name="s",
        sampler=optuna.samplers.RandomSampler(seed=1),
    )
    study.optimize(objective, n_trials=8)
    failed = study.ask()
    failed.suggest_float(NAMES[0], -5.0, 5.0)
    study.tell(failed, state=optuna.trial.TrialState.FAIL)
    mine = study.get_trials(deepcopy=False)

    theirs = optuna.load_study(study_name="s", storage=open_storage(sqlite_url)).get_trials(
        deepcopy=False
    )
    assert [(t.state, t.params, list(t.params)) for t in theirs] == [
        (t.state, t.params, list(t.params)) for t in mine
    ]
    assert [list(t.params) for t in theirs[:8]] == [[*NAMES, "k"]] * 8
    assert list(theirs[8].params) == [NAMES[0]]


def test_a_running_trial_shows_its_parameters_to_its_own_process(sqlite_url):
    storage = open_storage(sqlite_url)
    study = optuna.create_study(storage=storage, study_name="s")
    study.optimize(objective, n_trials=1)  # every name known: later suggestions are held back
    trial = study.ask()
    values = {n: trial.suggest_float(n, -5.0, 5.0) for n in NAMES[:3]}
    assert storage.get_trial(trial_id_of(trial)).params == values
    assert study.get_trials(deepcopy=False)[-1].params == values


def test_a_parameter_suggested_with_another_kind_of_distribution_is_refused_at_once(sqlite_url):
    study = optuna.create_study(storage=open_storage(sqlite_url), study_name="s")
    study.optimize(objective, n_trials=2)
    trial = study.ask()
    with pytest.raises(ValueError, match="different distribution kind"):
        trial.suggest_categorical(NAMES[0], ["a", "b"])


# A name the study knows is held back both times; a new one is written at once, then held back.
@pytest.mark.parametrize("name", [NAMES[0], "new"])
def test_a_name_set_twice_on_one_trial_keeps_its_first_value_as_optuna_does(sqlite_url, name):
    storage = open_storage(sqlite_url)
    study = optuna.create_study(storage=storage, study_name="s")
    study.optimize(objective, n_trials=1)
    trial_id = trial_id_of(study.ask())
    dist = FloatDistribution(-5.0, 5.0)
    storage.set_trial_param(trial_id, name, 1.0, dist)
    storage.set_trial_param(trial_id, name, 2.0, dist)
    storage.set_trial_param(trial_id, NAMES[1], 3.0, dist)
    storage.set_trial_state_values(trial_id, optuna.trial.TrialState.COMPLETE, [0.0])
    reread = open_storage(sqlite_url).get_trial(trial_id)
    assert reread.params == {name: 1.0, NAMES[1]: 3.0}


def test_a_schema_another_worker_created_meanwhile_is_retried_not_reported(monkeypatch, tmp_path):
    # PostgreSQL reports the race as "type ... already exists" (SQLSTATE 42710), a ProgrammingError.
    from sqlalchemy.exc import ProgrammingError

    from optuna_boxcox import storage as storage_module

    class Duplicate(Exception):
        sqlstate = "42710"

    real = storage_module.RDBStorage
    calls = []

    def flaky(sqlite_url, **kwargs):
        calls.append(sqlite_url)
        if len(calls) == 1:
            raise ProgrammingError(
                "CREATE TYPE studydirection", {}, Duplicate('type "studydirection" already exists')
            )
        return real(sqlite_url, **kwargs)

    monkeypatch.setattr(storage_module, "RDBStorage", flaky)
    monkeypatch.setattr(storage_module.time, "sleep", lambda seconds: None)
    storage_module.open_storage(f"sqlite:///{tmp_path / 'x.db'}")
    assert len(calls) == 2


def test_other_programming_errors_are_reported_at_once(monkeypatch):
    from sqlalchemy.exc import ProgrammingError

    from optuna_boxcox import storage as storage_module

    class Denied(Exception):
        sqlstate = "42501"

    def denied(sqlite_url, **kwargs):
        raise ProgrammingError(
            "CREATE TABLE studies", {}, Denied("permission denied for schema public")
        )

    monkeypatch.setattr(storage_module, "RDBStorage", denied)
    with pytest.raises(storage_module.StorageError, match="permission denied"):
        storage_module.open_storage("postgresql+psycopg://user:secret@127.0.0.1/db")


def test_a_new_trial_records_its_owner_process_when_it_is_created(sqlite_url):
    # A process killed right after creating a trial must still leave a trial the plan samplers can
    # recognise as a dead process's (and fail, so its position is re-run).
    from optuna_boxcox._system._process import OWNER_KEY
    from optuna_boxcox._system._process import process_identity as _process_identity

    storage = open_storage(sqlite_url)
    study = optuna.create_study(storage=storage, study_name="owner")
    trial_id = storage.create_new_trial(study_id_of(study))
    other = optuna.load_study(study_name="owner", storage=open_storage(sqlite_url))
    (created,) = other.get_trials(deepcopy=False)
    assert trial_id_of(created) == trial_id
    assert created.state == optuna.trial.TrialState.RUNNING
    assert created.system_attrs[OWNER_KEY] == _process_identity()


def test_a_sqlite_file_another_process_is_writing_is_waited_for_not_reported(tmp_path):
    # Two `compare --n-jobs 2` workers opening a new database together: switching it to
    # write-ahead logging while the other writes made SQLite answer "database is locked" at once.
    import sqlite3
    import threading

    path = tmp_path / "s.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    release = threading.Timer(0.5, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        open_storage(f"sqlite:///{path}")
    finally:
        release.join()
        holder.close()
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_study_names_and_attributes_read_and_written_in_few_statements_are_optunas(url):
    # Every worker reads and writes several study attributes as it starts and stops (the
    # experiment's record, its announcement): they go through one or two statements each,
    # and Optuna's own storage on the same database is the oracle.
    ours = open_storage(url)
    plain = optuna.storages.RDBStorage(url)
    study = optuna.create_study(storage=ours, study_name="attrs")
    study_id = study_id_of(study)
    assert ours.get_study_user_attrs(study_id) == {} == ours.get_study_system_attrs(study_id)
    values = {"a": 1, "b": [1.5, "λ"], "c": {"nested": None}, "d": "text"}
    for key, value in values.items():
        study.set_user_attr(key, value)
        ours.set_study_system_attr(study_id, key, {"system": value})
    study.set_user_attr("a", 2)  # rewritten
    plain.set_study_user_attr(study_id, "e", True)  # written by Optuna itself
    expected = {**values, "a": 2, "e": True}
    assert ours.get_study_user_attrs(study_id) == expected == plain.get_study_user_attrs(study_id)
    assert (
        ours.get_study_system_attrs(study_id)
        == {k: {"system": v} for k, v in values.items()}
        == plain.get_study_system_attrs(study_id)
    )
    other = optuna.create_study(storage=ours, study_name="other")
    assert ours.get_study_user_attrs(study_id_of(other)) == {}  # nothing leaks between studies
    assert open_storage(url).get_study_name_from_id(study_id) == "attrs"  # a fresh cache
    assert plain.get_study_name_from_id(study_id) == "attrs"
    missing = study_id + 100
    for call in (
        lambda: open_storage(url).get_study_name_from_id(missing),
        lambda: open_storage(url).get_all_trials(missing),
        lambda: ours.get_study_user_attrs(missing),
        lambda: ours.get_study_system_attrs(missing),
        lambda: ours.set_study_user_attr(missing, "a", 1),
        lambda: ours.set_study_system_attr(missing, "a", 1),
    ):
        with pytest.raises(KeyError, match="No study"):
            call()


@pytest.mark.parametrize("upsert", [True, False], ids=["upsert", "update-then-insert"])
def test_a_study_attribute_another_process_creates_meanwhile_is_updated(
    postgres_url, monkeypatch, upsert
):
    # Two workers announcing a new key at once: the second one's insert finds the first one's
    # row and updates it instead of failing (one statement on PostgreSQL; the update-then-insert
    # of other databases retries).
    from optuna_boxcox._optuna import _sql
    from optuna_boxcox._optuna import _study_attrs

    if not upsert:
        monkeypatch.setattr(_study_attrs, "UPSERT_DIALECTS", ())

    ours = open_storage(postgres_url)
    plain = optuna.storages.RDBStorage(postgres_url)
    study_id = study_id_of(optuna.create_study(storage=ours, study_name="race"))
    original = _sql.Sql.__call__
    raced = []

    def call(self, statement, parameters=()):
        if statement.startswith("INSERT INTO study_system_attributes") and not raced:
            raced.append(True)
            plain.set_study_system_attr(study_id, "worker:x", "theirs")
        return original(self, statement, parameters)

    monkeypatch.setattr(_sql.Sql, "__call__", call)
    ours.set_study_system_attr(study_id, "worker:x", "mine")
    assert raced and plain.get_study_system_attrs(study_id) == {"worker:x": "mine"}


def test_finished_trials_written_to_memory_are_the_trials_optunas_own_path_writes():
    # write_trials appends to Optuna's InMemoryStorage without create_new_trial's deep copy of
    # each template (most of a default fit's search): the trials, their ids and numbers, and
    # the best trial must be those the public path makes, on every supported Optuna.
    import datetime

    from optuna_boxcox._optuna._encode import TrialRecord
    from optuna_boxcox._optuna._write import write_trials

    started = datetime.datetime(2026, 1, 1)
    records = [
        TrialRecord(
            params={"a": 0.5 * i, "b": -1.0},
            distributions={"a": FloatDistribution(-10, 10), "b": FloatDistribution(-10, 10)},
            value=float((i * 7) % 5),
            user_attrs={"epoch": i // 3, "phase": "sweep"},
            system_attrs={"optuna_boxcox:position": i},
            datetime_start=started,
            datetime_complete=started + datetime.timedelta(seconds=i),
        )
        for i in range(12)
    ]
    fast, public = (optuna.create_study(direction="maximize") for _ in range(2))
    first = optuna.trial.create_trial(value=0.25, params={}, distributions={})
    for study in (fast, public):
        study.add_trial(first)
    written = write_trials(fast, records[:5])
    write_trials(fast, records[5:])
    storage = public._storage
    for record in records:
        storage.create_new_trial(public._study_id, template_trial=record.frozen())
    assert written.trial_ids == [trial_id_of(t) for t in public.trials[1:6]]
    assert written.numbers == [1, 2, 3, 4, 5]
    assert fast.trials == public.trials
    assert [trial_id_of(t) for t in fast.trials] == [trial_id_of(t) for t in public.trials]
    assert fast.best_trial == public.best_trial
    # Each stored trial is its own: changing one's attributes leaves the others alone.
    fast.trials[3].user_attrs["epoch"] = 99
    assert fast.get_trials(deepcopy=False)[4].user_attrs["epoch"] == 1


# -- a full disk, as a library caller meets it ------------------------------------------------


@pytest.mark.parametrize("sampler", ["tpe", "iterative"])
def test_a_full_disk_under_optimize_raises_a_storage_error_that_says_so(
    sqlite_url, breast_cancer, monkeypatch, caplog, sampler
):
    from optuna.storages import RDBStorage
    from sklearn.naive_bayes import GaussianNB

    from optuna_boxcox import BoxCoxObjective
    from optuna_boxcox import make_sampler
    from optuna_boxcox import optimize
    from optuna_boxcox._runner import _writers
    from optuna_boxcox.storage import StorageError

    study = optuna.create_study(
        storage=open_storage(sqlite_url), direction="maximize", sampler=make_sampler(sampler)
    )
    objective = BoxCoxObjective(breast_cancer.data.iloc[:, :3], breast_cancer.target, GaussianNB())
    if sampler == "tpe":  # the disk fills inside the first trial, as it writes its parameters
        write = disk_full_after(RDBStorage.set_trial_param, after=1)
        monkeypatch.setattr(RDBStorage, "set_trial_param", write)
    else:  # the disk fills as the batched runner writes its trials
        for name in ("write_trials", "write_prepared"):
            monkeypatch.setattr(_writers, name, disk_full_after(getattr(_writers, name)))
    with pytest.raises(StorageError) as raised:
        optimize(study, objective, n_trials=30)
    message = str(raised.value)
    assert "is full" in message and "resume" in message and "params.db" in message, message
    assert "\n" not in message
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("optuna.")]
    assert not [m for m in logged if "failed" in m], logged
