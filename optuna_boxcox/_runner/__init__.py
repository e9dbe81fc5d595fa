"""The runner: :func:`optimize`, the plugin's ``study.optimize``.

- ``_optimize``: :func:`optimize` — batch by batch for the paper's samplers, else ``study.optimize``;
- ``_batched``: the batched loop over a sampler's :class:`~optuna_boxcox.samplers.PlanRun`;
- ``_pool``: the processes that score a batch's points (scoring only);
- ``_writers``: the trial-writer protocol, written by a thread or by a worker process;
- ``_cooperation``: sharing a plan's positions with other batched workers on the same study;
- ``_trials``: the run's trials in the forms the writers and callbacks take;
- ``_memory``: Optuna's samplers on an in-memory copy of a study, written back in chunks.
"""

from __future__ import annotations

from optuna_boxcox._runner._optimize import optimize
from optuna_boxcox._runner._trials import RunStats

__all__ = ["RunStats", "optimize"]
