"""Writing to RDB storages in few transactions: finished trials in bulk, a running trial's
parameters and attributes together, and SQLite's checkpoints.

Optuna's public API creates a trial and then commits each parameter, value and attribute on its own
(with 60 λ that is ~70 commits per trial). A batch of finished trials can instead be written in one
transaction: :func:`write_trials` (from :class:`TrialRecord` objects), or, split between two processes,
:func:`encode_trials` / :class:`FloatTrialEncoder` and :class:`TrialRows` in one and
:func:`write_prepared` in the other (which may leave SQLite's checkpoints to the first:
:func:`take_over_writes`, :func:`checkpoint`). The statements are written against Optuna's RDB
schema (unchanged since its v3.2.0.a migration) on the DB-API cursor inside SQLAlchemy's
transaction; every other storage (in-memory, journal) gets one ``create_new_trial`` with a
template trial per trial, which is already a single write there.
"""

from __future__ import annotations

import datetime
import json
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

import optuna
from optuna.distributions import distribution_to_json
from optuna.trial import TrialState

from optuna_boxcox._optuna import UpdateFinishedTrialError
from optuna_boxcox._optuna import rdb_backend
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import to_stored_datetime
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._optuna._capabilities import capabilities_of
from optuna_boxcox._optuna._claims import held_positions
from optuna_boxcox._optuna._encode import EncodedTrial
from optuna_boxcox._optuna._encode import PreparedTrials
from optuna_boxcox._optuna._encode import TrialRecord
from optuna_boxcox._optuna._encode import encode_trials
from optuna_boxcox._optuna._encode import whole_trial_attrs_insert
from optuna_boxcox._optuna._sql import Sql as _Sql
from optuna_boxcox._optuna._sql import insert_statement as _insert_statement

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.distributions import BaseDistribution
    from optuna.storages import BaseStorage
    from optuna.storages import RDBStorage
    from optuna.trial import FrozenTrial


class Written(NamedTuple):
    """What a bulk write wrote: for each trial kept (``indices`` into the batch, in order), its id
    and number; ``last_trial_id`` is what the next write of the same writer takes as its
    ``after_trial_id`` (past its own trials, but never past another writer's). ``unsettled``:
    the trials dropped whose position a running trial held (another worker may yet fail to
    finish it), or None where the write does not tell them from those a finished trial holds."""

    indices: list[int]
    trial_ids: list[int]
    numbers: list[int]
    last_trial_id: int
    unsettled: list[int] | None = None


def take_over_writes(storage: Any, *, defer_checkpoints: bool = False) -> None:
    """Prepare a forked process to write to ``storage``'s database: it opens connections of its
    own, leaving SQLAlchemy's pooled ones to the parent they belong to.

    With ``defer_checkpoints``, its commits to a SQLite file in WAL mode leave copying the log
    into the database file (a checkpoint) to another process calling :func:`checkpoint`.
    """
    engine = rdb_backend(storage).engine
    engine.dispose(close=False)
    if defer_checkpoints and engine.dialect.name == "sqlite":
        # SQLAlchemy is imported where a database is used, in this whole module: `import optuna`
        # does not load it and in-memory or journal storages never need it (docs/performance_log.md).
        from sqlalchemy import event

        def no_auto_checkpoint(connection: Any, _record: Any) -> None:
            connection.execute("PRAGMA wal_autocheckpoint=0")

        event.listen(engine, "connect", no_auto_checkpoint)


def checkpoint(storage: Any) -> bool:
    """Copy what is committed in a SQLite file's write-ahead log into the database file, without
    waiting for (or blocking) a writer; nothing for other databases.

    Returns whether it could. A checkpoint only saves later work (SQLite checkpoints when the last
    connection closes, or on the next writer's commit), so a database error is not raised here:
    the file stays as consistent as its log, and the next write reports what is wrong.
    """
    from sqlalchemy.exc import SQLAlchemyError

    backend = rdb_backend(storage)
    if backend is None or backend.engine.dialect.name != "sqlite":
        return False
    try:
        with backend.engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
    except SQLAlchemyError:
        return False
    return True


# -- the trial-by-trial path: claims, running trials ---------------------------------------------
# Claiming a plan position through Optuna's public API costs a read of every trial the cache has
# not seen finish, just to find the few that hold the same position, and one commit per attribute
# or parameter; on a database server each is a round trip.


def has_rival(
    storage: BaseStorage, study_id: int, trial_id: int, key: str, position: int, min_trial_id: int
) -> bool:
    """Whether a trial of the study other than ``trial_id``, from ``min_trial_id`` on, holds
    ``position`` under system attribute ``key`` and did not fail.

    Optuna stores attribute values as ``json.dumps(value)``, so an int position has one spelling.
    The lower bound keeps the query on the (trial_id, key) index instead of every trial's attributes.
    """
    backend = rdb_backend(storage)
    assert backend is not None
    with backend.engine.connect() as connection:
        rows = _Sql(connection)(
            "SELECT a.trial_id FROM trial_system_attributes a JOIN trials t"
            " ON a.trial_id = t.trial_id WHERE a.trial_id >= ? AND a.trial_id != ? AND a.key = ?"
            " AND a.value_json = ? AND t.study_id = ? AND t.state != ? LIMIT 1",
            (min_trial_id, trial_id, key, json.dumps(position), study_id, TrialState.FAIL.name),
        )
    return bool(rows)


def set_trial_user_attrs(storage: BaseStorage, trial_id: int, attrs: Mapping[str, Any]) -> None:
    """Optuna's ``set_trial_user_attr`` for several keys in one transaction (one commit): the trial
    must still be running, and each key is inserted or, if it exists, updated."""
    backend = rdb_backend(storage)
    assert backend is not None
    with backend.engine.begin() as connection:
        sql = _Sql(connection)
        _check_updatable(sql, trial_id)
        for key, value in attrs.items():
            text = json.dumps(value)
            sql(
                "UPDATE trial_user_attributes SET value_json = ? WHERE trial_id = ? AND key = ?",
                (text, trial_id, key),
            )
            if sql.cursor.rowcount == 0:
                sql(
                    "INSERT INTO trial_user_attributes (trial_id, key, value_json) VALUES (?, ?, ?)",
                    (trial_id, key, text),
                )


def write_running_trial_params(
    storage: RDBStorage, trial_id: int, params: Mapping[str, tuple[float, BaseDistribution]]
) -> None:
    """A running trial's parameters (name → (internal value, distribution)) in one transaction.

    A name the trial already has makes the insert fail; then Optuna's own setter writes them one at
    a time, which keeps the stored values. A trial another process finished is left alone (Optuna
    refuses writes to it, as it will refuse this process's next write).
    """
    from sqlalchemy.exc import IntegrityError

    duplicate = (IntegrityError, storage.engine.dialect.dbapi.IntegrityError)
    try:
        with storage.engine.begin() as connection:
            sql = _Sql(connection)
            if not _check_updatable(sql, trial_id, raise_finished=False):
                return
            sql.insert(
                "trial_params",
                ("trial_id", "param_name", "param_value", "distribution_json"),
                [
                    (trial_id, name, value, distribution_to_json(distribution))
                    for name, (value, distribution) in params.items()
                ],
            )
    except duplicate:
        for name, (value, distribution) in params.items():
            try:
                storage.set_trial_param(trial_id, name, value, distribution)
            except UpdateFinishedTrialError:
                return
            except duplicate:
                continue  # the name is there already: the first value stays, as for Optuna


def _check_updatable(sql: _Sql, trial_id: int, *, raise_finished: bool = True) -> bool:
    """Whether the trial is still running (KeyError if there is no such trial); a finished one
    raises Optuna's UpdateFinishedTrialError unless ``raise_finished`` is False."""
    rows = sql("SELECT number, state FROM trials WHERE trial_id = ?", (trial_id,))
    if not rows:
        raise KeyError(f"No trial with trial id {trial_id} exists.")
    number, state = rows[0]
    if TrialState[state].is_finished():
        if raise_finished:
            raise UpdateFinishedTrialError(
                f"Trial#{number} has already finished and can not be updated."
            )
        return False
    return True


# -- finished trials in bulk ------------------------------------------------------------------
def write_trials(
    study: optuna.Study,
    records: Sequence[TrialRecord],
    *,
    position_key: str | None = None,
    after_trial_id: int = -1,
) -> Written:
    """Append finished trials to the study in one transaction (RDB), numbered in order.

    With ``position_key``, records whose position (that system attribute) another writer has
    already taken since ``after_trial_id`` — by a trial that did not fail — are dropped instead of
    written twice. Returns which records were written, with their trial ids and numbers.
    """
    storage = storage_of(study)
    if capabilities_of(storage).bulk_write:
        return write_encoded(
            study, encode_trials(records, position_key), after_trial_id=after_trial_id
        )
    study_id = study_id_of(study)
    keep = list(range(len(records)))
    others = [
        t
        for t in storage.get_all_trials(study_id, deepcopy=False)
        if trial_id_of(t) > after_trial_id
    ]
    if position_key is not None:
        taken = {t.system_attrs.get(position_key) for t in others if t.state != TrialState.FAIL}
        keep = [i for i in keep if records[i].system_attrs.get(position_key) not in taken]
    if _appends_in_memory(storage):
        trial_ids = _append_in_memory(storage, study_id, [records[i].frozen() for i in keep])
    else:
        trial_ids = [
            storage.create_new_trial(study_id, template_trial=records[i].frozen()) for i in keep
        ]
    numbers = [storage.get_trial(trial_id).number for trial_id in trial_ids]
    # As the bulk writer: the mark passes this writer's own trials, never another writer's.
    return Written(
        keep,
        trial_ids,
        numbers,
        max([after_trial_id, *trial_ids]) if not others else after_trial_id,
    )


def _appends_in_memory(storage: Any) -> bool:
    """Whether ``storage`` is Optuna's own in-memory storage, whose bookkeeping
    :func:`_append_in_memory` repeats (the same on Optuna 4.2 and 5; tested on both)."""
    return type(storage) is optuna.storages.InMemoryStorage and all(
        hasattr(storage, name)
        for name in ("_lock", "_studies", "_max_trial_id", "_trial_id_to_study_id_and_number")
    )


def _append_in_memory(storage: Any, study_id: int, trials: list[FrozenTrial]) -> list[int]:
    """Optuna's ``InMemoryStorage.create_new_trial(study_id, template)`` for each trial, without
    its deep copy of the template: these trials were just built for the study and nothing else
    holds them, and the copies took most of a default fit's search (0.9 s of 1.6 on saheart)."""
    with storage._lock:
        storage._check_study_id(study_id)
        kept = storage._studies[study_id].trials
        trial_ids = []
        for trial in trials:
            storage._max_trial_id += 1
            trial_id = storage._max_trial_id
            trial.number = len(kept)
            trial._trial_id = trial_id
            storage._trial_id_to_study_id_and_number[trial_id] = (study_id, trial.number)
            kept.append(trial)
            storage._update_cache(trial_id, study_id)
            trial_ids.append(trial_id)
    return trial_ids


class TrialRows:
    """Turns encoded trials of one study into :class:`PreparedTrials`, forecasting their trial ids
    and numbers: the writes of one writer follow each other, so each batch starts where the last
    one ended unless another process wrote meanwhile (then :func:`write_prepared` renumbers)."""

    def __init__(self, study: optuna.Study) -> None:
        storage = rdb_backend(storage_of(study))
        if storage is None or not capabilities_of(storage_of(study)).bulk_write:
            raise TypeError("TrialRows needs an RDB storage of a supported Optuna version")
        self.study_id = study_id_of(study)
        dialect = storage.engine.dialect
        self.sqlite = dialect.name == "sqlite"
        self.mark = _Sql.mark_of(dialect.paramstyle)
        with storage.engine.connect() as connection:
            sql = _Sql(connection)
            ((latest,),) = sql("SELECT MAX(trial_id) FROM trials")
            ((count,),) = sql("SELECT COUNT(*) FROM trials WHERE study_id = ?", (self.study_id,))
        self.next_trial_id = (latest or 0) + 1
        self.next_number = count
        self._moments: dict[datetime.datetime, Any] = {}
        self._generic = {  # one row per execution, for what has no whole-trial statement
            table: _insert_statement(table, columns, self.mark)
            for table, columns in (
                ("trial_values", ("trial_id", "objective", "value", "value_type")),
                ("trial_params", ("trial_id", "param_name", "param_value", "distribution_json")),
                ("trial_user_attributes", ("trial_id", "key", "value_json")),
                ("trial_system_attributes", ("trial_id", "key", "value_json")),
                (
                    "trial_intermediate_values",
                    ("trial_id", "step", "intermediate_value", "intermediate_value_type"),
                ),
            )
        }

    def __call__(self, trials: Sequence[EncodedTrial]) -> PreparedTrials:
        first_id, first_number = self.next_trial_id, self.next_number
        self.next_trial_id += len(trials)
        self.next_number += len(trials)
        moment, study_id = self._moment, self.study_id
        rows: dict[str, list[tuple]] = {}  # statement → rows, in the order statements first appear

        def add(statement: str, row: tuple) -> None:
            if (table := rows.get(statement)) is None:
                table = rows[statement] = []
            table.append(row)

        generic = self._generic
        for trial_id, t in enumerate(trials, first_id):
            if t.value is not None:
                add(generic["trial_values"], (trial_id, 0, *t.value))
        for trial_id, t in enumerate(trials, first_id):
            if t.param_values is not None and self.sqlite and t.encoding.sqlite_insert is not None:
                add(t.encoding.sqlite_insert, (trial_id, *t.param_values))
            elif t.param_values is not None:
                json_of, statement = t.encoding.json, generic["trial_params"]
                for name, v in zip(t.encoding.names, t.param_values):
                    add(statement, (trial_id, name, v, json_of[name]))
            else:
                for row in t.param_rows:
                    add(generic["trial_params"], (trial_id, *row))
        for trial_id, t in enumerate(trials, first_id):
            for row in t.intermediate:
                add(generic["trial_intermediate_values"], (trial_id, *row))
        for table in ("trial_user_attributes", "trial_system_attributes"):
            for trial_id, t in enumerate(trials, first_id):
                pairs = t.user_attrs if table == "trial_user_attributes" else t.system_attrs
                if not pairs:
                    continue
                whole = (
                    whole_trial_attrs_insert(table, tuple(k for k, _ in pairs))
                    if self.sqlite
                    else None
                )
                if whole is not None:
                    add(whole, (trial_id, *(v for _, v in pairs)))
                else:
                    for pair in pairs:
                        add(generic[table], (trial_id, *pair))
        return PreparedTrials(
            first_trial_id=first_id,
            first_number=first_number,
            positions=[t.position for t in trials],
            trials=[
                (
                    first_number + i,
                    study_id,
                    t.state,
                    moment(t.datetime_start),
                    moment(t.datetime_complete),
                )
                for i, t in enumerate(trials)
            ],
            tables=list(rows.items()),
        )

    def _moment(self, moment: datetime.datetime) -> Any:
        # The trials of a batch share their start and end: convert each moment once.
        converted = self._moments.get(moment)
        if converted is None:
            if len(self._moments) > 1000:
                self._moments.clear()
            stored = to_stored_datetime(moment)
            converted = self._moments[moment] = (
                stored.strftime("%Y-%m-%d %H:%M:%S.%f") if self.sqlite else stored
            )
        return converted


def write_encoded(
    study: optuna.Study, trials: Sequence[EncodedTrial], *, after_trial_id: int = -1
) -> Written:
    """:func:`write_trials` for trials :func:`encode_trials` encoded (RDB storages only).

    Trials encoded with a position that another writer has already taken since
    ``after_trial_id`` (by a trial that did not fail) are dropped.
    """
    return write_prepared(study, TrialRows(study)(trials), after_trial_id=after_trial_id)


def _finished_elsewhere(
    storage: Any, study_id: int, positions: Sequence[Any], after_trial_id: int
) -> bool:
    """Whether trials after ``after_trial_id`` that finished (they hold their positions for
    good) hold every one of ``positions`` ((key, value JSON) each) — read without the write
    lock. False when a trial to write has no position."""
    if not positions or any(p is None for p in positions):
        return False
    wanted: dict[str, set[str]] = {}
    for key, value_json in positions:
        wanted.setdefault(key, set()).add(value_json)
    with storage.engine.connect() as connection:
        sql = _Sql(connection)
        return all(
            values
            <= held_positions(
                sql,
                study_id,
                key,
                positions=[json.loads(v) for v in values],
                after_trial_id=after_trial_id,
                finished=True,
            )
            for key, values in wanted.items()
        )


def write_prepared(
    study: optuna.Study, prepared: PreparedTrials, *, after_trial_id: int = -1
) -> Written:
    """Write trials :class:`TrialRows` prepared, in one transaction; as :func:`write_encoded`."""
    storage = rdb_backend(storage_of(study))
    if storage is None or not capabilities_of(storage_of(study)).bulk_write:
        raise TypeError("write_prepared needs an RDB storage of a supported Optuna version")
    study_id = study_id_of(study)
    for attempt in range(WAITS_FOR_WRITERS + 1):
        if _finished_elsewhere(storage, study_id, prepared.positions, after_trial_id):
            # Other workers finished every one of these positions: nothing to write, and no
            # need to queue for the lock to find that out (workers that end a shared plan
            # together each hold the same last trials).
            return Written([], [], [], after_trial_id, [])
        with storage.engine.begin() as connection:
            sql = _Sql(connection)
            # The study's write lock first, so counting trials and inserting them cannot
            # interleave with another writer's trial creation: numbers stay unique and
            # consecutive. Where another writer holds it, this one does not queue for it (each
            # in the queue would take it in turn only to find its trials written): it waits
            # for that writer to end and reads again what is left to write.
            # (Trials without a position are written whatever others wrote: they queue; and
            # so does a write that found the lock taken this many times.)
            wait = (
                not prepared.positions
                or None in prepared.positions
                or attempt == WAITS_FOR_WRITERS
            )
            if sql.lock_study(study_id, wait=wait):
                return _write_locked(sql, study_id, prepared, after_trial_id)
        with storage.engine.begin() as connection:
            _Sql(connection).await_study_lock(study_id)
    raise AssertionError("unreachable: the last attempt waits for the lock")


#: Times a bulk write waits for another writer and reads again before it queues for the lock.
WAITS_FOR_WRITERS = 4


def _write_locked(
    sql: _Sql, study_id: int, prepared: PreparedTrials, after_trial_id: int
) -> Written:
    """:func:`write_prepared`'s write, in the transaction that holds the study's write lock."""
    taken: set[tuple[str, str]] = set()
    finished: set[tuple[str, str]] = set()  # of those, the ones a finished trial holds
    for key in {p[0] for p in prepared.positions if p is not None}:
        done: set[str] = set()
        held = held_positions(sql, study_id, key, after_trial_id=after_trial_id, done=done)
        taken |= {(key, value_json) for value_json in held}
        finished |= {(key, value_json) for value_json in done}
    keep = [i for i, p in enumerate(prepared.positions) if p not in taken] if taken else None
    if keep is not None and len(keep) == len(prepared.positions):
        keep = None
    # Trials another writer added since after_trial_id were checked for this write's positions
    # only: the mark moves past them only while there are none (one writer alone), else a
    # later write would miss the positions they hold.
    first_number, before, foreign = sql.numbering(study_id, after_trial_id=after_trial_id)
    # The trials dropped whose position a running trial holds (its worker may yet fail).
    unsettled = [i for i, p in enumerate(prepared.positions) if p in taken and p not in finished]
    if keep is not None and not keep:
        return Written([], [], [], after_trial_id, unsettled)
    trials = prepared.trials if keep is None else [prepared.trials[i] for i in keep]
    if first_number != prepared.first_number or keep is not None:
        trials = [(first_number + k, *row[1:]) for k, row in enumerate(trials)]
    sql.insert(
        "trials",
        ("number", "study_id", "state", "datetime_start", "datetime_complete"),
        trials,
    )
    # Under the study's write lock our rows are the only new ones of this study.
    new = sql(
        "SELECT trial_id, number FROM trials WHERE trial_id > ? AND study_id = ? ORDER BY number",
        (before or 0, study_id),
    )
    trial_ids = [row[0] for row in new]
    if len(trial_ids) != len(trials):
        raise RuntimeError(f"bulk write expected {len(trials)} new trials, found {len(trial_ids)}")
    # Ids are increasing: they are the forecast ones when the first and last are.
    first = prepared.first_trial_id
    forecast = keep is None and trial_ids[0] == first and trial_ids[-1] == first + len(trials) - 1
    renumber = (
        None
        if forecast
        else {
            first + i: trial_id
            for i, trial_id in zip(range(len(trials)) if keep is None else keep, trial_ids)
        }
    )
    for statement, rows in prepared.tables:
        if renumber is not None:
            rows = [(renumber[row[0]], *row[1:]) for row in rows if row[0] in renumber]
        if rows:
            sql.executemany(statement, rows)
    return Written(
        list(range(len(prepared.trials))) if keep is None else keep,
        trial_ids,
        [row[1] for row in new],
        after_trial_id if foreign else max(trial_ids),
        unsettled,
    )
