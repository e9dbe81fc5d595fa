"""Experiment studies: each unit of a reproduction run is a finished trial in the study storage.

An outer fold of one (row, classifier) of Tables 5–8, or one Λ cell of a grid exploration (Tables
2–3), is written as a finished trial the moment it is computed, with its position (fold or cell index)
as a system attribute. A run that is interrupted and started again reads which positions are
finished and computes only the others; the dashboard shows the progress as trials accumulate.
"""

from __future__ import annotations

from dataclasses import dataclass
import datetime
from typing import TYPE_CHECKING
from typing import Any

import optuna
from optuna.trial import TrialState

from optuna_boxcox._lifecycle._open import Recorded
from optuna_boxcox._lifecycle._open import open_study as open_experiment_study
from optuna_boxcox._optuna._write import TrialRecord
from optuna_boxcox._optuna._write import write_trials

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.distributions import BaseDistribution
    from optuna.storages import BaseStorage
    from optuna.trial import FrozenTrial

    from optuna_boxcox.experiments._protocol import Protocol

#: Trial system attribute holding the trial's position (outer fold or grid cell index).
POSITION_KEY = "reproduce:position"
#: Study user attribute recording what the study measures; a study is only continued with the same.
SETTINGS_ATTR = "reproduce"
#: Study user attributes shown in the dashboard once the study is complete.
RESULT_ATTR = "reproduce_result"


@dataclass(frozen=True)
class TableRun:
    """How the units of one of the paper's tables are run, built once by
    :func:`~optuna_boxcox.experiments.reproduce.reproduce` and checked there: the grid
    explorations of Tables 2–3 and the search strategies of Tables 5–8 alike.

    Attributes:
        classifiers: The paper's classifiers by name, one study each per row or data set.
        protocol: The outer cross-validation.
        storage: The opened storage every unit is recorded in.
        n_jobs: Worker processes computing units concurrently.
        max_tasks: Stop after this many new units (None: all of them).
        on_progress: Called with (done, total, left=units left by group) once, then with
            (1, 0, group=its group, seconds=its own seconds) per unit recorded; the units are
            run in :func:`~optuna_boxcox._system._progress.interleaved` order, a group being
            one study's units.
    """

    classifiers: tuple[str, ...]
    protocol: Protocol
    storage: BaseStorage
    n_jobs: int
    max_tasks: int | None
    on_progress: Callable[..., None] | None


def open_study(storage: BaseStorage, name: str, settings: Mapping[str, Any]) -> optuna.Study:
    """Create or load the experiment study ``name``; refuse one recorded with other settings."""
    return open_experiment_study(storage, name, settings=Recorded(SETTINGS_ATTR, settings))


def finished(study: optuna.Study) -> dict[int, FrozenTrial]:
    """Finished trials by position (the first one when a position was written twice)."""
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    done: dict[int, FrozenTrial] = {}
    for t in trials:
        position = t.system_attrs.get(POSITION_KEY)
        if position is not None and position not in done:
            done[int(position)] = t
    return done


def record(
    study: optuna.Study,
    entries: Sequence[tuple[int, Mapping[str, Any], float, Mapping[str, Any], float]],
    distributions: Mapping[str, BaseDistribution],
) -> None:
    """Append finished trials in one write: (position, params, value, user attrs, seconds) each.

    A position another process has written meanwhile is not written again.
    """
    now = datetime.datetime.now()
    records = [
        TrialRecord(
            params=dict(params),
            distributions=dict(distributions),
            value=float(value),
            user_attrs=dict(attrs),
            system_attrs={POSITION_KEY: int(position)},
            datetime_start=now - datetime.timedelta(seconds=float(seconds)),
            datetime_complete=now,
        )
        for position, params, value, attrs, seconds in entries
    ]
    write_trials(study, records, position_key=POSITION_KEY)
