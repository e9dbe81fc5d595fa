"""Writing to RDB storages in fewer transactions — the one module that uses Optuna's table models.

Here: finished trials in bulk (:func:`write_trials`; or :func:`encode_trials` /
:class:`FloatTrialEncoder` and :class:`TrialRows` in one process and :func:`write_prepared` in
another, which may leave SQLite's checkpoints to the first: :func:`take_over_writes`,
:func:`checkpoint`), and the
trial-by-trial shortcuts of the plan samplers' claim (:func:`has_rival`,
:func:`set_trial_user_attrs`) and of ``open_storage``'s parameter batching
(:func:`write_running_trial_params`).

Optuna's public API creates a trial and then commits each parameter, value and attribute on its own
(with 60 λ that is ~70 commits per trial). A batch of finished trials can instead be written in one
transaction. For RDB storages (SQLite, PostgreSQL) that needs Optuna's table models, so all of it is
isolated here and checked against the Optuna versions in :data:`SUPPORTED_OPTUNA`; every other
storage (in-memory, journal) gets one ``create_new_trial(template_trial=...)`` per trial, which is
already a single write there.
"""

from __future__ import annotations

from dataclasses import dataclass
import datetime
import json
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

import optuna
from optuna.distributions import FloatDistribution
from optuna.distributions import distribution_to_json
from optuna.storages import RDBStorage
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
from packaging.version import Version

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.distributions import BaseDistribution
    from optuna.storages import BaseStorage

#: Optuna releases whose RDB schema the bulk writer was checked against (tests run on the newest).
SUPPORTED_OPTUNA = (Version("4.2"), Version("6.0"))


@dataclass
class TrialRecord:
    """One finished trial to write."""

    params: Mapping[str, float]
    distributions: Mapping[str, BaseDistribution]
    value: float
    user_attrs: Mapping[str, Any]
    system_attrs: Mapping[str, Any]
    datetime_start: datetime.datetime
    datetime_complete: datetime.datetime
    state: TrialState = TrialState.COMPLETE

    def frozen(self) -> FrozenTrial:
        return FrozenTrial(
            number=-1,
            state=self.state,
            value=self.value if self.state == TrialState.COMPLETE else None,
            values=None,
            datetime_start=self.datetime_start,
            datetime_complete=self.datetime_complete,
            params=dict(self.params),
            distributions=dict(self.distributions),
            user_attrs=dict(self.user_attrs),
            system_attrs=dict(self.system_attrs),
            intermediate_values={},
            trial_id=-1,
        )


def rdb_backend(storage: Any) -> RDBStorage | None:
    """The RDBStorage behind a study's storage (Optuna wraps it in a cache, and
    :func:`~optuna_boxcox.storage.open_storage` may add its own wrapper), or None."""
    for _ in range(4):
        if isinstance(storage, RDBStorage):
            return storage
        storage = getattr(storage, "_backend", None)
    return None


def bulk_supported(storage: Any) -> bool:
    version = Version(optuna.__version__)
    return (
        rdb_backend(storage) is not None and SUPPORTED_OPTUNA[0] <= version < SUPPORTED_OPTUNA[1]
    )


def take_over_writes(storage: Any, *, defer_checkpoints: bool = False) -> None:
    """Prepare a forked process to write to ``storage``'s database: it opens connections of its
    own, leaving SQLAlchemy's pooled ones to the parent they belong to.

    With ``defer_checkpoints``, its commits to a SQLite file in WAL mode leave copying the log
    into the database file (a checkpoint) to another process calling :func:`checkpoint`.
    """
    engine = rdb_backend(storage).engine
    engine.dispose(close=False)
    if defer_checkpoints and engine.dialect.name == "sqlite":
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


# -- the plan samplers' claim path and running trials (trial by trial, on RDB storages) ---------
# Claiming a plan position through Optuna's public API costs a read of every trial the cache has
# not seen finish, just to find the few that hold the same position, and one commit per attribute
# or parameter; on a database server each is a round trip. These use Optuna's table models like
# the bulk writer, and callers use them only where :func:`bulk_supported` says so.


def has_rival(
    storage: BaseStorage, study_id: int, trial_id: int, key: str, position: int, min_trial_id: int
) -> bool:
    """Whether a trial of the study other than ``trial_id``, from ``min_trial_id`` on, holds
    ``position`` under system attribute ``key`` and did not fail.

    Optuna stores attribute values as ``json.dumps(value)``, so an int position has one spelling.
    The lower bound keeps the query on the (trial_id, key) index instead of every trial's attributes.
    """
    from optuna.storages._rdb import models
    from sqlalchemy import select

    attr, trial = models.TrialSystemAttributeModel, models.TrialModel
    query = (
        select(attr.trial_id)
        .join(trial, trial.trial_id == attr.trial_id)
        .where(attr.trial_id >= min_trial_id)
        .where(attr.trial_id != trial_id)
        .where(attr.key == key)
        .where(attr.value_json == json.dumps(position))
        .where(trial.study_id == study_id)
        .where(trial.state != TrialState.FAIL)
        .limit(1)
    )
    backend = rdb_backend(storage)
    assert backend is not None
    with backend.engine.connect() as connection:
        return connection.execute(query).first() is not None


def set_trial_user_attrs(storage: BaseStorage, trial_id: int, attrs: Mapping[str, Any]) -> None:
    """Optuna's ``set_trial_user_attr`` for several keys in one transaction (one commit)."""
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    backend = rdb_backend(storage)
    assert backend is not None
    # Same checks and upsert as Optuna's own setter (the trial must still be running), and the same
    # tolerance of a concurrent insert of the same key.
    with _create_scoped_session(backend.scoped_session, True) as session:
        for key, value in attrs.items():
            backend._set_trial_attr_without_commit(
                session, models.TrialUserAttributeModel, trial_id, key, value
            )


def write_running_trial_params(
    storage: RDBStorage, trial_id: int, params: Mapping[str, tuple[float, BaseDistribution]]
) -> None:
    """A running trial's parameters (name → (internal value, distribution)) in one transaction.

    A name the trial already has makes the insert fail; then Optuna's own setter writes them one at
    a time, which keeps the stored values. A trial another process finished is left alone (Optuna
    refuses writes to it, as it will refuse this process's next write).
    """
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session
    from sqlalchemy.exc import IntegrityError

    try:
        with _create_scoped_session(storage.scoped_session) as session:
            trial = models.TrialModel.find_or_raise_by_id(trial_id, session)
            storage.check_trial_is_updatable(trial_id, trial.state)
            session.add_all(
                models.TrialParamModel(
                    trial_id=trial_id,
                    param_name=name,
                    param_value=value,
                    distribution_json=distribution_to_json(distribution),
                )
                for name, (value, distribution) in params.items()
            )
    except IntegrityError:
        for name, (value, distribution) in params.items():
            storage._set_trial_param(trial_id, name, value, distribution, distribution)
    except UpdateFinishedTrialError:
        pass


def write_trials(
    study: optuna.Study,
    records: Sequence[TrialRecord],
    *,
    position_key: str | None = None,
    after_trial_id: int = -1,
) -> int:
    """Append finished trials to the study in one transaction (RDB), numbered in order.

    With ``position_key``, records whose position (that system attribute) another writer has
    already taken since ``after_trial_id`` — by a trial that did not fail — are dropped instead of
    written twice. Returns the largest trial id in the study afterwards.
    """
    if bulk_supported(study._storage):
        return write_encoded(
            study, encode_trials(records, position_key), after_trial_id=after_trial_id
        )
    storage = study._storage
    if position_key is not None:
        taken = {
            t.system_attrs.get(position_key)
            for t in storage.get_all_trials(study._study_id, deepcopy=False)
            if t._trial_id > after_trial_id and t.state != TrialState.FAIL
        }
        records = [r for r in records if r.system_attrs.get(position_key) not in taken]
    last = after_trial_id
    for record in records:
        last = storage.create_new_trial(study._study_id, template_trial=record.frozen())
    return last


def _utc(moment: datetime.datetime) -> datetime.datetime:
    # RDBStorage keeps naive UTC; FrozenTrial datetimes are naive local time.
    return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)


class _Sql:
    """Raw statements on the driver's cursor, in the driver's parameter style.

    SQLAlchemy's per-row parameter processing costs several times the inserts themselves here, so
    the whole batch goes straight to the DB-API cursor inside SQLAlchemy's transaction. The
    column encodings are the ones Optuna's models give SQLAlchemy: enums by member name, and on
    SQLite datetimes as SQLAlchemy's ``YYYY-MM-DD HH:MM:SS.ffffff`` text.
    """

    def __init__(self, connection: Any) -> None:
        self.mark = self.mark_of(connection.dialect.paramstyle)
        self.cursor = connection.connection.cursor()

    @staticmethod
    def mark_of(style: str) -> str:
        if style not in ("qmark", "format", "pyformat"):
            raise NotImplementedError(f"bulk writes do not support the {style!r} parameter style")
        return "?" if style == "qmark" else "%s"

    def __call__(self, statement: str, parameters: tuple = ()) -> list[tuple]:
        self.cursor.execute(statement.replace("?", self.mark), parameters)
        return self.cursor.fetchall() if self.cursor.description else []

    def insert(self, table: str, columns: Sequence[str], rows: list[tuple]) -> None:
        if rows:
            self.cursor.executemany(_insert_statement(table, columns, self.mark), rows)


def _insert_statement(table: str, columns: Sequence[str], mark: str) -> str:
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(mark for _ in columns)})"
    )


class EncodedTrial(NamedTuple):
    """One finished trial as the bulk writer's statements take it (see :func:`encode_trials`)."""

    position: (
        tuple[str, str] | None
    )  # (key, JSON) of the position attribute; None: not deduplicated
    state: str
    datetime_start: datetime.datetime
    datetime_complete: datetime.datetime
    value: tuple[float, str] | None  # (stored value, value type) of a complete trial
    encoding: _EncodedDistributions
    param_values: (
        tuple[float, ...] | None
    )  # in ``encoding.names`` order, when all are floats there
    param_rows: (
        list[tuple[str, float, str]] | None
    )  # else (name, internal value, distribution JSON)
    user_attrs: list[tuple[str, str]]  # (key, JSON)
    system_attrs: list[tuple[str, str]]


def encode_trials(
    records: Sequence[TrialRecord], position_key: str | None = None
) -> list[EncodedTrial]:
    """Everything :func:`write_encoded` needs, computed without a database connection.

    Encoding is most of the Python work of a bulk write; a process with time to spare can do it
    while another one writes (the batched runner's main process and its writing worker).
    """
    from optuna.storages._rdb.models import TrialValueModel

    encoded = []
    for record in records:
        value = None
        if record.state == TrialState.COMPLETE:
            stored, kind = TrialValueModel.value_to_stored_repr(float(record.value))
            value = (stored, kind.name)
        encoding = _encoded_distributions(record.distributions)
        param_values = param_rows = None
        if encoding.floats and list(record.params) == encoding.names:
            param_values = tuple(map(float, record.params.values()))
        else:
            param_rows = [
                (
                    name,
                    float(v)
                    if encoding.floats
                    else record.distributions[name].to_internal_repr(v),
                    encoding.json[name],
                )
                for name, v in record.params.items()
            ]
        encoded.append(
            EncodedTrial(
                position=None
                if position_key is None
                else (position_key, _json(record.system_attrs.get(position_key))),
                state=record.state.name,
                datetime_start=record.datetime_start,
                datetime_complete=record.datetime_complete,
                value=value,
                encoding=encoding,
                param_values=param_values,
                param_rows=param_rows,
                user_attrs=[(k, _json(v)) for k, v in record.user_attrs.items()],
                system_attrs=[(k, _json(v)) for k, v in record.system_attrs.items()],
            )
        )
    return encoded


class FloatTrialEncoder:
    """Encodes finished trials whose parameters are the floats of one all-float distributions
    mapping, straight from their values: :func:`encode_trials` without building a
    :class:`TrialRecord` and a parameter dict per trial (the batched runner's hot path).
    """

    def __init__(
        self, distributions: Mapping[str, FloatDistribution], position_key: str | None = None
    ) -> None:
        self.encoding = _encoded_distributions(distributions)
        if not self.encoding.floats:
            raise TypeError("FloatTrialEncoder needs FloatDistribution parameters only")
        self.position_key = position_key
        from optuna.storages._rdb.models import TrialValueModel

        self._stored = TrialValueModel.value_to_stored_repr

    def __call__(
        self,
        values: Sequence[float],
        value: float,
        user_attrs: Mapping[str, Any],
        system_attrs: Mapping[str, Any],
        datetime_start: datetime.datetime,
        datetime_complete: datetime.datetime,
    ) -> EncodedTrial:
        """One complete trial; ``values`` in the order of the distributions mapping."""
        stored, kind = self._stored(float(value))
        key = self.position_key
        return EncodedTrial(
            position=None if key is None else (key, _json(system_attrs.get(key))),
            state=TrialState.COMPLETE.name,
            datetime_start=datetime_start,
            datetime_complete=datetime_complete,
            value=(stored, kind.name),
            encoding=self.encoding,
            param_values=tuple(map(float, values)),
            param_rows=None,
            user_attrs=[(k, _json(v)) for k, v in user_attrs.items()],
            system_attrs=[(k, _json(v)) for k, v in system_attrs.items()],
        )


class PreparedTrials(NamedTuple):
    """Encoded trials as the rows of each table, for trial ids and numbers counted on from
    ``first_trial_id`` and ``first_number`` (see :class:`TrialRows`).

    Building the rows is most of the Python work of a bulk write; one process can do it while
    another one writes. :func:`write_prepared` renumbers them if the database has moved on since.
    """

    first_trial_id: int
    first_number: int
    positions: list[tuple[str, str] | None]  # each trial's (key, JSON) position, or None
    trials: list[tuple]  # (number, study_id, state, datetime_start, datetime_complete)
    tables: list[
        tuple[str, list[tuple]]
    ]  # (statement, rows), each row's first column the trial id


class TrialRows:
    """Turns encoded trials of one study into :class:`PreparedTrials`, forecasting their trial ids
    and numbers: the writes of one writer follow each other, so each batch starts where the last
    one ended unless another process wrote meanwhile (then :func:`write_prepared` renumbers)."""

    def __init__(self, study: optuna.Study) -> None:
        storage = rdb_backend(study._storage)
        if storage is None or not bulk_supported(study._storage):
            raise TypeError("TrialRows needs an RDB storage of a supported Optuna version")
        self.study_id = study._study_id
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
        for table in ("trial_user_attributes", "trial_system_attributes"):
            for trial_id, t in enumerate(trials, first_id):
                pairs = t.user_attrs if table == "trial_user_attributes" else t.system_attrs
                if not pairs:
                    continue
                whole = (
                    _whole_trial_attrs_insert(table, tuple(k for k, _ in pairs))
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
            utc = _utc(moment)
            converted = self._moments[moment] = (
                utc.strftime("%Y-%m-%d %H:%M:%S.%f") if self.sqlite else utc
            )
        return converted


def write_encoded(
    study: optuna.Study, trials: Sequence[EncodedTrial], *, after_trial_id: int = -1
) -> int:
    """:func:`write_trials` for trials :func:`encode_trials` encoded (RDB storages only).

    Trials encoded with a position that another writer has already taken since
    ``after_trial_id`` (by a trial that did not fail) are dropped. Returns the largest trial id
    in the study afterwards.
    """
    return write_prepared(study, TrialRows(study)(trials), after_trial_id=after_trial_id)


def write_prepared(
    study: optuna.Study, prepared: PreparedTrials, *, after_trial_id: int = -1
) -> int:
    """Write trials :class:`TrialRows` prepared, in one transaction; as :func:`write_encoded`."""
    storage = rdb_backend(study._storage)
    if storage is None or not bulk_supported(study._storage):
        raise TypeError("write_prepared needs an RDB storage of a supported Optuna version")
    study_id = study._study_id
    with storage.engine.begin() as connection:
        sql = _Sql(connection)
        # A no-op write on the study row takes the write lock first (row lock on PostgreSQL, the
        # database lock on SQLite), so counting trials and inserting them cannot interleave with
        # another writer's trial creation: numbers stay unique and consecutive.
        sql("UPDATE studies SET study_name = study_name WHERE study_id = ?", (study_id,))
        taken = {
            (key, row[0])
            for key in {p[0] for p in prepared.positions if p is not None}
            for row in sql(
                "SELECT a.value_json FROM trial_system_attributes a JOIN trials t ON a.trial_id = t.trial_id"
                " WHERE t.study_id = ? AND t.trial_id > ? AND t.state != ? AND a.key = ?",
                (study_id, after_trial_id, TrialState.FAIL.name, key),
            )
        }
        keep = [i for i, p in enumerate(prepared.positions) if p not in taken] if taken else None
        if keep is not None and len(keep) == len(prepared.positions):
            keep = None
        if keep is not None and not keep:
            (latest,) = sql("SELECT MAX(trial_id) FROM trials WHERE study_id = ?", (study_id,))[0]
            return latest if latest is not None else after_trial_id
        ((first_number,),) = sql("SELECT COUNT(*) FROM trials WHERE study_id = ?", (study_id,))
        ((before,),) = sql("SELECT MAX(trial_id) FROM trials")
        trials = prepared.trials if keep is None else [prepared.trials[i] for i in keep]
        if first_number != prepared.first_number or keep is not None:
            trials = [(first_number + k, *row[1:]) for k, row in enumerate(trials)]
        sql.insert(
            "trials",
            ("number", "study_id", "state", "datetime_start", "datetime_complete"),
            trials,
        )
        # Under the study's write lock our rows are the only new ones of this study.
        trial_ids = [
            row[0]
            for row in sql(
                "SELECT trial_id FROM trials WHERE trial_id > ? AND study_id = ? ORDER BY number",
                (before or 0, study_id),
            )
        ]
        if len(trial_ids) != len(trials):
            raise RuntimeError(
                f"bulk write expected {len(trials)} new trials, found {len(trial_ids)}"
            )
        # Ids are increasing: they are the forecast ones when the first and last are.
        first = prepared.first_trial_id
        forecast = (
            keep is None and trial_ids[0] == first and trial_ids[-1] == first + len(trials) - 1
        )
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
                sql.cursor.executemany(statement, rows)
        return max(trial_ids)


@dataclass
class _EncodedDistributions:
    names: list[str]
    json: dict[str, str]
    floats: bool  # all FloatDistribution: the internal representation is the float itself
    # SQLite: one statement inserting all of a trial's parameter rows, binding only the trial id
    # and the values (None where that does not apply).
    sqlite_insert: str | None


def _sqlite_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _whole_trial_insert(names: list[str], json_of: Mapping[str, str]) -> str | None:
    """``INSERT INTO trial_params … VALUES (?1, 'λ_0', ?2, '{…}'), (?1, 'λ_1', ?3, '{…}'), …``.

    SQLite spends most of a bulk write of parameters on executing one row at a time; with the names
    and distributions (the same for every trial) in the statement, one execution writes a trial.
    The stored text is identical to binding them.
    """
    texts = [*names, *json_of.values()]
    if not names or len(names) + 1 > 999 or any("\x00" in t for t in texts):  # SQLite's limits
        return None
    rows = ", ".join(
        f"(?1, {_sqlite_literal(name)}, ?{j + 2}, {_sqlite_literal(json_of[name])})"
        for j, name in enumerate(names)
    )
    return f"INSERT INTO trial_params (trial_id, param_name, param_value, distribution_json) VALUES {rows}"


def _whole_trial_attrs_insert(table: str, keys: tuple[str, ...]) -> str | None:
    """``INSERT INTO <table> … VALUES (?1, 'epoch', ?2), (?1, 'phase', ?3), …`` for one trial's
    attributes (SQLite; the keys are the same for many trials), as :func:`_whole_trial_insert`."""
    statement = _ATTRS_INSERTS.get((table, keys))
    if statement is None:
        if not keys or len(keys) + 1 > 999 or any("\x00" in k for k in keys):
            return None
        if len(_ATTRS_INSERTS) > 256:
            _ATTRS_INSERTS.clear()
        rows = ", ".join(f"(?1, {_sqlite_literal(key)}, ?{j + 2})" for j, key in enumerate(keys))
        statement = _ATTRS_INSERTS[(table, keys)] = (
            f"INSERT INTO {table} (trial_id, key, value_json) VALUES {rows}"
        )
    return statement


_ATTRS_INSERTS: dict[tuple[str, tuple[str, ...]], str] = {}


# Records of one run share one distributions mapping; its encoding is kept (with the mapping, so
# that its id stays unique) for the next batches.
_ENCODED: dict[int, tuple[Mapping[str, BaseDistribution], _EncodedDistributions]] = {}


def _encoded_distributions(distributions: Mapping[str, BaseDistribution]) -> _EncodedDistributions:
    entry = _ENCODED.get(id(distributions))
    if entry is None or entry[0] is not distributions:
        if len(_ENCODED) >= 16:
            _ENCODED.clear()
        names = list(distributions)
        json_of = {name: distribution_to_json(d) for name, d in distributions.items()}
        floats = all(type(d) is FloatDistribution for d in distributions.values())
        encoded = _EncodedDistributions(
            names=names,
            json=json_of,
            floats=floats,
            sqlite_insert=_whole_trial_insert(names, json_of) if floats else None,
        )
        entry = _ENCODED[id(distributions)] = (distributions, encoded)
    return entry[1]


_JSON_SCALARS = (bool, int, float, str, type(None))


def _json(value: Any) -> str:
    """json.dumps, remembered for the small scalars that fill the attribute tables."""
    if type(value) in _JSON_SCALARS:
        key = (type(value), value)
        cached = _JSON_MEMO.get(key)
        if cached is None:
            if len(_JSON_MEMO) > 10_000:
                _JSON_MEMO.clear()
            cached = _JSON_MEMO[key] = json.dumps(value)
        return cached
    return json.dumps(value)


_JSON_MEMO: dict[tuple[type, Any], str] = {}
