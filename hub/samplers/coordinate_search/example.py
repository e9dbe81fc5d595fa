"""Coordinate-wise grid search on a plain three-parameter function (loaded from OptunaHub)."""

import optuna
import optunahub


def objective(trial: optuna.Trial) -> float:
    x = trial.suggest_float("x", -5.0, 5.0)
    y = trial.suggest_float("y", -5.0, 5.0)
    z = trial.suggest_float("z", -5.0, 5.0)
    return (x - 1.3) ** 2 + (y + 0.7) ** 2 + (z - 2.2) ** 2 + 0.5 * (x - 1.3) * (y + 0.7)


if __name__ == "__main__":
    module = optunahub.load_module("samplers/coordinate_search")
    search_space = {name: optuna.distributions.FloatDistribution(-5.0, 5.0) for name in "xyz"}
    # Shuffle and Finer: a new sweep order every 2 epochs, the grid halved every 2 epochs.
    sampler = module.CoordinateSearchSampler(
        search_space, epochs=12, shuffle_epoch=2, finer_epoch=2, shift_epoch=12, seed=0
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(objective)  # stops by itself after 12 · 3 · 11 = 396 trials
    print(len(study.trials), study.best_params, study.best_value)
