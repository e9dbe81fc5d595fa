"""What the package may do on a storage is decided once per storage object: its own SQL on an RDB
storage of an Optuna it was checked against (directly, or behind Optuna's or the package's cache),
Optuna's public API on anything else."""

from __future__ import annotations

import optuna
from optuna.storages import InMemoryStorage
from optuna.storages import JournalStorage
from optuna.storages import RDBStorage
from optuna.storages.journal import JournalFileBackend

from optuna_boxcox._optuna import SUPPORTED
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna._capabilities import StorageCapabilities
from optuna_boxcox._optuna._capabilities import capabilities_of
from optuna_boxcox.storage import open_storage

NONE = StorageCapabilities(bulk_write=False, sql_claims=False)
RDB = StorageCapabilities(bulk_write=True, sql_claims=True)


def _this_optuna_is_checked() -> bool:
    major, minor = (int(part) for part in optuna.__version__.split(".")[:2])
    low, high = SUPPORTED
    return (low.major, low.minor) <= (major, minor) < (high.major, high.minor)


def test_storages_without_an_rdb_take_optunas_public_path(tmp_path):
    journal = JournalStorage(JournalFileBackend(str(tmp_path / "study.log")))
    assert capabilities_of(InMemoryStorage()) == NONE
    assert capabilities_of(journal) == NONE
    assert capabilities_of(open_storage(str(tmp_path / "other.jsonl"))) == NONE


def test_an_rdb_storage_takes_the_packages_sql_on_a_checked_optuna(tmp_path):
    expected = RDB if _this_optuna_is_checked() else NONE
    url = f"sqlite:///{tmp_path / 'study.db'}"
    assert capabilities_of(RDBStorage(url)) == expected
    assert capabilities_of(storage_of(optuna.create_study(storage=url))) == expected
    assert capabilities_of(open_storage(f"sqlite:///{tmp_path / 'cached.db'}")) == expected


def test_the_decision_is_made_once_per_storage_object(monkeypatch):
    storage = InMemoryStorage()
    first = capabilities_of(storage)
    # Asked again, the storage gets the same decision without deciding again.
    monkeypatch.setattr("optuna_boxcox._optuna._capabilities._decide", lambda _: RDB, raising=True)
    assert capabilities_of(storage) is first
    assert capabilities_of(InMemoryStorage()) == RDB  # a new object is decided anew


def test_a_storage_that_cannot_be_kept_is_decided_each_time():
    class Unhashable(InMemoryStorage):
        __hash__ = None  # type: ignore[assignment]

    assert capabilities_of(Unhashable()) == NONE
