"""BoxCoxObjective: the score a search maximises (SPEC §2) against plain loops written here."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import numpy as np
import optuna
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import load_wine
from sklearn.metrics import accuracy_score
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import StratifiedKFold
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import CoordinateGridSampler
from optuna_boxcox import optimize
from optuna_boxcox._objective._scoring import score_predictions
from optuna_boxcox._study._space import SPACE_ATTR


def plain_resubstitution_accuracy(X, y, lambdas, classifier):
    """The paper's loop: min-max into [1, 2], scipy's Box-Cox per column, StandardScaler, fit, predict."""
    X = np.asarray(X, dtype=float)
    Z = 1 + (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    B = np.column_stack([stats.boxcox(Z[:, j], lmbda=lam) for j, lam in enumerate(lambdas)])
    S = StandardScaler().fit_transform(B)
    model = clone(classifier).fit(S, y)
    return accuracy_score(y, model.predict(S))


@pytest.fixture(params=["sonar", "breast_cancer"])
def dataset(request):
    bunch = request.getfixturevalue(request.param)
    return bunch.data, bunch.target


@pytest.mark.parametrize("classifier", [GaussianNB(), KNeighborsClassifier(), SVC()], ids=repr)
def test_resubstitution_accuracy_equals_the_papers_plain_loop(dataset, classifier):
    X, y = dataset
    objective = BoxCoxObjective(X, y, classifier)
    rng = np.random.default_rng(0)
    for lambdas in [
        np.ones(X.shape[1]),
        objective.mle_lambdas,
        *rng.uniform(-5, 5, (3, X.shape[1])),
    ]:
        expected = plain_resubstitution_accuracy(X, y, lambdas, classifier)
        assert objective.evaluate(lambdas) == expected, f"λ = {lambdas[:4]}…"


def test_incremental_retransform_equals_a_fresh_transform(breast_cancer):
    X, y = breast_cancer.data, breast_cancer.target
    objective = BoxCoxObjective(X, y, GaussianNB())
    rng = np.random.default_rng(1)
    lambdas = rng.uniform(-5, 5, X.shape[1])
    objective.evaluate(lambdas)
    for _ in range(5):
        lambdas = lambdas.copy()
        lambdas[rng.integers(X.shape[1])] = rng.uniform(-5, 5)
        incremental = objective.transform(lambdas)
        fresh = BoxCoxObjective(X, y, GaussianNB()).transform(lambdas)
        np.testing.assert_array_equal(incremental, fresh)


def test_a_lambda_scored_before_is_not_refitted(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :5], breast_cancer.target
    objective = BoxCoxObjective(X, y, GaussianNB())
    first = objective.evaluate(np.zeros(5))
    assert objective.n_evaluations == 1
    assert objective.evaluate(np.zeros(5)) == first
    assert objective.evaluate(objective.to_params(np.zeros(5))) == first
    assert objective.n_evaluations == 1


def test_parameters_are_named_after_features(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :3], breast_cancer.target
    objective = BoxCoxObjective(X, y, GaussianNB())
    assert objective.param_names == list(X.columns)
    assert BoxCoxObjective(X.to_numpy(), y, GaussianNB()).param_names == [
        "lambda_0",
        "lambda_1",
        "lambda_2",
    ]
    study = optuna.create_study(direction="maximize")
    study.optimize(objective, n_trials=2)
    assert set(study.trials[0].params) == set(X.columns)
    assert study.user_attrs[SPACE_ATTR]["names"] == list(X.columns)


def test_params_and_lambda_vectors_convert_both_ways(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :3], breast_cancer.target
    objective = BoxCoxObjective(X, y, GaussianNB())
    vector = np.array([0.5, -2.0, 3.0])
    np.testing.assert_array_equal(objective.to_lambdas(objective.to_params(vector)), vector)


def test_mle_start_and_default_domain_follow_spec_section_3(breast_cancer):
    X, y = breast_cancer.data, breast_cancer.target
    objective = BoxCoxObjective(X, y, GaussianNB())
    Z = 1 + (X - X.min()) / (X.max() - X.min())
    expected = [stats.boxcox_normmax(Z[c].to_numpy(), method="mle") for c in X.columns]
    np.testing.assert_allclose(objective.mle_lambdas, expected, rtol=1e-6)
    assert min(objective.mle_lambdas) < -15  # breast cancer's λ_MLE of -15.7 (SPEC §3)
    np.testing.assert_array_equal(objective.space.low, np.minimum(-10, objective.mle_lambdas - 5))
    np.testing.assert_array_equal(objective.space.high, np.maximum(10, objective.mle_lambdas + 5))


def test_inner_k_fold_score_equals_a_plain_loop(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :6], breast_cancer.target.to_numpy()
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), cv=4, random_state=7)
    lambdas = np.linspace(-2, 2, 6)
    S = objective.transform(lambdas)
    scores = []
    for train, test in StratifiedKFold(4, shuffle=True, random_state=7).split(S, y):
        model = KNeighborsClassifier().fit(S[train], y[train])
        scores.append(accuracy_score(y[test], model.predict(S[test])))
    assert objective.evaluate(lambdas) == pytest.approx(np.mean(scores), abs=1e-15)


@pytest.mark.parametrize(
    "scoring", ["accuracy", "f1", "mcc", "balanced_accuracy", "ml", "pcml", "fisher", "1nn-mm"]
)
def test_every_scoring_gives_a_finite_score(breast_cancer, scoring):
    X, y = breast_cancer.data.iloc[:, :4], breast_cancer.target
    objective = BoxCoxObjective(X, y, GaussianNB(), scoring=scoring)
    assert np.isfinite(objective.evaluate(objective.mle_lambdas))


def test_a_study_of_another_search_space_is_refused(breast_cancer):
    X, y = breast_cancer.data, breast_cancer.target
    study = optuna.create_study(direction="maximize")
    study.optimize(BoxCoxObjective(X.iloc[:, :3], y, GaussianNB()), n_trials=1)
    with pytest.raises(ValueError, match="holds another experiment \\(columns: "):
        study.optimize(BoxCoxObjective(X.iloc[:, 3:6], y, GaussianNB()), n_trials=1, catch=())


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"scoring": "auc-ish"}, "unknown scoring"),
        ({"bounds": (5.0, -5.0)}, "low < high"),
        ({"method": "log"}, "method"),
        ({"cv": 1}, "at least 2"),
    ],
)
def test_bad_arguments_say_what_is_wrong(breast_cancer, kwargs, message):
    X, y = breast_cancer.data.iloc[:, :3], breast_cancer.target
    with pytest.raises(ValueError, match=message):
        BoxCoxObjective(X, y, GaussianNB(), **kwargs)


def test_single_class_labels_are_refused(breast_cancer):
    X = breast_cancer.data.iloc[:, :3]
    with pytest.raises(ValueError, match="single class"):
        BoxCoxObjective(X, np.zeros(len(X)), GaussianNB())


def test_the_one_column_scaler_is_bit_identical_to_the_two_dimensional_one():
    # The objective re-scales one column per trial with _numerics.scale_column; it must give the
    # very numbers of fit_scale + standardise, which the transformer and the exactness tests use.
    from optuna_boxcox._math import _numerics

    rng = np.random.default_rng(5)
    for _ in range(500):
        n = int(rng.integers(2, 600))
        column = rng.normal(size=n) * 10 ** rng.uniform(-8, 8) + rng.normal() * 10 ** rng.uniform(
            -4, 4
        )
        if rng.random() < 0.1:
            column[:] = column[0]  # constant: centred only
        mean, scale = _numerics.fit_scale(column[:, None])
        expected = _numerics.standardise(column, mean[0], scale[0])
        assert np.array_equal(_numerics.scale_column(column), expected)
    huge = np.array([1e308, -1e308, 1e308])
    assert np.all(np.isfinite(_numerics.scale_column(huge)))


def test_a_sweeps_columns_together_are_those_of_each_column_alone_bit_for_bit():
    # A coordinate sweep transforms and scales one column for all its λ as the rows of one array
    # (_numerics.boxcox_rows, scale_rows); every row must be the floats of the column alone.
    from optuna_boxcox._math import _numerics

    rng = np.random.default_rng(8)
    for n in (1, 2, 7, 8, 9, 16, 17, 127, 129, 462, 8191, 8193):
        for constant in (False, True):
            z = np.full(n, 1.5) if constant else 1.0 + rng.random(n)
            log_z = np.log(z)
            lambdas = np.concatenate([rng.uniform(-10, 10, 8), [0.0, 1e-13, 1.0, 3e3, -3e3]])
            rows = _numerics.boxcox_rows(log_z, lambdas)
            scaled = _numerics.scale_rows(rows)
            for lam, row, scaled_row in zip(lambdas, rows, scaled):
                alone = _numerics.boxcox_from_log(log_z, float(lam))
                assert np.array_equal(row, alone, equal_nan=True), (n, lam)
                assert np.array_equal(scaled_row, _numerics.scale_column(alone), equal_nan=True)
    huge = np.array([[1e308, -1e308, 1e308], [1.0, 2.0, 3.0]])
    np.testing.assert_array_equal(
        _numerics.scale_rows(huge), [_numerics.scale_column(row) for row in huge]
    )


def test_a_sweeps_columns_in_groups_are_each_columns_own(breast_cancer, monkeypatch):
    # Long columns are transformed a few candidates at a time; each is still the column alone,
    # whatever its transform.
    from optuna_boxcox._objective import _columns

    X, y = breast_cancer.data.iloc[:, :4], breast_cancer.target
    objective = BoxCoxObjective(
        X, y, GaussianNB(), transforms=("box-cox", "identity", "drop", "yeo-johnson")
    )
    columns = objective.scorer.columns
    monkeypatch.setattr(_columns, "_ROWS_VALUES", 3 * len(X))  # three candidates at a time
    lambdas = np.linspace(-4, 4, 11)
    choices = np.array([0, 0, 1, 0, 2, 0, 3, 0, 0, 0, 0])
    together = columns.scaled_columns(2, lambdas, choices)
    for lam, choice, row in zip(lambdas, choices, together):
        np.testing.assert_array_equal(row, columns.scaled_column(2, float(lam), int(choice)))


def test_the_class_statistics_are_numpys_mean_and_variance_bit_for_bit():
    # Naive Bayes's scorer takes a mean and a variance for every class of every column with
    # _numerics.mean_var; the decisions must be those np.mean and np.var give.
    from optuna_boxcox._math import _numerics

    rng = np.random.default_rng(6)
    for _ in range(500):
        n = int(rng.integers(1, 900))
        block = rng.normal(size=(n, 3)) * 10 ** rng.uniform(-100, 100) + 10 ** rng.uniform(-4, 4)
        column = block[:, 1]  # a strided view, as a column of the scorer's matrix is
        if rng.random() < 0.3:
            column = column[rng.random(n) < 0.5]  # one class's rows: a copy
        if rng.random() < 0.1:
            column = np.round(column)
        if column.size:
            assert _numerics.mean_var(column) == (np.mean(column), np.var(column))
    # ... and of each row of a block, as a sweep's candidate columns are.
    rows = rng.normal(size=(7, 333)) * 10 ** rng.uniform(-100, 100, (7, 1))
    mean, var = _numerics.mean_var_rows(rows)
    assert np.array_equal(mean, np.mean(rows, axis=1))
    assert np.array_equal(var, np.var(rows, axis=1))


def test_one_objective_searches_study_after_study_in_memory():
    # The objective remembered the studies it registered by the id of their storage: a new
    # in-memory storage given a dropped one's id was taken as registered, and its search failed
    # for want of a λ space.
    X, y = load_wine(return_X_y=True, as_frame=True)
    objective = BoxCoxObjective(X.iloc[:, :2], y, GaussianNB())
    for seed in range(12):
        sampler = CoordinateGridSampler(grid_size=3, epochs=1, seed=seed)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        assert optimize(study, objective).best_value is not None
        del study, sampler
        gc.collect()


@given(
    hits=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=300),
    as_text=st.booleans(),
)
@settings(max_examples=200, deadline=None)
def test_score_predictions_is_accuracy_score_to_the_bit(hits, as_text):
    """The exact share of hits that the search, the gate and the fast scorers score accuracy by
    is scikit-learn's accuracy_score, float for float, for numeric and text labels."""
    y_true, y_pred = (np.array([pair[i] for pair in hits]) for i in (0, 1))
    if as_text:
        y_true, y_pred = y_true.astype(str), y_pred.astype(str)
    assert score_predictions(accuracy_score, y_true, y_pred) == accuracy_score(y_true, y_pred)


def test_score_predictions_leaves_other_metrics_and_shapes_to_the_metric():
    y = np.array([0, 1, 1, 0])
    assert score_predictions(balanced_accuracy_score, y, y[::-1]) == balanced_accuracy_score(
        y, y[::-1]
    )
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        score_predictions(accuracy_score, y, y[:3])
