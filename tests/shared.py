"""What several test folders share that is not a fixture: the data they read, free ports for the
servers they start (the dashboard, PostgreSQL). Fixtures live in the folders' ``conftest.py``."""

from __future__ import annotations

from pathlib import Path
import re
import signal
import socket

import pytest

#: The sonar CSV lives beside the repository (tests and CI only; the package fetches it from OpenML).
SONAR_CSV = Path(__file__).resolve().parents[2] / "shared" / "data" / "sonar.csv"


def stable_id(value: object) -> str:
    """``repr(value)`` without memory addresses: a test id must be the same in every process
    (pytest-xdist's workers each collect the suite and compare the ids)."""
    return re.sub(r" (object )?at 0x[0-9a-fA-F]+", "", repr(value))


def run_scikit_learn_check(check, estimator) -> None:
    """``check(estimator)``, one of ``parametrize_with_checks``'. scikit-learn's array API check
    skips where SciPy's array API support is off, "SCIPY_ARRAY_API is not set"; SciPy reads that
    variable once, at its import, so the skip says how to run the check."""
    import unittest

    try:
        check(estimator)
    except unittest.SkipTest as skipped:
        if "SCIPY_ARRAY_API is not set" not in str(skipped):
            raise
        pytest.skip(
            "scikit-learn's array API check needs SciPy's array API support, read at SciPy's "
            "import: run it with SCIPY_ARRAY_API=1 .venv/bin/python -m pytest "
            "tests/estimator/test_sklearn_checks.py tests/transform/test_transformer.py -k array_api"
        )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def skip_if_ignored(*names: str) -> None:
    """Skip the calling test when one of the signals ``names`` is ignored in this run: a child
    inherits the ignored disposition, and the package keeps a signal ignored at start ignored (as
    the README promises for ``nohup``'s SIGHUP; a shell's background job ignores SIGINT)."""
    for name in names:
        if signal.getsignal(getattr(signal, name)) is signal.SIG_IGN:
            pytest.skip(f"{name} is ignored in this test run (nohup or a background job)")


def local_dask_client(memory_limit: str):
    """A context giving a ``distributed.Client`` of two single-threaded worker processes on
    loopback, each limited to ``memory_limit``: the Dask tests' cluster (Dask must be installed)."""
    import contextlib
    import logging

    import distributed

    @contextlib.contextmanager
    def running():
        with (
            distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                memory_limit=memory_limit,
                host="127.0.0.1",
                # A free port: None still serves the dashboard on 8787, and two clusters at once warn.
                dashboard_address=":0",
                silence_logs=logging.ERROR,
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            yield client

    return running()


def disk_full_after(write, after: int = 0):
    """``write``, failing as SQLite and Optuna fail on a full disk after ``after`` calls."""
    import sqlite3

    from optuna.exceptions import StorageInternalError
    from sqlalchemy.exc import OperationalError

    calls = [0]

    def full(*args, **kwargs):
        calls[0] += 1
        if calls[0] <= after:
            return write(*args, **kwargs)
        cause = sqlite3.OperationalError("database or disk is full")
        try:
            raise OperationalError("COMMIT", {}, cause) from cause
        except OperationalError as error:
            raise StorageInternalError("… e.g. exceeding max length.") from error

    return full
