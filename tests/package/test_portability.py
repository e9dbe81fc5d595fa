"""The package imports, and runs in one process, where there is no fcntl and no fork."""

from __future__ import annotations

import subprocess
import sys

import optuna
import pytest
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import make_sampler
from optuna_boxcox import optimize
from optuna_boxcox._system import _parallel


def test_the_package_and_its_command_line_import_without_fcntl(tmp_path):
    (tmp_path / "fcntl.py").write_text('raise ImportError("no fcntl on this platform")\n')
    code = (
        "import optuna_boxcox, optuna_boxcox.cli, sys\n"
        "from optuna_boxcox.cli import build_parser\n"
        "build_parser()\n"
        "import optuna_boxcox._runner, optuna_boxcox._system._parallel, optuna_boxcox.experiments.compare\n"
        "import optuna_boxcox.experiments.reproduce, optuna_boxcox.experiments.meta, optuna_boxcox.bench\n"
        "assert optuna_boxcox.optimize and optuna_boxcox.BoxCoxClassifier\n"
        "assert 'fcntl' not in sys.modules\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        env={"PYTHONPATH": str(tmp_path), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr


def test_without_fork_n_jobs_runs_in_this_process_with_a_warning(monkeypatch, breast_cancer):
    monkeypatch.setattr(_parallel, "worker_context", lambda: None)
    X, y = breast_cancer.data.iloc[:, :3], breast_cancer.target
    study = optuna.create_study(direction="maximize", sampler=make_sampler("spherical"))
    with pytest.warns(RuntimeWarning, match=r"n_jobs=2 needs worker processes forked"):
        result = optimize(study, BoxCoxObjective(X, y, GaussianNB()), n_jobs=2)
    assert result.finished and len(study.trials) == 11

    done = []
    with pytest.warns(RuntimeWarning, match="running in this process only"):
        _parallel.map_tasks([1, 2, 3], lambda k: k * k, lambda k, r: done.append(r), n_jobs=2)
    assert done == [1, 4, 9]
