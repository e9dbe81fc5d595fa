"""What a storage lets the package do beyond Optuna's public API, decided once per storage object.

The runner, the samplers and the writers each take one of two paths: the package's own SQL on an
RDB storage of a supported Optuna, or Optuna's public storage API on any other storage (in-memory,
journal, an Optuna this package was not checked against). :func:`capabilities_of` decides which
for a storage the first time it is asked and keeps the answer for as long as the storage lives,
so every branch reads the same decision instead of deciding again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
import weakref

from optuna_boxcox._optuna import rdb_backend
from optuna_boxcox._optuna import supported


@dataclass(frozen=True)
class StorageCapabilities:
    """What the package can do on one storage.

    Attributes:
        bulk_write: Finished trials are written in one transaction by the package's SQL
            (:func:`~._write.write_encoded`, :class:`~._write.TrialRows`), which a forked
            process can do too, so a worker process can be the run's writer.
        sql_claims: Plan positions are claimed under the study's write lock, their holders and
            rivals read in one query and a trial's attributes set in one statement
            (:mod:`._claims`, :func:`~._write.has_rival`): what lets processes share a plan.
        longest_name: The most characters a study name, parameter name or attribute key may
            have (Optuna's schema: a database server refuses longer ones, SQLite keeps them);
            None for no limit.
    """

    bulk_write: bool
    sql_claims: bool
    longest_name: int | None = None


#: The decision for each storage object alive (a storage keeps its backend for its lifetime).
_DECIDED: weakref.WeakKeyDictionary[Any, StorageCapabilities] = weakref.WeakKeyDictionary()


def capabilities_of(storage: Any) -> StorageCapabilities:
    """What the package can do on ``storage`` (decided on the first call for that object)."""
    try:
        return _DECIDED[storage]
    except KeyError:
        pass
    except TypeError:  # not weakly referenceable or not hashable: decide without keeping it
        return _decide(storage)
    capabilities = _decide(storage)
    _DECIDED[storage] = capabilities
    return capabilities


def _decide(storage: Any) -> StorageCapabilities:
    # Both rest on the same SQL: an RDB behind the storage, on an Optuna whose schema was checked.
    backend = rdb_backend(storage)
    rdb = backend is not None and supported()
    longest = None
    if backend is not None and backend.engine.dialect.name != "sqlite":
        # Loaded with the storage: `import optuna` does not load SQLAlchemy, nor this.
        from optuna.storages._rdb.models import MAX_INDEXED_STRING_LENGTH as longest
    return StorageCapabilities(bulk_write=rdb, sql_claims=rdb, longest_name=longest)


def refuse_long_names(storage: Any, names: Iterable[str], what: str) -> None:
    """Raise ValueError when one of ``names`` (``what`` they are: "column", "study") is longer
    than ``storage`` keeps, before anything is written: the database would refuse it in the
    middle of the search, leaving an empty study."""
    limit = capabilities_of(storage).longest_name
    if limit is None:
        return
    for name in names:
        if len(name) > limit:
            shown = name if len(name) <= 40 else f"{name[:37]}…"
            raise ValueError(
                f"{what} name {shown!r} has {len(name):,} characters and the study storage keeps "
                f"names of at most {limit} on a database server: shorten it (a SQLite file "
                "keeps longer ones)"
            )
