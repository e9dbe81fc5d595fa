"""A SQLite study file itself: write-ahead logging switched on once, and the log copied into the
file when this process is done with it (split off :mod:`optuna_boxcox.storage`)."""

from __future__ import annotations

import atexit
from collections.abc import Callable
import contextlib
from pathlib import Path
import sqlite3
import time
from urllib.parse import quote

#: SQLite files this process opened for writing: a storage dropped before the exit is gone from
#: the storages to close while its engine's connections may still be open, so the files are kept.
_FILES: set[Path] = set()
#: Seconds the last checkpoint waits for another process's write: it then leaves the log to it.
CHECKPOINT_TIMEOUT = 1.0


def write_ahead_logging(path: Path, *, timeout: float) -> None:
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


def remember_file(path: Path, *, on_exit: Callable[[], None]) -> None:
    """Checkpoint ``path`` in :func:`checkpoint_files`; the first file registers ``on_exit``
    (which calls it) for the interpreter's exit (a script's; the command line calls it itself
    before its quick exit)."""
    if not _FILES:
        atexit.register(on_exit)
    _FILES.add(path.resolve())


def checkpoint_files() -> None:
    """:func:`checkpoint_file` every file :func:`remember_file` was given."""
    for path in sorted(_FILES):
        checkpoint_file(path)


def checkpoint_file(path: Path) -> None:
    """Copy the committed contents of ``path``'s write-ahead log into it and truncate the log.
    SQLite does so itself when the last connection to the file closes, but a storage dropped
    before the exit may leave connections that only the exit closes. Nothing is raised: a file
    gone or busy keeps its log, which the next connection reads (or its last writer empties)."""
    log = path.with_name(path.name + "-wal")
    try:
        if log.stat().st_size == 0:
            return
        # mode=rw: a file deleted meanwhile is not created again.
        name = "file:" + quote(str(path.resolve()), safe="/") + "?mode=rw"
        with contextlib.closing(
            sqlite3.connect(name, uri=True, timeout=CHECKPOINT_TIMEOUT)
        ) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except (OSError, sqlite3.Error):
        return
