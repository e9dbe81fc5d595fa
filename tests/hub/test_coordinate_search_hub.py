"""The OptunaHub package ``samplers/coordinate_search``: loaded offline with optunahub as the
registry loads it, on plain objectives (no Box-Cox), and against the package's own sampler.

The hub package is a second, standalone implementation of the coordinate search (the registry
can only install dependencies from the public package index, where this package is not). What
justifies two implementations is that they are held to the same trial sequence here: on the
same objective, space, start and seed, every preset makes the same trials in the same order.
"""

from __future__ import annotations

from pathlib import Path
import re

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
import pytest

from optuna_boxcox import CoordinateGridSampler
from optuna_boxcox._study._presets import PRESETS

#: The registry root of the package: hub/ mirrors the registry's package/ folder.
REGISTRY_ROOT = Path(__file__).resolve().parents[2] / "hub"
optunahub = pytest.importorskip("optunahub", reason="optunahub is in the test extra")
hub = optunahub.load_local_module(
    package="samplers/coordinate_search", registry_root=str(REGISTRY_ROOT)
)

SPACE = {name: FloatDistribution(-5.0, 5.0) for name in ("x", "y", "z")}
OPTIMUM = {"x": 1.3, "y": -0.7, "z": 2.2}


@pytest.fixture(autouse=True)
def _quiet_optuna():
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    yield
    optuna.logging.set_verbosity(verbosity)


def bowl(trial: optuna.Trial) -> float:
    """A coupled quadratic with its minimum at OPTIMUM (value 0)."""
    x, y, z = (trial.suggest_float(n, SPACE[n].low, SPACE[n].high) for n in ("x", "y", "z"))
    dx, dy, dz = x - OPTIMUM["x"], y - OPTIMUM["y"], z - OPTIMUM["z"]
    return dx**2 + dy**2 + dz**2 + 0.5 * dx * dy


def bumpy(trial: optuna.Trial) -> float:
    """Several local maxima, so that Shift's restarts and Shuffle's orders change the path."""
    x, y, z = (trial.suggest_float(n, -5.0, 5.0) for n in ("x", "y", "z"))
    return float(np.sin(2 * x) * np.cos(y) + np.sin(x * z / 3) - 0.05 * (x**2 + y**2 + z**2))


def test_finds_the_optimum_of_a_plain_three_parameter_objective_within_0_05():
    sampler = hub.CoordinateSearchSampler(
        SPACE, epochs=12, shift_epoch=12, shuffle_epoch=2, finer_epoch=2, seed=0
    )
    study = optuna.create_study(sampler=sampler)
    study.optimize(bowl)  # the sampler stops the study when its plan is spent
    assert len(study.trials) == sampler.budget == 12 * 3 * 11
    for name, value in OPTIMUM.items():
        assert abs(study.best_params[name] - value) <= 0.05, (name, study.best_params)


@pytest.mark.parametrize("preset", ["iterative", "shift", "shuffle", "finer"])
@pytest.mark.parametrize("direction", ["maximize", "minimize"])
def test_makes_the_same_trials_as_the_packages_coordinate_grid_sampler(preset, direction):
    start = {"x": 0.5, "y": -1.0, "z": 2.0}
    objective = bumpy if direction == "maximize" else bowl
    ours = CoordinateGridSampler.from_preset(
        preset, seed=3, search_space=SPACE, initial_params=start, grid_range=(-5.0, 5.0)
    )
    theirs = hub.CoordinateSearchSampler.from_preset(preset, SPACE, initial_params=start, seed=3)
    studies = []
    for sampler in (ours, theirs):
        study = optuna.create_study(direction=direction, sampler=sampler)
        study.optimize(objective, n_trials=10_000)
        studies.append(study)
    expected, got = ([t.params for t in s.trials] for s in studies)
    assert len(got) == len(expected) == theirs.budget == ours.budget(3)
    assert got == expected
    assert studies[1].best_params == ours.result(studies[0]).params


@pytest.mark.long
def test_a_study_continued_by_a_new_sampler_makes_the_same_trials_as_one_run(tmp_path):
    storage = f"sqlite:///{tmp_path / 'hub.db'}"

    def sampler():
        return hub.CoordinateSearchSampler.from_preset("shift", SPACE, seed=1)

    whole = optuna.create_study(direction="maximize", sampler=sampler())
    whole.optimize(bumpy)
    first = optuna.create_study(
        storage=storage, study_name="s", direction="maximize", sampler=sampler()
    )
    first.optimize(bumpy, n_trials=40)  # stops mid-sweep
    again = optuna.load_study(storage=storage, study_name="s", sampler=sampler())
    again.optimize(bumpy)
    assert [t.params for t in again.trials] == [t.params for t in whole.trials]


def test_an_enqueued_trial_is_evaluated_but_takes_no_place_in_the_plan():
    def run(enqueue: bool) -> list[dict[str, float]]:
        study = optuna.create_study(
            sampler=hub.CoordinateSearchSampler.from_preset("iterative", SPACE, seed=2)
        )
        if enqueue:
            study.enqueue_trial({"x": 1.0, "y": -1.0, "z": 2.0})
        study.optimize(bowl)
        return [t.params for t in study.trials]

    plain, enqueued = run(False), run(True)
    assert enqueued[0] == {"x": 1.0, "y": -1.0, "z": 2.0}
    assert enqueued[1:] == plain


def test_parameters_outside_the_search_space_are_sampled_independently():
    sampler = hub.CoordinateSearchSampler({"x": FloatDistribution(-1.0, 1.0)}, epochs=1)
    study = optuna.create_study(sampler=sampler)
    study.optimize(
        lambda t: t.suggest_float("x", -1.0, 1.0) ** 2 + t.suggest_int("k", 0, 9), n_trials=30
    )
    assert len(study.trials) == 11
    assert [t.params["x"] for t in study.trials] == list(np.linspace(-1.0, 1.0, 11))
    assert len({t.params["k"] for t in study.trials}) > 1


def test_refuses_what_it_cannot_search():
    with pytest.raises(ValueError, match="linear float"):
        hub.CoordinateSearchSampler({"x": FloatDistribution(1e-3, 1.0, log=True)})
    with pytest.raises(ValueError, match="epochs"):
        hub.CoordinateSearchSampler(SPACE, epochs=0)
    with pytest.raises(ValueError, match="unknown preset"):
        hub.CoordinateSearchSampler.from_preset("coarser", SPACE)


def test_the_package_has_the_registry_layout_and_front_matter():
    folder = REGISTRY_ROOT / "samplers" / "coordinate_search"
    for name in ("__init__.py", "README.md", "LICENSE", "example.py", "requirements.txt"):
        assert (folder / name).is_file(), name
    readme = (folder / "README.md").read_text(encoding="utf-8")
    front = re.match(r"---\n(.*?)\n---\n", readme, re.S)
    assert front, "README.md starts with the registry's front matter"
    keys = dict(line.split(":", 1) for line in front.group(1).splitlines())
    assert set(keys) == {"author", "title", "description", "tags", "optuna_versions", "license"}
    assert "sampler" in keys["tags"]
    # Standalone: nothing of this repository is imported by the package.
    for path in Path(folder).glob("*.py"):
        assert "optuna_boxcox" not in path.read_text(encoding="utf-8"), path.name


def test_the_example_runs_and_prints_what_the_readme_says(monkeypatch, capsys):
    import runpy

    # The registry's load_module fetches the package; here it is the local copy.
    monkeypatch.setattr(optunahub, "load_module", lambda package, **kwargs: hub)
    folder = REGISTRY_ROOT / "samplers" / "coordinate_search"
    runpy.run_path(str(folder / "example.py"), run_name="__main__")
    printed = capsys.readouterr().out
    assert printed.startswith("396 {'x': 1.3125, 'y': -0.6875, 'z': 2.1875}")
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert "{'x': 1.3125, 'y': -0.6875, 'z': 2.1875}" in readme


def test_the_hub_copy_has_the_packages_presets() -> None:
    # A hub package stands alone, so it keeps its own copy of the presets: the two must agree.
    assert hub.PRESETS == PRESETS
