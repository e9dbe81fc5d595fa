"""Opening study storages: SQLite by default, any RDB URL (PostgreSQL), or a journal file."""

from __future__ import annotations

import contextlib
from pathlib import Path
import re
import sqlite3
import time
from typing import TYPE_CHECKING
import warnings
import weakref

from optuna.exceptions import ExperimentalWarning
from optuna.storages import JournalStorage
from optuna.storages import RDBStorage
from optuna.storages.journal import JournalFileBackend

from optuna_boxcox._defaults import DEFAULT_STORAGE
from optuna_boxcox._defaults import REPRODUCE_STORAGE
from optuna_boxcox._optuna import sqlite_schema_is_current
from optuna_boxcox._optuna import supported
from optuna_boxcox._optuna._storage import CachedRDBStorage

if TYPE_CHECKING:
    from optuna.storages import BaseStorage

_JOURNAL_SUFFIXES = (".log", ".jsonl", ".journal")
#: Heartbeat interval of trials on a database server (PostgreSQL, MySQL).
HEARTBEAT_SECONDS = 15


class StorageError(RuntimeError):
    """A study storage that cannot be opened or reached; the message names it (password redacted)."""


def open_storage(url: str | None = None, *, create: bool = True) -> BaseStorage:
    """An Optuna storage for ``url``: an RDB URL, or a path ending in .log/.jsonl/.journal.

    SQLite files get write-ahead logging and a generous lock timeout, so several worker processes
    can share one file on one machine; many workers on many machines want PostgreSQL. On either,
    finished trials are cached in this process and read in bulk, and a running trial's parameters
    are written together rather than one commit each
    (:class:`~optuna_boxcox._optuna._storage.CachedRDBStorage`).

    A new SQLite or journal file is created only in a directory that exists — except the default
    ``studies/`` folder, made on first use — so a misspelt path is an error, not a new database.

    Args:
        url: Storage URL or journal file; ``None`` means :data:`DEFAULT_STORAGE`.
        create: Whether a file that does not exist yet may be created (False for tools that only
            read studies, such as the dashboard).

    Raises:
        ValueError: ``url`` is neither a database URL SQLAlchemy knows nor a journal file name.
        StorageError: The storage does not exist (with ``create=False``), cannot be created in a
            missing directory, cannot be reached, or needs a driver that is missing.
    """
    url = url or DEFAULT_STORAGE
    if url.endswith(_JOURNAL_SUFFIXES) and "://" not in url:
        _check_file(Path(url), f"journal storage {url}", create=create)
        try:
            return JournalStorage(JournalFileBackend(url))
        except OSError as error:
            raise StorageError(
                f"cannot open journal storage {url}: {_os_reason(error)}"
            ) from error
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :])
        if str(path) != ":memory:":
            _check_file(path, f"SQLite storage {url}", create=create)
            try:
                _write_ahead_logging(path)
            except (OSError, sqlite3.Error) as error:
                raise StorageError(
                    f"cannot open SQLite storage {url}: {_os_reason(error)}"
                ) from error
        current = str(path) != ":memory:" and sqlite_schema_is_current(path)
        storage = _rdb(
            url,
            engine_kwargs={"connect_args": {"timeout": 60}},
            # Checking a schema that is already current costs most of a second (alembic).
            skip_compatibility_check=current,
            skip_table_creation=current,
        )
        _relax_sqlite_sync(storage)
        return _cached(storage)
    # A server shared by workers on several machines: heartbeats let Optuna fail the running
    # trials of a worker that vanished (the samplers then re-run their plan positions).
    return _cached(
        _rdb(url, heartbeat_interval=HEARTBEAT_SECONDS, grace_period=4 * HEARTBEAT_SECONDS)
    )


def _write_ahead_logging(path: Path, *, timeout: float = 60.0) -> None:
    """Put the SQLite file in write-ahead-log mode (once per file; it persists). Switching needs
    the file to itself, and SQLite reports "database is locked" at once rather than waiting when
    another process is creating the same new database: so the switch is retried until
    ``timeout``."""
    deadline = time.monotonic() + timeout
    pause = 0.01
    while True:
        # sqlite3's context manager commits but does not close: closing() does.
        with contextlib.closing(sqlite3.connect(path, timeout=timeout)) as connection:
            try:
                if connection.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
                    return
                connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
        time.sleep(pause)
        pause = min(2 * pause, 0.5)


def _check_file(path: Path, what: str, *, create: bool) -> None:
    """Refuse a storage file that does not exist (``create=False``) or whose directory does not
    (a typo, which must not become a new database); the default ``studies/`` folder is made."""
    if path.exists():
        if path.is_dir():
            raise StorageError(f"cannot open {what}: {path} is a directory, not a database file")
        return
    if not create:
        raise StorageError(
            f"no study storage at {path} (looked in {Path.cwd()}); check the path, or run a "
            "search first"
        )
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise StorageError(f"cannot open {what}: {parent} is not a directory")
    if not parent.exists():
        if parent != Path(DEFAULT_STORAGE[len("sqlite:///") :]).parent:
            raise StorageError(f"cannot open {what}: the directory {parent} does not exist")
        parent.mkdir(parents=True, exist_ok=True)


#: RDB storages this process opened, for :func:`close_opened_storages`.
_OPENED: weakref.WeakSet[RDBStorage] = weakref.WeakSet()


def close_opened_storages() -> None:
    """Close the database connections of every RDB storage :func:`open_storage` opened (SQLite
    then copies its write-ahead log into the database file), e.g. before a quick process exit."""
    for storage in list(_OPENED):
        storage.engine.dispose()


def _cached(storage: RDBStorage) -> BaseStorage:
    """The storage behind :class:`CachedRDBStorage` on the Optuna versions it was checked against
    (it writes and reads Optuna's tables directly), else as it is."""
    _OPENED.add(storage)
    return CachedRDBStorage(storage) if supported() else storage


def _rdb(url: str, **kwargs: object) -> RDBStorage:
    """RDBStorage, retried when workers race to create the schema of a new database."""
    from sqlalchemy.exc import ArgumentError
    from sqlalchemy.exc import IntegrityError
    from sqlalchemy.exc import OperationalError
    from sqlalchemy.exc import ProgrammingError

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
        except (IntegrityError, OperationalError, ProgrammingError) as error:
            if isinstance(error, ProgrammingError) and not _created_concurrently(error):
                raise StorageError(f"cannot open storage {shown}: {_first_line(error)}") from error
            if attempt == 4:
                raise StorageError(f"cannot open storage {shown}: {_first_line(error)}") from error
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


#: PostgreSQL's codes for "already exists": another worker created the type or table meanwhile.
_DUPLICATE_SQLSTATES = frozenset({"42710", "42P07"})


def _created_concurrently(error: BaseException) -> bool:
    cause = getattr(error, "orig", None)
    code = getattr(cause, "sqlstate", None) or getattr(cause, "pgcode", None)
    return code in _DUPLICATE_SQLSTATES


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
    return Path(url[len("sqlite:///") :]) if url.startswith("sqlite:///") else None


__all__ = [
    "DEFAULT_STORAGE",
    "REPRODUCE_STORAGE",
    "StorageError",
    "close_opened_storages",
    "open_storage",
    "redact",
    "sqlite_path",
]
