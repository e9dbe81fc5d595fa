"""Raw SQL on the DB-API cursor of a SQLAlchemy connection, in the driver's parameter style."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from collections.abc import Sequence


class Sql:
    """Raw statements on the driver's cursor, in the driver's parameter style.

    SQLAlchemy's per-row parameter processing costs several times the inserts themselves here, so
    the whole batch goes straight to the DB-API cursor inside SQLAlchemy's transaction. The
    column encodings are the ones Optuna's models give SQLAlchemy: enums by member name, and on
    SQLite datetimes as SQLAlchemy's ``YYYY-MM-DD HH:MM:SS.ffffff`` text.
    """

    def __init__(self, connection: Any) -> None:
        self.mark = self.mark_of(connection.dialect.paramstyle)
        self.sqlite = connection.dialect.name == "sqlite"
        self.postgresql = connection.dialect.name == "postgresql"
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
            self.cursor.executemany(insert_statement(table, columns, self.mark), rows)

    def lock_study(self, study_id: int, *, wait: bool = True) -> bool:
        """Take the study's write lock until the transaction ends: every writer that counts or
        numbers the study's trials takes it first (a row lock on the study on PostgreSQL and
        MySQL, as Optuna's own trial creation takes; SQLite's one writer lock).

        Without ``wait``, where the database can tell without waiting (PostgreSQL), returns False
        at once when another transaction holds it; elsewhere it waits, as with ``wait``.
        """
        if not wait and self.postgresql:
            # The lock an UPDATE of the row takes (and which Optuna's FOR UPDATE waits for); not
            # held by a transaction that only inserted rows referring to the study.
            return bool(
                self(
                    "SELECT study_id FROM studies WHERE study_id = ? FOR NO KEY UPDATE SKIP LOCKED",
                    (study_id,),
                )
            )
        self("UPDATE studies SET study_name = study_name WHERE study_id = ?", (study_id,))
        return True

    def await_study_lock(self, study_id: int) -> None:
        """Wait, without taking it, until the transaction that holds the study's write lock
        ends (PostgreSQL: a shared lock on the study's row, which many waiters hold at once and
        which ends with this transaction); nothing elsewhere."""
        if self.postgresql:
            self("SELECT study_id FROM studies WHERE study_id = ? FOR SHARE", (study_id,))


def insert_statement(table: str, columns: Sequence[str], mark: str) -> str:
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(mark for _ in columns)})"
    )


def stored_value(value: float) -> tuple[float | None, str]:
    """A trial value as the ``trial_values`` table stores it: (value, value type name)."""
    if value == math.inf:
        return None, "INF_POS"
    if value == -math.inf:
        return None, "INF_NEG"
    return value, "FINITE"


def stored_intermediate(value: float) -> tuple[float | None, str]:
    """An intermediate value as the ``trial_intermediate_values`` table stores it: (value, type
    name); unlike a trial value, NaN is stored too (``trial.report`` accepts it)."""
    if math.isnan(value):
        return None, "NAN"
    return stored_value(value)


def told_value(state_name: str, value: float | None) -> float | None:
    """The value Optuna stores for a trial finished in this state: a complete trial's own; a
    pruned one's last intermediate value unless NaN (``study.tell``); none for other states."""
    if value is None or state_name not in ("COMPLETE", "PRUNED"):
        return None
    if state_name == "PRUNED" and math.isnan(value):
        return None
    return value
