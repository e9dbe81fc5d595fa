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

PRESET = "combined1"


def worker(url: str, study: str, batched: bool = False) -> list[str]:
    return [
        sys.executable, "-m", "optuna_boxcox.cli", "search", "--dataset", "breast_cancer",
        "--classifier", "bayes", "--sampler", PRESET, "--storage", url, "--study-name", study,
        "--seed", "5", "--no-figures", *([] if batched else ["--no-batch"]),
    ]


def outcome(url: str, study: str):
    loaded = optuna.load_study(study_name=study, storage=open_storage(url))
    return loaded, CoordinateGridSampler.from_preset(PRESET, seed=5).result(loaded)


def plan_keys(study):
    return Counter(
        (t.user_attrs["epoch"], t.user_attrs["direction"], t.user_attrs["candidate"])
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if "epoch" in t.user_attrs
    )


@pytest.fixture(scope="module")
def single_worker(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('pg-reference') / 'ref.db'}"
    subprocess.run(worker(url, "ref", batched=True), check=True, capture_output=True, timeout=900)
    return outcome(url, "ref")[1]


def test_three_workers_on_postgresql_end_with_the_single_worker_result(postgres_url, single_worker):
    procs = [subprocess.Popen(worker(postgres_url, "bc"), stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=1800)
        assert p.returncode == 0, err.decode()[-1500:]
    study, result = outcome(postgres_url, "bc")
    assert result.finished
    assert result.params == single_worker.params and result.best_value == single_worker.best_value
    keys = plan_keys(study)
    assert len(keys) == 16 * 30 * 11 and max(keys.values()) == 1, "a plan position was lost or done twice"


def test_a_worker_killed_at_random_points_loses_and_duplicates_nothing(postgres_url, single_worker):
    rng = random.Random(7)
    procs = [subprocess.Popen(worker(postgres_url, "kill"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(3)]
    for _ in range(3):  # kill one of the workers at a random moment, replace it, again
        time.sleep(rng.uniform(2, 6))
        victim = rng.randrange(len(procs))
        if procs[victim].poll() is None:
            os.kill(procs[victim].pid, signal.SIGKILL)
            procs[victim].wait()
        procs[victim] = subprocess.Popen(worker(postgres_url, "kill"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for p in procs:
        assert p.wait(timeout=1800) == 0
    fresh = subprocess.run(worker(postgres_url, "kill"), capture_output=True, text=True, timeout=900)
    assert fresh.returncode == 0, fresh.stderr
    study, result = outcome(postgres_url, "kill")
    assert result.params == single_worker.params and result.best_value == single_worker.best_value
    keys = plan_keys(study)
    assert len(keys) == 16 * 30 * 11 and max(keys.values()) == 1
    assert not [t.number for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]


def test_batched_run_on_postgresql_equals_the_sqlite_one(postgres_url, single_worker):
    run = subprocess.run(worker(postgres_url, "batched", batched=True), capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    study, result = outcome(postgres_url, "batched")
    assert result.params == single_worker.params
    assert [t.number for t in study.trials] == list(range(16 * 30 * 11))
