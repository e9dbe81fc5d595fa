"""Writing many finished trials at once: one transaction per batch instead of one per parameter.

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

import optuna
from optuna.distributions import distribution_to_json
from optuna.storages import RDBStorage
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
from packaging.version import Version

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.distributions import BaseDistribution

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
    """The RDBStorage behind a study's storage (Optuna wraps it in a cache), or None."""
    backend = getattr(storage, "_backend", storage)
    return backend if isinstance(backend, RDBStorage) else None


def bulk_supported(storage: Any) -> bool:
    version = Version(optuna.__version__)
    return rdb_backend(storage) is not None and SUPPORTED_OPTUNA[0] <= version < SUPPORTED_OPTUNA[1]


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
        return _write_rdb(rdb_backend(study._storage), study._study_id, records, position_key, after_trial_id)
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


def _executemany(connection: Any, table: str, columns: Sequence[str], rows: list[tuple]) -> None:
    if not rows:
        return
    style = connection.dialect.paramstyle
    marks = ", ".join("?" if style == "qmark" else "%s" for _ in columns)
    if style not in ("qmark", "format", "pyformat"):
        raise NotImplementedError(f"bulk writes do not support the {style!r} parameter style")
    connection.exec_driver_sql(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)


def _utc(moment: datetime.datetime) -> datetime.datetime:
    # RDBStorage keeps naive UTC; FrozenTrial datetimes are naive local time.
    return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def _write_rdb(
    storage: RDBStorage,
    study_id: int,
    records: Sequence[TrialRecord],
    position_key: str | None,
    after_trial_id: int,
) -> int:
    from sqlalchemy import func
    from sqlalchemy import insert
    from sqlalchemy import select
    from sqlalchemy import update

    from optuna.storages._rdb import models

    with storage.engine.begin() as connection:
        # A no-op write on the study row takes the write lock first (row lock on PostgreSQL, the
        # database lock on SQLite), so counting trials and inserting them cannot interleave with
        # another writer's trial creation: numbers stay unique and consecutive.
        connection.execute(
            update(models.StudyModel)
            .where(models.StudyModel.study_id == study_id)
            .values(study_name=models.StudyModel.study_name)
        )
        if position_key is not None:
            taken = set(
                connection.execute(
                    select(models.TrialSystemAttributeModel.value_json)
                    .join(models.TrialModel)
                    .where(models.TrialModel.study_id == study_id)
                    .where(models.TrialModel.trial_id > after_trial_id)
                    .where(models.TrialModel.state != TrialState.FAIL)
                    .where(models.TrialSystemAttributeModel.key == position_key)
                ).scalars()
            )
            records = [r for r in records if json.dumps(r.system_attrs.get(position_key)) not in taken]
        if not records:
            return connection.execute(
                select(func.max(models.TrialModel.trial_id)).where(models.TrialModel.study_id == study_id)
            ).scalar_one() or after_trial_id
        first_number = connection.execute(
            select(func.count(models.TrialModel.trial_id)).where(models.TrialModel.study_id == study_id)
        ).scalar_one()
        trial_rows = [
            {
                "number": first_number + i,
                "study_id": study_id,
                "state": record.state,
                "datetime_start": _utc(record.datetime_start),
                "datetime_complete": _utc(record.datetime_complete),
            }
            for i, record in enumerate(records)
        ]
        trial_ids = connection.execute(
            insert(models.TrialModel).returning(
                models.TrialModel.trial_id, sort_by_parameter_order=True
            ),
            trial_rows,
        ).scalars().all()

        values, params, user_attrs, system_attrs = [], [], [], []
        distribution_json: dict[int, str] = {}  # records share their distribution objects
        for trial_id, record in zip(trial_ids, records):
            if record.state == TrialState.COMPLETE:
                stored, kind = models.TrialValueModel.value_to_stored_repr(float(record.value))
                values.append({"trial_id": trial_id, "objective": 0, "value": stored, "value_type": kind})
            for name, value in record.params.items():
                distribution = record.distributions[name]
                key = id(distribution)
                if key not in distribution_json:
                    distribution_json[key] = distribution_to_json(distribution)
                params.append((trial_id, name, distribution.to_internal_repr(value), distribution_json[key]))
            user_attrs.extend((trial_id, k, json.dumps(v)) for k, v in record.user_attrs.items())
            system_attrs.extend((trial_id, k, json.dumps(v)) for k, v in record.system_attrs.items())
        if values:
            connection.execute(insert(models.TrialValueModel), values)
        # The wide tables go straight to the driver: SQLAlchemy's per-row parameter handling
        # costs ten times the insert itself here.
        _executemany(connection, "trial_params", ("trial_id", "param_name", "param_value", "distribution_json"), params)
        _executemany(connection, "trial_user_attributes", ("trial_id", "key", "value_json"), user_attrs)
        _executemany(connection, "trial_system_attributes", ("trial_id", "key", "value_json"), system_attrs)
        return max(trial_ids)
