"""Users' data sizes: the memory limit, block-wise k-NN, batched sweeps, subsampling.

Every score must still equal ``metric(y, clone(estimator).fit(S, y).predict(S))``; what changes with
the size of the data is only how it is computed, which the objective reports (``describe()``).
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import optuna
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.datasets import load_wine
from sklearn.datasets import make_classification
from sklearn.linear_model import SGDClassifier
from sklearn.metrics import accuracy_score
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox._objective._evaluators import BlockwiseKNeighborsScorer
from optuna_boxcox._objective._evaluators import BlockwiseRBFSVCScorer
from optuna_boxcox._objective._evaluators import KNeighborsScorer
from optuna_boxcox._objective._experiment import stratified_subsample
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.experiments._protocol import search
from optuna_boxcox.samplers import CoordinateGridSampler


def generic_score(estimator, S, y):
    with threadpool_limits(1):
        return float(accuracy_score(y, clone(estimator).fit(S, y).predict(S)))


def skewed_data(n, p, seed=0):
    """make_classification's features made positive and skewed, as users' measurements often are."""
    X, y = make_classification(n, p, n_informative=max(2, p // 3), random_state=seed)
    return np.exp(X / 2), y


def sweep_points(start, j, grid):
    points = []
    for value in grid:
        point = np.array(start, dtype=float)
        point[j] = value
        points.append(point)
    return points


def search_batched(objective, sampler):
    """The sampler's plan driven as the batched runner drives it: one evaluate_batch per sweep."""
    point, score = sampler.plan(objective.space).run(objective.evaluate_batch)
    return np.asarray(point), float(score)


# -- block-wise k-NN against scikit-learn ---------------------------------------------------------


@pytest.fixture(
    params=["breast_cancer", "wine", "iris"],
)
def small_data(request, breast_cancer):
    if request.param == "breast_cancer":
        return breast_cancer.data.to_numpy(), breast_cancer.target.to_numpy()
    loader = load_wine if request.param == "wine" else load_iris
    return loader(return_X_y=True)


@pytest.mark.long
@pytest.mark.parametrize("kind", [BlockwiseKNeighborsScorer, KNeighborsScorer])
@pytest.mark.parametrize("k", [1, 5, 15])
def test_every_candidate_of_a_sweep_is_scored_as_fit_and_predict(small_data, kind, k):
    X, y = small_data
    estimator = KNeighborsClassifier(n_neighbors=k)
    objective = BoxCoxObjective(X, y, estimator, fast=False)
    scorer = kind.from_estimator(estimator, y, accuracy_score)
    # Tight enough for a few candidates at a time and the smallest blocks: groups and blocks
    # are what the memory limit changes, never the result.
    scorer.memory_limit = scorer.footprint(X.shape[1]) + 3 * len(y) * 6 * 12
    rng = np.random.default_rng(k)
    lambdas = rng.uniform(-5, 5, X.shape[1])
    scorer.reset(objective.transform(lambdas))
    undecided = scored = 0
    for step in range(8):
        j = int(rng.integers(X.shape[1]))
        points = sweep_points(lambdas, j, np.linspace(-6, 6, 9))
        matrices = [objective.transform(x) for x in points]
        scores = scorer.score_sweep(j, [S[:, j] for S in matrices])
        for S, score, x in zip(matrices, scores, points):
            scored += 1
            if score is None:
                undecided += 1
                continue
            expected = generic_score(estimator, S, y)
            assert score == expected, (
                f"{kind.__name__} k={k} sweep {step} over λ_{j}: the sweep gave {score}, "
                f"scikit-learn's fit+predict {expected} (λ_{j} = {x[j]})"
            )
        lambdas = points[int(rng.integers(len(points)))]
        S = objective.transform(lambdas)
        scorer.set_column(j, S[:, j])
        single = scorer.score()
        assert single is None or single == generic_score(estimator, S, y)
    assert scorer.largest_sweep[0] < 9, "the memory limit should have split the sweeps"
    assert undecided <= 0.05 * scored, f"{undecided} of {scored} candidates were left undecided"


def test_blockwise_knn_equals_fit_and_predict_along_a_coordinate_walk(breast_cancer):
    X, y = breast_cancer.data.to_numpy(), breast_cancer.target.to_numpy()
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), fast=False)
    scorer = BlockwiseKNeighborsScorer.from_estimator(KNeighborsClassifier(), y, accuracy_score)
    rng = np.random.default_rng(7)
    lambdas = rng.uniform(-5, 5, X.shape[1])
    scorer.reset(objective.transform(lambdas))
    for step in range(40):
        changed = rng.choice(X.shape[1], size=rng.integers(1, 4), replace=False)
        lambdas[changed] = rng.uniform(-10, 10, len(changed))
        S = objective.transform(lambdas)
        for j in changed:
            scorer.set_column(int(j), S[:, j])
        expected = generic_score(KNeighborsClassifier(), S, y)
        assert scorer.score() == expected, f"step {step}: λ changed at {changed}"


def test_blockwise_knn_answers_none_when_tied_neighbours_have_different_classes():
    X = np.array([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0], [5.0, 6.0], [9.0, 1.0], [9.0, 2.0]])
    y = np.array([0, 1, 0, 0, 1, 1])
    scorer = BlockwiseKNeighborsScorer.from_estimator(
        KNeighborsClassifier(n_neighbors=1), y, accuracy_score
    )
    scorer.reset(X)
    assert scorer.score() is None
    assert scorer.score_sweep(0, [X[:, 0], X[:, 0] + np.arange(6)])[0] is None


def test_blockwise_knn_decides_ties_between_neighbours_of_one_class():
    X = np.array([[0.0], [0.1], [3.0], [5.0], [4.0], [9.0], [9.5]])
    y = np.array([1, 1, 0, 0, 0, 1, 1])
    estimator = KNeighborsClassifier(n_neighbors=2)
    scorer = BlockwiseKNeighborsScorer.from_estimator(estimator, y, accuracy_score)
    scorer.reset(X)
    assert scorer.score() == generic_score(estimator, X, y)


# -- the memory limit chooses the evaluator -------------------------------------------------------


@pytest.mark.parametrize(
    "estimator, roomy, middle, tight",
    [
        (KNeighborsClassifier(), "knn:incremental", "knn:blockwise", "knn:blockwise"),
        (SVC(), "svc:precomputed", "svc:blockwise", "sklearn"),
        (GaussianNB(), "gaussian-nb", "gaussian-nb", "gaussian-nb"),
        (make_classifier("linear"), "sgd", "sgd", "sgd"),
    ],
    ids=lambda v: repr(v) if not isinstance(v, str) else v,
)
def test_the_evaluator_is_the_fastest_that_fits_the_memory_limit(estimator, roomy, middle, tight):
    X, y = skewed_data(1200, 8)  # n x n int64: 11.5 MB; libsvm's whole kernel cache 5.8 MB
    for limit, expected in (("1GiB", roomy), ("20MiB", middle), ("4MiB", tight)):
        objective = BoxCoxObjective(X, y, estimator, memory_limit=limit, n_threads=2)
        assert objective.evaluator == expected, f"memory_limit={limit}"
        assert objective.describe()["estimated_peak_bytes"] <= objective.budget.limit


def test_gaussian_nb_takes_the_generic_path_when_its_slab_does_not_fit():
    X, y = skewed_data(1200, 8)
    # Data, transform, cache and scikit-learn's fit take ~0.66 MB; the fast scorer needs its
    # p x classes x n slab besides scikit-learn's fit (a near-tie's).
    assert BoxCoxObjective(X, y, GaussianNB(), memory_limit="700kB").evaluator == "sklearn"


def test_criteria_and_inner_folds_report_their_evaluator():
    X, y = skewed_data(300, 4)
    assert BoxCoxObjective(X, y, GaussianNB(), scoring="fisher").evaluator == "criterion:fisher"
    assert BoxCoxObjective(X, y, GaussianNB(), cv=3).evaluator == "sklearn"
    assert BoxCoxObjective(X, y, GaussianNB(), fast=False).evaluator == "sklearn"


@pytest.mark.parametrize(
    "estimator", [SVC(), SVC(C=10.0, gamma="auto"), SVC(C=0.5, gamma=0.02, shrinking=False)]
)
def test_blockwise_svc_predicts_as_libsvm(breast_cancer, estimator):
    X, y = breast_cancer.data.to_numpy(), breast_cancer.target.to_numpy()
    objective = BoxCoxObjective(X, y, estimator, fast=False)
    scorer = BlockwiseRBFSVCScorer.from_estimator(estimator, y, accuracy_score)
    scorer.n_threads = 2
    rng = np.random.default_rng(11)
    for step in range(25):
        S = objective.transform(rng.uniform(-6, 6, X.shape[1]))
        scorer.reset(S)
        expected = generic_score(estimator, S, y)
        assert scorer.score() == expected, f"{estimator!r} step {step}"


def test_blockwise_svc_is_binary_only():
    X, y = load_wine(return_X_y=True)
    assert BlockwiseRBFSVCScorer.from_estimator(SVC(), y, accuracy_score) is None
    assert BoxCoxObjective(X, y, SVC(), memory_limit="300kB").evaluator == "sklearn"


def test_the_generic_svc_gets_a_kernel_cache_that_fits():
    X, y = skewed_data(1200, 8)
    objective = BoxCoxObjective(X, y, SVC(), memory_limit="4MiB")
    assert objective.generic_estimator.cache_size < 4
    assert objective.describe()["estimated_peak_bytes"] <= 4 * 1024**2
    lambdas = np.linspace(-2, 2, 8)
    assert objective.evaluate(lambdas) == generic_score(SVC(), objective.transform(lambdas), y)


def test_no_allocation_exceeds_the_memory_limit():
    X, y = skewed_data(1500, 12)  # one n x n float64 or int64 matrix: 18 MB
    limit = 6 * 1024**2
    BoxCoxObjective(
        X[:100], y[:100], KNeighborsClassifier()
    ).warm_up()  # compile outside the trace
    tracemalloc.start()
    try:
        objective = BoxCoxObjective(X, y, KNeighborsClassifier(), memory_limit=limit)
        objective.warm_up()
        rng = np.random.default_rng(0)
        start = rng.uniform(-3, 3, 12)
        objective.evaluate(start)
        objective.evaluate_batch(sweep_points(start, 3, np.linspace(-5, 5, 11)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert objective.evaluator == "knn:blockwise"
    assert objective.describe()["estimated_peak_bytes"] <= limit
    assert peak <= limit, f"the objective allocated {peak / 2**20:.1f} MiB under a 6 MiB limit"


@pytest.mark.parametrize("name", ["knn", "svc", "bayes"])
def test_a_search_under_a_small_memory_limit_finds_the_same_lambdas(name):
    X, y = skewed_data(1000, 5, seed=3)  # n x n int64: 8 MB; limit 3 MiB
    sampler = CoordinateGridSampler(
        grid_size=5, epochs=2, shift_epoch=2, shuffle_epoch=2, finer_epoch=2, seed=1
    )
    unlimited = BoxCoxObjective(X, y, make_classifier(name), memory_limit="4GiB")
    limited = BoxCoxObjective(X, y, make_classifier(name), memory_limit="3MiB")
    assert unlimited.evaluator != limited.evaluator or name == "bayes"
    expected_lambdas, expected_score = search(unlimited, sampler)
    for run in (search, search_batched):
        fresh = BoxCoxObjective(X, y, make_classifier(name), memory_limit="3MiB")
        lambdas, score = run(fresh, sampler)
        np.testing.assert_array_equal(lambdas, expected_lambdas)
        assert score == expected_score
        assert fresh.describe()["estimated_peak_bytes"] <= 3 * 1024**2


# -- evaluate_batch -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["knn", "svc", "bayes", "linear", "logistic"])
def test_a_batch_scores_as_evaluate_does_and_shares_its_cache(breast_cancer, name):
    X, y = breast_cancer.data, breast_cancer.target
    one_by_one = BoxCoxObjective(X, y, make_classifier(name))
    batched = BoxCoxObjective(X, y, make_classifier(name), n_threads=2)
    rng = np.random.default_rng(2)
    start = rng.uniform(-3, 3, X.shape[1])
    sweep = sweep_points(start, 4, np.linspace(-5, 5, 7))
    sweep.insert(3, sweep[1].copy())  # a repeated point
    scattered = list(rng.uniform(-3, 3, (4, X.shape[1])))  # no shared column
    for points in (sweep, scattered, [*sweep[:2], scattered[0]]):
        assert batched.evaluate_batch(points) == [one_by_one.evaluate(x) for x in points]
    assert batched.n_evaluations == one_by_one.n_evaluations
    assert batched.cached_score(sweep[5]) == one_by_one.evaluate(sweep[5])
    assert batched.evaluate_batch([one_by_one.to_params(start)]) == [one_by_one.evaluate(start)]


def test_a_batch_on_threads_scores_as_one_thread():
    X, y = skewed_data(2500, 6)
    rng = np.random.default_rng(4)
    start = rng.uniform(-3, 3, 6)
    points = sweep_points(start, 2, np.linspace(-4, 4, 6))
    for name in ("linear", "knn"):
        single = BoxCoxObjective(X, y, make_classifier(name), n_threads=1)
        threaded = BoxCoxObjective(X, y, make_classifier(name), n_threads=2)
        assert threaded.describe()["batch"] == ("threads" if name == "linear" else "sweep")
        assert threaded.evaluate_batch(points) == single.evaluate_batch(points)


def test_the_score_cache_stays_within_its_share_of_the_memory(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :3], breast_cancer.target
    objective = BoxCoxObjective(X, y, GaussianNB(), memory_limit="300kB")
    capacity = objective.describe()["cache_capacity"]
    points = list(np.random.default_rng(0).uniform(-3, 3, (capacity + 5, 3)))
    first = objective.evaluate(points[0])
    for x in points[1:]:
        objective.evaluate(x)
    assert objective.n_evaluations == capacity + 5  # every point was scored once
    assert objective.cached_score(points[0]) is None  # the oldest went first
    assert objective.evaluate(points[0]) == first


# -- describe -------------------------------------------------------------------------------------


def test_describe_is_json_and_says_what_was_chosen(breast_cancer):
    X, y = breast_cancer.data, breast_cancer.target
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), memory_limit="256MiB", n_threads=1)
    objective.evaluate_batch(sweep_points(objective.space.initial, 0, np.linspace(-5, 5, 11)))
    described = json.loads(json.dumps(objective.describe()))
    assert described["evaluator"] == objective.evaluator == "knn:incremental"
    assert described["batch"] == "sweep"
    assert described["memory_limit"] == 256 * 1024**2
    assert 0 < described["estimated_peak_bytes"] <= described["memory_limit"]
    assert described["estimated_peak_bytes"] == sum(described["memory"].values())
    assert (described["n_samples"], described["n_scored"], described["subsample"]) == (
        569,
        569,
        None,
    )
    assert (described["n_features"], described["n_threads"]) == (30, 1)


@pytest.mark.parametrize("bad", [0, -2, 1.5, "two"])
def test_a_bad_thread_count_is_refused(breast_cancer, bad):
    with pytest.raises(ValueError, match="n_threads"):
        BoxCoxObjective(breast_cancer.data, breast_cancer.target, GaussianNB(), n_threads=bad)


def test_a_bad_memory_limit_is_refused(breast_cancer):
    with pytest.raises(ValueError, match="memory_limit 'lots'"):
        BoxCoxObjective(
            breast_cancer.data, breast_cancer.target, GaussianNB(), memory_limit="lots"
        )


# -- subsampling ----------------------------------------------------------------------------------


def test_a_subsample_keeps_the_class_proportions_and_its_seed():
    y = np.repeat(["a", "b", "c"], [600, 300, 100])
    rows = stratified_subsample(y, 100, random_state=5)
    assert len(rows) == len(np.unique(rows)) == 100 and np.all(np.diff(rows) > 0)
    assert [np.count_nonzero(y[rows] == c) for c in "abc"] == [60, 30, 10]
    np.testing.assert_array_equal(rows, stratified_subsample(y, 100, random_state=5))
    assert not np.array_equal(rows, stratified_subsample(y, 100, random_state=6))


def test_every_class_gets_two_rows_even_when_rare():
    y = np.array([0] * 995 + [1] * 5)
    rows = stratified_subsample(y, 20, random_state=0)
    assert np.count_nonzero(y[rows] == 1) == 2 and len(rows) == 20


def test_a_subsample_is_scored_with_the_range_of_all_rows(breast_cancer):
    X, y = breast_cancer.data.to_numpy(), breast_cancer.target.to_numpy()
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), subsample=200, random_state=3)
    rows = stratified_subsample(y, 200, random_state=3)
    np.testing.assert_array_equal(objective.rows, rows)
    np.testing.assert_array_equal(objective.data_min, X.min(axis=0))
    full = BoxCoxObjective(X, y, KNeighborsClassifier())
    np.testing.assert_array_equal(objective.mle_lambdas, full.mle_lambdas)
    lambdas = np.random.default_rng(0).uniform(-3, 3, X.shape[1])
    # The paper's loop on the subsample's rows, min-max from all rows.
    Z = 1 + (X[rows] - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    B = np.column_stack([stats.boxcox(Z[:, j], lmbda=lam) for j, lam in enumerate(lambdas)])
    S = StandardScaler().fit_transform(B)
    assert objective.evaluate(lambdas) == generic_score(KNeighborsClassifier(), S, y[rows])
    described = objective.describe()
    assert (described["subsample"], described["n_scored"], described["n_samples"]) == (
        200,
        200,
        569,
    )
    features = StandardScaler().fit_transform(X)
    assert objective.score_features(features) == objective.score_features(features[rows])


@pytest.mark.parametrize(
    "subsample, message",
    [
        (3, "at least 2 rows per class"),
        (570, "exceeds the 569 rows"),
        (1.5, "number of rows"),
        (True, "number of rows"),
    ],
)
def test_an_impossible_subsample_is_refused(breast_cancer, subsample, message):
    with pytest.raises(ValueError, match=message) as error:
        BoxCoxObjective(
            breast_cancer.data, breast_cancer.target, GaussianNB(), subsample=subsample
        )
    assert "\n" not in str(error.value)


def test_a_subsample_of_all_rows_is_no_subsample(breast_cancer):
    objective = BoxCoxObjective(
        breast_cancer.data, breast_cancer.target, GaussianNB(), subsample=569
    )
    assert objective.rows is None and objective.describe()["subsample"] is None


def test_a_subsampled_objective_runs_in_a_study(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :4], breast_cancer.target
    objective = BoxCoxObjective(
        X, y, SGDClassifier(loss="perceptron", random_state=0), subsample=120
    )
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(0))
    study.optimize(objective, n_trials=5)
    assert len(study.trials) == 5 and objective.n_evaluations == 5
