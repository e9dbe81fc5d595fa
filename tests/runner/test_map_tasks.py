"""``_parallel.map_tasks``: independent tasks over forked workers (compare, benchmark, meta).

The test runs map_tasks in a child interpreter with a timeout, so that a hang fails it instead
of hanging the suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from optuna_boxcox._system._parallel import worker_context

pytestmark = pytest.mark.skipif(worker_context() is None, reason="workers need fork")

STOPPED_EARLY = textwrap.dedent(
    """
    import multiprocessing, time
    from optuna_boxcox._system._parallel import map_tasks

    def work(task):
        if task:
            time.sleep(600)  # a long study still running when the parent stops
        return task

    def on_result(task, result):
        raise KeyboardInterrupt  # the parent stops at its first result (Ctrl-C, SIGTERM)

    try:
        map_tasks([0, 1], work, on_result, n_jobs=2)
    except KeyboardInterrupt:
        pass
    print("left", len(multiprocessing.active_children()))
    """
)


def test_a_run_stopped_early_ends_its_workers_at_once():
    # Before: the workers ignored the SIGTERM the pool closes them with, so the parent waited
    # for the sleeping task, then for ever for a worker blocked on the task queue's lock.
    run = subprocess.run(
        [sys.executable, "-c", STOPPED_EARLY], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["left", "0"]


def test_every_result_arrives_and_no_worker_is_left():
    import multiprocessing

    from optuna_boxcox._system._parallel import map_tasks

    results = {}
    done = map_tasks(list(range(20)), _square, results.__setitem__, n_jobs=2)
    assert done == 20
    assert results == {i: i * i for i in range(20)}
    assert multiprocessing.active_children() == []


def _square(task: int) -> int:
    return task * task


# Results of a few MiB: a worker spends most of its time handing one back when the signal comes.
STOPPED_BY_ITS_GROUP = textwrap.dedent(
    """
    import multiprocessing, signal
    from optuna_boxcox._system._parallel import map_tasks

    def work(task):
        return b"x" * (4 << 20)

    def on_result(task, result):
        if task == 2:
            print("running", flush=True)

    def stop(signum, frame):
        raise KeyboardInterrupt  # as the command line handles SIGTERM

    signal.signal(signal.SIGTERM, stop)
    try:
        map_tasks(list(range(100_000)), work, on_result, n_jobs=2)
    except KeyboardInterrupt:
        pass
    print("left", len(multiprocessing.active_children()), flush=True)
    """
)


@pytest.mark.parametrize("attempt", range(3))
def test_a_sigterm_to_the_whole_process_group_stops_the_run_at_once(attempt):
    """``timeout`` sends its SIGTERM to the process group: the workers die with the parent's
    signal, one of them while it hands back a result. Before, such a worker held the lock of the
    pool's result queue, and the parent, stopping, waited for that lock for ever (and a
    ``reproduce.db-wal`` stayed beside the database of whatever killed it in the end)."""
    child = subprocess.Popen(
        [sys.executable, "-c", STOPPED_BY_ITS_GROUP],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert child.stdout.readline().strip() == "running"
        os.killpg(child.pid, signal.SIGTERM)
        out, _ = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the run stopped by its process group's SIGTERM hung")
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert out.split() == ["left", "0"]


WORKER_KILLED = textwrap.dedent(
    """
    import os, signal
    from optuna_boxcox._system._parallel import map_tasks

    def work(task):
        if task == 3:
            os.kill(os.getpid(), signal.SIGKILL)  # the kernel's out-of-memory killer, say
        return task

    try:
        map_tasks(list(range(8)), work, lambda task, result: None, n_jobs=2)
    except RuntimeError as error:
        print(error)
    """
)


def test_a_worker_killed_on_its_task_stops_the_run_with_an_error_saying_so():
    # Before: the pool started another worker, the task's result never came, and it waited.
    run = subprocess.run(
        [sys.executable, "-c", WORKER_KILLED], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert "worker process ended without its result" in run.stdout, run.stdout
