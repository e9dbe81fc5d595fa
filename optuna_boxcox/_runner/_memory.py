"""Optuna's samplers on an in-memory copy of a study, written back a chunk of trials at a time.

Optuna's samplers read every trial of the study at each step, which a database storage answers far
slower than memory: a study that runs many short searches (``compare``, ``benchmark``) searches a
copy seeded with the stored trials and appends each chunk's finished trials to the storage in one
write. A Ctrl-C loses at most the chunk being searched.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.trial import TrialState

from optuna_boxcox._optuna._write import TrialRecord
from optuna_boxcox._optuna._write import write_trials
from optuna_boxcox._runner._optimize import optimize
from optuna_boxcox.samplers import SearchResult

#: Trials an Optuna sampler runs in memory between two writes to the storage.
CHUNK = 200


def optimize_in_memory(
    study: optuna.Study, objective: Any, n_trials: int, *, chunk: int = CHUNK
) -> SearchResult:
    """Run ``n_trials`` trials of ``study.sampler`` on an in-memory copy of ``study`` (its user
    attributes and COMPLETE trials), writing the copy's COMPLETE trials back every ``chunk``.

    Returns:
        The study's first best trial (in trial order) once every chunk is written.
    """
    objective.register(study)
    memory = optuna.create_study(directions=study.directions, sampler=study.sampler)
    for key, value in study.user_attrs.items():
        memory.set_user_attr(key, value)
    memory.add_trials(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    remaining = n_trials
    while remaining > 0:
        step = min(chunk, remaining)
        before = len(memory.trials)
        optimize(memory, objective, n_trials=step)
        write_trials(
            study,
            [_record(t) for t in memory.trials[before:] if t.state == TrialState.COMPLETE],
        )
        remaining -= step
    return first_best(study)


def first_best(study: optuna.Study) -> SearchResult:
    """The first COMPLETE trial (in trial order) with the best value of a one-objective study."""
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not trials or len(study.directions) != 1:
        return SearchResult(None, None, n_trials=len(trials))
    pick = min if study.direction == optuna.study.StudyDirection.MINIMIZE else max
    best = pick(trials, key=lambda t: t.value)
    return SearchResult(dict(best.params), best.value, n_trials=len(trials))


def _record(trial: optuna.trial.FrozenTrial) -> TrialRecord:
    return TrialRecord(
        params=trial.params,
        distributions=trial.distributions,
        value=trial.value,
        user_attrs=trial.user_attrs,
        system_attrs={},
        datetime_start=trial.datetime_start,
        datetime_complete=trial.datetime_complete,
    )
