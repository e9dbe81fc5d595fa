"""The paper's experiments: data, evaluation protocol, grid exploration and the reproduction report.

:func:`optuna_boxcox.reproduce.reproduce` composes these; they are public for people who want one
piece (a fold of the protocol, a grid-exploration heatmap, the published numbers).
"""

from __future__ import annotations

from optuna_boxcox.experiments._data import SYNTHETIC
from optuna_boxcox.experiments._data import paper_features
from optuna_boxcox.experiments._data import synthetic
from optuna_boxcox.experiments._grid import GRID
from optuna_boxcox.experiments._grid import GridSummary
from optuna_boxcox.experiments._grid import accuracy_heatmap
from optuna_boxcox.experiments._grid import explore_cell
from optuna_boxcox.experiments._grid import figure2
from optuna_boxcox.experiments._grid import summarize
from optuna_boxcox.experiments._paper import TABLE_TARGETS
from optuna_boxcox.experiments._paper import paper_tables
from optuna_boxcox.experiments._protocol import ROWS
from optuna_boxcox.experiments._protocol import FoldResult
from optuna_boxcox.experiments._protocol import Protocol
from optuna_boxcox.experiments._protocol import Row
from optuna_boxcox.experiments._protocol import evaluate_fold
from optuna_boxcox.experiments._protocol import search
from optuna_boxcox.experiments._report import Cell
from optuna_boxcox.experiments._report import Reproduction

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
