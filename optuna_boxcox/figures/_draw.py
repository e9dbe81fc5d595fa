"""Drawing: every builder turns what a study holds (trials, a result, an objective) into a
plotly figure; what must be scored for a figure is asked of :mod:`._scores`."""

from __future__ import annotations

from collections.abc import Sequence
import functools
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial
from optuna.trial import TrialState
from plotly.colors import qualitative
import plotly.graph_objects as go
import plotly.io as pio

from optuna_boxcox._math import _numerics
from optuna_boxcox._study._space import DEFAULT_GRID_RANGE
from optuna_boxcox._system._markup import plotly_text
from optuna_boxcox.figures._scores import grid_scores
from optuna_boxcox.figures._scores import spherical_curves

if TYPE_CHECKING:
    from collections.abc import Mapping

    from optuna_boxcox._objective._objective import BoxCoxObjective

    #: One search's finished trials: the study, or the trials themselves.
    Run = optuna.Study | Sequence[FrozenTrial]


#: Names of the classifier-free criteria as the figures show them.
CRITERION_LABELS = {"ml": "ML", "pcml": "PCML", "fisher": "Fisher", "1nn-mm": "1NN-MM"}
#: The spherical sweep of :func:`criteria_sweep`: every λ = c for c in this grid.
DEFAULT_SWEEP = np.linspace(-5.0, 5.0, 41)
#: Points of each curve of :func:`transform_curves`.
_CURVE_POINTS = 101
#: Decimals kept of each curve of :func:`transform_curves`: 1e-4 of the plot's height is far below
#: a pixel, and every digit more is stored in the study for nothing.
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


@functools.cache
def _layout() -> dict[str, Any]:
    """The layout every figure shares; built on the first figure, not on import (0.3 s: every
    ``BoxCoxClassifier`` fit imports this module, few draw)."""
    return {"template": _white_template(), "margin": {"l": 60, "r": 20, "t": 60, "b": 50}}


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
    """``max |normalise(curve) − normalise(score)|`` of every curve: 0 when it has the score's
    shape."""
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
    values = [t.value for t in finished_trials(run)]
    if not values:
        return np.empty(0)
    best = np.minimum if minimises(direction) else np.maximum
    return best.accumulate(np.asarray(values, dtype=np.float64))


def finished_trials(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """The complete trials of ``trials`` in the order they were numbered."""
    return sorted((t for t in trials if t.state == TrialState.COMPLETE), key=lambda t: t.number)


def minimises(direction: StudyDirection | str | None) -> bool:
    return direction in (StudyDirection.MINIMIZE, "minimize")


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
            {
                "x": x,
                "y": y,
                "mode": "lines+markers",
                "line": {"shape": "hv"},
                "name": plotly_text(name),
            }
        )
        moved.append(any(v != values[0] for v in values))
    figure = go.Figure(_feature_lines(lines, moved))
    x_title = "sweep" if start is None else "sweep (0: the start)"
    figure.update_layout(title=title, xaxis_title=x_title, yaxis_title="λ", **_layout())
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
        figure.add_trace(
            go.Scatter(x=x, y=y, mode="lines", line_shape="hv", name=plotly_text(name))
        )
    default = "Best score so far" + (" (mean over seeds)" if several else "")
    figure.update_layout(
        title=title or default,
        xaxis_title="trials finished",
        yaxis_title="best score",
        **_layout(),
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
    scores = grid_scores(objective, grid)
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
        trials = finished_trials(trials)
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
                name=plotly_text(label),
            )
        )
    figure.update_layout(
        title=title,
        xaxis_title=f"λ of {plotly_text(names[0])}",
        yaxis_title=f"λ of {plotly_text(names[1])}",
        legend={"orientation": "h", "y": -0.2},
        **_layout(),
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
                "name": f"{plotly_text(name)} ({label})",
            }
        )
        moved.append(lam != float(start[name]) or transforms[j] != objective.method)
    figure = go.Figure(_feature_lines(lines, moved))
    x_title = "z (feature scaled into [1, 2])" if objective.method == "box-cox" else "x"
    figure.update_layout(
        title=title, xaxis_title=x_title, yaxis_title="transformed, min-max", **_layout()
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
        **_layout(),
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
    finished = [t for t in finished_trials(trials) if t.values and len(t.values) == 2]
    front = pareto_optimal(finished, directions)
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
        xaxis_title=f"{plotly_text(kept_name)} (features kept)",
        yaxis_title=plotly_text(score_name),
        legend={"orientation": "h", "y": -0.2},
        **_layout(),
    )
    return figure


def pareto_optimal(
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
