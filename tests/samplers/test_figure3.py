"""The situations of the paper's Figure 3, each searched by the plain iterative grid search and by the
refinement the paper introduces for it (Algorithm 6 with 6.1 Shift, 6.2 Shuffle, 6.3 Finer).

Every case is a small score over λ with an explicit ``search_space`` (FloatDistribution(-10, 10)) and
start ``initial_params``. The grid is the paper's ``linspace(-5, 5, 11)`` = {-5, …, 5}; λ1 is swept
first ("vertically"), then λ2. Each test asserts both halves: the plain variant does not reach the
better optimum and the refinement does, so a refinement that stopped working, or a plain search that
no longer gets stuck (a changed table), fails the test.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
import pytest

from optuna_boxcox.samplers import PRESETS
from optuna_boxcox.samplers import CoordinateGridSampler

Score = Callable[[np.ndarray], float]


def lattice_score(table: dict[tuple[int, ...], float], background: float = 0.0) -> Score:
    """A score table on integer λ points; everything else (and every unlisted point) is background."""

    def score(x: np.ndarray) -> float:
        rounded = np.round(x)
        if not np.allclose(x, rounded, rtol=0, atol=1e-9):
            return background
        return table.get(tuple(int(v) for v in rounded), background)

    return score


def search(score: Score, start: list[float], **settings) -> tuple[np.ndarray, float, optuna.Study]:
    """Run CoordinateGridSampler on ``score`` to the end of its plan; (Λopt, its score, study)."""
    names = [f"lambda{j + 1}" for j in range(len(start))]
    space = {n: FloatDistribution(-10.0, 10.0) for n in names}
    sampler = CoordinateGridSampler(
        search_space=space, initial_params=dict(zip(names, start)), **settings
    )
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(lambda t: score(np.array([t.suggest_float(n, -10.0, 10.0) for n in names])))
    result = sampler.result(study)
    assert result.finished, "the plan did not run to its end"
    return np.array([result.params[n] for n in names]), result.best_value, study


#: Plain Algorithm 6: no Shift, Shuffle or Finer within the run (their periods exceed the epochs).
PLAIN = dict(grid_size=11, shift_epoch=100, shuffle_epoch=100, finer_epoch=100)


# -- Figure 3A: a second epoch continues where the first one stopped -------------------------------

#: From G = [1, 1]: λ1 sweep → [2, 1] (1), λ2 sweep → [2, 2] (2); only a second λ1 sweep, made at
#: λ2 = 2, sees the global optimum 3 at [3, 2].
FIGURE_3A = lattice_score({(1, 1): 0.5, (2, 1): 1.0, (2, 2): 2.0, (3, 2): 3.0})


def test_figure_3a_one_epoch_stops_at_the_local_optimum_and_more_epochs_reach_the_global_one():
    one_point, one_value, _ = search(FIGURE_3A, [1, 1], epochs=1, **PLAIN)
    four_point, four_value, _ = search(FIGURE_3A, [1, 1], epochs=4, **PLAIN)
    assert (one_point.tolist(), one_value) == ([2.0, 2.0], 2.0), (
        f"one epoch should end at the local optimum [2, 2] (score 2), ended at {one_point} ({one_value})"
    )
    assert (four_point.tolist(), four_value) == ([3.0, 2.0], 3.0), (
        f"four epochs should reach the global optimum [3, 2] (score 3), ended at {four_point} "
        f"({four_value})"
    )


# -- Figure 3B: a trap the iterative search cannot leave ---------------------------------------------


def figure_3b(x: np.ndarray) -> float:
    """The trap of Figure 3B as a function of real λ (Shift draws real starting points).

    From G = [1, 1] the λ1 sweep (λ2 = 1) finds [2, 1] with score 2 and the λ2 sweep through it finds
    nothing better, so [2, 1] is optimal along both of its grid lines. The better basin (scores in
    (2, 3], peak 3 at [1, 2]) covers λ1 ≤ 1.5 except the band |λ2 - 1| ≤ 0.25 that the trapped
    search's own lines run through.
    """
    l1, l2 = x
    if l1 <= 1.5 and abs(l2 - 1.0) > 0.25:
        return 3.0 - 0.01 * ((l1 - 1.0) ** 2 + (l2 - 2.0) ** 2)
    return 2.0 - 0.01 * ((l1 - 2.0) ** 2 + (l2 - 1.0) ** 2)


def test_figure_3b_plain_iterative_search_stays_in_the_trap():
    point, value, _ = search(figure_3b, [1, 1], epochs=8, **PLAIN)
    assert (point.tolist(), value) == ([2.0, 1.0], 2.0), (
        f"plain iterative search should stay trapped at [2, 1] (score 2), ended at {point} ({value})"
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_figure_3b_shift_restarts_from_a_random_point_and_reaches_the_better_optimum(seed):
    settings = {**PRESETS["shift"], "seed": seed}  # E = 8, Shift at epoch 4, no Shuffle or Finer
    point, value, study = search(figure_3b, [1, 1], **settings)
    assert (point.tolist(), value) == ([1.0, 2.0], 3.0), (
        f"Shift (seed {seed}) should reach the better optimum [1, 2] (score 3), ended at {point} "
        f"({value})"
    )
    first_better = next(t for t in study.trials if t.value > 2.0)
    assert first_better.user_attrs["phase"] == "shift", (
        "the better basin was found outside the shift epoch, so the test does not show Shift at work"
    )


def test_figure_3b_shuffle_alone_cannot_leave_a_two_dimensional_trap():
    """In 2-D the trapped point was reached by sweeps along both of its grid lines in epoch 0, and
    Shuffle (6.2) only reorders later sweeps, which start from Λopt: every order re-sweeps the same
    two lines. The paper's text says reordering solves Figure 3B; that holds only for the order of
    the first epoch, which Algorithm 6.2 never shuffles. Figure 3B' below shows Shuffle escaping."""
    for seed in range(4):
        settings = {**PRESETS["shuffle"], "seed": seed}  # E = 8, Shuffle every 2 epochs
        point, value, _ = search(figure_3b, [1, 1], **settings)
        assert (point.tolist(), value) == ([2.0, 1.0], 2.0), (
            f"Shuffle (seed {seed}) left the 2-D trap and ended at {point} ({value}): "
            "the first epoch's direction order was changed?"
        )


#: Figure 3B' (3-D, start [1, 1, 1]): epochs 0 and 1 climb a staircase to [3, 3, 3] (score 6), last
#: moving λ3, so the λ1 and λ2 lines through it are unexplored. Sweeping λ1 first (the plain order)
#: finds the trap [4, 3, 3] (7), which is optimal along its three lines; sweeping λ2 first finds the
#: better optimum [3, 4, 3] (8).
FIGURE_3B_3D = lattice_score(
    {
        (2, 1, 1): 1.0,
        (2, 2, 1): 2.0,
        (2, 2, 2): 3.0,  # epoch 0
        (3, 2, 2): 4.0,
        (3, 3, 2): 5.0,
        (3, 3, 3): 6.0,  # epoch 1
        (4, 3, 3): 7.0,  # epoch 2, λ1 first: the trap
        (3, 4, 3): 8.0,  # epoch 2, λ2 before λ1: the better optimum
    }
)


def test_figure_3b_in_three_dimensions_plain_iterative_search_stays_in_the_trap():
    point, value, _ = search(FIGURE_3B_3D, [1, 1, 1], epochs=8, **PLAIN)
    assert (point.tolist(), value) == ([4.0, 3.0, 3.0], 7.0), (
        f"plain iterative search should stay trapped at [4, 3, 3] (score 7), ended at {point} "
        f"({value})"
    )


def test_figure_3b_in_three_dimensions_shuffle_changes_the_order_and_reaches_the_better_optimum():
    seed = 3
    # SPEC §4's random stream: no Shift within 8 epochs, the first Shuffle at epoch 2.
    order = [0, 1, 2]
    np.random.default_rng(seed).shuffle(order)
    assert order.index(1) < order.index(0), f"seed {seed} no longer sweeps λ2 before λ1 ({order})"

    settings = {**PRESETS["shuffle"], "seed": seed}  # E = 8, Shuffle every 2 epochs
    point, value, study = search(FIGURE_3B_3D, [1, 1, 1], **settings)
    assert (point.tolist(), value) == ([3.0, 4.0, 3.0], 8.0), (
        f"Shuffle (seed {seed}) should reach the better optimum [3, 4, 3] (score 8), ended at "
        f"{point} ({value})"
    )
    found = next(t for t in study.trials if t.value == 8.0)
    assert (found.user_attrs["epoch"], found.user_attrs["direction"]) == (2, "lambda2")


# -- Figure 3C: an optimum between the grid points ---------------------------------------------------


def figure_3c(x: np.ndarray) -> float:
    """A single peak at [1.5, 2.5], between the points of the integer grid (best grid score -0.5)."""
    return -float((x[0] - 1.5) ** 2 + (x[1] - 2.5) ** 2)


def test_figure_3c_plain_grid_cannot_reach_an_off_grid_optimum():
    point, value, study = search(figure_3c, [1, 1], epochs=4, **PLAIN)
    assert value == -0.5 and point.tolist() == [1.0, 2.0], (
        f"the integer grid should end at the first nearest grid point [1, 2] (score -0.5), ended at "
        f"{point} ({value})"
    )
    off_grid = [t.params for t in study.trials if any(v != round(v) for v in t.params.values())]
    assert off_grid == [], f"the plain grid evaluated points off the integer grid: {off_grid[:3]}"


@pytest.mark.parametrize(
    "settings",
    [
        dict(epochs=4, grid_size=11, shift_epoch=100, shuffle_epoch=100, finer_epoch=1),
        PRESETS["finer"],  # E = 8, the halved grid from epoch 4 on
    ],
    ids=["finer-every-epoch", "finer-preset"],
)
def test_figure_3c_finer_attaches_a_halved_grid_to_the_best_point_and_finds_the_off_grid_optimum(
    settings,
):
    point, value, study = search(figure_3c, [1, 1], **settings)
    assert (point.tolist(), value) == ([1.5, 2.5], 0.0), (
        f"Finer should find the off-grid optimum [1.5, 2.5] (score 0), ended at {point} ({value})"
    )
    found = next(t for t in study.trials if t.value == 0.0)
    assert (found.user_attrs["phase"], found.user_attrs["grid_step"]) == ("local", 0.5), (
        "the optimum was not found by the first halved grid attached to Λopt"
    )


def test_finer_halves_the_grid_step_every_finer_epoch():
    _, _, study = search(
        figure_3c,
        [1, 1],
        epochs=4,
        grid_size=11,
        shift_epoch=100,
        shuffle_epoch=100,
        finer_epoch=1,
    )
    steps = sorted({(t.user_attrs["epoch"], t.user_attrs["grid_step"]) for t in study.trials})
    assert steps == [(0, 1.0), (1, 0.5), (2, 0.25), (3, 0.125)], f"grid steps per epoch: {steps}"
