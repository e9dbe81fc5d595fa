"""A study's name, user and system attributes read and written in a statement or two.

Optuna's RDB storage reads the study's row and then its attributes, and writes one by reading
both and then updating or inserting: three or four round trips and its ORM's objects for each.
Every worker reads and writes several as it starts and stops (the experiment's record, the
metric's name, its announcement), so :class:`~._storage.CachedRDBStorage` goes through these.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from typing import Any

from optuna_boxcox._optuna._sql import Sql

if TYPE_CHECKING:
    from optuna.storages import RDBStorage
    from sqlalchemy.engine import Connection

#: The tables of a study's attributes, by kind.
STUDY_ATTR_TABLES = {"user": "study_user_attributes", "system": "study_system_attributes"}


def read_study_attrs(connection: Connection, study_id: int, kind: str) -> dict[str, Any]:
    """A study's user or system attributes (``kind``), as Optuna's getters return them, in one
    query (Optuna's reads the study's row, then its attributes); KeyError for no such study."""
    rows = Sql(connection)(
        f"SELECT s.study_id, a.key, a.value_json FROM studies s LEFT JOIN {STUDY_ATTR_TABLES[kind]}"
        " a ON a.study_id = s.study_id WHERE s.study_id = ?",
        (study_id,),
    )
    if not rows:
        raise KeyError(f"No study with study_id {study_id} exists.")
    return {key: json.loads(value_json) for _, key, value_json in rows if key is not None}


def read_study_name(connection: Connection, study_id: int) -> str:
    """The study's name in one query (Optuna's ORM builds the study's object for it); KeyError
    for no such study."""
    rows = Sql(connection)("SELECT study_name FROM studies WHERE study_id = ?", (study_id,))
    if not rows:
        raise KeyError(f"No study with study_id {study_id} exists.")
    return rows[0][0]


#: Databases where a study attribute is written by one insert-or-update statement (elsewhere an
#: update, then an insert where there was nothing to update).
UPSERT_DIALECTS = ("postgresql",)


def set_study_attr(storage: RDBStorage, study_id: int, kind: str, key: str, value: Any) -> None:
    """Optuna's ``set_study_user_attr`` / ``set_study_system_attr`` (``kind``: ``"user"`` or
    ``"system"``) without its ORM round trips: one insert-or-update statement on PostgreSQL;
    elsewhere one transaction of an update, and where the key is new, a check that the study
    exists and an insert. KeyError for no such study."""
    # SQLAlchemy is imported where a database is used, in this whole module: `import optuna` does not
    # load it and in-memory or journal storages never need it (docs/performance_log.md, imports).
    from sqlalchemy.exc import IntegrityError

    table, text = STUDY_ATTR_TABLES[kind], json.dumps(value)
    duplicate = (IntegrityError, storage.engine.dialect.dbapi.IntegrityError)
    if storage.engine.dialect.name in UPSERT_DIALECTS:
        # One statement: the key is unique per study (a worker's announcement is new the
        # first time, then updated).
        try:
            with storage.engine.begin() as connection:
                Sql(connection)(
                    f"INSERT INTO {table} (study_id, key, value_json) VALUES (?, ?, ?)"
                    " ON CONFLICT (study_id, key) DO UPDATE SET value_json = EXCLUDED.value_json",
                    (study_id, key, text),
                )
            return
        except duplicate:  # no such study (its foreign key)
            raise KeyError(f"No study with study_id {study_id} exists.") from None
    for attempt in range(2):
        try:
            with storage.engine.begin() as connection:
                sql = Sql(connection)
                sql(
                    f"UPDATE {table} SET value_json = ? WHERE study_id = ? AND key = ?",
                    (text, study_id, key),
                )
                if sql.cursor.rowcount:
                    return
                if not sql("SELECT study_id FROM studies WHERE study_id = ?", (study_id,)):
                    raise KeyError(f"No study with study_id {study_id} exists.")
                sql(
                    f"INSERT INTO {table} (study_id, key, value_json) VALUES (?, ?, ?)",
                    (study_id, key, text),
                )
                return
        except duplicate:
            if attempt:  # pragma: no cover - the key existed, then vanished before the update
                raise
            # Another process inserted the key meanwhile: it exists now, so update it.
