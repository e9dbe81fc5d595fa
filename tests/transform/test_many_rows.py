"""BoxCoxTransformer beyond EXACT_MLE_ROWS: fitted column by column, transformed a block of rows
at a time into one output, with the MLE against scipy and no full-size temporaries."""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.preprocessing import MinMaxScaler
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._math import _numerics
from optuna_boxcox._math._numerics import EXACT_MLE_ROWS
from optuna_boxcox._math._numerics import ExtremeValueWarning
from optuna_boxcox._math._numerics import bulk_widths
from optuna_boxcox._math._numerics import crowded_columns
from optuna_boxcox._math._numerics import sample_rows
from optuna_boxcox._math._transform import BoxCoxTransformer

ROWS = EXACT_MLE_ROWS + 20_000


def _data(rows: int = ROWS, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.column_stack(
        [
            np.exp(rng.normal(size=rows)),
            rng.gamma(2.0, 3.0, rows),
            np.round(rng.normal(size=rows), 1),  # ties
            rng.integers(0, 2, rows).astype(float),  # two values
            rng.beta(8.0, 1.0, rows),
        ]
    )


def _scaled(X: np.ndarray) -> np.ndarray:
    return 1.0 + (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))


def test_mle_lambdas_and_scaling_are_scipys_and_standard_scalers():
    X = _data()
    Z = _scaled(X)
    fitted = BoxCoxTransformer().fit(X)
    expected = [stats.boxcox_normmax(Z[:, j], method="mle") for j in range(X.shape[1])]
    # The two-valued column's λ is near 0, where scipy's λ is ~1e-7 wide (tests/numerics/
    # test_fast_mle.py): 1e-6 of it asks more than scipy gives.
    np.testing.assert_allclose(fitted.lambdas_, expected, rtol=1e-6, atol=5e-7)
    B = np.column_stack([stats.boxcox(Z[:, j], lam) for j, lam in enumerate(fitted.lambdas_)])
    scaler = StandardScaler().fit(B)
    np.testing.assert_allclose(fitted.mean_, scaler.mean_, rtol=1e-10)
    np.testing.assert_allclose(fitted.scale_, scaler.scale_, rtol=1e-10)
    np.testing.assert_allclose(fitted.transform(X), scaler.transform(B), atol=1e-9)


@pytest.mark.parametrize(
    "settings",
    [{}, {"range_scale": True}, {"standardize": False}, {"method": "yeo-johnson"}],
    ids=["standardize", "range_scale", "plain", "yeo-johnson"],
)
def test_fit_transform_is_fit_then_transform_and_blocks_are_rows_alone(settings):
    X = _data(4 * _numerics._BLOCK_ELEMENTS // 5)  # four blocks of rows
    fitted = BoxCoxTransformer(**settings).fit(X)
    out = fitted.transform(X)
    np.testing.assert_array_equal(BoxCoxTransformer(**settings).fit_transform(X), out)
    # Elementwise in blocks of rows: any split of the rows gives the same floats.
    split = _numerics._BLOCK_ELEMENTS // X.shape[1] + 17  # inside the second block
    parts = [fitted.transform(X[:split]), fitted.transform(X[split:])]
    np.testing.assert_array_equal(np.vstack(parts), out)
    np.testing.assert_array_equal(fitted.transform(np.asfortranarray(X)), out)
    if settings.get("range_scale"):
        B = BoxCoxTransformer(fitted.lambdas_, standardize=False).fit(X).transform(X)
        np.testing.assert_allclose(out, MinMaxScaler().fit_transform(B), atol=1e-12)


def test_given_lambdas_are_kept_and_scaled_as_standard_scaler_scales():
    X = _data()
    lambdas = [0.5, -1.0, 2.0, 0.0, 3.0]
    fitted = BoxCoxTransformer(lambdas).fit(X)
    np.testing.assert_array_equal(fitted.lambdas_, lambdas)
    B = _numerics.power_columns(_scaled(X), np.array(lambdas), "box-cox")
    scaler = StandardScaler().fit(B)
    np.testing.assert_allclose(fitted.mean_, scaler.mean_, rtol=1e-10)
    np.testing.assert_allclose(fitted.scale_, scaler.scale_, rtol=1e-10)
    np.testing.assert_allclose(fitted.inverse_transform(fitted.transform(X)), X, atol=1e-9)


def test_fit_holds_no_matrix_and_transform_only_its_output():
    X = np.exp(np.random.default_rng(1).normal(size=(200_000, 16)))
    BoxCoxTransformer().fit(X[:ROWS])  # Numba's kernels compiled or loaded first
    tracemalloc.start()
    try:
        fitted = BoxCoxTransformer().fit(X)
        fit_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        fitted.transform(X)
        transform_peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    # The crowding check's sample of rows, sorted, and a few columns' worth (the range-scaled
    # column, its logs, its power step), not X's size; the transform: its output and a block.
    sample = 2 * 8 * _numerics.CROWDED_SAMPLE_ROWS * X.shape[1]
    assert fit_peak < sample + 10 * 8 * X.shape[0], fit_peak / X.nbytes
    assert transform_peak < X.nbytes + 8 * 8 * _numerics._BLOCK_ELEMENTS, transform_peak / X.nbytes


def test_crowded_columns_of_many_rows_are_found_on_a_sample():
    rng = np.random.default_rng(2)
    rows = _numerics.CROWDED_SAMPLE_ROWS * 3
    ordinary = np.exp(rng.normal(size=rows))
    crowded = rng.normal(size=rows)
    crowded[12_345] = 1e300  # one value sets the range; the sample need not hold it
    flag = (rng.random(rows) < 0.03).astype(float)
    X = np.column_stack([ordinary, crowded, flag])
    np.testing.assert_array_equal(crowded_columns(X), [1])
    with pytest.warns(ExtremeValueWarning, match="'x1'"):
        BoxCoxTransformer([1.0, 1.0, 1.0]).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtremeValueWarning)
        BoxCoxTransformer([1.0, 1.0]).fit(X[:, [0, 2]])


def test_a_sampled_bulk_width_is_close_to_the_whole_columns():
    rng = np.random.default_rng(3)
    X = np.column_stack([np.exp(rng.normal(size=400_000)), rng.random(400_000)])
    X = X[np.argsort(X[:, 0])]  # sorted rows: a stratified sample still spans them
    sampled = bulk_widths(X)
    n = X.shape[0]
    half = np.sort(X, axis=0) * 0.5
    k = int(np.ceil(0.9 * n))
    exact = np.min(half[k - 1 :] - half[: n - k + 1], axis=0) / (half[-1] - half[0])
    np.testing.assert_allclose(sampled, exact, rtol=0.02)


def test_the_sample_of_rows_is_fixed_spread_and_distinct():
    rows = sample_rows(1_000_003, 1000)
    np.testing.assert_array_equal(rows, sample_rows(1_000_003, 1000))
    assert rows.shape == (1000,) and rows[0] >= 0 and rows[-1] < 1_000_003
    assert np.all(np.diff(rows) > 0)
    edges = np.arange(1001) * 1_000_003 // 1000
    assert np.all((rows >= edges[:-1]) & (rows < edges[1:]))


def test_constant_columns_of_many_rows_are_warned_about_and_get_lambda_one():
    X = _data()
    X[:, 2] = 4.0
    with pytest.warns(_numerics.ConstantColumnWarning, match="'x2'"):
        fitted = BoxCoxTransformer().fit(X)
    assert fitted.lambdas_[2] == 1.0
    assert np.all(fitted.transform(X)[:, 2] == 0.0)


@pytest.mark.parametrize("shared", [False, True], ids=["own range", "shared range"])
def test_the_gates_fitted_pair_gives_the_transformers_numbers(shared):
    X = _data()
    train, test = X[: 2 * ROWS // 3], X[2 * ROWS // 3 :] * 1.2
    lambdas = np.array([0.3, -1.0, 2.0, 0.0, 4.0])
    ranged = _numerics.range_pair(train, test) if shared else None
    a, b = _numerics.fitted_pair(lambdas, train, test, range_scale=shared, ranged=ranged)
    fitted = BoxCoxTransformer(lambdas, range_scale=shared).fit(train)
    np.testing.assert_array_equal(a, fitted.transform(train))
    np.testing.assert_array_equal(b, fitted.transform(test))
