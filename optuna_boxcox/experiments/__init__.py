"""The applications that run many studies, apart from the library they are built on.

- ``compare`` (:func:`~optuna_boxcox.experiments.compare.compare`: samplers on one data set, with
  ``_problems``, ``_compare_runs``, ``_compare_table`` and the peer transforms ``_peers``),
  ``benchmark`` (methods over many data sets, with ``_benchmark_data``), ``meta`` (which settings of the iterative
  grid search matter), ``reproduce`` (the paper's tables);
- the paper's experiments they compose: data (``_data``), evaluation protocol (``_protocol``), grid
  exploration (``_grid``), the published numbers (``_paper``), the reproduction's units and
  report (``_record``, ``_report``, ``_tables``), and the names the command line offers (``_names``).

:func:`optuna_boxcox.experiments.reproduce.reproduce` composes the paper's pieces; they are public
for people who want one piece (a fold of the protocol, a grid-exploration heatmap, the published
numbers).
"""

from __future__ import annotations

from optuna_boxcox._lazy import lazy_getattr

#: Public name → the module that defines it (imported on first use).
_EXPORTS = {
    "SYNTHETIC": "optuna_boxcox.experiments._data",
    "paper_features": "optuna_boxcox.experiments._data",
    "synthetic": "optuna_boxcox.experiments._data",
    "GRID": "optuna_boxcox.experiments._grid",
    "GridSummary": "optuna_boxcox.experiments._grid",
    "accuracy_heatmap": "optuna_boxcox.experiments._grid",
    "explore_cell": "optuna_boxcox.experiments._grid",
    "figure2": "optuna_boxcox.experiments._grid",
    "summarize": "optuna_boxcox.experiments._grid",
    "TABLE_TARGETS": "optuna_boxcox.experiments._paper",
    "paper_tables": "optuna_boxcox.experiments._paper",
    "ROWS": "optuna_boxcox.experiments._protocol",
    "FoldResult": "optuna_boxcox.experiments._protocol",
    "Protocol": "optuna_boxcox.experiments._protocol",
    "Row": "optuna_boxcox.experiments._protocol",
    "evaluate_fold": "optuna_boxcox.experiments._protocol",
    "search": "optuna_boxcox.experiments._protocol",
    "Cell": "optuna_boxcox.experiments._report",
    "Reproduction": "optuna_boxcox.experiments._report",
}

__all__ = [
    "GRID",
    "ROWS",
    "SYNTHETIC",
    "TABLE_TARGETS",
    "Cell",
    "FoldResult",
    "GridSummary",
    "Protocol",
    "Reproduction",
    "Row",
    "accuracy_heatmap",
    "evaluate_fold",
    "explore_cell",
    "figure2",
    "paper_features",
    "paper_tables",
    "search",
    "summarize",
    "synthetic",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
