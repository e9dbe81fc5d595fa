"""Opening study storages: SQLite by default, any RDB URL (PostgreSQL), or a journal file."""

from __future__ import annotations

from pathlib import Path
import re
import sqlite3
import time
import warnings

from optuna.exceptions import ExperimentalWarning
from optuna.storages import BaseStorage
from optuna.storages import JournalStorage
from optuna.storages import RDBStorage
from optuna.storages.journal import JournalFileBackend

#: Where studies go unless told otherwise (relative to the working directory).
DEFAULT_STORAGE = "sqlite:///studies/optuna-boxcox.db"
_JOURNAL_SUFFIXES = (".log", ".jsonl", ".journal")
#: Heartbeat interval of trials on a database server (PostgreSQL, MySQL).
HEARTBEAT_SECONDS = 15


class StorageError(RuntimeError):
    """A study storage that cannot be opened or reached; the message names it (password redacted)."""


def open_storage(url: str | None = None) -> BaseStorage:
    """An Optuna storage for ``url``: an RDB URL, or a path ending in .log/.jsonl/.journal.

    SQLite files get write-ahead logging and a generous lock timeout, so several worker processes
    can share one file on one machine; many workers on many machines want PostgreSQL.

    Raises:
        ValueError: ``url`` is neither a database URL SQLAlchemy knows nor a journal file name.
        StorageError: The storage cannot be created, reached, or needs a driver that is missing.
    """
    url = url or DEFAULT_STORAGE
    if url.endswith(_JOURNAL_SUFFIXES) and "://" not in url:
        try:
            Path(url).parent.mkdir(parents=True, exist_ok=True)
            return JournalStorage(JournalFileBackend(url))
        except OSError as error:
            raise StorageError(f"cannot open journal storage {url}: {_os_reason(error)}") from error
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///"):])
        if str(path) != ":memory:":
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with sqlite3.connect(path, timeout=60) as connection:
                    connection.execute("PRAGMA journal_mode=WAL")
            except (OSError, sqlite3.Error) as error:
                raise StorageError(f"cannot open SQLite storage {url}: {_os_reason(error)}") from error
        storage = _rdb(url, engine_kwargs={"connect_args": {"timeout": 60}})
        _relax_sqlite_sync(storage)
        return storage
    # A server shared by workers on several machines: heartbeats let Optuna fail the running
    # trials of a worker that vanished (the samplers then re-run their plan positions).
    return _rdb(url, heartbeat_interval=HEARTBEAT_SECONDS, grace_period=4 * HEARTBEAT_SECONDS)


def _rdb(url: str, **kwargs: object) -> RDBStorage:
    """RDBStorage, retried when workers race to create the schema of a new database."""
    from sqlalchemy.exc import ArgumentError
    from sqlalchemy.exc import IntegrityError
    from sqlalchemy.exc import OperationalError

    shown = redact(url)
    for attempt in range(5):
        try:
            # The heartbeat is this package's choice, not the user's: no warning about its API.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ExperimentalWarning)
                return RDBStorage(url, **kwargs)
        except ArgumentError as error:  # also NoSuchModuleError: an unknown dialect
            raise ValueError(
                f"storage {shown!r} is not a database URL ({_first_line(error)}); give e.g. "
                "sqlite:///studies/optuna-boxcox.db, postgresql+psycopg://user@host/db, "
                f"or a journal file ending in {', '.join(_JOURNAL_SUFFIXES)}"
            ) from error
        except ImportError as error:
            driver = _missing_module(error)
            raise StorageError(
                f"storage {shown} needs the database driver {driver}, which is not installed "
                "in this Python environment"
            ) from error
        except (IntegrityError, OperationalError) as error:
            if attempt == 4:
                raise StorageError(f"cannot open storage {shown}: {_first_line(error)}") from error
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def _first_line(error: BaseException) -> str:
    """The driver's own first line (SQLAlchemy wraps it in a multi-line message), password redacted."""
    cause = getattr(error, "orig", None) or error
    lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
    return redact(lines[0]) if lines else type(cause).__name__


def _missing_module(error: BaseException | None) -> str:
    """The package an ImportError (or the one Optuna re-raised it from) did not find, quoted."""
    while error is not None:
        if isinstance(error, ImportError) and error.name:
            return repr(error.name.split(".")[0])
        error = error.__cause__ or error.__context__
    return "named in the URL"


def _os_reason(error: Exception) -> str:
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return str(error)


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
    # No whitespace in either part: in a message, never span from one URL to an @ words later.
    return re.sub(r"(://[^:/@\s]+:)[^@\s]*@", r"\1***@", url)


def sqlite_path(url: str) -> Path | None:
    """The file behind a sqlite:/// URL, else None."""
    return Path(url[len("sqlite:///"):]) if url.startswith("sqlite:///") else None


__all__ = ["DEFAULT_STORAGE", "StorageError", "open_storage", "redact", "sqlite_path"]
