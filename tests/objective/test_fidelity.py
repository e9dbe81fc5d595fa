"""Rows as the fidelity: rungs, the sub-objectives on row subsets, the ``auto`` choice, Optuna's
pruners on the objective's reports, and the fidelity as part of a study's identity."""

from __future__ import annotations

import numpy as np
import optuna
import pandas as pd
import pytest
from sklearn.datasets import make_classification
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import StudyMismatch
from optuna_boxcox._objective import _auto as auto_module
from optuna_boxcox._objective import _rungs as rungs_module
from optuna_boxcox._objective._auto import EXACT_SECONDS
from optuna_boxcox._objective._auto import CostModel
from optuna_boxcox._objective._auto import choose_fidelity
from optuna_boxcox._objective._auto import halving_seconds
from optuna_boxcox._objective._evaluators import REGISTRY
from optuna_boxcox._objective._evaluators import CostClass
from optuna_boxcox._objective._evaluators import Evaluators
from optuna_boxcox._study._fidelity import DEFAULT_BUDGET_SECONDS
from optuna_boxcox._study._fidelity import AutoFidelity
from optuna_boxcox._study._fidelity import Fidelity
from optuna_boxcox._study._fidelity import FidelityChoice
from optuna_boxcox._study._spec import SPEC_ATTR
from optuna_boxcox._study._spec import SearchSpec

optuna.logging.set_verbosity(optuna.logging.WARNING)


def skewed(n, p=6, seed=0, classes=2):
    X, y = make_classification(
        n, p, n_informative=3, n_classes=classes, n_clusters_per_class=1, random_state=seed
    )
    return np.exp(X / 2), y


def cost(seconds_at_1000: float, exponent: float) -> CostModel:
    """A fixed cost model: the decisions below cannot depend on the machine."""
    return CostModel(((500, seconds_at_1000 / 2**exponent), (1000, seconds_at_1000)))


# -- Fidelity ------------------------------------------------------------------------------------
def test_rungs_grow_by_eta_to_all_rows_or_the_cap():
    assert Fidelity(556).rungs(5000) == (556, 1668, 5000)
    assert Fidelity(100, eta=2).rungs(1000) == (100, 200, 400, 800, 1000)
    assert Fidelity(556, top_rows=2000).rungs(5000) == (556, 1668, 2000)
    assert Fidelity(556, top_rows=9000).rungs(5000) == (556, 1668, 5000)
    assert Fidelity(300).rungs(900) == (300, 900)  # the top is exactly a power: no repeat


@pytest.mark.parametrize(
    "alive, eta, promoted", [(11, 3, 3), (3, 3, 1), (2, 3, 1), (1, 3, 1), (9, 2, 4)]
)
def test_promoted_keeps_a_third_and_at_least_one(alive, eta, promoted):
    assert Fidelity(10, eta=eta).promoted(alive) == promoted


def test_attrs_round_trip_and_bad_values_are_one_line():
    fidelity = Fidelity(556, 4, 3000)
    assert Fidelity.from_attrs(fidelity.to_attrs()) == fidelity
    for bad in (dict(min_rows=1), dict(min_rows=10, eta=1), dict(min_rows=10, top_rows=5)):
        with pytest.raises(ValueError, match="fidelity") as error:
            Fidelity(**bad)
        assert "\n" not in str(error.value)


# -- the auto choice, from fixed cost models -----------------------------------------------------
def test_auto_is_exact_when_the_exact_search_is_short():
    choice = choose_fidelity(20_000, 2, cost(0.001, 1.0), positions=900)
    assert choice.fidelity is None
    assert choice.exact_minutes * 60 <= EXACT_SECONDS


def test_auto_is_exact_when_too_few_rows_for_two_rungs():
    assert choose_fidelity(590, 2, cost(10.0, 2.0), positions=900).fidelity is None


def test_auto_halves_from_the_floor_to_all_rows_when_the_search_fits():
    # 0.2 s a fit at 1,000 rows, quadratic: 5 s at 5,000, 900 positions: 75 min exact.
    choice = choose_fidelity(5000, 2, cost(0.2, 2.0), positions=900)
    assert choice.fidelity == Fidelity(556, 3)  # 5000 / 3^2: the most rungs above 200 rows
    assert choice.exact_minutes == pytest.approx(75, rel=1e-3)
    assert choice.search_minutes < choice.exact_minutes / 2
    assert choice.reason == "halving pays"


def test_auto_floor_grows_with_the_classes():
    # 10 rows per class: 30 classes need 300 rows in the first rung.
    choice = choose_fidelity(5000, 30, cost(0.5, 2.0), positions=900)
    assert choice.fidelity.min_rows >= 300


def test_auto_caps_the_top_rung_to_fit_the_budget():
    choice = choose_fidelity(50_000, 2, cost(0.05, 2.0), positions=1320, budget_seconds=1200)
    rungs = choice.fidelity.rungs(50_000)
    assert choice.fidelity.top_rows is not None and rungs[-1] < 50_000
    assert choice.most_minutes * 60 <= 1200
    uncapped = halving_seconds(
        cost(0.05, 2.0), Fidelity(choice.fidelity.min_rows).rungs(50_000), 1320, 11, 3
    )
    assert uncapped > 1200  # the cap was needed
    # The largest top that fits, with two points confirmed on all rows (2 × 125 s here).
    confirming = 2 * cost(0.05, 2.0).seconds(50_000)
    assert choice.search_minutes * 60 > confirming
    one_more = Fidelity(choice.fidelity.min_rows, 3, choice.fidelity.top_rows + 1)
    over = halving_seconds(cost(0.05, 2.0), one_more.rungs(50_000), 1320, 11, 3)
    assert over + confirming > 1200


def test_auto_stays_exact_when_the_cost_does_not_grow_with_rows():
    flat = CostModel(((500, 2.0), (1000, 2.0)))  # the exponent is kept at 1 at least
    assert flat.exponent == 1.0
    choice = choose_fidelity(1200, 2, flat, positions=900, batch=2)
    assert choice.fidelity is None and "half" in choice.reason


def test_auto_prices_through_the_cost_class_and_records_why():
    X, y = skewed(3000)
    request = AutoFidelity(positions=10**6, batch=10**5)
    objective = BoxCoxObjective(X, y, GaussianNB(), fidelity=request)
    described = objective.describe()["fidelity"]
    assert described["requested"] == "auto"
    # Priced at 100 rows and each doubling, then at all rows: GaussianNB's class, linear.
    priced = described["priced"]
    assert [r for r, _ in priced] == [100, 200, 400, 800, 1600, 3000]
    unit = priced[0][1] / 100
    assert [s for _, s in priced] == pytest.approx([unit * r for r, _ in priced])
    assert described["inputs"] == {
        "classifier": "GaussianNB",
        "cost_class": REGISTRY[GaussianNB].cost.to_attrs(),
        "features": 6,
        "classes": 2,
        "folds": 1,
    }
    assert described["exact_minutes"] > 0
    # A million positions: over a minute whichever way, and the choice says how long at most.
    assert described["most_minutes"] >= described["search_minutes"] > 1
    # The same inputs, the same choice.
    again = BoxCoxObjective(X, y, GaussianNB(), fidelity=request).describe()["fidelity"]
    assert again == described


def test_the_price_model_is_the_cost_class_at_every_rows():
    knn = REGISTRY[KNeighborsClassifier].cost
    pricing = auto_module.Pricing(knn, features=30, classes=2, folds=5)
    model = pricing.model(50_000)
    for rows in (206, 700, 5_000, 33_333, 50_000):
        assert model.seconds(rows) == pytest.approx(5 * knn.seconds(rows, 30, 2))
    assert model.sweep_ratio == knn.sweep_ratio  # a sweep's fixed part is priced too


def test_choice_summary_is_one_line():
    choice = choose_fidelity(5000, 2, cost(0.2, 2.0), positions=900)
    line = choice.summary(5000, "SVC")
    assert line.startswith("halving from 556 to 5,000 rows, η=3 (SVC ~5 s a fit at 5,000 rows")
    assert "exact search ~75 min estimated" in line and "\n" not in line
    assert FidelityChoice.from_attrs(choice.to_attrs()) == choice


# -- the objective's rungs ---------------------------------------------------------------------------
def test_exact_has_no_rungs():
    X, y = skewed(400)
    for exact in (None, "exact"):
        objective = BoxCoxObjective(X, y, GaussianNB(), fidelity=exact)
        assert objective.fidelity is None and objective.rungs == ()
        assert objective.at_rows(400) is objective


def test_at_rows_scores_a_stratified_subset_transformed_as_all_rows():
    X, y = skewed(1000, classes=3)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(6)])
    objective = BoxCoxObjective(frame, y, GaussianNB(), fidelity=100)
    assert objective.rungs == (100, 300, 900, 1000)
    sub = objective.at_rows(300)
    assert sub is objective.at_rows(300)  # built once
    assert objective.at_rows(1000) is objective
    assert len(sub.X) == 300 and np.array_equal(sub.X, X[sub.rows])
    # Stratified: each class in proportion.
    assert np.bincount(sub.y).tolist() == pytest.approx(np.bincount(y) * 0.3, abs=1)
    # The [1, 2] scaling and the MLE start point come from all rows.
    assert np.array_equal(sub.values, objective.values[sub.rows])
    assert sub.mle_params == objective.mle_params
    assert sub.initial_params == objective.initial_params
    assert sub.param_names == ["f0", "f1", "f2", "f3", "f4", "f5"]
    lambdas = np.full(6, 0.5)
    expected = GaussianNB().fit(sub.transform(lambdas), sub.y).score(sub.transform(lambdas), sub.y)
    assert sub.evaluate(lambdas) == pytest.approx(expected)
    assert objective.n_evaluations == 0  # the sub-objective has its own cache


def test_prepare_rungs_builds_each_rung_once():
    X, y = skewed(1000)
    objective = BoxCoxObjective(X, y, GaussianNB(), fidelity=Fidelity(200, 2))
    objective.prepare_rungs()
    rungs = [objective.at_rows(r) for r in objective.rungs]
    objective.prepare_rungs()
    assert [objective.at_rows(r) for r in objective.rungs] == rungs
    assert "rung of 200 rows" in objective.describe()["memory"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(fidelity=1000), "must be below the 1000 rows"),
        (dict(fidelity=3), "at least 2 rows per class"),
        (dict(fidelity=100, subsample=500), "fidelity and subsample"),
        (dict(fidelity="fast"), "fidelity must be 'exact', 'auto'"),
        (dict(fidelity=1.5), "fidelity must be"),
    ],
)
def test_bad_fidelity_is_one_line(kwargs, message):
    X, y = skewed(1000)
    with pytest.raises(ValueError, match=message) as error:
        BoxCoxObjective(X, y, GaussianNB(), **kwargs)
    assert "\n" not in str(error.value)


# -- Optuna's pruners ----------------------------------------------------------------------------------
def test_tpe_with_successive_halving_prunes_at_the_rungs():
    X, y = skewed(2000)
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), fidelity=200)
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=0),
        pruner=optuna.pruners.SuccessiveHalvingPruner(min_resource=200, reduction_factor=3),
    )
    study.optimize(objective, n_trials=30)
    states = [t.state for t in study.trials]
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    assert pruned and optuna.trial.TrialState.COMPLETE in states
    for trial in study.trials:
        steps = list(trial.intermediate_values)
        assert steps == list(objective.rungs[: len(steps)]), steps
        rows = steps[-1]
        assert trial.value == pytest.approx(objective.at_rows(rows).evaluate(trial.params))
    assert all(len(t.intermediate_values) < len(objective.rungs) for t in pruned)


def test_nop_pruner_values_are_the_exact_objectives():
    X, y = skewed(1000)
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), fidelity=200)
    exact = BoxCoxObjective(X, y, KNeighborsClassifier())
    study = optuna.create_study(
        direction="maximize",
        sampler=optuna.samplers.TPESampler(seed=1),
        pruner=optuna.pruners.NopPruner(),
    )
    study.optimize(objective, n_trials=12)
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    for trial in study.trials:
        assert trial.value == exact.evaluate(trial.params)
        assert list(trial.intermediate_values) == [200, 600, 1000]


# -- identity ------------------------------------------------------------------------------------------
def _study(objective):
    study = optuna.create_study(direction="maximize")
    objective.register(study)
    return study


def test_an_exact_study_is_not_continued_with_auto():
    X, y = skewed(1000)
    study = _study(BoxCoxObjective(X, y, GaussianNB()))
    with pytest.raises(StudyMismatch, match=r"\(fidelity: None there, 'auto' here\)"):
        BoxCoxObjective(X, y, GaussianNB(), fidelity="auto").register(study)


def test_a_halving_study_is_not_continued_with_other_rungs():
    X, y = skewed(1000)
    study = _study(BoxCoxObjective(X, y, GaussianNB(), fidelity=200))
    with pytest.raises(StudyMismatch, match="fidelity"):
        BoxCoxObjective(X, y, GaussianNB(), fidelity=300).register(study)
    with pytest.raises(StudyMismatch, match="fidelity"):
        BoxCoxObjective(X, y, GaussianNB()).register(study)


def test_auto_resumed_reads_its_rungs_from_the_study_without_choosing_again(monkeypatch):
    X, y = skewed(3000)
    first = BoxCoxObjective.from_spec(
        SearchSpec("bayes", fidelity=AutoFidelity(positions=10**6, batch=10**5)), X, y
    )
    study = _study(first)
    record = study.user_attrs[SPEC_ATTR]
    assert record["fidelity"] == "auto"
    chosen = None if first.fidelity is None else first.fidelity.to_attrs()
    assert record["fidelity_choice"]["fidelity"] == chosen
    # Pretend the study recorded other rungs: a resumed auto uses them, it does not re-measure.
    recorded = dict(record["fidelity_choice"], fidelity=Fidelity(250, 2).to_attrs())
    study.set_user_attr(SPEC_ATTR, dict(record, fidelity_choice=recorded))
    # Chosen here before it met the study (a short search: exact), the study's rungs still win.
    early = BoxCoxObjective.from_spec(
        SearchSpec("bayes", fidelity=AutoFidelity(positions=1)), X, y
    )
    assert early.fidelity is None
    early.register(study)
    assert early.fidelity == Fidelity(250, 2)

    def no_choosing(*args, **kwargs):
        raise AssertionError("auto chose again instead of reading the study")

    monkeypatch.setattr(rungs_module, "choose_auto", no_choosing)
    again = BoxCoxObjective.from_spec(SearchSpec("bayes", fidelity="auto"), X, y)
    again.register(study)
    assert again.fidelity == Fidelity(250, 2)
    # A worker builds its objective from the study's spec: the same rungs.
    spec = SearchSpec.of_study(study)
    assert BoxCoxObjective.from_spec(spec, X, y).fidelity == Fidelity(250, 2)


def test_exact_studies_keep_their_record():
    X, y = skewed(400)
    record = _study(BoxCoxObjective(X, y, GaussianNB())).user_attrs[SPEC_ATTR]
    assert "fidelity" not in record and "fidelity_choice" not in record


def test_auto_caps_to_the_smallest_top_when_nothing_fits_and_says_so():
    choice = choose_fidelity(50_000, 2, cost(20.0, 1.0), positions=1320, budget_seconds=60)
    assert choice.fidelity.rungs(50_000) == (206, 618)
    assert "still over 1 min" in choice.reason


def test_the_cost_model_grows_from_the_last_timings_and_never_too_slowly():
    steady = CostModel(((500, 9.0), (1000, 0.001), (2000, 0.004), (4000, 0.016)))
    assert steady.exponent == pytest.approx(2.0)  # the first timing is not among the last three
    assert steady.seconds(8000) == pytest.approx(0.064)
    # The first of the three too slow (4 ms where 1 ms was due): least squares says 1, the last
    # two say 2, and the steeper is kept.
    disturbed = CostModel(((1000, 0.004), (2000, 0.004), (4000, 0.016)))
    assert disturbed.exponent == pytest.approx(2.0)
    # The last pair steeper than the three together: it is kept too (safe side of the budget).
    assert CostModel(((1000, 0.001), (2000, 0.002), (4000, 0.016))).exponent == pytest.approx(3.0)
    assert CostModel(((500, 0.5),)).seconds(1000) == pytest.approx(1.0)  # one timing: linear


# -- the command line ------------------------------------------------------------------------------
def test_search_prints_the_auto_choice_and_a_resumed_search_reads_it(
    tmp_path, capsys, monkeypatch
):
    from optuna_boxcox.cli import main

    X, y = skewed(1500)
    pd.DataFrame(X).assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    command = ["search", "--csv", str(tmp_path / "data.csv"), "--label", "y"]
    command += ["--classifier", "knn", "--sampler", "tpe", "--n-trials", "12", "--no-figures"]
    command += ["--storage", f"sqlite:///{tmp_path}/s.db", "--fidelity", "auto"]
    # As if each fit took 10 s at 1,000 rows, growing as rows²: halving pays.
    slow = Evaluators(cost=CostClass(1e-5, 2.0))
    monkeypatch.setattr(rungs_module, "evaluators_of", lambda estimator: slow)
    assert main(command) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("fidelity"))
    assert line.startswith("fidelity   halving from 500 to 1,500 rows, η=3 (KNeighborsClassifier")

    def no_choosing(*args, **kwargs):
        raise AssertionError("a resumed auto search chose again")

    monkeypatch.setattr(rungs_module, "choose_auto", no_choosing)
    # --n-trials is the study's total: 4 more.
    more = [
        ("16" if previous == "--n-trials" else x) for previous, x in zip(["", *command], command)
    ]
    assert main(more) == 0
    again = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("fidelity"))
    assert again == line
    study = optuna.load_study(study_name=None, storage=f"sqlite:///{tmp_path}/s.db")
    assert len(study.trials) == 16
    assert all(set(t.intermediate_values) <= {500, 1500} for t in study.trials)


# -- the cost model counts new points; k-NN's sweep pays its fixed part -----------------------------
def test_new_points_are_the_middle_of_the_fewest_and_the_most():
    # The iterative search on 30 features: 4 epochs × 30 sweeps of 11 points; at least the first
    # pass (330) is new, at most all 1,320: the geometric middle is 2× from either.
    assert auto_module.expected_new_points(1320, 30, 11) == 660
    # Optuna's samplers (one batch of all their trials) and a plan within one pass: all new.
    assert auto_module.expected_new_points(100, 30, 100) == 100
    assert auto_module.expected_new_points(200, 30, 11) == 200


def test_the_estimates_count_new_points_and_the_budget_holds_for_all_positions():
    by_positions = choose_fidelity(50_000, 2, cost(0.05, 2.0), positions=1320)
    by_points = choose_fidelity(50_000, 2, cost(0.05, 2.0), positions=1320, new_points=660)
    assert by_points.exact_minutes == pytest.approx(by_positions.exact_minutes * 660 / 1320)
    assert by_points.search_minutes < by_positions.search_minutes
    # The top rung is planned for every position new (the MLP's search scored 99.5 % new
    # points), so the budget holds whatever the estimate counted.
    assert by_points.fidelity == by_positions.fidelity
    assert by_points.most_minutes == by_positions.most_minutes <= DEFAULT_BUDGET_SECONDS / 60
    assert by_points.new_points == 660 and by_points.to_attrs()["new_points"] == 660


def test_a_fit_costs_at_least_what_the_fewest_rows_timed_cost():
    # The MLP: 0.42 s at 500 rows, 0.62 at 1,000, 4.0 at 5,562 (measured on 50,000 × 30).
    mlp = CostModel(((500, 0.42), (1000, 0.62), (5562, 4.03)))
    assert mlp.seconds(206) == pytest.approx(0.42)  # not 0.11 from the power law
    assert 0.42 < mlp.seconds(700) < 0.62  # interpolated between the timings
    assert mlp.seconds(5562) == pytest.approx(4.03)
    assert mlp.seconds(50_000) == pytest.approx(4.03 * (50_000 / 5562) ** mlp.exponent)
    # A disturbed timing does not make more rows cheaper.
    bumpy = CostModel(((500, 0.5), (1000, 0.3), (2000, 1.0)))
    costs = [bumpy.seconds(n) for n in (200, 500, 700, 1000, 1500, 2000, 4000)]
    assert costs == sorted(costs)


def test_a_sweep_evaluator_pays_its_fixed_part_for_one_point_too():
    # k-NN on 50,000 rows: a sweep of 11 points 6.8 s, one of 2 points 6.5 s (measured).
    knn = CostModel(((16_000, 0.07), (50_000, 6.8 / 11)), sweep_ratio=(6.8 / 11) / (6.5 / 2))
    assert knn.batch_seconds(50_000, 11) == pytest.approx(6.8)
    assert knn.batch_seconds(50_000, 2) == pytest.approx(6.5)
    assert knn.batch_seconds(50_000, 1) == pytest.approx(6.5 - 0.3 / 9)
    # Per point, one candidate on the top rung would have been 0.62 s: halving does not pay, and
    # a search whose exact time is over the budget gets a capped top rung instead.
    choice = choose_fidelity(50_000, 2, knn, positions=1320, new_points=660)
    assert choice.fidelity is not None and choice.fidelity.top_rows < 50_000
    assert choice.most_minutes * 60 <= DEFAULT_BUDGET_SECONDS
    per_point = CostModel(knn.priced)
    assert halving_seconds(knn, (206, 618, 1854, 5562, 16686, 50_000), 660, 11, 3) > 5 * (
        halving_seconds(per_point, (206, 618, 1854, 5562, 16686, 50_000), 660, 11, 3)
    )
