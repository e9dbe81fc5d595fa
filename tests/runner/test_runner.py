"""The batched runner writes the same study as study.optimize, faster, and resumes."""

from __future__ import annotations

import datetime
import os
import signal
import time

import numpy as np
import optuna
import pytest
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import optimize
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._system._process import OWNER_KEY
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import open_storage


def storage_url(kind, tmp_path, name):
    return {
        "memory": None,
        "sqlite": f"sqlite:///{tmp_path / name}.db",
        "journal": str(tmp_path / f"{name}.jsonl"),
    }[kind]


def new_study(kind, tmp_path, name, sampler):
    url = storage_url(kind, tmp_path, name)
    storage = open_storage(url) if url else None
    return optuna.create_study(
        storage=storage, study_name="s", direction="maximize", sampler=sampler
    )


def content(study):
    return [
        (t.number, t.state, t.params, t.value, t.user_attrs, t.system_attrs, t.distributions)
        for t in study.get_trials(deepcopy=False)
    ]


@pytest.fixture(scope="module")
def data(breast_cancer):
    return breast_cancer.data.iloc[:, :3], breast_cancer.target


# Every sampler on every kind of storage, but the long shift plan only where study.optimize is quick.
CASES = [
    (kind, name)
    for kind in ("memory", "sqlite", "journal")
    for name in ("iterative", "shift", "spherical", "diagonal", "mle", "nelder-mead")
    if not (kind == "sqlite" and name in ("shift", "nelder-mead"))
]


@pytest.mark.long
@pytest.mark.parametrize("kind, name", CASES)
def test_batched_run_writes_the_study_that_optimize_writes(tmp_path, data, kind, name):
    X, y = data
    by_optimize = new_study(kind, tmp_path, "optimize", make_sampler(name, seed=1))
    by_optimize.optimize(BoxCoxObjective(X, y, GaussianNB()))
    sampler = make_sampler(name, seed=1)
    batched = new_study(kind, tmp_path, "batched", sampler)
    result = optimize(batched, BoxCoxObjective(X, y, GaussianNB()))
    if kind != "memory":  # what a reader of the storage sees
        url = storage_url(kind, tmp_path, "batched")
        batched = optuna.load_study(study_name="s", storage=open_storage(url))
    assert content(batched) == content(by_optimize)
    # What the objective chose depends on the memory the process had then; the rest is equal.
    run_specific = {"boxcox_evaluator"}
    assert {k: v for k, v in batched.user_attrs.items() if k not in run_specific} == {
        k: v for k, v in by_optimize.user_attrs.items() if k not in run_specific
    }
    assert batched.user_attrs["boxcox_evaluator"]["evaluator"] == "gaussian-nb"
    assert result.params == by_optimize.sampler.result(by_optimize).params


def test_interrupted_batched_run_resumes_to_the_same_study(tmp_path, data):
    X, y = data
    whole_sampler = make_sampler("iterative", seed=2)
    whole = new_study("sqlite", tmp_path, "whole", whole_sampler)
    optimize(whole, BoxCoxObjective(X, y, GaussianNB()))
    parts = new_study("sqlite", tmp_path, "parts", make_sampler("iterative", seed=2))
    for k in range(1, 4):  # a fresh process each time: new objective and sampler
        parts.sampler = make_sampler("iterative", seed=2)
        optimize(parts, BoxCoxObjective(X, y, GaussianNB()), n_trials=50)
        # n_trials is exact, also in the middle of a sweep; the plan has 4 · 3 · 11 trials.
        assert len(parts.trials) == min(50 * k, 132)
    parts.sampler = make_sampler("iterative", seed=2)
    optimize(parts, BoxCoxObjective(X, y, GaussianNB()))
    assert content(parts) == content(whole)


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_batch_another_writer_already_finished_is_not_written_twice(tmp_path, kind):
    from datetime import datetime

    from optuna_boxcox._optuna._write import TrialRecord
    from optuna_boxcox._optuna._write import write_trials

    study = new_study(kind, tmp_path, "two", None)
    dist = {"a": optuna.distributions.FloatDistribution(-1, 1)}

    def record(position):
        now = datetime.now()
        return TrialRecord({"a": 0.5}, dist, 1.0, {}, {"boxcox:position": position}, now, now)

    last = write_trials(study, [record(0), record(1)], position_key="boxcox:position")
    # A writer that read the study before that write tries positions 1 and 2.
    write_trials(study, [record(1), record(2)], position_key="boxcox:position", after_trial_id=-1)
    positions = [t.system_attrs["boxcox:position"] for t in study.get_trials()]
    assert positions == [0, 1, 2]
    assert [t.number for t in study.get_trials()] == [0, 1, 2]
    assert last.last_trial_id >= 0 and last.numbers == [0, 1]


# Three jobs on a 2-core machine are capped at two, which the runner says; these tests ask for
# three processes on purpose, whatever the machine.
MORE_JOBS_THAN_CORES = pytest.mark.filterwarnings("ignore:n_jobs=3 is more than:RuntimeWarning")


@MORE_JOBS_THAN_CORES
@pytest.mark.parametrize("n_jobs", [2, 3])
def test_batched_run_with_worker_processes_gives_the_same_result(tmp_path, data, n_jobs):
    X, y = data
    one, two = make_sampler("iterative"), make_sampler("iterative")
    s1 = optuna.create_study(direction="maximize", sampler=one)
    s2 = optuna.create_study(direction="maximize", sampler=two)
    r1 = optimize(s1, BoxCoxObjective(X, y, GaussianNB()))
    r2 = optimize(s2, BoxCoxObjective(X, y, GaussianNB()), n_jobs=n_jobs)
    assert r1.params == r2.params and r1.best_value == r2.best_value
    np.testing.assert_array_equal([t.value for t in s1.trials], [t.value for t in s2.trials])


class _FailingNB(GaussianNB):
    def fit(self, X, y, sample_weight=None):
        raise ValueError("this classifier cannot be fitted")


def test_an_error_in_a_worker_process_reaches_the_caller_and_stops_the_workers(data):
    import multiprocessing

    X, y = data
    sampler = make_sampler("iterative")
    study = optuna.create_study(direction="maximize", sampler=sampler)
    with pytest.raises(ValueError, match="this classifier cannot be fitted"):
        optimize(study, BoxCoxObjective(X, y, _FailingNB()), n_jobs=2)
    assert multiprocessing.active_children() == []
    assert len(study.trials) == 0


@pytest.mark.parametrize("n_jobs", [0, -2, 1.5, True])
def test_a_bad_n_jobs_is_refused_before_anything_runs(data, n_jobs):
    X, y = data
    sampler = make_sampler("iterative")
    study = optuna.create_study(direction="maximize", sampler=sampler)
    with pytest.raises(ValueError, match="n_jobs must be a positive integer or -1"):
        optimize(study, BoxCoxObjective(X, y, GaussianNB()), n_jobs=n_jobs)
    assert study.trials == []


def without_owner(rows):
    return [
        (*row[:5], {k: v for k, v in row[5].items() if k != OWNER_KEY}, row[6]) for row in rows
    ]


@MORE_JOBS_THAN_CORES
def test_worker_processes_write_the_study_that_one_job_writes(tmp_path, data):
    X, y = data
    # Feature names that need quoting in SQL, to check the statement that writes a whole trial.
    X = X.set_axis(["it's", "a?b", 'λ "x"; --'], axis=1)
    studies = []
    for n_jobs in (1, 2, 3):
        sampler = make_sampler("iterative")
        study = new_study("sqlite", tmp_path, f"jobs{n_jobs}", sampler)
        optimize(study, BoxCoxObjective(X, y, GaussianNB()), n_jobs=n_jobs)
        url = storage_url("sqlite", tmp_path, f"jobs{n_jobs}")
        studies.append(optuna.load_study(study_name="s", storage=open_storage(url)))
    by_optimize = new_study("memory", tmp_path, "optimize", make_sampler("iterative"))
    by_optimize.optimize(BoxCoxObjective(X, y, GaussianNB()))
    assert set(studies[0].trials[0].params) == {"it's", "a?b", 'λ "x"; --'}
    assert without_owner(content(studies[1])) == without_owner(content(studies[0]))
    assert without_owner(content(studies[2])) == without_owner(content(studies[0]))
    assert without_owner(content(studies[0])) == without_owner(content(by_optimize))


def test_a_failed_write_in_the_writing_worker_reaches_the_caller(tmp_path, data):
    import multiprocessing
    import sqlite3

    X, y = data
    sampler = make_sampler("iterative")
    study = new_study("sqlite", tmp_path, "broken", sampler)
    with sqlite3.connect(tmp_path / "broken.db") as connection:  # sabotage the schema
        connection.execute("DROP TABLE trial_params")
    with pytest.raises(Exception, match="trial_params"):
        optimize(study, BoxCoxObjective(X, y, GaussianNB()), n_jobs=2)
    assert multiprocessing.active_children() == []


class _FailsInAWorker(GaussianNB):
    """Fits in the process that created it; fails (or dies) in a forked worker."""

    def __init__(self, die=False, parent=None):
        self.die = die
        self.parent = parent if parent is not None else os.getpid()
        super().__init__()

    def fit(self, X, y, sample_weight=None):
        if os.getpid() != self.parent:
            if self.die:
                os.kill(os.getpid(), signal.SIGKILL)
            raise ValueError("this worker cannot fit")
        return super().fit(X, y, sample_weight)


@pytest.mark.parametrize("die", [False, True], ids=["raises", "killed"])
def test_a_worker_that_fails_or_dies_stops_the_run_with_a_clear_error(tmp_path, data, die):
    import multiprocessing

    X, y = data
    sampler = make_sampler("iterative")
    study = new_study("sqlite", tmp_path, "w", sampler)
    expected = (
        r"a worker process of the search died \(exit code -9" if die else "this worker cannot fit"
    )
    with pytest.raises((ValueError, RuntimeError), match=expected):
        optimize(study, BoxCoxObjective(X, y, _FailsInAWorker(die=die)), n_jobs=2)
    assert multiprocessing.active_children() == []


def test_a_pool_hands_over_trials_once_and_while_its_workers_score(data):
    """``meanwhile`` runs exactly once per ``score``: after the batch is posted to the workers when
    they are used (so writing work overlaps their scoring), else before the points are scored."""
    from optuna_boxcox._runner._pool import ScoringPool

    X, y = data
    objective = BoxCoxObjective(X, y, GaussianNB())
    points = [objective.space.initial + step for step in (0.25, 0.5, 0.75, 1.0)]
    calls = []
    pool = ScoringPool(objective, 2)
    try:
        scores, starts, ends = pool.score(
            points, meanwhile=lambda: calls.append(("posted", pool.batches_posted))
        )
        again = pool.score(
            points, meanwhile=lambda: calls.append(("cached", objective.n_evaluations))
        )[0]
        single = pool.score(
            points[:1], meanwhile=lambda: calls.append(("alone", objective.n_evaluations))
        )[0]
    finally:
        pool.close()
    assert calls == [("posted", 1), ("cached", 4), ("alone", 4)]
    assert again == scores and single == scores[:1]
    plain = BoxCoxObjective(X, y, GaussianNB())
    assert scores == [plain.evaluate(p) for p in points]
    assert all(start <= end for start, end in zip(starts, ends))


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_write_another_writer_overtook_does_not_blind_the_next_write(tmp_path, kind):
    """A writer whose batch another writer had written entirely must still see that writer's
    later positions: after its write it may not skip past trials it did not check."""
    from datetime import datetime

    from optuna_boxcox._optuna._write import TrialRecord
    from optuna_boxcox._optuna._write import write_trials

    study = new_study(kind, tmp_path, "race", None)
    dist = {"a": optuna.distributions.FloatDistribution(-1, 1)}

    def record(position):
        now = datetime.now()
        return TrialRecord({"a": 0.5}, dist, 1.0, {}, {"boxcox:position": position}, now, now)

    key = "boxcox:position"
    # Writer A is ahead: positions 0-1, then 2-3. Writer B, which started with an empty study,
    # writes 0-1 (all taken), then 2-3 (taken too: they must not be written twice).
    a = write_trials(study, [record(0), record(1)], position_key=key)
    write_trials(study, [record(2), record(3)], position_key=key, after_trial_id=a.last_trial_id)
    b = write_trials(study, [record(0), record(1)], position_key=key, after_trial_id=-1)
    write_trials(study, [record(2), record(3)], position_key=key, after_trial_id=b.last_trial_id)
    positions = [t.system_attrs[key] for t in study.get_trials()]
    assert sorted(positions) == [0, 1, 2, 3], positions


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_claim_running_when_the_run_started_and_completed_later_is_not_written_again(
    tmp_path, data, monkeypatch, n_jobs
):
    """Another worker's claim is RUNNING when this run reads the study, and that worker completes
    it before this run writes the same position (alone, the run scores every position of its
    batches): the write must see the claim although its trial is older than every trial the run
    writes, so that the position is COMPLETE once."""
    from datetime import datetime

    from optuna_boxcox._optuna import _claims
    from optuna_boxcox.samplers import PlanRun

    X, y = data
    key = PlanRun.position_key
    reference = new_study("memory", tmp_path, "ref", make_sampler("iterative"))
    expected = optimize(reference, BoxCoxObjective(X, y, GaussianNB()))
    sampler = make_sampler("iterative")
    study = new_study("sqlite", tmp_path, "late", sampler)
    objective = BoxCoxObjective(X, y, GaussianNB())
    objective.register(study)
    first = sampler.start_run(study).pending()
    position, point = first.positions[0], first.points[0]
    (theirs,) = [t for t in reference.trials if t.system_attrs[key] == position]
    (claimed,) = _claims.claim(
        study,
        [_claims.Claim(position, objective.space.to_params(point), first.attrs[0])],
        objective.space.distributions(),
        position_key=key,
        owner="elsewhere:1:1",  # a worker on another machine: never taken for dead here
    )
    start_run = sampler.start_run

    def completed_once_the_run_started(*args, **kwargs):
        run = start_run(*args, **kwargs)
        improved = {"improved": theirs.user_attrs["improved"]}
        _claims.complete(
            study,
            [
                (
                    claimed,
                    theirs.value,
                    improved,
                    datetime.now(),
                    optuna.trial.TrialState.COMPLETE,
                    None,
                )
            ],
        )
        return run

    monkeypatch.setattr(sampler, "start_run", completed_once_the_run_started)
    result = optimize(study, objective, n_jobs=n_jobs)

    positions = _plan_positions(study)
    assert not [p for p, n in positions.items() if n > 1], "positions COMPLETE twice"
    assert len(positions) == len(reference.trials) == len(study.trials)
    assert storage_of(study).get_trial(claimed.trial_id).state == optuna.trial.TrialState.COMPLETE
    assert result.params == expected.params


def test_a_run_whose_writer_died_fails_at_once_instead_of_settling(tmp_path, data, monkeypatch):
    """The writing worker dies once every batch is scored, after writing a list that dropped a
    position another live worker holds: the run fails with that at once. It does not settle the
    dropped position (waiting for that worker, and writing through a writer that would take the
    dead writer's unreported lists for its own); the next run replays what is not written."""
    from datetime import datetime
    import multiprocessing
    import sqlite3
    import threading
    import time

    from sklearn.neighbors import KNeighborsClassifier

    from optuna_boxcox._optuna import _claims
    from optuna_boxcox._runner._batched import BatchedRun

    X, y = data
    study = new_study("sqlite", tmp_path, "dead", make_sampler("iterative"))
    claims = []

    class ClaimedMeanwhile(BoxCoxObjective):
        def evaluate_batch(self, points):
            if not claims:  # a worker on another machine claims a position of the first write
                claims.append(_claim(study, self, "elsewhere:1:1", position=5))
            return super().evaluate_batch(points)

    end = BatchedRun._end

    def writer_killed_first(run, *args, **kwargs):
        # The loop is done; the writer has written its first list (the plan's 132 trials go in
        # lists of at least 100) and dies before this process reads its report.
        deadline = time.monotonic() + 60
        with sqlite3.connect(tmp_path / "dead.db") as connection:
            while time.monotonic() < deadline:
                ((done,),) = connection.execute(
                    "SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE'"
                ).fetchall()
                if done >= 100:
                    break
                time.sleep(0.02)
        for worker in multiprocessing.active_children():
            os.kill(worker.pid, signal.SIGKILL)
            worker.join()
        return end(run, *args, **kwargs)

    monkeypatch.setattr(BatchedRun, "_end", writer_killed_first)
    # k-NN scores each batch in this process: the pool's one worker only writes.
    objective = ClaimedMeanwhile(X, y, KNeighborsClassifier())
    raised = []

    def search():
        try:
            optimize(study, objective, n_jobs=2)
        except Exception as error:
            raised.append(error)

    thread = threading.Thread(target=search)
    thread.start()
    thread.join(timeout=20)
    settling = thread.is_alive()
    if settling:  # let it end: the other worker completes its claim
        _claims.complete(
            study, [(claims[0], 0.5, {}, datetime.now(), optuna.trial.TrialState.COMPLETE, None)]
        )
        thread.join()
    assert not settling, "the run waited for another worker after its writer had died"
    assert len(raised) == 1 and "a worker process of the search died" in str(raised[0])
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("stop", [KeyboardInterrupt, ValueError], ids=["ctrl-c", "error"])
def test_a_run_stopped_while_scoring_its_claims_gives_them_back(tmp_path, data, stop):
    """Ctrl-C (or a scoring error) while this run scores positions it claimed, sharing the plan
    with another worker: the claims fail, marked reaped (re-run without counting as failures),
    instead of staying RUNNING until another worker finds this process gone."""
    from optuna_boxcox._optuna import _claims
    from optuna_boxcox._system._process import REAPED_KEY

    X, y = data
    study = new_study("sqlite", tmp_path, "stopped", make_sampler("iterative"))
    _claims.announce(study, "elsewhere:1:1")  # another batched worker: the batches are shared

    class StopsScoring(BoxCoxObjective):
        def evaluate_batch(self, points):
            raise stop("stopped while scoring claimed positions")

    with pytest.raises(stop, match="stopped while scoring"):
        optimize(study, StopsScoring(X, y, GaussianNB()))
    trials = study.get_trials(deepcopy=False)
    assert trials, "the run claimed no position"
    assert all(
        t.state == optuna.trial.TrialState.FAIL and t.system_attrs.get(REAPED_KEY) for t in trials
    ), [(t.number, t.state.name) for t in trials]


def test_a_claim_half_reaped_by_another_worker_is_reaped_again_by_a_write(tmp_path, data):
    """Another worker reaping a dead worker's claim through the storage marks it reaped, then
    fails it (two commits): a bulk write that reaps the same claim in between neither fails on
    the mark already there nor leaves the claim RUNNING."""
    from optuna_boxcox._system._process import REAPED_KEY

    X, y = data
    study = new_study("sqlite", tmp_path, "half", make_sampler("iterative"))
    owner = _owner_process()
    identity = _identity_of(owner)
    owner.kill()
    owner.wait()
    claims = []

    class HalfReapedMeanwhile(BoxCoxObjective):
        def evaluate_batch(self, points):
            if not claims:  # once the run has started: a dead worker's claim, half reaped
                claims.append(_claim(study, self, identity, position=5))
                storage_of(study).set_trial_system_attr(claims[0].trial_id, REAPED_KEY, True)
            return super().evaluate_batch(points)

    result = optimize(study, HalfReapedMeanwhile(X, y, GaussianNB()))

    reaped = storage_of(study).get_trial(claims[0].trial_id)
    assert reaped.state == optuna.trial.TrialState.FAIL and reaped.system_attrs[REAPED_KEY]
    positions = _plan_positions(study)
    assert result.finished and len(positions) == result.n_trials and max(positions.values()) == 1


def _identity_of(process) -> str:
    """The owner identity a child Python process records (it prints it first)."""
    return process.stdout.readline().strip()


def _owner_process():
    import subprocess
    import sys

    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from optuna_boxcox._system._process import process_identity;"
            "print(process_identity(), flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )


def _claim(study, objective, owner, position=0):
    """A RUNNING trial holding a plan position, as a batched worker claims it."""
    from optuna_boxcox._optuna import _claims
    from optuna_boxcox.samplers import PlanRun

    (claimed,) = _claims.claim(
        study,
        [_claims.Claim(position, objective.space.to_params(objective.space.initial), {})],
        objective.space.distributions(),
        position_key=PlanRun.position_key,
        owner=owner,
    )
    return claimed


def _plan_positions(study):
    from collections import Counter

    return Counter(
        t.system_attrs.get("boxcox:position")
        for t in study.get_trials(deepcopy=False)
        if t.state == optuna.trial.TrialState.COMPLETE
    )


def test_a_dead_workers_claim_is_reaped_completed_and_not_counted_as_a_failure(tmp_path, data):
    """A RUNNING trial left by a killed worker does not keep the position from this run's
    write (else it stays RUNNING, unscored, and the report disagrees with the storage); it is
    reaped with the reaped mark, so that a sampler allowing no retries still takes the
    position's real score instead of counting a failure."""
    from optuna_boxcox._system._process import REAPED_KEY

    X, y = data
    reference = new_study("memory", tmp_path, "ref", make_sampler("iterative"))
    expected = optimize(reference, BoxCoxObjective(X, y, GaussianNB()))

    # A sampler that gives up a position at its first failure.
    study = new_study("sqlite", tmp_path, "dead", make_sampler("iterative", max_retries=0))
    objective = BoxCoxObjective(X, y, GaussianNB())
    objective.register(study)
    owner = _owner_process()
    identity = _identity_of(owner)
    owner.kill()
    owner.wait()
    claimed = _claim(study, objective, identity)

    result = optimize(study, objective)

    reaped = storage_of(study).get_trial(claimed.trial_id)
    assert reaped.state == optuna.trial.TrialState.FAIL and reaped.system_attrs.get(REAPED_KEY)
    assert not [t for t in study.get_trials() if t.state == optuna.trial.TrialState.RUNNING]
    positions = _plan_positions(study)
    assert len(positions) == result.n_trials and max(positions.values()) == 1
    again = make_sampler("iterative", max_retries=0)
    assert again.result(study).params == expected.params == result.params
    assert again.result(study).history == expected.history


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="watches the zombie through Linux's /proc")
@pytest.mark.timeout(60)
def test_a_claim_of_a_worker_killed_and_not_yet_waited_for_is_reaped(tmp_path, data):
    """A worker killed (SIGKILL, the OOM killer) whose parent has not waited for it yet is a
    zombie: its pid still answers a signal. Counted alive, its claim was never given back and
    the run waited for it without a word, for ever (the timeout fails the test instead)."""
    X, y = data
    study = new_study("sqlite", tmp_path, "zombie", make_sampler("iterative"))
    objective = BoxCoxObjective(X, y, GaussianNB())
    objective.register(study)
    owner = _owner_process()
    identity = _identity_of(owner)
    claimed = _claim(study, objective, identity)
    owner.kill()  # not waited for until the end: a zombie meanwhile
    try:
        deadline = time.monotonic() + 10
        while _process_state(owner.pid) != "Z":
            assert time.monotonic() < deadline, "the killed owner did not become a zombie"
            time.sleep(0.01)

        result = optimize(study, objective)

        assert _process_state(owner.pid) == "Z", "the owner was waited for during the run"
    finally:
        owner.wait()
    assert storage_of(study).get_trial(claimed.trial_id).state == optuna.trial.TrialState.FAIL
    positions = _plan_positions(study)
    assert result.finished and len(positions) == result.n_trials and max(positions.values()) == 1


@pytest.mark.timeout(60)
def test_a_worker_waiting_inside_a_trial_frees_a_position_whose_heartbeat_stopped(tmp_path, data):
    """On a database server a worker on a machine that vanished is found by its claims'
    heartbeats, which Optuna checks only when ``study.optimize`` begins a trial: a worker
    waiting inside one for such a position waited for ever (the timeout fails the test)."""
    from optuna.storages import RDBStorage

    from optuna_boxcox._optuna import _claims
    from optuna_boxcox._optuna._storage import CachedRDBStorage
    from optuna_boxcox.samplers import PlanRun

    X, y = data
    storage = CachedRDBStorage(
        RDBStorage(f"sqlite:///{tmp_path / 'beats.db'}", heartbeat_interval=1, grace_period=2)
    )
    sampler = make_sampler("coordinate", epochs=1, grid_size=5)
    study = optuna.create_study(storage=storage, direction="maximize", sampler=sampler)
    objective = BoxCoxObjective(X, y, GaussianNB())
    objective.register(study)
    planned = objective.space.dim * 5
    # The plan's last position, held by a worker of another machine that beat once, then vanished.
    (held,) = _claims.claim(
        study,
        [_claims.Claim(planned - 1, objective.space.to_params(objective.space.initial), {})],
        objective.space.distributions(),
        position_key=PlanRun.position_key,
        owner="a-machine-gone:4242:1",
        heartbeat=True,
    )

    result = optimize(study, objective, batch=False)

    assert storage.get_trial(held.trial_id).state == optuna.trial.TrialState.FAIL
    assert result.finished


def _process_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def _left_running(study, objective, owner: str) -> int:
    """A trial as a run of Optuna's sampler killed inside it leaves: RUNNING with the λ it drew,
    owned by ``owner``."""
    from optuna_boxcox._optuna import study_id_of

    storage = storage_of(study)
    trial_id = storage.create_new_trial(study_id_of(study))
    for name, distribution in objective.space.distributions().items():
        storage.set_trial_param(trial_id, name, 0.5, distribution)
    storage.set_trial_system_attr(trial_id, OWNER_KEY, owner)
    return trial_id


def test_a_trial_of_optunas_sampler_left_running_by_a_killed_run_is_run_again_once(tmp_path, data):
    """A run of TPE killed inside a trial left it RUNNING for ever: no resume cleared it, and
    the study ended with one trial more than asked. The next run runs it again first, with the
    λ it drew, and the study ends with the total asked for."""
    X, y = data
    study = new_study("sqlite", tmp_path, "tpe", optuna.samplers.TPESampler(seed=0))
    objective = BoxCoxObjective(X, y, GaussianNB())
    optimize(study, objective, n_trials=4)
    owner = _owner_process()
    identity = _identity_of(owner)
    owner.kill()
    owner.wait()
    left = _left_running(study, objective, identity)

    optimize(study, objective, n_trials=2, total=6)

    trials = study.get_trials(deepcopy=False)
    assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE] * 6
    again = storage_of(study).get_trial(left)
    assert set(again.params.values()) == {0.5}, "the trial was run with other λ"
    assert again.system_attrs[OWNER_KEY] != identity, "it still names the dead process"


def test_a_trial_begun_past_the_studys_total_is_withdrawn_before_it_is_scored(tmp_path, data):
    """Workers started together each run the trials missing when they start, and each began
    one more as another finished the last: the study held one trial per extra worker beyond
    the total. The trial begun past the total is withdrawn (the study's newest)."""
    X, y = data
    study = new_study("sqlite", tmp_path, "tpe", optuna.samplers.TPESampler(seed=0))
    objective = BoxCoxObjective(X, y, GaussianNB())
    optimize(study, objective, n_trials=5)
    # This process counted one trial missing; another worker has written it since.
    optimize(study, objective, n_trials=1, total=5)
    assert len(study.get_trials(deepcopy=False)) == 5


def test_a_trial_that_finds_the_plan_finished_is_withdrawn(tmp_path, data):
    """A ``study.optimize`` worker whose trial waits for a position another worker holds, and
    finds the plan finished when it ends, used to score the plan's best Λ once more: one trial
    per extra worker beyond the plan. It is withdrawn instead."""
    import threading

    from optuna_boxcox._optuna import _claims

    X, y = data
    study = new_study(
        "sqlite", tmp_path, "plan", make_sampler("coordinate", epochs=1, grid_size=5)
    )
    objective = BoxCoxObjective(X, y, GaussianNB())
    objective.register(study)
    planned = objective.space.dim * 5
    other = _owner_process()  # another worker, alive, holding the plan's last position
    try:
        held = _claim(study, objective, _identity_of(other), position=planned - 1)
        run = threading.Thread(target=optimize, args=(study, objective), kwargs={"batch": False})
        run.start()
        deadline = time.monotonic() + 30
        while len(study.get_trials(deepcopy=False)) < planned + 1:  # its waiting trial
            assert run.is_alive() and time.monotonic() < deadline, "the worker did not wait"
            time.sleep(0.02)
        now = datetime.datetime.now()
        _claims.complete(study, [(held, 0.5, {}, now, optuna.trial.TrialState.COMPLETE, None)])
        run.join(30)
        assert not run.is_alive(), "the worker did not end with the plan"
    finally:
        other.kill()
        other.wait()
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == planned, f"{len(trials) - planned} trial(s) beyond the plan"
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    assert make_sampler("coordinate", epochs=1, grid_size=5).result(study).finished


# Alone, the run writes every other position and settles the held one at the end (here the
# plan's last, a Λ scored before: its trial goes to the writer). Sharing, it claims the batch's
# positions and waits for the held one (the second candidate of the second sweep, a new Λ) before
# the plan can go on: the first sweep's and the rest of the second's, 20 positions, are complete.
@pytest.mark.parametrize(
    "shared, held, waiting_at", [(False, 439, 439), (True, 12, 20)], ids=["alone", "sharing"]
)
def test_a_position_held_by_a_live_worker_is_completed_when_that_worker_dies(
    tmp_path, breast_cancer, shared, held, waiting_at
):
    """A position another live worker holds is left to it; once that worker dies without
    completing it, its claim is reaped (marked, so no retry is spent) and this run completes the
    position before it returns — alone (its write had dropped the position) as well as sharing
    the batches (it was waiting for the other worker's claim)."""
    import threading

    from optuna_boxcox._optuna import _claims
    from optuna_boxcox._system._process import REAPED_KEY

    X, y = breast_cancer.data.iloc[:, :10], breast_cancer.target  # a plan of 440 trials
    reference = new_study("memory", tmp_path, "ref", make_sampler("iterative"))
    expected = optimize(reference, BoxCoxObjective(X, y, GaussianNB()))
    study = new_study("sqlite", tmp_path, "live", make_sampler("iterative", max_retries=0))
    if shared:  # another batched worker, on another machine, is announced on the study
        _claims.announce(study, "elsewhere:1:1")
    owner = _owner_process()
    identity = _identity_of(owner)
    budget = study.sampler.budget(X.shape[1])
    claims = []

    class ClaimedMeanwhile(BoxCoxObjective):
        def evaluate_batch(self, points):
            # Once this run has started, another worker claims a position.
            if not claims:
                claims.append(_claim(study, self, identity, position=held))
            return super().evaluate_batch(points)

    objective = ClaimedMeanwhile(X, y, GaussianNB())
    objective.register(study)

    def kill_owner_once_waited_for():
        import sqlite3
        import time

        deadline = time.monotonic() + 120
        with sqlite3.connect(tmp_path / "live.db") as connection:
            while time.monotonic() < deadline:
                ((done,),) = connection.execute(
                    "SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE'"
                ).fetchall()
                if done >= waiting_at:
                    break
                time.sleep(0.05)
        owner.kill()
        owner.wait()  # a zombie would still look alive

    killer = threading.Thread(target=kill_owner_once_waited_for)
    killer.start()
    try:
        result = optimize(study, objective)
    finally:
        killer.join()
    (claimed,) = claims
    reaped = storage_of(study).get_trial(claimed.trial_id)
    assert reaped.state == optuna.trial.TrialState.FAIL and reaped.system_attrs.get(REAPED_KEY)
    positions = _plan_positions(study)
    assert result.finished and len(positions) == result.n_trials == budget
    assert max(positions.values()) == 1
    replayed = make_sampler("iterative", max_retries=0).result(study)
    assert replayed.params == expected.params and replayed.history == expected.history
