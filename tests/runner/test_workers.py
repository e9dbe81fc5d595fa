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


@pytest.mark.long
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


@pytest.mark.long
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


def _children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux /proc)."""
    found = []
    for stat in os.listdir("/proc"):
        if not stat.isdigit():
            continue
        try:
            with open(f"/proc/{stat}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the workers through /proc")
def test_the_workers_of_a_search_killed_with_minus_9_die_with_it(tmp_path):
    """A search whose process is killed leaves no worker behind holding the database (workers
    ignore Ctrl-C, so nobody would stop them)."""
    url = f"sqlite:///{tmp_path / 'orphans.db'}"
    command = [*search_command(url, "s", preset="shift", batched=True), "--n-jobs", "2"]
    command[command.index("--features") + 1] = "30"
    # The paper's MLP fits for seconds: the search is surely running when it is killed.
    command[command.index("--classifier") + 1] = "nn"
    search = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (workers := _children(search.pid)):
        assert search.poll() is None and time.monotonic() < deadline, "no worker started"
        time.sleep(0.05)
    time.sleep(0.5)  # scoring
    assert search.poll() is None, "the search ended before it could be killed"
    os.kill(search.pid, signal.SIGKILL)
    search.wait()
    time.sleep(5)
    orphans = [pid for pid in workers if _alive(pid)]
    for pid in orphans:
        os.kill(pid, signal.SIGKILL)
    assert orphans == [], "a worker outlived its search by 5 s"


def test_a_search_whose_partner_is_killed_reports_what_the_storage_holds(tmp_path, reference):
    """Two batched searches on one study, one killed with -9 mid-run: the survivor completes the
    positions the dead one held before it reports, and its report is the storage's."""
    import re

    url = f"sqlite:///{tmp_path / 'pair.db'}"
    command = search_command(url, "pair", batched=True)
    survivor = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    victim = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while completed(url, "pair") < 60 and victim.poll() is None:
        assert time.monotonic() < deadline, "the searches made no progress"
        time.sleep(0.01)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    out, err = survivor.communicate(timeout=600)
    assert survivor.returncode == 0, err.decode()[-2000:]
    study, result = outcome(url, "pair")
    _, expected = reference
    assert result.params == expected.params and result.best_value == expected.best_value
    keys = plan_keys(study)
    assert len(keys) == 4 * FEATURES * 11 and max(keys.values()) == 1
    assert not [t for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]
    reported = re.search(r"\((\d+) trials", out.decode())
    assert reported and int(reported.group(1)) == len(study.trials), out.decode()


_BLOCKED_CHILD = """
import os, sys, time
from optuna_boxcox._system import _parallel

context = _parallel.worker_context()
mine, theirs = context.Pipe()


def child(connection, parent):
    if sys.argv[1] == "portable":  # as on a system without Linux's parent-death signal
        sys.platform = "portable"
    _parallel.die_with_parent(parent)
    _parallel.ignore_interrupts()
    connection.recv()  # blocks: this process holds the other end of the pipe too


process = context.Process(target=child, args=(theirs, os.getpid()), daemon=True)
process.start()
print(process.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the worker through /proc")
@pytest.mark.parametrize("how", ["linux", "portable"])
def test_a_worker_blocked_on_its_pipe_dies_when_its_parent_is_killed(how):
    """A worker waiting for a message that will never come (it inherited both ends of its pipe,
    so it never reads end-of-file) ends with its parent anyway."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _BLOCKED_CHILD, how], stdout=subprocess.PIPE, text=True
    )
    worker = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 5
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    orphan = _alive(worker)
    if orphan:
        os.kill(worker, signal.SIGKILL)
    assert not orphan, "the worker outlived its parent by 5 s"
