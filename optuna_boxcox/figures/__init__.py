"""Figures of a Box-Cox λ search, for optuna-dashboard, HTML and PNG.

Every builder is a pure function of a finished study or its trials, a
:class:`~optuna_boxcox.samplers.SearchResult` or a :class:`~optuna_boxcox.BoxCoxObjective`, and
returns a :class:`plotly.graph_objects.Figure`:

- :func:`lambda_trajectory`: each feature's λ in Λopt after every sweep of the search;
- :func:`best_so_far`: the best score against the number of finished trials, for one study (or its
  trials) or several overlaid (a mean over seeds when a name maps to several);
- :func:`grid_heatmap`: for two features, the score over an L × L grid of (λ1, λ2) with the points
  the search evaluated and the optima of other searches marked (the paper's grid exploration);
- :func:`transform_curves`: each feature's Box-Cox curve at its λ over z ∈ [1, 2], min-max scaled;
- :func:`criteria_sweep`: along the spherical sweep λ = c for every feature, the classifier's score
  beside the classifier-free criteria of Bicego & Baldo (2016, Figures 4-6), all scaled to [0, 1],
  with each criterion's L∞ distance to the score;
- :func:`pareto_front`: a two-objective search's trials by features kept and score, its Pareto front
  joined (``BoxCoxObjective(objectives=("score", "n_features"))``).

:func:`search_figures` chooses the figures for one search and writes a note about it; a caller
that holds the search's trials and result passes them, and nothing is read from the storage (on a
study of 20,000 trials, the first read through Optuna takes over a minute);
:func:`attach_figures` stores both in the study, where optuna-dashboard shows them on the study's
page; :func:`write_figures` writes them as files.

- ``_draw``: the builders, which only draw;
- ``_scores``: what a figure needs scored that the study does not hold (asked of the objective);
- ``_search``: one search's figures and note, and where they go.
"""

from __future__ import annotations

from optuna_boxcox.figures._draw import CRITERION_LABELS
from optuna_boxcox.figures._draw import DEFAULT_SWEEP
from optuna_boxcox.figures._draw import best_so_far
from optuna_boxcox.figures._draw import best_so_far_curve
from optuna_boxcox.figures._draw import criteria_sweep
from optuna_boxcox.figures._draw import grid_heatmap
from optuna_boxcox.figures._draw import lambda_trajectory
from optuna_boxcox.figures._draw import linf_distances
from optuna_boxcox.figures._draw import normalise
from optuna_boxcox.figures._draw import pareto_front
from optuna_boxcox.figures._draw import transform_curves
from optuna_boxcox.figures._scores import spherical_curves
from optuna_boxcox.figures._search import attach_figures
from optuna_boxcox.figures._search import pareto_note
from optuna_boxcox.figures._search import search_figures
from optuna_boxcox.figures._search import search_note
from optuna_boxcox.figures._search import write_figures

__all__ = [
    "CRITERION_LABELS",
    "DEFAULT_SWEEP",
    "attach_figures",
    "best_so_far",
    "best_so_far_curve",
    "criteria_sweep",
    "grid_heatmap",
    "lambda_trajectory",
    "linf_distances",
    "normalise",
    "pareto_front",
    "pareto_note",
    "search_figures",
    "search_note",
    "spherical_curves",
    "transform_curves",
    "write_figures",
]
