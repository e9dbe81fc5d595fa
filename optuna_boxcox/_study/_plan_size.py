"""How large a search's plan is, told before its first trial: trials, and what they write.

Every trial records one parameter per λ (and per transform or setting searched), about
:data:`BYTES_PER_PARAM` in a study database and as much again while a process holds the study's
trials. A plan of many trials on wide data — 10,000 columns, the coordinate search's
E · p · L = 440,000 trials — would write hundreds of gigabytes and slow down as it grows, so it is
refused in one line, before anything is computed, unless asked for as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """The trials a search plans and the bytes they write into its study."""

    trials: int
    params: int

    @property
    def bytes(self) -> int:
        return self.trials * self.params * BYTES_PER_PARAM

    @property
    def too_large(self) -> bool:
        return self.trials > MAX_TRIALS or self.bytes > MAX_BYTES

    def refusal(self, confirm: str) -> str:
        """One line: how large, and how to proceed (``confirm`` names the confirmation)."""
        return (
            f"the search plans {self.trials:,} trials of {self.params:,} parameters each, about "
            f"{_size(self.bytes)} written to the study (more than {MAX_TRIALS:,} trials or "
            f"{_size(MAX_BYTES)}); search fewer — --features N, --grid-size, --epochs, "
            f"--n-trials N or --sampler spherical — or pass {confirm} to run it as it is"
        )


def plan_size(sampler: object, n_params: int, n_trials: int | None) -> PlanSize:
    """The plan of ``sampler`` on ``n_params`` parameters, cut at ``n_trials`` when given (a
    sampler without a plan of its own runs ``n_trials``)."""
    try:
        planned = sampler.budget(n_params)  # type: ignore[attr-defined]
    except (AttributeError, NotImplementedError):
        planned = None
    if planned is None:
        planned = n_trials or 0
    elif n_trials is not None:
        planned = min(planned, n_trials)
    return PlanSize(int(planned), int(n_params))


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit in ("B", "GB") and n >= 100 else f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:,.0f} TB"  # pragma: no cover
