"""The paper's samplers driven through Optuna as a user drives them (SPEC §4, §5).

Scores are small deterministic tables over λ with an explicit ``search_space``; each test says which
behaviour of ``study.optimize`` / ask-and-tell it pins down: budgets and stopping, the first maximum
in the paper's order, continuing and refusing studies, enqueued trials, parameters outside the λ
space, threads, the recorded attributes and the result's history.
"""

from __future__ import annotations

from collections.abc import Callable
import itertools
import time

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
import pytest
from sampler_run import run
import scipy.stats

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.samplers import DiagonalSampler
from optuna_boxcox.samplers import FullGridSampler
from optuna_boxcox.samplers import MLESampler
from optuna_boxcox.samplers import SphericalSampler

Score = Callable[[np.ndarray], float]

NAMES3 = ["a", "b", "c"]
NAMES2 = ["a", "b"]
PLAN_ATTRS = ("epoch", "direction", "candidate", "grid_step", "phase", "improved")


def space(names):
    return {n: FloatDistribution(-10.0, 10.0) for n in names}


def bumpy(x: np.ndarray) -> float:
    """Deterministic, several local maxima, many exact ties (rounded to 0.1)."""
    target = np.linspace(-3.3, 2.7, len(x))
    return float(np.round(-0.05 * np.sum((x - target) ** 2) + 0.3 * np.sum(np.cos(2.0 * x)), 1))


class Objective:
    """Scores the λ of ``names`` with ``score``; counts evaluations and keeps the evaluated points."""

    def __init__(self, score: Score, names: list[str], *, extra: bool = False, delay: float = 0.0):
        self.score, self.names, self.extra, self.delay = score, names, extra, delay
        self.points: list[np.ndarray] = []

    def lambdas(self, trial: optuna.Trial) -> np.ndarray:
        return np.array([trial.suggest_float(n, -10.0, 10.0) for n in self.names])

    def __call__(self, trial: optuna.Trial) -> float:
        if self.extra:
            trial.suggest_int("k", 1, 5)
        x = self.lambdas(trial)
        self.points.append(x)
        if self.delay:
            time.sleep(self.delay)
        return self.score(x)


def params_of(trial, names) -> list[float]:
    return [trial.params[n] for n in names]


def plan_trials(study) -> list[optuna.trial.FrozenTrial]:
    """Trials holding a plan position (not enqueued, not re-evaluations after the plan's end)."""
    return [t for t in study.trials if t.system_attrs.get("boxcox:position", -1) >= 0]


@pytest.fixture(autouse=True)
def _quiet_optuna():
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    yield
    optuna.logging.set_verbosity(verbosity)


# -- budgets: each sampler takes exactly its trials, then stops the study ---------------------------

L, E, P = 5, 2, 3
BUDGETS = {
    "spherical-L": (lambda: SphericalSampler(grid_size=L, search_space=space(NAMES3)), L),
    "diagonal-pL+1": (lambda: DiagonalSampler(grid_size=L, search_space=space(NAMES3)), P * L + 1),
    "diagonal-authors-code-pL+1": (
        lambda: DiagonalSampler(grid_size=L, authors_code=True, search_space=space(NAMES3)),
        P * L + 1,
    ),
    "full-grid-L^p": (lambda: FullGridSampler(grid_size=L, search_space=space(NAMES3)), L**P),
    "mle-1": (lambda: MLESampler(search_space=space(NAMES3)), 1),
    "coordinate-EpL": (
        lambda: CoordinateGridSampler(grid_size=L, epochs=E, search_space=space(NAMES3)),
        E * P * L,
    ),
}


@pytest.mark.parametrize("case", list(BUDGETS))
def test_sampler_evaluates_exactly_its_budget_and_then_stops_the_study_by_itself(case):
    factory, budget = BUDGETS[case]
    sampler = factory()
    objective = Objective(bumpy, NAMES3)
    study = run(sampler, objective, budget=budget)
    assert len(study.trials) == budget, (
        f"{case}: study.optimize(objective) ran {len(study.trials)} trials, the plan has {budget}"
    )
    assert sampler.budget(P) == budget
    assert all(t.state == TrialState.COMPLETE for t in study.trials)
    positions = [t.system_attrs["boxcox:position"] for t in study.trials]
    assert positions == list(range(budget)), f"{case}: plan positions {positions[:10]}…"
    result = sampler.result(study)
    assert result.finished and result.n_trials == result.budget == budget
    assert result.best_value == objective.score(np.array([result.params[n] for n in NAMES3]))


# -- the first maximum in the paper's order wins ----------------------------------------------------


def constant(x: np.ndarray) -> float:
    return 1.0


def test_spherical_sweeps_one_shared_lambda_upwards_and_a_constant_score_keeps_the_smallest():
    sampler = SphericalSampler(grid_size=11, search_space=space(NAMES3))
    study = run(sampler, Objective(constant, NAMES3), budget=11)
    assert [params_of(t, NAMES3) for t in study.trials] == [
        [c] * 3 for c in np.linspace(-5, 5, 11)
    ]
    assert sampler.result(study).params == dict.fromkeys(NAMES3, -5.0), (
        "every λ scores the same: the first grid value, -5, must win"
    )


def test_spherical_tie_between_grid_values_goes_to_the_smallest():
    def ties(x):  # equal best scores at c = -3, -2, 2, 3
        return -((abs(x[0]) - 2.5) ** 2)

    sampler = SphericalSampler(grid_size=11, search_space=space(NAMES3))
    study = run(sampler, Objective(ties, NAMES3), budget=11)
    assert sampler.result(study).params == dict.fromkeys(NAMES3, -3.0)
    assert sampler.result(study).best_value == -0.25


def test_full_grid_visits_grid_to_the_p_lexicographically_with_the_first_lambda_outermost():
    grid = np.linspace(-5, 5, 4)
    sampler = FullGridSampler(grid_size=4, search_space=space(NAMES3))
    study = run(sampler, Objective(constant, NAMES3), budget=64)
    assert [params_of(t, NAMES3) for t in study.trials] == [
        list(p) for p in itertools.product(grid, repeat=3)
    ]
    assert sampler.result(study).params == dict.fromkeys(NAMES3, -5.0), (
        "every point scores the same: the lexicographically first, all λ = -5, must win"
    )


def test_full_grid_tie_goes_to_the_lexicographically_first_point():
    def ties(x):  # equal best scores at (±2, ±1)
        return -((abs(x[0]) - 2) ** 2) - (abs(x[1]) - 1) ** 2

    sampler = FullGridSampler(grid_size=11, search_space=space(NAMES2))
    study = run(sampler, Objective(ties, NAMES2), budget=121)
    assert sampler.result(study).params == {"a": -2.0, "b": -1.0}


def test_coordinate_search_with_a_constant_score_keeps_the_first_evaluated_point():
    sampler = CoordinateGridSampler(
        grid_size=5,
        epochs=2,
        search_space=space(NAMES3),
        initial_params={"a": 0.5, "b": 0.7, "c": -0.2},
    )
    study = run(sampler, Objective(constant, NAMES3), budget=30)
    first = params_of(study.trials[0], NAMES3)
    assert first == [-5.0, 0.7, -0.2]
    assert sampler.result(study).params == dict(zip(NAMES3, first)), (
        "only a strictly greater score may replace Λopt; ties must keep the first point"
    )


def separable_with_ties(x: np.ndarray) -> float:
    """Best λ_a ∈ {-2, 2} and λ_b ∈ {-3, 3} (exact ties), independently of each other."""
    return -((abs(x[0]) - 2) ** 2) - (abs(x[1]) - 3) ** 2


def test_diagonal_sweeps_each_lambda_with_the_others_at_one_and_combines_the_first_maxima():
    sampler = DiagonalSampler(grid_size=11, search_space=space(NAMES2))
    study = run(sampler, Objective(separable_with_ties, NAMES2), budget=23)
    grid = np.linspace(-5, 5, 11).tolist()
    assert [params_of(t, NAMES2) for t in study.trials[:22]] == (
        [[c, 1.0] for c in grid] + [[1.0, c] for c in grid]
    ), "each direction must be swept over the grid with every other λ at 1"
    combined = study.trials[22]
    assert combined.user_attrs["phase"] == "combined"
    assert params_of(combined, NAMES2) == [-2.0, -3.0], (
        "the combined point must hold each direction's first maximum"
    )
    result = sampler.result(study)
    assert result.params == {"a": -2.0, "b": -3.0} and result.best_value == 0.0


def test_diagonal_returns_the_combined_point_even_when_it_scores_below_a_single_direction():
    def clash(x):  # the per-direction winners clash when combined (the paper's half-circles case)
        return separable_with_ties(x) - (10.0 if x[0] < 0 and x[1] < 0 else 0.0)

    sampler = DiagonalSampler(grid_size=11, search_space=space(NAMES2))
    study = run(sampler, Objective(clash, NAMES2), budget=23)
    result = sampler.result(study)
    assert result.params == {"a": -2.0, "b": -3.0} and result.best_value == -10.0
    # A single-direction trial, [1, -3], scored better; Algorithm 8 returns the combination anyway.
    assert study.best_value == -1.0


def test_diagonal_authors_code_sweeps_from_one_and_keeps_only_improving_directions():
    sampler = DiagonalSampler(grid_size=11, authors_code=True, search_space=space(NAMES2))
    study = run(sampler, Objective(separable_with_ties, NAMES2), budget=23)
    grid = np.linspace(-5, 5, 11).tolist()
    assert [params_of(t, NAMES2) for t in study.trials[:22]] == [[c, 1.0] for c in grid] + [
        [1.0, c] for c in grid
    ]
    # b's best sweep (-1) beats a's (-4): both accepted; the last trial scores the result.
    assert params_of(study.trials[22], NAMES2) == [-2.0, -3.0]
    assert sampler.result(study).params == {"a": -2.0, "b": -3.0}
    assert sampler.result(study).best_value == 0.0


def test_diagonal_authors_code_leaves_a_direction_that_never_improves_at_zero():
    def a_matters(x: np.ndarray) -> float:
        return -((x[0] - 2) ** 2) - (x[1] - 1) ** 2 / 100

    sampler = DiagonalSampler(grid_size=11, authors_code=True, search_space=space(NAMES2))
    study = run(sampler, Objective(a_matters, NAMES2), budget=23)
    # Sweeping b (a at 1) peaks at -1, below a's 0: b is never accepted and stays at 0.
    assert sampler.result(study).params == {"a": 2.0, "b": 0.0}
    assert sampler.result(study).best_value == -0.01


# -- the full grid's size limit ----------------------------------------------------------------------


def test_full_grid_refuses_more_than_ten_thousand_points_with_a_clear_error():
    sampler = FullGridSampler(grid_size=11, search_space=space(["a", "b", "c", "d"]))
    with pytest.raises(ValueError, match=r"11\^4 = 14641 points.*max_points=10000"):
        run(sampler, Objective(constant, ["a", "b", "c", "d"]), budget=14641)


def test_full_grid_of_exactly_ten_thousand_points_is_accepted():
    names = ["a", "b", "c", "d"]
    study = optuna.create_study(sampler=FullGridSampler(grid_size=10, search_space=space(names)))
    trial = study.ask()
    assert [trial.suggest_float(n, -10, 10) for n in names] == [-5.0] * 4


def test_full_grid_beyond_the_limit_runs_once_max_points_is_raised():
    names = ["a", "b", "c", "d"]
    study = optuna.create_study(
        sampler=FullGridSampler(grid_size=11, max_points=20_000, search_space=space(names))
    )
    trial = study.ask()
    assert [trial.suggest_float(n, -10, 10) for n in names] == [-5.0] * 4


def test_full_grid_of_any_size_runs_its_first_n_trials_in_lexicographic_order(breast_cancer):
    from sklearn.naive_bayes import GaussianNB

    from optuna_boxcox import BoxCoxObjective
    from optuna_boxcox import optimize

    X, y = breast_cancer.data, breast_cancer.target  # 11^30 points: never made in full
    objective = BoxCoxObjective(X, y, GaussianNB())
    study = optuna.create_study(direction="maximize", sampler=FullGridSampler())
    with pytest.raises(ValueError, match=r"11\^30 = .* points"):
        optimize(study, objective)
    optimize(study, objective, n_trials=15)
    grid = np.linspace(-5, 5, 11)
    expected = [[*([-5.0] * 28), grid[k // 11], grid[k % 11]] for k in range(15)]
    got = [[t.params[n] for n in objective.param_names] for t in study.trials]
    np.testing.assert_allclose(got, np.clip(expected, objective.space.low, objective.space.high))


def test_refused_full_grid_study_can_be_rerun_with_a_raised_limit():
    storage = optuna.storages.InMemoryStorage()
    refused = FullGridSampler(grid_size=5, max_points=24, search_space=space(NAMES2))
    study = optuna.create_study(
        storage=storage, study_name="grid", direction="maximize", sampler=refused
    )
    with pytest.raises(ValueError, match="max_points=24"):
        run(refused, Objective(bumpy, NAMES2), budget=25, study=study)
    raised = FullGridSampler(grid_size=5, max_points=25, search_space=space(NAMES2))
    study = optuna.load_study(storage=storage, study_name="grid", sampler=raised)
    run(raised, Objective(bumpy, NAMES2), budget=26, study=study)
    assert raised.result(study).finished
    assert len([t for t in study.trials if t.state == TrialState.COMPLETE]) == 25


# -- continuing and refusing studies -----------------------------------------------------------------

#: A staircase from [0, 0]: every sweep moves one λ up by one, so each epoch ends two steps higher.
STAIRS: dict[tuple[int, int], float] = {}
_point = [0, 0]
for _k in range(10):
    _point[_k % 2] += 1
    STAIRS[tuple(_point)] = float(_k + 1)


def stairs(x: np.ndarray) -> float:
    if not np.allclose(x, np.round(x), rtol=0, atol=1e-9):
        return 0.0
    return STAIRS.get(tuple(round(v) for v in x), 0.0)


def coordinate(epochs: int, **kwargs) -> CoordinateGridSampler:
    settings = dict(search_space=space(NAMES2), initial_params={"a": 0.0, "b": 0.0})
    return CoordinateGridSampler(epochs=epochs, **{**settings, **kwargs})


@pytest.fixture
def two_epoch_study():
    storage = optuna.storages.InMemoryStorage()
    sampler = coordinate(2)
    study = optuna.create_study(
        storage=storage, study_name="stairs", direction="maximize", sampler=sampler
    )
    run(sampler, Objective(stairs, NAMES2), budget=44, study=study)
    assert sampler.result(study).params == {"a": 2.0, "b": 2.0}
    return storage


def test_study_continued_with_more_epochs_ends_where_a_fresh_run_ends_without_redoing_trials(
    two_epoch_study,
):
    before = [
        (t.number, t.params, t.value)
        for t in optuna.load_study(storage=two_epoch_study, study_name="stairs").trials
    ]
    sampler = coordinate(4)
    study = optuna.load_study(storage=two_epoch_study, study_name="stairs", sampler=sampler)
    objective = Objective(stairs, NAMES2)
    run(sampler, objective, budget=88, study=study)

    assert len(objective.points) == 44, (
        f"continuing from 2 to 4 epochs evaluated {len(objective.points)} trials; the 44 of "
        "epochs 2 and 3 were expected, finished trials must not be redone"
    )
    assert [(t.number, t.params, t.value) for t in study.trials[:44]] == before
    assert {t.user_attrs["epoch"] for t in study.trials[44:]} == {2, 3}

    fresh_sampler = coordinate(4)
    fresh = run(fresh_sampler, Objective(stairs, NAMES2), budget=88)
    assert (
        sampler.result(study).params == fresh_sampler.result(fresh).params == {"a": 4.0, "b": 4.0}
    )
    assert sampler.result(study).best_value == fresh_sampler.result(fresh).best_value == 8.0
    assert study.user_attrs["boxcox_sampler"]["settings"]["epochs"] == 4


def test_study_continued_with_more_epochs_records_the_new_result_in_the_study(two_epoch_study):
    sampler = coordinate(4)
    study = optuna.load_study(storage=two_epoch_study, study_name="stairs", sampler=sampler)
    run(sampler, Objective(stairs, NAMES2), budget=88, study=study)
    recorded = study.user_attrs["boxcox_result"]
    assert recorded == {"params": {"a": 4.0, "b": 4.0}, "best_value": 8.0}, (
        f"the dashboard shows the 2-epoch result {recorded} for a study continued to 4 epochs"
    )


@pytest.mark.parametrize(
    "changed, shown",
    [
        (dict(seed=1), r"\(seed: 0 there, 1 here\)"),
        (dict(grid_size=5), r"\(grid_size: 11 there, 5 here\)"),
        (dict(shuffle_epoch=2), r"\(shuffle_epoch: 4 there, 2 here\)"),
    ],
)
def test_study_continued_with_other_settings_is_refused_naming_them(
    two_epoch_study, changed, shown
):
    sampler = coordinate(4, **changed)
    study = optuna.load_study(storage=two_epoch_study, study_name="stairs", sampler=sampler)
    objective = Objective(stairs, NAMES2)
    with pytest.raises(ValueError, match=shown):
        run(sampler, objective, budget=88, study=study)
    assert objective.points == []
    assert study.user_attrs["boxcox_sampler"]["settings"]["epochs"] == 2


def test_study_of_one_sampler_is_refused_by_another_naming_both(two_epoch_study):
    sampler = SphericalSampler(search_space=space(NAMES2))
    study = optuna.load_study(storage=two_epoch_study, study_name="stairs", sampler=sampler)
    with pytest.raises(ValueError, match=r"'coordinate'.*'spherical'"):
        run(sampler, Objective(stairs, NAMES2), budget=11, study=study)


# -- trials outside the plan -------------------------------------------------------------------------


def test_enqueued_trials_are_evaluated_but_take_no_plan_position():
    sampler = coordinate(2)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.enqueue_trial({"a": 5.0, "b": 5.0})  # scores 10, above anything the plan will see
    study.enqueue_trial({"a": -1.5, "b": 2.5})
    study.enqueue_trial({"a": 0.5})  # partial: b comes from the sampler
    run(sampler, Objective(stairs, NAMES2), budget=47, study=study)

    enqueued = [t for t in study.trials if "fixed_params" in t.system_attrs]
    assert [t.params for t in enqueued] == [
        {"a": 5.0, "b": 5.0},
        {"a": -1.5, "b": 2.5},
        {"a": 0.5, "b": 0.0},
    ], "an enqueued trial ran other λ than enqueued (open ones take the current Λopt, here G)"
    assert all(t.state == TrialState.COMPLETE and "epoch" not in t.user_attrs for t in enqueued)
    assert len(study.trials) == 47
    planned = plan_trials(study)
    assert len(planned) == 44 and all("epoch" in t.user_attrs for t in planned), (
        f"{len(planned)} plan trials ran beside 3 enqueued ones; the plan has E·p·L = 44"
    )

    alone = coordinate(2)
    alone_study = run(alone, Objective(stairs, NAMES2), budget=44)
    assert [t.params for t in planned] == [t.params for t in alone_study.trials]
    assert sampler.result(study).params == alone.result(alone_study).params == {"a": 2.0, "b": 2.0}
    assert study.best_params == {"a": 5.0, "b": 5.0}  # Optuna's best; the plan's Λ ignores it


def test_parameter_outside_the_lambda_space_is_sampled_independently_and_leaves_the_plan_alone():
    with_k = coordinate(2, grid_size=5)
    study = run(with_k, Objective(bumpy, NAMES2, extra=True), budget=20)
    without_k = coordinate(2, grid_size=5)
    reference = run(without_k, Objective(bumpy, NAMES2), budget=20)

    assert [params_of(t, NAMES2) for t in study.trials] == [
        params_of(t, NAMES2) for t in reference.trials
    ], "suggesting another parameter changed the λ the plan evaluated"
    ks = [t.params["k"] for t in study.trials]
    assert set(ks) <= set(range(1, 6)) and len(set(ks)) > 1, f"k was not sampled at random: {ks}"
    assert with_k.result(study).params == without_k.result(reference).params


# -- ask-and-tell and threads ------------------------------------------------------------------------


def test_ask_and_tell_follows_the_same_plan_and_asks_after_it_reevaluate_the_result():
    objective = Objective(bumpy, NAMES3)
    sampler = CoordinateGridSampler(grid_size=5, epochs=2, seed=4, search_space=space(NAMES3))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for _ in range(30):
        trial = study.ask()
        study.tell(trial, objective.score(objective.lambdas(trial)))
    reference_sampler = CoordinateGridSampler(
        grid_size=5, epochs=2, seed=4, search_space=space(NAMES3)
    )
    reference = run(reference_sampler, Objective(bumpy, NAMES3), budget=30)

    assert [t.params for t in study.trials] == [t.params for t in reference.trials]
    result = sampler.result(study)
    assert result.finished and result.params == reference_sampler.result(reference).params

    extra = study.ask()
    assert [extra.suggest_float(n, -10, 10) for n in NAMES3] == [result.params[n] for n in NAMES3]
    assert storage_of(study).get_trial(trial_id_of(extra)).user_attrs["phase"] == "done"


def test_two_threads_reach_the_single_thread_result_and_never_complete_a_position_twice():
    def sampler():
        return CoordinateGridSampler(grid_size=5, epochs=2, seed=1, search_space=space(NAMES3))

    serial_sampler = sampler()
    serial = run(serial_sampler, Objective(bumpy, NAMES3), budget=30)
    threaded_sampler = sampler()
    threaded = run(threaded_sampler, Objective(bumpy, NAMES3, delay=0.002), budget=30, n_jobs=2)

    complete = [t for t in plan_trials(threaded) if t.state == TrialState.COMPLETE]
    keys = [
        (t.user_attrs["epoch"], t.user_attrs["direction"], t.user_attrs["candidate"])
        for t in complete
    ]
    assert len(keys) == len(set(keys)) == 30, (
        f"two threads completed {len(keys)} plan trials for 30 positions, {len(set(keys))} distinct"
    )
    others = [t for t in threaded.trials if t not in plan_trials(threaded)]
    assert all(t.user_attrs.get("phase") == "done" for t in others)
    assert threaded_sampler.result(threaded).params == serial_sampler.result(serial).params
    assert threaded_sampler.result(threaded).best_value == serial_sampler.result(serial).best_value


# -- what the study records --------------------------------------------------------------------------


def test_every_coordinate_trial_records_its_place_in_the_plan_and_whether_it_improved():
    sampler = CoordinateGridSampler(
        grid_size=5, epochs=3, finer_epoch=2, search_space=space(NAMES3)
    )
    study = run(sampler, Objective(bumpy, NAMES3), budget=45)
    best = -np.inf
    for t in study.trials:
        missing = [k for k in PLAN_ATTRS if k not in t.user_attrs]
        assert not missing, f"trial {t.number} lacks user attrs {missing}"
        assert t.user_attrs["improved"] == (t.value > best), (
            f"trial {t.number} (value {t.value}, best so far {best}) says improved="
            f"{t.user_attrs['improved']}"
        )
        best = max(best, t.value)
    assert [t.user_attrs["candidate"] for t in study.trials] == list(range(5)) * 9
    epochs = {
        (t.user_attrs["epoch"], t.user_attrs["phase"], t.user_attrs["grid_step"])
        for t in study.trials
    }
    assert epochs == {(0, "global", 2.5), (1, "global", 2.5), (2, "local", 1.25)}


def test_a_batchs_improvements_read_together_are_each_candidates_own():
    from optuna_boxcox.samplers._driver import Batch
    from optuna_boxcox.samplers._driver import Plan

    def algorithm():
        yield Batch([np.zeros(1)] * 6, [{}] * 6, incumbent_score=0.5)
        yield Batch([np.zeros(1)] * 4, [{}] * 4, incumbent_score=0.7)
        return np.zeros(1), 0.7

    plan = Plan(algorithm())
    plan.advance({p: 0.1 * p for p in range(6)})
    rng = np.random.default_rng(0)
    for _ in range(50):
        # Any scores known so far (other workers'), and candidates in any order.
        known = {p: float(v) for p, v in enumerate(rng.random(10)) if rng.random() < 0.6}
        candidates = [(int(p), float(rng.random())) for p in rng.integers(0, 10, 5)]
        expected = []
        for position, score in candidates:  # the definition, one candidate at a time
            batch, index = plan.locate(position)
            earlier = [known[p] for p in range(position - index, position) if p in known]
            expected.append(bool(score > max([batch.incumbent_score, *earlier])))
        assert plan.improvements(candidates, known) == expected


@pytest.mark.parametrize(
    "sampler, name",
    [
        (
            lambda: CoordinateGridSampler(grid_size=5, epochs=1, search_space=space(NAMES2)),
            "coordinate",
        ),
        (lambda: SphericalSampler(grid_size=5, search_space=space(NAMES2)), "spherical"),
        (lambda: DiagonalSampler(grid_size=5, search_space=space(NAMES2)), "diagonal"),
        (lambda: FullGridSampler(grid_size=5, search_space=space(NAMES2)), "grid"),
        (lambda: MLESampler(search_space=space(NAMES2)), "mle"),
    ],
    ids=["coordinate", "spherical", "diagonal", "grid", "mle"],
)
def test_study_records_the_sampler_and_its_settings(sampler, name):
    sampler = sampler()
    study = run(sampler, Objective(bumpy, NAMES2), budget=sampler.budget(2))
    assert study.user_attrs["boxcox_sampler"] == {"name": name, "settings": sampler.settings()}


def test_coordinate_settings_record_every_knob_of_algorithm_6():
    sampler = CoordinateGridSampler(grid_size=5, epochs=1, seed=3, search_space=space(NAMES2))
    study = run(sampler, Objective(bumpy, NAMES2), budget=10)
    assert study.user_attrs["boxcox_sampler"]["settings"] == {
        "grid_size": 5,
        "epochs": 1,
        "shift_epoch": 4,
        "shuffle_epoch": 4,
        "finer_epoch": 4,
        "grid_range": [-5.0, 5.0],
        "seed": 3,
        "authors_shift_quirk": False,
    }


def test_coordinate_history_holds_lambda_opt_after_every_sweep_ending_with_the_result():
    sampler = CoordinateGridSampler(
        grid_size=5, epochs=3, shuffle_epoch=1, seed=2, search_space=space(NAMES3)
    )
    study = run(sampler, Objective(bumpy, NAMES3), budget=45)
    result = sampler.result(study)
    assert len(result.history) == 3 * 3, (
        f"history has {len(result.history)} entries for E·p = 9 sweeps"
    )
    # Λopt after sweep k: the first trial reaching the best score among the first (k + 1)·L trials.
    for k, entry in enumerate(result.history):
        trials = study.trials[: (k + 1) * 5]
        best = max(t.value for t in trials)
        first = next(t for t in trials if t.value == best)
        assert entry == first.params, (
            f"history[{k}] = {entry}, Λopt after that sweep is {first.params}"
        )
    assert result.history[-1] == result.params


# -- the real objective ------------------------------------------------------------------------------


def test_mle_sampler_on_breast_cancer_evaluates_the_objectives_mle_point_once(breast_cancer):
    from sklearn.naive_bayes import GaussianNB

    X = breast_cancer.data.iloc[:, :5]
    objective = BoxCoxObjective(X, breast_cancer.target, GaussianNB())
    sampler = MLESampler()
    study = run(sampler, objective, budget=1)
    assert len(study.trials) == 1
    assert study.trials[0].params == objective.mle_params
    assert sampler.result(study).params == objective.mle_params
    # The MLE of each [1, 2]-scaled column, computed independently.
    Z = 1 + (X - X.min()) / (X.max() - X.min())
    expected = [scipy.stats.boxcox_normmax(Z[c].to_numpy(), method="mle") for c in X.columns]
    np.testing.assert_allclose(list(objective.mle_params.values()), expected, rtol=1e-6, atol=1e-6)


def test_study_cannot_be_continued_with_fewer_epochs_than_it_ran(two_epoch_study):
    study = optuna.load_study(storage=two_epoch_study, study_name="stairs", sampler=coordinate(1))
    with pytest.raises(ValueError, match="epochs"):
        study.optimize(Objective(stairs, NAMES2), n_trials=1, catch=())
