"""The examples and the command line run as a user would run them."""

from __future__ import annotations

import os
from pathlib import Path
import signal
import subprocess
import sys
import time

import optuna
import pytest

from optuna_boxcox._lifecycle._guard import sampler_names

ROOT = Path(__file__).resolve().parents[2]


def test_the_tutorial_shows_examples_quickstart_py_itself():
    # The tutorial includes the script rather than a copy of it, so the two cannot drift.
    tutorial = (ROOT / "docs" / "tutorial.md").read_text(encoding="utf-8")
    assert "```{literalinclude} ../examples/quickstart.py\n" in tutorial
    assert (ROOT / "examples" / "quickstart.py").exists()


@pytest.mark.long
def test_quickstart_run_twice_from_any_folder_leaves_one_resumable_sqlite_study(tmp_path):
    # A user's folder, not the repository: the storage path must not need the repository's studies/.
    command = [sys.executable, str(ROOT / "examples" / "quickstart.py")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run(
        command, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env
    )
    assert first.returncode == 0, first.stderr
    second = subprocess.run(
        command, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env
    )
    assert second.returncode == 0, second.stderr
    assert "'mean radius'" in first.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quickstart.db"]
    url = f"sqlite:///{tmp_path / 'quickstart.db'}"
    study = optuna.load_study(study_name="bc-svc", storage=url)
    assert "mean radius" in study.trials[0].params and len(study.trials[0].params) == 30
    # The second run resumed the finished search: at most one extra trial re-scoring Λopt.
    assert 1320 <= len(study.trials) <= 1321, second.stdout


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "optuna_boxcox.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_search_prints_lambdas_by_feature_and_the_dashboard_command(tmp_path):
    run = cli(
        "search",
        "--dataset",
        "wine",
        "--features",
        "3",
        "--classifier",
        "bayes",
        "--sampler",
        "spherical",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert "alcohol" in run.stdout and "malic_acid" in run.stdout
    assert "optuna-boxcox dashboard" in run.stdout
    assert (tmp_path / "studies" / "optuna-boxcox.db").exists()


@pytest.mark.parametrize(
    "csv, args, message",
    [
        (
            "a,b,y\n1,x,0\n2,y,1\n3,z,0\n4,w,1\n",
            ["--label", "y"],
            "non-numeric feature column(s) in data.csv: b",
        ),
        (
            "a,b,y\n1,2,0\n2,3,1\n3,4,0\n",
            ["--label", "target"],
            "label column 'target' not in data.csv",
        ),
        (
            "a,b,y\n1,2,0\n2,3,1\n3,4,0\n4,1,1\n",
            ["--label", "y", "--sampler", "annealing"],
            "unknown sampler 'annealing'",
        ),
        (
            "a,b,y\n1,2,0\n2,3,1\n3,4,0\n4,1,1\n",
            ["--label", "y", "--sampler", "tpee"],
            f"choose one of {', '.join(sampler_names())}",  # guarded, the default, among them
        ),
        (
            "a,b,y\n1,2,0\n2,3,1\n3,4,0\n4,1,1\n",
            ["--label", "y", "--classifier", "knn"],
            "needs at least n_neighbors=5 rows to fit; the data have 4",
        ),
        (
            "a,b,y\n1,2,0\n2,3,1\n3,4,0\n4,1,1\n5,2,0\n6,3,1\n",
            ["--label", "y", "--classifier", "knn", "--cv", "2"],
            "the data have 6 and each of the 2 folds trains on 3",
        ),
        (
            "a,b,y\n1,2,0\n1,2,1\n1,2,0\n1,2,1\n",
            ["--label", "y"],
            "every feature column is constant ('a', 'b')",
        ),
    ],
)
@pytest.mark.long
def test_bad_search_input_exits_non_zero_with_one_line_naming_the_problem(
    tmp_path, csv, args, message
):
    (tmp_path / "data.csv").write_text(csv)
    run = cli("search", "--csv", "data.csv", *args, cwd=tmp_path)
    assert run.returncode != 0
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], run.stderr
    assert "Traceback" not in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"], "refused, yet created"


def run_example(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
    )


def test_compare_example_runs_with_a_tiny_budget(tmp_path):
    run = run_example(
        "compare_samplers.py",
        "--seeds",
        "1",
        "--features",
        "2",
        "--storage",
        f"sqlite:///{tmp_path / 'c.db'}",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert "nelder-mead" in run.stdout and "held-out" in run.stdout


def test_pipeline_example_runs_with_a_tiny_budget(tmp_path):
    run = run_example("pipeline.py", "--sampler", "mle", "--folds", "2", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "Box-Cox (mle)" in run.stdout


def test_workers_example_shares_one_study(tmp_path):
    url = f"sqlite:///{tmp_path / 'w.db'}"
    run = run_example(
        "workers.py",
        "--workers",
        "2",
        "--features",
        "2",
        "--sampler",
        "iterative",
        "--storage",
        url,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert "2 workers (exit codes [0, 0])" in run.stdout
    study = optuna.load_study(study_name="workers/breast_cancer/bayes/iterative", storage=url)
    positions = [
        t.system_attrs.get("boxcox:position") for t in study.trials if t.state.name == "COMPLETE"
    ]
    plan = [p for p in positions if p is not None and p >= 0]
    assert sorted(plan) == list(range(4 * 2 * 11)), "each plan position was done exactly once"


def _joining_workers(pid: int) -> list[int]:
    """The live ``optuna-boxcox worker`` processes among the children of ``pid`` (Linux /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z" and b"worker" in argv:
            found.append(int(name))
    return found


def _holds_a_position(url: str, pid: int) -> bool:
    import sqlite3

    try:
        with sqlite3.connect(url.removeprefix("sqlite:///"), timeout=5) as connection:
            owners = connection.execute(
                "SELECT o.value_json FROM trials t"
                " JOIN trial_system_attributes o ON o.trial_id = t.trial_id AND o.key = ?"
                " JOIN trial_system_attributes p ON p.trial_id = t.trial_id AND p.key = ?"
                " WHERE t.state = 'RUNNING'",
                ("boxcox:owner", "boxcox:position"),
            ).fetchall()
    except sqlite3.Error:
        return False
    return any(owner.strip('"').split(":")[1] == str(pid) for (owner,) in owners)


@pytest.mark.long
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the workers through Linux's /proc")
def test_workers_example_finishes_when_a_joining_worker_is_killed(tmp_path):
    """The example waits for its first worker before the others: a joining worker killed with
    -9 while it held a position stayed a zombie meanwhile, counted alive, and the example hung."""
    url = f"sqlite:///{tmp_path / 'w.db'}"
    example = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "examples" / "workers.py"),
            *("--workers", "3", "--features", "10", "--sampler", "iterative", "--storage", url),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 300
        while len(joining := _joining_workers(example.pid)) < 2:
            assert example.poll() is None and time.monotonic() < deadline, "no worker joined"
            time.sleep(0.01)
        victim = None
        while victim is None:
            assert example.poll() is None and time.monotonic() < deadline, "no worker was caught"
            victim = next((p for p in joining if _holds_a_position(url, p)), None)
            time.sleep(0.001)
        os.kill(victim, signal.SIGKILL)
        out, err = example.communicate(timeout=300)
    finally:
        if example.poll() is None:
            example.kill()
            example.communicate()
    assert example.returncode == 0, err
    assert "3 workers (exit codes [" in out and "-9" in out, out
    study = optuna.load_study(study_name="workers/breast_cancer/bayes/iterative", storage=url)
    complete = [t for t in study.trials if t.state.name == "COMPLETE"]
    plan = sorted(t.system_attrs["boxcox:position"] for t in complete)
    assert plan == list(range(4 * 10 * 11)), "each plan position was done exactly once"
