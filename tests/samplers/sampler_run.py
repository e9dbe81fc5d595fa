"""The samplers' tests' one way to run a sampler to its own end."""

from __future__ import annotations

import optuna


def run(
    sampler,
    objective,
    *,
    budget: int,
    direction: str = "maximize",
    study: optuna.Study | None = None,
    n_jobs: int = 1,
) -> optuna.Study:
    """``study.optimize(objective)`` with no ``n_trials``: the sampler must stop the study itself.

    A guard stops a runaway study a few trials past the budget so that a failure shows as a wrong
    trial count instead of a hung test run.
    """
    if study is None:
        study = optuna.create_study(direction=direction, sampler=sampler)

    def guard(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if len(study.get_trials(deepcopy=False)) > budget + 10:
            study.stop()

    study.optimize(objective, n_jobs=n_jobs, callbacks=[guard])
    return study
