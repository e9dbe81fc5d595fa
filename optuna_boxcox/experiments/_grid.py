"""Grid exploration (the paper's Algorithm 1, Figure 2, Tables 2 and 3).

For a 2-D data set: the features are range-standardised into [1, 2] and Box-Cox transformed with
Λ = (λ1, λ2) for every point of ``linspace(-5, 5, 11)²`` — on the whole data set, before any split,
as Algorithm 1 and the authors' script do — and each of the 121 transformed data sets is scored by the
outer cross-validation (StandardScaler + classifier, accuracy on the test folds). The heatmap of those
accuracies is Figure 2; Table 2 summarises it per data set and classifier:

- base: the accuracy at Λ = (1, 1) (no transform);
- full δ: the best cell minus base ("Acc after" is the best cell);
- spherical δ: the best cell on the diagonal λ1 = λ2 minus base;
- diagonal δ: fix λ2 = 1 and take the best λ1, fix λ1 = 1 and take the best λ2, score the
  combination; when a direction has several best values, the combination scoring highest is used
  (as the paper says), minus base.

Table 3 averages these over the random data set of Figure 1D regenerated with ten seeds.

Each (data set, classifier) is one experiment study ``reproduce/grid-exploration/<data>-seed<k>/<classifier>``
whose trials are the 121 cells (params ``lambda_1``, ``lambda_2``; value = mean test accuracy;
user attribute ``fold_accuracies``), so Tables 2 and 3 share the random data set's cells and an
interrupted run resumes cell by cell. The heatmap is attached to the study for optuna-dashboard.

Known difference from the authors' script: it scored the grid with ``KNeighborsClassifier(n_neighbors=10)``
but the base with the default k = 5; we use the paper's classifier (k = 5) throughout, as Table 1 states.
"""

from __future__ import annotations

from dataclasses import dataclass
import time
from typing import TYPE_CHECKING
from typing import Any
import warnings

import numpy as np
from optuna.distributions import FloatDistribution
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._math._transform import BoxCoxTransformer
from optuna_boxcox._study._space import DEFAULT_GRID_RANGE
from optuna_boxcox._system._parallel import map_tasks
from optuna_boxcox._system._progress import interleaved
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.experiments import _record
from optuna_boxcox.experiments._data import FIGURE1_SEED
from optuna_boxcox.experiments._data import SYNTHETIC
from optuna_boxcox.experiments._data import synthetic
from optuna_boxcox.experiments._names import TABLE3_SEEDS
from optuna_boxcox.experiments._paper import GRID_COLUMNS
from optuna_boxcox.experiments._paper import published_grid
from optuna_boxcox.experiments._report import Cell

if TYPE_CHECKING:
    from collections.abc import Sequence

    import optuna

    from optuna_boxcox.experiments._protocol import Protocol
    from optuna_boxcox.experiments._record import TableRun

#: Algorithm 1's grid: λ1, λ2 in {-5, -4, …, 5}.
GRID = np.linspace(*DEFAULT_GRID_RANGE, 11)
_DISTRIBUTIONS = {
    "lambda_1": FloatDistribution(*DEFAULT_GRID_RANGE),
    "lambda_2": FloatDistribution(*DEFAULT_GRID_RANGE),
}
#: Accuracies closer than this count as equal (they are means of fractions k/n).
_TIE = 1e-9


def explore_cell(
    X: np.ndarray,
    y: np.ndarray,
    lambdas: Sequence[float],
    classifier: str,
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
) -> list[float]:
    """Algorithm 1's inner loop for one Λ: test accuracy of every outer fold."""
    B = BoxCoxTransformer(
        lambdas=np.asarray(lambdas, dtype=np.float64), standardize=False
    ).fit_transform(X)
    accuracies = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for train, test in splits:
            scaler = StandardScaler().fit(B[train])
            model = make_classifier(classifier).fit(scaler.transform(B[train]), y[train])
            accuracies.append(float(np.mean(model.predict(scaler.transform(B[test])) == y[test])))
    return accuracies


@dataclass
class GridSummary:
    """Table 2's numbers for one heatmap (percent) and where the optima are (grid indices)."""

    base: float
    after: float
    full_delta: float
    spherical_delta: float
    diagonal_delta: float
    full: tuple[int, int]
    spherical: tuple[int, int]
    diagonal: tuple[int, int]

    def values(self) -> dict[str, float]:
        return {c: getattr(self, c) for c in GRID_COLUMNS}


def summarize(accuracy: np.ndarray, grid: np.ndarray = GRID) -> GridSummary:
    """Table 2's summary of an accuracy heatmap ``accuracy[i, j]`` at (λ1, λ2) = (grid[i], grid[j])."""
    H = np.asarray(accuracy, dtype=np.float64)
    one = int(np.flatnonzero(np.isclose(grid, 1.0))[0])
    base = float(H[one, one])
    full = np.unravel_index(int(np.argmax(H)), H.shape)
    diag = int(np.argmax(np.diag(H)))
    best_1 = np.flatnonzero(H[:, one] >= H[:, one].max() - _TIE)  # λ2 fixed at 1
    best_2 = np.flatnonzero(H[one, :] >= H[one, :].max() - _TIE)  # λ1 fixed at 1
    combos = [(int(i), int(j)) for i in best_1 for j in best_2]
    best_combo = max(H[c] for c in combos)
    diagonal = next(c for c in combos if H[c] >= best_combo - _TIE)
    return GridSummary(
        base=base,
        after=float(H[full]),
        full_delta=float(H[full] - base),
        spherical_delta=float(H[diag, diag] - base),
        diagonal_delta=float(H[diagonal] - base),
        full=(int(full[0]), int(full[1])),
        spherical=(diag, diag),
        diagonal=diagonal,
    )


def accuracy_heatmap(
    accuracy: np.ndarray, summary: GridSummary, *, grid: np.ndarray = GRID, title: str = ""
) -> go.Figure:
    """One heatmap of Figure 2: accuracy [%] over (λ1, λ2), optima marked 1 spherical, 2 diagonal,
    3 full (the paper's numbering)."""
    figure = go.Figure()
    _add_heatmap(figure, accuracy, summary, grid, row=None, col=None)
    figure.update_layout(title=title, xaxis_title="λ2", yaxis_title="λ1", template="plotly_white")
    return figure


def figure2(
    heatmaps: dict[str, tuple[np.ndarray, GridSummary]],
    *,
    grid: np.ndarray = GRID,
    title: str = "",
) -> go.Figure:
    """Figure 2: the heatmap of every classifier side by side."""
    figure = make_subplots(
        rows=1, cols=len(heatmaps), subplot_titles=list(heatmaps), horizontal_spacing=0.03
    )
    for k, (accuracy, summary) in enumerate(heatmaps.values(), start=1):
        _add_heatmap(figure, accuracy, summary, grid, row=1, col=k)
        figure.update_xaxes(title_text="λ2", row=1, col=k)
    figure.update_yaxes(title_text="λ1", row=1, col=1)
    figure.update_layout(
        title=title, template="plotly_white", width=360 * len(heatmaps) + 100, height=460
    )
    return figure


def _add_heatmap(
    figure: go.Figure,
    accuracy: np.ndarray,
    summary: GridSummary,
    grid: np.ndarray,
    row: Any,
    col: Any,
) -> None:
    where = {} if row is None else {"row": row, "col": col}
    labels = [f"{v:g}" for v in grid]
    figure.add_trace(
        go.Heatmap(
            z=np.asarray(accuracy).tolist(),
            x=labels,
            y=labels,
            colorscale="Viridis",
            showscale=row is None,
            texttemplate="%{z:.1f}",
            textfont={"size": 8},
            hovertemplate="λ1 = %{y}, λ2 = %{x}: %{z:.3f} %<extra></extra>",
        ),
        **where,
    )
    marks: dict[tuple[int, int], list[str]] = {}
    for number, (i, j) in (("1", summary.spherical), ("2", summary.diagonal), ("3", summary.full)):
        marks.setdefault((i, j), []).append(number)
    figure.add_trace(
        go.Scatter(
            x=[labels[j] for (_, j) in marks],
            y=[labels[i] for (i, _) in marks],
            text=[",".join(n) for n in marks.values()],
            mode="markers+text",
            marker={
                "size": 18,
                "color": "rgba(255,255,255,0.85)",
                "line": {"width": 1, "color": "black"},
            },
            textfont={"size": 11, "color": "black"},
            name="optima: 1 spherical, 2 diagonal, 3 full",
            showlegend=False,
            hoverinfo="text",
        ),
        **where,
    )


# -- the experiment ----------------------------------------------------------------------------
@dataclass
class _Unit:
    data: str  # synthetic key
    seed: int
    classifier: str
    study: optuna.Study
    cells: dict[int, list[float]]  # cell index i * L + j → fold accuracies


def grid_study_name(data: str, seed: int, classifier: str, protocol: Protocol) -> str:
    return protocol.study_name("reproduce", "grid-exploration", f"{data}-seed{seed}", classifier)


def run_grid(
    target: str,
    run: TableRun,
    *,
    datasets: Sequence[str] | None = None,
    seeds: Sequence[int] | None = None,
) -> tuple[list[Cell], bool, dict[tuple[str, int], dict[str, tuple[np.ndarray, GridSummary]]]]:
    """Tables 2 (``target="table2"``) or 3 (``"table3"``): cells, completeness, and the heatmaps
    by (data set, seed) and classifier."""
    classifiers, protocol, on_progress = run.classifiers, run.protocol, run.on_progress
    if target == "table2":
        sets = [(key, FIGURE1_SEED) for key in (datasets or list(SYNTHETIC))]
    else:
        sets = [("random", seed) for seed in (seeds or TABLE3_SEEDS)]
    L = len(GRID)
    data, splits, units = {}, {}, {}
    for key, seed in sets:
        X, y = synthetic(key, seed)
        data[(key, seed)] = (X, y)
        splits[(key, seed)] = protocol.splits(X, y)
        for classifier in classifiers:
            settings = {
                "experiment": "grid exploration (Algorithm 1)",
                "dataset": key,
                "seed": seed,
                "classifier": classifier,
                "grid": GRID.tolist(),
                "protocol": protocol.to_attr(),
            }
            study = _record.open_study(
                run.storage, grid_study_name(key, seed, classifier, protocol), settings
            )
            cells = {
                k: list(t.user_attrs["fold_accuracies"])
                for k, t in _record.finished(study).items()
            }
            units[(key, seed, classifier)] = _Unit(key, seed, classifier, study, cells)

    # A task is one λ1 row of the grid: 11 cells, written in one go; a row of every study in turn
    # (classifiers cost unlike amounts: the time left is estimated from each one's rows).
    left = {
        unit_key: [
            (unit_key, i) for i in range(L) if any(i * L + j not in unit.cells for j in range(L))
        ]
        for unit_key, unit in units.items()
    }
    tasks = interleaved(left.values())
    total = len(units) * L
    if on_progress is not None:
        on_progress(total - len(tasks), total, left={k: len(v) for k, v in left.items()})

    def work(task: tuple[tuple[str, int, str], int]) -> list[tuple[list[float], float]]:
        (key, seed, classifier), i = task
        X, y = data[(key, seed)]
        out = []
        for j in range(L):
            started = time.perf_counter()
            folds = explore_cell(X, y, (GRID[i], GRID[j]), classifier, splits[(key, seed)])
            out.append((folds, time.perf_counter() - started))
        return out

    def on_result(
        task: tuple[tuple[str, int, str], int], result: list[tuple[list[float], float]]
    ) -> None:
        unit = units[task[0]]
        i = task[1]
        entries = []
        for j, (folds, seconds) in enumerate(result):
            params = {"lambda_1": float(GRID[i]), "lambda_2": float(GRID[j])}
            entries.append(
                (i * L + j, params, float(np.mean(folds)), {"fold_accuracies": folds}, seconds)
            )
            unit.cells[i * L + j] = folds
        _record.record(unit.study, entries, _DISTRIBUTIONS)
        if on_progress is not None:
            on_progress(1, 0, group=task[0], seconds=sum(seconds for _, seconds in result))

    map_tasks(tasks, work, on_result, n_jobs=run.n_jobs, max_tasks=run.max_tasks)

    heatmaps: dict[tuple[str, int], dict[str, tuple[np.ndarray, GridSummary]]] = {}
    for (key, seed, classifier), unit in units.items():
        if len(unit.cells) < L * L:
            continue
        H = 100.0 * np.array(
            [[np.mean(unit.cells[i * L + j]) for j in range(L)] for i in range(L)]
        )
        summary = summarize(H)
        heatmaps.setdefault((key, seed), {})[classifier] = (H, summary)
        unit.study.set_user_attr(_record.RESULT_ATTR, summary.values())
        _attach(
            unit.study,
            accuracy_heatmap(
                H, summary, title=f"{SYNTHETIC[key].label} (seed {seed}), {classifier}"
            ),
        )
    cells = _cells(target, sets, classifiers, heatmaps, units, L)
    return cells, all(c.ours is not None for c in cells), heatmaps


def _attach(study: optuna.Study, figure: go.Figure) -> None:
    # optuna-dashboard is imported where a note or graph is saved, in this whole module: it loads
    # its web server's modules, the slowest import of the package (docs/performance_log.md, imports).
    from optuna_dashboard import save_plotly_graph_object

    save_plotly_graph_object(study, figure, graph_object_id="grid-exploration-heatmap")


def _cells(
    target: str,
    sets: Sequence[tuple[str, int]],
    classifiers: Sequence[str],
    heatmaps: dict[tuple[str, int], dict[str, tuple[np.ndarray, GridSummary]]],
    units: dict[tuple[str, int, str], _Unit],
    L: int,
) -> list[Cell]:
    cells = []
    if target == "table2":
        for key, seed in sets:
            section = SYNTHETIC[key].label
            for classifier in classifiers:
                found = heatmaps.get((key, seed), {}).get(classifier)
                unit = units[(key, seed, classifier)]
                for column in GRID_COLUMNS:
                    cells.append(
                        Cell(
                            section,
                            classifier,
                            column,
                            None if found is None else found[1].values()[column],
                            published_grid("table2", section, classifier, column),
                            len(unit.cells),
                            L * L,
                        )
                    )
        return cells
    for classifier in classifiers:
        summaries = [heatmaps.get(s, {}).get(classifier) for s in sets]
        done = sum(len(units[(k, s, classifier)].cells) for k, s in sets)
        for column in GRID_COLUMNS:
            ours = None
            if all(found is not None for found in summaries):
                ours = float(np.mean([found[1].values()[column] for found in summaries]))
            cells.append(
                Cell(
                    "",
                    classifier,
                    column,
                    ours,
                    published_grid("table3", "", classifier, column),
                    done,
                    L * L * len(sets),
                )
            )
    return cells
