"""The rungs of a search with rows as the fidelity: one objective per row count, each on a
stratified subset of the rows, transformed as all rows are."""

from __future__ import annotations

from collections.abc import Callable
import dataclasses
from typing import Any

import numpy as np
import optuna

from optuna_boxcox._objective._auto import Pricing
from optuna_boxcox._objective._auto import choose_auto
from optuna_boxcox._objective._evaluators import GENERIC_COST
from optuna_boxcox._objective._evaluators import evaluators_of
from optuna_boxcox._study._fidelity import AutoFidelity
from optuna_boxcox._study._fidelity import Fidelity
from optuna_boxcox._study._fidelity import FidelityChoice
from optuna_boxcox._study._fidelity import is_int
from optuna_boxcox._study._fidelity import resolve_request
from optuna_boxcox._study._fidelity import score_folds


class Rungs:
    """An objective's fidelity and the objectives of its rungs.

    The fidelity is chosen once: given, read from the study the objective registers on (a
    resumed search, another worker), or — for ``auto`` with nothing recorded — priced then.
    Each rung's objective is built on first use and kept (:meth:`prepare` builds them all).

    Args:
        request: The objective's ``fidelity=`` argument.
        owner: The objective on all rows.
        build: ``build(rows)``: a new objective like the owner on a stratified subset of ``rows``.
    """

    def __init__(self, request: Any, owner: Any, build: Callable[[int], Any]) -> None:
        self.request = resolve_request(request)
        self._auto = isinstance(self.request, AutoFidelity)
        self._owner, self._build = owner, build
        self._objectives: dict[int, Any] = {owner.n_samples: owner}
        if isinstance(self.request, FidelityChoice) and self.request.fidelity is None:
            return
        if owner.subsample is not None:
            raise ValueError(
                "fidelity and subsample both score on fewer rows: pass one of them (a fidelity's "
                "top rung may be capped with Fidelity(top_rows=...))"
            )
        if len(owner.objectives) > 1:
            raise ValueError("fidelity needs a single objective: Optuna prunes only those")
        if isinstance(self.request, FidelityChoice):
            self._check(self.request.fidelity)

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
    def choice(self) -> FidelityChoice:
        """What was chosen (``auto`` prices now if it has not yet)."""
        return self.choose()

    def adopt(self, recorded: Any) -> bool:
        """Take the choice in ``recorded`` (a study's spec record) when it was ``auto``'s and this
        request is ``auto`` too — even over one priced here before: the study's rungs are the
        search's. True when adopted."""
        found = (recorded or {}).get("fidelity_choice")
        if self._auto and found is not None and found.get("requested") == "auto":
            self.request = FidelityChoice.from_attrs(found)
            self._forget_others()
            return True
        return False

    def choose(self, sampler: Any = None, recorded: Any = None) -> FidelityChoice:
        """Settle ``auto``: adopt the choice in ``recorded`` (:meth:`adopt`), else price it, with
        the plan size of ``sampler`` when it says."""
        if self.adopt(recorded):
            return self.request
        if isinstance(self.request, AutoFidelity):
            owner = self._owner
            self.request = choose_auto(
                self.request, self.pricing(), owner.n_samples, owner.space.dim, sampler
            )
            self._forget_others()
        return self.request

    def pricing(self) -> Pricing:
        """What ``auto`` prices the search from: the classifier's cost class in the evaluators'
        registry (else the generic one), the data's shape and the inner folds."""
        owner = self._owner
        cost_class = evaluators_of(owner.estimator).cost or GENERIC_COST
        return Pricing(
            cost_class,
            features=len(owner.param_names),
            classes=len(np.unique(owner.y)),
            folds=score_folds(owner.cv),
            classifier=type(owner.estimator).__name__,
        )

    def _forget_others(self) -> None:
        """Drop the objectives of rows that are not rungs (one built before the choice)."""
        rungs = set(self.rows) | {self._owner.n_samples}
        for rows in [r for r in self._objectives if r not in rungs]:
            del self._objectives[rows]
            self._owner.budget.release(f"rung of {rows} rows")

    def recorded_in(self, spec: Any) -> Any:
        """``spec`` with the choice recorded once it is made (``auto`` before it: as it is)."""
        if isinstance(self.request, AutoFidelity):
            return spec
        return dataclasses.replace(spec, fidelity_choice=self.request.to_attrs())

    @property
    def rows(self) -> tuple[int, ...]:
        fidelity = self.choice.fidelity
        return () if fidelity is None else fidelity.rungs(self._owner.n_samples)

    def at(self, rows: int) -> Any:
        """The objective on ``rows`` rows, built on first use; the rung reserves what it plans
        to allocate in the owner's memory budget (the rungs share it)."""
        if not is_int(rows) or not 2 <= rows <= self._owner.n_samples:
            raise ValueError(
                f"rows must be an int from 2 to the {self._owner.n_samples} rows of X, got {rows!r}"
            )
        found = self._objectives.get(int(rows))
        if found is None:
            found = self._objectives[int(rows)] = self._build(int(rows))
            self._owner.budget.reserve(f"rung of {rows} rows", found.budget.used)
        return found

    def prepare(self) -> None:
        for rows in self.rows:
            self.at(rows)


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
