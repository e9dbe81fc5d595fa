"""Several processes on one study, and a process killed mid-search: same outcome as one clean run."""

from __future__ import annotations

from collections import Counter
import os
import signal
import subprocess
import sys
import time

import optuna
import pytest

from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.storage import open_storage

PRESET = "iterative"
FEATURES = 5  # 4 epochs · 5 features · 11 candidates = 220 trials


def search_command(
    storage: str, study: str, preset: str = PRESET, batched: bool = False
) -> list[str]:
    """One worker; by default trial by trial (study.optimize), the way workers share a study."""
    return [
        sys.executable,
        "-m",
        "optuna_boxcox.cli",
        "search",
        "--dataset",
        "breast_cancer",
        "--features",
        str(FEATURES),
        "--classifier",
        "bayes",
        "--sampler",
        preset,
        "--storage",
        storage,
        "--study-name",
        study,
        "--seed",
        "3",
        *([] if batched else ["--no-batch"]),
    ]


def run(storage: str, study: str, preset: str = PRESET) -> None:
    subprocess.run(
        search_command(storage, study, preset), check=True, capture_output=True, timeout=600
    )


def outcome(storage: str, study: str, preset: str = PRESET):
    loaded = optuna.load_study(study_name=study, storage=open_storage(storage))
    result = CoordinateGridSampler.from_preset(preset, seed=3).result(loaded)
    return loaded, result


def plan_keys(study: optuna.Study) -> Counter:
    return Counter(
        (t.user_attrs["epoch"], t.user_attrs["direction"], t.user_attrs["candidate"])
        for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
        if "epoch" in t.user_attrs
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted single-process run."""
    url = f"sqlite:///{tmp_path_factory.mktemp('reference') / 'ref.db'}"
    run(url, "ref")
    return outcome(url, "ref")


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_three_processes_end_with_the_single_process_result(tmp_path, reference, kind):
    url = (
        f"sqlite:///{tmp_path / 'shared.db'}"
        if kind == "sqlite"
        else str(tmp_path / "shared.jsonl")
    )
    workers = [
        subprocess.Popen(
            search_command(url, "shared"), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(3)
    ]
    for w in workers:
        _, err = w.communicate(timeout=600)
        assert w.returncode == 0, err.decode()[-2000:]
    study, result = outcome(url, "shared")
    _, expected = reference
    assert result.finished
    assert result.params == expected.params, "3 workers chose another Λ than 1 worker"
    assert result.best_value == expected.best_value
    keys = plan_keys(study)
    assert len(keys) == 4 * FEATURES * 11, "some plan positions were never completed"
    assert max(keys.values()) == 1, (
        f"positions completed twice: {[k for k, n in keys.items() if n > 1][:5]}"
    )


def completed(url: str, study: str) -> int:
    try:
        loaded = optuna.load_study(study_name=study, storage=open_storage(url))
    except KeyError:
        return 0
    return len(loaded.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))


@pytest.mark.parametrize("batched, kill_after", [(False, 15), (False, 97), (True, 60)])
def test_a_search_killed_and_restarted_ends_like_an_uninterrupted_one(
    tmp_path, reference, batched, kill_after
):
    url = f"sqlite:///{tmp_path / 'killed.db'}"
    command = search_command(url, "killed", batched=batched)
    worker = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while completed(url, "killed") < kill_after and worker.poll() is None:
        assert time.monotonic() < deadline, "the worker made no progress"
        time.sleep(0.05)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    subprocess.run(command, check=True, capture_output=True, timeout=600)  # the same command again
    study, result = outcome(url, "killed")
    _, expected = reference
    assert result.params == expected.params, "the restarted search chose another Λ"
    assert result.best_value == expected.best_value
    keys = plan_keys(study)
    assert len(keys) == 4 * FEATURES * 11 and max(keys.values()) == 1
    assert all(t.state != optuna.trial.TrialState.RUNNING for t in study.trials), (
        "a killed trial stayed RUNNING"
    )
