"""The figures of a search: what they draw, checked against plain loops, and what optuna-dashboard serves.

The searches are real: the command line's ``run_search`` on scikit-learn's wine data (first 4 or 2
features) with Gaussian naive Bayes, the paper's iterative coordinate search, in a SQLite file.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from urllib.request import urlopen
from wsgiref.simple_server import WSGIRequestHandler
from wsgiref.simple_server import make_server

import numpy as np
import optuna
import pandas as pd
import plotly.graph_objects as go
import pytest
from scipy import stats
from sklearn.datasets import load_wine
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import figures
from optuna_boxcox._math import _criteria
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox.cli import build_parser
from optuna_boxcox.cli.search import run_search
from optuna_boxcox.samplers import make_sampler

WINE4 = ["alcohol", "malic_acid", "ash", "alcalinity_of_ash"]


def _search(tmp_path_factory: pytest.TempPathFactory, n_features: int) -> dict:
    storage = tmp_path_factory.mktemp(f"search{n_features}") / "s.db"
    args = build_parser().parse_args(
        [
            "search",
            "--dataset",
            "wine",
            "--features",
            str(n_features),
            "--classifier",
            "bayes",
            "--sampler",
            "iterative",
            "--storage",
            f"sqlite:///{storage}",
        ]
    )
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    run = run_search(args)
    kept = ("study", "study_name", "storage", "objective", "params", "best", "base", "mle")
    found = {name: getattr(run, name) for name in kept}
    found["sampler"] = make_sampler("iterative", seed=0)  # replays the plan from the storage
    return found


@pytest.fixture(scope="module")
def wine4(tmp_path_factory) -> dict:
    return _search(tmp_path_factory, 4)


@pytest.fixture(scope="module")
def wine2(tmp_path_factory) -> dict:
    return _search(tmp_path_factory, 2)


def _unstep(trace, n, first=1):
    """The values at first … n of a step line (line_shape "hv") drawn through its corners only."""
    assert trace.line.shape == "hv"
    x, y = list(trace.x), list(trace.y)
    assert x[0] == first and x[-1] == n, (
        f"a step line from {first} to {n} runs from {x[0]} to {x[-1]}"
    )
    return [y[max(i for i, xi in enumerate(x) if xi <= k)] for k in range(first, n + 1)]


def _is_group_entry(trace):
    """The legend entry of the unchanged features: in their group, shown in the legend, no data."""
    return bool(trace.legendgroup) and trace.showlegend is not False


def _feature_lines(figure):
    """The line of every feature by name, without the legend entry of the unchanged ones."""
    return {t.name: t for t in figure.data if not _is_group_entry(t)}


def _x(trace):
    """The x values of a trace, given as values or as x0 and a step dx."""
    return (
        np.asarray(trace.x)
        if trace.x is not None
        else trace.x0 + trace.dx * np.arange(len(trace.y))
    )


def _trace(figure, name):
    matches = [t for t in figure.data if t.name == name]
    assert len(matches) == 1, (
        f"expected one trace named {name!r}, the figure has {[t.name for t in figure.data]}"
    )
    return matches[0]


# -- λ trajectory --------------------------------------------------------------------------------
def test_trajectory_has_one_line_per_feature_named_after_it_with_the_history_values(wine4):
    result = wine4["sampler"].result(wine4["study"])
    figure = figures.lambda_trajectory(result.history)
    lines = _feature_lines(figure)
    assert sorted(lines) == sorted(WINE4)
    assert len(result.history) == 4 * 4, "iterative: 4 epochs × 4 features sweeps"
    for name, trace in lines.items():
        assert _unstep(trace, len(result.history)) == [step[name] for step in result.history]
    # The last point is the chosen Λ.
    assert {name: t.y[-1] for name, t in lines.items()} == result.params


def test_trajectory_from_its_start_colours_a_feature_that_moved_only_in_the_first_sweep(wine4):
    result = wine4["sampler"].result(wine4["study"])
    start = wine4["objective"].initial_params
    figure = figures.lambda_trajectory(result.history, start=start)
    lines = _feature_lines(figure)
    assert sorted(lines) == sorted(WINE4)
    for name, trace in lines.items():
        values = _unstep(trace, len(result.history), first=0)
        assert values == [start[name]] + [step[name] for step in result.history]
    # The iterative search sweeps alcohol first and never moves it again: grey without the start.
    assert all(step["alcohol"] == result.params["alcohol"] for step in result.history)
    assert (
        lines["alcohol"].line.color
        != _feature_lines(figures.lambda_trajectory(result.history))["alcohol"].line.color
    )
    _assert_told_apart(figure, moved=WINE4, unchanged=[])


def test_trajectory_of_a_search_with_no_finished_sweep_is_refused():
    with pytest.raises(ValueError, match="no sweep has finished"):
        figures.lambda_trajectory([])


# -- best so far ---------------------------------------------------------------------------------
def _plain_best_so_far(study):
    best, curve = -np.inf, []
    for t in study.trials:
        if t.state == optuna.trial.TrialState.COMPLETE:
            best = max(best, t.value)
            curve.append(best)
    return curve


def test_best_so_far_is_the_running_maximum_of_the_finished_trials(wine4):
    figure = figures.best_so_far(wine4["study"])
    trace = _trace(figure, wine4["study_name"])
    expected = _plain_best_so_far(wine4["study"])
    assert _unstep(trace, len(expected)) == expected
    assert len(trace.x) < len(expected) / 4, "only the improvements are stored"
    assert trace.y[-1] == wine4["best"]


def test_best_so_far_overlays_studies_and_averages_seeds(wine4, wine2):
    four, two = _plain_best_so_far(wine4["study"]), _plain_best_so_far(wine2["study"])
    figure = figures.best_so_far(
        {"4 features": wine4["study"], "seeds": [wine4["study"], wine2["study"]]}
    )
    assert [t.name for t in figure.data] == ["4 features", "seeds"]
    assert _unstep(figure.data[0], len(four)) == four
    length = min(len(four), len(two))
    mean = [(a + b) / 2 for a, b in zip(four[:length], two[:length])]
    np.testing.assert_allclose(_unstep(figure.data[1], length), mean)
    assert "mean over seeds" in figure.layout.title.text


def test_best_so_far_of_a_minimised_study_is_the_running_minimum():
    study = optuna.create_study(direction="minimize")
    for value in [3.0, 5.0, 1.0, 2.0]:
        study.add_trial(optuna.trial.create_trial(value=value))
    np.testing.assert_array_equal(figures.best_so_far_curve(study), [3.0, 3.0, 1.0, 1.0])


# -- normalisation, transform curves ----------------------------------------------------------------
def test_normalise_maps_onto_zero_one_and_a_constant_curve_to_zeros():
    v = figures.normalise([3.0, -1.0, 7.0, 5.0])
    np.testing.assert_allclose(v, [0.5, 0.0, 1.0, 0.75])
    np.testing.assert_array_equal(figures.normalise([2.0, 2.0, 2.0]), [0.0, 0.0, 0.0])


def test_transform_curves_are_each_features_box_cox_at_its_lambda_scaled_to_zero_one(wine4):
    objective, params = wine4["objective"], wine4["params"]
    figure = figures.transform_curves(objective, params)
    lines = _feature_lines(figure)
    assert len(lines) == len(WINE4)
    for name in WINE4:
        (trace,) = [t for label, t in lines.items() if label.startswith(name + " ")]
        z, y = _x(trace), np.asarray(trace.y)
        assert z[0] == pytest.approx(1.0) and z[-1] == pytest.approx(2.0), (
            "Box-Cox input is z in [1, 2]"
        )
        assert y.min() == 0.0 and y.max() == 1.0 and np.all((y >= 0) & (y <= 1))
        expected = stats.boxcox(z, lmbda=params[name])
        # Four decimals are stored: far below a pixel of the plot.
        np.testing.assert_allclose(y, (expected - expected.min()) / np.ptp(expected), atol=5e-5)
        assert np.all(np.diff(y) > 0), "Box-Cox is increasing for every λ"


# -- legends of many features ----------------------------------------------------------------------
def _history(n_features, n_moved, sweeps=12):
    """Λopt after every sweep: the first ``n_moved`` features change λ once, the others never."""
    names = [f"x{j}" for j in range(n_features)]
    history = [
        {
            n: -2.0 - j / 10 if j < n_moved and k > j % (sweeps - 1) else 1.0
            for j, n in enumerate(names)
        }
        for k in range(sweeps)
    ]
    return history, names[:n_moved], names[n_moved:]


def _assert_told_apart(figure, moved, unchanged, feature=lambda trace: trace.name):
    """The features that moved have colours of their own; the others are one grey legend group."""
    lines = {feature(t): t for t in figure.data if not _is_group_entry(t)}
    moved_lines = [lines[n] for n in moved]
    colours = [t.line.color for t in moved_lines]
    assert None not in colours, "a feature that moved has no colour of its own"
    assert len(set(colours)) == len(colours), (
        f"{len(colours)} features that moved share {len(set(colours))} colours"
    )
    for trace in moved_lines:
        assert trace.opacity in (None, 1.0) and trace.showlegend is not False
        assert not trace.legendgroup, f"{trace.name} is grouped with other features"
    still = [lines[n] for n in unchanged]
    entries = [t for t in figure.data if _is_group_entry(t)]
    if not still:
        assert entries == [], "a legend entry for unchanged features when all moved"
        return
    assert len({t.legendgroup for t in still}) == 1, "the unchanged features are not one group"
    assert all(t.showlegend is False for t in still), "an unchanged feature has its own entry"
    noun = "feature" if len(still) == 1 else "features"
    assert [t.name for t in entries] == [f"{len(still)} {noun} unchanged"]
    assert entries[0].legendgroup == still[0].legendgroup, (
        "the legend entry does not toggle the unchanged lines"
    )
    greys = {t.line.color for t in still}
    assert len(greys) == 1 and greys.isdisjoint(colours) and all(t.opacity < 1 for t in still)
    order = list(figure.data)
    first_moved = min((order.index(t) for t in moved_lines), default=len(order))
    assert max(order.index(t) for t in still) < first_moved, "grey lines are drawn over moved ones"


@pytest.mark.parametrize(
    "n_features, n_moved", [(13, 13), (30, 20), (30, 30), (60, 45), (60, 60), (4, 0)]
)
def test_trajectory_gives_features_that_moved_colours_of_their_own_and_groups_the_rest(
    n_features, n_moved
):
    history, moved, unchanged = _history(n_features, n_moved)
    _assert_told_apart(figures.lambda_trajectory(history), moved, unchanged)


def _objective(n_features):
    rng = np.random.default_rng(n_features)
    X = pd.DataFrame(rng.lognormal(size=(40, n_features))).add_prefix("x")
    return BoxCoxObjective(X, np.arange(40) % 2, GaussianNB())


@pytest.mark.parametrize("n_features, n_moved", [(30, 18), (60, 60), (60, 1)])
def test_transform_curves_give_features_whose_lambda_moved_colours_of_their_own(
    n_features, n_moved
):
    objective = _objective(n_features)
    start, names = objective.initial_params, objective.param_names
    params = {n: start[n] + 0.5 if j < n_moved else start[n] for j, n in enumerate(names)}
    figure = figures.transform_curves(objective, params)
    _assert_told_apart(
        figure, names[:n_moved], names[n_moved:], feature=lambda t: t.name.split(" ")[0]
    )


def test_figures_of_sixty_features_stay_small_in_the_study():
    # Stored with save_plotly_graph_object as figure.to_json(); every digit of 60 curves and the
    # whole plotly_white template made the transform figure 170 kB.
    objective = _objective(60)
    params = {n: lam + 0.5 for n, lam in objective.initial_params.items()}
    transform = figures.transform_curves(objective, params).to_json()
    assert len(transform) < 60_000, f"the transform figure takes {len(transform)} bytes"
    history, _, _ = _history(60, 45, sweeps=240)
    trajectory = figures.lambda_trajectory(history).to_json()
    assert len(trajectory) < 25_000, f"the trajectory takes {len(trajectory)} bytes"
    curve = figures.best_so_far([optuna.trial.create_trial(value=v) for v in [1.0, 2.0]]).to_json()
    assert len(curve) < 2_000, f"a best-so-far curve of two points takes {len(curve)} bytes"


def test_transform_curves_compare_with_the_start_they_are_given():
    objective = _objective(30)
    params = dict.fromkeys(objective.param_names, 1.0)
    figure = figures.transform_curves(objective, params, start=dict(params, x3=0.0, x7=2.0))
    coloured = [t.name for t in figure.data if t.showlegend is not False and not t.legendgroup]
    assert coloured == ["x3 (λ = 1)", "x7 (λ = 1)"]


# -- the spherical sweep and the criteria (seed 001, Figures 4-6) -----------------------------------
def test_criteria_sweep_distances_equal_a_plain_loop():
    X, y = load_wine(return_X_y=True, as_frame=True)
    X = X.iloc[:, :3]
    objective = BoxCoxObjective(X, y, GaussianNB())
    c = np.linspace(-5, 5, 21)
    figure = figures.criteria_sweep(objective, c=c)

    # The curves, written out: scipy's Box-Cox log-likelihood per column (ML, PCML) and the Fisher
    # criterion of the standard-scaled data, at λ = (c, c, c).
    Z = objective.values
    labels = np.asarray(y)
    score, ml, pcml, fisher = [], [], [], []
    for ci in c:
        score.append(objective.evaluate([ci, ci, ci]))
        ml.append(np.mean([stats.boxcox_llf(ci, Z[:, j]) for j in range(3)]))
        per_class = [
            [stats.boxcox_llf(ci, Z[labels == k, j]) for j in range(3)] for k in np.unique(labels)
        ]
        pcml.append(sum(np.mean(columns) for columns in per_class))
        fisher.append(_criteria.fisher_criterion(objective.transform([ci, ci, ci]), labels))

    def scaled(curve):
        low, high = min(curve), max(curve)
        return [(v - low) / (high - low) for v in curve]

    reference = scaled(score)
    for label, curve in [("ML", ml), ("PCML", pcml), ("Fisher", fisher)]:
        distance = 0.0
        for a, b in zip(scaled(curve), reference):
            distance = max(distance, abs(a - b))
        trace = next(t for t in figure.data if t.name.startswith(label + " "))
        assert trace.name == f"{label} (L∞ = {distance:.3f})"
        np.testing.assert_allclose(trace.y, scaled(curve), atol=1e-9)
        assert f"{label} {distance:.3f}" in figure.layout.title.text
    assert figure.data[0].name == "accuracy of GaussianNB"
    np.testing.assert_allclose(figure.data[0].y, reference)
    for trace in figure.data:
        assert min(trace.y) == 0.0 and max(trace.y) == 1.0


def test_linf_distance_is_zero_for_a_curve_of_the_same_shape():
    score = [0.5, 0.9, 0.7]
    distances = figures.linf_distances(score, {"same": [10, 50, 30], "flipped": [0.9, 0.5, 0.7]})
    assert distances == pytest.approx({"same": 0.0, "flipped": 1.0}, abs=1e-12)


# -- the grid heatmap -------------------------------------------------------------------------------
def test_grid_heatmap_scores_every_grid_point_and_overlays_the_search(wine2):
    objective, study = wine2["objective"], wine2["study"]
    grid = np.linspace(-5, 5, 11)
    markers = {"spherical": {"alcohol": 1.0, "malic_acid": 1.0}, "chosen": wine2["params"]}
    figure = figures.grid_heatmap(objective, grid=grid, study=study, markers=markers)
    heat = figure.data[0]
    assert np.shape(heat.z) == (11, 11)
    for i, l2 in enumerate(grid):
        for j, l1 in enumerate(grid):
            assert heat.z[i][j] == objective.evaluate([l1, l2]), f"cell (λ1={l1}, λ2={l2})"
    evaluated = _trace(figure, "evaluated")
    assert len(evaluated.x) == len(study.trials)
    assert (_trace(figure, "chosen").x[0], _trace(figure, "chosen").y[0]) == (
        wine2["params"]["alcohol"],
        wine2["params"]["malic_acid"],
    )
    assert _trace(figure, "spherical").x == (1.0,)
    assert figure.layout.xaxis.title.text == "λ of alcohol"


def test_grid_heatmap_is_refused_for_more_than_two_features(wine4):
    with pytest.raises(ValueError, match="exactly 2 features"):
        figures.grid_heatmap(wine4["objective"])


# -- one search: figures and note ---------------------------------------------------------------------
def test_search_figures_of_a_four_feature_search(wine4):
    found, note = figures.search_figures(wine4["study"], wine4["objective"], wine4["sampler"])
    assert list(found) == ["lambda-trajectory", "best-so-far", "transform"]
    for text in [
        "wine",
        "178 samples × 4 features",
        "bayes",
        "accuracy, resubstitution",
        "coordinate",
        "epochs = 4",
        "grid_size = 11",
        "176 finished",
        "| `alcohol` | -2.000 |",
    ]:
        assert text in note, f"the note lacks {text!r}:\n{note}"


def test_search_figures_of_a_two_feature_search_include_the_grid(wine2):
    found, _ = figures.search_figures(wine2["study"], wine2["objective"], wine2["sampler"])
    assert list(found) == ["lambda-trajectory", "best-so-far", "transform", "grid"]
    assert {"MLE", "chosen Λ"} <= {t.name for t in found["grid"].data}


def test_search_figures_with_an_optuna_sampler_have_no_trajectory():
    X, y = load_wine(return_X_y=True, as_frame=True)
    objective = BoxCoxObjective(X.iloc[:, :3], y, GaussianNB())
    sampler = optuna.samplers.RandomSampler(seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(objective, n_trials=5)
    found, note = figures.search_figures(study, objective, sampler)
    assert list(found) == ["best-so-far", "transform"]
    assert "GaussianNB" in note


class _WatchedStorage:
    """A storage that records every method called on it (a read or a write), then passes it on."""

    def __init__(self, storage):
        self._storage = storage
        self.calls = []

    def __getattr__(self, name):
        attribute = getattr(self._storage, name)
        if not callable(attribute):
            return attribute

        def call(*args, **kwargs):
            self.calls.append(name)
            return attribute(*args, **kwargs)

        return call


def _as_json(found):
    return {key: figure.to_json() for key, figure in found.items()}


@pytest.mark.parametrize("search", ["wine4", "wine2"])
def test_search_figures_from_the_searchs_memory_read_nothing_and_equal_the_read_ones(
    search, request
):
    found = request.getfixturevalue(search)
    study, objective = found["study"], found["objective"]
    read_figures, read_note = figures.search_figures(study, objective, found["sampler"])

    result = found["sampler"].result(study)
    trials = study.get_trials(deepcopy=False)
    user_attrs = study.user_attrs
    watched = _WatchedStorage(optuna.storages.get_storage(found["storage"]))
    same_study = optuna.load_study(study_name=found["study_name"], storage=watched)
    watched.calls.clear()
    held_figures, held_note = figures.search_figures(
        same_study, objective, result=result, trials=trials, user_attrs=user_attrs
    )
    assert watched.calls == [], (
        f"figures of a search that passed its trials and result read the storage: {watched.calls}"
    )
    assert _as_json(held_figures) == _as_json(read_figures)
    assert held_note == read_note


def test_search_note_with_the_scores_given_scores_nothing(wine4, monkeypatch):
    study, objective = wine4["study"], wine4["objective"]
    expected = figures.search_note(study, objective, wine4["params"])
    monkeypatch.setattr(
        objective, "evaluate", lambda *a: pytest.fail("the note refitted a classifier")
    )
    note = figures.search_note(
        study,
        objective,
        wine4["params"],
        base_score=wine4["base"],
        mle_score=wine4["mle"],
        chosen_score=wine4["best"],
    )
    assert note == expected


def test_search_figures_of_trials_without_a_plan_choose_the_best_trial():
    X, y = load_wine(return_X_y=True, as_frame=True)
    objective = BoxCoxObjective(X.iloc[:, :3], y, GaussianNB())
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(0))
    study.optimize(objective, n_trials=5)
    trials = study.get_trials()
    found, note = figures.search_figures(study, objective, trials=trials, user_attrs={})
    assert list(found) == ["best-so-far", "transform"]
    best = max(trials, key=lambda t: t.value)
    assert f"| score | {best.value:.4f} " in note
    assert f"| `alcohol` | {best.params['alcohol']:.3f} |" in note


def test_best_so_far_of_trials_equals_that_of_their_study(wine4):
    study = wine4["study"]
    trials = list(reversed(study.get_trials()))  # any order: the trial numbers decide
    from_trials = figures.best_so_far({wine4["study_name"]: trials}).to_json()
    assert from_trials == figures.best_so_far(study).to_json()
    np.testing.assert_array_equal(
        figures.best_so_far_curve(trials), figures.best_so_far_curve(study)
    )
    minimised = figures.best_so_far_curve(
        [optuna.trial.create_trial(value=v) for v in [3.0, 5.0, 1.0]], "minimize"
    )
    np.testing.assert_array_equal(minimised, [3.0, 3.0, 1.0])


def test_best_so_far_averages_seeds_given_as_trial_lists(wine4, wine2):
    four, two = wine4["study"].get_trials(), wine2["study"].get_trials()
    figure = figures.best_so_far({"seeds": [four, two]})
    studies = figures.best_so_far({"seeds": [wine4["study"], wine2["study"]]})
    assert figure.to_json() == studies.to_json()


# -- what optuna-dashboard serves -------------------------------------------------------------------
class _Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def dashboard_api():
    """GET a path of optuna-dashboard's JSON API served on 127.0.0.1 (a free port) for a storage."""
    import optuna_dashboard

    servers = []

    def serve(storage):
        server = make_server("127.0.0.1", 0, optuna_dashboard.wsgi(storage), handler_class=_Quiet)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)

        def get(path):
            with urlopen(f"http://127.0.0.1:{server.server_port}{path}", timeout=30) as response:
                return json.loads(response.read())

        return get

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def test_attached_figures_and_note_are_served_by_optuna_dashboard(wine4, dashboard_api, tmp_path):
    # A copy of the search, so the module's study stays without figures for the other tests.
    source = sqlite3.connect(wine4["storage"][len("sqlite:///") :])
    with sqlite3.connect(tmp_path / "s.db") as copy:
        source.backup(
            copy
        )  # the search's file is in WAL mode: a file copy could miss its last writes
    source.close()
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 's.db'}")
    study = optuna.load_study(study_name=wine4["study_name"], storage=storage)
    found, note = figures.search_figures(study, wine4["objective"], wine4["sampler"])
    figures.attach_figures(study, found, note)
    figures.attach_figures(study, found, note)  # attaching again replaces, it does not add

    get = dashboard_api(storage)
    detail = get(f"/api/studies/{study_id_of(study)}")
    served = {g["id"]: json.loads(g["graph_object"]) for g in detail["plotly_graph_objects"]}
    assert sorted(served) == sorted(found), "the dashboard does not show the attached figures"
    assert len(detail["plotly_graph_objects"]) == len(found), "attaching twice duplicated a figure"
    trajectory = served["lambda-trajectory"]
    assert [t["name"] for t in trajectory["data"]] == [
        t.name for t in found["lambda-trajectory"].data
    ]
    history = wine4["sampler"].result(study).history
    (alcohol,) = [t for t in trajectory["data"] if t["name"] == "alcohol"]
    start = wine4["objective"].initial_params["alcohol"]
    served_alcohol = _unstep(go.Scatter(alcohol), len(history), first=0)
    assert served_alcohol == [start] + [step["alcohol"] for step in history]
    assert detail["note"]["body"] == note


def test_attach_figures_uploads_them_as_artifacts_when_given_a_store(dashboard_api, tmp_path):
    from optuna.artifacts import FileSystemArtifactStore

    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 's.db'}")
    study = optuna.create_study(storage=storage)
    study.add_trial(optuna.trial.create_trial(value=1.0))
    figure = figures.best_so_far(study)
    store_dir = tmp_path / "artifacts"
    store_dir.mkdir()
    with pytest.MonkeyPatch.context() as patch:  # without a browser the artifact is the HTML page
        patch.setattr("plotly.io.write_images", _no_chrome)
        figures.attach_figures(
            study,
            {"best-so-far": figure},
            "a note",
            artifact_store=FileSystemArtifactStore(str(store_dir)),
        )
    detail = dashboard_api(storage)(f"/api/studies/{study_id_of(study)}")
    assert [a["filename"] for a in detail["artifacts"]] == ["best-so-far.html"]
    assert len(list(store_dir.iterdir())) == 1


# -- files ------------------------------------------------------------------------------------------
def _no_chrome(*args, **kwargs):
    raise RuntimeError("Kaleido requires Google Chrome to be installed.")


def test_write_figures_writes_html_that_opens_offline_and_warns_without_png(tmp_path, monkeypatch):
    monkeypatch.setattr("plotly.io.write_images", _no_chrome)
    figure = figures.lambda_trajectory([{"a": 1.0, "b": 2.0}, {"a": 0.5, "b": 2.0}])
    with pytest.warns(RuntimeWarning, match="apt-get install chromium"):
        written = figures.write_figures({"trajectory": figure}, tmp_path / "out")
    assert written == [tmp_path / "out" / "trajectory.html"]
    page = written[0].read_text()
    assert 'src="plotly.min.js"' in page and "cdn" not in page
    assert (tmp_path / "out" / "plotly.min.js").stat().st_size > 1_000_000


def test_write_figures_writes_png_with_kaleido_and_chromium(tmp_path):
    pytest.importorskip("kaleido", reason="PNG export needs the kaleido package")
    if not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")):
        pytest.skip("PNG export needs Chrome or Chromium (Debian: apt-get install chromium)")
    figure = figures.lambda_trajectory([{"a": 1.0, "b": 2.0}, {"a": 0.5, "b": 2.0}])
    written = figures.write_figures(
        {"trajectory": figure, "again": figure}, tmp_path, formats=("png",)
    )
    assert written == [tmp_path / "trajectory.png", tmp_path / "again.png"]
    for path in written:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_write_figures_refuses_an_unknown_format(tmp_path):
    with pytest.raises(ValueError, match="svg"):
        figures.write_figures({}, tmp_path, formats=("svg",))
