"""The default fidelity (issue 34): ``auto`` for a new study, decided in ``plan_search``; a resumed
study keeps its own; on data obviously small for the classifier ``auto`` is exact without timing
anything, so the paper's searches write the trials they wrote before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.datasets import load_digits
from sklearn.datasets import make_classification

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox._objective import _auto as auto_module
from optuna_boxcox._objective import _fidelity as fidelity_module
from optuna_boxcox._objective import _rungs as rungs_module
from optuna_boxcox._objective._evaluators import REGISTRY
from optuna_boxcox._objective._evaluators import Evaluators
from optuna_boxcox._objective._fidelity import DEFAULT_REQUEST
from optuna_boxcox._objective._fidelity import AutoFidelity
from optuna_boxcox._objective._fidelity import CostModel
from optuna_boxcox._study._search import plan_search
from optuna_boxcox._study._search import run_search
from optuna_boxcox._study._spec import SPEC_ATTR
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox.classifiers import make_classifier

optuna.logging.set_verbosity(optuna.logging.WARNING)

RECORDED = json.loads(
    (Path(__file__).resolve().parents[1] / "runner" / "data" / "recorded_trials.json").read_text()
)


@pytest.fixture
def no_timing(monkeypatch):
    """Fail the test if ``auto`` times anything."""

    def timed(*args, **kwargs):
        raise AssertionError("auto timed the classifier")

    monkeypatch.setattr(auto_module, "measure_cost", timed)
    monkeypatch.setattr(auto_module, "time_evaluations", timed)


def _digest(study):
    import hashlib

    h = hashlib.sha256()
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        h.update(repr((t.number, t.state.name, sorted(t.params.items()), t.values)).encode())
    return h.hexdigest()


# -- plan_search decides ---------------------------------------------------------------------------
def test_a_new_study_is_auto_by_default_and_a_resumed_one_keeps_its_own():
    spec = SearchSpec("bayes", sampler="iterative", fidelity=DEFAULT_REQUEST)
    planned = plan_search(spec).spec
    assert planned.fidelity == AutoFidelity(default=True)
    # A study made exact before (its record has no fidelity) resumes exact.
    exact = SearchSpec.from_dict(SearchSpec("bayes", sampler="iterative").to_dict())
    assert plan_search(spec, recorded=exact).spec.fidelity is None
    # One made with auto resumes with what it chose.
    choice = {"fidelity": None, "requested": "auto", "reason": "x"}
    made = SearchSpec("bayes", sampler="iterative", fidelity="auto", fidelity_choice=choice)
    resumed = plan_search(spec, recorded=SearchSpec.from_dict(made.to_dict())).spec
    assert (resumed.fidelity, resumed.fidelity_choice) == ("auto", choice)
    # A subsample or a second objective rules rows as the fidelity out: exact.
    assert (
        plan_search(
            SearchSpec("bayes", sampler="iterative", subsample=100, fidelity=DEFAULT_REQUEST)
        ).spec.fidelity
        is None
    )
    # What was asked for is kept.
    assert (
        plan_search(SearchSpec("bayes", sampler="iterative", fidelity=None)).spec.fidelity is None
    )


def test_the_default_is_not_a_fidelity_an_objective_can_be_built_with():
    X, y = make_classification(100, 4, random_state=0)
    from optuna_boxcox import BoxCoxObjective

    with pytest.raises(ValueError, match="plan_search") as error:
        BoxCoxObjective(np.exp(X), y, make_classifier("bayes"), fidelity=DEFAULT_REQUEST)
    assert "\n" not in str(error.value)


# -- small data: exact, nothing timed ------------------------------------------------------------------
@pytest.mark.parametrize("classifier", ["bayes", "knn", "linear", "svc", "nn"])
def test_the_papers_data_are_exact_without_timing(classifier, no_timing):
    X, y = load_breast_cancer(return_X_y=True)
    spec = SearchSpec(classifier, sampler="iterative", fidelity=DEFAULT_REQUEST)
    from optuna_boxcox import BoxCoxObjective

    objective = BoxCoxObjective.from_spec(plan_search(spec).spec, X, y)
    study = optuna.create_study(direction="maximize")
    objective.register(study)
    chosen = objective.describe()["fidelity"]
    assert chosen["fidelity"] is None and chosen["default"] and chosen["measured"] == []
    assert (
        study.user_attrs[SPEC_ATTR]["fidelity_choice"]["reason"]
        == "fewer than 600 rows, not timed"
    )


@pytest.mark.parametrize("classifier", ["bayes", "knn"])
def test_digits_are_small_for_the_cheap_classifiers(classifier, no_timing):
    """1,797 × 64, 10 classes: past the rows' floor, the cost class bounds the exact search."""
    X, y = load_digits(return_X_y=True)
    from optuna_boxcox import BoxCoxObjective

    spec = plan_search(SearchSpec(classifier, sampler="iterative", fidelity=DEFAULT_REQUEST)).spec
    objective = BoxCoxObjective.from_spec(spec, X + 1.0, y)
    objective.register(optuna.create_study(direction="maximize"))
    chosen = objective.describe()["fidelity"]
    assert chosen["fidelity"] is None and chosen["reason"].startswith("small data")
    assert chosen["exact_minutes"] <= fidelity_module.SMALL_SECONDS / 60


def test_every_paper_classifier_with_a_fast_path_has_a_cost_class():
    assert all(entry.cost is not None for entry in REGISTRY.values())
    # Growing as the evaluator does: k-NN's and the SVC's with the rows squared.
    knn, svc = (REGISTRY[type(make_classifier(n))].cost for n in ("knn", "svc"))
    assert knn.seconds(2000, 30, 2) == pytest.approx(4 * knn.seconds(1000, 30, 2))
    assert svc.seconds(2000, 30, 2) == pytest.approx(4 * svc.seconds(1000, 30, 2))


def test_large_data_are_timed(monkeypatch):
    """Past the cost class's bound, auto measures (here: a fake cost, the choice's inputs)."""
    calls = []

    def measured(at_rows, n_samples, **kwargs):
        calls.append(n_samples)
        return CostModel(((500, 0.05), (1000, 0.2)))

    monkeypatch.setattr(auto_module, "measure_cost", measured)
    monkeypatch.setattr(auto_module, "VERIFY_UNDER_SECONDS", 0.0)
    X, y = make_classification(20_000, 4, random_state=0)
    from optuna_boxcox import BoxCoxObjective

    spec = plan_search(SearchSpec("svc", sampler="iterative", fidelity=DEFAULT_REQUEST)).spec
    objective = BoxCoxObjective.from_spec(spec, np.exp(X / 2), y)
    objective.register(optuna.create_study(direction="maximize"))
    assert calls == [20_000]
    assert objective.fidelity is not None and objective.describe()["fidelity"]["default"]


# -- the lifecycle: the same trials as the exact search ------------------------------------------------
@pytest.mark.parametrize("sampler", ["iterative", "spherical"])
def test_the_default_search_writes_the_recorded_exact_trials(sampler, no_timing, tmp_path):
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    spec = SearchSpec("bayes", sampler=sampler, fidelity=DEFAULT_REQUEST)
    found = run_search(spec, X, y, storage=f"sqlite:///{tmp_path}/s.db", study_name="s")
    assert _digest(found.study) == RECORDED[f"breast_cancer/bayes/{sampler}"]["sha256"]
    record = found.study.user_attrs[SPEC_ATTR]
    assert record["fidelity"] == "auto" and record["fidelity_choice"]["default"] is True
    assert record["fidelity_choice"]["fidelity"] is None


def test_an_exact_study_made_before_resumes_exact_and_auto_asked_is_refused(tmp_path):
    from optuna_boxcox import StudyMismatch

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    storage = f"sqlite:///{tmp_path}/s.db"
    old = SearchSpec("bayes", sampler="iterative")  # exact, as every study made before
    run_search(old, X, y, storage=storage, study_name="s", n_trials=30)
    again = SearchSpec("bayes", sampler="iterative", fidelity=DEFAULT_REQUEST)
    found = run_search(again, X, y, storage=storage, study_name="s", n_trials=30)
    assert found.objective.fidelity is None and len(found.study.trials) == 60
    assert "fidelity" not in found.study.user_attrs[SPEC_ATTR]  # its record is as it was
    with pytest.raises(StudyMismatch, match=r"fidelity: None there, 'auto' here"):
        run_search(
            SearchSpec("bayes", sampler="iterative", fidelity="auto"),
            X,
            y,
            storage=storage,
            study_name="s",
        )


def test_the_seed_is_part_of_an_auto_study_only_when_it_halves():
    """An auto study that chose exact draws no rows: its seed is not what it is."""
    exact = {"fidelity": None, "requested": "auto"}
    halving = {"fidelity": {"min_rows": 200, "eta": 3, "top_rows": None}, "requested": "auto"}
    for choice, differs in ((exact, False), (halving, True), (None, True)):
        one, two = (
            SearchSpec("bayes", fidelity="auto", fidelity_choice=choice, seed=s) for s in (1, 2)
        )
        assert (one.difference(two) is not None) == differs


# -- what the user sees ------------------------------------------------------------------------------
def test_search_prints_the_default_decision_before_the_search(tmp_path, capsys, no_timing):
    from optuna_boxcox.cli import main

    storage = f"sqlite:///{tmp_path}/s.db"
    command = ["search", "--dataset", "wine", "--classifier", "knn", "--sampler", "iterative"]
    assert main([*command, "--storage", storage, "--no-figures", "--n-trials", "20"]) == 0
    out = capsys.readouterr().out.splitlines()
    first = out[0]
    assert first == "fidelity   exact (auto, the default: fewer than 600 rows, not timed)"
    assert out.index(first) < next(i for i, x in enumerate(out) if x.startswith("study "))


def test_demo_searches_with_the_default_too(tmp_path, monkeypatch, capsys, no_timing):
    from optuna_boxcox.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "fidelity   exact (auto, the default: fewer than 600 rows, not timed)" in out
    study = optuna.load_study(
        study_name="demo/wine/knn/coordinate", storage="sqlite:///studies/optuna-boxcox.db"
    )
    assert study.user_attrs[SPEC_ATTR]["fidelity_choice"]["default"] is True


def test_search_prints_halving_with_the_exact_estimate(tmp_path, capsys, monkeypatch):
    from optuna_boxcox.cli import main

    X, y = make_classification(1500, 4, random_state=0)
    pd.DataFrame(np.exp(X / 2)).assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    # As if each fit took 5 s at 1,000 rows, growing as rows² (and no cost class to say small).
    monkeypatch.setattr(
        auto_module, "measure_cost", lambda *a, **k: CostModel(((500, 1.25), (1000, 5.0)))
    )
    monkeypatch.setattr(auto_module, "VERIFY_UNDER_SECONDS", 0.0)
    monkeypatch.setattr(rungs_module, "evaluators_of", lambda estimator: Evaluators())
    command = ["search", "--csv", str(tmp_path / "data.csv"), "--label", "y", "--classifier"]
    command += ["knn", "--sampler", "iterative", "--n-trials", "11", "--no-figures"]
    assert main([*command, "--storage", f"sqlite:///{tmp_path}/s.db"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("fidelity   halving from 500 to 1,500 rows, η=3 (KNeighborsClassifier")
    assert "exact search ~" in line and "min estimated, this one ~" in line
    # Planned for every position new (1.5 s a point on 500 rows, 11 s on 1,500): over the
    # budget, and the cap cannot go below the second rung.
    assert "(at most ~13 min); auto, the default: top rung capped" in line


def test_the_classifier_exposes_its_fidelity(no_timing):
    X, y = load_breast_cancer(return_X_y=True)
    clf = BoxCoxClassifier(make_classifier("bayes"), sampler="spherical").fit(X, y)
    assert clf.fidelity_["summary"] == "exact (auto, the default: fewer than 600 rows, not timed)"
    assert clf.fidelity_["fidelity"] is None and clf.fidelity_["default"] is True
    asked = BoxCoxClassifier(make_classifier("bayes"), sampler="spherical", fidelity="exact")
    assert asked.fit(X, y).fidelity_["summary"] == "exact (as asked)"
