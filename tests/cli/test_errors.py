"""Secrets and failures of the environment: each gives one true line, never a traceback.

Storage URLs (passwords in every form, SQLite's parameters, in-memory SQLite, when a database file
is created), a locked database, a full disk, more jobs than cores, Ctrl-C twice, the dashboard
shown to others, and a bug of the package told apart from a mistake of the user. Commands whose
signals, exit or files matter run as a user runs them, in a subprocess; the others call
:func:`optuna_boxcox.cli.main` in this process.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
import errno
import importlib.util
import json
import os
from pathlib import Path
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request

from cli_run import run_cli
import numpy as np
import optuna
import pandas as pd
import pytest
from shared import disk_full_after
from shared import free_port

from optuna_boxcox._system import _parallel
from optuna_boxcox._system._advice import AdvisedValueError
import optuna_boxcox.cli
from optuna_boxcox.cli import INTERRUPTED
from optuna_boxcox.cli import UsageError
from optuna_boxcox.cli import build_parser
from optuna_boxcox.cli import main
from optuna_boxcox.cli.dashboard import is_loopback
from optuna_boxcox.datasets import DataError
from optuna_boxcox.experiments.benchmark import MissingPeerError
from optuna_boxcox.storage import StorageError
from optuna_boxcox.storage import open_storage
from optuna_boxcox.storage import redact
from optuna_boxcox.storage import sqlite_path
from optuna_boxcox.storage import storage_failure

REPO = Path(__file__).resolve().parents[2]
HAS_PSYCOPG = importlib.util.find_spec("psycopg") is not None
#: wine's first 2 features, naive Bayes, the iterative preset: 88 trials in about a second.
SMALL = ["--dataset", "wine", "--features", "2", "--classifier", "bayes", "--sampler", "iterative"]


def _env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def _popen(*args: str, cwd: Path) -> subprocess.Popen:
    """``optuna-boxcox ARGS`` in ``cwd``, started as a user starts it."""
    return subprocess.Popen(
        [sys.executable, "-m", "optuna_boxcox.cli", *args],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _lines(stderr: str) -> list[str]:
    # Progress lines ("search: 10/88 trials …") are not messages.
    return [line for line in stderr.splitlines() if not line.startswith("search:")]


def _one_error(stderr: str) -> str:
    lines = _lines(stderr)
    assert len(lines) == 1, f"the user should see one line, saw {len(lines)}:\n{stderr}"
    assert lines[0].startswith("optuna-boxcox: error: "), lines[0]
    return lines[0]


def _trials(db: Path) -> int:
    try:  # read-only: the test must not create the file the command is to create
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as connection:
            return connection.execute("SELECT count(*) FROM trials").fetchone()[0]
    except sqlite3.Error:
        return 0


# -- passwords -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url, shown",
    [
        ("postgresql://u:secret@h/db", "postgresql://u:***@h/db"),
        ("postgresql://:secret@h/db", "postgresql://:***@h/db"),
        ("postgresql://u@h/db?password=secret", "postgresql://u@h/db?password=***"),
        ("postgresql://u@h/db?sslpassword=secret&x=1", "postgresql://u@h/db?sslpassword=***&x=1"),
        ("mysql+pymysql://u@h/db?passwd=secret", "mysql+pymysql://u@h/db?passwd=***"),
        ("postgresql+psycopg://u:se%40cret@h:5432/db", "postgresql+psycopg://u:***@h:5432/db"),
        ("postgresql://u:secret@h/db?password=secret", "postgresql://u:***@h/db?password=***"),
        ("postgresql://u:se@cret@h/db", "postgresql://u:***@h/db"),
    ],
)
def test_every_form_of_password_in_a_url_is_hidden(url, shown):
    assert redact(url) == shown
    # In a sentence, with punctuation around it and other words after it.
    assert redact(f"cannot open storage {url}: refused (x@y)") == (
        f"cannot open storage {shown}: refused (x@y)"
    )


@pytest.mark.parametrize(
    "url", ["sqlite:///:memory:", "sqlite:///x.db?timeout=1", "postgresql://u@h/db", "data.jsonl"]
)
def test_a_url_without_a_secret_is_shown_as_written(url):
    assert redact(url) == url


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://u@127.0.0.1:1/db?password=secret",
        "postgresql+psycopg://:secret@127.0.0.1:1/db",
        "postgresql+psycopg://u:se@cret@127.0.0.1:1/db",
    ],
)
def test_a_search_on_a_password_url_never_prints_the_password(url, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["search", *SMALL, "--storage", url]) in (1, 2)
    out, err = capsys.readouterr()
    line = _one_error(err)
    assert "secret" not in out + err and "cret" not in out + err
    assert "***" in line, line
    assert "127.0.0.1" in line, f"the line does not name the storage: {line}"


# -- SQLite URLs -----------------------------------------------------------------------------------


def test_sqlite_parameters_are_parameters_not_part_of_the_file_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["search", *SMALL, "--storage", "sqlite:///x.db?timeout=5"]) == 0
    assert not [p.name for p in tmp_path.iterdir() if "?" in p.name]
    assert sqlite_path("sqlite:///x.db?timeout=5") == Path("x.db")
    study = optuna.load_study(study_name="wine/bayes/iterative", storage="sqlite:///x.db")
    assert len(study.trials) == 88


@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite://"])
def test_an_in_memory_sqlite_storage_is_refused_in_one_true_line(
    url, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(["search", *SMALL, "--storage", url]) == 1
    line = _one_error(capsys.readouterr().err)
    assert "in-memory" in line and "omit --storage" in line, line
    assert list(tmp_path.iterdir()) == []


def test_a_bad_sqlite_timeout_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["search", *SMALL, "--storage", "sqlite:///x.db?timeout=soon"]) == 2
    assert "timeout must be a number of seconds" in _one_error(capsys.readouterr().err)


# -- when a database file is created ---------------------------------------------------------------


@pytest.mark.parametrize(
    "storage, kind", [("sqlite:///new.db", "database"), ("new.jsonl", "journal")]
)
def test_search_creates_a_new_database_file_and_says_so_once(
    storage, kind, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(["search", *SMALL, "--storage", storage, "--no-figures"]) == 0
    created = [line for line in _lines(capsys.readouterr().err) if "created" in line]
    name = storage.removeprefix("sqlite:///")
    assert created == [f"optuna-boxcox: created new study {kind} {name}"]
    assert main(["search", *SMALL, "--storage", storage, "--no-figures"]) == 0
    assert "created" not in capsys.readouterr().err, "an existing file was announced as new"


@pytest.mark.parametrize(
    "command",
    [
        [
            "reproduce",
            "table8",
            *("--folds", "2", "--repeats", "1", "--classifiers", "bayes"),
            *("--pairs", "2-6", "--rows", "spherical", "--out", "out", "--no-progress"),
        ],
        ["search", *SMALL, "--no-figures"],
    ],
    ids=["reproduce", "search"],
)
def test_a_command_leaves_every_trial_in_the_database_file_alone(command, tmp_path):
    # Copying the .db file alone (a backup, a download) must copy every trial: a write-ahead log
    # left beside it would hold some of them.
    run = run_cli(*command, "--storage", "sqlite:///x.db", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    log = tmp_path / "x.db-wal"
    assert not log.exists() or log.stat().st_size == 0, f"a {log.stat().st_size}-byte log remains"
    copy = tmp_path / "copy" / "x.db"
    copy.parent.mkdir()
    copy.write_bytes((tmp_path / "x.db").read_bytes())
    with sqlite3.connect(tmp_path / "x.db") as connection:
        (written,) = connection.execute("SELECT count(*) FROM trials").fetchone()
    with sqlite3.connect(copy) as connection:
        (copied,) = connection.execute("SELECT count(*) FROM trials").fetchone()
    assert written > 0 and copied == written


def test_worker_never_creates_a_database_and_names_the_missing_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["search", *SMALL, "--storage", "sqlite:///study.db", "--no-figures"]) == 0
    capsys.readouterr()
    typo = ["worker", "--storage", "sqlite:///stdy.db", "--study-name", "wine/bayes/iterative"]
    assert main(typo) == 1
    line = _one_error(capsys.readouterr().err)
    assert "no study storage at stdy.db" in line, line
    assert not (tmp_path / "stdy.db").exists()


def test_the_library_logs_a_new_file_instead_of_printing_it(tmp_path, caplog):
    caplog.set_level("INFO", logger="optuna_boxcox")
    open_storage(f"sqlite:///{tmp_path / 'a.db'}")
    open_storage(f"sqlite:///{tmp_path / 'a.db'}")
    assert [r.getMessage() for r in caplog.records] == [
        f"created new study database {tmp_path / 'a.db'}"
    ]


# -- a locked database, a full disk ----------------------------------------------------------------

HOLD_LOCK = textwrap.dedent(
    """
    import sqlite3, sys, time
    connection = sqlite3.connect(sys.argv[1], isolation_level=None)
    connection.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    time.sleep(60)
    """
)


def test_a_database_locked_longer_than_the_timeout_is_named_as_such(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    optuna.create_study(storage="sqlite:///l.db", study_name="other")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, "l.db"], cwd=tmp_path, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        status = main(["search", *SMALL, "--storage", "sqlite:///l.db?timeout=0.5"])
        seconds = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert status == 1
    line = _one_error(capsys.readouterr().err)
    assert "locked by another process" in line and "0.5 s" in line, line
    assert "invalid data" not in line and "max length" not in line
    assert seconds < 30, f"the URL's timeout was not used ({seconds:.0f} s)"


def _small_tmpfs(folder: Path) -> bool:
    folder.mkdir()
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(folder)],
            capture_output=True,
        )
    except OSError:
        return False
    return mounted.returncode == 0


@pytest.fixture
def full_disk(tmp_path):
    """A folder on a 160 KiB file system (root only), unmounted afterwards."""
    folder = tmp_path / "small"
    if not _small_tmpfs(folder):
        pytest.skip("mounting a small tmpfs needs root")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_a_full_disk_is_named_as_such_and_the_search_resumes_once_there_is_room(
    full_disk, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    storage = f"sqlite:///{full_disk / 'f.db'}"
    search = ["search", "--dataset", "breast_cancer", "--classifier", "bayes"]
    search += ["--sampler", "iterative", "--storage", storage, "--no-figures"]
    assert main(search) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    line = _one_error("\n".join(line for line in err.splitlines() if "created new" not in line))
    assert "is full" in line and "run the same command to resume" in line, line
    assert "invalid data" not in line
    # Room again (the file moved to a larger disk): the same search resumes from what was kept.
    for name in ("f.db", "f.db-wal", "f.db-shm"):
        if (full_disk / name).exists():
            (tmp_path / name).write_bytes((full_disk / name).read_bytes())
    kept = _trials(tmp_path / "f.db")
    resumed = [*search[:-3], "--storage", "sqlite:///f.db", "--no-figures"]
    assert main(resumed) == 0
    study = optuna.load_study(study_name="breast_cancer/bayes/iterative", storage="sqlite:///f.db")
    assert len(study.trials) == 1320 and kept < 1320


def _disk_fills(monkeypatch, *, inside_a_trial: bool) -> None:
    """The disk fills inside the first trial, while it writes its second parameter (a study's
    first parameters are written one commit each, as suggested), or as the second trial is told
    (its parameters wait to be written together): each write then fails as SQLite and Optuna
    fail on a full disk."""
    from optuna.storages import RDBStorage

    from optuna_boxcox._optuna import _storage

    if inside_a_trial:
        monkeypatch.setattr(
            RDBStorage, "set_trial_param", disk_full_after(RDBStorage.set_trial_param, 1)
        )
    else:
        write = _storage.write_running_trial_params
        monkeypatch.setattr(_storage, "write_running_trial_params", disk_full_after(write, 0))


TPE = ["search", "--dataset", "wine", "--features", "2", "--sampler", "tpe", "--n-trials", "20"]


@pytest.mark.parametrize("inside_a_trial", [True, False], ids=["inside-a-trial", "as-it-is-told"])
def test_a_full_disk_under_an_optuna_sampler_is_said_in_one_line(
    tmp_path, monkeypatch, capsys, caplog, inside_a_trial
):
    monkeypatch.chdir(tmp_path)
    _disk_fills(monkeypatch, inside_a_trial=inside_a_trial)
    assert main([*TPE, "--storage", "sqlite:///t.db", "--no-figures"]) == 1
    # Optuna's log goes to the stream its handler was made with, which capsys does not see.
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("optuna.")]
    assert not logged, f"Optuna logged the failed trial, with its tracebacks: {logged}"
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    line = _one_error("\n".join(line for line in err.splitlines() if "created new" not in line))
    assert "is full" in line and "run the same command to resume" in line, line


def test_the_trial_a_full_disk_stopped_is_run_again_when_the_search_resumes(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    tpe = [*TPE, "--storage", "sqlite:///t.db", "--no-figures"]
    with monkeypatch.context() as patched:
        _disk_fills(patched, inside_a_trial=True)
        assert main(tpe) == 1
    assert main(tpe) == 0
    (name,) = optuna.get_all_study_names("sqlite:///t.db")
    states = [t.state for t in optuna.load_study(study_name=name, storage="sqlite:///t.db").trials]
    assert states == [optuna.trial.TrialState.COMPLETE] * 20, states


def test_a_database_error_under_optunas_commit_message_is_described_by_its_cause():
    from optuna.exceptions import StorageInternalError
    from sqlalchemy.exc import OperationalError

    def raised(cause: BaseException) -> BaseException:
        try:
            try:
                raise OperationalError("INSERT", {}, cause) from cause
            except OperationalError as wrapped:
                raise StorageInternalError("... e.g. exceeding max length.") from wrapped
        except StorageInternalError as error:
            return error

    full = raised(sqlite3.OperationalError("database or disk is full"))
    assert "is full" in storage_failure(full, "sqlite:///a.db")
    locked = raised(sqlite3.OperationalError("database is locked"))
    assert "locked by another process" in storage_failure(locked, "sqlite:///a.db?timeout=2")
    assert "(2 s;" in storage_failure(locked, "sqlite:///a.db?timeout=2")
    no_room = raised(OSError(errno.ENOSPC, "No space left on device"))
    assert "is full" in storage_failure(no_room)
    other = raised(sqlite3.OperationalError("disk I/O error"))
    assert storage_failure(other, "postgresql://u:pw@h/db") == (
        "the study storage postgresql://u:***@h/db failed: disk I/O error"
    )
    assert storage_failure(ValueError("not a database error")) is None


# -- more jobs than cores --------------------------------------------------------------------------


def test_n_jobs_above_the_usable_cores_is_cut_down_with_a_warning():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert _parallel.usable_cores() == cores
    with pytest.warns(RuntimeWarning, match=rf"n_jobs=1000 is more than the {cores} CPU core"):
        assert _parallel.resolve_n_jobs(1000) == cores
    assert _parallel.resolve_n_jobs(-1) == cores


def test_search_with_n_jobs_1000_warns_in_one_line_and_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["search", *SMALL, "--n-jobs", "1000", "--no-figures"]) == 0
    warned = [line for line in _lines(capsys.readouterr().err) if "1000" in line]
    assert len(warned) == 1 and "CPU core" in warned[0], warned


# -- what a search says it did ---------------------------------------------------------------------


def test_an_open_ended_sampler_on_a_new_study_reports_its_time_not_nothing_to_do(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    tpe = ["search", "--dataset", "wine", "--features", "2", "--sampler", "tpe", "--n-trials", "5"]
    assert main([*tpe, "--no-figures"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^study .*\(5 trials, [\d.]+ s\)$", out, re.M), out
    assert "nothing" not in out


# -- Ctrl-C twice ----------------------------------------------------------------------------------

TWICE = textwrap.dedent(
    """
    import signal, time
    from optuna_boxcox.cli import _second_interrupt_quits
    _second_interrupt_quits()
    try:
        signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        print("first", flush=True)
        signal.raise_signal(signal.SIGINT)  # while the first is being handled
        time.sleep(10)
    print("not stopped", flush=True)
    """
)

LOST = textwrap.dedent(
    """
    import signal, time, weakref
    from optuna_boxcox.cli import _second_interrupt_quits
    _second_interrupt_quits()

    class Thing:
        pass

    thing = Thing()
    # Ctrl-C while a weakref callback runs: Python reports it there and carries on.
    watch = weakref.ref(thing, lambda _ref: signal.raise_signal(signal.SIGINT))
    try:
        del thing
        time.sleep(10)
        print("lost", flush=True)
    except KeyboardInterrupt:
        print("stopped", flush=True)
    """
)


def _script(code: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_second_ctrl_c_quits_at_once_in_one_line_with_status_130(tmp_path):
    run = _script(TWICE, tmp_path)
    assert run.returncode == INTERRUPTED
    assert run.stdout == "first\n"
    assert run.stderr == (
        "optuna-boxcox: interrupted again: stopped at once; what was written is kept, run the "
        "same command to resume\n"
    )


def test_a_ctrl_c_that_lands_in_a_finaliser_still_stops_the_command(tmp_path):
    run = _script(LOST, tmp_path)
    assert run.stdout == "stopped\n", run.stdout + run.stderr
    assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr, run.stderr


@pytest.mark.long
def test_ctrl_c_twice_during_a_search_exits_130_without_a_traceback_and_it_resumes(tmp_path):
    db = tmp_path / "s.db"
    command = ["search", "--dataset", "breast_cancer", "--classifier", "knn"]
    command += ["--sampler", "combined2", "--storage", f"sqlite:///{db}", "--no-figures"]
    search = _popen(*command, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 120
        while _trials(db) == 0 and search.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert search.poll() is None, "the search ended before it could be interrupted"
        search.send_signal(signal.SIGINT)
        time.sleep(0.01)
        if search.poll() is None:
            search.send_signal(signal.SIGINT)
        _, err = search.communicate(timeout=60)
    finally:
        if search.poll() is None:
            search.kill()
            search.wait()
    assert search.returncode == INTERRUPTED, err
    assert "Traceback" not in err and "Exception" not in err, err
    assert all(line.startswith("optuna-boxcox: ") for line in _lines(err)), err
    assert any("interrupted" in line for line in _lines(err)), err
    resumed = subprocess.run(
        [sys.executable, "-m", "optuna_boxcox.cli", *command],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    study = optuna.load_study(study_name="breast_cancer/knn/combined2", storage=f"sqlite:///{db}")
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) == len(study.trials), "a trial was left unfinished"


# -- the dashboard shown to others -----------------------------------------------------------------


def test_loopback_hosts_are_told_from_every_interface():
    assert is_loopback("127.0.0.1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    if socket.has_ipv6:
        assert is_loopback("::1") and not is_loopback("::")


def _request(url: str, method: str = "GET", body: dict | None = None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _serve(db: Path, *options: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = _popen("dashboard", f"sqlite:///{db}", "--port", str(port), *options, cwd=db.parent)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        try:
            _request(f"{base}/api/studies")
            return server, base
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise AssertionError(f"the dashboard did not start: {server.communicate()}")


def _stop(server: subprocess.Popen) -> str:
    server.send_signal(signal.SIGINT)
    try:
        _, err = server.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        raise AssertionError(
            f"Ctrl-C did not stop the dashboard: {server.communicate()}"
        ) from None
    return err


def test_a_read_only_dashboard_shows_studies_and_refuses_every_change(tmp_path):
    db = tmp_path / "s.db"
    optuna.create_study(storage=f"sqlite:///{db}", study_name="kept")
    server, base = _serve(db, "--read-only", "--host", "0.0.0.0")
    try:
        status, body = _request(f"{base}/api/studies")
        assert status == 200 and "kept" in body
        created = _request(
            f"{base}/api/studies", "POST", {"study_name": "x", "directions": ["maximize"]}
        )
        deleted = _request(f"{base}/api/studies/1", "DELETE")
        noted = _request(f"{base}/api/studies/1/note", "PUT", {"version": 1, "body": "x"})
    finally:
        err = _stop(server)
    for status, body in (created, deleted, noted):
        assert status == 403 and "read-only" in json.loads(body)["reason"]
    names = [s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{db}")]
    assert names == ["kept"]
    warned = [line for line in err.splitlines() if "warning" in line]
    assert len(warned) == 1 and "no authentication" in warned[0], err
    assert "change or delete" not in warned[0], "a read-only dashboard cannot change studies"
    assert not (tmp_path / "artifacts").exists()


def test_a_dashboard_on_this_machine_warns_not_and_makes_its_folder_at_the_first_upload(tmp_path):
    db = tmp_path / "s.db"
    optuna.create_study(storage=f"sqlite:///{db}", study_name="kept")
    server, base = _serve(db)
    try:
        assert _request(f"{base}/api/studies")[0] == 200
        assert not (tmp_path / "artifacts").exists(), "an artifact folder was made for nothing"
        upload = {"file": "data:text/plain;base64,aGVsbG8=", "filename": "note.txt"}
        status, _ = _request(f"{base}/api/artifacts/1", "POST", upload)
    finally:
        err = _stop(server)
    assert "warning" not in err, err
    assert status == 201
    assert [p.read_bytes() for p in (tmp_path / "artifacts").iterdir()] == [b"hello"]


def test_a_writable_dashboard_on_every_interface_warns_that_anyone_can_change_studies(tmp_path):
    db = tmp_path / "s.db"
    optuna.create_study(storage=f"sqlite:///{db}", study_name="kept")
    server, _ = _serve(db, "--host", "0.0.0.0")
    err = _stop(server)
    warned = [line for line in err.splitlines() if "warning" in line]
    assert len(warned) == 1, err
    assert (
        "0.0.0.0" in warned[0] and "change or delete" in warned[0] and "--read-only" in warned[0]
    )


# -- a column whose range overflows ----------------------------------------------------------------


def test_a_column_spanning_the_whole_float_range_is_refused_by_name(tmp_path, monkeypatch, capsys):
    rng = np.random.default_rng(0)
    data = pd.DataFrame(rng.lognormal(size=(40, 2)), columns=["a", "b"])
    data["huge"] = rng.uniform(-1, 1, 40) * 1.7e308
    data["y"] = [0, 1] * 20
    data.to_csv(tmp_path / "d.csv", index=False)
    monkeypatch.chdir(tmp_path)
    assert main(["search", "--csv", "d.csv", "--label", "y", "--classifier", "bayes"]) == 2
    line = _one_error(capsys.readouterr().err)
    assert "'huge'" in line and "largest float64" in line and "'a'" not in line, line


def test_the_transformer_refuses_such_a_column_by_name_too():
    from optuna_boxcox import BoxCoxTransformer

    X = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "huge": [-1.7e308, 0.0, 1.0, 1.7e308]})
    with pytest.raises(ValueError, match=r"'huge' span more"):
        BoxCoxTransformer().fit(X)


def test_ctrl_c_inside_a_database_call_whose_clean_up_fails_is_one_line(monkeypatch, capsys):
    """A Ctrl-C inside a PostgreSQL query: the driver's rollback fails in its turn, raising an
    error whose context is the interrupt; the user sees the interrupt's one line, exit 130."""
    from optuna_boxcox.cli import main
    import optuna_boxcox.cli.search as cli_search

    def interrupted_query(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("can't reset the connection: query canceled") from None

    monkeypatch.setattr(cli_search, "cmd_search", interrupted_query)
    assert main(["search", "--dataset", "wine"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "optuna-boxcox: interrupted; run the same command to resume", err


# -- a bug, told apart from a mistake ---------------------------------------------------------------


def _failing_commands(monkeypatch: pytest.MonkeyPatch, fail: Callable[[], None]) -> None:
    """Every command calls ``fail`` as soon as it runs."""
    build = optuna_boxcox.cli.build_parser

    def failing_parser() -> argparse.ArgumentParser:
        parser = build()
        # The commands' parsers are argparse's private state.
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for command in commands.choices.values():
            command.set_defaults(func=lambda args: fail())
        return parser

    monkeypatch.setattr(optuna_boxcox.cli, "build_parser", failing_parser)


def _raise(error: BaseException) -> Callable[[], None]:
    def fail() -> None:
        raise error

    return fail


@pytest.mark.parametrize(
    "error, said",
    [
        (KeyError("x"), "KeyError: 'x'"),
        (TypeError("unsupported operand type(s)"), "TypeError: unsupported operand type(s)"),
        (AttributeError("no attribute 'params'"), "AttributeError: no attribute 'params'"),
        (
            ImportError("cannot import name 'plan_size'", name="optuna_boxcox._study._plan_size"),
            "ImportError: cannot import name 'plan_size'",
        ),
        (NotImplementedError(), "NotImplementedError"),
    ],
    ids=["KeyError", "TypeError", "AttributeError", "ImportError-of-the-package", "bare"],
)
def test_a_bug_inside_a_command_is_one_line_saying_so_not_a_usage_error(
    error, said, monkeypatch, capsys
):
    _failing_commands(monkeypatch, _raise(error))
    status = main(["search", "--dataset", "wine"])
    err = capsys.readouterr().err
    assert err.count("\n") == 1, f"the user should see one line, saw:\n{err}"
    assert err.startswith(f"optuna-boxcox: internal error: {said} (a bug in optuna-boxcox "), err
    assert "worth reporting" in err and "--debug to see the traceback" in err, err
    assert status == optuna_boxcox.cli.INTERNAL_ERROR, f"exit status {status}"
    assert status not in (1, 2), "a bug exits as a failing machine (1) or a usage error (2)"


@pytest.mark.parametrize(
    "error, status, said",
    [
        (
            UsageError("--cv must be at least 2 folds, got 1"),
            2,
            "--cv must be at least 2 folds, got 1",
        ),
        (DataError("data.csv has one row"), 2, "data.csv has one row"),
        (AdvisedValueError("or fewer points ({grid_size})"), 2, "or fewer points (--grid-size)"),
        (ValueError("y has a single class"), 2, "y has a single class"),
        (
            StorageError("cannot open x.db"),
            1,
            "StorageError: cannot open x.db (run with --debug for details)",
        ),
        (
            RuntimeError("a worker process of the search died (exit code -9: killed?)"),
            1,
            "RuntimeError: a worker process of the search died (exit code -9: killed?) (run "
            "with --debug for details)",
        ),
        (
            MissingPeerError("transform 'kdi' needs kditransform"),
            1,
            "MissingPeerError: transform 'kdi' needs kditransform (run with --debug for details)",
        ),
        (
            ModuleNotFoundError("No module named 'optuna_dashboard'", name="optuna_dashboard"),
            1,
            "ModuleNotFoundError: No module named 'optuna_dashboard' (run with --debug for "
            "details)",
        ),
        (
            PermissionError(errno.EACCES, "Permission denied"),
            1,
            "PermissionError: [Errno 13] Permission denied (run with --debug for details)",
        ),
    ],
    ids=[
        "UsageError",
        "DataError",
        "AdvisedValueError",
        "ValueError",
        "StorageError",
        "a-worker-died",
        "MissingPeerError",
        "a-dependency-missing",
        "PermissionError",
    ],
)
def test_a_mistake_or_a_failing_machine_is_one_line_as_before(
    error, status, said, monkeypatch, capsys
):
    _failing_commands(monkeypatch, _raise(error))
    assert main(["search", "--dataset", "wine"]) == status
    assert capsys.readouterr().err == f"optuna-boxcox: error: {said}\n"


def test_scikit_learns_parameter_validation_is_one_line_the_user_can_fix(monkeypatch, capsys):
    from sklearn.neighbors import KNeighborsClassifier

    def fit() -> None:
        KNeighborsClassifier(n_neighbors=0).fit([[0.0], [1.0]], [0, 1])

    _failing_commands(monkeypatch, fit)
    assert main(["search", "--dataset", "wine"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("optuna-boxcox: error: The 'n_neighbors' parameter of "), err
    assert err.count("\n") == 1 and "Got 0 instead." in err, err


def test_worker_on_a_study_name_that_is_not_there_names_it_in_one_line(
    tmp_path, monkeypatch, capsys
):
    # Optuna says "no such study" with a KeyError, which the worker words as the user's mistake.
    monkeypatch.chdir(tmp_path)
    optuna.create_study(storage="sqlite:///s.db", study_name="kept")
    assert main(["worker", "--storage", "sqlite:///s.db", "--study-name", "kep"]) == 2
    assert capsys.readouterr().err == (
        "optuna-boxcox: error: no study 'kep' in sqlite:///s.db; start it with 'search'\n"
    )


#: Each command with the arguments it cannot run without.
COMMANDS = {
    "search": ["search"],
    "worker": ["worker", "--storage", "sqlite:///s.db", "--study-name", "t"],
    "demo": ["demo"],
    "dashboard": ["dashboard", "sqlite:///s.db"],
    "compare": ["compare"],
    "benchmark": ["benchmark"],
    "reproduce": ["reproduce", "table8"],
    "meta": ["meta"],
    "bench": ["bench"],
}


def test_the_commands_tried_with_debug_are_all_the_commands():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(commands.choices) == sorted(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_debug_before_or_after_any_command_raises_the_bug_and_without_it_says_one_line(
    command, monkeypatch, capsys
):
    _failing_commands(monkeypatch, _raise(KeyError("x")))
    for argv in (["--debug", *COMMANDS[command]], [*COMMANDS[command], "--debug"]):
        with pytest.raises(KeyError, match="'x'"):
            main(argv)
    assert main(COMMANDS[command]) == optuna_boxcox.cli.INTERNAL_ERROR
    assert "internal error: KeyError: 'x'" in capsys.readouterr().err


BUG = textwrap.dedent(
    """
    import sys
    import optuna_boxcox.cli.search as cli_search
    from optuna_boxcox.cli import run

    def cmd_search(args):
        raise KeyError("x")

    cli_search.cmd_search = cmd_search
    sys.argv[0] = "optuna-boxcox"
    run()
    """
)


def _buggy_command(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``optuna-boxcox ARGS`` as a user runs it, with a search command that has a bug."""
    return _script(BUG, cwd, *args)


def test_the_console_script_shows_a_bugs_traceback_only_when_asked(tmp_path):
    quiet = _buggy_command("search", "--dataset", "wine", cwd=tmp_path)
    assert quiet.returncode == optuna_boxcox.cli.INTERNAL_ERROR, quiet.stderr
    assert quiet.stderr.startswith("optuna-boxcox: internal error: KeyError: 'x' ("), quiet.stderr
    assert "Traceback" not in quiet.stderr
    shown = _buggy_command("search", "--dataset", "wine", "--debug", cwd=tmp_path)
    assert "Traceback (most recent call last)" in shown.stderr, shown.stderr
    assert shown.stderr.rstrip().endswith("KeyError: 'x'"), shown.stderr
