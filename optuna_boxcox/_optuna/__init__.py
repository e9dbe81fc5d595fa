"""Every use of Optuna's internals in the package, in one place.

Optuna's public API creates a trial and then commits each parameter, value and attribute on its
own, reads a study back through its ORM one trial object at a time, and keeps no public handle on a
study's storage. The plugin needs more: finished trials written in one transaction (:mod:`._write`,
its rows encoded by :mod:`._encode`), a study read back in a few SQL queries (:mod:`._read`), a
storage that caches finished trials and batches a running trial's parameters (:mod:`._storage`), a
SQLite file's write-ahead log switched on and copied into it at the exit (:mod:`._sqlite_file`),
the study's storage and ids, and, for type checkers, the protocol an artifact store follows
(``ArtifactStore``, which Optuna names only in a private module). All of it is here, chosen by
feature detection where Optuna's versions differ, and tested against the lowest and the newest
Optuna in :data:`SUPPORTED` (``make test`` runs a compatibility subset on the lowest one).

What differs between the supported versions and is handled here:

- Optuna < 5 stores trial datetimes in an RDB as naive *local* time; Optuna ≥ 5 as naive UTC
  (:func:`to_stored_datetime`, :func:`from_stored_datetime`).
- The heartbeat callback accessor was renamed (``get_failed_trial_callback`` →
  ``get_heartbeat_stale_trial_callback``) in 4.9.
"""

from __future__ import annotations

from collections.abc import Iterator
import contextlib
import datetime
from pathlib import Path
import re
import sqlite3
from typing import TYPE_CHECKING
from typing import Any

import optuna
from optuna.storages import RDBStorage
from packaging.version import Version

if TYPE_CHECKING:
    # Re-exported (``as``) so that no module outside this package names Optuna's private module.
    from optuna.artifacts._protocol import ArtifactStore as ArtifactStore
    from optuna.storages import BaseStorage
    from optuna.study import Study
    from optuna.trial import FrozenTrial
    from optuna.trial import Trial

#: This Optuna's version.
OPTUNA_VERSION = Version(Version(optuna.__version__).base_version)
#: Optuna releases whose internals this module was tested against: [lowest, first unsupported).
SUPPORTED = (Version("4.2"), Version("6.0"))
#: Since Optuna 5, RDB storages keep trial datetimes as naive UTC (before: naive local time).
STORES_UTC = Version("5.0") <= OPTUNA_VERSION


#: What Optuna raises on an update of a finished trial: UpdateFinishedTrialError (a RuntimeError)
#: from Optuna 4.3 on, a plain RuntimeError before.
UpdateFinishedTrialError: type[RuntimeError] = getattr(
    optuna.exceptions, "UpdateFinishedTrialError", RuntimeError
)


def supported() -> bool:
    """Whether this Optuna is one the bulk reader and writer were checked against."""
    return SUPPORTED[0] <= OPTUNA_VERSION < SUPPORTED[1]


# -- handles Optuna keeps private --------------------------------------------------------------
def storage_of(study: Study) -> BaseStorage:
    """The storage a study reads and writes (Optuna has no public accessor)."""
    return study._storage


def study_id_of(study: Study) -> int:
    """The study's id in its storage."""
    return study._study_id


def trial_id_of(trial: FrozenTrial | Trial) -> int:
    """The trial's id in its storage (unique across studies, unlike its number)."""
    return trial._trial_id


def rdb_backend(storage: Any) -> RDBStorage | None:
    """The :class:`~optuna.storages.RDBStorage` behind a storage (Optuna wraps one in a cache, and
    :func:`~optuna_boxcox.storage.open_storage` in its own), or None for other storages."""
    for _ in range(4):
        if isinstance(storage, RDBStorage):
            return storage
        storage = getattr(storage, "_backend", None)
    return None


def count_trials(study: Study, states: tuple[Any, ...] | None = None) -> int:
    """How many trials the study holds (in ``states``): one COUNT on an RDB storage, which
    reads no trial — ``len(study.get_trials())`` reads every one back when the storage's cache
    does not hold them (a minute and gigabytes for a hundred trials of 50,000 λ)."""
    backend = rdb_backend(storage_of(study))
    if backend is None:
        return len(study.get_trials(deepcopy=False, states=states))
    # SQLAlchemy is imported where a database is used, in this whole module: `import optuna` does not
    # load it and in-memory or journal storages never need it (docs/performance_log.md, imports).
    import sqlalchemy

    query = "SELECT COUNT(*) FROM trials WHERE study_id = :study"
    params: dict[str, Any] = {"study": study_id_of(study)}
    if states is not None:
        names = [state.name for state in states]
        query += " AND state IN (" + ", ".join(f":s{k}" for k in range(len(names))) + ")"
        params.update({f"s{k}": name for k, name in enumerate(names)})
    with backend.engine.connect() as connection:
        return int(connection.execute(sqlalchemy.text(query), params).scalar_one())


@contextlib.contextmanager
def optimize_loop(study: Study) -> Iterator[Any]:
    """Run a loop that plays ``study.optimize``'s part: inside it, ``study.stop()`` is allowed (a
    callback or a sampler may call it) and is seen by the loop.

    Yields a function that says whether ``study.stop()`` was called. Refuses to nest, as
    ``study.optimize`` does.
    """
    local = study._thread_local
    if getattr(local, "in_optimize_loop", False):
        raise RuntimeError("Nested invocation of `Study.optimize` method isn't allowed.")
    study._stop_flag = False
    local.in_optimize_loop = True
    try:
        yield lambda: bool(study._stop_flag)
    finally:
        local.in_optimize_loop = False


# -- datetimes as RDB storages keep them -----------------------------------------------------
def distribution_contains(distribution: Any, value: Any) -> bool:
    """Whether ``value`` (external representation) lies in ``distribution``: Optuna's private
    ``BaseDistribution._contains`` on its internal representation (there in every supported
    version); a value it cannot even represent is not contained."""
    try:
        return bool(distribution._contains(distribution.to_internal_repr(value)))
    except (ValueError, TypeError):
        return False


def to_stored_datetime(moment: datetime.datetime) -> datetime.datetime:
    """A FrozenTrial datetime (naive local time) as this Optuna's RDB storage stores it."""
    if STORES_UTC:
        return moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment


def from_stored_datetime(stored: datetime.datetime | None) -> datetime.datetime | None:
    """A stored trial datetime as FrozenTrials carry it (naive local time)."""
    if stored is None or not STORES_UTC:
        return stored
    return stored.replace(tzinfo=datetime.timezone.utc).astimezone().replace(tzinfo=None)


def schema_head() -> str | None:
    """The newest revision of this Optuna's RDB schema, read from its migration scripts (no
    alembic import, which costs most of a second); None if they cannot be read."""
    try:
        from optuna.storages import _rdb

        versions = Path(_rdb.__file__).parent / "alembic" / "versions"
        revisions, parents = set(), set()
        for script in versions.glob("*.py"):
            text = script.read_text(encoding="utf-8")
            revision = re.search(r'^revision = "([^"]+)"', text, re.MULTILINE)
            parent = re.search(r'^down_revision = "([^"]+)"', text, re.MULTILINE)
            if revision:
                revisions.add(revision.group(1))
            if parent:
                parents.add(parent.group(1))
    except (ImportError, OSError):
        return None
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def sqlite_schema_is_current(path: Path) -> bool:
    """Whether a SQLite file already holds this Optuna's schema at its newest revision: opening it
    then needs neither table creation nor alembic's version check."""
    head = schema_head()
    if head is None or not path.is_file():
        return False
    try:
        with contextlib.closing(sqlite3.connect(path, timeout=60)) as connection:
            rows = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    except sqlite3.Error:
        return False
    return rows == [(head,)]


def heartbeat_stale_trial_callback(storage: Any) -> Any:
    """The storage's callback for trials whose heartbeat stopped, under either of its names."""
    getter = getattr(storage, "get_heartbeat_stale_trial_callback", None)
    if getter is None:
        getter = storage.get_failed_trial_callback
    return getter()


__all__ = [
    "OPTUNA_VERSION",
    "STORES_UTC",
    "SUPPORTED",
    "count_trials",
    "distribution_contains",
    "from_stored_datetime",
    "heartbeat_stale_trial_callback",
    "optimize_loop",
    "rdb_backend",
    "schema_head",
    "sqlite_schema_is_current",
    "storage_of",
    "study_id_of",
    "supported",
    "to_stored_datetime",
    "trial_id_of",
]
