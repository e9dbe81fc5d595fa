"""Trial datetimes tell the truth: when each trial was scored, in any time zone, on any path."""

from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys
import textwrap

import optuna
import pytest
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import make_sampler
from optuna_boxcox import optimize
from optuna_boxcox._runner import RunStats
from optuna_boxcox.storage import open_storage

_BOTH_PATHS = textwrap.dedent(
    """
    import datetime, sys
    import optuna
    from sklearn.datasets import load_breast_cancer
    from sklearn.naive_bayes import GaussianNB
    from optuna_boxcox import BoxCoxObjective, make_sampler, optimize
    from optuna_boxcox.storage import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = sys.argv[1]
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :3]
    started = datetime.datetime.now()
    for name, batch in (("batched", True), ("optimize", False)):
        study = optuna.create_study(storage=open_storage(url), study_name=name,
                                    direction="maximize", sampler=make_sampler("spherical"))
        optimize(study, BoxCoxObjective(X, y, GaussianNB()), batch=batch)
    ended = datetime.datetime.now()
    print(started.isoformat(), ended.isoformat())
    """
)


@pytest.mark.long
@pytest.mark.parametrize("zone", ["Asia/Tokyo", "America/Los_Angeles"])
def test_the_batched_path_stamps_trials_in_the_time_frame_study_optimize_does(tmp_path, zone):
    if not Path("/usr/share/zoneinfo", zone).exists():
        pytest.skip(f"time zone {zone} is not installed (no tzdata)")
    url = f"sqlite:///{tmp_path / 'times.db'}"
    env = {**os.environ, "TZ": zone}
    run = subprocess.run(
        [sys.executable, "-c", _BOTH_PATHS, url],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    # Read back in the same zone (as the dashboard on that machine would).
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import datetime, sys, optuna
                started, ended = (datetime.datetime.fromisoformat(t) for t in sys.argv[2:4])
                for name in ("batched", "optimize"):
                    for t in optuna.load_study(study_name=name, storage=sys.argv[1]).trials:
                        for moment in (t.datetime_start, t.datetime_complete):
                            assert started <= moment <= ended, (name, t.number, moment, started, ended)
                print("ok")
                """
            ),
            url,
            *run.stdout.split(),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0 and check.stdout.strip() == "ok", check.stderr


def test_a_batched_trials_durations_add_up_to_the_time_spent_scoring(tmp_path, breast_cancer):
    X, y = breast_cancer.data.iloc[:, :8], breast_cancer.target
    study = optuna.create_study(
        storage=open_storage(f"sqlite:///{tmp_path / 'd.db'}"),
        direction="maximize",
        sampler=make_sampler("iterative"),
    )
    stats = RunStats()
    optimize(study, BoxCoxObjective(X, y, GaussianNB()), stats=stats)
    trials = study.get_trials(deepcopy=False)
    durations = [(t.datetime_complete - t.datetime_start).total_seconds() for t in trials]
    assert all(d >= 0 for d in durations)
    assert sum(durations) == pytest.approx(stats.evaluate_seconds, rel=0.2)
    # Not the time of their batch's write: trials of one batch do not share one start.
    assert len({t.datetime_start for t in trials}) > len(trials) // 2
