"""A storage opened read-only cannot write: not through Optuna, not through optuna-dashboard, not
on disk (``dashboard --read-only``); and a SQLite file on a read-only file system (a mounted archive
of studies) is served, while ``search`` and ``worker`` there say in one line why they cannot run.

The read-only mount is a bind mount of a temporary folder remounted read-only (root only); where
mounts are not allowed those tests are skipped with the reason."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
import subprocess
import sys

import optuna
from optuna.distributions import FloatDistribution
from optuna.study import StudyDirection
from optuna.trial import TrialState
import pytest

from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox.cli import main as cli_main
from optuna_boxcox.storage import ReadOnlyStorage
from optuna_boxcox.storage import ReadOnlyStorageError
from optuna_boxcox.storage import close_opened_storages
from optuna_boxcox.storage import open_storage


def make_study(folder: Path) -> str:
    """A SQLite file in ``folder`` with one study of five finished trials; its URL."""
    url = f"sqlite:///{folder / 's.db'}"
    study = optuna.create_study(storage=open_storage(url), study_name="kept")
    study.set_user_attr("note", "archived")
    study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=5)
    close_opened_storages()  # SQLite folds its write-ahead log into the file
    return url


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def read_only_mount(source: Path, target: Path):
    """``target`` showing ``source`` on a read-only bind mount, unmounted afterwards."""
    target.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    made = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"bind mounts are not allowed here: {made.stderr.decode().strip()}")
    try:
        ro = subprocess.run(
            ["mount", "-o", "remount,bind,ro", str(target)], capture_output=True, text=True
        )
        if ro.returncode != 0:
            pytest.skip(f"cannot remount read-only: {ro.stderr.strip()}")
        yield target
    finally:
        close_opened_storages()
        subprocess.run(["umount", str(target)], check=True)


def _writes(storage, study_id: int, trial_id: int):
    return [
        lambda: storage.create_new_study([StudyDirection.MINIMIZE], "new"),
        lambda: storage.delete_study(study_id),
        lambda: storage.set_study_user_attr(study_id, "k", 1),
        lambda: storage.set_study_system_attr(study_id, "dashboard:note", "x"),
        lambda: storage.create_new_trial(study_id),
        lambda: storage.set_trial_param(trial_id, "x", 0.5, FloatDistribution(0.0, 1.0)),
        lambda: storage.set_trial_state_values(trial_id, TrialState.FAIL),
        lambda: storage.set_trial_intermediate_value(trial_id, 1, 0.5),
        lambda: storage.set_trial_user_attr(trial_id, "k", 1),
        lambda: storage.set_trial_system_attr(trial_id, "k", 1),
    ]


def test_every_write_through_a_read_only_storage_raises_and_the_file_is_unchanged(tmp_path):
    url = make_study(tmp_path)
    before = digest(tmp_path / "s.db")
    storage = open_storage(url, create=False, read_only=True)
    assert isinstance(storage, ReadOnlyStorage)
    study = optuna.load_study(study_name="kept", storage=storage)
    assert len(study.trials) == 5 and study.user_attrs == {"note": "archived"}
    assert storage.get_n_trials(study_id_of(study)) == 5
    trial_id = trial_id_of(study.trials[0])
    for write in _writes(storage, study_id_of(study), trial_id):
        with pytest.raises(ReadOnlyStorageError, match="read-only"):
            write()
    with pytest.raises(ReadOnlyStorageError):
        study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=1)
    # SQLite itself has the file open read-only: the engine's URL says so.
    assert "mode=ro" in str(storage.inner.backend.engine.url)
    close_opened_storages()
    assert digest(tmp_path / "s.db") == before


def test_the_dashboard_hands_optuna_dashboard_a_storage_that_refuses_writes(tmp_path, monkeypatch):
    import optuna_dashboard

    from optuna_boxcox.cli import dashboard

    make_study(tmp_path)
    handed = {}

    def wsgi(storage, **kwargs):
        handed["storage"] = storage
        return lambda environ, start_response: []

    monkeypatch.setattr(optuna_dashboard, "wsgi", wsgi)
    monkeypatch.setattr(dashboard, "serve", lambda app, host, port: None)
    for read_only in (True, False):
        argv = ["dashboard", str(tmp_path / "s.db"), "--port", "0"]
        assert cli_main([*argv, "--read-only"] if read_only else argv) == 0
        storage = handed.pop("storage")
        assert isinstance(storage, ReadOnlyStorage) is read_only
    study_id = storage.get_study_id_from_name("kept")
    read_only = open_storage(f"sqlite:///{tmp_path / 's.db'}", create=False, read_only=True)
    with pytest.raises(ReadOnlyStorageError):
        read_only.set_study_system_attr(study_id, "dashboard:note", "changed")


def test_a_study_on_a_read_only_file_system_is_read_as_immutable(tmp_path):
    (tmp_path / "src").mkdir()
    make_study(tmp_path / "src")
    with read_only_mount(tmp_path / "src", tmp_path / "archive") as archive:
        storage = open_storage(f"sqlite:///{archive / 's.db'}", create=False, read_only=True)
        assert "immutable=1" in str(storage.inner.backend.engine.url)
        study = optuna.load_study(study_name="kept", storage=storage)
        assert len(study.trials) == 5


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.run(
        [sys.executable, "-m", "optuna_boxcox.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_search_and_worker_on_a_read_only_file_system_say_so_in_one_line(tmp_path):
    (tmp_path / "src").mkdir()
    make_study(tmp_path / "src")
    with read_only_mount(tmp_path / "src", tmp_path / "archive") as archive:
        url = f"sqlite:///{archive / 's.db'}"
        search = _cli(
            "search", "--dataset", "wine", "--features", "2", "--classifier", "bayes",
            "--storage", url, cwd=tmp_path,
        )  # fmt: skip
        worker = _cli("worker", "--storage", url, "--study-name", "kept", cwd=tmp_path)
        new = _cli(
            "search", "--dataset", "wine", "--features", "2", "--classifier", "bayes",
            "--storage", f"sqlite:///{archive / 'new.db'}", cwd=tmp_path,
        )  # fmt: skip
        for run in (search, worker, new):
            assert run.returncode != 0
            lines = run.stderr.strip().splitlines()
            assert len(lines) == 1 and "read-only file system" in lines[0], run.stderr
        assert "--read-only" in search.stderr  # what can show it


def test_a_file_whose_path_needs_encoding_in_a_uri_opens_read_only(tmp_path):
    # SQLite reads a read-only file's name as a URI, where a space, # and ? mean something.
    folder = tmp_path / "archive 2026 #1?"
    folder.mkdir()
    url = make_study(folder)
    study = optuna.load_study(
        study_name="kept", storage=open_storage(url, create=False, read_only=True)
    )
    assert len(study.trials) == 5


@contextlib.contextmanager
def unwritable(path: Path):
    """``path`` made a file no process may write, root included (``chattr +i``), then writable."""
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make a file immutable here: {made.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_read_only_database_file_is_refused_in_one_line_and_left_alone(tmp_path):
    # The folder is writable, the file not (a user's archived study without write permission).
    url = make_study(tmp_path)
    with unwritable(tmp_path / "s.db"):
        search = _cli(
            "search", "--dataset", "wine", "--features", "2", "--classifier", "bayes",
            "--storage", url, cwd=tmp_path,
        )  # fmt: skip
        worker = _cli("worker", "--storage", url, "--study-name", "kept", cwd=tmp_path)
        for run in (search, worker):
            assert run.returncode != 0
            lines = run.stderr.strip().splitlines()
            assert len(lines) == 1 and "s.db is read-only" in lines[0], run.stderr
            assert "--read-only" in lines[0]  # what can show it
        left = sorted(p.name for p in tmp_path.iterdir())
        assert left == ["s.db"], f"the refusal left {left} beside the database"
