"""The trials of a batched run: scored rows, the forms each writer takes, and what was stored."""

from __future__ import annotations

import collections
from dataclasses import dataclass
import datetime
import threading
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal
from typing import NamedTuple

import numpy as np
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna._encode import FloatTrialEncoder
from optuna_boxcox._optuna._encode import PreparedTrials
from optuna_boxcox._optuna._encode import encode_trials
from optuna_boxcox._optuna._sql import told_value
from optuna_boxcox._optuna._write import TrialRecord
from optuna_boxcox._optuna._write import TrialRows
from optuna_boxcox._optuna._write import Written
from optuna_boxcox._system._process import OWNER_KEY

if TYPE_CHECKING:
    import optuna

    from optuna_boxcox._study._space import LambdaSpace
    from optuna_boxcox.samplers import PlanRun


@dataclass
class RunStats:
    """What a batched run did (for benchmarks and progress reports)."""

    trials: int = 0
    batches: int = 0
    evaluate_seconds: float = 0.0
    persist_seconds: float = 0.0
    #: Seconds from the start of the run to the end of the last batch that fitted a new Λ; what
    #: comes after is the sweeps of Λ scored before, which cost their bookkeeping and writes only.
    scoring_seconds: float = 0.0
    #: Seconds from the start of the run until the last trial was written.
    written_seconds: float = 0.0
    #: Points scored ahead of the plan while waiting for other workers (see ``_ahead``).
    ahead: int = 0


class Row(NamedTuple):
    """One scored trial of this run, waiting to be written: a tuple, as small as a plain one,
    since a run makes thousands a second."""

    #: Λ, in the space's order.
    point: np.ndarray
    #: COMPLETE's value, or PRUNED's (rows as the fidelity): then its last intermediate value.
    value: float
    user_attrs: dict[str, Any]
    #: Its position in the plan (a system attr of the trial).
    position: int
    start: datetime.datetime
    end: datetime.datetime
    state: TrialState
    #: Rows → value; None for none (the exact search's trials).
    intermediate: dict[int, float] | None


#: How a batch's scored trial is stored (see ``Cooperation.score``): as a :class:`Row` by this
#: run's writer, completed here as a claim, or by another worker.
Stored = Literal["write", "claimed", "others"]


#: Bytes a written trial kept as a FrozenTrial holds per λ (its params dict and float objects,
#: rounded up from a wide trial's size) and besides them.
STORED_BYTES_PER_PARAM = 100
STORED_BYTES_PER_TRIAL = 4096


def moment(seconds: float) -> datetime.datetime:
    """A ``time.time()`` as a FrozenTrial datetime (naive local time)."""
    return datetime.datetime.fromtimestamp(seconds)


class RunTrials:
    """The trials of a batched run, in the forms each consumer takes: table rows for the bulk
    writer of RDB storages (:meth:`prepared`), :class:`TrialRecord` for other storages, and, once
    written, FrozenTrials for the storage's cache and the callbacks.

    A writer drops a row whose plan position another worker's trial holds; such rows are kept in
    :attr:`dropped` until that worker is seen to complete the position (see the batched run's
    settling), since it may die before it does.

    The written trials are kept for the storage's cache only within ``keep_bytes`` (a trial of
    10,000 λ holds about a megabyte): beyond, those already called back (all of them without
    callbacks) are let go and the storage reads the study back when asked.
    """

    def __init__(
        self,
        study: optuna.Study,
        run: PlanRun,
        *,
        keep_bytes: int | None = None,
        callbacks: bool = False,
    ) -> None:
        self.study = study
        self.space: LambdaSpace = run.space
        self.distributions = run.space.distributions()
        self.owner = run.owner
        self.position_key = run.position_key
        # λ only: the encoder's hot path; a space with transform or setting coordinates takes the
        # general encoding, which writes each parameter in its distribution's representation.
        self._encode = (
            FloatTrialEncoder(self.distributions, run.position_key)
            if run.space.lambdas_only
            else None
        )
        self._trial_rows: TrialRows | None = None  # made at the first write: it reads the database
        self.stored: list[FrozenTrial] = []  # written, with their ids and numbers
        #: Rows a writer dropped because another worker's running trial held their position.
        self.dropped: list[Row] = []
        self._handed: collections.deque[list[Row]] = collections.deque()
        self._called_back = 0
        self._callbacks = callbacks
        per_trial = STORED_BYTES_PER_PARAM * len(self.space.names) + STORED_BYTES_PER_TRIAL
        self._keep = None if keep_bytes is None else max(1, keep_bytes // per_trial)
        #: Whether :attr:`stored` still holds every trial written (what :meth:`cache` hands over).
        self.whole = True
        self._lock = threading.Lock()

    def prepared(self, rows: list[Row]) -> PreparedTrials:
        """The rows of each table for ``write_prepared``, numbered on from the last call's."""
        if self._trial_rows is None:
            self._trial_rows = TrialRows(self.study)
        encode, owner, key = self._encode, self.owner, self.position_key
        if encode is None:
            return self._trial_rows(encode_trials(self.records(rows), key))
        return self._trial_rows(
            [
                encode(
                    row.point.tolist(),
                    row.value,
                    row.user_attrs,
                    {OWNER_KEY: owner, key: row.position},
                    row.start,
                    row.end,
                    row.state,
                    row.intermediate,
                )
                for row in rows
            ]
        )

    def records(self, rows: list[Row]) -> list[TrialRecord]:
        return [
            TrialRecord(
                params=self.space.to_params(row.point),
                distributions=self.distributions,
                value=row.value,
                user_attrs=row.user_attrs,
                system_attrs={OWNER_KEY: self.owner, self.position_key: row.position},
                datetime_start=row.start,
                datetime_complete=row.end,
                state=row.state,
                intermediate_values=row.intermediate,
            )
            for row in rows
        ]

    def handed(self, rows: list[Row]) -> None:
        """``rows`` went to a writer that reports :class:`Written` for each list, in order."""
        with self._lock:
            self._handed.append(rows)

    def written(self, written: Written) -> None:
        """The writer wrote the oldest list handed over: keep its trials as stored."""
        with self._lock:
            rows = self._handed.popleft()
            for index, trial_id, number in zip(
                written.indices, written.trial_ids, written.numbers
            ):
                self.stored.append(self.frozen(rows[index], trial_id, number))
            if written.unsettled is not None:
                # Only those a running trial held wait to be settled: a finished one holds its
                # position for good.
                self.dropped.extend(rows[i] for i in written.unsettled)
            elif len(written.indices) != len(rows):
                kept = set(written.indices)
                self.dropped.extend(row for i, row in enumerate(rows) if i not in kept)
            self._bound()

    def _bound(self) -> None:
        """Let go of trials beyond ``keep_bytes`` that no callback still waits for."""
        if self._keep is None or len(self.stored) <= self._keep:
            return
        self.whole = False
        done = self._called_back if self._callbacks else len(self.stored)
        del self.stored[:done]
        self._called_back -= min(done, self._called_back)

    def frozen(self, row: Row, trial_id: int, number: int) -> FrozenTrial:
        """A finished trial of this run as the storage holds it."""
        return FrozenTrial(
            number=number,
            state=row.state,
            value=told_value(row.state.name, row.value),
            values=None,
            datetime_start=row.start,
            datetime_complete=row.end,
            params=(
                dict(zip(self.space.names, row.point.tolist()))
                if self._encode is not None
                else self.space.to_params(row.point)
            ),
            distributions=self.distributions,
            user_attrs=row.user_attrs,
            system_attrs={OWNER_KEY: self.owner, self.position_key: row.position},
            intermediate_values=dict(row.intermediate or {}),
            trial_id=trial_id,
        )

    def unwritten(self) -> int:
        """Lists handed to a writer that has not reported them written yet."""
        with self._lock:
            return len(self._handed)

    def completed(self, trials: list[FrozenTrial]) -> None:
        """Trials of claimed positions this worker completed itself (see ``Cooperation``)."""
        with self._lock:
            self.stored.extend(trials)
            self._bound()

    def stored_since_last_call(self) -> list[FrozenTrial]:
        with self._lock:
            new = self.stored[self._called_back :]
            self._called_back = len(self.stored)
        return new

    def cache(self) -> None:
        """Hand the stored trials to the storage's cache (a caching RDB storage), so that reading
        the study afterwards does not read them back."""
        add = getattr(storage_of(self.study), "add_finished_trials", None)
        if add is not None and self.stored and self.whole:
            add(study_id_of(self.study), self.stored)
