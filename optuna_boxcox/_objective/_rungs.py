"""The rungs of a search with rows as the fidelity: one objective per row count, each on a
stratified subset of the rows, transformed as all rows are."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any
import warnings

import numpy as np
import optuna

from optuna_boxcox._objective._arguments import CheckedData
from optuna_boxcox._objective._auto import Pricing
from optuna_boxcox._objective._auto import choose_auto
from optuna_boxcox._objective._auto import sample_rows
from optuna_boxcox._objective._evaluators import GENERIC_COST
from optuna_boxcox._objective._evaluators import evaluators_of
from optuna_boxcox._objective._experiment import Experiment
from optuna_boxcox._objective._experiment import prepare_experiment
from optuna_boxcox._objective._memory import DEFAULT_FLOOR
from optuna_boxcox._objective._memory import MemoryLimitTooSmall
from optuna_boxcox._objective._scorer import Scorer
from optuna_boxcox._objective._scorer import least_limit
from optuna_boxcox._study._fidelity import EXACT
from optuna_boxcox._study._fidelity import AutoFidelity
from optuna_boxcox._study._fidelity import Exact
from optuna_boxcox._study._fidelity import Fidelity
from optuna_boxcox._study._fidelity import FidelityChoice
from optuna_boxcox._study._fidelity import FidelityRequest
from optuna_boxcox._study._fidelity import given_choice
from optuna_boxcox._study._fidelity import is_int
from optuna_boxcox._study._fidelity import score_folds
from optuna_boxcox._study._plan_size import PlanSize


def pricing_of(estimator: Any, n_features: int, y: np.ndarray, cv: Any) -> Pricing:
    """What ``auto`` prices a search from: the classifier's cost class in the evaluators' registry
    (else the generic one), the data's shape and the inner folds."""
    return Pricing(
        evaluators_of(estimator).cost or GENERIC_COST,
        features=n_features,
        classes=len(np.unique(y)),
        folds=score_folds(cv),
        classifier=type(estimator).__name__,
    )


def choose(
    request: FidelityRequest,
    recorded: FidelityChoice | None,
    pricing: Pricing,
    n_samples: int,
    size: PlanSize,
    *,
    may_sample: bool = False,
) -> FidelityChoice:
    """The one place a search's fidelity is chosen: a request that names its rungs (or exact) is
    its own choice; ``auto`` takes the choice a study recorded of it (a resumed search, another
    worker: the study's rungs are the search's), else prices the plan of ``size``. With
    ``may_sample`` (the plan, before the experiment is built), the default (``auto`` not asked
    for) may choose an exact search on a stratified sample of the rows instead
    (:func:`~optuna_boxcox._objective._auto.sample_rows`: ``choice.sample``, which the plan makes
    the spec's subsample)."""
    if isinstance(request, (Exact, Fidelity)):
        return given_choice(request)
    assert isinstance(request, AutoFidelity), "the lifecycle decides a default request first"
    if recorded is not None and recorded.requested == "auto":
        return recorded
    if may_sample and request.default:
        sampled = sample_rows(request, pricing, n_samples, size)
        if sampled is not None:
            return sampled
    return choose_auto(request, pricing, n_samples, size)


class Rungs:
    """An objective's fidelity and the objectives of its rungs.

    The choice is made before the first trial: by the search's plan (the lifecycle), or, for an
    objective a study optimises directly with ``auto``, when it registers on the study (with the
    study's sampler's plan). Each rung's objective is built on first use and kept
    (:meth:`prepare` builds them all).

    Args:
        request: The spec's fidelity.
        choice: The choice made already (None: ``auto``, still to choose).
        owner: The objective on all rows.
    """

    def __init__(
        self, request: FidelityRequest, choice: FidelityChoice | None, owner: Any
    ) -> None:
        self.request = request
        self._owner = owner
        self._objectives: dict[int, Any] = {owner.n_samples: owner}
        self._experiments: dict[int, Experiment] = {}
        if choice is None and isinstance(request, (Exact, Fidelity)):
            choice = given_choice(request)
        elif choice is None and not isinstance(request, AutoFidelity):
            raise ValueError(
                "fidelity='default' is decided by the search lifecycle (plan_search): plan the "
                "spec first, or pass 'exact', 'auto' or a number of rows"
            )
        self._choice = choice
        if isinstance(request, Exact) or (choice is not None and choice.sample is not None):
            return  # exact on all rows, or on the default's sample (the spec's subsample)
        if owner.subsample is not None:
            raise ValueError(
                "fidelity and subsample both score on fewer rows: pass one of them (a fidelity's "
                "top rung may be capped with Fidelity(top_rows=...))"
            )
        if len(owner.objectives) > 1:
            raise ValueError("fidelity needs a single objective: Optuna prunes only those")
        if isinstance(request, Fidelity):
            self._check(request)

    def _check(self, fidelity: Fidelity) -> None:
        n, n_classes = self._owner.n_samples, len(np.unique(self._owner.y))
        if fidelity.min_rows >= n:
            raise ValueError(
                f"fidelity min_rows={fidelity.min_rows} must be below the {n} rows of X "
                "(or use fidelity='exact')"
            )
        if fidelity.min_rows < 2 * n_classes:
            raise ValueError(
                f"fidelity min_rows={fidelity.min_rows} is too small: a rung needs at least 2 "
                f"rows per class ({2 * n_classes} for {n_classes} classes)"
            )

    @property
    def pending(self) -> bool:
        """``auto`` has not chosen yet."""
        return self._choice is None

    def recorded_in(self, spec: Any) -> Any:
        """``spec`` with the fidelity's choice, once made."""
        return dataclasses.replace(spec, fidelity_choice=None if self.pending else self.choice)

    @property
    def choice(self) -> FidelityChoice:
        """What was chosen (``auto`` not chosen yet: priced now with the typical plan)."""
        return self.settle(PlanSize(None, self._owner.space.dim))

    def adopt(self, recorded: FidelityChoice | None) -> None:
        """Take the choice a study records when it is ``auto``'s and this request is ``auto``
        too, even over one made here: the study's rungs are the search's."""
        if (
            recorded is not None
            and recorded.requested == "auto"
            and isinstance(self.request, AutoFidelity)
        ):
            self._choice = recorded
            self._forget_others()

    def settle(self, size: PlanSize) -> FidelityChoice:
        """Choose ``auto`` now, for a plan of ``size``, if it has not chosen (:func:`choose`)."""
        if self._choice is None:
            owner = self._owner
            self._choice = choose(self.request, None, self.pricing(), owner.n_samples, size)
            self._forget_others()
        return self._choice

    def pricing(self) -> Pricing:
        owner = self._owner
        return pricing_of(owner.estimator, len(owner.param_names), owner.y, owner.cv)

    def _forget_others(self) -> None:
        """Drop the objectives of rows that are not rungs (one built before the choice)."""
        rungs = set(self.rows) | {self._owner.n_samples}
        for rows in [r for r in self._objectives if r not in rungs]:
            del self._objectives[rows]
            self._owner.budget.release(f"rung of {rows} rows")
        for rows in [r for r in self._experiments if r not in rungs]:
            del self._experiments[rows]

    @property
    def rows(self) -> tuple[int, ...]:
        """The rows of each rung, growing, the last the top rung; () when exact."""
        fidelity = self.choice.fidelity
        return () if fidelity is None else fidelity.rungs(self._owner.n_samples)

    def at(self, rows: int) -> Any:
        """The objective on a stratified subset of ``rows`` rows, transformed as all rows are
        (scaling, MLE), built on first use with its own cache; the rung reserves what it plans
        to allocate in the owner's memory budget (the rungs share it)."""
        if not is_int(rows) or not 2 <= rows <= self._owner.n_samples:
            raise ValueError(
                f"rows must be an int from 2 to the {self._owner.n_samples} rows of X, got {rows!r}"
            )
        found = self._objectives.get(int(rows))
        if found is None:
            found, shortfall = self._build(int(rows))
            if shortfall:
                raise self._too_small(shortfall)
            self._keep(int(rows), found)
        return found

    def prepare(self) -> None:
        """Build every rung's objective now (before worker processes fork, to share them). Under
        a limit given that they do not all fit, the refusal says the least that fits them all."""
        built, shortfall = [], 0
        for rows in self.rows:
            if rows not in self._objectives:
                found, short = self._build(rows)
                shortfall += short
                self._keep(rows, found)
                built.append(rows)
        if shortfall:
            for rows in built:  # over the limit: not kept
                del self._objectives[rows]
                self._owner.budget.release(f"rung of {rows} rows")
            raise self._too_small(shortfall)

    def _keep(self, rows: int, objective: Any) -> None:
        self._objectives[rows] = objective
        self._owner.budget.reserve(f"rung of {rows} rows", objective.budget.used)

    def _too_small(self, shortfall: int) -> MemoryLimitTooSmall:
        """The refusal of the owner's limit, short of ``shortfall`` bytes for its rungs, with the
        least limit under which the owner and every rung fit."""
        owner = self._owner
        least = least_limit(self._planned_bytes, owner.budget.limit + shortfall)
        return MemoryLimitTooSmall(
            owner.budget.given,
            least,
            owner.n_samples,
            len(owner.names),
            type(owner.estimator).__name__,
        )

    def _planned_bytes(self, limit: int) -> int:
        """Bytes the owner and all its rungs plan under ``limit`` (each rung in the room the
        owner and the rungs before it leave, as :meth:`prepare` builds them)."""
        owner = self._owner
        used = owner.scorer.planned_bytes(limit)
        for rows in self.rows:
            if rows == owner.n_samples:
                continue
            try:
                scorer = Scorer(
                    self._experiment(rows),
                    memory_limit=max(limit - used, 1),
                    n_threads=owner.n_threads,
                    fast=owner.scorer.fast,
                )
                used += scorer.budget.used
            except MemoryLimitTooSmall as small:  # as _build makes it: at its least
                used += small.least
        return used

    def _experiment(self, rows: int) -> Experiment:
        """The experiment of the rung of ``rows`` rows (prepared once)."""
        found = self._experiments.get(rows)
        if found is None:
            owner = self._owner
            spec = dataclasses.replace(
                owner.spec, subsample=rows, fidelity=EXACT, fidelity_choice=None
            )
            data = CheckedData(tuple(owner.names), owner.X, owner.y, owner.spec.fingerprint or "")
            with warnings.catch_warnings():  # the objective has warned about its data already
                warnings.simplefilter("ignore")
                found = self._experiments[rows] = prepare_experiment(
                    spec, data, initial_params=owner.initial_params, kernels=owner.scorer.fast
                )
        return found

    def _build(self, rows: int) -> tuple[Any, int]:
        """A new objective like the owner on a stratified subset of ``rows`` of its rows,
        transformed as all rows are (its scaling and MLE come from all rows), within what is left
        of its memory budget: built from its spec, as scikit-learn's halving search subsamples in
        its splitter, so a field added to the spec reaches the rungs without being passed here.
        With it, the bytes it lacks under a limit given (else 0: the default limit gives a rung
        the room it needs)."""
        owner = self._owner
        budget = owner.budget
        build = functools.partial(
            type(owner).of,
            self._experiment(rows),
            n_threads=owner.n_threads,
            fast=owner.scorer.fast,
        )
        # A limit given holds for the rungs too; the default gives a rung a floor of room.
        room = max(budget.remaining(), 1 if budget.given is not None else DEFAULT_FLOOR)
        try:
            return build(memory_limit=room), 0
        except MemoryLimitTooSmall as small:
            shortfall = 0 if budget.given is None else small.least - room
            return build(memory_limit=small.least), shortfall


def score_by_rungs(objective: Any, trial: optuna.Trial, point: Any) -> float:
    """Score a trial's point rung by rung for the study's pruner: each rung's value is reported
    (``step`` = its rows) and the trial is pruned when the pruner says so; the top rung's value
    is the trial's."""
    *lower, top = objective.rungs
    for rows in lower:
        value = objective.at_rows(rows).evaluate(point)
        trial.report(value, step=rows)
        if trial.should_prune():
            raise optuna.TrialPruned(f"pruned at {rows} rows")
    value = objective.at_rows(top).evaluate(point)
    trial.report(value, step=top)
    return value


#: Optuna's pruners a search with a fidelity may use (``--pruner``).
PRUNERS = ("successive-halving", "hyperband", "median", "none")


def make_pruner(name: str, fidelity: Fidelity, n_samples: int) -> optuna.pruners.BasePruner:
    """Optuna's pruner ``name`` set up for the rungs of ``fidelity`` (steps are row counts)."""
    rungs = fidelity.rungs(n_samples)
    if name == "successive-halving":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=fidelity.min_rows, reduction_factor=fidelity.eta
        )
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=fidelity.min_rows, max_resource=rungs[-1], reduction_factor=fidelity.eta
        )
    if name == "median":
        return optuna.pruners.MedianPruner()
    if name == "none":
        return optuna.pruners.NopPruner()
    raise ValueError(f"pruner must be one of {', '.join(PRUNERS)}, got {name!r}")
