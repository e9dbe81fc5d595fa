"""Many workers on one PostgreSQL study: same result as one worker, nothing lost or done twice."""

from __future__ import annotations

from collections import Counter
import os
import random
import signal
import subprocess
import sys
import time

import optuna
import pytest

from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.storage import open_storage

# The scale (combined1 on all 30 breast-cancer features: 5,280 trials trial by trial) is
# marked slow; CI runs the same tests on the iterative preset over 5 features (220 trials).
SCALES = [
    pytest.param(("iterative", 5), id="iterative-5-features"),
    pytest.param(("combined1", 30), id="combined1-30-features", marks=pytest.mark.slow),
]


@pytest.fixture(params=SCALES)
def scale(request):
    return request.param


def worker(url: str, study: str, scale, batched: bool = False) -> list[str]:
    preset, features = scale
    return [
        sys.executable,
        "-m",
        "optuna_boxcox.cli",
        "search",
        "--dataset",
        "breast_cancer",
        "--features",
        str(features),
        "--classifier",
        "bayes",
        "--sampler",
        preset,
        "--storage",
        url,
        "--study-name",
        study,
        "--seed",
        "5",
        "--no-figures",
        *([] if batched else ["--no-batch"]),
    ]


def outcome(url: str, study: str, scale):
    loaded = optuna.load_study(study_name=study, storage=open_storage(url))
    return loaded, CoordinateGridSampler.from_preset(scale[0], seed=5).result(loaded)


def budget(scale) -> int:
    preset, features = scale
    return CoordinateGridSampler.from_preset(preset).budget(features)


def plan_keys(study):
    return Counter(
        (t.user_attrs["epoch"], t.user_attrs["direction"], t.user_attrs["candidate"])
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if "epoch" in t.user_attrs
    )


@pytest.fixture
def single_worker(tmp_path, scale):
    url = f"sqlite:///{tmp_path / 'ref.db'}"
    subprocess.run(
        worker(url, "ref", scale, batched=True), check=True, capture_output=True, timeout=900
    )
    return outcome(url, "ref", scale)[1]


@pytest.mark.long
def test_three_workers_on_postgresql_end_with_the_single_worker_result(
    postgres_url, single_worker, scale
):
    procs = [
        subprocess.Popen(
            worker(postgres_url, "bc", scale), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    for p in procs:
        _, err = p.communicate(timeout=1800)
        assert p.returncode == 0, err.decode()[-1500:]
    study, result = outcome(postgres_url, "bc", scale)
    assert result.finished
    assert result.params == single_worker.params and result.best_value == single_worker.best_value
    keys = plan_keys(study)
    assert len(keys) == budget(scale) and max(keys.values()) == 1, (
        "a plan position was lost or done twice"
    )


@pytest.mark.long
def test_three_batched_searches_on_postgresql_share_the_plan_and_complete_each_position_once(
    postgres_url, single_worker, scale
):
    """Default (batched) search processes claim the positions they score through the storage."""
    procs = [
        subprocess.Popen(
            worker(postgres_url, "batched", scale, batched=True),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(3)
    ]
    for p in procs:
        _, err = p.communicate(timeout=1800)
        assert p.returncode == 0, err.decode()[-1500:]
    study, result = outcome(postgres_url, "batched", scale)
    assert result.finished
    assert result.params == single_worker.params and result.best_value == single_worker.best_value
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    positions = Counter(t.system_attrs["boxcox:position"] for t in complete)
    assert len(complete) == budget(scale) and max(positions.values()) == 1, (
        f"{len(complete)} complete trials for a {budget(scale)}-trial plan: positions done twice"
    )


def completed(url: str, study: str) -> int:
    try:
        loaded = optuna.load_study(study_name=study, storage=open_storage(url))
    except KeyError:  # no worker has created the study yet
        return 0
    return len(loaded.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))


@pytest.mark.long
def test_a_worker_killed_at_random_points_loses_and_duplicates_nothing(
    postgres_url, single_worker, scale
):
    rng = random.Random(7)
    # Kill at random points of progress (not of wall time: at full scale the start-up alone can
    # outlast a few seconds, and a kill before the first trial tests nothing).
    kill_points = sorted(rng.sample(range(5, int(0.8 * budget(scale))), 3))
    procs = [
        subprocess.Popen(
            worker(postgres_url, "kill", scale),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(3)
    ]
    killed_at = []
    for point in kill_points:  # kill one of the workers mid-search, replace it, again
        deadline = time.monotonic() + 1200
        while (done := completed(postgres_url, "kill")) < point:
            assert time.monotonic() < deadline, "the workers made no progress"
            assert any(p.poll() is None for p in procs), "every worker ended before the kill point"
            time.sleep(0.1)
        victim = rng.randrange(len(procs))
        if procs[victim].poll() is None:
            os.kill(procs[victim].pid, signal.SIGKILL)
            procs[victim].wait()
            killed_at.append(done)
        procs[victim] = subprocess.Popen(
            worker(postgres_url, "kill", scale),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    assert len(killed_at) == len(kill_points), f"a worker had already ended: killed at {killed_at}"
    for p in procs:
        assert p.wait(timeout=1800) == 0
    fresh = subprocess.run(
        worker(postgres_url, "kill", scale), capture_output=True, text=True, timeout=900
    )
    assert fresh.returncode == 0, fresh.stderr
    study, result = outcome(postgres_url, "kill", scale)
    assert result.params == single_worker.params and result.best_value == single_worker.best_value
    keys = plan_keys(study)
    assert len(keys) == budget(scale) and max(keys.values()) == 1
    assert not [t.number for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]


def test_batched_run_on_postgresql_equals_the_sqlite_one(postgres_url, single_worker, scale):
    run = subprocess.run(
        worker(postgres_url, "batched", scale, batched=True),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    study, result = outcome(postgres_url, "batched", scale)
    assert result.params == single_worker.params
    assert [t.number for t in study.trials] == list(range(budget(scale)))


# -- names longer than a database server keeps ---------------------------------------------------

LONG = "a" * 600  # Optuna's schema keeps parameter names of 512 characters


def _long_named_csv(folder) -> str:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({LONG: rng.random(60) + 0.1, "b": rng.random(60) + 0.1})
    frame["y"] = (frame["b"] > 0.5).astype(int)
    path = folder / "long.csv"
    frame.to_csv(path, index=False)
    return str(path)


def test_a_column_name_longer_than_postgresql_keeps_is_refused_before_a_study_is_made(
    postgres_url, tmp_path, capsys
):
    from optuna_boxcox.cli import main

    search = ["search", "--csv", _long_named_csv(tmp_path), "--label", "y", "--classifier"]
    search += ["bayes", "--sampler", "iterative", "--storage", postgres_url, "--no-figures"]
    assert main(search) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "600 characters" in lines[0] and "512" in lines[0], lines
    assert optuna.get_all_study_names(postgres_url) == [], "the refusal left an empty study"


def test_the_library_refuses_the_long_column_name_before_writing_into_the_callers_study(
    postgres_url, breast_cancer
):
    from sklearn.naive_bayes import GaussianNB

    from optuna_boxcox import BoxCoxObjective
    from optuna_boxcox import optimize

    X = breast_cancer.data.iloc[:, :2].rename(columns={"mean texture": LONG})
    study = optuna.create_study(storage=open_storage(postgres_url), direction="maximize")
    with pytest.raises(ValueError, match="600 characters"):
        optimize(study, BoxCoxObjective(X, breast_cancer.target, GaussianNB()), n_trials=3)
    assert study.trials == [] and study.user_attrs == {}


def test_sqlite_keeps_a_long_column_name(tmp_path, breast_cancer):
    from sklearn.naive_bayes import GaussianNB

    from optuna_boxcox import BoxCoxObjective
    from optuna_boxcox import optimize

    X = breast_cancer.data.iloc[:, :2].rename(columns={"mean texture": LONG})
    url = f"sqlite:///{tmp_path / 'long.db'}"
    study = optuna.create_study(storage=open_storage(url), direction="maximize")
    optimize(study, BoxCoxObjective(X, breast_cancer.target, GaussianNB()), n_trials=3)
    assert [LONG in t.params for t in study.trials] == [True] * 3
