"""The guarded default: a searched Λ is kept only where it beats the anchors on held-out rows.

One test per decision path, each checking what the fitted estimator and the study report, and what
``search`` prints and records.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import optuna
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import optimize
from optuna_boxcox._lifecycle._guard import DECISION_ATTR
from optuna_boxcox._lifecycle._guard import decide
from optuna_boxcox._math._numerics import range_pair as _guard_range_pair
from optuna_boxcox._study._decision import Decision
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.cli import main
from optuna_boxcox.cli._args import load_data_source
from optuna_boxcox.samplers._registry import sampler_of


def curved_boundary(seed: int = 0, n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Two uniform features whose class boundary z0^-4 + z1^-4 = c is a straight line only for
    λ = -4: the anchors (MLE λ ≈ 1 for uniform features, and λ = 1) leave naive Bayes a curved
    boundary to approximate, the search finds λ that bend it closer."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(1.0, 2.0, size=(n, 2))
    s = (X**-4.0).sum(axis=1)
    return X, (s < np.median(s)).astype(int)


def test_a_searched_lambda_that_wins_on_unseen_rows_is_kept():
    X, y = curved_boundary()
    clf = BoxCoxClassifier(make_classifier("bayes")).fit(X, y)
    decision = clf.decision_
    assert decision["chosen"] == "searched"
    assert decision["gated"]
    np.testing.assert_array_equal(clf.lambdas_, clf.search_lambdas_)
    # Beaten by more than the noise: several corrected standard errors.
    assert decision["difference"] > decision["threshold"] > 0
    assert decision["scores"]["searched"] > max(decision["scores"]["mle"], 0.9)
    assert clf.study_.user_attrs[DECISION_ATTR] == decision
    assert clf.best_score_ == clf.study_.best_value
    assert clf.score(X, y) > 0.9


def test_a_linear_classifier_keeps_the_searched_lambda_ungated():
    X, y = curved_boundary(n=200)
    y = np.random.default_rng(1).permutation(y)
    clf = BoxCoxClassifier(make_classifier("linear")).fit(X, y)
    assert clf.decision_["gated"] is False
    assert clf.decision_["chosen"] == "searched"
    np.testing.assert_array_equal(clf.lambdas_, clf.search_lambdas_)
    assert clf.study_.user_attrs[DECISION_ATTR] == clf.decision_


def test_logistic_regression_is_gated_by_cross_validation():
    X, y = curved_boundary(n=200)
    y = np.random.default_rng(1).permutation(y)
    clf = BoxCoxClassifier(LogisticRegression(max_iter=2000)).fit(X, y)
    assert clf.decision_["gated"] is True
    assert clf.decision_["criterion"] == "5x2 cv"
    # On permuted labels nothing the search found holds up on held-out folds.
    assert clf.decision_["chosen"] in ("mle", "ones")


def test_on_permuted_labels_the_anchor_is_used():
    X, y = curved_boundary(n=300)
    y = np.random.default_rng(1).permutation(y)
    clf = BoxCoxClassifier(make_classifier("knn")).fit(X, y)
    decision = clf.decision_
    assert decision["gated"]
    assert decision["criterion"] == "leave-one-out"
    # k-NN's only anchor is Λ = 1 (the MLE Λ is scored, a fallback only where the searched Λ wins).
    assert decision["chosen"] == decision["anchor"] == "ones"
    assert decision["difference"] <= decision["threshold"]
    np.testing.assert_allclose(clf.lambdas_, decision["lambdas"])
    np.testing.assert_array_equal(clf.lambdas_, 1.0)
    # The search still ran and is still recorded: its Λ is kept aside, not used.
    assert clf.search_lambdas_.shape == (2,)
    assert len(clf.study_.trials) > 1
    assert clf.study_.user_attrs[DECISION_ATTR]["chosen"] == decision["chosen"]
    # The prediction is the anchor's: Λ = 1 after the [1, 2] scaling is standard scaling.
    plain = make_pipeline(StandardScaler(), make_classifier("knn")).fit(X, y)
    assert np.mean(clf.predict(X) == plain.predict(X)) > 0.99


def test_the_paper_samplers_are_not_gated():
    X, y = curved_boundary(n=120)
    y = np.random.default_rng(1).permutation(y)
    clf = BoxCoxClassifier(make_classifier("knn"), sampler="coordinate").fit(X, y)
    assert clf.decision_ is None
    assert DECISION_ATTR not in clf.study_.user_attrs
    np.testing.assert_array_equal(clf.lambdas_, clf.search_lambdas_)
    guarded = BoxCoxClassifier(make_classifier("knn"), sampler="guarded").fit(X, y)
    # The same search: the guarded default adds a decision, not other trials.
    assert [t.params for t in guarded.study_.trials] == [t.params for t in clf.study_.trials]
    assert guarded.decision_ is not None


def test_an_ensemble_is_not_gated():
    X, y = curved_boundary(n=120)
    clf = BoxCoxClassifier(make_classifier("bayes"), ensemble=2).fit(X, y)
    assert clf.decision_ is None


@pytest.mark.filterwarnings(
    "ignore::optuna_boxcox._lifecycle._search.FewRowsWarning"
)  # tiny on purpose
@pytest.mark.parametrize("estimator", [None, make_classifier("bayes"), make_classifier("svc")])
def test_too_few_rows_for_the_gates_folds_use_standard_scaling_saying_why(estimator):
    # Issue #54: 4 rows of two classes ran the gate's 5x2 CV (every candidate 0.5) and kept an
    # anchor by a tie, saying nothing of the data being too small to judge.
    X = np.array([[1.0, 2], [2, 3], [3, 1], [4, 5], [5, 5], [6, 1]])
    y = np.array([0, 0, 0, 0, 1, 2])
    clf = BoxCoxClassifier(estimator).fit(X, y)
    assert clf.decision_["gated"] is False
    assert clf.decision_["chosen"] == "ones"
    assert (
        "smallest class has 1 row, too few for the gate's 5 held-out folds"
        in clf.decision_["rule"]
    )
    np.testing.assert_array_equal(clf.lambdas_, np.ones(2))
    decision = Decision.from_dict(clf.decision_)
    assert decision.describe().startswith(
        "anchor ones used, not gated (the smallest class has 1 row"
    )
    assert decision.to_dict() == clf.decision_


@pytest.mark.filterwarnings(
    "ignore::optuna_boxcox._lifecycle._search.FewRowsWarning"
)  # tiny on purpose
def test_a_linear_classifier_on_too_few_rows_keeps_its_searched_lambda_ungated():
    X = np.array([[1.0, 2], [2, 3], [3, 1], [4, 5], [5, 5], [6, 1]])
    y = np.array([0, 0, 0, 1, 1, 1])
    clf = BoxCoxClassifier(make_classifier("linear")).fit(X, y)
    assert clf.decision_["chosen"] == "searched"
    assert "linear classifier" in clf.decision_["rule"]
    np.testing.assert_array_equal(clf.lambdas_, clf.search_lambdas_)


def test_decide_prefers_the_start_point_on_a_tie_and_needs_more_than_the_noise():
    X, y = curved_boundary(n=120)
    same = np.ones(2)
    decision = decide(
        make_classifier("bayes"),
        X,
        y,
        {"searched": same, "mle": same, "ones": same},
        lambda a, b: float(np.mean(a == b)),
    )
    assert decision.chosen == "mle"
    assert decision.difference == 0.0
    assert decision.threshold == 0.0


@pytest.mark.parametrize(("permute", "kept"), [(False, True), (True, False)])
def test_search_prints_and_records_the_decision(tmp_path, capsys, permute, kept):
    X, y = curved_boundary(n=300)
    if permute:
        y = np.random.default_rng(1).permutation(y)
    frame = pd.DataFrame(X, columns=["x0", "x1"]).assign(y=y)
    path = tmp_path / "curved.csv"
    frame.to_csv(path, index=False)
    storage = f"sqlite:///{tmp_path / 's.db'}"
    classifier = "bayes" if not permute else "knn"
    args = ["search", "--csv", str(path), "--label", "y", "--classifier", classifier]
    assert main([*args, "--storage", storage, "--no-figures"]) == 0
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if line.startswith("decision")]
    assert ("searched Λ kept" in line) == kept
    assert ("anchor" in line) == (not kept)
    (summary,) = optuna.get_all_study_summaries(storage)
    assert summary.study_name.endswith(f"/{classifier}/guarded")
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    recorded = study.user_attrs[DECISION_ATTR]
    assert (recorded["chosen"] == "searched") == kept


def test_search_reports_no_search_score_for_a_default_that_searches_no_lambda(
    tmp_path, capsys, monkeypatch
):
    """A rule without search (the MLP's) runs the MLE as its one trial: the score line shows the
    base and MLE scores and no "Box-Cox search" score that would only repeat the MLE's. Naive
    Bayes stands in for the MLP (whose 40 gate fits cost a minute here)."""
    import dataclasses

    from sklearn.naive_bayes import GaussianNB

    from optuna_boxcox._objective._evaluators import REGISTRY
    from optuna_boxcox._study._decision import ALL_ANCHORS
    from optuna_boxcox._study._decision import Rule

    entry = dataclasses.replace(REGISTRY[GaussianNB], rule=Rule(anchors=ALL_ANCHORS, search=False))
    monkeypatch.setitem(REGISTRY, GaussianNB, entry)
    X, y = curved_boundary(n=200)
    path = tmp_path / "curved.csv"
    pd.DataFrame(X, columns=["x0", "x1"]).assign(y=y).to_csv(path, index=False)
    args = ["search", "--csv", str(path), "--label", "y", "--classifier", "bayes"]
    assert main([*args, "--storage", f"sqlite:///{tmp_path / 's.db'}", "--no-figures"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    (at,) = [i for i, line in enumerate(lines) if line.startswith("score")]
    score = "\n".join(lines[at : at + 2])  # the Λ used's score, then the candidates'
    (decision,) = [line for line in lines if line.startswith("decision")]
    assert "MLE" in lines[at + 1] and "Box-Cox search" not in score
    assert "no Λ search" in decision
    monkeypatch.undo()  # the registry's own rule: naive Bayes searches, and the line says so
    assert main([*args, "--storage", f"sqlite:///{tmp_path / 't.db'}", "--no-figures"]) == 0
    assert "Box-Cox search" in capsys.readouterr().out


@pytest.mark.parametrize("block_rows", [None, 7])
@pytest.mark.parametrize("k", [1, 5])
@pytest.mark.parametrize("load", ["iris", "wine"])
def test_the_gates_k_nn_predicts_as_scikit_learn(load, k, block_rows, monkeypatch):
    """The gate's NumPy k-NN against scikit-learn as the oracle: held-out predictions, and exact
    leave-one-out (scikit-learn fitted on the other rows). Iris has many tied distances. With
    ``block_rows`` the distances are computed 7 rows at a time (on large data a block holds at
    most the gate's memory block), which must not change an answer."""
    from sklearn import datasets
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import StandardScaler

    from optuna_boxcox._objective._evaluators import knn_held_out as _knn
    from optuna_boxcox._objective._evaluators.knn_held_out import leave_one_out_correct
    from optuna_boxcox._objective._evaluators.knn_held_out import neighbour_predictions

    if block_rows is not None:
        monkeypatch.setattr(_knn, "BLOCK_BYTES", 8 * block_rows * 178)

    X, y = getattr(datasets, f"load_{load}")(return_X_y=True)
    T = StandardScaler().fit_transform(X)
    knn = KNeighborsClassifier(k)
    rows = np.random.default_rng(0).permutation(len(y))
    train, test = rows[: len(y) * 4 // 5], rows[len(y) * 4 // 5 :]
    predicted = neighbour_predictions(knn, T[train], y[train], T[test])
    np.testing.assert_array_equal(predicted, knn.fit(T[train], y[train]).predict(T[test]))
    expected = [
        knn.fit(np.delete(T, i, 0), np.delete(y, i)).predict(T[i : i + 1])[0] == y[i]
        for i in range(len(y))
    ]
    np.testing.assert_array_equal(leave_one_out_correct(knn, T, y), expected)


def test_the_gate_judges_each_classifier_by_its_rule():
    from sklearn.metrics import accuracy_score
    from sklearn.metrics import balanced_accuracy_score

    from optuna_boxcox._lifecycle._guard import Rule
    from optuna_boxcox._lifecycle._guard import rule_of
    from optuna_boxcox._objective._evaluators.knn_held_out import GATE_RULE as KNN_RULE
    from optuna_boxcox._objective._evaluators.svc import GATE_RULE as SVC_RULE
    from optuna_boxcox._study._decision import ALL_ANCHORS

    y = np.arange(40) % 2
    assert rule_of(make_classifier("knn"), accuracy_score, y) == KNN_RULE
    # Leave-one-out counts rows right or wrong: other metrics are judged by 5x2 CV.
    assert rule_of(make_classifier("knn"), balanced_accuracy_score, y) == Rule()
    assert rule_of(make_classifier("svc"), accuracy_score, y) == SVC_RULE
    assert rule_of(make_classifier("bayes"), accuracy_score, y) == Rule()
    # LinearSVC against the anchors min-max scaled too; the MLP judges the anchors alone.
    assert rule_of(make_classifier("linear-svc"), accuracy_score, y).anchors == ALL_ANCHORS
    mlp_rule = rule_of(make_classifier("nn"), accuracy_score, y)
    assert mlp_rule.anchors == ALL_ANCHORS and not mlp_rule.search
    X, y = curved_boundary(n=120)
    rng = np.random.default_rng(0)
    candidates = {"searched": rng.uniform(-2, 2, 2), "mle": np.ones(2) * 0.5, "ones": np.ones(2)}
    decision = decide(make_classifier("svc"), X, y, candidates, accuracy_score)
    # The RBF SVC: the best of the three by 5x2 CV, the anchor on a tie.
    best = max(decision.scores.values())
    assert decision.scores[decision.chosen] == best
    if decision.chosen != "searched":
        assert decision.scores["searched"] <= best
    assert decision.to_dict()["criterion"] == "5x2 cv"


def test_rerunning_a_finished_guarded_search_reads_its_decision_back(
    tmp_path, capsys, monkeypatch
):
    from optuna_boxcox._lifecycle import _guard

    X, y = curved_boundary(n=300)
    frame = pd.DataFrame(X, columns=["x0", "x1"]).assign(y=y)
    path = tmp_path / "curved.csv"
    frame.to_csv(path, index=False)
    storage = f"sqlite:///{tmp_path / 's.db'}"
    args = ["search", "--csv", str(path), "--label", "y", "--classifier", "knn"]
    calls = []
    real = _guard.guard
    monkeypatch.setattr(_guard, "guard", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert main([*args, "--storage", storage, "--no-figures"]) == 0
    first = [line for line in capsys.readouterr().out.splitlines() if line.startswith("decision")]
    (summary,) = optuna.get_all_study_summaries(storage)
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    recorded = study.user_attrs[DECISION_ATTR]
    assert main([*args, "--storage", storage, "--no-figures"]) == 0
    second = [line for line in capsys.readouterr().out.splitlines() if line.startswith("decision")]
    assert len(calls) == 1  # the second run judged nothing again
    assert second == first
    # A worker joining the guarded study gates as search does: the same Λ, read back too.
    worker = ["worker", "--storage", storage, "--study-name", summary.study_name]
    assert main([*worker, "--csv", str(path)]) == 0
    assert len(calls) == 1
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    assert study.user_attrs[DECISION_ATTR] == recorded


def test_a_worker_that_finishes_a_guarded_study_gates_it(tmp_path, monkeypatch):
    from optuna_boxcox._lifecycle import _guard

    X, y = curved_boundary(n=300)
    path = tmp_path / "curved.csv"
    pd.DataFrame(X, columns=["x0", "x1"]).assign(y=y).to_csv(path, index=False)
    storage = f"sqlite:///{tmp_path / 's.db'}"
    args = ["search", "--csv", str(path), "--label", "y", "--classifier", "knn"]
    # One trial: the early decision judges another Λ than the finished search's.
    assert main([*args, "--storage", storage, "--no-figures", "--n-trials", "1"]) == 0
    (summary,) = optuna.get_all_study_summaries(storage)
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    early = study.user_attrs[DECISION_ATTR]
    calls = []
    real = _guard.guard
    monkeypatch.setattr(_guard, "guard", lambda *a, **k: calls.append(1) or real(*a, **k))
    worker = ["worker", "--storage", storage, "--study-name", summary.study_name]
    assert main([*worker, "--csv", str(path)]) == 0
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    assert len(study.trials) > 5
    late = study.user_attrs[DECISION_ATTR]
    assert late["settings"]["searched"] != early["settings"]["searched"]
    assert calls == [1]
    assert late["settings"]["searched"] == pytest.approx(
        BoxCoxClassifier(make_classifier("knn"), sampler="coordinate").fit(X, y).search_lambdas_
    )


def test_k_nn_keeps_a_searched_lambda_that_wins_leave_one_out_and_the_folds():
    """Iris, the training part of one stratified fold: the searched Λ wins exact leave-one-out by
    more than a standard error and the 5x2 CV confirms it, so it is kept."""
    from sklearn.datasets import load_iris
    from sklearn.model_selection import StratifiedKFold

    X, y = load_iris(return_X_y=True)
    train, _ = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))[2]
    clf = BoxCoxClassifier(make_classifier("knn")).fit(X[train], y[train])
    decision = clf.decision_
    assert decision["criterion"] == "leave-one-out"
    assert decision["chosen"] == "searched"
    assert decision["difference"] > decision["threshold"] > 0
    confirmation = decision["confirmation"]
    assert confirmation["searched"] > confirmation[decision["anchor"]]
    np.testing.assert_array_equal(clf.lambdas_, clf.search_lambdas_)
    assert clf.study_.user_attrs[DECISION_ATTR] == decision


def test_more_rows_than_the_gate_judges_are_a_stratified_sample(monkeypatch):
    """Above MAX_ROWS the gate decides on a stratified sample drawn with the seed: the decision is
    the one made on those rows alone, and says so (recorded, and in search's line)."""
    from sklearn.datasets import load_breast_cancer

    from optuna_boxcox._lifecycle import _guard
    from optuna_boxcox._lifecycle._guard import guard
    from optuna_boxcox._lifecycle._guard import metric_of
    from optuna_boxcox._lifecycle._guard import sample_rows

    X, y = load_breast_cancer(return_X_y=True)
    knn = make_classifier("knn")
    objective = BoxCoxObjective(X, y, knn)
    params = objective.to_params(np.asarray(objective.mle_lambdas) + 0.5)
    assert guard(objective, knn, X, y, params).sample is None  # 569 rows: all of them
    monkeypatch.setattr(_guard, "MAX_ROWS", 200)
    rows = sample_rows(y, 3)
    assert len(rows) == 200 and np.all(np.diff(rows) > 0)
    assert abs(y[rows].mean() - y.mean()) < 0.01  # stratified
    decision = guard(objective, knn, X, y, params, seed=3)
    alone = decide(
        knn,
        X[rows],
        y[rows],
        {
            "searched": objective.to_lambdas(params),
            "mle": objective.mle_lambdas,
            "ones": np.ones(X.shape[1]),
        },
        metric_of("accuracy"),
        seed=3,
    )
    assert decision.sample == (200, 569)
    assert (decision.chosen, decision.scores) == (alone.chosen, alone.scores)
    assert decision.to_dict()["rows"] == {"judged": 200, "of": 569}
    assert _guard.Decision.from_dict(decision.to_dict()).sample == (200, 569)
    assert "on a stratified sample of 200 of 569 rows" in decision.describe()


def test_the_gates_distances_survive_values_whose_squares_overflow():
    """Values near 1e155 overflow ‖a‖² (the matrix-product form gives inf − inf); their
    differences do not, and the neighbours are those of the column-by-column sum."""
    from sklearn.neighbors import KNeighborsClassifier

    from optuna_boxcox._objective._evaluators.knn_held_out import leave_one_out_correct

    rng = np.random.default_rng(0)
    T = 1e155 + rng.normal(size=(40, 3)) * 1e150
    y = (T[:, 0] > 1e155).astype(int)
    expected = [
        KNeighborsClassifier(5).fit(np.delete(T, i, 0), np.delete(y, i)).predict(T[i : i + 1])[0]
        == y[i]
        for i in range(len(y))
    ]
    np.testing.assert_array_equal(leave_one_out_correct(KNeighborsClassifier(5), T, y), expected)


def _figure(study, graph_id):
    """A figure the study holds for optuna-dashboard (saved in chunks of its JSON)."""
    import json

    from optuna_boxcox._optuna import storage_of
    from optuna_boxcox._optuna import study_id_of

    prefix = f"dashboard:plot_data:{graph_id}:"
    attrs = storage_of(study).get_study_system_attrs(study_id_of(study))
    chunks = {int(k.removeprefix(prefix)): v for k, v in attrs.items() if k.startswith(prefix)}
    return json.loads("".join(chunks[i] for i in sorted(chunks)))


def test_the_dashboard_shows_the_lambda_the_gate_used_and_why(tmp_path, capsys):
    from optuna_dashboard import get_note

    storage = f"sqlite:///{tmp_path / 's.db'}"
    args = ["search", "--dataset", "iris", "--classifier", "bayes", "--storage", storage]
    assert main(args) == 0
    assert "decision   anchor mle used" in capsys.readouterr().out
    study = optuna.load_study(study_name="iris/bayes/guarded", storage=storage)
    names = study.user_attrs["boxcox_search_space"]["names"]
    used = dict(zip(names, study.user_attrs[DECISION_ATTR]["lambdas"]))
    searched = study.best_params  # the search's Λopt, which no held-out row preferred
    assert searched != used
    result = study.user_attrs["boxcox_result"]
    assert result["params"] == used, "boxcox_result shows the searched Λ, not the one used"
    assert result["searched_params"] == searched
    assert result["chosen"] == "mle"
    assert result["decision"].startswith("The gate chose the per-feature MLE Λ: ")
    assert result["trial"] is None  # the MLE Λ is the start point, no trial of the plan
    note = get_note(study)
    head = note.split("| | |")[0]  # what the note leads with, before the search's settings
    assert "**Λ used: the per-feature MLE Λ** (no trial holds it" in head, note
    assert result["decision"] in head, note
    (row,) = [line for line in head.splitlines() if line.startswith("| `sepal length (cm)` |")]
    assert row.split("|")[2:4] == [
        f" {used['sepal length (cm)']:.3f} ",
        f" {searched['sepal length (cm)']:.3f} ",
    ], note
    curves = {t["name"] for t in _figure(study, "transform")["data"]}
    assert f"sepal length (cm) (λ = {used['sepal length (cm)']:.3g})" in curves, curves
    # Run again on the finished study: the decision is read back and nothing flips back.
    assert main(args) == 0
    study = optuna.load_study(study_name="iris/bayes/guarded", storage=storage)
    assert study.user_attrs["boxcox_result"] == result
    assert get_note(study) == note
    # The plugin's optimize on the finished study (a script's) replays the plan and stops: its
    # sampler does not put the searched Λ back as the study's result.
    spec = SearchSpec.of_study(study)
    X, y, _ = load_data_source(**spec.source)
    study = optuna.load_study(
        study_name=study.study_name, storage=storage, sampler=sampler_of(spec)
    )
    optimize(study, BoxCoxObjective.from_spec(spec, X, y))
    assert study.user_attrs["boxcox_result"] == result


@pytest.mark.parametrize(
    ("chosen", "difference", "confirmation", "words"),
    [
        (
            "searched",
            0.02,
            {"searched": 0.95, "ones": 0.94},
            "The gate kept the searched Λ: its exact leave-one-out accuracy 0.9600 beat Λ = 1 "
            "(standard scaling) (0.9400), by 0.0200",
        ),
        ("ones", 0.02, {"searched": 0.93, "ones": 0.94}, "but its 5-fold × 2 CV score 0.9300 was"),
        ("ones", 0.004, None, "beat its 0.9400 by only 0.0040, not more than the 0.0050"),
        ("ones", 0.0, None, "tied with its 0.9400; the searched Λ needed"),
        ("ones", -0.01, None, "its exact leave-one-out accuracy 0.9400 beat the searched Λ's"),
    ],
)
def test_the_decision_in_words_says_which_lambda_is_used_and_why(
    chosen, difference, confirmation, words
):
    from optuna_boxcox._lifecycle._guard import Decision
    from optuna_boxcox._objective._evaluators.knn_held_out import GATE_RULE as KNN_RULE

    # k-NN's rule judges the searched Λ against Λ = 1 alone.
    scores = {"searched": 0.94 + difference, "ones": 0.94}
    decision = Decision(
        chosen,
        np.ones(2),
        scores,
        "ones",
        difference,
        0.005,
        150,
        rule=KNN_RULE,
        confirmation=confirmation,
    )
    text = decision.explain()
    assert words in text, text
    assert "better anchor" not in text, text
    assert text.startswith(
        "The gate kept the searched Λ" if chosen == "searched" else "The gate chose Λ = 1"
    ), text


def _plain_fold_scores(estimator, X, y, lambdas, range_scale, seed=0):
    """The gate's 5x2 CV written out: scikit-learn's folds, pipeline and accuracy."""
    from sklearn.model_selection import RepeatedStratifiedKFold
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline

    from optuna_boxcox import BoxCoxTransformer

    pipeline = make_pipeline(BoxCoxTransformer(lambdas, range_scale=range_scale), estimator)
    folds = RepeatedStratifiedKFold(n_splits=5, n_repeats=2, random_state=seed)
    return cross_val_score(pipeline, X, y, cv=folds).mean()


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("method", ["box-cox", "yeo-johnson"])
@pytest.mark.parametrize("classifier", ["bayes", "tree"])
def test_the_gates_folds_score_each_candidate_as_a_pipeline_would(
    method, classifier, shared, monkeypatch
):
    """Candidates scored together on shared folds (one split, one range step a fold, or one per
    candidate where X is too wide to keep a copy) get the per-fold accuracies of scikit-learn's
    own cross-validation of each pipeline alone."""
    from optuna_boxcox._lifecycle import _guard

    if not shared:
        monkeypatch.setattr(_guard, "SHARED_RANGE_BYTES", 0)
    ranged = []
    monkeypatch.setattr(
        _guard, "range_pair", lambda *a, **k: ranged.append(1) or _guard_range_pair(*a, **k)
    )
    from sklearn.metrics import accuracy_score
    from sklearn.model_selection import RepeatedStratifiedKFold
    from sklearn.model_selection import cross_val_score
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.tree import DecisionTreeClassifier

    from optuna_boxcox import BoxCoxTransformer
    from optuna_boxcox._lifecycle._guard import Folds
    from optuna_boxcox._lifecycle._guard import fold_scores

    X, y = curved_boundary(n=160)
    X = np.column_stack([X, np.exp(3 * X[:, 0])])
    # Naive Bayes's folds are answered by its closed form, the tree's by scikit-learn.
    estimator = GaussianNB() if classifier == "bayes" else DecisionTreeClassifier(random_state=0)
    candidates = {
        "searched": (np.array([-4.0, -3.0, 0.5]), False),
        "mle": (np.array([0.7, 1.2, -0.3]), False),
        "ones_minmax": (np.ones(3), True),
    }
    folds = Folds(X, y, seed=3, method=method, extrapolation="extrapolate")
    together = folds.scores(estimator, candidates, accuracy_score)
    assert len(ranged) == (10 if shared and method == "box-cox" else 0)  # once a fold
    splitter = RepeatedStratifiedKFold(n_splits=5, n_repeats=2, random_state=3)
    assert list(together) == list(candidates)
    for name, (lambdas, range_scale) in candidates.items():
        transform = BoxCoxTransformer(lambdas, method=method, range_scale=range_scale)
        pipeline = make_pipeline(transform, estimator)
        np.testing.assert_array_equal(
            together[name], cross_val_score(pipeline, X, y, cv=splitter, scoring="accuracy")
        )
        alone = fold_scores(
            estimator,
            lambdas,
            X,
            y,
            accuracy_score,
            seed=3,
            method=method,
            range_scale=range_scale,
        )
        np.testing.assert_array_equal(together[name], alone)


def test_a_rule_without_search_uses_the_best_anchor_by_cross_validation():
    from sklearn.metrics import accuracy_score
    from sklearn.naive_bayes import GaussianNB

    from optuna_boxcox._study._decision import ALL_ANCHORS
    from optuna_boxcox._study._decision import Rule

    X, y = curved_boundary(n=150)
    X = np.column_stack([X, np.exp(3 * X[:, 0])])
    candidates = {
        "searched": np.full(3, -4.0),
        "mle": np.array([0.7, 1.2, -0.3]),
        "ones": np.ones(3),
    }
    rule = Rule(anchors=ALL_ANCHORS, search=False)
    decision = decide(GaussianNB(), X, y, candidates, accuracy_score, rule=rule)
    sources = {"mle": "mle", "ones": "ones", "mle_minmax": "mle", "minmax": "ones"}
    expected = {
        name: _plain_fold_scores(GaussianNB(), X, y, candidates[source], name.endswith("minmax"))
        for name, source in sources.items()
    }
    assert list(decision.scores) == list(ALL_ANCHORS)  # the searched Λ is not judged
    np.testing.assert_allclose(list(decision.scores.values()), list(expected.values()), atol=1e-12)
    best = max(ALL_ANCHORS, key=lambda name: expected[name])
    assert decision.chosen == decision.anchor == best
    np.testing.assert_array_equal(decision.lambdas, candidates[sources[best]])
    assert decision.range_scaled == best.endswith("minmax")
    again = Decision.from_dict(decision.to_dict())
    assert again.rule == rule and again.chosen == best
    assert "no search" in decision.to_dict()["rule"]
    assert "no Λ search" in decision.describe()
    assert decision.explain().startswith("The gate chose ")


def test_the_mlps_default_searches_no_lambda_and_fits_the_anchor_it_chose(caplog):
    import logging

    from sklearn.neural_network import MLPClassifier

    X, y = curved_boundary(n=120)
    mlp = MLPClassifier(hidden_layer_sizes=(4,), max_iter=60, random_state=0)
    with (
        pytest.warns(Warning),  # 60 iterations do not converge: the user's model says so
        caplog.at_level(logging.INFO, logger="optuna_boxcox"),
    ):
        clf = BoxCoxClassifier(mlp).fit(X, y)
    # The gate's minutes are announced (the command line prints the package's log).
    assert "MLPClassifier: no Λ search" in caplog.text and "40 fits" in caplog.text
    decision = clf.decision_
    assert decision["gated"] and "no search" in decision["rule"]
    assert set(decision["scores"]) == {"mle", "ones", "mle_minmax", "minmax"}
    assert decision["scores"][decision["chosen"]] == max(decision["scores"].values())
    # The study holds one trial, the MLE Λ: the search's start point, nothing searched.
    assert len(clf.study_.trials) == 1
    from optuna_boxcox import BoxCoxTransformer

    mle = BoxCoxTransformer().fit(X).lambdas_
    np.testing.assert_allclose(list(clf.study_.trials[0].params.values()), mle)
    np.testing.assert_allclose(clf.search_lambdas_, mle)
    assert clf.transformer_.range_scale == decision["chosen"].endswith("minmax")
    assert clf.study_.user_attrs[DECISION_ATTR] == decision


def test_a_range_scaled_anchor_that_beats_the_searched_lambda_is_fitted_range_scaled():
    from sklearn.metrics import accuracy_score
    from sklearn.svm import LinearSVC

    from optuna_boxcox._lifecycle._guard import rule_of

    X, y = curved_boundary(n=150)
    X = np.column_stack([X, np.exp(6 * X[:, 1])])  # a skewed column: min-max and standard differ
    same = np.ones(3)
    rule = rule_of(LinearSVC(), accuracy_score, y)
    decision = decide(
        LinearSVC(), X, y, {"searched": same, "mle": same, "ones": same}, accuracy_score
    )
    assert list(decision.scores) == ["searched", *rule.anchors]
    # The searched Λ equals both anchors' Λ: it never beats them by a margin.
    assert decision.chosen == decision.anchor
    assert decision.scores[decision.anchor] == max(decision.scores[a] for a in rule.anchors)
    assert "best anchor (mle, ones, mle_minmax, minmax)" in decision.to_dict()["rule"]
    assert Decision.from_dict(decision.to_dict()).rule == rule


def test_every_rule_reads_back_from_its_description():
    from itertools import product

    from optuna_boxcox._study._decision import ALL_ANCHORS
    from optuna_boxcox._study._decision import ANCHORS
    from optuna_boxcox._study._decision import CV
    from optuna_boxcox._study._decision import LOO
    from optuna_boxcox._study._decision import ONES_ONLY
    from optuna_boxcox._study._decision import Rule

    for criterion, margin, confirm, anchors, search, fallback in product(
        (CV, LOO),
        (1.0, 0.0),
        (False, True),
        (ANCHORS, ALL_ANCHORS, ONES_ONLY),
        (True, False),
        (None, "mle"),
    ):
        rule = Rule(criterion, margin, confirm, anchors, search, fallback)
        if not search and ((criterion, margin, confirm) != (CV, 1.0, False) or fallback):
            continue  # a rule without search judges by 5x2 CV alone
        assert Rule.from_description(criterion, rule.describe()) == rule, rule


def _log_separable() -> tuple[np.ndarray, np.ndarray]:
    """make_classification's classes, exponentiated: k-NN does better on the MLE Λ's columns
    than on the standard-scaled ones."""
    from sklearn.datasets import make_classification

    X, y = make_classification(300, 6, n_informative=4, random_state=1)
    return np.exp(X / 2), y


def test_knn_keeps_the_mle_lambda_where_it_scores_as_well_as_the_searched_one():
    from sklearn.metrics import accuracy_score

    from optuna_boxcox import BoxCoxTransformer
    from optuna_boxcox._objective._evaluators.knn_held_out import GATE_RULE as KNN_RULE

    X, y = _log_separable()
    knn = make_classifier("knn")
    log = BoxCoxTransformer(lambdas="mle").fit(X).lambdas_
    # The searched Λ is the MLE's here: a tie by leave-one-out, which goes to the fixed transform.
    tied = {"searched": log, "mle": log, "ones": np.ones(6)}
    decision = decide(knn, X, y, tied, accuracy_score, rule=KNN_RULE)
    assert set(decision.scores) == {"searched", "ones", "mle"}
    assert decision.anchor == "ones"
    assert decision.difference > decision.threshold  # it beat Λ = 1 ...
    assert decision.chosen == "mle"  # ... and the MLE Λ was as good
    text = decision.explain()
    assert text.startswith("The gate chose the per-feature MLE Λ: the searched Λ's exact"), text
    assert "as high, and the searched Λ was tuned on these rows" in text, text
    assert decision.describe().startswith("mle used (it scored as high as the searched Λ): "), (
        decision.describe()
    )
    # Read back from the study's record, it is the same rule and the same words.
    again = Decision.from_dict(decision.to_dict())
    assert again.judged_by == KNN_RULE and again.explain() == text
    # Without the fallback the searched Λ is kept; with an MLE Λ worse than it, too.
    plain = dataclasses.replace(KNN_RULE, fallback=None)
    assert decide(knn, X, y, tied, accuracy_score, rule=plain).chosen == "searched"
    worse = {**tied, "mle": log / 4}
    chosen = decide(knn, X, y, worse, accuracy_score, rule=KNN_RULE)
    assert chosen.scores["mle"] < chosen.scores["searched"]
    assert chosen.chosen == "searched"
