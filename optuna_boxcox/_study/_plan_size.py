"""How large a search's plan is, told before its first trial: trials, points per sweep, and what
they write. A plan sampler tells its own (``PlanSampler.plan_size``); the lifecycle's plan asks it
once, before the first trial: ``fidelity="auto"`` prices it, the objective skips a fast scorer's
set-up for a one-trial plan, and ``search`` refuses one too large to write.

Every trial records one parameter per λ (and per transform or setting searched), about
:data:`BYTES_PER_PARAM` in a study database and as much again while a process holds the study's
trials. A plan of many trials on wide data — 10,000 columns, the coordinate search's
E · p · L = 440,000 trials — would write hundreds of gigabytes and slow down as it grows, so it is
refused in one line, before anything is computed, unless asked for as it is.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from optuna_boxcox._study._space import LambdaSpace

#: Bytes a trial's parameter takes in a SQLite study (its value, name and distribution), read
#: off a wide study's database file.
BYTES_PER_PARAM = 160
#: More trials than this is refused without confirmation (the paper's largest plan, 4 epochs of
#: 11 points on sonar's 60 features, is 2,640).
MAX_TRIALS = 100_000
#: More study data than this is refused without confirmation.
MAX_BYTES = 2 * 1000**3


@dataclass(frozen=True)
class PlanSize:
    """The trials a search plans and the bytes they write into its study.

    Attributes:
        trials: The trials it plans (None: neither the sampler nor the caller says).
        params: Parameters per trial.
        batch: Points per sweep, for a grid sampler (its ``grid_size``), else None.
    """

    trials: int | None
    params: int
    batch: int | None = None

    def cut(self, n_trials: int | None) -> PlanSize:
        """This plan run for at most ``n_trials`` trials (a plan that does not know its size runs
        ``n_trials``)."""
        if n_trials is None:
            return self
        trials = n_trials if self.trials is None else min(self.trials, n_trials)
        return PlanSize(trials, self.params, self.batch)

    @property
    def one_trial(self) -> bool:
        """The plan is a single trial (the MLE's): not worth a fast scorer's set-up."""
        return self.trials == 1

    @property
    def bytes(self) -> int:
        return (self.trials or 0) * self.params * BYTES_PER_PARAM

    @property
    def too_large(self) -> bool:
        return (self.trials or 0) > MAX_TRIALS or self.bytes > MAX_BYTES

    def refusal(self, fewer: str, confirm: str) -> str:
        """One line: how large, and how to proceed (``fewer``: how to search fewer trials;
        ``confirm``: how to run it as it is — the caller's words, a flag or a keyword)."""
        trials = self.trials or 0
        return (
            f"the search plans {trials:,} trials of {self.params:,} parameters each, about "
            f"{_size(self.bytes)} written to the study (more than {MAX_TRIALS:,} trials or "
            f"{_size(MAX_BYTES)}); search fewer — {fewer} — or pass {confirm} to run it as it is"
        )


class SizedPlan(abc.ABC):
    """A sampler that tells the size of its plan before it runs (the paper's samplers, through
    ``PlanSampler``): what a search asks, once, instead of guessing at a sampler's attributes."""

    @abc.abstractmethod
    def plan_size(self, space: LambdaSpace) -> PlanSize:
        """The size of the plan on ``space``."""


def plan_size(sampler: Any, space: LambdaSpace, n_trials: int | None = None) -> PlanSize:
    """The plan of ``sampler`` on ``space``, cut at ``n_trials`` when given: a sampler's own
    (:class:`SizedPlan`); any other (Optuna's) runs ``n_trials``."""
    if isinstance(sampler, SizedPlan):
        return sampler.plan_size(space).cut(n_trials)
    return PlanSize(n_trials, space.dim)


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit in ("B", "GB") and n >= 100 else f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:,.0f} TB"  # pragma: no cover
