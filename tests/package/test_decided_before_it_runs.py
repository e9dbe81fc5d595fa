"""The middle of the house: a plan decided before the first trial, an objective that only scores,
one typed fidelity (what the code's shape must keep, read from the code and from behaviour)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
import re
import typing

import numpy as np
import optuna
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import SearchSpec
from optuna_boxcox._objective._arguments import check_data
from optuna_boxcox._objective._experiment import space_layout
from optuna_boxcox._study._fidelity import DEFAULT_REQUEST
from optuna_boxcox._study._fidelity import EXACT
from optuna_boxcox._study._fidelity import AutoFidelity
from optuna_boxcox._study._fidelity import Exact
from optuna_boxcox._study._fidelity import Fidelity
from optuna_boxcox._study._fidelity import FidelityRequest
from optuna_boxcox._study._fidelity import Unasked
from optuna_boxcox._study._fidelity import parse_fidelity
from optuna_boxcox._study._plan_size import plan_size
from optuna_boxcox.cli import main
from optuna_boxcox.samplers import CoordinateGridSampler

PACKAGE = Path(__file__).resolve().parents[2] / "optuna_boxcox"
#: Numba's kernels, whose arguments are the compiled loop's state (no objects to group them in).
COMPILED = {"_math/_sgd.py", "_math/_lbfgs.py"}
#: The most parameters (self and cls not counted) a private function may take.
MOST_PARAMETERS = 8


def _functions():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield path.relative_to(PACKAGE).as_posix(), node


def _n_parameters(node: ast.FunctionDef) -> int:
    a = node.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    n = len(positional) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return n - (positional[:1] in (["self"], ["cls"]))


def test_no_private_function_outside_the_compiled_numerics_takes_more_than_eight_parameters():
    crowded = [
        f"{where}:{node.lineno} {node.name} ({_n_parameters(node)})"
        for where, node in _functions()
        if node.name.startswith("_")
        and not node.name.startswith("__")
        and where not in COMPILED
        and _n_parameters(node) > MOST_PARAMETERS
    ]
    assert not crowded, f"group these settings in one frozen value: {crowded}"


def test_the_class_optuna_calls_is_a_thin_adapter():
    source = (PACKAGE / "_objective" / "_objective.py").read_text(encoding="utf-8")
    (adapter,) = [
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.ClassDef) and n.name == "BoxCoxObjective"
    ]
    attributes = {
        n.attr
        for n in ast.walk(adapter)
        if isinstance(n, ast.Attribute)
        and isinstance(n.ctx, ast.Store)
        and isinstance(n.value, ast.Name)
        and n.value.id == "self"
    }
    assert adapter.end_lineno - adapter.lineno + 1 <= 250
    assert len(attributes) <= 12, sorted(attributes)


def test_no_module_guesses_at_a_samplers_attributes():
    # The plan's size is asked of the sampler (PlanSampler.plan_size), never read off it.
    guess = re.compile(r"(getattr|hasattr)\([^)]*sampler[^)]*\"(budget|grid_size|max_points)\"")
    found = [
        f"{path.relative_to(PACKAGE)}:{i}"
        for path in PACKAGE.rglob("*.py")
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if guess.search(line)
    ]
    assert not found


def test_the_spec_declares_its_fidelity_with_a_type_and_parses_every_form_once():
    declared = {f.name: f.type for f in dataclasses.fields(SearchSpec)}
    assert declared["fidelity"] == "FidelityRequest"
    assert declared["fidelity_choice"] == "FidelityChoice | None"
    assert set(typing.get_args(FidelityRequest)) == {Exact, Fidelity, AutoFidelity, Unasked}
    assert SearchSpec("bayes").fidelity == EXACT
    assert SearchSpec("bayes", fidelity="exact").fidelity == EXACT
    assert SearchSpec("bayes", fidelity="auto").fidelity == AutoFidelity()
    assert SearchSpec("bayes", fidelity=300).fidelity == Fidelity(300)
    assert SearchSpec("bayes", fidelity="default").fidelity is DEFAULT_REQUEST
    # None means exact for a spec and an objective, the default for the estimator: said once.
    assert parse_fidelity(None, none=DEFAULT_REQUEST) is DEFAULT_REQUEST
    for bad in ("fast", 1.5, True):
        with pytest.raises(ValueError, match="fidelity must be"):
            SearchSpec("bayes", fidelity=bad)
    # The record is what it always was (None, "auto", the rungs), and reads back as typed.
    for fidelity in ("auto", 300, Fidelity(250, 2, 900)):
        spec = SearchSpec("bayes", fidelity=fidelity)
        record = spec.to_dict()
        assert SearchSpec.from_dict(record) == spec
    assert SearchSpec("bayes", fidelity="auto").to_dict()["fidelity"] == "auto"
    assert "fidelity" not in SearchSpec("bayes").to_dict()


def test_a_plan_sampler_tells_its_size_once_and_optunas_run_what_they_are_given():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    data = check_data(X.iloc[:, :3], y)
    space = space_layout(SearchSpec("bayes", transforms=("box-cox", "identity")), data)
    sampler = CoordinateGridSampler.from_preset("iterative")
    size = plan_size(sampler, space)
    # The oracle: the plan itself, run to its end with arbitrary scores.
    plan = sampler.plan(space)
    rng = np.random.default_rng(0)
    plan.run(lambda points: rng.random(len(points)))
    assert size.trials == plan.n_positions == 4 * (3 * 11 + 3 * 2)
    assert size.batch == 11 and size.params == 6
    assert plan_size(sampler, space, 50).trials == 50
    assert plan_size(optuna.samplers.TPESampler(), space, 40).trials == 40


def test_search_says_its_fidelity_once(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path}/s.db"
    command = ["search", "--dataset", "wine", "--features", "3", "--classifier", "bayes"]
    command += ["--sampler", "spherical", "--fidelity", "auto", "--no-figures"]
    assert main([*command, "--storage", storage]) == 0
    first = [line for line in capsys.readouterr().out.splitlines() if line.startswith("fidelity")]
    assert len(first) == 1, first
    # Read back, nothing runs: it says it once there too.
    assert main([*command, "--storage", storage]) == 0
    again = [line for line in capsys.readouterr().out.splitlines() if line.startswith("fidelity")]
    assert again == first


def test_the_lifecycle_decides_the_fidelity_and_register_only_records_it():
    X, y = load_breast_cancer(return_X_y=True)
    from optuna_boxcox._lifecycle._search import plan_search

    data = check_data(X[:, :4], y)
    plan = plan_search(SearchSpec(GaussianNB(), sampler="iterative", fidelity="auto"), data=data)
    assert plan.spec.fidelity_choice is not None and plan.size.trials == 4 * 4 * 11
    objective = BoxCoxObjective.from_spec(plan.spec, data)
    before = objective.spec
    objective.register(optuna.create_study(direction="maximize", sampler=plan.sampler))
    assert objective.spec == before  # nothing chosen again
