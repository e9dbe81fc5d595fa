"""The classifier-free criteria of seed 001 (SPEC §2) against plain loops and scipy's likelihoods."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import load_breast_cancer

from optuna_boxcox._math._criteria import CRITERIA
from optuna_boxcox._math._criteria import fisher_criterion
from optuna_boxcox._math._criteria import log_likelihood
from optuna_boxcox._math._criteria import nn_margin
from optuna_boxcox._math._criteria import per_class_log_likelihood
from optuna_boxcox._math._numerics import fit_range
from optuna_boxcox._math._numerics import power_columns
from optuna_boxcox._math._numerics import range_standardise


def _z(X):
    return range_standardise(X, *fit_range(X))


@pytest.fixture(scope="module")
def cancer_z():
    X, y = load_breast_cancer(return_X_y=True)
    return _z(X), y


@pytest.fixture
def rng():
    return np.random.default_rng(20160101)


def _loop_ml(values, transformed, lambdas, method="box-cox"):
    n, p = values.shape
    terms = []
    for j in range(p):
        col = transformed[:, j]
        mean = sum(col) / n
        var = sum((v - mean) ** 2 for v in col) / n
        if method == "box-cox":
            jac = sum(math.log(v) for v in values[:, j])
        else:
            jac = sum(math.copysign(math.log1p(abs(v)), v) for v in values[:, j])
        terms.append(-n / 2 * math.log(var) + (lambdas[j] - 1) * jac)
    return sum(terms) / p


def _loop_fisher(X, y):
    n, p = X.shape
    total_mean = X.mean(axis=0)
    Sw = np.zeros((p, p))
    Sb = np.zeros((p, p))
    for label in sorted(set(y)):
        members = [X[i] for i in range(n) if y[i] == label]
        prior = len(members) / n
        mean = sum(members) / len(members)
        scatter = sum(np.outer(x - mean, x - mean) for x in members) / len(members)
        Sw += prior * scatter
        Sb += prior * np.outer(mean - total_mean, mean - total_mean)
    return float(np.trace(np.linalg.inv(Sw) @ Sb))


def _loop_nn_margin(X, y):
    total = 0.0
    for i in range(len(X)):
        hits = [np.linalg.norm(X[i] - X[k]) for k in range(len(X)) if k != i and y[k] == y[i]]
        misses = [np.linalg.norm(X[i] - X[k]) for k in range(len(X)) if y[k] != y[i]]
        total += 0.5 * (min(misses) - min(hits))
    return total


# --- ML and PCML ---------------------------------------------------------------------------------


def test_ml_equals_plain_loop_for_box_cox(rng):
    Z = _z(rng.lognormal(size=(40, 4)))
    lambdas = np.array([-3.0, 0.0, 0.7, 4.0])
    B = power_columns(Z, lambdas, "box-cox")
    assert log_likelihood(Z, B, lambdas) == pytest.approx(_loop_ml(Z, B, lambdas), rel=1e-10)


def test_ml_equals_plain_loop_for_yeo_johnson(rng):
    X = rng.normal(size=(40, 3)) * [1.0, 5.0, 0.1]
    lambdas = np.array([-1.0, 0.5, 2.5])
    T = power_columns(X, lambdas, "yeo-johnson")
    got = log_likelihood(X, T, lambdas, method="yeo-johnson")
    assert got == pytest.approx(_loop_ml(X, T, lambdas, "yeo-johnson"), rel=1e-10)


def test_ml_is_mean_of_scipy_boxcox_llf_on_breast_cancer(cancer_z):
    Z, _ = cancer_z
    lambdas = np.linspace(-15.7, 5.0, Z.shape[1])
    B = power_columns(Z, lambdas, "box-cox")
    oracle = np.mean([stats.boxcox_llf(lam, Z[:, j]) for j, lam in enumerate(lambdas)])
    assert log_likelihood(Z, B, lambdas) == pytest.approx(oracle, rel=1e-9)


def test_ml_is_mean_of_scipy_yeojohnson_llf(rng):
    X = rng.standard_t(df=3, size=(80, 3))
    lambdas = np.array([0.3, 1.0, 1.8])
    T = power_columns(X, lambdas, "yeo-johnson")
    oracle = np.mean([stats.yeojohnson_llf(lam, X[:, j]) for j, lam in enumerate(lambdas)])
    assert log_likelihood(X, T, lambdas, method="yeo-johnson") == pytest.approx(oracle, rel=1e-9)


@pytest.mark.parametrize("column", [0, 3, 13])
def test_ml_is_maximised_at_scipy_mle_lambda(cancer_z, column):
    z = cancer_z[0][:, [column]]
    best = stats.boxcox_normmax(z[:, 0], method="mle")

    def ml(lam):
        lambdas = np.array([lam])
        return log_likelihood(z, power_columns(z, lambdas, "box-cox"), lambdas)

    at_mle = ml(best)
    for step in (1e-3, 0.1, 1.0):
        assert ml(best - step) < at_mle, f"ML at λ_MLE − {step} beats ML at scipy's MLE {best}"
        assert ml(best + step) < at_mle, f"ML at λ_MLE + {step} beats ML at scipy's MLE {best}"


def test_ml_skips_constant_column_instead_of_infinity(rng):
    Z = _z(rng.lognormal(size=(30, 2)))
    Z_const = np.column_stack([Z, np.full(30, 1.0), np.full(30, 1.37)])
    lambdas = np.array([0.5, -2.0, 3.0, -7.0])
    B = power_columns(Z_const, lambdas, "box-cox")
    got = log_likelihood(Z_const, B, lambdas)
    assert np.isfinite(got)
    assert got == pytest.approx(log_likelihood(Z, B[:, :2], lambdas[:2]), rel=1e-12)


def test_ml_of_all_constant_data_is_zero():
    Z = np.ones((10, 3))
    lambdas = np.array([1.0, 2.0, -2.0])
    assert log_likelihood(Z, power_columns(Z, lambdas, "box-cox"), lambdas) == 0.0


def test_ml_stays_finite_for_extreme_lambda(rng):
    Z = _z(rng.lognormal(size=(50, 2)))
    lambdas = np.array([900.0, -900.0])
    got = log_likelihood(Z, power_columns(Z, lambdas, "box-cox"), lambdas)
    assert np.isfinite(got), "a λ whose Box-Cox values overflow when squared gave a non-finite ML"


def test_pcml_equals_sum_of_per_class_loops(rng):
    Z = _z(rng.lognormal(size=(60, 3)))
    y = np.repeat(["a", "b", "c"], 20)
    lambdas = np.array([-1.5, 0.2, 2.0])
    B = power_columns(Z, lambdas, "box-cox")
    expected = sum(_loop_ml(Z[y == c], B[y == c], lambdas) for c in "abc")
    assert per_class_log_likelihood(Z, B, lambdas, y) == pytest.approx(expected, rel=1e-10)


def test_pcml_is_finite_with_singleton_class_and_it_contributes_nothing(rng):
    Z = _z(rng.lognormal(size=(31, 3)))
    y = np.array([0] * 15 + [1] * 15 + [2])
    lambdas = np.array([0.5, 1.0, -2.0])
    B = power_columns(Z, lambdas, "box-cox")
    got = per_class_log_likelihood(Z, B, lambdas, y)
    assert np.isfinite(got)
    expected = sum(_loop_ml(Z[y == c], B[y == c], lambdas) for c in (0, 1))
    assert got == pytest.approx(expected, rel=1e-10)


# --- Fisher --------------------------------------------------------------------------------------


def test_fisher_equals_plain_loop(rng):
    X = rng.normal(size=(45, 4))
    y = np.repeat([0, 1, 2], 15)
    X[y == 1] += [1.0, 0.0, 0.5, 0.0]
    X[y == 2] -= [0.0, 2.0, 0.0, 0.3]
    assert fisher_criterion(X, y) == pytest.approx(_loop_fisher(X, y), rel=1e-9)


def test_fisher_is_invariant_to_per_column_affine_scaling(rng):
    X = rng.normal(size=(50, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=50) > 0).astype(int)
    scaled = X * np.array([1e-3, 7.0, -250.0]) + np.array([5.0, -40.0, 1e4])
    assert fisher_criterion(scaled, y) == pytest.approx(fisher_criterion(X, y), rel=1e-7)


def test_fisher_ignores_constant_and_duplicated_columns(rng):
    X = rng.normal(size=(40, 3))
    y = np.repeat([0, 1], 20)
    X[y == 1, 0] += 1.5
    singular = np.column_stack([X, X[:, 0], np.zeros(40)])
    got = fisher_criterion(singular, y)
    assert np.isfinite(got)
    assert got == pytest.approx(fisher_criterion(X, y), rel=1e-6)


def test_fisher_is_finite_with_singleton_class_and_more_features_than_samples(rng):
    X = rng.normal(size=(9, 12))
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2])
    assert np.isfinite(fisher_criterion(X, y))


def test_fisher_of_one_class_is_zero(rng):
    assert fisher_criterion(rng.normal(size=(20, 3)), np.zeros(20)) == pytest.approx(
        0.0, abs=1e-12
    )


def test_fisher_grows_with_class_separation(rng):
    X = rng.normal(size=(60, 2))
    y = np.repeat([0, 1], 30)
    near = X + np.outer(y, [0.5, 0.0])
    far = X + np.outer(y, [3.0, 0.0])
    assert fisher_criterion(far, y) > fisher_criterion(near, y)


# --- 1NN-MM --------------------------------------------------------------------------------------


def test_nn_margin_equals_plain_loop(rng):
    X = rng.normal(size=(35, 3))
    y = rng.integers(0, 3, size=35)
    assert nn_margin(X, y) == pytest.approx(_loop_nn_margin(X, y), rel=1e-12)


def test_nn_margin_agrees_across_row_blocks(rng, monkeypatch):
    import optuna_boxcox._math._criteria as criteria

    X = rng.normal(size=(50, 4))
    y = rng.integers(0, 2, size=50)
    whole = nn_margin(X, y)
    monkeypatch.setattr(criteria, "NN_BLOCK_ROWS", 7)
    assert nn_margin(X, y) == pytest.approx(whole, rel=1e-12)


def _two_tight_clusters(rng):
    X = np.vstack([rng.normal(0.0, 0.1, size=(20, 2)), rng.normal(5.0, 0.1, size=(20, 2))])
    return X, np.repeat([0, 1], 20)


def test_nn_margin_is_positive_on_well_separated_classes(rng):
    X, y = _two_tight_clusters(rng)
    assert nn_margin(X, y) > 0


def test_nn_margin_is_negative_when_labels_are_swapped_between_two_tight_clusters(rng):
    # Two tight clusters, 5 apart, two points each. Swapping one label between them leaves every
    # point's nearest same-label sample in the other cluster and an other-label sample beside it.
    X = np.vstack([rng.normal(0.0, 0.1, size=(2, 2)), rng.normal(5.0, 0.1, size=(2, 2))])
    y_good = np.array([0, 0, 1, 1])
    y_swapped = np.array([0, 1, 0, 1])
    assert nn_margin(X, y_good) > 0
    assert nn_margin(X, y_swapped) < 0
    assert nn_margin(X, y_swapped) == pytest.approx(-nn_margin(X, y_good), rel=0.2)


def test_nn_margin_counts_duplicates_as_hits_at_distance_zero():
    X = np.array([[0.0], [0.0], [3.0], [3.0]])
    y = np.array([0, 0, 1, 1])
    assert nn_margin(X, y) == pytest.approx(4 * 0.5 * 3.0)


def test_nn_margin_skips_sample_without_same_class_neighbour(rng):
    X = rng.normal(size=(21, 2))
    y = np.array([0] * 10 + [1] * 10 + [2])
    keep = y != 2
    # The singleton contributes nothing, but it is still a nearmiss candidate for the others.
    expected = 0.0
    for i in np.flatnonzero(keep):
        hit = min(np.linalg.norm(X[i] - X[k]) for k in range(21) if k != i and y[k] == y[i])
        miss = min(np.linalg.norm(X[i] - X[k]) for k in range(21) if y[k] != y[i])
        expected += 0.5 * (miss - hit)
    got = nn_margin(X, y)
    assert np.isfinite(got)
    assert got == pytest.approx(expected, rel=1e-12)


def test_nn_margin_of_one_class_is_zero(rng):
    assert nn_margin(rng.normal(size=(10, 2)), np.zeros(10)) == 0.0


def test_nn_margin_is_finite_on_breast_cancer(cancer_z):
    Z, y = cancer_z
    assert np.isfinite(nn_margin(Z, y))


# --- registry ------------------------------------------------------------------------------------


def test_criteria_registry_names_the_four_criteria_of_seed_001():
    assert set(CRITERIA) == {"ml", "pcml", "fisher", "1nn-mm"}
    assert CRITERIA["ml"].function is log_likelihood
    assert not CRITERIA["ml"].needs_labels
    assert {name for name, c in CRITERIA.items() if c.data == "scaled"} == {"fisher", "1nn-mm"}
