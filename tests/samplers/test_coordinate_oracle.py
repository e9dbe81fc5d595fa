"""CoordinateGridSampler against SPEC §4's pseudo-code written as a plain loop (the oracle)."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox.samplers import PRESETS
from optuna_boxcox.samplers import CoordinateGridSampler


def spec_algorithm_6(score, G, low, high, L, E, s, h, f, seed, grid_lo=-5.0, grid_hi=5.0):
    """SPEC §4 verbatim; returns (Λopt, best, every evaluated point in order)."""
    p = len(G)
    if f > s:
        f = s
    g = np.linspace(grid_lo, grid_hi, L)
    grid = g
    local = False
    opt = np.array(G, dtype=float)
    W = np.array(G, dtype=float)
    best = -np.inf
    order = list(range(p))
    since = 0
    rng = np.random.default_rng(seed)
    evaluated = []
    for e in range(E):
        if e > 0:
            since += 1
            if e % s == 0:
                since = 0
                grid = g
                local = False
                W = rng.random(p) * (grid_hi - grid_lo) + grid_lo
            elif since % f == 0:
                grid = 0.5 * grid
                local = True
            if e % h == 0:
                rng.shuffle(order)
        for d in order:
            for c in grid + opt[d] if local else grid:
                x = W.copy()
                x[d] = np.clip(c, low[d], high[d])
                evaluated.append(x)
                value = score(x)
                if value > best:
                    best = value
                    opt = x.copy()
            W[d] = opt[d]
    return opt, best, evaluated


def table_score(x: np.ndarray) -> float:
    """A deterministic, bumpy score with many ties (rounded), maximised off the grid."""
    target = np.linspace(-3.3, 2.7, len(x))
    bumps = np.sum(np.cos(2.0 * x)) * 0.3
    return float(np.round(-np.sum((x - target) ** 2) * 0.05 + bumps, 1))


def run_sampler(objective, sampler, direction="maximize"):
    study = optuna.create_study(direction=direction, sampler=sampler)
    study.optimize(objective)
    return study


@pytest.mark.parametrize("preset", list(PRESETS))
def test_coordinate_sampler_evaluates_the_spec_points_in_order_on_a_score_table(preset):
    p = 4
    names = [f"f{j}" for j in range(p)]
    space = {n: optuna.distributions.FloatDistribution(-8.0, 8.0) for n in names}
    G = np.array([0.3, -1.2, 2.0, 7.5])
    settings = PRESETS[preset]
    sampler = CoordinateGridSampler.from_preset(
        preset, seed=3, search_space=space, initial_params=dict(zip(names, G))
    )
    study = run_sampler(
        lambda t: table_score(np.array([t.suggest_float(n, -8, 8) for n in names])), sampler
    )

    low, high = np.full(p, -8.0), np.full(p, 8.0)
    opt, best, evaluated = spec_algorithm_6(
        table_score,
        G,
        low,
        high,
        settings["grid_size"],
        settings["epochs"],
        settings["shift_epoch"],
        settings["shuffle_epoch"],
        settings["finer_epoch"],
        seed=3,
    )
    points = [np.array([t.params[n] for n in names]) for t in study.trials]
    assert len(points) == len(evaluated) == settings["epochs"] * p * settings["grid_size"]
    np.testing.assert_array_equal(np.array(points), np.array(evaluated))
    result = sampler.result(study)
    np.testing.assert_array_equal([result.params[n] for n in names], opt)
    assert result.best_value == best
    assert result.finished


@pytest.fixture(scope="module")
def sonar12(sonar):
    return sonar.data.iloc[:, :12], sonar.target


@pytest.mark.long
@pytest.mark.parametrize("preset", list(PRESETS))
def test_coordinate_sampler_matches_the_spec_loop_on_gaussian_nb_sonar(preset, sonar12):
    X, y = sonar12
    objective = BoxCoxObjective(X, y, GaussianNB())
    settings = PRESETS[preset]
    sampler = CoordinateGridSampler.from_preset(preset, seed=42)
    study = run_sampler(objective, sampler)

    opt, best, evaluated = spec_algorithm_6(
        objective.evaluate,
        objective.space.initial,
        objective.space.low,
        objective.space.high,
        settings["grid_size"],
        settings["epochs"],
        settings["shift_epoch"],
        settings["shuffle_epoch"],
        settings["finer_epoch"],
        seed=42,
    )
    points = np.array([objective.to_lambdas(t.params) for t in study.trials])
    np.testing.assert_array_equal(points, np.array(evaluated))
    result = sampler.result(study)
    np.testing.assert_array_equal(objective.to_lambdas(result.params), opt)
    assert result.best_value == best == study.best_value


def test_minimising_study_is_searched_for_its_smallest_value():
    names = ["a", "b"]
    space = {n: optuna.distributions.FloatDistribution(-8.0, 8.0) for n in names}
    sampler = CoordinateGridSampler(epochs=2, search_space=space)
    study = run_sampler(
        lambda t: -table_score(np.array([t.suggest_float(n, -8, 8) for n in names])),
        sampler,
        direction="minimize",
    )
    opt, best, _ = spec_algorithm_6(table_score, [1.0, 1.0], [-8] * 2, [8] * 2, 11, 2, 4, 4, 4, 0)
    assert sampler.result(study).best_value == -best
    np.testing.assert_array_equal([sampler.result(study).params[n] for n in names], opt)
