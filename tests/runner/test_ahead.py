"""Scoring past the sweep barrier: the points a worker scores ahead, the board that shares them,
and workers that use it writing exactly one worker's trials."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import optuna
import pytest
from sklearn.datasets import make_classification
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import make_sampler
from optuna_boxcox._optuna import _claims
from optuna_boxcox.storage import open_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture
def started(tmp_path):
    """A study of the iterative search on 4 features, registered, and its plan run started."""
    X, y = make_classification(300, 4, n_informative=3, n_redundant=0, random_state=0)
    objective = BoxCoxObjective(np.exp(X / 2), y, GaussianNB())
    sampler = make_sampler("iterative", 0)
    study = optuna.create_study(
        study_name="s",
        direction="maximize",
        sampler=sampler,
        storage=open_storage(f"sqlite:///{tmp_path}/s.db"),
    )
    objective.register(study)
    return study, sampler, objective, sampler.start_run(study)


def _system_attrs(url: str, name: str) -> dict:
    storage = open_storage(url)
    return storage.get_study_system_attrs(storage.get_study_id_from_name(name))


def _batches(sampler, space, score):
    """The plan's batches (positions, points) when every point scores ``score(point)``: a plain
    loop over :class:`Plan`, the oracle."""
    plan = sampler.plan(space)
    plan.run(lambda points: [score(p) for p in points])
    return [(list(plan.positions(b)), plan.batches[b].points) for b in range(len(plan.batches))]


def test_ahead_are_the_next_batches_when_nothing_beats_the_start(started):
    _study, sampler, _objective, run = started
    ahead = run.ahead(lambda point: None, depth=2)
    # Nothing known: the current batch's points are taken for no better than Λopt, and so are
    # those ahead — the plan of a search where no point ever improves.
    batches = _batches(sampler, run.space, lambda point: -np.inf)
    expected = [(p, x) for positions, points in batches[1:3] for p, x in zip(positions, points)]
    assert [p for p, _ in ahead] == [p for p, _ in expected]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(ahead, expected))


def test_ahead_follows_the_values_known_and_skips_them(started):
    _study, sampler, objective, run = started
    real = _batches(sampler, run.space, objective.evaluate)
    _first_positions, first_points = real[0]
    known = {first_points[k].tobytes(): objective.evaluate(first_points[k]) for k in range(11)}
    ahead = run.ahead(lambda point: known.get(np.asarray(point).tobytes()), depth=1)
    # With the first sweep known, the next one is the real plan's next sweep, less its points
    # known already (the sweep's current point recurs).
    positions, points = real[1]
    expected = [(p, x) for p, x in zip(positions, points) if x.tobytes() not in known]
    assert [p for p, _ in ahead] == [p for p, _ in expected]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(ahead, expected))
    assert run.ahead(lambda point: None, depth=0) == []


def test_the_board_is_taken_once_read_back_and_cleared(started, tmp_path):
    study = started[0]
    first, second = (_claims.ahead_key(np.array([0.5, 1.0])), _claims.ahead_key(np.array([2.0])))
    assert first != second and first.startswith(_claims.AHEAD_PREFIX)
    assert _claims.take_ahead(study, [first, second, first], "a:1:1") == [first, second]
    assert _claims.take_ahead(study, [first], "b:2:2") == []  # taken: not twice
    assert _claims.read_ahead(study, [first, second]) == {
        first: (None, "a:1:1"),
        second: (None, "a:1:1"),
    }
    _claims.put_ahead(study, {first: 0.75}, "a:1:1")
    assert _claims.read_ahead(study, [first])[first] == (0.75, "a:1:1")
    # The workers' announcements are read without the board (which can hold thousands).
    _claims.announce(study, "b:2:2")
    assert _claims.other_workers(study, "a:1:1") == ["b:2:2"]
    _claims.clear_ahead(study)
    assert _claims.read_ahead(study, [first, second]) == {}
    attrs = _system_attrs(f"sqlite:///{tmp_path}/s.db", "s")
    assert any(k.startswith(_claims.WORKER_PREFIX) for k in attrs)


_WORKER = textwrap.dedent(
    """
    import json, sys, time
    import optuna
    from optuna_boxcox import BoxCoxObjective, make_sampler, optimize
    from optuna_boxcox._runner import RunStats
    from optuna_boxcox.bench.workers import SleepClassifier, WorkersCase, case_data
    from optuna_boxcox.storage import open_storage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = case_data(WorkersCase("sleep", 300, 4))
    objective = BoxCoxObjective(X, y, SleepClassifier(float(sys.argv[3])))
    study = optuna.load_study(
        study_name=sys.argv[2], storage=open_storage(sys.argv[1]),
        sampler=make_sampler("iterative", 0),
    )
    stats = RunStats()
    time.sleep(max(0.0, float(sys.argv[4]) - time.time()))
    result = optimize(study, objective, stats=stats)
    print(json.dumps({"ahead": stats.ahead, "best": result.best_value}))
    """
)


def _workers(url: str, name: str, k: int, seconds: float) -> list[dict]:
    import time

    optuna.create_study(study_name=name, storage=open_storage(url), direction="maximize")
    start = str(time.time() + 4.0)  # released together once all have started
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, url, name, str(seconds), start],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(k)
    ]
    outputs = [p.communicate(timeout=300) for p in processes]
    assert all(p.returncode == 0 for p in processes), [err for _, err in outputs]
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]


def test_workers_that_score_ahead_write_one_workers_trials(tmp_path):
    url = f"sqlite:///{tmp_path}/w.db"
    (alone,) = _workers(url, "alone", 1, 0.0)
    together = _workers(url, "together", 3, 0.05)
    assert alone["ahead"] == 0
    assert sum(w["ahead"] for w in together) > 0  # they did wait at sweeps' ends, and scored on
    storage = open_storage(url)
    one, three = (optuna.load_study(study_name=n, storage=storage) for n in ("alone", "together"))

    def positions(study):
        done = {}
        for t in study.get_trials(deepcopy=False):
            position = t.system_attrs.get("boxcox:position")
            assert t.state == optuna.trial.TrialState.COMPLETE, (position, t.state)
            assert position not in done  # each position once
            done[position] = (tuple(sorted(t.params.items())), t.value)
        return done

    assert positions(three) == positions(one)
    assert {w["best"] for w in together} == {alone["best"]}
    # The board is gone once the plan has ended: its scores are the trials'.
    assert not [k for k in _system_attrs(url, "together") if k.startswith(_claims.AHEAD_PREFIX)]


@pytest.mark.timeout(120)  # a take that waited for the lock would wait for ever here
def test_on_postgresql_the_board_is_taken_once_without_the_study_lock(postgres_url):
    # One insert that skips the keys another worker has (the table's unique study and key):
    # no study lock, so taking points ahead does not queue behind claims and writes.
    import threading

    study = optuna.create_study(storage=open_storage(postgres_url), study_name="board")
    keys = [_claims.ahead_key(np.array([float(k)])) for k in range(40)]
    assert _claims.take_ahead(study, [keys[0], keys[1], keys[0]], "a:1:1") == keys[:2]
    assert _claims.take_ahead(study, keys[:3], "b:2:2") == [keys[2]]
    # A claim or a write holds the study's write lock meanwhile: taking does not wait for it.
    import psycopg

    with psycopg.connect(postgres_url.replace("postgresql+psycopg://", "postgresql://")) as c:
        c.execute(
            "UPDATE studies SET study_name = study_name WHERE study_id = %s", (study._study_id,)
        )
        assert _claims.take_ahead(study, keys[3:4], "a:1:1") == [keys[3]]
        c.rollback()
    # Workers taking the same keys at once: each key goes to exactly one of them.
    got, start = {}, threading.Barrier(4)

    def take(owner):
        start.wait()
        got[owner] = _claims.take_ahead(study, keys[4:], owner)

    takers = [threading.Thread(target=take, args=(f"w:{i}:1",)) for i in range(4)]
    for t in takers:
        t.start()
    for t in takers:
        t.join()
    taken = [key for keys_taken in got.values() for key in keys_taken]
    assert sorted(taken) == sorted(keys[4:])
    entries = _claims.read_ahead(study, keys)
    assert {entries[key][1] for key in keys[4:]} <= set(got) and len(entries) == 40
    assert all(entries[key][1] == owner for owner, ks in got.items() for key in ks)
