"""Machinery shared by the paper's samplers: a deterministic plan of batches, replayed from storage.

Every search strategy of the paper is a *plan*: a generator that yields a batch of λ points, receives
their scores, and decides the next batch (a coordinate sweep, a spherical pass, …). :class:`Plan` is
the one thing that advances such a generator. Given the seed and the scores a plan is
deterministic, so it never lives in a process: any worker, or a process restarted after a crash,
replays it from the finished trials in the storage (as Optuna's GridSampler and CmaEsSampler do).

Two ways run a plan on a study, and write the same trials:

- trial by trial, through ``study.optimize``: each trial claims one position of the plan in the
  storage; the points of one batch are independent, so several workers can evaluate them at once,
  and the next batch waits for all of them;
- batch by batch, through :func:`optuna_boxcox.optimize`, which drives a :class:`PlanRun`
  (:meth:`PlanSampler.start_run`): the runner scores whole batches and writes their trials in bulk.

This module is :class:`PlanSampler`, Optuna's side (claiming a position per trial, replaying the
study). Its parts: ``_driver`` (:class:`Plan`, the batches, the direction's :class:`Ranking`),
``_ledger`` (positions finished and claimed in a study), ``_run`` (:class:`PlanRun`, the batched
runners' side), ``_grid`` (plans over a fixed grid).
"""

from __future__ import annotations

import abc
from dataclasses import replace
import random
import threading
import time
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from optuna.samplers import BaseSampler
from optuna.samplers import RandomSampler
from optuna.trial import TrialState

from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox._optuna import trial_id_of
from optuna_boxcox._optuna._capabilities import capabilities_of
from optuna_boxcox._optuna._claims import claim_trial
from optuna_boxcox._optuna._claims import fail_stale
from optuna_boxcox._optuna._claims import heartbeat_interval
from optuna_boxcox._optuna._claims import is_dead
from optuna_boxcox._optuna._claims import reap
from optuna_boxcox._optuna._read import refresh_optuna_cache
from optuna_boxcox._optuna._write import set_trial_user_attrs
from optuna_boxcox._study._plan_size import PlanSize
from optuna_boxcox._study._plan_size import SizedPlan
from optuna_boxcox._study._settings import record_settings
from optuna_boxcox._study._space import LambdaSpace
from optuna_boxcox._study._spec import SPACE_ATTR
from optuna_boxcox._system._process import OWNER_KEY
from optuna_boxcox._system._process import process_identity
from optuna_boxcox.samplers._driver import Batch
from optuna_boxcox.samplers._driver import Plan
from optuna_boxcox.samplers._driver import Ranking
from optuna_boxcox.samplers._driver import SearchResult
from optuna_boxcox.samplers._driver import plan_result
from optuna_boxcox.samplers._ledger import POSITION_KEY
from optuna_boxcox.samplers._ledger import UNCLAIMED
from optuna_boxcox.samplers._ledger import Ledger
from optuna_boxcox.samplers._ledger import rival_holds
from optuna_boxcox.samplers._run import PlanRun

if TYPE_CHECKING:
    from collections.abc import Generator
    from collections.abc import Mapping
    from collections.abc import Sequence

    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial
    from optuna.trial import Trial

_logger = optuna.logging.get_logger(__name__)

#: Study user attributes (shown in the dashboard).
#: The user attribute, and its value, of a trial that found the plan finished.
DONE_PHASE = ("phase", "done")
SAMPLER_ATTR = "boxcox_sampler"
RESULT_ATTR = "boxcox_result"


def _searched(recorded: Any) -> Any:
    """What the search found, of a recorded result: a gate after the search (the guarded
    default) records the Λ it used as the result, and the search's as ``searched_params`` and
    ``searched_best_value``, which this sampler does not replace with the same Λ."""
    if isinstance(recorded, dict) and "searched_params" in recorded:
        return {
            "params": recorded["searched_params"],
            "best_value": recorded.get("searched_best_value"),
        }
    return recorded


class PlanSampler(BaseSampler, SizedPlan):
    """Base of the paper's samplers: trials take positions of a deterministic plan.

    Subclasses define :meth:`_plan` (the paper's algorithm as a generator) and :meth:`settings`.

    The λ space comes from ``search_space``/``initial_params`` when given, otherwise from the study,
    where :class:`~optuna_boxcox.BoxCoxObjective` records it on its first call. Parameters outside
    that space are sampled by ``independent_sampler`` (random by default). Enqueued trials are not
    part of the plan; parameters they leave open take the current Λopt.

    When the plan is spent the sampler stops the study (:meth:`optuna.study.Study.stop`); a trial that
    starts after that re-evaluates Λopt (user attr ``phase = "done"``), which a caching objective
    answers without refitting.
    """

    #: Registry name, recorded in the study.
    name: str = "plan"
    #: Whether the algorithm searches spaces with transform or setting coordinates besides λ.
    searches_beyond_lambda: bool = False

    def __init__(
        self,
        *,
        search_space: Mapping[str, FloatDistribution] | None = None,
        initial_params: Mapping[str, float] | None = None,
        seed: int = 0,
        independent_sampler: BaseSampler | None = None,
        max_retries: int = 3,
        poll_interval: float = 0.02,
    ) -> None:
        self._explicit_space = None
        if search_space is not None:
            self._explicit_space = LambdaSpace.from_distributions(search_space, initial_params)
        self._initial_params = dict(initial_params) if initial_params is not None else None
        self._seed = int(seed)
        self._independent_sampler = independent_sampler or RandomSampler(seed=seed)
        self._max_retries = int(max_retries)
        self._poll_interval = float(poll_interval)
        self._lock = threading.RLock()
        self._studies: dict[tuple[int, int], tuple[tuple, Plan, Ledger]] = {}
        self._assigned: dict[int, int] = {}  # trial id → plan position (this process's trials)
        #: trial id → the λ space read when the trial began sampling (one study read per trial).
        self._trial_spaces: dict[int, LambdaSpace] = {}
        self._identity = process_identity()
        self._warned_no_space = False

    def __getstate__(self) -> dict[str, Any]:
        # Locks and per-process caches do not travel; everything they hold is in the storage.
        state = self.__dict__.copy()
        del state["_lock"]
        state["_studies"], state["_assigned"], state["_trial_spaces"] = {}, {}, {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
        self._identity = process_identity()

    # -- what subclasses define ---------------------------------------------------------------
    @abc.abstractmethod
    def _plan(self, space: LambdaSpace) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
        """The algorithm: yield batches, receive their scores (higher is better), return
        (Λopt, its score)."""

    @abc.abstractmethod
    def settings(self) -> dict[str, Any]:
        """The settings that determine the plan (recorded in the study)."""

    def budget(self, n_params: int) -> int:
        """Number of trials the plan takes for ``n_params`` λ (for ``n_trials``)."""
        raise NotImplementedError

    def space_budget(self, space: LambdaSpace) -> int:
        """Number of trials the plan takes on ``space`` (its transforms and settings included)."""
        return self.budget(space.dim)

    #: Points a sweep of the plan scores together (a grid sampler's grid size); None: no sweeps.
    sweep_size: int | None = None
    #: The sampler refuses a plan too large by a rule of its own (the full grid's
    #: ``max_points``): a search's own size check leaves such a plan to it.
    checks_own_size = False

    def plan_size(self, space: LambdaSpace) -> PlanSize:
        """The size of this sampler's plan on ``space``: its trials (None when the plan cannot
        say before it runs) and points per sweep. The one definition a search asks."""
        try:
            trials: int | None = int(self.space_budget(space))
        except NotImplementedError:
            trials = None
        return PlanSize(trials, space.dim, self.sweep_size)

    def _continues(self, recorded: Mapping[str, Any]) -> bool:
        """Whether a study run with ``recorded`` settings may be continued with this sampler's."""
        return dict(recorded) == self.settings()

    # -- the protocol of runners ---------------------------------------------------------------
    def plan(self, space: LambdaSpace, *, max_trials: int | None = None) -> Plan:
        """This sampler's algorithm on ``space``, as a fresh :class:`Plan` (no study involved).

        ``max_trials`` says that no more of the plan will be run (a sampler may refuse a plan too
        large to run to its end, but not its first trials).
        """
        if not space.lambdas_only and not self.searches_beyond_lambda:
            beyond = [n for n, lam in zip(space.names, space.is_lambda) if not lam]
            raise ValueError(
                f"{type(self).__name__} searches λ only, and this space also has {beyond[:3]}…: "
                "use the coordinate search or one of Optuna's samplers (tpe, random, nsga2)"
            )
        self._refuse(space, max_trials)
        return Plan(self._plan(space))

    def _refuse(self, space: LambdaSpace, max_trials: int | None) -> None:
        """Raise ValueError if this plan must not be run (to ``max_trials``, or its end)."""

    def start_run(self, study: Study, *, max_trials: int | None = None) -> PlanRun:
        """Start a runner's pass over the plan on ``study`` (at most ``max_trials`` new trials):
        see :class:`PlanRun`.

        Raises:
            ValueError: The study was run with other sampler settings, has several objectives,
                or has no λ space (optimise a :class:`~optuna_boxcox.BoxCoxObjective`, or give
                the sampler ``search_space``).
        """
        _refuse_several_objectives(self, study)
        attrs = study.user_attrs
        self._check_settings(study, attrs)
        space = self._space(study, attrs)
        if space is None:
            raise ValueError(
                f"study {study.study_name!r} has no λ search space: register a BoxCoxObjective "
                f"on it, or give {type(self).__name__} search_space=..."
            )
        ranking = Ranking.of(study)
        trials = self._trials(study)
        ledger = Ledger()
        for trial in ledger.update(
            trials, lambda t: ranking.trial_score(t.state, t.values), self._max_retries
        ):
            self._reap_if_dead(study, trial)
        bound = None if max_trials is None else len(ledger.scores) + max_trials
        plan = self.plan(space, max_trials=bound)
        plan.advance(ledger.scores)
        budget = self.plan_size(space).trials
        return PlanRun(
            study,
            plan,
            space,
            ranking,
            scores=ledger.scores,
            trials=trials,
            owner=self._identity,
            budget=budget,
            record=self._finish,
            replay=lambda: self.plan(space, max_trials=bound),
        )

    # -- the λ space --------------------------------------------------------------------------
    def _space(self, study: Study, attrs: Mapping[str, Any] | None = None) -> LambdaSpace | None:
        """The λ space; ``attrs`` are the study's user attributes if already read (each read of
        them is a query on a database storage)."""
        if self._explicit_space is not None:
            return self._explicit_space
        if attrs is None:
            attrs = study.user_attrs
        recorded = attrs.get(SPACE_ATTR)
        space = None if recorded is None else LambdaSpace.from_attr(recorded)
        if space is not None and self._initial_params is not None:
            space = replace(space, initial=space.to_vector(self._initial_params))
        return space

    # -- Optuna's sampler interface -----------------------------------------------------------
    def reseed_rng(self) -> None:
        # The plan's randomness comes from the seed alone so that every worker derives the same
        # plan; only the sampler of parameters outside the λ space is reseeded.
        self._independent_sampler.reseed_rng()

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        # open_storage's databases record the owner when they create the trial (no window in
        # which a killed process leaves an anonymous running trial); other storages get it here.
        if (
            "fixed_params" not in trial.system_attrs
            and trial.system_attrs.get(OWNER_KEY) != self._identity
        ):
            storage_of(study).set_trial_system_attr(trial_id_of(trial), OWNER_KEY, self._identity)

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        # The study's attributes are read once per trial: they give the λ space (kept for this
        # trial's sample_relative and after_trial) and the sampler settings the claim checks.
        attrs = study.user_attrs
        space = self._space(study, attrs)
        if space is None:
            if not self._warned_no_space:
                _logger.warning(
                    f"{type(self).__name__} found no λ search space: optimise a BoxCoxObjective "
                    "or pass search_space=...; sampling parameters independently at random."
                )
                self._warned_no_space = True
            return {}
        with self._lock:
            self._trial_spaces[trial_id_of(trial)] = space
        if "fixed_params" not in trial.system_attrs and trial_id_of(trial) not in self._assigned:
            self._claim(study, trial, space, attrs)
        return space.distributions()

    def _trial_space(self, study: Study, trial: FrozenTrial) -> LambdaSpace | None:
        """The λ space this trial was planned in (read from the study if it was not)."""
        with self._lock:
            space = self._trial_spaces.get(trial_id_of(trial))
        return space if space is not None else self._space(study)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if not search_space:
            return {}
        space = self._trial_space(study, trial)
        point = self._point_for(study, trial, space)
        params: dict[str, Any] = {}
        for name, dist in search_space.items():
            if point is not None and space is not None and name in space.names:
                params[name] = _fit_to(dist, point[space.names.index(name)])
            else:
                params[name] = self._independent_sampler.sample_independent(
                    study, trial, name, dist
                )
        return params

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        # Optuna before 5 infers the relative search space when the trial is created, before the
        # objective of a study's first trial could record the λ space: the trial then claims its
        # plan position at its first λ instead.
        if "fixed_params" not in trial.system_attrs:
            trial_id = trial_id_of(trial)
            with self._lock:
                known = trial_id in self._trial_spaces
            if not known:
                attrs = study.user_attrs
                space = self._space(study, attrs)
                if space is not None and param_name in space.names:
                    with self._lock:
                        self._trial_spaces[trial_id] = space
                    if trial_id not in self._assigned:
                        self._claim(study, trial, space, attrs)
                    point = self._point_for(study, trial, space)
                    return _fit_to(param_distribution, point[space.names.index(param_name)])
            else:
                with self._lock:
                    space = self._trial_spaces[trial_id]
                if param_name in space.names and trial_id in self._assigned:
                    point = self._point_for(study, trial, space)
                    return _fit_to(param_distribution, point[space.names.index(param_name)])
        return self._independent_sampler.sample_independent(
            study, trial, param_name, param_distribution
        )

    def after_trial(
        self,
        study: Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        with self._lock:
            position = self._assigned.pop(trial_id_of(trial), None)
            space = self._trial_spaces.pop(trial_id_of(trial), None)
            if position is None or position == UNCLAIMED:
                return
            if state == TrialState.FAIL:
                return  # the position is re-run (up to max_retries)
            score = Ranking.of(study).trial_score(state, values)
            # What this process knew when it claimed the position is enough (no storage read):
            # in a sequential run every earlier trial had finished by then.
            _, replay, ledger = self._cache(study, space)
            scores = dict(ledger.scores)
            # In a parallel run, the batch's earlier candidates known so far.
            improved = replay.improved(position, score, scores)
            storage_of(study).set_trial_user_attr(trial_id_of(trial), "improved", improved)
            # This trial's value is not in the storage yet: add it to see whether the plan ends.
            scores[position] = score
            replay.advance(scores)
            finished = replay.finished
        if finished:
            self._finish(study)

    # -- claiming positions ------------------------------------------------------------------
    def _claim(
        self, study: Study, trial: FrozenTrial, space: LambdaSpace, attrs: Mapping[str, Any]
    ) -> None:
        _refuse_several_objectives(self, study)
        self._check_settings(study, attrs)
        delay = self._poll_interval
        heartbeat = heartbeat_interval(study)
        looked = time.monotonic()
        while True:
            with self._lock:
                held = self._running(study, self._trials(study), space)
                _, replay, ledger = self._cache(study, space)
                replay.advance(ledger.scores)
                if replay.finished:
                    self._assign_done(study, trial)
                    return
                free = [
                    p
                    for p in replay.positions(replay.current)
                    if p not in ledger.scores and p not in held
                ]
                if free and self._try_claim(study, trial, free[0], replay, ledger, space):
                    return
            # Every position of the batch is taken by a running trial: wait for the batch to end.
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 1.5, 1.0)
            if heartbeat is not None and time.monotonic() - looked >= heartbeat:
                fail_stale(study)  # a holder on a machine that vanished frees its position
                looked = time.monotonic()

    def _try_claim(
        self,
        study: Study,
        trial: FrozenTrial,
        position: int,
        replay: Plan,
        ledger: Ledger,
        space: LambdaSpace,
    ) -> bool:
        storage = storage_of(study)
        # In the plan's last batch (or any, when the plan cannot tell its size), older trials
        # claim first, so that those left over when it ends are the newest (see _claims.withdraw);
        # earlier batches need not wait for them.
        planned = self.plan_size(space).trials
        last = planned is None or replay.positions(replay.current).stop >= planned
        if not _claim_position(study, trial, position, ledger, older_first=last):
            return False
        self._assigned[trial_id_of(trial)] = position
        batch, index = replay.locate(position)
        if capabilities_of(storage).sql_claims:
            set_trial_user_attrs(storage, trial_id_of(trial), batch.attrs[index])
        else:
            for key, value in batch.attrs[index].items():
                storage.set_trial_user_attr(trial_id_of(trial), key, value)
        return True

    def came_after_the_plan(self, trial: FrozenTrial | Trial) -> bool:
        """Whether this process's ``trial`` found the plan finished when it came for a position
        (it re-evaluates Λopt: a trial the study does not need, which a runner may withdraw)."""
        with self._lock:
            return self._assigned.get(trial_id_of(trial)) == UNCLAIMED

    def _assign_done(self, study: Study, trial: FrozenTrial) -> None:
        self._assigned[trial_id_of(trial)] = UNCLAIMED
        storage_of(study).set_trial_user_attr(trial_id_of(trial), *DONE_PHASE)
        self._finish(study)

    def _point_for(
        self, study: Study, trial: FrozenTrial, space: LambdaSpace | None
    ) -> np.ndarray | None:
        if space is None:
            return None
        with self._lock:
            position = self._assigned.get(trial_id_of(trial))
            replay = self._replay(study, space)
        if position is None or position == UNCLAIMED:
            # Enqueued or post-budget trials take the current Λopt for parameters they leave open.
            return replay.incumbent(space)
        batch, index = replay.locate(position)
        return batch.points[index]

    # -- replaying the plan from storage -----------------------------------------------------
    def _trials(self, study: Study) -> list[FrozenTrial]:
        storage, study_id = storage_of(study), study_id_of(study)
        refresh_optuna_cache(storage, study_id)  # a study opened by Optuna: read in bulk
        return storage.get_all_trials(study_id, deepcopy=False)

    def _cache(self, study: Study, space: LambdaSpace | None = None) -> tuple[tuple, Plan, Ledger]:
        """This process's replay and ledger of the study (rebuilt when its λ space changes);
        ``space`` is the study's λ space if already read."""
        if space is None:
            space = self._space(study)
        assert space is not None
        key = (id(storage_of(study)), study_id_of(study))
        signature = space.signature()
        cached = self._studies.get(key)
        if cached is None or cached[0] != signature:
            cached = (signature, self.plan(space), Ledger())
            self._studies[key] = cached
        return cached

    def _forget(self, study: Study) -> None:
        """Drop this process's replay of the study (after writing to it behind the sampler)."""
        self._studies.pop((id(storage_of(study)), study_id_of(study)), None)

    def _replay(self, study: Study, space: LambdaSpace | None = None) -> Plan:
        return self._cache(study, space)[1]

    def _sync(
        self, study: Study, space: LambdaSpace, trials: list[FrozenTrial]
    ) -> tuple[Plan, dict[int, float]]:
        """The replay advanced over the finished positions, and their scores."""
        self._running(study, trials, space)
        _, replay, ledger = self._cache(study, space)
        replay.advance(ledger.scores)
        return replay, dict(ledger.scores)

    def _running(
        self, study: Study, trials: list[FrozenTrial], space: LambdaSpace | None = None
    ) -> dict[int, FrozenTrial]:
        """Account finished trials in the ledger; the live running trial of each held position."""
        ledger = self._cache(study, space)[2]
        held: dict[int, FrozenTrial] = {}
        ranking = Ranking.of(study)
        for t in ledger.update(
            trials, lambda t: ranking.trial_score(t.state, t.values), self._max_retries
        ):
            if self._reap_if_dead(study, t):
                continue
            position = t.system_attrs.get(POSITION_KEY)
            if position is not None and position != UNCLAIMED:
                held.setdefault(position, t)
        return held

    def _reap_if_dead(self, study: Study, trial: FrozenTrial) -> bool:
        """Fail a running trial whose process died (a crash on this host), so it is re-run."""
        owner = trial.system_attrs.get(OWNER_KEY)
        if owner == self._identity or not is_dead(owner):
            return False
        if reap(study, trial_id_of(trial)):
            _logger.warning(
                f"Trial {trial.number} belonged to a process that died; it will be re-run."
            )
        return True

    def _finish(self, study: Study, result: SearchResult | None = None) -> None:
        result = result or self.result(study)
        record = {"params": result.params, "best_value": result.best_value}
        if result.finished and _searched(study.user_attrs.get(RESULT_ATTR)) != record:
            study.set_user_attr(RESULT_ATTR, record)
            _logger.info(
                f"{type(self).__name__}: the plan's {result.budget} "
                f"{'trial is' if result.budget == 1 else 'trials are'} done "
                f"(best value {result.best_value}); stopping the study."
            )
        try:
            study.stop()
        except RuntimeError:
            pass  # ask-and-tell: there is no optimize loop to stop

    def _check_settings(self, study: Study, attrs: Mapping[str, Any] | None = None) -> None:
        """Record this sampler's settings, or refuse a study run with other ones; ``attrs`` are
        the study's user attributes if already read."""
        record_settings(
            study,
            SAMPLER_ATTR,
            {"name": self.name, "settings": self.settings()},
            recorded=attrs,
            continues=lambda theirs: (
                theirs.get("name") == self.name and self._continues(theirs.get("settings", {}))
            ),
            named_last=("epochs",),  # more epochs may continue a study: name what may not
        )

    # -- results -------------------------------------------------------------------------------
    def result(self, study: Study) -> SearchResult:
        """Λopt, its value and the history of Λopt per batch, replayed from the study's trials."""
        space = self._space(study)
        if space is None:
            return SearchResult(None, None)
        with self._lock:
            replay, _ = self._sync(study, space, self._trials(study))
        return plan_result(replay, space, Ranking.of(study))


def _refuse_several_objectives(sampler: PlanSampler, study: Study) -> None:
    if len(study.directions) > 1:
        raise ValueError(
            f"{type(sampler).__name__} follows one score, and study {study.study_name!r} has "
            f"{len(study.directions)} objectives: search it with a multi-objective sampler "
            "(nsga2, tpe, random)"
        )


def _fit_to(dist: BaseDistribution, value: float) -> Any:
    """A plan coordinate as a valid value of ``dist`` (the plan works in plain λ units)."""
    if isinstance(dist, FloatDistribution):
        v = float(np.clip(value, dist.low, dist.high))
        if dist.step is not None:
            v = dist.low + round((v - dist.low) / dist.step) * dist.step
            v = float(min(max(v, dist.low), dist.high))
        return v
    if isinstance(dist, IntDistribution):
        v = round(float(np.clip(value, dist.low, dist.high)))
        return dist.low + ((v - dist.low) // dist.step) * dist.step
    if isinstance(dist, CategoricalDistribution):
        index = int(np.clip(round(value), 0, len(dist.choices) - 1))
        return dist.choices[index]
    raise TypeError(f"unsupported distribution {dist!r}")


def _claim_position(
    study: Study, trial: FrozenTrial, position: int, ledger: Ledger, *, older_first: bool
) -> bool:
    """Claim plan ``position`` for the RUNNING ``trial`` of a ``study.optimize`` worker; False
    when another claim or a finished trial holds it (or, ``older_first``, while an older trial
    waits for a position)."""
    storage = storage_of(study)
    if capabilities_of(storage).sql_claims:
        # The one claim mechanism of the batched workers: under the study's write lock, so that
        # neither a rival claim nor a bulk write not yet committed can hold it too.
        return claim_trial(
            study,
            trial_id_of(trial),
            position,
            position_key=POSITION_KEY,
            after_trial_id=ledger.frontier_trial_id - 1,
            done=DONE_PHASE if older_first else None,
        )
    storage.set_trial_system_attr(trial_id_of(trial), POSITION_KEY, position)
    # Another process may have claimed the same position since we read the trials, and may even
    # have finished it. Both claims are written before they are read back, so at least one
    # claimant sees the other: whoever sees a rival backs off.
    if rival_holds(study, trial, position, ledger):
        storage.set_trial_system_attr(trial_id_of(trial), POSITION_KEY, UNCLAIMED)
        return False
    return True
