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
    if kind == "sqlite":  # a journal cannot withdraw a trial: each extra worker may add one
        single, _ = reference
        assert len(study.trials) == len(single.trials), "the workers wrote trials beyond the plan"


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


#: Seconds the survivors of a killed partner may take (alone, one such search takes a few).
SURVIVORS_BOUND = 120


def _holds_a_position(url: str, pid: int) -> bool:
    """Whether a RUNNING trial of process ``pid`` holds a plan position, read now."""
    import sqlite3

    try:
        with sqlite3.connect(url.removeprefix("sqlite:///"), timeout=5) as connection:
            rows = connection.execute(
                "SELECT o.value_json FROM trials t"
                " JOIN trial_system_attributes o ON o.trial_id = t.trial_id AND o.key = ?"
                " JOIN trial_system_attributes p ON p.trial_id = t.trial_id AND p.key = ?"
                " WHERE t.state = 'RUNNING'",
                ("boxcox:owner", "boxcox:position"),
            ).fetchall()
    except sqlite3.Error:  # not created yet
        return False
    return any(owner.strip('"').split(":")[1] == str(pid) for (owner,) in rows)


@pytest.mark.long
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="watches the zombie through Linux's /proc")
@pytest.mark.parametrize("batched, classifier", [(False, "bayes"), (True, "knn")])
def test_workers_whose_partner_is_killed_holding_a_position_and_not_waited_for_finish(
    tmp_path, reference, batched, classifier
):
    """Three workers on one study; one is killed with -9 while it holds a plan position, and
    nobody waits for it (a zombie, as when the OOM killer strikes, or examples/workers.py waits
    for its first child). The others used to wait for that position for ever, without a word;
    they finish within SURVIVORS_BOUND with the single worker's answer."""
    command = search_command(f"sqlite:///{tmp_path / 'ref.db'}", "ref", batched=batched)
    command[command.index("--classifier") + 1] = classifier
    if classifier == "bayes":
        _, expected = reference
    else:  # k-NN scores a position for long enough that a batched worker is caught holding one
        subprocess.run(command, check=True, capture_output=True, timeout=600)
        _, expected = outcome(f"sqlite:///{tmp_path / 'ref.db'}", "ref")
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    command[command.index("--storage") + 1] = url
    command[command.index("--study-name") + 1] = "shared"
    workers = [
        subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    victim, survivors = workers[-1], workers[:-1]
    try:
        deadline = time.monotonic() + 300
        while not _holds_a_position(url, victim.pid):
            assert victim.poll() is None, (
                "the victim ended before it was caught holding a position"
            )
            assert time.monotonic() < deadline, "the victim never held a position"
            time.sleep(0.002)
        os.kill(victim.pid, signal.SIGKILL)
        started = time.monotonic()
        for survivor in survivors:
            left = SURVIVORS_BOUND - (time.monotonic() - started)
            try:
                _, err = survivor.communicate(timeout=max(left, 0.1))
            except subprocess.TimeoutExpired:
                pytest.fail(
                    f"the survivors still waited for the dead worker after {SURVIVORS_BOUND} s"
                )
            assert survivor.returncode == 0, err.decode()[-2000:]
        assert not _alive(victim.pid), "the victim was waited for: not a zombie"
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait()
    study, result = outcome(url, "shared")
    assert result.params == expected.params and result.best_value == expected.best_value
    keys = plan_keys(study)
    assert len(keys) == 4 * FEATURES * 11 and max(keys.values()) == 1
    assert not [t for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]


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


def tpe_command(storage: str, study: str, n_trials: int) -> list[str]:
    command = search_command(storage, study)
    command[command.index("--sampler") + 1] = "tpe"
    command.remove("--no-batch")
    return [*command, "--n-trials", str(n_trials), "--no-figures"]


def _trial_states(url: str) -> Counter:
    """The states of the trials in the SQLite file of ``url``, read as they are now (a plain
    read-only connection: no storage opened beside the search that is creating it)."""
    import sqlite3

    try:
        with sqlite3.connect(f"file:{url.removeprefix('sqlite:///')}?mode=ro", uri=True) as db:
            return Counter(dict(db.execute("SELECT state, COUNT(*) FROM trials GROUP BY state")))
    except sqlite3.Error:  # not there yet, or being made
        return Counter()


@pytest.mark.long
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_tpe_search_killed_at_a_random_moment_resumes_to_its_total(tmp_path, seed):
    """SIGKILL under TPE inside a trial left it RUNNING for ever (3 kills in 5): no resume
    cleared it, and the study reported one trial more than asked. Resumed, it ends with the
    total asked for, every trial COMPLETE."""
    import random

    url = f"sqlite:///{tmp_path / 'tpe.db'}"
    command = tpe_command(url, "tpe", 200)
    search = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not _trial_states(url) and search.poll() is None:
        assert time.monotonic() < deadline, "the search made no progress"
        time.sleep(0.02)
    time.sleep(random.Random(seed).uniform(0.0, 1.5))
    os.kill(search.pid, signal.SIGKILL)
    search.wait()
    subprocess.run(command, check=True, capture_output=True, timeout=600)  # the same again
    assert _trial_states(url) == Counter(COMPLETE=200)


@pytest.mark.long
def test_a_tpe_search_and_two_workers_end_with_its_total(tmp_path):
    """Each process runs the trials missing when it starts and stops once the study holds the
    total; each extra one also began one trial as another finished the last (602 for 600), and
    ``worker`` ran 100 trials of its own beyond the study's --n-trials."""
    url = f"sqlite:///{tmp_path / 'tpe.db'}"
    search = subprocess.Popen(
        tpe_command(url, "tpe", 400), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 300
    while not _trial_states(url):
        assert search.poll() is None and time.monotonic() < deadline, "the search never began"
        time.sleep(0.02)
    worker = [sys.executable, "-m", "optuna_boxcox.cli", "worker", "--storage", url]
    workers = [
        subprocess.Popen(
            [*worker, "--study-name", "tpe"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    for process in [search, *workers]:
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, err.decode()[-2000:]
    assert _trial_states(url) == Counter(COMPLETE=400)
