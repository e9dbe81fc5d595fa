"""Shortcuts of the claim path on RDB storages (SQLite, PostgreSQL): fewer round trips per trial.

Claiming a plan position through Optuna's public storage API costs, per trial, a read of every
trial the cache has not seen finish (seven queries, and a sort of all trials in Python) just to
find the few trials that hold the same position, and one commit per trial attribute. On a database
server each query and commit is a round trip, and they made up a good part of a trial.

On an RDB storage the rival check is one indexed query and the attributes share one transaction.
Like the bulk writer of :mod:`optuna_boxcox._persist` this needs Optuna's table models, so it is
isolated here and only used on the Optuna versions that module was checked against; every other
storage (in-memory, journal, or an unchecked Optuna) takes the public API.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from typing import Any

from optuna.trial import TrialState

from optuna_boxcox._persist import bulk_supported
from optuna_boxcox._persist import rdb_backend

if TYPE_CHECKING:
    from collections.abc import Mapping

    from optuna.storages import BaseStorage


def supported(storage: BaseStorage) -> bool:
    """Whether ``storage`` is (Optuna's cache over) an RDB storage of a checked Optuna version."""
    return bulk_supported(storage)


def has_rival(
    storage: BaseStorage, study_id: int, trial_id: int, key: str, position: int, min_trial_id: int
) -> bool:
    """Whether a trial of the study other than ``trial_id``, from ``min_trial_id`` on, holds
    ``position`` under system attribute ``key`` and did not fail.

    Optuna stores attribute values as ``json.dumps(value)``, so an int position has one spelling.
    The lower bound keeps the query on the (trial_id, key) index instead of every trial's attributes.
    """
    from sqlalchemy import select

    from optuna.storages._rdb import models

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
