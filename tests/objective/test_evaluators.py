"""Fast resubstitution scorers (optuna_boxcox._objective._evaluators) against scikit-learn's fit + predict.

Every score a fast scorer gives must equal ``metric(y, clone(estimator).fit(S, y).predict(S))``
exactly, along walks that change one to three λ at a time as the coordinate search does.
"""

from __future__ import annotations

import numpy as np
import pytest
from shared import stable_id
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.datasets import load_wine
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import accuracy_score
from sklearn.metrics import matthews_corrcoef
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox._objective._evaluators import FastScorer
from optuna_boxcox._objective._evaluators import make_fast_scorer
from optuna_boxcox._objective._evaluators._distances import SquaredDistances
from optuna_boxcox.classifiers import make_classifier

#: Most fast scores must be answered (None sends the caller to the generic path).
MAX_NONE_RATE = 0.05


def generic_score(estimator, S, y, metric=accuracy_score):
    # One BLAS/OpenMP thread: the reference is the same, and scikit-learn's threaded neighbour
    # search spends most of its time waiting on a busy two-core machine.
    with threadpool_limits(1):
        return float(metric(y, clone(estimator).fit(S, y).predict(S)))


def coordinate_walk(objective, steps, seed):
    """The start Λ and then, per step, the λ indices changed (1–3 of them) and the new Λ."""
    rng = np.random.default_rng(seed)
    p = objective.space.dim
    lambdas = rng.uniform(-5, 5, p)
    yield None, lambdas.copy()
    for _ in range(steps):
        changed = rng.choice(p, size=rng.integers(1, 4), replace=False)
        lambdas[changed] = rng.uniform(-10, 10, len(changed))
        yield changed, lambdas.copy()


def assert_fast_scores_equal_generic(X, y, estimator, steps, seed=0, metric=accuracy_score):
    y = np.asarray(y)
    objective = BoxCoxObjective(X, y, estimator)
    scorer = make_fast_scorer(estimator, y, metric)
    assert isinstance(scorer, FastScorer), f"{estimator!r} should have a fast path"
    undecided = 0
    for step, (changed, lambdas) in enumerate(coordinate_walk(objective, steps, seed)):
        S = objective.transform(lambdas)
        if changed is None:
            scorer.reset(S)
        else:
            for j in changed:
                scorer.set_column(int(j), S[:, j])
        fast = scorer.score()
        if fast is None:
            undecided += 1
            continue
        expected = generic_score(estimator, S, y, metric)
        assert fast == expected, (
            f"{estimator!r} step {step}: the fast scorer gave {fast}, scikit-learn's fit+predict "
            f"{expected} (λ changed at {changed})"
        )
    assert undecided <= MAX_NONE_RATE * (steps + 1), (
        f"{estimator!r}: {undecided} of {steps + 1} scores fell back to the generic path"
    )


@pytest.fixture(params=["sonar", "breast_cancer"])
def paper_data(request):
    bunch = request.getfixturevalue(request.param)
    if request.param == "sonar":
        return bunch.data.iloc[:187], bunch.target.iloc[:187]
    return bunch.data, bunch.target


@pytest.mark.long
@pytest.mark.parametrize("name", ["bayes", "knn", "svc", "linear"])
def test_fast_score_equals_fit_and_predict_along_a_coordinate_walk(paper_data, name):
    X, y = paper_data
    assert_fast_scores_equal_generic(X, y, make_classifier(name), steps=100)


@pytest.mark.parametrize(
    "estimator",
    [
        GaussianNB(var_smoothing=1e-3),
        KNeighborsClassifier(n_neighbors=1),
        KNeighborsClassifier(n_neighbors=15, algorithm="kd_tree"),
        KNeighborsClassifier(n_neighbors=3, metric="euclidean"),
        SVC(C=10.0, gamma="auto"),
        SVC(C=0.5, gamma=0.02, shrinking=False),
    ],
    ids=repr,
)
def test_fast_score_honours_the_estimators_parameters(sonar, estimator):
    X, y = sonar.data.iloc[:187], sonar.target.iloc[:187]
    assert_fast_scores_equal_generic(X, y, estimator, steps=40)


@pytest.mark.parametrize("loader", [load_wine, load_iris], ids=["wine", "iris"])
@pytest.mark.parametrize("name", ["bayes", "knn", "svc"])
def test_fast_score_is_exact_for_multiclass_labels(loader, name):
    X, y = loader(return_X_y=True)
    assert_fast_scores_equal_generic(X, y, make_classifier(name), steps=60, seed=1)


def test_fast_score_applies_the_callers_metric(breast_cancer):
    X, y = breast_cancer.data, breast_cancer.target
    assert_fast_scores_equal_generic(
        X, y, KNeighborsClassifier(), steps=20, metric=matthews_corrcoef
    )


def test_string_labels_are_predicted_as_labels(sonar):
    y = np.where(sonar.target.iloc[:187] == 1, "rock", "mine")
    assert_fast_scores_equal_generic(sonar.data.iloc[:187], y, SVC(), steps=10)


class _MyNB(GaussianNB):
    pass


@pytest.mark.parametrize(
    "estimator",
    [
        SGDClassifier(loss="perceptron"),  # unseeded: every fit differs
        SGDClassifier(loss="log_loss", random_state=0),
        SGDClassifier(loss="perceptron", random_state=0, average=True),
        SGDClassifier(loss="perceptron", random_state=0, penalty="elasticnet"),
        SGDClassifier(loss="perceptron", random_state=0, learning_rate="constant", eta0=1.0),
        SGDClassifier(loss="perceptron", random_state=0, class_weight="balanced"),
        SGDClassifier(loss="perceptron", random_state=0, early_stopping=True),
        SGDClassifier(loss="perceptron", random_state=np.random.RandomState(0)),
        MLPClassifier(hidden_layer_sizes=(10, 10), max_iter=1000, random_state=42),
        GaussianNB(priors=[0.5, 0.5]),
        _MyNB(),
        KNeighborsClassifier(weights="distance"),
        KNeighborsClassifier(p=1),
        KNeighborsClassifier(metric="manhattan"),
        KNeighborsClassifier(metric="minkowski", p=2, metric_params={"w": np.ones(3)}),
        KNeighborsClassifier(n_neighbors=50),  # more neighbours than samples: fit+predict raises
        KNeighborsClassifier(leaf_size=-1),  # invalid: scikit-learn's error must reach the user
        SVC(kernel="linear"),
        SVC(kernel="poly"),
        SVC(class_weight="balanced"),
        SVC(break_ties=True),
        SVC(gamma=-1.0),
    ],
    ids=stable_id,
)
def test_unsupported_classifiers_and_settings_have_no_fast_path(estimator):
    y = np.array([0, 1] * 20)
    assert make_fast_scorer(estimator, y, accuracy_score) is None


def test_the_sgd_fast_path_is_binary_only():
    assert (
        make_fast_scorer(make_classifier("linear"), np.array([0, 1, 2] * 10), accuracy_score)
        is None
    )
    assert (
        make_fast_scorer(make_classifier("linear"), np.array([0, 1] * 10), accuracy_score)
        is not None
    )


def test_labels_that_are_not_one_column_of_classes_have_no_fast_path():
    assert make_fast_scorer(GaussianNB(), np.zeros((10, 2)), accuracy_score) is None
    assert make_fast_scorer(GaussianNB(), np.zeros(10), accuracy_score) is None


def test_several_columns_changed_between_scores_equal_a_fresh_reset(breast_cancer):
    X, y = breast_cancer.data, np.asarray(breast_cancer.target)
    objective = BoxCoxObjective(X, y, SVC())
    rng = np.random.default_rng(3)
    start, end = rng.uniform(-5, 5, (2, X.shape[1]))
    S_start, S_end = objective.transform(start), objective.transform(end)
    for name in ("bayes", "knn", "svc"):
        walked = make_fast_scorer(make_classifier(name), y, accuracy_score)
        walked.reset(S_start)
        walked.score()
        for j in range(X.shape[1]):
            walked.set_column(j, S_end[:, j])
        fresh = make_fast_scorer(make_classifier(name), y, accuracy_score)
        fresh.reset(S_end)
        assert walked.score() == fresh.score() == generic_score(make_classifier(name), S_end, y)


@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("var_smoothing", [1e-9, 1e-2, 0.0])
def test_a_gaussian_nb_sweep_scores_each_candidate_as_fit_and_predict(n_classes, var_smoothing):
    rng = np.random.default_rng(n_classes)
    n, p = 150, 5
    # Columns of unequal spread: a candidate's variance moves scikit-learn's variance floor
    # beyond the drift allowed, and such a candidate is scored alone.
    S = rng.standard_normal((n, p)) * np.array([1.0, 2.0, 0.5, 3.0, 1.0])
    y = rng.integers(0, n_classes, n)
    estimator = GaussianNB(var_smoothing=var_smoothing)
    swept = make_fast_scorer(estimator, y, accuracy_score)
    alone = make_fast_scorer(estimator, y, accuracy_score)
    swept.reset(S)
    alone.reset(S)
    # Room for two candidates at a time beside the scorer's own state.
    swept.memory_limit = swept.footprint(p) + swept._candidate_bytes()
    answered = 0
    for step in range(6):
        j = int(rng.integers(p))
        columns = [
            np.sign(z) * np.abs(z) ** power * scale
            for z, power, scale in zip(
                rng.standard_normal((7, n)), rng.uniform(0.3, 3, 7), rng.uniform(0.1, 5, 7)
            )
        ]
        columns.append(np.zeros(n))  # a dropped feature
        scores = swept.score_sweep(j, columns)
        assert scores == FastScorer.score_sweep(alone, j, columns)
        np.testing.assert_array_equal(swept.S, S)
        for column, score in zip(columns, scores):
            if score is not None:
                answered += 1
                T = S.copy()
                T[:, j] = column
                assert score == generic_score(estimator, T, y), f"step {step}, column {j}"
        S[:, j] = columns[step]
        swept.set_column(j, S[:, j])
        alone.set_column(j, S[:, j])
        assert swept.score() == alone.score() == generic_score(estimator, S, y)
    assert answered >= 40
    assert swept.peak_bytes(p) == swept.footprint(p) + swept._candidate_bytes()


def test_distance_matrix_after_updates_is_bitwise_the_one_built_from_scratch(breast_cancer):
    S = np.ascontiguousarray(breast_cancer.data.to_numpy(dtype=float)[:200])
    S = (S - S.mean(axis=0)) / S.std(axis=0)
    walked = SquaredDistances(S.copy())
    rng = np.random.default_rng(4)
    for _ in range(200):
        j = int(rng.integers(S.shape[1]))
        column = rng.standard_normal(len(S)) * rng.uniform(0.1, 3)
        walked.update(j, column)
        walked.S[:, j] = column
    fresh = SquaredDistances(walked.S.copy())
    np.testing.assert_array_equal(walked.units, fresh.units)
    exact = np.sum((walked.S[:, None, :] - walked.S[None, :, :]) ** 2, axis=-1)
    np.testing.assert_allclose(walked.squared(), exact, rtol=1e-13, atol=1e-12)


def test_a_column_too_wide_for_the_fixed_point_scale_rebuilds_the_distances(breast_cancer):
    X, y = breast_cancer.data, np.asarray(breast_cancer.target)
    S = BoxCoxObjective(X, y, KNeighborsClassifier()).transform(np.ones(X.shape[1]))
    scorer = make_fast_scorer(KNeighborsClassifier(), y, accuracy_score)
    scorer.reset(S)
    scorer.score()
    S[:, 1] = -S[:, 1]
    scorer.set_column(1, S[:, 1])
    scorer.score()  # one column changed: the scorer builds its distance matrix
    unit_before = scorer.distances.unit
    S[:, 0] = S[:, 0] * 1e4
    scorer.set_column(0, S[:, 0])
    assert scorer.score() == generic_score(KNeighborsClassifier(), S, y)
    assert scorer.distances.unit > unit_before


def test_knn_answers_none_when_tied_neighbours_have_different_classes():
    # Rows 0 and 1 coincide but disagree: with k = 1 scikit-learn's choice is its tie order.
    X = np.array([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0], [5.0, 6.0], [9.0, 1.0], [9.0, 2.0]])
    y = np.array([0, 1, 0, 0, 1, 1])
    scorer = make_fast_scorer(KNeighborsClassifier(n_neighbors=1), y, accuracy_score)
    scorer.reset(X)
    assert scorer.score() is None


def test_knn_decides_ties_between_neighbours_of_one_class():
    # Rows 2 and 3 are equally far from row 4, but both are class 0: every tie order agrees.
    X = np.array([[0.0], [0.1], [3.0], [5.0], [4.0], [9.0], [9.5]])
    y = np.array([1, 1, 0, 0, 0, 1, 1])
    scorer = make_fast_scorer(KNeighborsClassifier(n_neighbors=2), y, accuracy_score)
    scorer.reset(X)
    assert scorer.score() == generic_score(KNeighborsClassifier(n_neighbors=2), X, y)


def test_gaussian_nb_answers_none_on_an_exact_tie():
    # Mirror-image classes (means ∓1, variance 1): a sample at 0 is equally likely under both.
    scorer = make_fast_scorer(GaussianNB(), np.array([0, 0, 1, 1]), accuracy_score)
    scorer.reset(np.array([[-2.0], [-1.0], [1.0], [2.0]]))
    assert scorer.score() is not None  # every sample is far from the midpoint
    scorer.reset(np.array([[-2.0], [0.0], [0.0], [2.0]]))
    assert scorer.score() is None


def test_score_requires_reset_first():
    scorer = make_fast_scorer(GaussianNB(), np.array([0, 1, 0, 1]), accuracy_score)
    with pytest.raises(RuntimeError, match="reset"):
        scorer.score()
    with pytest.raises(RuntimeError, match="reset"):
        scorer.set_column(0, np.zeros(4))
