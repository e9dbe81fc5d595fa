"""Opening study storages: SQLite by default, any RDB URL (PostgreSQL), or a journal file."""

from __future__ import annotations

import datetime
from pathlib import Path
import re
import sqlite3
import threading
import time
from typing import TYPE_CHECKING
from typing import Any
import warnings

from optuna import distributions
from optuna.exceptions import ExperimentalWarning
from optuna.storages import BaseStorage
from optuna.storages import JournalStorage
from optuna.storages import RDBStorage
from optuna.storages import _CachedStorage
from optuna.storages.journal import JournalFileBackend

from optuna_boxcox._persist import write_running_trial_params

if TYPE_CHECKING:
    from collections.abc import Container
    from collections.abc import Sequence

    from optuna.trial import FrozenTrial
    from optuna.trial import TrialState

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
    can share one file on one machine; many workers on many machines want PostgreSQL. On either,
    a running trial's parameters are written together rather than one commit each
    (:class:`_ParamBatchingStorage`).

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
            raise StorageError(
                f"cannot open journal storage {url}: {_os_reason(error)}"
            ) from error
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :])
        if str(path) != ":memory:":
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with sqlite3.connect(path, timeout=60) as connection:
                    connection.execute("PRAGMA journal_mode=WAL")
            except (OSError, sqlite3.Error) as error:
                raise StorageError(
                    f"cannot open SQLite storage {url}: {_os_reason(error)}"
                ) from error
        storage = _rdb(url, engine_kwargs={"connect_args": {"timeout": 60}})
        _relax_sqlite_sync(storage)
        return _batch_params(storage)
    # A server shared by workers on several machines: heartbeats let Optuna fail the running
    # trials of a worker that vanished (the samplers then re-run their plan positions).
    return _batch_params(
        _rdb(url, heartbeat_interval=HEARTBEAT_SECONDS, grace_period=4 * HEARTBEAT_SECONDS)
    )


def _batch_params(storage: RDBStorage) -> BaseStorage:
    """The storage wrapped in :class:`_ParamBatchingStorage` on the Optuna versions it was checked
    against (it relies on Optuna's cache and table models), else as it is."""
    from optuna_boxcox._persist import bulk_supported

    return _ParamBatchingStorage(storage) if bulk_supported(storage) else storage


class _ParamBatchingStorage(_CachedStorage):
    """Optuna's cache over an RDB storage, writing a running trial's parameters in one commit.

    ``trial.suggest_*`` commits every parameter on its own, three or four round trips to the
    database each; with one λ per feature that made up about half of a trial-by-trial worker's time
    on PostgreSQL. Here suggested parameters wait in this process until anything reads trials or
    changes a trial's state, and are then written in one transaction. That is the persistence
    Optuna's cache documents (a trial's earlier writes are stored before its state is), and this
    process still reads its own writes; other processes see a running trial's parameters when it
    finishes or is next read here, rather than as they are suggested. Nothing in this package
    reads the parameters of other processes' running trials.

    Distributions are still checked when suggested: each against the first one of its name, which
    is written straight away (Optuna checks that one against the study's other trials).
    """

    def __init__(self, backend: RDBStorage) -> None:
        super().__init__(backend)
        #: trial id → parameter name → (internal value, distribution), in suggestion order.
        self._pending: dict[int, dict[str, tuple[float, distributions.BaseDistribution]]] = {}
        # Held while pending parameters are written, so that a state change in another thread
        # cannot commit before the parameters of its trial that a concurrent flush is writing.
        self._flush_lock = threading.Lock()

    def __getstate__(self) -> dict[Any, Any]:
        self._flush()
        state = super().__getstate__()
        del state["_flush_lock"]
        return state

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        self._flush_lock = threading.Lock()

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        """A new trial that records its owner process in the same transaction.

        The plan samplers fail the running trials of local processes that died, which they
        recognise by that owner attribute. Written afterwards (in ``before_trial``), a process
        killed between the two writes left a running trial nobody could recognise as its own.
        """
        if template_trial is None:
            from optuna.trial import FrozenTrial as _FrozenTrial
            from optuna.trial import TrialState as _TrialState

            from optuna_boxcox.samplers._plan import OWNER_KEY
            from optuna_boxcox.samplers._plan import _process_identity

            template_trial = _FrozenTrial(
                number=-1,
                state=_TrialState.RUNNING,
                value=None,
                values=None,
                datetime_start=datetime.datetime.now(),  # as RDBStorage stamps a new trial
                datetime_complete=None,
                params={},
                distributions={},
                user_attrs={},
                system_attrs={OWNER_KEY: _process_identity()},
                intermediate_values={},
                trial_id=-1,
            )
        return super().create_new_trial(study_id, template_trial)

    def set_trial_param(
        self,
        trial_id: int,
        param_name: str,
        param_value_internal: float,
        distribution: distributions.BaseDistribution,
    ) -> None:
        with self._lock:
            located = self._trial_id_to_study_id_and_number.get(trial_id)
            known = None
            if located is not None:
                known = self._studies[located[0]].param_distribution.get(param_name)
        if known is None:
            self._flush()
            super().set_trial_param(trial_id, param_name, param_value_internal, distribution)
            return
        distributions.check_distribution_compatibility(known, distribution)
        with self._flush_lock:
            # A name given twice keeps its first value, as the table's unique key does for Optuna.
            self._pending.setdefault(trial_id, {}).setdefault(
                param_name, (param_value_internal, distribution)
            )

    def _flush(self) -> None:
        """Write every pending parameter: one transaction per trial."""
        if not self._pending:
            return
        with self._flush_lock:
            pending, self._pending = self._pending, {}
            for trial_id, params in pending.items():
                write_running_trial_params(self._backend, trial_id, params)

    # Everything that reads trials or changes a trial's state sees the pending parameters first.
    def set_trial_state_values(
        self, trial_id: int, state: TrialState, values: Sequence[float] | None = None
    ) -> bool:
        self._flush()
        return super().set_trial_state_values(trial_id, state, values)

    def get_trial(self, trial_id: int) -> FrozenTrial:
        self._flush()
        return super().get_trial(trial_id)

    def get_all_trials(
        self,
        study_id: int,
        deepcopy: bool = True,
        states: Container[TrialState] | None = None,
    ) -> list[FrozenTrial]:
        self._flush()
        return super().get_all_trials(study_id, deepcopy=deepcopy, states=states)

    def get_best_trial(self, study_id: int) -> FrozenTrial:
        self._flush()
        return super().get_best_trial(study_id)

    def delete_study(self, study_id: int) -> None:
        self._flush()
        super().delete_study(study_id)


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


__all__ = ["DEFAULT_STORAGE", "StorageError", "open_storage", "redact", "sqlite_path"]
