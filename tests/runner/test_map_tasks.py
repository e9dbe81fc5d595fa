"""``_parallel.map_tasks``: independent tasks over forked workers (compare, benchmark, meta).

The test runs map_tasks in a child interpreter with a timeout, so that a hang fails it instead
of hanging the suite.
"""

from __future__ import annotations

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
