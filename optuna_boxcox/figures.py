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
"""

from __future__ import annotations

from collections.abc import Sequence
import functools
from pathlib import Path
import tempfile
from typing import TYPE_CHECKING
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
import plotly.graph_objects as go
import plotly.io as pio

from optuna_boxcox._math import _criteria
from optuna_boxcox._math import _numerics
from optuna_boxcox._study._space import DEFAULT_GRID_RANGE
from optuna_boxcox._study._spec import SPEC_ATTR
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers._plan import SAMPLER_ATTR

if TYPE_CHECKING:
    from collections.abc import Mapping

    from optuna.artifacts._protocol import ArtifactStore
    from optuna.samplers import BaseSampler

    from optuna_boxcox._objective._objective import BoxCoxObjective
    from optuna_boxcox.samplers import SearchResult

    #: One search's finished trials: the study, or the trials themselves.
    Run = optuna.Study | Sequence[FrozenTrial]

#: Names of the classifier-free criteria as the figures show them.
CRITERION_LABELS = {"ml": "ML", "pcml": "PCML", "fisher": "Fisher", "1nn-mm": "1NN-MM"}
#: The spherical sweep of :func:`criteria_sweep`: every λ = c for c in this grid.
DEFAULT_SWEEP = np.linspace(-5.0, 5.0, 41)
#: Points of each curve of :func:`transform_curves`.
_CURVE_POINTS = 101
#: Decimals kept of each curve of :func:`transform_curves`: 1e-4 of the plot's height is far below
#: a pixel, and with every digit and its x values the 60 curves of sonar took 170 kB of the study.
_CURVE_DECIMALS = 4


def _white_template() -> go.layout.Template:
    """Plotly's ``plotly_white`` as far as these figures use it: the same pictures, 0.9 kB instead
    of 7 kB in every figure stored in the study (the rest styles polar, 3-D, geographic axes and
    other trace types).
    """
    white = pio.templates["plotly_white"]
    used = ("autotypenumbers", "colorway", "font", "hoverlabel", "hovermode", "paper_bgcolor")
    used += ("plot_bgcolor", "title", "xaxis", "yaxis")
    return go.layout.Template(
        layout={key: white.layout[key] for key in used},
        data={
            "scatter": white.data.scatter,
            "heatmap": [{"colorbar": white.data.heatmap[0].colorbar}],
        },
    )


_LAYOUT = {"template": _white_template(), "margin": {"l": 60, "r": 20, "t": 60, "b": 50}}
#: Features whose λ did not move: grey and faint beneath the others, one legend entry for all.
_UNCHANGED = {"legendgroup": "unchanged", "opacity": 0.5}
_UNCHANGED_LINE = {"color": "#8C8C8C", "width": 1}
#: Line dashes, for when more features moved than the palette has colours.
_DASHES = ("solid", "dash", "dot", "dashdot")
#: Least CIE76 colour difference ΔE between two colours of the palette.
_MIN_COLOUR_DIFFERENCE = 12.0


# -- numerics shared by the builders -----------------------------------------------------------
def normalise(values: Sequence[float]) -> np.ndarray:
    """Min-max scale to [0, 1]; a constant curve becomes all zeros (it carries no shape)."""
    v = np.asarray(values, dtype=np.float64)
    low, high = np.min(v), np.max(v)
    if not high > low:
        return np.zeros_like(v)
    return (v - low) / (high - low)


def linf_distances(
    score: Sequence[float], curves: Mapping[str, Sequence[float]]
) -> dict[str, float]:
    """max |normalise(curve) − normalise(score)| of every curve: 0 when it has the score's shape."""
    reference = normalise(score)
    return {name: float(np.max(np.abs(normalise(c) - reference))) for name, c in curves.items()}


def _steps(x: Sequence[float], y: Sequence[float]) -> tuple[list[float], list[float]]:
    """The corners of a step curve drawn with ``line_shape="hv"``: the first and last points and every
    change. The figure is unchanged and its JSON, stored in the study, stays small for long searches.
    """
    keep = [i for i in range(len(y)) if i in (0, len(y) - 1) or y[i] != y[i - 1]]
    return [x[i] for i in keep], [float(y[i]) for i in keep]


def best_so_far_curve(
    run: optuna.Study | Sequence[FrozenTrial], direction: StudyDirection | str | None = None
) -> np.ndarray:
    """Best value among the first k finished trials, for k = 1 … n (in the study's direction).

    ``run`` is a study, read once, or its trials (any states, in any order); ``direction`` is that
    of trials (default: maximize) and overrides a study's own.
    """
    if isinstance(run, optuna.Study):
        direction = run.direction if direction is None else direction
        run = run.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    values = [t.value for t in _finished_trials(run)]
    if not values:
        return np.empty(0)
    best = np.minimum if _minimises(direction) else np.maximum
    return best.accumulate(np.asarray(values, dtype=np.float64))


def _finished_trials(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """The complete trials of ``trials`` in the order they were numbered."""
    return sorted((t for t in trials if t.state == TrialState.COMPLETE), key=lambda t: t.number)


def _minimises(direction: StudyDirection | str | None) -> bool:
    return direction in (StudyDirection.MINIMIZE, "minimize")


def spherical_curves(
    objective: BoxCoxObjective, c: Sequence[float], criteria: Sequence[str]
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The objective's score and each criterion at every point λ = (c, …, c) of the spherical sweep."""
    unknown = [name for name in criteria if name not in _criteria.CRITERIA]
    if unknown:
        raise ValueError(f"unknown criteria {unknown}; choose from {list(_criteria.CRITERIA)}")
    p = objective.space.dim
    score = np.array([objective.evaluate(np.full(p, float(ci))) for ci in c])
    curves = {name: np.empty(len(score)) for name in criteria}
    for i, ci in enumerate(c):
        lambdas = np.full(p, float(ci))
        for name in criteria:
            curves[name][i] = _criterion_value(objective, name, lambdas)
    return score, curves


def _criterion_value(objective: BoxCoxObjective, name: str, lambdas: np.ndarray) -> float:
    criterion = _criteria.CRITERIA[name]
    labels = (objective.y,) if criterion.needs_labels else ()
    if criterion.data == "scaled":
        return float(criterion.function(objective.transform(lambdas), *labels))
    transformed = _numerics.power_columns(objective.values, lambdas, objective.method)
    return float(
        criterion.function(
            objective.values, transformed, lambdas, *labels, method=objective.method
        )
    )


# -- lines of many features ----------------------------------------------------------------------
@functools.cache
def _feature_palette() -> tuple[str, ...]:
    """Colours for the lines of the features that moved, in the order they are handed out (61).

    With plotly's ten default colours, which repeat from the eleventh line on, thirty or sixty
    features could not be told apart. These are plotly's qualitative palettes (its default ten,
    D3, Dark24, Alphabet, Light24), without greys (the colour of unchanged features), colours too
    pale to see on white, and any colour closer than ΔE = 12 (CIE76) to one kept before it. Each
    next colour is the one farthest from those before it, so that a few lines differ most: the
    first 20 are at least ΔE = 33 apart, the first 30 at least 25.
    """
    from plotly.colors import qualitative

    candidates = list(
        dict.fromkeys(
            colour.upper()
            for palette in ("Plotly", "D3", "Dark24", "Alphabet", "Light24")
            for colour in getattr(qualitative, palette)
        )
    )
    lab = _cielab(candidates)
    chroma, lightness = np.hypot(lab[:, 1], lab[:, 2]), lab[:, 0]
    kept: list[int] = []
    for i in np.flatnonzero((chroma >= 15) & (lightness <= 85)):
        if not kept or np.linalg.norm(lab[kept] - lab[i], axis=1).min() >= _MIN_COLOUR_DIFFERENCE:
            kept.append(i)
    lab = lab[kept]
    order, nearest = [0], np.linalg.norm(lab - lab[0], axis=1)
    while len(order) < len(kept):
        order.append(int(np.argmax(nearest)))
        nearest = np.minimum(nearest, np.linalg.norm(lab - lab[order[-1]], axis=1))
    return tuple(candidates[kept[i]] for i in order)


def _cielab(colours: Sequence[str]) -> np.ndarray:
    """CIE L*a*b* (D65) of ``#RRGGBB`` colours, one row each."""
    rgb = np.array([[int(c[i : i + 2], 16) for i in (1, 3, 5)] for c in colours]) / 255.0
    linear = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    to_xyz = np.array(
        [[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]
    )
    xyz = linear @ to_xyz.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    return np.column_stack(
        [116 * f[:, 1] - 16, 500 * (f[:, 0] - f[:, 1]), 200 * (f[:, 1] - f[:, 2])]
    )


def _feature_lines(lines: Sequence[dict[str, Any]], moved: Sequence[bool]) -> list[go.Scatter]:
    """One line per feature (``go.Scatter`` arguments): those that moved in colours of their own,
    the others grey beneath them, shown and hidden together by one legend entry.
    """
    colours = _feature_palette()
    still = [line for line, m in zip(lines, moved) if not m]
    traces = [
        go.Scatter(
            {**line, "mode": "lines", "line": {**line.get("line", {}), **_UNCHANGED_LINE}},
            showlegend=False,
            **_UNCHANGED,
        )
        for line in still
    ]
    if still:
        label = f"{len(still)} feature{'s' if len(still) > 1 else ''} unchanged"
        traces.append(
            go.Scatter(
                x=[None], y=[None], mode="lines", line=_UNCHANGED_LINE, name=label, **_UNCHANGED
            )
        )
    changed = [line for line, m in zip(lines, moved) if m]
    for i, line in enumerate(changed):
        style = {
            "color": colours[i % len(colours)],
            "dash": _DASHES[i // len(colours) % len(_DASHES)],
        }
        traces.append(go.Scatter({**line, "line": {**line.get("line", {}), **style}}))
    return traces


# -- figure builders ----------------------------------------------------------------------------
def lambda_trajectory(
    history: Sequence[Mapping[str, float]],
    *,
    start: Mapping[str, float] | None = None,
    title: str = "λ of every feature after each sweep",
) -> go.Figure:
    """Each feature's λ in Λopt after every sweep (``SearchResult.history``), one line per feature.

    Lines are named after the features (the λ parameter names) in the order of the first entry.
    Each is a step line through the sweeps where that λ changed (and the first and last sweep).
    Given ``start``, the λ the search started from, the lines begin there at sweep 0.

    The features whose λ moved (from ``start``, or without it after the first sweep) have colours
    of their own; the others are grey and faint, toggled together by one legend entry.
    """
    if not history:
        raise ValueError("the search has no history yet: no sweep has finished")
    steps = list(history) if start is None else [start, *history]
    first = 1 if start is None else 0
    sweeps = list(range(first, first + len(steps)))
    lines, moved = [], []
    for name in history[0]:
        values = [float(step[name]) for step in steps]
        x, y = _steps(sweeps, values)
        lines.append(
            {"x": x, "y": y, "mode": "lines+markers", "line": {"shape": "hv"}, "name": name}
        )
        moved.append(any(v != values[0] for v in values))
    figure = go.Figure(_feature_lines(lines, moved))
    x_title = "sweep" if start is None else "sweep (0: the start)"
    figure.update_layout(title=title, xaxis_title=x_title, yaxis_title="λ", **_LAYOUT)
    return figure


def best_so_far(
    studies: Run | Mapping[str, Run | Sequence[Run]],
    *,
    direction: StudyDirection | str = "maximize",
    title: str | None = None,
) -> go.Figure:
    """Best score against finished trials; one line per study (or trial list), or per name.

    A run is a study, read once, or the trials of one search (``direction`` is theirs; a study
    has its own). A name mapped to several runs (one per seed) gets the mean of their curves, cut
    to the shortest, so samplers can be compared at the same budget. Each line is a step line
    through the trials that improved it (and the first and last).
    """
    if isinstance(studies, optuna.Study):
        studies = {studies.study_name: studies}
    elif _is_one_run(studies):
        studies = {"search": studies}
    figure = go.Figure()
    several = False
    for name, value in studies.items():
        runs = [value] if _is_one_run(value) else list(value)
        several |= len(runs) > 1
        curves = [
            best_so_far_curve(run, None if isinstance(run, optuna.Study) else direction)
            for run in runs
        ]
        length = min(len(c) for c in curves)
        mean = np.mean([c[:length] for c in curves], axis=0) if length else np.empty(0)
        x, y = _steps(list(range(1, length + 1)), mean.tolist())
        figure.add_trace(go.Scatter(x=x, y=y, mode="lines", line_shape="hv", name=name))
    default = "Best score so far" + (" (mean over seeds)" if several else "")
    figure.update_layout(
        title=title or default, xaxis_title="trials finished", yaxis_title="best score", **_LAYOUT
    )
    return figure


def _is_one_run(value: Any) -> bool:
    """A study or a sequence of trials (not a sequence of runs); an empty sequence is one run."""
    if isinstance(value, optuna.Study):
        return True
    return isinstance(value, Sequence) and (not value or isinstance(value[0], FrozenTrial))


def grid_heatmap(
    objective: BoxCoxObjective,
    *,
    grid: Sequence[float] | None = None,
    study: optuna.Study | None = None,
    trials: Sequence[FrozenTrial] | None = None,
    markers: Mapping[str, Mapping[str, float]] | None = None,
    title: str = "Score over the λ grid",
) -> go.Figure:
    """For two features: the objective's score at every (λ1, λ2) of ``grid`` × ``grid``.

    ``grid`` defaults to the paper's ``linspace(-5, 5, 11)``. The finished ``trials`` (or those of
    ``study``, read once) are drawn as small points, and each entry of ``markers`` (name → params,
    e.g. the optima of the spherical, diagonal and full-grid searches) as a labelled marker.
    """
    names = objective.param_names
    if len(names) != 2:
        raise ValueError(
            f"the grid heatmap needs exactly 2 features, the objective has {len(names)}"
        )
    grid = (
        np.linspace(*DEFAULT_GRID_RANGE, 11)
        if grid is None
        else np.asarray(grid, dtype=np.float64)
    )
    scores = [[objective.evaluate(np.array([l1, l2])) for l1 in grid] for l2 in grid]
    figure = go.Figure(
        go.Heatmap(
            x=grid.tolist(),
            y=grid.tolist(),
            z=scores,
            colorscale="Viridis",
            name="score",
            colorbar={"title": {"text": "score"}},
        )
    )
    if trials is None and study is not None:
        trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if trials is not None:
        trials = _finished_trials(trials)
        figure.add_trace(
            go.Scatter(
                x=[t.params[names[0]] for t in trials],
                y=[t.params[names[1]] for t in trials],
                text=[f"trial {t.number}: {t.value:.4f}" for t in trials],
                mode="markers",
                marker={"size": 5, "color": "white", "line": {"width": 1, "color": "black"}},
                name="evaluated",
            )
        )
    symbols = ["star", "diamond", "x", "square", "triangle-up", "cross"]
    for i, (label, params) in enumerate((markers or {}).items()):
        figure.add_trace(
            go.Scatter(
                x=[float(params[names[0]])],
                y=[float(params[names[1]])],
                mode="markers",
                marker={"size": 14, "symbol": symbols[i % len(symbols)], "line": {"width": 1}},
                name=label,
            )
        )
    figure.update_layout(
        title=title,
        xaxis_title=f"λ of {names[0]}",
        yaxis_title=f"λ of {names[1]}",
        legend={"orientation": "h", "y": -0.2},
        **_LAYOUT,
    )
    return figure


def transform_curves(
    objective: BoxCoxObjective,
    params: Mapping[str, float],
    *,
    start: Mapping[str, float] | None = None,
    title: str = "The transform of every feature (min-max scaled)",
) -> go.Figure:
    """Each feature's power transform at its λ, over the range of its input, scaled to [0, 1].

    For Box-Cox the input is the feature scaled into z ∈ [1, 2], the same for every feature, so the
    curves show side by side how strongly each λ bends its feature.

    The features whose λ differs from ``start``, where the search started (default: the
    objective's starting point, the Box-Cox MLE unless set), have colours of their own; the others
    are grey and faint, toggled together by one legend entry. Where the search chose each
    feature's transform, an identity feature is a straight line and dropped features (and those
    given the other power transform) are left out.
    """
    start = objective.initial_params if start is None else start
    transforms = objective.configuration(params).transforms
    lines, moved = [], []
    for j, name in enumerate(objective.param_names):
        if transforms[j] not in (objective.method, "identity"):
            continue  # dropped, or the other power transform (on other input than the x axis)
        column = objective.values[:, j]
        low, high = float(np.min(column)), float(np.max(column))
        z = np.linspace(low, high, _CURVE_POINTS)
        lam = float(params[name]) if transforms[j] == objective.method else 1.0
        curve = normalise(_numerics.power_column(z, lam, objective.method))
        label = f"λ = {lam:.3g}" if transforms[j] == objective.method else "identity"
        lines.append(
            {
                "x0": low,
                "dx": (high - low) / (_CURVE_POINTS - 1),
                "y": np.round(curve, _CURVE_DECIMALS).tolist(),
                "mode": "lines",
                "name": f"{name} ({label})",
            }
        )
        moved.append(lam != float(start[name]) or transforms[j] != objective.method)
    figure = go.Figure(_feature_lines(lines, moved))
    x_title = "z (feature scaled into [1, 2])" if objective.method == "box-cox" else "x"
    figure.update_layout(
        title=title, xaxis_title=x_title, yaxis_title="transformed, min-max", **_LAYOUT
    )
    return figure


def criteria_sweep(
    objective: BoxCoxObjective,
    *,
    c: Sequence[float] | None = None,
    criteria: Sequence[str] = ("ml", "pcml", "fisher"),
    title: str | None = None,
) -> go.Figure:
    """Why a criterion can stand in for the classifier (Bicego & Baldo 2016, Figures 4-6).

    Along the spherical sweep λ = (c, …, c) the objective's score and each criterion are min-max
    scaled to [0, 1]; the legend gives each criterion's L∞ distance to the score
    (:func:`linf_distances`), small when the criterion peaks where the classifier does.
    """
    c = DEFAULT_SWEEP if c is None else np.asarray(c, dtype=np.float64)
    score, curves = spherical_curves(objective, c, criteria)
    distances = linf_distances(score, curves)
    scoring = objective.scoring if isinstance(objective.scoring, str) else "score"
    figure = go.Figure(
        go.Scatter(
            x=c.tolist(),
            y=normalise(score).tolist(),
            mode="lines+markers",
            name=f"{scoring} of {type(objective.estimator).__name__}",
            line={"width": 3},
        )
    )
    for name, curve in curves.items():
        label = CRITERION_LABELS.get(name, name)
        figure.add_trace(
            go.Scatter(
                x=c.tolist(),
                y=normalise(curve).tolist(),
                mode="lines",
                line={"dash": "dot"},
                name=f"{label} (L∞ = {distances[name]:.3f})",
            )
        )
    summary = ", ".join(f"{CRITERION_LABELS.get(n, n)} {d:.3f}" for n, d in distances.items())
    figure.update_layout(
        title=title or f"Score and criteria along λ = c for every feature (L∞: {summary})",
        xaxis_title="c (every λ = c)",
        yaxis_title="min-max scaled",
        **_LAYOUT,
    )
    return figure


def pareto_front(
    run: Run,
    *,
    trials: Sequence[FrozenTrial] | None = None,
    title: str = "Pareto front: score against features kept",
) -> go.Figure:
    """A two-objective search (score, features kept) as the trade-off it found.

    Every finished trial is a faint point at (features kept, score); the Pareto-optimal ones are
    marked and joined by a step line. ``run`` is the study (its directions and metric names are
    read) or its trials (then maximise the first objective, minimise the second); ``trials``, if
    given, are the study's already read.
    """
    if isinstance(run, optuna.Study):
        directions = run.directions
        names = run.metric_names or ["score", "n_features"]
        if trials is None:
            trials = run.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    else:
        directions = [StudyDirection.MAXIMIZE, StudyDirection.MINIMIZE]
        names = ["score", "n_features"]
        trials = run
    finished = [t for t in _finished_trials(trials) if t.values and len(t.values) == 2]
    front = _pareto_optimal(finished, directions)
    score_name, kept_name = names[0], names[1]
    figure = go.Figure()
    figure.add_trace(
        go.Scatter(
            x=[t.values[1] for t in finished],
            y=[t.values[0] for t in finished],
            text=[f"trial {t.number}" for t in finished],
            mode="markers",
            marker={"size": 6, "color": "#8C8C8C", "opacity": 0.45},
            name="trials",
        )
    )
    front = sorted(front, key=lambda t: (t.values[1], t.values[0]))
    figure.add_trace(
        go.Scatter(
            x=[t.values[1] for t in front],
            y=[t.values[0] for t in front],
            text=[f"trial {t.number}: {t.values[0]:.4f} with {t.values[1]:g}" for t in front],
            mode="lines+markers",
            line={"shape": "hv", "color": "#D62728"},
            marker={"size": 9, "color": "#D62728"},
            name="Pareto front",
        )
    )
    figure.update_layout(
        title=title,
        xaxis_title=f"{kept_name} (features kept)",
        yaxis_title=score_name,
        legend={"orientation": "h", "y": -0.2},
        **_LAYOUT,
    )
    return figure


def _pareto_optimal(
    trials: Sequence[FrozenTrial], directions: Sequence[StudyDirection]
) -> list[FrozenTrial]:
    """The trials no other trial dominates (at least as good in both objectives, better in one);
    of trials with equal values, the first."""
    signs = np.array([-1.0 if d == StudyDirection.MAXIMIZE else 1.0 for d in directions])
    values = np.array([t.values for t in trials], dtype=np.float64).reshape(-1, 2) * signs
    front = []
    for i, v in enumerate(values):
        dominated = np.any(np.all(values <= v, axis=1) & np.any(values < v, axis=1))
        repeated = np.any(np.all(values[:i] == v, axis=1))
        if not dominated and not repeated:
            front.append(trials[i])
    return front


def pareto_note(
    study: optuna.Study,
    objective: BoxCoxObjective,
    *,
    trials: Sequence[FrozenTrial] | None = None,
    user_attrs: Mapping[str, Any] | None = None,
) -> str:
    """Markdown: the search (as :func:`search_note`) and its Pareto front, one row per point with
    the features it keeps."""
    if trials is None:
        trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    finished = [t for t in _finished_trials(trials) if t.values and len(t.values) == 2]
    head = search_note(
        study, objective, None, n_finished=len(finished), user_attrs=user_attrs
    ).rstrip("\n")
    front = sorted(
        _pareto_optimal(finished, study.directions), key=lambda t: (t.values[1], -t.values[0])
    )
    lines = [head, "", "| features kept | score | trial | kept |", "| ---: | ---: | ---: | --- |"]
    for t in front:
        transforms = objective.configuration(t.params).transforms
        kept = [n for n, tr in zip(objective.param_names, transforms) if tr != "drop"]
        shown = ", ".join(kept[:6]) + (f", … ({len(kept) - 6} more)" if len(kept) > 6 else "")
        lines.append(f"| {t.values[1]:g} | {t.values[0]:.4f} | {t.number} | {shown} |")
    return "\n".join(lines) + "\n"


# -- one search ---------------------------------------------------------------------------------
def search_figures(
    study: optuna.Study,
    objective: BoxCoxObjective,
    sampler: BaseSampler | None = None,
    *,
    result: SearchResult | None = None,
    trials: Sequence[FrozenTrial] | None = None,
    user_attrs: Mapping[str, Any] | None = None,
    base_score: float | None = None,
    mle_score: float | None = None,
) -> tuple[dict[str, go.Figure], str]:
    """The figures for one finished search, by dashboard id, and a Markdown note describing it.

    The λ trajectory when the search is one of the paper's (it has a history), the best-so-far
    curve, the transform at the chosen λ, and the grid heatmap when there are two features. The
    trajectory and the transform colour the features whose λ moved from the objective's starting
    point (:attr:`~optuna_boxcox.BoxCoxObjective.initial_params`). A two-objective study gets its
    Pareto front (:func:`pareto_front`, id ``"pareto-front"``) and :func:`pareto_note`.

    The search that wrote the study passes what it holds, and nothing is read from the storage:
    its ``result`` (:class:`~optuna_boxcox.samplers.SearchResult`), every trial it wrote
    (``trials``), the study's user attributes and the scores at λ = 1 and at the MLE, which are
    otherwise computed again. Anything not given is read from the study once: ``result`` from
    ``sampler`` when it is a :class:`~optuna_boxcox.samplers.PlanSampler`.
    """
    if trials is None:
        trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if len(study.directions) > 1:
        return {"pareto-front": pareto_front(study, trials=trials)}, pareto_note(
            study, objective, trials=trials, user_attrs=user_attrs
        )
    if result is None and isinstance(sampler, PlanSampler):
        result = sampler.result(study)
    finished = _finished_trials(trials)
    params, chosen_score = _chosen(result, finished, study.direction)
    figures: dict[str, go.Figure] = {}
    start = objective.initial_params
    if result is not None and result.history:
        # The λ only: transform choices and settings are no line on a λ axis.
        lambdas = objective.param_names
        figures["lambda-trajectory"] = lambda_trajectory(
            [{n: h[n] for n in lambdas} for h in result.history],
            start={n: start[n] for n in lambdas},
        )
    if finished:
        figures["best-so-far"] = best_so_far(
            {study.study_name: finished}, direction=study.direction
        )
    if params is not None:
        figures["transform"] = transform_curves(objective, params, start=start)
    if objective.space.dim == 2 and objective.space.lambdas_only:
        markers = {"MLE": objective.mle_params}
        if params is not None:
            markers["chosen Λ"] = params
        figures["grid"] = grid_heatmap(objective, trials=finished, markers=markers)
    note = search_note(
        study,
        objective,
        params,
        n_finished=len(finished),
        user_attrs=user_attrs,
        base_score=base_score,
        mle_score=mle_score,
        chosen_score=chosen_score,
    )
    return figures, note


def _chosen(
    result: SearchResult | None, finished: Sequence[FrozenTrial], direction: StudyDirection
) -> tuple[dict[str, float] | None, float | None]:
    """The chosen Λ and its score: the plan's Λopt, else the best finished trial's."""
    if result is not None and result.params is not None:
        return result.params, result.best_value
    if not finished:
        return None, None
    pick = min if _minimises(direction) else max
    best = pick(finished, key=lambda t: t.value)
    return best.params, best.value


def search_note(
    study: optuna.Study,
    objective: BoxCoxObjective,
    params: Mapping[str, float] | None,
    *,
    n_finished: int | None = None,
    user_attrs: Mapping[str, Any] | None = None,
    base_score: float | None = None,
    mle_score: float | None = None,
    chosen_score: float | None = None,
) -> str:
    """Markdown: data set, classifier, scoring, sampler and its settings, scores and the chosen λ.

    ``user_attrs`` are the study's (its search spec and the sampler's record), ``n_finished`` its
    finished trials; either is read from the study when not given. The scores at λ = 1, at the
    MLE and at ``params`` are computed with ``objective`` when not given.
    """
    if user_attrs is None:
        user_attrs = study.user_attrs
    if n_finished is None:
        n_finished = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    spec = SearchSpec.from_dict(user_attrs.get(SPEC_ATTR) or objective.spec.to_dict())
    sampler = user_attrs.get(SAMPLER_ATTR, {})
    source = spec.source or {}
    dataset = source.get("dataset") or (Path(source["csv"]).name if source.get("csv") else "—")
    classifier = spec.to_dict()["classifier"]
    scoring = spec.to_dict()["scoring"]
    cv = "resubstitution" if spec.cv is None else f"{spec.cv}-fold"
    n_samples = spec.n_samples or objective.n_samples
    settings = sampler.get("settings", {})
    lines = [
        f"## Box-Cox λ search `{study.study_name}`",
        "",
        "| | |",
        "| --- | --- |",
        f"| data set | {dataset} ({n_samples} samples × {len(objective.param_names)} features) |",
        f"| classifier | {classifier['name'] or classifier['class'].rsplit('.', 1)[-1]} |",
        f"| scoring | {scoring}, {cv} |",
        f"| sampler | {sampler.get('name', spec.sampler or '—')} |",
        f"| settings | {', '.join(f'{k} = {v}' for k, v in settings.items()) or '—'} |",
        f"| trials | {n_finished} finished |",
    ]
    if params is not None:
        base = (
            objective.evaluate(np.ones(len(objective.param_names)))
            if base_score is None
            else base_score
        )
        mle = objective.evaluate(objective.mle_lambdas) if mle_score is None else mle_score
        chosen = (
            objective.evaluate(objective.to_point(params))
            if chosen_score is None
            else chosen_score
        )
        lines.append(f"| score | {chosen:.4f} (λ = 1: {base:.4f}, λ_MLE: {mle:.4f}) |")
        configuration = objective.configuration(params)
        if configuration.settings:
            settings = ", ".join(f"{k} = {v}" for k, v in configuration.settings.items())
            lines.append(f"| classifier settings | {settings} |")
        mle_params = objective.mle_params
        if len(objective.transforms) > 1:
            lines += ["", "| feature | transform | λ | λ_MLE |", "| --- | --- | ---: | ---: |"]
            lines += [
                f"| {n} | {t} | {params[n]:.3f} | {mle_params[n]:.3f} |"
                for n, t in zip(objective.param_names, configuration.transforms)
            ]
        else:
            lines += ["", "| feature | λ | λ_MLE |", "| --- | ---: | ---: |"]
            lines += [
                f"| {n} | {params[n]:.3f} | {mle_params[n]:.3f} |" for n in objective.param_names
            ]
    return "\n".join(lines) + "\n"


# -- where figures go ---------------------------------------------------------------------------
def attach_figures(
    study: optuna.Study,
    figures: Mapping[str, go.Figure],
    note: str,
    artifact_store: ArtifactStore | None = None,
) -> None:
    """Store the figures and the note in the study; optuna-dashboard shows them on the study page.

    Each figure is saved with :func:`optuna_dashboard.save_plotly_graph_object` under its key as the
    graph id (letters, digits, ``-``, ``_``, ``:``, ``.``), so attaching again replaces it. With an
    ``artifact_store`` the figures are also uploaded as study artifacts (PNG when it can be
    rendered, otherwise self-contained HTML).
    """
    from optuna_dashboard import save_note
    from optuna_dashboard import save_plotly_graph_object

    for key, figure in figures.items():
        save_plotly_graph_object(study, figure, graph_object_id=key)
    save_note(study, note)
    if artifact_store is not None:
        from optuna.artifacts import upload_artifact

        with tempfile.TemporaryDirectory() as directory:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                paths = write_figures(figures, directory, formats=("png",))
            if not paths:
                paths = write_figures(figures, directory, formats=("html",), include_plotlyjs=True)
            for path in paths:
                upload_artifact(
                    artifact_store=artifact_store, file_path=str(path), study_or_trial=study
                )


def write_figures(
    figures: Mapping[str, go.Figure],
    directory: str | Path,
    formats: Sequence[str] = ("html", "png"),
    *,
    include_plotlyjs: bool | str = "directory",
) -> list[Path]:
    """Write every figure as ``<directory>/<key>.<format>``; returns the files written.

    HTML pages share one ``plotly.min.js`` in ``directory`` (they open without a network). PNG needs
    kaleido, which drives a Chrome or Chromium installed on the machine; without them the PNGs are
    left out with a :class:`RuntimeWarning` saying why, and the HTML is still written.
    """
    unknown = set(formats) - {"html", "png"}
    if unknown:
        raise ValueError(f"formats must be 'html' and/or 'png', got {sorted(unknown)}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    if "html" in formats:
        for key, figure in figures.items():
            path = directory / f"{key}.html"
            figure.write_html(str(path), include_plotlyjs=include_plotlyjs)
            written.append(path)
    if "png" in formats and figures:
        written += _write_pngs(figures, directory)
    return written


def _write_pngs(figures: Mapping[str, go.Figure], directory: Path) -> list[Path]:
    paths = [directory / f"{key}.png" for key in figures]
    try:
        # One browser for all figures: kaleido starts Chromium once per call.
        pio.write_images(list(figures.values()), [str(p) for p in paths], width=900, height=550)
    except Exception as error:  # kaleido missing, or no Chrome/Chromium for it to drive
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        reason = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
        warnings.warn(
            f"PNG figures not written ({reason}); PNG export needs "
            "`pip install kaleido` and a Chrome or Chromium (Debian: apt-get install chromium)",
            RuntimeWarning,
            stacklevel=3,
        )
        return []
    return paths


__all__ = [
    "attach_figures",
    "best_so_far",
    "best_so_far_curve",
    "criteria_sweep",
    "grid_heatmap",
    "lambda_trajectory",
    "linf_distances",
    "normalise",
    "search_figures",
    "search_note",
    "spherical_curves",
    "transform_curves",
    "write_figures",
]
