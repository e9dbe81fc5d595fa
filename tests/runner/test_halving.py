"""Rows as the fidelity in the batched runner: each batch halved over the objective's rungs, the
pruned candidates PRUNED trials with their intermediate values, as a plain loop halves them."""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import optuna
from optuna.trial import TrialState
import pytest
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import optimize
from optuna_boxcox._lifecycle._search import RunOptions
from optuna_boxcox._lifecycle._search import Where
from optuna_boxcox._objective._arguments import check_data
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._study._fidelity import Fidelity
from optuna_boxcox._system._process import OWNER_KEY
from optuna_boxcox.samplers import PlanRun
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import open_storage

FIDELITY = Fidelity(min_rows=60)  # rungs 60, 180, 540 and all 569 rows of breast_cancer


@pytest.fixture(scope="module")
def data(breast_cancer):
    return breast_cancer.data.iloc[:, :4].to_numpy(), breast_cancer.target


def new_study(url, name="s"):
    return optuna.create_study(
        storage=open_storage(url) if url else None,
        study_name=name,
        direction="maximize",
        sampler=make_sampler("iterative"),
    )


def oracle(X, y, fidelity):
    """The plan halved by hand: every batch's points scored rung by rung with a fresh objective,
    the best ``max(1, n // eta)`` (ties: plan order) promoted, a lone survivor straight to the
    top rung. A point COMPLETE in an earlier batch competes too and is COMPLETE with its value
    (its top rung added to its intermediate values); a batch of such points only is not scored.
    Returns {position: (state, value, intermediate values)} and the plan's (Λopt, value)."""
    fresh = BoxCoxObjective(X, y, GaussianNB(), fidelity=fidelity)
    rungs = fresh.rungs
    plan = make_sampler("iterative").plan(fresh.space)
    outcome, scores, top_known = {}, {}, {}
    while not plan.finished:
        span = plan.positions(plan.current)
        points = plan.batches[plan.current].points
        if all(x.tobytes() in top_known for x in points):
            for p, x in zip(span, points):
                outcome[p] = (TrialState.COMPLETE, top_known[x.tobytes()], {})
            alive = []
        else:
            alive = list(span)
        steps = {p: {} for p in alive}
        for rows in rungs:
            if not alive:
                break
            if len(alive) == 1:
                rows = rungs[-1]
            for p in alive:
                steps[p][rows] = fresh.at_rows(rows).evaluate(points[p - span.start])
            if rows == rungs[-1]:
                break
            ranked = sorted(alive, key=lambda p: (-steps[p][rows], p))
            alive = sorted(ranked[: max(1, len(alive) // fidelity.eta)])
        for p, values in steps.items():
            key = points[p - span.start].tobytes()
            if key in top_known:
                values.setdefault(rungs[-1], top_known[key])
            last = list(values.values())[-1]
            if rungs[-1] in values:
                outcome[p] = (TrialState.COMPLETE, last, values)
                top_known[key] = last
            else:
                outcome[p] = (TrialState.PRUNED, last, values)
        scores.update(
            (p, outcome[p][1] if outcome[p][0] == TrialState.COMPLETE else -math.inf) for p in span
        )
        plan.advance(scores)
    point, value = plan.result
    return outcome, fresh.space.to_params(point), value


def by_position(study):
    found = {}
    for t in study.get_trials(deepcopy=False):
        position = t.system_attrs[PlanRun.position_key]
        assert position not in found, f"position {position} finished twice"
        found[position] = (t.state, t.value, t.intermediate_values)
    return found


@pytest.fixture(scope="module")
def expected(data):
    return oracle(*data, FIDELITY)


@pytest.mark.parametrize(
    "kind, n_jobs", [("memory", 1), ("sqlite", 1), ("sqlite", 2), ("journal", 1), ("memory", 2)]
)
def test_the_runner_halves_each_batch_as_the_plain_loop(tmp_path, data, expected, kind, n_jobs):
    url = {"memory": None, "sqlite": f"sqlite:///{tmp_path}/h.db", "journal": f"{tmp_path}/h.log"}
    study = new_study(url[kind])
    objective = BoxCoxObjective(*data, GaussianNB(), fidelity=FIDELITY)
    result = optimize(study, objective, n_jobs=n_jobs)
    outcome, params, value = expected
    assert by_position(study) == outcome
    assert result.finished and result.params == params and result.best_value == value
    states = {state for state, _, _ in outcome.values()}
    assert states == {TrialState.COMPLETE, TrialState.PRUNED}
    # Read back from the storage (not the runner's cache of its own trials) the same.
    if url[kind] is not None:
        reread = optuna.load_study(study_name="s", storage=open_storage(url[kind]))
        assert by_position(reread) == outcome


def test_a_resumed_search_equals_an_uninterrupted_one(tmp_path, data, expected):
    url = f"sqlite:///{tmp_path}/r.db"
    study = new_study(url)
    # Cuts inside batches of 11: each run ends with the batch it started.
    for n_trials in (5, 30, 7):
        objective = BoxCoxObjective(*data, GaussianNB(), fidelity=FIDELITY)
        before = len(study.trials)
        optimize(study, objective, n_trials=n_trials)
        assert (len(study.trials) - before) % 11 == 0
    objective = BoxCoxObjective(*data, GaussianNB(), fidelity=FIDELITY)
    result = optimize(study, objective)
    outcome, params, value = expected
    assert by_position(study) == outcome
    assert result.params == params and result.best_value == value


def test_exact_writes_no_pruned_trial(data):
    study = new_study(None)
    optimize(study, BoxCoxObjective(*data, GaussianNB()), n_trials=22)
    assert {t.state for t in study.trials} == {TrialState.COMPLETE}
    assert all(t.intermediate_values == {} for t in study.trials)


def test_a_pruned_trial_reads_back_as_one_optuna_wrote(url, data):
    study = new_study(url, "runner")
    optimize(study, BoxCoxObjective(*data, GaussianNB(), fidelity=FIDELITY), n_trials=11)
    # Optuna's own reader is the oracle, on a storage without this package's cache.
    storage = optuna.storages.RDBStorage(url)
    ours = storage.get_all_trials(study_id_of(study))
    pruned = [t for t in ours if t.state == TrialState.PRUNED]
    assert pruned and all(len(t.intermediate_values) >= 1 for t in pruned)
    assert_written_as_by_optuna(storage, ours)


def assert_written_as_by_optuna(storage, ours):
    """Each of ``ours`` equals its twin written through Optuna's public API (ask, report,
    tell), read back by Optuna's own reader."""
    theirs_study = optuna.create_study(storage=storage, direction="maximize")
    for t in ours:
        theirs_study.enqueue_trial(t.params)
        trial = theirs_study.ask(t.distributions)
        for key, value in t.user_attrs.items():
            trial.set_user_attr(key, value)
        for key, value in t.system_attrs.items():
            storage.set_trial_system_attr(trial_id_of(trial), key, value)
        for step, value in t.intermediate_values.items():
            trial.report(value, step)
        if t.state == TrialState.PRUNED:
            theirs_study.tell(trial, state=TrialState.PRUNED)
        else:
            theirs_study.tell(trial, t.value)
    theirs = storage.get_all_trials(study_id_of(theirs_study))
    for a, b in zip(ours, theirs, strict=True):
        assert (a.state, a.values, nan_equal(a.intermediate_values)) == (
            b.state,
            b.values,
            nan_equal(b.intermediate_values),
        )
        assert list(a.params.items()) == list(b.params.items())
        assert a.distributions == b.distributions
        assert a.user_attrs == b.user_attrs
        # Optuna's tell adds nothing but the enqueued trial's marks to the system attributes.
        assert a.system_attrs.items() <= b.system_attrs.items()


def nan_equal(values):
    """Intermediate values with NaN spelled out (NaN equals nothing, itself included)."""
    return {step: "NaN" if math.isnan(v) else v for step, v in values.items()}


def test_a_claim_finished_as_pruned_reads_back_as_one_optuna_wrote(url):
    from optuna.distributions import FloatDistribution

    from optuna_boxcox._optuna import _claims

    study = optuna.create_study(storage=open_storage(url), study_name="claims")
    distributions = {"lambda_0": FloatDistribution(-4, 4), "lambda_1": FloatDistribution(-4, 4)}
    claimed = _claims.claim(
        study,
        [
            _claims.Claim(p, {"lambda_0": 0.5 * p, "lambda_1": -1.0}, {"epoch": 0})
            for p in range(3)
        ],
        distributions,
        position_key=PlanRun.position_key,
        owner="a worker",
    )
    end = datetime.datetime.now()
    _claims.complete(
        study,
        [
            (claimed[0], 0.75, {"improved": False}, end, TrialState.PRUNED, {60: 0.8, 180: 0.75}),
            (claimed[1], math.nan, {"improved": False}, end, TrialState.PRUNED, {60: math.nan}),
            (claimed[2], 0.9, {"improved": True}, end, TrialState.COMPLETE, {60: 0.7, 569: 0.9}),
        ],
    )
    storage = optuna.storages.RDBStorage(url)
    ours = storage.get_all_trials(study_id_of(study))
    assert [t.state for t in ours] == [TrialState.PRUNED, TrialState.PRUNED, TrialState.COMPLETE]
    assert ours[0].value == 0.75 and ours[1].value is None
    assert_written_as_by_optuna(storage, ours)


def test_a_capped_top_rung_is_confirmed_on_all_rows(tmp_path, data):
    capped = Fidelity(min_rows=60, top_rows=180)
    study = new_study(f"sqlite:///{tmp_path}/c.db")
    objective = BoxCoxObjective(*data, GaussianNB(), fidelity=capped)
    assert objective.rungs == (60, 180)
    result = optimize(study, objective)
    completes = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert all(max(t.intermediate_values, default=180) == 180 for t in completes)
    # The plan's Λopt and G, scored on all 569 rows by an objective of their own.
    plan = make_sampler("iterative").result(study)
    full = BoxCoxObjective(*data, GaussianNB())
    found_value = full.evaluate(full.to_point(plan.params))
    start_value = full.evaluate(full.to_point(full.initial_params))
    confirmed = study.user_attrs["boxcox_confirmed"]
    assert confirmed["rows"] == 569
    assert confirmed["found_value"] == found_value
    assert confirmed["start_value"] == start_value
    found_wins = found_value >= start_value
    assert confirmed["best"] == (plan.params if found_wins else full.initial_params)
    assert confirmed["value"] == max(found_value, start_value)
    assert result.confirmed == confirmed
    assert (result.params, result.best_value) == (confirmed["best"], confirmed["value"])
    # A later run of the finished search reads the confirmation back.
    again = optimize(study, BoxCoxObjective(*data, GaussianNB(), fidelity=capped))
    assert again.confirmed == confirmed and again.best_value == result.best_value


def test_an_uncapped_search_is_not_confirmed_again(data):
    study = new_study(None)
    result = optimize(study, BoxCoxObjective(*data, GaussianNB(), fidelity=FIDELITY))
    assert result.confirmed is None and "boxcox_confirmed" not in study.user_attrs
    assert np.isfinite(result.best_value)


# A search in a process of its own, for killing and for several workers on one study: GaussianNB
# slowed down (argv[3] seconds a fit), so that a kill lands in the middle of the search and
# workers overlap.
_SEARCH = """
import sys, time
import optuna
from sklearn.datasets import load_breast_cancer
from sklearn.naive_bayes import GaussianNB
from optuna_boxcox import BoxCoxObjective, optimize
from optuna_boxcox._study._fidelity import Fidelity
from optuna_boxcox._system._process import OWNER_KEY
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import open_storage

class SlowNB(GaussianNB):
    def fit(self, X, y, sample_weight=None):
        time.sleep(float(sys.argv[3]))
        return super().fit(X, y, sample_weight)

X, y = load_breast_cancer(return_X_y=True)
study = optuna.create_study(storage=open_storage(sys.argv[1]), study_name="s",
    direction="maximize", sampler=make_sampler("iterative"), load_if_exists=True)
objective = BoxCoxObjective(X[:, :8], y, SlowNB(), fidelity=Fidelity(min_rows=60))
optimize(study, objective, n_jobs=int(sys.argv[2]))
"""


def search(url, n_jobs=1, fit_seconds=0.01):
    return subprocess.Popen(
        [sys.executable, "-c", _SEARCH, url, str(n_jobs), str(fit_seconds)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def finished(url):
    try:
        study = optuna.load_study(study_name="s", storage=open_storage(url))
    except KeyError:
        return 0
    return sum(t.state.is_finished() for t in study.get_trials(deepcopy=False))


@pytest.mark.long
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_search_killed_mid_batch_resumes_to_the_uninterrupted_outcome(tmp_path, n_jobs):
    whole = f"sqlite:///{tmp_path}/whole.db"
    assert search(whole).wait(timeout=600) == 0
    url = f"sqlite:///{tmp_path}/killed.db"
    # Slower fits than the whole run's (a sleep: the same scores), so that on a loaded machine,
    # where each poll of the study takes longer, the search is still running when one sees 60
    # trials: at 10 ms a fit it once finished all 352 between two polls.
    worker = search(url, n_jobs, fit_seconds=0.05)
    deadline = time.monotonic() + 300
    while finished(url) < 60 and worker.poll() is None:
        assert time.monotonic() < deadline, "the search made no progress"
        time.sleep(0.02)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    assert 0 < finished(url) < 8 * 4 * 11, "the kill did not land mid-search"
    assert search(url, n_jobs).wait(timeout=600) == 0
    load = lambda u: optuna.load_study(study_name="s", storage=open_storage(u))
    assert by_position(load(url)) == by_position(load(whole))
    result = make_sampler("iterative").result(load(url))
    assert (
        result.finished and result.params == make_sampler("iterative").result(load(whole)).params
    )


def test_two_workers_on_one_study_finish_every_position_once(tmp_path):
    url = f"sqlite:///{tmp_path}/shared.db"
    optuna.create_study(storage=open_storage(url), study_name="s", direction="maximize")
    # Started together, with fits slow enough for the search (~10 s) to outlast their start.
    workers = [search(url, fit_seconds=0.03) for _ in range(2)]
    for worker in workers:
        assert worker.wait(timeout=600) == 0, worker.stderr.read().decode()[-2000:]
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    outcome = by_position(study)  # fails on a position finished twice
    assert sorted(outcome) == list(range(8 * 4 * 11))
    assert {state for state, _, _ in outcome.values()} == {TrialState.COMPLETE, TrialState.PRUNED}
    assert all(steps for state, _, steps in outcome.values() if state == TrialState.PRUNED)
    assert make_sampler("iterative").result(study).finished
    # Both took part: the batches were shared through claims.
    assert len({t.system_attrs[OWNER_KEY] for t in study.trials}) == 2


def test_search_prints_the_confirmation_of_a_capped_search(tmp_path, capsys):
    from optuna_boxcox.cli import build_parser
    from optuna_boxcox.cli import search as cli_search

    storage = f"sqlite:///{tmp_path}/cli.db"
    argv = ["search", "--dataset", "breast_cancer", "--features", "4", "--classifier", "bayes"]
    args = build_parser().parse_args([*argv, "--storage", storage, "--fidelity", "60"])
    X, y, _ = cli_search.load_data(args)
    # A capped top rung (what auto chooses for data too large to fit whole every sweep).
    spec = dataclasses.replace(
        cli_search.search_spec(args), fidelity=Fidelity(min_rows=60, top_rows=180)
    )
    where = Where(storage=storage, study_name="capped")
    found = cli_search.run_spec(spec, check_data(X, y), where, RunOptions())
    cli_search.print_search(found)
    printed = capsys.readouterr().out
    confirmed = found.study.user_attrs["boxcox_confirmed"]
    line = next(line for line in printed.splitlines() if line.startswith("confirmed"))
    assert f"on all {confirmed['rows']} rows" in line
    assert f"found Λ {confirmed['found_value']:.4f}" in line
    assert f"start G {confirmed['start_value']:.4f}" in line
    # The result printed is the confirmed one.
    assert f"Box-Cox search {confirmed['value']:.4f}" in printed
    assert found.params == confirmed["best"]
