"""Shared fixtures: the paper's two real data sets as scikit-learn Bunches (data, target, frame)."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import uuid

import pandas as pd
import pytest
from shared import SONAR_CSV
from shared import free_port
from sklearn.datasets import load_breast_cancer
from sklearn.utils import Bunch


def pytest_configure(config) -> None:
    """A shell starts a background job (``make test &``, ``nohup``) with SIGINT ignored, and every
    process it starts inherits that: the Ctrl-C tests would then test a background job's ignored
    Ctrl-C. A terminal's Ctrl-C never reaches a background job, so the suite takes Python's own
    handler back and its children start with SIGINT as from a terminal. (SIGHUP stays as it is:
    ``nohup`` is asked for; its tests skip, :func:`shared.skip_if_ignored`.)"""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def sonar() -> Bunch:
    """Sonar (208 × 60): ``data`` has columns x0..x59, ``target`` is y (1 = rock, 0 = mine)."""
    if not SONAR_CSV.exists():
        pytest.skip(
            f"sonar data not found at {SONAR_CSV} (expected beside the repository in shared/data)"
        )
    frame = pd.read_csv(SONAR_CSV)
    features = [f"x{j}" for j in range(60)]
    return Bunch(data=frame[features], target=frame["y"], frame=frame, feature_names=features)


@pytest.fixture(scope="session")
def breast_cancer() -> Bunch:
    """Breast cancer (569 × 30) from scikit-learn, as DataFrame ``data`` and Series ``target``."""
    return load_breast_cancer(as_frame=True)


# -- a throw-away PostgreSQL server on loopback ---------------------------------------------------


def _as_server_user(command: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root; Debian's package brings a 'postgres' user.
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


@pytest.fixture(scope="session")
def postgres_server():
    """(host, port) of a PostgreSQL server started for this test session, or a skip saying why."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not bins:
        pytest.skip(
            "PostgreSQL server not installed (make test installs Debian's postgresql as root)"
        )
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg not installed (pip extra 'postgres')")
    bindir = os.path.dirname(bins[-1])
    root = tempfile.mkdtemp(prefix="optuna-boxcox-pg-")
    data, sockets = os.path.join(root, "data"), os.path.join(root, "run")
    os.makedirs(sockets)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    port = free_port()
    run = lambda *cmd: subprocess.run(
        _as_server_user(list(cmd)), capture_output=True, text=True, timeout=120
    )
    init = run(f"{bindir}/initdb", "-D", data, "--auth=trust", "-U", "postgres")
    if init.returncode != 0:
        pytest.skip(f"initdb failed: {init.stderr.strip()[:300]}")
    options = (
        f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off"
    )
    start = run(
        f"{bindir}/pg_ctl",
        "-D",
        data,
        "-o",
        options,
        "-l",
        os.path.join(root, "log"),
        "-w",
        "start",
    )
    if start.returncode != 0:
        pytest.skip(f"PostgreSQL could not start: {start.stderr.strip()[:300]}")
    try:
        yield "127.0.0.1", port
    finally:
        run(f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop")
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server):
    """URL of a fresh, empty database on the session's PostgreSQL server."""
    import psycopg

    host, port = postgres_server
    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(
        host=host, port=port, user="postgres", dbname="postgres", autocommit=True
    ) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql+psycopg://postgres@{host}:{port}/{name}"


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, tmp_path):
    """A database URL for a study, once SQLite and once the throw-away PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'read.db'}"
    return request.getfixturevalue("postgres_url")
