"""Opening study storages: SQLite by default, any RDB URL (PostgreSQL), or a journal file."""

from __future__ import annotations

from pathlib import Path
import re
import sqlite3
import time

from optuna.storages import BaseStorage
from optuna.storages import JournalStorage
from optuna.storages import RDBStorage
from optuna.storages.journal import JournalFileBackend

#: Where studies go unless told otherwise (relative to the working directory).
DEFAULT_STORAGE = "sqlite:///studies/optuna-boxcox.db"
_JOURNAL_SUFFIXES = (".log", ".jsonl", ".journal")


def open_storage(url: str | None = None) -> BaseStorage:
    """An Optuna storage for ``url``: an RDB URL, or a path ending in .log/.jsonl/.journal.

    SQLite files get write-ahead logging and a generous lock timeout, so several worker processes
    can share one file on one machine; many workers on many machines want PostgreSQL.
    """
    url = url or DEFAULT_STORAGE
    if url.endswith(_JOURNAL_SUFFIXES) and "://" not in url:
        Path(url).parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(url))
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///"):])
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
            with sqlite3.connect(path, timeout=60) as connection:
                connection.execute("PRAGMA journal_mode=WAL")
        storage = _rdb(url, engine_kwargs={"connect_args": {"timeout": 60}})
        _relax_sqlite_sync(storage)
        return storage
    return _rdb(url)


def _rdb(url: str, **kwargs: object) -> RDBStorage:
    """RDBStorage, retried when workers race to create the schema of a new database."""
    from sqlalchemy.exc import IntegrityError
    from sqlalchemy.exc import OperationalError

    for attempt in range(5):
        try:
            return RDBStorage(url, **kwargs)
        except (IntegrityError, OperationalError):
            if attempt == 4:
                raise
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def _relax_sqlite_sync(storage: RDBStorage) -> None:
    """synchronous=NORMAL: in WAL mode a commit no longer waits for the disk (a power cut may lose
    the last trials, never corrupt the file); Optuna commits once per parameter, so this matters."""
    from sqlalchemy import event

    def on_connect(connection, _record) -> None:
        connection.execute("PRAGMA synchronous=NORMAL")

    event.listen(storage.engine, "connect", on_connect)
    storage.engine.dispose()


def redact(url: str) -> str:
    """The URL with any password replaced by ***, for messages and logs."""
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)


def sqlite_path(url: str) -> Path | None:
    """The file behind a sqlite:/// URL, else None."""
    return Path(url[len("sqlite:///"):]) if url.startswith("sqlite:///") else None


__all__ = ["DEFAULT_STORAGE", "open_storage", "redact", "sqlite_path"]
