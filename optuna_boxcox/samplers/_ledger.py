"""What a study holds of a plan: the positions finished and their scores, the positions claimed
(system attribute ``boxcox:position``), and whether another trial holds a position."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from optuna.trial import TrialState

from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._optuna._capabilities import capabilities_of
from optuna_boxcox._optuna._write import has_rival
from optuna_boxcox._system._process import REAPED_KEY

if TYPE_CHECKING:
    from collections.abc import Sequence

    from optuna.study import Study
    from optuna.trial import FrozenTrial


#: Trial system attribute (state the dashboard need not show) holding a trial's plan position; the
#: owner and reaped keys are in :mod:`optuna_boxcox._system._process`.
POSITION_KEY = "boxcox:position"


UNCLAIMED = -1


class Ledger:
    """What the study's trials say about the plan's positions, read incrementally.

    Finished trials never change, so each is accounted once; only trials past the first unfinished
    one are looked at again.
    """

    def __init__(self) -> None:
        self.scores: dict[int, float] = {}  # finished positions (or given up after failures)
        self.failures: dict[int, int] = {}
        self._accounted: set[int] = set()
        self.frontier = 0  # every trial number below it is accounted
        #: Trial id of the trial numbered ``frontier`` (ids grow with numbers within a study).
        self.frontier_trial_id = 0

    def update(
        self,
        trials: Sequence[FrozenTrial],
        score: Callable[[FrozenTrial], float],
        max_retries: int,
    ) -> list[FrozenTrial]:
        """Account newly finished trials; return the unfinished ones."""
        running = []
        for t in trials[self.frontier :]:
            if t.number in self._accounted:
                continue
            position = t.system_attrs.get(POSITION_KEY)
            if t.state == TrialState.RUNNING or t.state == TrialState.WAITING:
                running.append(t)
                continue
            self._accounted.add(t.number)
            if position is None or position == UNCLAIMED or position in self.scores:
                continue
            if t.state == TrialState.FAIL:
                if not t.system_attrs.get(REAPED_KEY):
                    self.failures[position] = self.failures.get(position, 0) + 1
                    if self.failures[position] > max_retries:
                        self.scores[position] = -np.inf
            else:
                self.scores[position] = score(t)
        while self.frontier in self._accounted:
            self._accounted.discard(self.frontier)
            self.frontier += 1
        if self.frontier < len(trials):
            self.frontier_trial_id = trial_id_of(trials[self.frontier])
        elif trials:
            self.frontier_trial_id = trial_id_of(trials[-1]) + 1
        return running


def rival_holds(study: Study, trial: FrozenTrial, position: int, ledger: Ledger) -> bool:
    """Whether another trial that did not fail holds ``position`` (read from the storage now).

    Only trials the ledger has not accounted as finished can be rivals: one accounted as
    finished with this position would have put it in ``ledger.scores``, and the position was
    chosen outside them (the ledger was updated under the same lock). So the check looks at the
    unfinished end of the study, not at all of its trials (which made claiming O(n) per trial).
    """
    storage = storage_of(study)
    if capabilities_of(storage).sql_claims:
        return has_rival(
            storage,
            study_id_of(study),
            trial_id_of(trial),
            POSITION_KEY,
            position,
            ledger.frontier_trial_id,
        )
    trials = storage.get_all_trials(study_id_of(study), deepcopy=False)
    return any(
        trial_id_of(t) != trial_id_of(trial)
        and t.system_attrs.get(POSITION_KEY) == position
        and t.state != TrialState.FAIL
        for t in trials[ledger.frontier :]
    )
