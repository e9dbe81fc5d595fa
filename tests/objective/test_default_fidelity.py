"""The default fidelity: ``auto`` for a new study, decided in ``plan_search``; a resumed study keeps
its own; ``auto`` prices the search from the classifier's cost class and the data's shape, never a
clock, so the paper's searches write the trials they wrote before and a busy machine decides as a
quiet one."""

from __future__ import annotations

import numpy as np
import optuna
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.datasets import load_digits
from sklearn.datasets import make_classification

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox._lifecycle._search import RunOptions
from optuna_boxcox._lifecycle._search import Where
from optuna_boxcox._lifecycle._search import plan_search
from optuna_boxcox._lifecycle._search import run_search
from optuna_boxcox._objective import _auto as auto_module
from optuna_boxcox._objective import _rungs as rungs_module
from optuna_boxcox._objective._arguments import check_data
from optuna_boxcox._objective._evaluators import REGISTRY
from optuna_boxcox._objective._evaluators import CostClass
from optuna_boxcox._objective._evaluators import Evaluators
from optuna_boxcox._study._fidelity import DEFAULT_REQUEST
from optuna_boxcox._study._fidelity import EXACT
from optuna_boxcox._study._fidelity import AutoFidelity
from optuna_boxcox._study._spec import SPEC_ATTR
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox.classifiers import make_classifier

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture
def clock_runs_wild(monkeypatch):
    """Every clock the package could read jumps by a minute at each read, as on a machine so busy
    that every fit takes a minute: nothing ``auto`` computes may change."""
    import time

    state = {"now": 1e9}

    def wild() -> float:
        state["now"] += 60.0
        return state["now"]

    for name in ("perf_counter", "time", "monotonic", "process_time"):
        monkeypatch.setattr(time, name, wild)


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
    assert plan_search(spec, recorded=exact).spec.fidelity == EXACT
    # One made with auto resumes with what it chose.
    choice = {"fidelity": None, "requested": "auto", "reason": "x"}
    made = SearchSpec("bayes", sampler="iterative", fidelity="auto", fidelity_choice=choice)
    resumed = plan_search(spec, recorded=SearchSpec.from_dict(made.to_dict())).spec
    assert (resumed.fidelity, resumed.fidelity_choice) == (AutoFidelity(), made.fidelity_choice)
    # A subsample or a second objective rules rows as the fidelity out: exact.
    assert (
        plan_search(
            SearchSpec("bayes", sampler="iterative", subsample=100, fidelity=DEFAULT_REQUEST)
        ).spec.fidelity
        == EXACT
    )
    # What was asked for is kept.
    assert (
        plan_search(SearchSpec("bayes", sampler="iterative", fidelity=None)).spec.fidelity == EXACT
    )


def test_the_default_is_not_a_fidelity_an_objective_can_be_built_with():
    X, y = make_classification(100, 4, random_state=0)
    from optuna_boxcox import BoxCoxObjective

    with pytest.raises(ValueError, match="plan_search") as error:
        BoxCoxObjective(np.exp(X), y, make_classifier("bayes"), fidelity=DEFAULT_REQUEST)
    assert "\n" not in str(error.value)


# -- small data: exact, nothing timed ------------------------------------------------------------------
@pytest.mark.parametrize("classifier", ["bayes", "knn", "linear", "svc", "nn"])
def test_the_papers_data_are_exact_without_timing(classifier, clock_runs_wild):
    X, y = load_breast_cancer(return_X_y=True)
    spec = SearchSpec(classifier, sampler="iterative", fidelity=DEFAULT_REQUEST)
    from optuna_boxcox import BoxCoxObjective

    objective = BoxCoxObjective.from_spec(plan_search(spec).spec, X, y)
    study = optuna.create_study(direction="maximize")
    objective.register(study)
    chosen = objective.describe()["fidelity"]
    assert chosen["fidelity"] is None and chosen["default"] and chosen["priced"] == []
    assert study.user_attrs[SPEC_ATTR]["fidelity_choice"]["reason"] == "fewer than 600 rows"


@pytest.mark.parametrize("classifier", ["bayes", "knn"])
def test_digits_are_small_for_the_cheap_classifiers(classifier, clock_runs_wild):
    """1,797 × 64, 10 classes: past the rows' floor, the cost class prices the exact search short."""
    X, y = load_digits(return_X_y=True)
    from optuna_boxcox import BoxCoxObjective

    spec = plan_search(SearchSpec(classifier, sampler="iterative", fidelity=DEFAULT_REQUEST)).spec
    objective = BoxCoxObjective.from_spec(spec, X + 1.0, y)
    objective.register(optuna.create_study(direction="maximize"))
    chosen = objective.describe()["fidelity"]
    assert chosen["fidelity"] is None and chosen["reason"] == "under 20 s exact"
    assert chosen["exact_minutes"] <= auto_module.EXACT_SECONDS / 60
    assert chosen["inputs"]["features"] == 64 and chosen["inputs"]["classes"] == 10


def test_every_classifier_in_the_registry_has_a_cost_class():
    assert all(entry.cost is not None for entry in REGISTRY.values())
    for name in ("bayes", "knn", "linear", "svc", "nn"):
        assert type(make_classifier(name)) in REGISTRY
    # Growing as the evaluator does: k-NN's and the SVC's with the rows squared.
    knn, svc = (REGISTRY[type(make_classifier(n))].cost for n in ("knn", "svc"))
    assert knn.seconds(2000, 30, 2) == pytest.approx(4 * knn.seconds(1000, 30, 2))
    assert svc.seconds(2000, 30, 2) == pytest.approx(4 * svc.seconds(1000, 30, 2))


def test_large_data_halve_by_the_price_alone(clock_runs_wild):
    """20,000 rows for the SVC: halving, the same rungs however slow the clock says it is."""
    X, y = make_classification(20_000, 4, random_state=0)
    from optuna_boxcox import BoxCoxObjective

    spec = plan_search(SearchSpec("svc", sampler="iterative", fidelity=DEFAULT_REQUEST)).spec
    objective = BoxCoxObjective.from_spec(spec, np.exp(X / 2), y)
    objective.register(optuna.create_study(direction="maximize"))
    chosen = objective.describe()["fidelity"]
    assert chosen["fidelity"] == {"min_rows": 247, "eta": 3, "top_rows": None}
    assert chosen["default"] and chosen["inputs"]["classifier"] == "SVC"


def test_a_classifier_the_registry_does_not_know_is_priced_by_the_generic_class():
    from sklearn.ensemble import ExtraTreesClassifier

    from optuna_boxcox import BoxCoxObjective
    from optuna_boxcox._objective._evaluators import GENERIC_COST

    X, y = make_classification(3000, 6, random_state=0)
    spec = SearchSpec(ExtraTreesClassifier(), sampler="iterative", fidelity=DEFAULT_REQUEST)
    spec = plan_search(spec).spec
    objective = BoxCoxObjective.from_spec(spec, np.exp(X / 2), y)
    objective.register(optuna.create_study(direction="maximize"))
    chosen = objective.describe()["fidelity"]
    assert chosen["inputs"]["cost_class"] == GENERIC_COST.to_attrs()
    assert chosen["inputs"]["classifier"] == "ExtraTreesClassifier"


# -- the lifecycle: the same trials as the exact search ------------------------------------------------
@pytest.mark.parametrize("sampler", ["iterative", "spherical"])
def test_the_default_search_writes_the_exact_searchs_trials(sampler, clock_runs_wild, tmp_path):
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    storage = f"sqlite:///{tmp_path}/s.db"
    spec = SearchSpec("bayes", sampler=sampler, fidelity=DEFAULT_REQUEST)
    found = run_search(spec, check_data(X, y), Where(storage=storage, study_name="s"))
    exact = run_search(
        SearchSpec("bayes", sampler=sampler), check_data(X, y), Where(storage, study_name="e")
    )
    assert _digest(found.study) == _digest(exact.study)
    record = found.study.user_attrs[SPEC_ATTR]
    assert record["fidelity"] == "auto" and record["fidelity_choice"]["default"] is True
    assert record["fidelity_choice"]["fidelity"] is None


def test_an_exact_study_made_before_resumes_exact_and_auto_asked_is_refused(tmp_path):
    from optuna_boxcox import StudyMismatch

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    storage = f"sqlite:///{tmp_path}/s.db"
    old = SearchSpec("bayes", sampler="iterative")  # exact, as every study made before
    run_search(old, check_data(X, y), Where(storage, study_name="s"), RunOptions(n_trials=30))
    again = SearchSpec("bayes", sampler="iterative", fidelity=DEFAULT_REQUEST)
    found = run_search(
        again, check_data(X, y), Where(storage, study_name="s"), RunOptions(n_trials=30)
    )
    assert found.objective.fidelity is None and len(found.study.trials) == 60
    assert "fidelity" not in found.study.user_attrs[SPEC_ATTR]  # its record is as it was
    with pytest.raises(StudyMismatch, match=r"fidelity: None there, 'auto' here"):
        run_search(
            SearchSpec("bayes", sampler="iterative", fidelity="auto"),
            check_data(X, y),
            Where(storage=storage, study_name="s"),
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
def test_search_prints_the_default_decision_before_the_search(tmp_path, capsys, clock_runs_wild):
    from optuna_boxcox.cli import main

    storage = f"sqlite:///{tmp_path}/s.db"
    command = ["search", "--dataset", "wine", "--classifier", "knn", "--sampler", "iterative"]
    assert main([*command, "--storage", storage, "--no-figures", "--n-trials", "20"]) == 0
    out = capsys.readouterr().out.splitlines()
    first = out[0]
    assert first == "fidelity   exact (auto, the default: fewer than 600 rows)"
    assert out.index(first) < next(i for i, x in enumerate(out) if x.startswith("study "))


def test_demo_searches_with_the_default_too(tmp_path, monkeypatch, capsys, clock_runs_wild):
    from optuna_boxcox.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "fidelity   exact (auto, the default: fewer than 600 rows)" in out
    study = optuna.load_study(
        study_name="demo/wine/knn/coordinate", storage="sqlite:///studies/optuna-boxcox.db"
    )
    assert study.user_attrs[SPEC_ATTR]["fidelity_choice"]["default"] is True


def test_search_prints_halving_with_the_exact_estimate(tmp_path, capsys, monkeypatch):
    from optuna_boxcox.cli import main

    X, y = make_classification(1500, 4, random_state=0)
    pd.DataFrame(np.exp(X / 2)).assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    # As if each fit took 5 s at 1,000 rows, growing as rows².
    slow = Evaluators(cost=CostClass(5e-6, 2.0))
    monkeypatch.setattr(rungs_module, "evaluators_of", lambda estimator: slow)
    command = ["search", "--csv", str(tmp_path / "data.csv"), "--label", "y", "--classifier"]
    command += ["knn", "--sampler", "iterative", "--n-trials", "11", "--no-figures"]
    assert main([*command, "--storage", f"sqlite:///{tmp_path}/s.db"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith("fidelity   halving from 500 to 1,500 rows, η=3 (KNeighborsClassifier")
    assert "exact search ~" in line and "min estimated, this one ~" in line
    # Planned for every position new (1.5 s a point on 500 rows, 11 s on 1,500): over the
    # budget, and the cap cannot go below the second rung.
    assert "(at most ~13 min); auto, the default: top rung capped" in line


def test_the_classifier_exposes_its_fidelity(clock_runs_wild):
    X, y = load_breast_cancer(return_X_y=True)
    clf = BoxCoxClassifier(make_classifier("bayes"), sampler="spherical").fit(X, y)
    assert clf.fidelity_["summary"] == "exact (auto, the default: fewer than 600 rows)"
    assert clf.fidelity_["fidelity"] is None and clf.fidelity_["default"] is True
    asked = BoxCoxClassifier(make_classifier("bayes"), sampler="spherical", fidelity="exact")
    assert asked.fit(X, y).fidelity_["summary"] == "exact (as asked)"
