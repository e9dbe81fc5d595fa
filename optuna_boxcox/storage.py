"""Opening study storages: SQLite by default, any RDB URL (PostgreSQL), or a journal file."""

from __future__ import annotations

import errno
import logging
import os
from pathlib import Path
import re
import sqlite3
import time
from typing import Any
from typing import NoReturn
from urllib.parse import quote
import warnings
import weakref

from optuna.exceptions import ExperimentalWarning
from optuna.storages import BaseStorage
from optuna.storages import JournalStorage
from optuna.storages import RDBStorage
from optuna.storages.journal import JournalFileBackend

from optuna_boxcox._defaults import DEFAULT_STORAGE
from optuna_boxcox._defaults import REPRODUCE_STORAGE
from optuna_boxcox._optuna import rdb_backend
from optuna_boxcox._optuna import sqlite_schema_is_current
from optuna_boxcox._optuna import supported
from optuna_boxcox._optuna._sqlite_file import checkpoint_files
from optuna_boxcox._optuna._sqlite_file import remember_file
from optuna_boxcox._optuna._sqlite_file import write_ahead_logging
from optuna_boxcox._optuna._storage import CachedRDBStorage
from optuna_boxcox._system._advice import Advised

_JOURNAL_SUFFIXES = (".log", ".jsonl", ".journal")
#: Heartbeat interval of trials on a database server (PostgreSQL, MySQL).
HEARTBEAT_SECONDS = 15
#: Seconds a SQLite connection waits for another process's lock unless the URL says ?timeout=.
SQLITE_TIMEOUT = 60.0
#: Says when a storage file is created; the command line prints it, a library caller's logging
#: configuration decides.
_LOG = logging.getLogger(__name__)


class StorageError(RuntimeError):
    """A study storage that cannot be opened or reached; the message names it (password redacted)."""


class StorageAdvice(Advised, StorageError):
    """A :class:`StorageError` whose remedy names an option (``str``: the library's parameter;
    a command words it as its flag)."""


#: PostgreSQL's code for "disk full".
_DISK_FULL_SQLSTATE = "53100"


def storage_failure(error: BaseException, url: str | None = None) -> str | None:
    """One line saying why reading or writing a study storage failed, when ``error`` is (or was
    caused by) a database error; else None.

    Optuna reports every failed commit as "invalid data ... exceeding max length"; the driver's
    own error below it says what happened: a lock held by another process for longer than the
    timeout, a full disk, or something else, quoted by its first line (unless ``error`` is a
    :class:`StorageError`, which says that itself). ``url`` names the storage (password redacted).
    """
    # SQLAlchemy is imported where a database is used, in this whole module: `import optuna` does not
    # load it and in-memory or journal storages never need it (docs/performance_log.md, imports).
    from sqlalchemy.exc import DBAPIError

    where = f" {redact(url)}" if url else ""
    database_error = None
    for cause in _chain(error):
        if isinstance(cause, OSError) and cause.errno == errno.ENOSPC:
            database_error = database_error or cause
            break
        if isinstance(cause, (sqlite3.Error, DBAPIError)) or _sqlstate(cause) is not None:
            database_error = database_error or cause
    if database_error is None:
        return None
    text = " ".join(str(_driver_error(database_error)).split()).lower()
    if (
        getattr(database_error, "errno", None) == errno.ENOSPC
        or _sqlstate(_driver_error(database_error)) == _DISK_FULL_SQLSTATE
        or "disk is full" in text
        or "no space left" in text
    ):
        return (
            f"the disk holding the study storage{where} is full: free some space and run the "
            "same command to resume (what was written before is kept)"
        )
    if "database is locked" in text or "database table is locked" in text:
        try:
            timeout = _sqlite_timeout(url) if url else SQLITE_TIMEOUT
        except ValueError:
            timeout = SQLITE_TIMEOUT
        return (
            f"the study storage{where} stayed locked by another process for longer than the "
            f"lock timeout ({timeout:g} s; ?timeout=SECONDS in a sqlite:/// URL sets it): let "
            "that process finish, or close it, then run the same command to resume"
        )
    if isinstance(error, StorageError) and not isinstance(error, StorageFailure):
        return None  # its own message names the storage and quotes the driver already
    return f"the study storage{where} failed: {_first_line(database_error)}"


class StorageFailure(StorageError):
    """A read or write of a study storage that failed (a full disk, a lock held too long), as a
    library call raises it (:func:`storage_error`); the message is :func:`storage_failure`'s."""


def storage_error(error: BaseException, storage: Any = None) -> StorageError | None:
    """``error`` as the :class:`StorageFailure` a library call raises when reading or writing the
    study storage ``storage`` failed: its message is :func:`storage_failure`'s one line (the
    storage's URL, password redacted), and it is raised from ``error``. None when ``error`` is no
    database error, or a :class:`StorageError` already."""
    if isinstance(error, StorageError):
        return None
    backend = rdb_backend(storage)
    reason = storage_failure(error, None if backend is None else str(backend.url))
    return None if reason is None else StorageFailure(reason)


def _chain(error: BaseException):
    """``error``, what it wraps (SQLAlchemy's ``orig``) and what caused it, each once."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        current = todo.pop(0)
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [getattr(current, "orig", None), current.__cause__, current.__context__]


def _driver_error(error: BaseException) -> BaseException:
    return getattr(error, "orig", None) or error


def _sqlstate(error: BaseException) -> str | None:
    return getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)


def open_storage(
    url: str | None = None, *, create: bool = True, read_only: bool = False
) -> BaseStorage:
    """An Optuna storage for ``url``: an RDB URL, or a path ending in .log/.jsonl/.journal.

    SQLite files get write-ahead logging and a lock timeout of :data:`SQLITE_TIMEOUT` seconds (or
    the URL's ``?timeout=``), so several worker processes can share one file on one machine; many
    workers on many machines want PostgreSQL. On either, finished trials are cached in this
    process and read in bulk, and a running trial's parameters are written together rather than
    one commit each (:class:`~optuna_boxcox._optuna._storage.CachedRDBStorage`).

    A new SQLite or journal file is created only with ``create`` and only in a directory that
    exists — except the default ``studies/`` folder, made on first use — so a misspelt folder is
    an error; creating the file is logged ("created new study database …") on this module's
    logger, which the command line prints.

    Args:
        url: Storage URL or journal file; ``None`` means :data:`DEFAULT_STORAGE`.
        create: Whether a file that does not exist yet may be created (False for tools that only
            read or join studies, such as the dashboard and ``worker``).
        read_only: Open it for reading only (``dashboard --read-only``): the storage returned
            refuses every write itself (:class:`ReadOnlyStorage`), a SQLite file is opened with
            SQLite's ``mode=ro``, and on a read-only file system (a mounted archive) as
            ``immutable``, so it is served without writing anything — not even a lock file.

    Raises:
        ValueError: ``url`` is neither a database URL SQLAlchemy knows nor a journal file name.
        StorageError: The storage does not exist (with ``create=False``), cannot be created in a
            missing directory, is an in-memory SQLite database (gone with the process that made
            it), cannot be reached, or needs a driver that is missing.
    """
    url = url or DEFAULT_STORAGE
    if url.endswith(_JOURNAL_SUFFIXES) and "://" not in url:
        _check_file(Path(url), f"journal storage {url}", create=create, kind="journal")
        try:
            journal = JournalStorage(JournalFileBackend(url))
            return ReadOnlyStorage(journal) if read_only else journal
        except OSError as error:
            raise StorageError(
                f"cannot open journal storage {url}: {_os_reason(error)}"
            ) from error
    if _is_sqlite(url) and read_only:
        return ReadOnlyStorage(_read_only_sqlite(url))
    if read_only:
        return ReadOnlyStorage(open_storage(url, create=create))
    if _is_sqlite(url):
        path = sqlite_path(url)
        if path is None:
            raise StorageAdvice(
                "{url} is an in-memory SQLite database, which ends with the process that opened "
                "it, so no later command could resume or show the study: omit {storage} for "
                "{default}, or name a file such as sqlite:///study.db",
                url=url,
                default=DEFAULT_STORAGE,
            )
        timeout = _sqlite_timeout(url)
        if _on_read_only_file_system(path):
            raise StorageAdvice(
                "cannot open SQLite storage {url}: {folder} is on a read-only file system, "
                "and searches and workers write their trials there (optuna-boxcox dashboard "
                "{read_only} shows it)",
                url=url,
                folder=path.parent,
            )
        _check_file(path, f"SQLite storage {url}", create=create, kind="database")
        if not _writable(path):
            # Refused before SQLite opens it: reading a database in write-ahead-log mode leaves
            # its -wal and -shm files beside a file that cannot take their contents back.
            raise StorageAdvice(
                "cannot open SQLite storage {url}: {path} is read-only, and searches and "
                "workers write their trials there (optuna-boxcox dashboard {read_only} shows it)",
                url=url,
                path=path,
            )
        try:
            write_ahead_logging(path, timeout=timeout)
        except (OSError, sqlite3.Error) as error:
            raise StorageError(f"cannot open SQLite storage {url}: {_os_reason(error)}") from error
        # Remembered before Optuna creates its tables, which a Ctrl-C may interrupt.
        remember_file(path, on_exit=close_opened_storages)
        current = sqlite_schema_is_current(path)
        storage = _rdb(
            url,
            engine_kwargs={"connect_args": {"timeout": timeout}},
            # Checking a schema that is already current costs most of a second (alembic).
            skip_compatibility_check=current,
            skip_table_creation=current,
        )
        _relax_sqlite_sync(storage)
        return _cached(storage)
    _refuse_raw_at_sign(url)
    # A server shared by workers on several machines: heartbeats let Optuna fail the running
    # trials of a worker that vanished (the samplers then re-run their plan positions).
    return _cached(
        _rdb(url, heartbeat_interval=HEARTBEAT_SECONDS, grace_period=4 * HEARTBEAT_SECONDS)
    )


def _read_only_sqlite(url: str) -> BaseStorage:
    """A SQLite file opened by SQLite for reading only: ``mode=ro``, or ``immutable=1`` on a
    read-only file system, where SQLite could not make the lock and write-ahead-log index files
    that ``mode=ro`` needs (immutable also ignores a write-ahead log left beside the file: a
    database closed cleanly has none)."""
    path = sqlite_path(url)
    if path is None:
        raise StorageError(f"{url} is an in-memory SQLite database: there is nothing to read")
    _check_file(path, f"SQLite storage {url}", create=False, kind="database")
    flag = "immutable=1" if _on_read_only_file_system(path) else "mode=ro"
    # SQLite reads the name as a URI (a space, # or ? percent-encoded); SQLAlchemy may decode
    # the name of a URL once before handing it over: whichever URL hands SQLite the encoded name.
    name = "file:" + quote(str(path.resolve()), safe="/")
    rdb_url = next(
        candidate
        for candidate in (
            f"sqlite:///{name}?{flag}&uri=true",
            f"sqlite:///file:{quote(name[5:], safe='/')}?{flag}&uri=true",
        )
        if _parse_url(candidate).database == name
    )
    return _cached(
        _rdb(
            rdb_url,
            engine_kwargs={"connect_args": {"timeout": _sqlite_timeout(url)}},
            # Nothing may be created or upgraded: the schema is read as it is.
            skip_compatibility_check=True,
            skip_table_creation=True,
        )
    )


def _writable(path: Path) -> bool:
    """Whether this process may write the file ``path`` (a missing file is left to the caller),
    by access(2), which says no to root too for an immutable file or a read-only mount. Never by
    opening it: closing any descriptor of a SQLite file drops the locks this process's SQLite
    connections hold on it, and another process's write then corrupts it."""
    if not path.exists():
        return True
    return os.access(path, os.W_OK)


def _on_read_only_file_system(path: Path) -> bool:
    """Whether ``path`` (or, if it does not exist, its directory) is on a file system mounted
    read-only."""
    target = path if path.exists() else path.parent
    try:
        return bool(os.statvfs(target).f_flag & os.ST_RDONLY)
    except OSError:
        return False


class ReadOnlyStorage(BaseStorage):
    """A storage that answers every read of ``inner`` and refuses every write itself (raising
    :class:`ReadOnlyStorageError`): what ``optuna-boxcox dashboard --read-only`` serves, so no
    path of optuna-dashboard — one the HTTP filter does not know of included — can change a
    study."""

    def __init__(self, inner: BaseStorage) -> None:
        self.inner = inner

    def _refuse(self, what: str) -> NoReturn:
        raise ReadOnlyStorageError(f"this storage is open read-only: cannot {what}")

    # -- writes --------------------------------------------------------------------------------
    def create_new_study(self, directions: Any, study_name: str | None = None) -> int:
        self._refuse("create a study")

    def delete_study(self, study_id: int) -> None:
        self._refuse("delete a study")

    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        self._refuse("set a study attribute")

    def set_study_system_attr(self, study_id: int, key: str, value: Any) -> None:
        self._refuse("set a study attribute")

    def create_new_trial(self, study_id: int, template_trial: Any = None) -> int:
        self._refuse("create a trial")

    def set_trial_param(self, trial_id: int, param_name: str, *args: Any) -> None:
        self._refuse("set a trial parameter")

    def set_trial_state_values(self, trial_id: int, state: Any, values: Any = None) -> bool:
        self._refuse("change a trial's state or values")

    def set_trial_intermediate_value(self, trial_id: int, step: int, value: float) -> None:
        self._refuse("report an intermediate value")

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._refuse("set a trial attribute")

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._refuse("set a trial attribute")

    # -- reads ---------------------------------------------------------------------------------
    def get_study_id_from_name(self, study_name: str) -> int:
        return self.inner.get_study_id_from_name(study_name)

    def get_study_name_from_id(self, study_id: int) -> str:
        return self.inner.get_study_name_from_id(study_id)

    def get_study_directions(self, study_id: int) -> Any:
        return self.inner.get_study_directions(study_id)

    def get_study_user_attrs(self, study_id: int) -> dict[str, Any]:
        return self.inner.get_study_user_attrs(study_id)

    def get_study_system_attrs(self, study_id: int) -> dict[str, Any]:
        return self.inner.get_study_system_attrs(study_id)

    def get_all_studies(self) -> Any:
        return self.inner.get_all_studies()

    def get_trial(self, trial_id: int) -> Any:
        return self.inner.get_trial(trial_id)

    def get_all_trials(self, study_id: int, deepcopy: bool = True, states: Any = None) -> Any:
        return self.inner.get_all_trials(study_id, deepcopy=deepcopy, states=states)

    def get_n_trials(self, study_id: int, state: Any = None) -> int:
        return self.inner.get_n_trials(study_id, state)

    def get_best_trial(self, study_id: int) -> Any:
        return self.inner.get_best_trial(study_id)

    def get_trial_id_from_study_id_trial_number(self, study_id: int, trial_number: int) -> int:
        return self.inner.get_trial_id_from_study_id_trial_number(study_id, trial_number)

    def get_trial_number_from_id(self, trial_id: int) -> int:
        return self.inner.get_trial_number_from_id(trial_id)

    def remove_session(self) -> None:
        self.inner.remove_session()


class ReadOnlyStorageError(StorageError):
    """A write through a storage opened read-only (:class:`ReadOnlyStorage`)."""


def _refuse_raw_at_sign(url: str) -> None:
    """A password with a raw @ reads as part of the host name (which the driver's error would
    then print): ask for it percent-encoded instead."""
    authority = url.split("://", 1)[-1].split("/", 1)[0]
    if authority.count("@") > 1:
        raise ValueError(
            f"storage {redact(url)}: the user name or password contains '@', which a URL must "
            "write as %40"
        )


def _sqlite_timeout(url: str) -> float:
    """The URL's ``?timeout=`` (seconds; SQLAlchemy hands it to sqlite3), else the default."""
    text = _parse_url(url).query.get("timeout")
    if text is None:
        return SQLITE_TIMEOUT
    try:
        timeout = float(text if isinstance(text, str) else text[-1])
    except ValueError:
        timeout = -1.0
    if not timeout >= 0:
        raise ValueError(f"storage {url}: timeout must be a number of seconds ≥ 0, got {text!r}")
    return timeout


def _check_file(path: Path, what: str, *, create: bool, kind: str) -> None:
    """Refuse a storage file that does not exist (``create=False``) or whose directory does not
    (a typo, which must not become a new database); the default ``studies/`` folder is made.

    A new file is created here, empty (SQLite and the journal both take an empty file for a new
    storage), so that of several processes starting at once exactly one says it created it."""
    if path.exists():
        if path.is_dir():
            raise StorageError(f"cannot open {what}: {path} is a directory, not a database file")
        return
    if not create:
        raise StorageError(
            f"no study storage at {path}{'' if path.is_absolute() else f' (looked in {Path.cwd()})'}; "
            "check the path, or run a "
            "search first"
        )
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise StorageError(f"cannot open {what}: {parent} is not a directory")
    if not parent.exists():
        if parent != sqlite_path(DEFAULT_STORAGE).parent:
            raise StorageError(f"cannot open {what}: the directory {parent} does not exist")
        parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("x"):
            pass
    except FileExistsError:
        return  # another process created it meanwhile
    except OSError as error:
        raise StorageError(f"cannot open {what}: {_os_reason(error)}") from error
    _LOG.info("created new study %s %s", kind, path)


#: Every SQLAlchemy engine of this process that connected, for :func:`close_opened_storages`:
#: not only the storages :func:`open_storage` returned, but one a Ctrl-C stopped while Optuna was
#: still creating its tables, and a user's own ``RDBStorage`` on the same file. One connection
#: left open at the exit keeps SQLite's ``-wal`` and ``-shm`` files beside the database.
_ENGINES: weakref.WeakSet[Any] = weakref.WeakSet()


def _remember_engine(connection: Any, *_legacy: Any) -> None:
    # *_legacy: SQLAlchemy 1.4 also passes ``branch``.
    _ENGINES.add(connection.engine)


def _track_engines() -> None:
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if not event.contains(Engine, "engine_connect", _remember_engine):
        event.listen(Engine, "engine_connect", _remember_engine)


def close_opened_storages() -> None:
    """Close the pooled database connections of every engine this process connected with, and
    copy each SQLite file's write-ahead log into the file, so that the database file alone holds
    every trial written and SQLite, its last connection closed, removes the ``-wal`` and ``-shm``
    files — e.g. before a quick process exit, and at the exit of the interpreter."""
    for engine in list(_ENGINES):
        engine.dispose()
    checkpoint_files()


def _cached(storage: RDBStorage) -> BaseStorage:
    """The storage behind :class:`CachedRDBStorage` on the Optuna versions it was checked against
    (it writes and reads Optuna's tables directly), else as it is."""
    return CachedRDBStorage(storage) if supported() else storage


def _rdb(url: str, **kwargs: object) -> RDBStorage:
    """RDBStorage, retried when workers race to create the schema of a new database."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError
    from sqlalchemy.exc import IntegrityError
    from sqlalchemy.exc import OperationalError
    from sqlalchemy.exc import ProgrammingError

    _track_engines()
    shown = redact(url)
    try:
        make_url(url)
    except ValueError:  # SQLAlchemy reads the port with int(): its error would name int()
        raise ValueError(
            f"storage {shown!r}: the port after the host must be a number, e.g. "
            "postgresql+psycopg://user@localhost:5432/db"
        ) from None
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
    return _sqlstate(_driver_error(error)) in _DUPLICATE_SQLSTATES


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


#: A URL inside a message: a scheme, ://, and everything up to white space or a quote, but not
#: the punctuation of the sentence around it.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"]*[^\s'\":;,.)]")
#: Query parameters that carry a secret: libpq's password and sslpassword, MySQL drivers' passwd.
_SECRET_PARAMETER = re.compile(r"pass|pwd", re.IGNORECASE)
_HIDDEN = "***"


def redact(text: str) -> str:
    """``text`` (a storage URL, or a message with URLs in it) with every password replaced by
    ``***`` — the one in the user-information part and query parameters such as ``?password=``
    — for messages and logs. A URL with nothing secret in it is left exactly as written."""
    return _URL_IN_TEXT.sub(lambda match: _redact_url(match.group(0)), text)


def _redact_url(url: str) -> str:
    try:
        parsed = _parse_url(url)
    except ValueError:
        # Not a URL SQLAlchemy reads (so no driver was given a password from it); hide whatever
        # sits between the user name and the last @ all the same.
        return re.sub(r"(://[^:/@]*:)[^/]*@", rf"\1{_HIDDEN}@", url)
    secrets = [key for key in parsed.query if _SECRET_PARAMETER.search(key)]
    hidden = (None, _HIDDEN)
    if parsed.password in hidden and all(parsed.query[key] in hidden for key in secrets):
        return url  # nothing secret, or redacted already
    shown = parsed.update_query_dict(dict.fromkeys(secrets, _HIDDEN)).render_as_string(
        hide_password=True
    )
    shown = shown.replace("%2A%2A%2A", _HIDDEN)  # the query's *** as the user-information's
    # SQLAlchemy ends the password at the first @, a server at the last: a password with a raw
    # @ in it would show its rest as part of the host.
    authority = url.split("://", 1)[1].split("/", 1)[0]
    if authority.count("@") > 1:
        user = authority.split(":", 1)[0]
        host = authority.rsplit("@", 1)[1]
        shown = shown.replace(authority.split("@", 1)[1], host, 1)
        shown = re.sub(r"(://)[^/]*@", rf"\g<1>{user}:{_HIDDEN}@", shown, count=1)
    return shown


def _parse_url(url: str):
    """SQLAlchemy's reading of ``url`` (a ``sqlalchemy.engine.URL``); ValueError when it has
    none."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url)
    except ArgumentError as error:
        raise ValueError(str(error)) from None


def _is_sqlite(url: str) -> bool:
    """Whether ``url`` is a SQLite URL (sqlite:///…, or with a driver: sqlite+pysqlite:///…)."""
    try:
        return url.startswith("sqlite") and _parse_url(url).get_backend_name() == "sqlite"
    except ValueError:
        return False


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL — its query parameters (``?timeout=1``) are not part of the
    name — or None for an in-memory SQLite database and for other storages."""
    if not _is_sqlite(url):
        return None
    parsed = _parse_url(url)
    database = parsed.database or ""
    if parsed.query.get("uri") in ("true", "1"):
        # sqlite:///file:path?mode=ro&uri=true: SQLite reads the name as a URI of its own.
        if parsed.query.get("mode") == "memory":
            return None
        database = database.removeprefix("file:")
    return None if database in ("", ":memory:") else Path(database)


__all__ = [
    "DEFAULT_STORAGE",
    "REPRODUCE_STORAGE",
    "ReadOnlyStorage",
    "ReadOnlyStorageError",
    "StorageError",
    "close_opened_storages",
    "open_storage",
    "redact",
    "sqlite_path",
    "storage_failure",
]
