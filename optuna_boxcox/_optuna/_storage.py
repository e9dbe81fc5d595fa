"""An RDB storage that keeps finished trials in memory, reads new ones in bulk, and writes a running
trial's parameters in one transaction.

It plays the part of Optuna's own cache over :class:`~optuna.storages.RDBStorage` (finished trials
never change, so each is read once) with three differences:

- trials are read by :func:`~._read.read_trials` (a few SQL queries) instead of Optuna's ORM, about
  twenty times faster: reading a 20,000-trial study, which the dashboard and every resumed search
  do, takes a second instead of half a minute;
- trials this process wrote in bulk are added to the cache by the writer
  (:meth:`CachedRDBStorage.add_finished_trials`), so a search never reads back what it wrote;
- ``trial.suggest_*`` no longer commits each parameter on its own: suggested parameters wait in
  this process until anything reads the trial or changes its state, and are then written in one
  transaction. That is the persistence Optuna's cache documents (a trial's earlier writes are stored
  before its state is). Distributions are still checked when suggested: each against the first one
  of its name, which is written straight away (Optuna checks that one against the study's trials).

New trials record their owner process (:data:`~optuna_boxcox._system._process.OWNER_KEY`) in the same
transaction that creates them, and a waiting trial taken up in the one that takes it, so a worker
killed at any point leaves nothing anonymous or owned by a process that died before.
"""

from __future__ import annotations

import copy
import datetime
import threading
from typing import TYPE_CHECKING
from typing import Any

from optuna import distributions
from optuna.storages import BaseStorage
from optuna.storages import RDBStorage
from optuna.trial import FrozenTrial
from optuna.trial import TrialState

from optuna_boxcox._optuna import heartbeat_stale_trial_callback
from optuna_boxcox._optuna._claims import run_waiting
from optuna_boxcox._optuna._read import read_trials
from optuna_boxcox._optuna._sql import Sql
from optuna_boxcox._optuna._study_attrs import read_study_attrs
from optuna_boxcox._optuna._study_attrs import read_study_name
from optuna_boxcox._optuna._study_attrs import set_study_attr
from optuna_boxcox._optuna._write import write_running_trial_params
from optuna_boxcox._system._process import OWNER_KEY
from optuna_boxcox._system._process import process_identity

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Container
    from collections.abc import Iterable
    from collections.abc import Sequence

    import optuna
    from optuna.study import StudyDirection
    from optuna.study._frozen import FrozenStudy

try:  # Optuna's heartbeat interface; a storage that has it gets heartbeats from study.optimize.
    from optuna.storages._heartbeat import BaseHeartbeat as _Heartbeat
except ImportError:  # pragma: no cover - every supported Optuna has it
    _Heartbeat = object  # type: ignore[assignment,misc]


class _StudyCache:
    """What this process knows of one study's trials."""

    def __init__(self) -> None:
        self.trials: dict[int, FrozenTrial] = {}  # by number
        self.sorted: list[FrozenTrial] | None = None  # trials by number, until the next change
        #: Every trial of the study with an id up to this one is in ``trials``: finished (final) or
        #: listed in ``unfinished`` (read again each time).
        self.known_up_to = -1
        self.unfinished: set[int] = set()
        #: Numbers 0 to this one minus 1 are all in ``trials``.
        self.numbered_prefix = 0
        self.param_distributions: dict[str, distributions.BaseDistribution] = {}
        self.name: str | None = None
        self.directions: list[StudyDirection] | None = None

    def add(self, trials: Iterable[FrozenTrial]) -> None:
        seen = None  # trials written together share one distributions mapping: look at it once
        for trial in trials:
            self.trials[trial.number] = trial
            trial_id = trial._trial_id
            if trial.state.is_finished():
                self.unfinished.discard(trial_id)
            else:
                self.unfinished.add(trial_id)
            if trial.distributions is not seen:
                seen = trial.distributions
                for name, distribution in seen.items():
                    self.param_distributions.setdefault(name, distribution)
        self.sorted = None

    def advance_known(self) -> None:
        """Move ``known_up_to`` to the newest trial of the gap-free run of numbers from 0.

        A study numbers its trials in id order, so when numbers 0 to n are all held, so is every
        trial with a lower id. The newest id read is no such bound: another process (or this
        process's writer child) may have written trials between two reads, and on PostgreSQL a
        transaction holding a lower id may commit after one holding a higher id.
        """
        while self.numbered_prefix in self.trials:
            self.numbered_prefix += 1
        if self.numbered_prefix:
            newest = self.trials[self.numbered_prefix - 1]._trial_id
            self.known_up_to = max(self.known_up_to, newest)

    def in_order(self) -> list[FrozenTrial]:
        if self.sorted is None:
            self.sorted = [self.trials[n] for n in sorted(self.trials)]
        return self.sorted


class CachedRDBStorage(BaseStorage, _Heartbeat):  # type: ignore[misc]
    """A caching, bulk-reading, parameter-batching storage over an RDBStorage (see the module).

    Args:
        backend: The RDB storage every read and write goes to.
    """

    def __init__(self, backend: RDBStorage) -> None:
        self._backend = backend
        self._studies: dict[int, _StudyCache] = {}
        self._trial_index: dict[int, tuple[int, int]] = {}  # trial id → (study id, number)
        #: trial id → parameter name → (internal value, distribution), in suggestion order.
        self._pending: dict[int, dict[str, tuple[float, distributions.BaseDistribution]]] = {}
        self._lock = threading.RLock()

    @property
    def backend(self) -> RDBStorage:
        return self._backend

    def __getstate__(self) -> dict[str, Any]:
        self._flush()
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def _study(self, study_id: int) -> _StudyCache:
        study = self._studies.get(study_id)
        if study is None:
            study = self._studies[study_id] = _StudyCache()
        return study

    # -- studies ----------------------------------------------------------------------------------
    def create_new_study(
        self, directions: Sequence[StudyDirection], study_name: str | None = None
    ) -> int:
        study_id = self._backend.create_new_study(directions=directions, study_name=study_name)
        with self._lock:
            study = self._study(study_id)
            study.name, study.directions = study_name, list(directions)
        return study_id

    def delete_study(self, study_id: int) -> None:
        self._flush()
        with self._lock:
            study = self._studies.pop(study_id, None)
            if study is not None:
                for trial in study.trials.values():
                    self._trial_index.pop(trial._trial_id, None)
        self._backend.delete_study(study_id)

    # A study's attributes are read and written in a statement or two rather than Optuna's ORM
    # round trips: every worker reads and writes several when it starts and stops.
    def set_study_user_attr(self, study_id: int, key: str, value: Any) -> None:
        set_study_attr(self._backend, study_id, "user", key, value)

    def set_study_system_attr(self, study_id: int, key: str, value: Any) -> None:
        set_study_attr(self._backend, study_id, "system", key, value)

    def get_study_id_from_name(self, study_name: str) -> int:
        return self._backend.get_study_id_from_name(study_name)

    def get_study_name_from_id(self, study_id: int) -> str:
        with self._lock:
            study = self._study(study_id)
            if study.name is None:
                study.name = self._read_study_name(study_id)
            return study.name

    def _read_study_name(self, study_id: int) -> str:
        with self._backend.engine.connect() as connection:
            return read_study_name(connection, study_id)  # KeyError for no such study

    def get_study_directions(self, study_id: int) -> list[StudyDirection]:
        with self._lock:
            study = self._study(study_id)
            if study.directions is None:
                study.directions = self._backend.get_study_directions(study_id)
            return study.directions

    def get_study_user_attrs(self, study_id: int) -> dict[str, Any]:
        with self._backend.engine.connect() as connection:
            return read_study_attrs(connection, study_id, "user")

    def get_study_system_attrs(self, study_id: int) -> dict[str, Any]:
        with self._backend.engine.connect() as connection:
            return read_study_attrs(connection, study_id, "system")

    def get_all_studies(self) -> list[FrozenStudy]:
        return self._backend.get_all_studies()

    # -- trials -----------------------------------------------------------------------------------
    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        if template_trial is None:
            template_trial = FrozenTrial(
                number=-1,
                state=TrialState.RUNNING,
                value=None,
                values=None,
                datetime_start=datetime.datetime.now(),  # as RDBStorage stamps a new trial
                datetime_complete=None,
                params={},
                distributions={},
                user_attrs={},
                system_attrs={OWNER_KEY: process_identity()},
                intermediate_values={},
                trial_id=-1,
            )
        trial_id = self._backend.create_new_trial(study_id, template_trial)
        with self._lock:
            self._remember(study_id, self._read_ids(study_id, [trial_id]))
        return trial_id

    def set_trial_param(
        self,
        trial_id: int,
        param_name: str,
        param_value_internal: float,
        distribution: distributions.BaseDistribution,
    ) -> None:
        with self._lock:
            study_id = self._study_of_trial(trial_id)
            known = self._study(study_id).param_distributions.get(param_name)
            if known is None:
                self._flush()
                self._backend.set_trial_param(
                    trial_id, param_name, param_value_internal, distribution
                )
                self._study(study_id).param_distributions[param_name] = distribution
                return
            distributions.check_distribution_compatibility(known, distribution)
            # A name given twice keeps its first value, as the table's unique key does for Optuna.
            self._pending.setdefault(trial_id, {}).setdefault(
                param_name, (param_value_internal, distribution)
            )

    def get_trial_id_from_study_id_trial_number(self, study_id: int, trial_number: int) -> int:
        with self._lock:
            trial = self._study(study_id).trials.get(trial_number)
            if trial is not None:
                return trial._trial_id
        return self._backend.get_trial_id_from_study_id_trial_number(study_id, trial_number)

    def set_trial_state_values(
        self, trial_id: int, state: TrialState, values: Sequence[float] | None = None
    ) -> bool:
        self._flush()
        if state == TrialState.RUNNING and values is None:
            # A waiting trial taken up (put back after Ctrl-C or its owner's death, or
            # enqueued): it is this process's now, or it would be put back while it runs.
            with self._lock:
                study_id = self._study_of_trial(trial_id)
            return run_waiting(self._backend, study_id, trial_id, process_identity())
        return self._backend.set_trial_state_values(trial_id, state=state, values=values)

    def set_trial_intermediate_value(
        self, trial_id: int, step: int, intermediate_value: float
    ) -> None:
        self._backend.set_trial_intermediate_value(trial_id, step, intermediate_value)

    def set_trial_user_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._backend.set_trial_user_attr(trial_id, key=key, value=value)

    def set_trial_system_attr(self, trial_id: int, key: str, value: Any) -> None:
        self._backend.set_trial_system_attr(trial_id, key=key, value=value)

    def get_trial(self, trial_id: int) -> FrozenTrial:
        self._flush()
        with self._lock:
            located = self._trial_index.get(trial_id)
            if located is not None:
                trial = self._studies[located[0]].trials[located[1]]
                if trial.state.is_finished():
                    return trial
                study_id = located[0]
            else:
                study_id = self._study_id_of_trial_in_storage(trial_id)
            trials = self._read_ids(study_id, [trial_id])
            if not trials:
                raise KeyError(f"No trial with trial id {trial_id} exists.")
            self._remember(study_id, trials)
            return trials[0]

    def get_all_trials(
        self,
        study_id: int,
        deepcopy: bool = True,
        states: Container[TrialState] | None = None,
    ) -> list[FrozenTrial]:
        self._flush()
        with self._lock:
            self._refresh(study_id)
            trials = self._studies[study_id].in_order()
            if states is not None:
                trials = [t for t in trials if t.state in states]
            return copy.deepcopy(trials) if deepcopy else list(trials)

    def add_finished_trials(self, study_id: int, trials: Sequence[FrozenTrial]) -> None:
        """Put trials this process has just written (ids and numbers as stored) into the cache.

        Later reads start after them only once every trial numbered below them is cached too;
        until then the next read looks again at every trial after the gap.
        """
        if not trials:
            return
        with self._lock:
            self._remember(study_id, trials)
            self._study(study_id).advance_known()

    # -- reading ----------------------------------------------------------------------------------
    def _refresh(self, study_id: int) -> None:
        study = self._study(study_id)
        with self._backend.engine.connect() as connection:
            trials = read_trials(
                connection, study_id, after=study.known_up_to, including=study.unfinished
            )
        # A running trial read before and not now was withdrawn (a worker's trial the study
        # turned out not to need, deleted: ``_claims.withdraw``).
        withdrawn = study.unfinished - {trial._trial_id for trial in trials}
        if withdrawn:
            self._forget(study, withdrawn)
        if not trials:
            self._check_study_exists(study_id, study)
            return
        self._remember(study_id, trials)
        study.advance_known()

    def _forget(self, study: _StudyCache, trial_ids: set[int]) -> None:
        for trial_id in trial_ids:
            located = self._trial_index.pop(trial_id, None)
            study.unfinished.discard(trial_id)
            cached = None if located is None else study.trials.get(located[1])
            if cached is not None and cached._trial_id == trial_id:
                del study.trials[located[1]]
                study.numbered_prefix = min(study.numbered_prefix, located[1])
        study.sorted = None

    def _check_study_exists(self, study_id: int, study: _StudyCache) -> None:
        if not study.trials and study.name is None:
            study.name = self._read_study_name(study_id)  # KeyError if none

    def _read_ids(self, study_id: int, trial_ids: Sequence[int]) -> list[FrozenTrial]:
        with self._backend.engine.connect() as connection:
            return read_trials(connection, study_id, only=trial_ids)

    def _remember(self, study_id: int, trials: Sequence[FrozenTrial]) -> None:
        self._study(study_id).add(trials)
        for trial in trials:
            self._trial_index[trial._trial_id] = (study_id, trial.number)

    def _study_of_trial(self, trial_id: int) -> int:
        located = self._trial_index.get(trial_id)
        return located[0] if located is not None else self._study_id_of_trial_in_storage(trial_id)

    def _study_id_of_trial_in_storage(self, trial_id: int) -> int:
        with self._backend.engine.connect() as connection:
            rows = Sql(connection)("SELECT study_id FROM trials WHERE trial_id = ?", (trial_id,))
        if not rows:
            raise KeyError(f"No trial with trial id {trial_id} exists.")
        return int(rows[0][0])

    def _flush(self) -> None:
        """Write every pending parameter: one transaction per trial."""
        if not self._pending:
            return
        with self._lock:
            pending, self._pending = self._pending, {}
            for trial_id, params in pending.items():
                write_running_trial_params(self._backend, trial_id, params)

    # -- heartbeats (PostgreSQL and other servers) ----------------------------------------------
    def record_heartbeat(self, trial_id: int) -> None:
        self._backend.record_heartbeat(trial_id)

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        return self._backend._get_stale_trial_ids(study_id)

    def get_heartbeat_interval(self) -> int | None:
        return self._backend.get_heartbeat_interval()

    def get_heartbeat_stale_trial_callback(
        self,
    ) -> Callable[[optuna.Study, FrozenTrial], None] | None:
        return heartbeat_stale_trial_callback(self._backend)

    def get_failed_trial_callback(self) -> Callable[[optuna.Study, FrozenTrial], None] | None:
        return heartbeat_stale_trial_callback(self._backend)


__all__ = ["CachedRDBStorage"]
