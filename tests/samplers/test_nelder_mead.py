"""The Nelder–Mead baseline (SPEC §6) driven through Optuna as a user drives it.

Each test pins one promise of ``NelderMeadSampler``: the points it evaluates are scipy's, step for
step; it never evaluates outside the domain and still reaches an optimum on the boundary; it restarts
from the best point when the simplex collapses; it meets Optuna's sampler contract; a study killed
with SIGKILL and rerun evaluates the points of an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Callable
import os
from pathlib import Path
import runpy
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
import pytest
import sampler_run
from scipy.optimize import minimize
from scipy.optimize import rosen

from optuna_boxcox.samplers import NelderMeadSampler

LOW, HIGH = -10.0, 10.0
POSITION = "boxcox:position"


def space(names):
    return {n: FloatDistribution(LOW, HIGH) for n in names}


def names_for(n: int) -> list[str]:
    return [f"lambda_{i}" for i in range(n)]


def objective_of(f: Callable[[np.ndarray], float], names: list[str], sign: float = 1.0):
    """A plain Optuna objective: suggest every λ in the domain, return ``sign · f(λ)``."""

    def objective(trial: optuna.Trial) -> float:
        return sign * f(np.array([trial.suggest_float(n, LOW, HIGH) for n in names]))

    return objective


def run(sampler, objective, *, budget: int, direction: str = "minimize", n_jobs: int = 1):
    """The shared runner, minimising (Nelder–Mead's tests minimise test functions)."""
    return sampler_run.run(sampler, objective, budget=budget, direction=direction, n_jobs=n_jobs)


def points_of(study: optuna.Study, names: list[str]) -> np.ndarray:
    """Evaluated λ of the plan trials, in plan order."""
    trials = sorted(
        (t for t in study.trials if t.system_attrs.get(POSITION, -1) >= 0),
        key=lambda t: t.system_attrs[POSITION],
    )
    return np.array([[t.params[n] for n in names] for t in trials])


@pytest.fixture(autouse=True)
def _quiet_optuna():
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    yield
    optuna.logging.set_verbosity(verbosity)


# -- test functions ----------------------------------------------------------------------------------

_H = np.diag([1.0, 2.0, 3.0, 4.0, 5.0]) + 0.1
_C = np.array([0.5, -1.0, 1.5, -2.0, 2.5])


def quadratic(x: np.ndarray) -> float:
    """5-D, correlated."""
    return float((x - _C) @ _H @ (x - _C))


def bumpy(x: np.ndarray) -> float:
    """3-D with several local minima, where the simplex now and then shrinks."""
    return float(
        0.3 * np.sum((x - np.array([1.0, -2.0, 0.5])) ** 2) + np.sum(np.cos(4 * x + np.arange(3)))
    )


def ellipsoid(x: np.ndarray) -> float:
    """3-D, axis-aligned."""
    return float(np.sum((x - np.array([3.0, -2.0, 0.5])) ** 2 * np.array([1.0, 5.0, 0.2])))


def plateau(x: np.ndarray) -> float:
    """A bowl with a flat bottom of value 1 (radius 1 around (3, 3))."""
    return max(1.0, (x[0] - 3.0) ** 2 + (x[1] - 3.0) ** 2)


def beyond_the_boundary(x: np.ndarray) -> float:
    """Minimum at (12, -3), outside [-10, 10]²: the best point of the domain is (10, -3)."""
    return float((x[0] - 12.0) ** 2 + (x[1] + 3.0) ** 2)


# -- the same points as scipy -------------------------------------------------------------------------

MOVES = {"reflect", "expand", "contract_outside", "contract_inside"}
#: function, start, and the steps its first 200 evaluations take (so that every step is compared).
PROBLEMS = {
    "rosenbrock-2d": (rosen, [-1.2, 1.0], {"initial"} | MOVES),
    "quadratic-5d": (quadratic, [1.0, 2.0, -1.0, 0.5, -0.3], {"initial"} | MOVES),
    "bumpy-3d": (bumpy, [2.0, 1.0, -1.0], {"initial", "shrink"} | MOVES),
}


def scipy_evaluations(f, x0, *, adaptive: bool, maxfev: int) -> np.ndarray:
    """The λ scipy evaluates, run in the unit cube on f∘map from the sampler's initial simplex."""
    n = len(x0)
    u0 = (np.asarray(x0) - LOW) / (HIGH - LOW)
    simplex = np.vstack([u0] + [u0 + 0.05 * np.eye(n)[k] for k in range(n)])
    seen = []

    def in_cube(u: np.ndarray) -> float:
        lam = LOW + u * (HIGH - LOW)
        seen.append(lam)
        return f(lam)

    options = dict(initial_simplex=simplex, adaptive=adaptive, maxfev=maxfev, xatol=0.0, fatol=0.0)
    minimize(in_cube, u0, method="Nelder-Mead", options=options)
    return np.array(seen)


@pytest.mark.parametrize("direction", ["minimize", "maximize"])
@pytest.mark.parametrize("adaptive", [False, True], ids=["standard", "adaptive"])
@pytest.mark.parametrize("problem", list(PROBLEMS))
def test_sampler_evaluates_scipys_points_in_scipys_order(problem, adaptive, direction):
    f, x0, steps = PROBLEMS[problem]
    names = names_for(len(x0))
    expected = scipy_evaluations(f, x0, adaptive=adaptive, maxfev=200)
    assert np.all((expected >= LOW) & (expected <= HIGH)), (
        "test premise: scipy stays in the domain"
    )

    sampler = NelderMeadSampler(
        n_trials=200,
        adaptive=adaptive,
        xatol=0.0,
        fatol=0.0,
        search_space=space(names),
        initial_params=dict(zip(names, x0)),
    )
    sign = 1.0 if direction == "minimize" else -1.0
    study = run(sampler, objective_of(f, names, sign), budget=200, direction=direction)
    got = points_of(study, names)

    assert len(got) == len(expected) == 200
    diverged = np.flatnonzero(np.max(np.abs(got - expected), axis=1) > 1e-9)
    assert diverged.size == 0, (
        f"{problem} ({'adaptive' if adaptive else 'standard'}, {direction}): evaluation "
        f"{diverged[0]} is {got[diverged[0]].tolist()}, scipy evaluated {expected[diverged[0]].tolist()}"
    )
    assert {t.user_attrs["restart"] for t in study.trials} == {0}
    assert {t.user_attrs["step"] for t in study.trials} == steps, (
        "test premise: every step is taken"
    )
    result = sampler.result(study)
    assert result.finished and result.best_value == sign * min(f(x) for x in expected)


def test_initial_simplex_and_each_shrink_are_one_batch_with_numbered_candidates():
    names = names_for(3)
    sampler = NelderMeadSampler(n_trials=120, search_space=space(names))
    study = run(sampler, objective_of(bumpy, names), budget=120)
    assert points_of(study, names)[0].tolist() == [1.0, 1.0, 1.0], "vertex 0 is the start point"
    batches: dict[tuple[int, int, str], list[int]] = {}
    for t in study.trials:
        key = (t.user_attrs["restart"], t.user_attrs["iteration"], t.user_attrs["step"])
        batches.setdefault(key, []).append(t.user_attrs["candidate"])
    assert batches[(0, 0, "initial")] == [0, 1, 2, 3]
    assert any(step == "shrink" for _, _, step in batches), "test premise: the simplex shrinks"
    # A restart's simplex re-uses the best point's value: it evaluates the 3 new vertices only.
    sizes = {"initial": 3, "shrink": 3, **dict.fromkeys(MOVES, 1)}
    for (restart, iteration, step), candidates in batches.items():
        if (restart, iteration, step) != (0, 0, "initial") and (restart, iteration, step) != max(
            batches
        ):
            assert candidates == list(range(sizes[step])), (
                f"{step} of restart {restart}, iteration {iteration}: candidates {candidates}"
            )


def test_center_start_puts_vertex_zero_at_the_middle_of_the_domain():
    names = ["a", "b"]
    sampler = NelderMeadSampler(
        n_trials=3,
        start="center",
        search_space={"a": FloatDistribution(-2.0, 6.0), "b": FloatDistribution(0.0, 1.0)},
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(lambda t: t.suggest_float("a", -2, 6) + t.suggest_float("b", 0, 1))
    # Vertex 0 at the centre, the others 5 % of each λ's width away.
    assert points_of(study, names) == pytest.approx(
        np.array([[2.0, 0.5], [2.4, 0.5], [2.0, 0.55]])
    )


# -- the domain --------------------------------------------------------------------------------------


def test_optimum_on_the_boundary_is_reached_without_evaluating_outside_the_domain():
    names = ["a", "b"]
    sampler = NelderMeadSampler(search_space=space(names))
    study = run(sampler, objective_of(beyond_the_boundary, names), budget=400)

    assert len(study.trials) == sampler.budget(2) == 400
    points = points_of(study, names)
    assert np.all((points >= LOW) & (points <= HIGH))
    result = sampler.result(study)
    assert abs(result.params["a"] - 10.0) < 1e-3, f"best λ {result.params}, the optimum is a = 10"
    assert abs(result.params["b"] + 3.0) < 1e-2
    # An iteration whose reflection left the domain spent no trial on it: its first trial is the
    # inside contraction.
    by_iteration: dict[tuple[int, int], list[str]] = {}
    for t in study.trials:
        if t.user_attrs["step"] != "initial":
            key = (t.user_attrs["restart"], t.user_attrs["iteration"])
            by_iteration.setdefault(key, []).append(t.user_attrs["step"])
    skipped = [steps for steps in by_iteration.values() if steps[0] != "reflect"]
    assert skipped, "test premise: some reflections leave the domain"
    assert all(steps[0] == "contract_inside" for steps in skipped)


def test_vertex_that_would_leave_the_domain_steps_the_other_way():
    sampler = NelderMeadSampler(
        n_trials=3, search_space=space(["a", "b"]), initial_params={"a": 10.0, "b": -10.0}
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective_of(lambda x: float(np.sum(x)), ["a", "b"]))
    assert points_of(study, ["a", "b"]).tolist() == [[10.0, -10.0], [9.0, -10.0], [10.0, -9.0]]


# -- restarts ----------------------------------------------------------------------------------------


def test_collapsed_simplex_on_a_flat_region_restarts_around_the_best_point_and_keeps_it():
    names = ["a", "b"]
    sampler = NelderMeadSampler(n_trials=120, search_space=space(names))
    study = run(sampler, objective_of(plateau, names), budget=120)
    trials = sorted(study.trials, key=lambda t: t.system_attrs[POSITION])
    restarts = [t.user_attrs["restart"] for t in trials]
    assert restarts == sorted(restarts) and restarts[-1] >= 3, (
        f"restart numbers along the study: {restarts}; a flat simplex must restart"
    )
    for r in range(1, restarts[-1] + 1):
        batch = [
            t for t in trials if t.user_attrs["restart"] == r and t.user_attrs["step"] == "initial"
        ]
        earlier = trials[: trials.index(batch[0])]
        best = min(earlier, key=lambda t: t.value)  # min keeps the first of equal values
        centre = np.array([best.params[n] for n in names])
        moved = [
            np.flatnonzero(np.array([t.params[n] for n in names]) != centre).tolist()
            for t in batch
        ]
        assert moved == [[0], [1]], (
            f"restart {r} simplex {[t.params for t in batch]} is not around the best {best.params}"
        )
    first_best = next(t for t in trials if t.value == 1.0)
    result = sampler.result(study)
    assert result.best_value == 1.0 and result.params == first_best.params


def test_a_stalled_search_restarts_when_its_best_stops_improving():
    names = names_for(3)

    def restarts(stall):
        sampler = NelderMeadSampler(
            n_trials=80, xatol=0.0, fatol=0.0, stall_iterations=stall, search_space=space(names)
        )
        study = run(sampler, objective_of(ellipsoid, names), budget=80)
        return max(t.user_attrs["restart"] for t in study.trials)

    assert restarts(None) == 0
    assert restarts(1) > 0


# -- budget, settings, threads -----------------------------------------------------------------------


def test_default_budget_is_scipys_200_evaluations_per_lambda():
    assert NelderMeadSampler().budget(3) == 600
    assert NelderMeadSampler(n_trials=7).budget(3) == 7


def test_budget_smaller_than_the_simplex_evaluates_part_of_it_and_stops():
    names = names_for(3)
    sampler = NelderMeadSampler(n_trials=2, search_space=space(names))
    study = run(sampler, objective_of(ellipsoid, names), budget=2)
    assert len(study.trials) == 2 and sampler.result(study).finished


def test_study_records_its_settings_and_continues_with_a_larger_budget_only():
    names = names_for(3)
    storage = optuna.storages.InMemoryStorage()
    short = NelderMeadSampler(n_trials=30, search_space=space(names))
    study = optuna.create_study(storage=storage, study_name="nm", sampler=short)
    study.optimize(objective_of(ellipsoid, names))
    recorded = study.user_attrs["boxcox_sampler"]
    assert recorded["name"] == "nelder-mead" and recorded["settings"] == short.settings()

    longer = NelderMeadSampler(n_trials=50, search_space=space(names))
    continued = optuna.load_study(storage=storage, study_name="nm", sampler=longer)
    continued.optimize(objective_of(ellipsoid, names))
    fresh = run(
        NelderMeadSampler(n_trials=50, search_space=space(names)),
        objective_of(ellipsoid, names),
        budget=50,
    )
    assert len(continued.trials) == 50
    assert points_of(continued, names).tolist() == points_of(fresh, names).tolist()

    fewer = NelderMeadSampler(n_trials=40, search_space=space(names))
    again = optuna.load_study(storage=storage, study_name="nm", sampler=fewer)
    with pytest.raises(ValueError, match="n_trials: 50 there, 40 here"):
        again.optimize(objective_of(ellipsoid, names), n_trials=1)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(initial_step=0.0),
        dict(initial_step=0.6),
        dict(start="mle"),
        dict(n_trials=0),
        dict(stall_iterations=0),
        dict(xatol=-1.0),
    ],
)
def test_invalid_settings_are_refused(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        NelderMeadSampler(**kwargs)


def test_three_threads_evaluate_a_simplex_at_once_and_the_single_thread_points():
    names = names_for(3)

    def sampler():
        return NelderMeadSampler(n_trials=40, search_space=space(names))

    serial = run(sampler(), objective_of(bumpy, names), budget=40)

    def slow_batches(trial):
        value = objective_of(bumpy, names)(trial)
        # The trial takes its plan position at its first suggestion; its cached attrs predate it.
        if (
            trial.study.get_trials(deepcopy=False)[trial.number].user_attrs.get("step")
            == "initial"
        ):
            time.sleep(0.05)
        return value

    threaded = run(sampler(), slow_batches, budget=40, n_jobs=3)
    complete = [
        t
        for t in threaded.trials
        if t.state == TrialState.COMPLETE and t.system_attrs.get(POSITION, -1) >= 0
    ]
    assert sorted(t.system_attrs[POSITION] for t in complete) == list(range(40))
    assert points_of(threaded, names).tolist() == points_of(serial, names).tolist()
    first, second = (t for t in complete if t.system_attrs[POSITION] in (0, 1))
    assert max(first.datetime_start, second.datetime_start) < min(
        first.datetime_complete, second.datetime_complete
    ), "the initial simplex's points were evaluated one after another"


# Optuna's sampler contract: tests/samplers/test_sampler_contract.py runs its suites on NelderMeadSampler too.


# -- a killed process ---------------------------------------------------------------------------------

WORKER = textwrap.dedent(
    """
    import pathlib, sys, time
    import numpy as np
    import optuna
    from optuna.distributions import FloatDistribution
    from optuna_boxcox.samplers import NelderMeadSampler

    NAMES = ["a", "b", "c"]
    N_TRIALS = 40

    def optimize(storage, name, hang_at=None, marker=None):
        sampler = NelderMeadSampler(
            n_trials=N_TRIALS, fatol=0.1, seed=5,
            search_space={n: FloatDistribution(-10.0, 10.0) for n in NAMES},
            initial_params={"a": 2.0, "b": -1.0, "c": 0.5},
        )
        study = optuna.create_study(storage=storage, study_name=name, sampler=sampler, load_if_exists=True)

        def objective(trial):
            x = np.array([trial.suggest_float(n, -10.0, 10.0) for n in NAMES])
            if trial.number == hang_at:  # the test kills the process here, mid-trial
                pathlib.Path(marker).touch()
                time.sleep(600)
            return float(np.sum((x - np.array([1.0, 4.0, -3.0])) ** 2 * np.array([1.0, 2.0, 0.5])))

        study.optimize(objective)
        return study

    if __name__ == "__main__":
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        hang_at = int(sys.argv[3]) if len(sys.argv) > 3 else None
        optimize(sys.argv[1], sys.argv[2], hang_at, sys.argv[4] if hang_at is not None else None)
    """
)
KILL_AT = 15


def plan_sequence(study: optuna.Study) -> list[tuple[int, dict[str, float]]]:
    """(position, params) of the COMPLETE plan trials, by position."""
    complete = study.get_trials(states=(TrialState.COMPLETE,))
    return sorted(
        (t.system_attrs[POSITION], t.params)
        for t in complete
        if t.system_attrs.get(POSITION, -1) >= 0
    )


def test_a_study_killed_and_rerun_evaluates_the_points_of_an_uninterrupted_one(tmp_path: Path):
    script = tmp_path / "nm_worker.py"
    script.write_text(WORKER)
    worker_module = runpy.run_path(str(script), run_name="nm_worker")
    n_trials = worker_module["N_TRIALS"]
    reference = worker_module["optimize"](optuna.storages.InMemoryStorage(), "reference")
    expected = plan_sequence(reference)
    assert [p for p, _ in expected] == list(range(n_trials))
    restarts = [t.user_attrs["restart"] for t in reference.trials]
    assert restarts[KILL_AT] == 0 and restarts[-1] > 0, "test premise: a restart after the kill"

    url = f"sqlite:///{tmp_path / 'nm.db'}"
    command = [sys.executable, str(script), url, "killed"]
    marker = tmp_path / "hanging"
    worker = subprocess.Popen(
        [*command, str(KILL_AT), str(marker)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert worker.poll() is None, "the worker ended before reaching the trial to kill"
        assert time.monotonic() < deadline, "the worker made no progress"
        time.sleep(0.02)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    subprocess.run(command, check=True, capture_output=True, timeout=120)  # the same command again

    study = optuna.load_study(study_name="killed", storage=url)
    got = plan_sequence(study)
    assert [p for p, _ in got] == list(range(n_trials)), "positions missing or completed twice"
    first = next((p for (p, a), (_, b) in zip(got, expected) if a != b), None)
    assert first is None, (
        f"after the kill, position {first} evaluated {got[first][1]}, "
        f"an uninterrupted run evaluated {expected[first][1]}"
    )
    killed = study.trials[KILL_AT]
    assert killed.state == TrialState.FAIL and killed.system_attrs.get("boxcox:reaped"), (
        f"the trial running when the process was killed ended {killed.state.name}"
    )
    assert not [t.number for t in study.trials if t.state == TrialState.RUNNING]
