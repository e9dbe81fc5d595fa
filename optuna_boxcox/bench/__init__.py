"""Benchmarks, each measured side by side in one run (``optuna-boxcox bench``).

- :mod:`.end_to_end`: whole commands and study scripts as a user runs them, as processes: the
  paper's plain loop as a script against ``optuna-boxcox search``, a study script with
  :func:`optuna_boxcox.optimize` against the same script with ``study.optimize``.
- :mod:`.components`: inside one process, (a) the paper's plain loop, (b) ``study.optimize`` and
  (c) the batched path on the first training fold of the paper's protocol, with one and two jobs.

The scripts the end-to-end section runs are :mod:`.plain_loop` and :mod:`.study_script`.
"""

from __future__ import annotations

from optuna_boxcox.bench.components import bench_classifier
from optuna_boxcox.bench.components import format_rows
from optuna_boxcox.bench.components import parallel_capacity
from optuna_boxcox.bench.components import peak_rss_of_search
from optuna_boxcox.bench.components import plain_loop_score
from optuna_boxcox.bench.components import training_fold

__all__ = [
    "bench_classifier",
    "format_rows",
    "parallel_capacity",
    "peak_rss_of_search",
    "plain_loop_score",
    "training_fold",
]
