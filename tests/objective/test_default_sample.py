"""The default's sample: past the rows where the exact search costs more than a few passes over the
data, the plan searches a stratified sample (recorded), the MLE anchor and the gate run on it in
the Box-Cox range of all rows, and only the transform and the final fit see every row."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from sklearn.datasets import make_classification
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox._lifecycle import _guard
from optuna_boxcox._lifecycle._search import plan_search
from optuna_boxcox._math._numerics import boxcox_column
from optuna_boxcox._objective import _auto
from optuna_boxcox._objective._arguments import check_data
from optuna_boxcox._objective._experiment import stratified_subsample
from optuna_boxcox._objective._rungs import pricing_of
from optuna_boxcox._study._fidelity import DEFAULT_REQUEST
from optuna_boxcox._study._fidelity import AutoFidelity
from optuna_boxcox._study._fidelity import FidelityChoice
from optuna_boxcox._study._plan_size import PlanSize
from optuna_boxcox._study._spec import SearchSpec


def _skewed(n: int, p: int = 4, seed: int = 0):
    X, y = make_classification(n, p, n_informative=3, n_redundant=0, random_state=seed)
    return np.exp(X / 2), y


def _sample(estimator, n: int, p: int = 20, positions: int = 880):
    y = np.array([0, 1] * 50)
    pricing = pricing_of(estimator, p, y, None)
    return _auto.sample_rows(
        AutoFidelity(default=True), pricing, n, PlanSize(positions, p, batch=11)
    )


@pytest.mark.parametrize("estimator", [GaussianNB(), KNeighborsClassifier()])
def test_the_sample_is_priced_and_never_shrinks_as_the_rows_grow(estimator):
    samples = []
    for n in (1_000, 10_000, 100_000, 1_000_000, 3_000_000):
        choice = _sample(estimator, n)
        samples.append(n if choice is None else choice.sample)
        if choice is not None:
            assert _auto.MIN_SAMPLE_ROWS <= choice.sample < n
            assert choice.fidelity is None and choice.default and choice.requested == "auto"
    assert samples == sorted(samples)
    # Below a million rows the budget shrinks with the rows, so that fewer rows never cost more
    # than a million (the floor aside): the sample grows up to a million and beyond it.
    assert samples[2] < samples[3] < samples[4] or samples[2] == _auto.MIN_SAMPLE_ROWS
    assert samples[3] < samples[4]


def test_the_budget_shrinks_gently_below_a_million_rows():
    pricing = pricing_of(GaussianNB(), 20, np.array([0, 1] * 50), None)
    at = {n: _auto.sample_budget(pricing, n) for n in (10_000, 300_000, 1_000_000, 2_000_000)}
    assert at[10_000] < at[300_000] < at[1_000_000] < at[2_000_000]
    growth = (300_000 / 1_000_000) ** _auto.SAMPLE_GROWTH
    assert at[300_000] == pytest.approx(at[1_000_000] * growth)
    assert at[2_000_000] == pytest.approx(2 * at[1_000_000])  # beyond, passes over the rows


def test_a_one_trial_plan_and_small_data_are_never_sampled():
    assert _sample(GaussianNB(), 1_000_000, positions=1) is None
    assert _sample(GaussianNB(), 2_000) is None


def test_the_choice_records_its_sample():
    choice = _sample(GaussianNB(), 1_000_000)
    again = FidelityChoice.from_attrs(choice.to_attrs())
    assert again == choice and again.sample == choice.sample
    summary = choice.summary(1_000_000, "GaussianNB")
    assert summary.startswith(
        f"exact on a stratified sample of {choice.sample:,} of the 1,000,000"
    )
    assert "auto, the default" in summary


def test_the_plan_samples_the_default_only():
    X, y = _skewed(6_000)
    data = check_data(X, y)
    spec = SearchSpec(KNeighborsClassifier(), sampler="guarded", fidelity=DEFAULT_REQUEST)
    plan = plan_search(spec, data=data)
    size = plan.spec.fidelity_choice.sample
    assert size is not None and plan.spec.subsample == size < 6_000
    # Asked for: auto halves or searches all rows, exact is exact, a subsample is the user's.
    for fidelity in ("auto", "exact"):
        asked = SearchSpec(KNeighborsClassifier(), sampler="iterative", fidelity=fidelity)
        asked = plan_search(asked, data=data)
        assert asked.spec.subsample is None
        assert asked.spec.fidelity_choice is None or asked.spec.fidelity_choice.sample is None
    own = SearchSpec(KNeighborsClassifier(), sampler="iterative", subsample=3_000)
    own = plan_search(own, data=data)
    assert own.spec.subsample == 3_000


def test_a_sampled_fit_searches_and_judges_the_sample_and_fits_all_rows(tmp_path):
    X, y = _skewed(6_000)
    storage = f"sqlite:///{tmp_path / 's.db'}"
    clf = BoxCoxClassifier(KNeighborsClassifier(), storage=storage, study_name="s").fit(X, y)
    size = clf.fidelity_["sample"]
    assert clf.fidelity_["summary"].startswith(f"exact on a stratified sample of {size:,}")
    rows = stratified_subsample(y, size, 0)
    objective_rows = clf.study_.user_attrs["boxcox_spec"]["subsample"]
    assert objective_rows == size
    # The transform and the classifier are fitted on all rows.
    np.testing.assert_array_equal(clf.transformer_.data_min_, X.min(axis=0))
    assert clf.estimator_.n_samples_fit_ == len(y)
    # The MLE anchor is the sample's, in the range of all rows.
    Z = 1 + (X[rows] - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    from scipy import stats

    mle = [stats.boxcox_normmax(Z[:, j], method="mle") for j in range(X.shape[1])]
    # The coordinate search's first sweep moves λ_0 and holds the others at the MLE start point.
    first = clf.study_.trials[0].params
    np.testing.assert_allclose([first[f"lambda_{j}"] for j in (1, 2, 3)], mle[1:], rtol=1e-6)
    assert clf.decision_.get("rows") is None or clf.decision_["rows"]["of"] == size
    # Fitted again on the same study: the same sample is read from it, nothing differs.
    again = BoxCoxClassifier(KNeighborsClassifier(), storage=storage, study_name="s").fit(X, y)
    np.testing.assert_array_equal(again.lambdas_, clf.lambdas_)
    assert again.fidelity_["sample"] == size


def test_the_gate_of_a_sample_scales_every_fold_by_the_range_of_all_rows():
    """Each fold's score as a plain loop computes it: Z from all rows' range, Box-Cox, the
    standard scaling of the fold's training rows, then the classifier."""
    X, y = _skewed(600)
    low, span = X.min(axis=0), X.max(axis=0) - X.min(axis=0)
    rows = np.arange(0, 600, 2)  # a "sample" whose own range is narrower than all rows'
    Xs, ys = X[rows], y[rows]
    lambdas = np.array([0.5, -1.0, 2.0, 1.0])
    folds = _guard.Folds(
        Xs, ys, seed=0, method="box-cox", extrapolation="extrapolate", whole_range=(low, span)
    )
    got = folds.scores(GaussianNB(), {"c": (lambdas, False)}, _guard.metric_of("accuracy"))["c"]
    want = []
    for train, test in folds.splits:
        Z = 1 + (Xs - low) / span
        B = np.column_stack([boxcox_column(Z[:, j], lam) for j, lam in enumerate(lambdas)])
        mean, std = B[train].mean(axis=0), B[train].std(axis=0)
        model = GaussianNB().fit((B[train] - mean) / std, ys[train])
        want.append(model.score((B[test] - mean) / std, ys[test]))
    np.testing.assert_allclose(got, want)


def test_below_the_sample_the_default_is_unchanged():
    X, y = _skewed(400)
    data = check_data(X, y)
    spec = SearchSpec(GaussianNB(), sampler="guarded", fidelity=DEFAULT_REQUEST)
    plan = plan_search(spec, data=data)
    assert plan.spec.subsample is None and plan.spec.fidelity_choice.sample is None
    assert "sample" not in plan.spec.fidelity_choice.to_attrs()


def test_a_sampled_objective_registered_by_hand_is_not_resampled():
    """``auto`` settled when an objective registers on a study (no plan): its rows are its own."""
    from optuna_boxcox import BoxCoxObjective

    X, y = _skewed(6_000)
    spec = SearchSpec(KNeighborsClassifier(), sampler="iterative", fidelity=DEFAULT_REQUEST)
    spec = plan_search(spec).spec
    objective = BoxCoxObjective.from_spec(spec, X, y)
    objective.register(optuna.create_study(direction="maximize"))
    assert objective.fidelity_choice.sample is None and objective.subsample is None
