"""Raw SQL on the DB-API cursor of a SQLAlchemy connection, in the driver's parameter style."""

from __future__ import annotations

import math
import re
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
        self.executemany(insert_statement(table, columns, self.mark), rows)

    def executemany(self, statement: str, rows: Sequence[tuple]) -> None:
        """``statement`` once per row. On PostgreSQL, many rows for an :func:`insert_statement`
        go in by ``COPY`` (4-5 times faster than one insert per row from a hundred rows on: a
        bulk write holds the study's write lock that much less)."""
        if not rows:
            return
        if (
            self.postgresql
            and len(rows) >= COPY_AT_LEAST
            and (insert := _INSERT.fullmatch(statement))
        ):
            table, columns = insert.groups()
            with self.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            return
        self.cursor.executemany(statement, rows)

    def numbering(self, study_id: int, *, after_trial_id: int | None = None) -> tuple[int, ...]:
        """In one query (a round trip less under the study's write lock): the study's trial
        count, which is the next trial's number and stays so while the lock is held; the newest
        trial id of any study (the ids of trials inserted next are higher); and, given
        ``after_trial_id``, how many of the study's trials come after it."""
        statement = (
            "SELECT (SELECT COUNT(*) FROM trials WHERE study_id = ?),"
            " (SELECT MAX(trial_id) FROM trials)"
        )
        parameters: tuple = (study_id,)
        if after_trial_id is not None:
            statement += ", (SELECT COUNT(*) FROM trials WHERE study_id = ? AND trial_id > ?)"
            parameters += (study_id, after_trial_id)
        ((*counts,),) = self(statement, parameters)
        return tuple(counts)

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


#: Rows from which an insert goes by COPY on PostgreSQL: COPY costs one more round trip, so
#: pipelined inserts of one row each are as fast for a few dozen rows and slower beyond.
COPY_AT_LEAST = 32
#: An :func:`insert_statement` (table and columns).
_INSERT = re.compile(r"INSERT INTO (\w+) \(([\w, ]+)\) VALUES \((?:%s|\?)(?:, (?:%s|\?))*\)")


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
