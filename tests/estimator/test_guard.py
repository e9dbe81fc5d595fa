"""The guarded default: a searched Λ is kept only where it beats the anchors on held-out rows.

One test per decision path, each checking what the fitted estimator and the study report, and what
``search`` prints and records.
"""

from __future__ import annotations

import numpy as np
import optuna
import pandas as pd
import pytest

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox._study._guard import DECISION_ATTR
from optuna_boxcox._study._guard import decide
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.cli import main


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


def test_on_permuted_labels_the_anchor_is_used():
    X, y = curved_boundary(n=200)
    y = np.random.default_rng(1).permutation(y)
    clf = BoxCoxClassifier(make_classifier("knn")).fit(X, y)
    decision = clf.decision_
    assert decision["gated"]
    assert decision["chosen"] in ("mle", "ones")
    assert decision["chosen"] == decision["anchor"]
    assert decision["difference"] <= decision["threshold"]
    np.testing.assert_allclose(clf.lambdas_, decision["lambdas"])
    if decision["chosen"] == "ones":
        np.testing.assert_array_equal(clf.lambdas_, 1.0)
    # The search still ran and is still recorded: its Λ is kept aside, not used.
    assert clf.search_lambdas_.shape == (2,)
    assert len(clf.study_.trials) > 1
    assert clf.study_.user_attrs[DECISION_ATTR]["chosen"] == decision["chosen"]
    # The prediction is the anchor's.
    anchor = BoxCoxClassifier(make_classifier("knn"), sampler="mle", bounds=(-1e6, 1e6)).fit(X, y)
    if decision["chosen"] == "mle":
        np.testing.assert_array_equal(clf.predict(X), anchor.predict(X))


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


@pytest.mark.parametrize("estimator", [None, make_classifier("bayes")])
def test_a_class_of_one_row_keeps_the_searched_lambda_ungated(estimator):
    X = np.array([[1.0, 2], [2, 3], [3, 1], [4, 5], [5, 5], [6, 1]])
    y = np.array([0, 0, 0, 0, 1, 2])
    clf = BoxCoxClassifier(estimator).fit(X, y)
    assert clf.decision_["gated"] is False
    assert "single row" in clf.decision_["rule"]
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
    X, y = curved_boundary(n=300 if not permute else 200)
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
