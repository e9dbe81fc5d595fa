"""BoxCoxTransformer and box_cox: the transform of Blum, Elgendi & Menon (2022), Algorithms 3 and 4."""

from __future__ import annotations

import warnings

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import numpy as np
import pandas as pd
import pytest
from scipy import stats
from shared import run_scikit_learn_check
from sklearn.preprocessing import StandardScaler
from sklearn.utils import estimator_checks
from sklearn.utils.estimator_checks import parametrize_with_checks

from optuna_boxcox._math._numerics import ConstantColumnWarning
from optuna_boxcox._math._numerics import ExtremeValueWarning
from optuna_boxcox._math._numerics import crowded_columns
from optuna_boxcox._math._transform import BoxCoxTransformer
from optuna_boxcox._math._transform import box_cox

METHODS = ("box-cox", "yeo-johnson")
EXTRAPOLATIONS = ("extrapolate", "clip")

ESTIMATORS = [
    BoxCoxTransformer(),
    BoxCoxTransformer(method="yeo-johnson"),
    BoxCoxTransformer(extrapolation="clip"),
    BoxCoxTransformer(standardize=False),
    BoxCoxTransformer(method="yeo-johnson", standardize=False),
    BoxCoxTransformer(range_scale=True),
]

NAMED_CHECKS = [
    "check_param_validation",
    "check_set_output_transform",
    "check_set_output_transform_pandas",
    "check_global_output_transform_pandas",
    "check_transformer_get_feature_names_out",
    "check_transformer_get_feature_names_out_pandas",
    "check_dataframe_column_names_consistency",
]


def _reference_transform(X_train, X, lambdas):
    """The paper's pipeline written out with scipy: min-max into [1, 2], scipy boxcox, StandardScaler."""
    lo, hi = X_train.min(axis=0), X_train.max(axis=0)

    def boxcox_scaled(data):
        Z = 1.0 + (data - lo) / (hi - lo)
        return np.column_stack([stats.boxcox(Z[:, j], lmbda=lam) for j, lam in enumerate(lambdas)])

    scaler = StandardScaler().fit(boxcox_scaled(X_train))
    return scaler.transform(boxcox_scaled(X))


def _split(X, seed=0):
    rng = np.random.default_rng(seed)
    test = rng.random(len(X)) < 0.3
    return X[~test], X[test]


# --- scikit-learn's estimator contract -----------------------------------------------------------


@parametrize_with_checks(ESTIMATORS)
def test_estimator_passes_scikit_learn_checks(estimator, check):
    run_scikit_learn_check(check, estimator)


# The set_output checks deliberately fit on a DataFrame and transform an array (and the reverse);
# scikit-learn's own transformers warn there too, and parametrize_with_checks silences it the same way.
@pytest.mark.filterwarnings("ignore:X does not have valid feature names:UserWarning")
@pytest.mark.filterwarnings("ignore:X has feature names, but:UserWarning")
@pytest.mark.parametrize("check_name", NAMED_CHECKS)
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
def test_estimator_passes_named_scikit_learn_check(estimator, check_name):
    check = getattr(estimator_checks, check_name)
    check(type(estimator).__name__, estimator)


def test_pandas_output_keeps_feature_names_and_index(breast_cancer):
    X = breast_cancer.data.iloc[:50, :4]
    out = (
        BoxCoxTransformer(lambdas=[0.5, 1.0, -1.0, 2.0])
        .set_output(transform="pandas")
        .fit_transform(X)
    )
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == list(X.columns)
    assert out.index.equals(X.index)


def test_function_twin_equals_fit_transform(breast_cancer):
    X = breast_cancer.data.to_numpy()
    lambdas = np.linspace(-3, 3, X.shape[1])
    np.testing.assert_array_equal(box_cox(X, lambdas), BoxCoxTransformer(lambdas).fit_transform(X))
    np.testing.assert_array_equal(
        box_cox(X, method="yeo-johnson", standardize=False),
        BoxCoxTransformer(method="yeo-johnson", standardize=False).fit_transform(X),
    )


# --- the transform itself (Algorithms 3 and 4) ---------------------------------------------------


@pytest.mark.parametrize("dataset", ["breast_cancer", "sonar"])
def test_unit_lambdas_give_standard_scaler_output(dataset, request):
    X = request.getfixturevalue(dataset).data.to_numpy(dtype=np.float64)
    X_train, X_test = _split(X)
    bc = BoxCoxTransformer(lambdas=np.ones(X.shape[1])).fit(X_train)
    scaler = StandardScaler().fit(X_train)
    np.testing.assert_allclose(
        bc.transform(X_train),
        scaler.transform(X_train),
        rtol=0,
        atol=1e-9,
        err_msg="λ = 1 everywhere should be the paper's base pipeline (plain standard scaling)",
    )
    np.testing.assert_allclose(bc.transform(X_test), scaler.transform(X_test), rtol=0, atol=1e-9)


def test_transform_equals_scipy_boxcox_after_minmax_and_standard_scaler(breast_cancer):
    X = breast_cancer.data.to_numpy(dtype=np.float64)
    X_train, X_test = _split(X, seed=1)
    lambdas = np.random.default_rng(7).uniform(-5, 5, X.shape[1])
    bc = BoxCoxTransformer(lambdas=lambdas).fit(X_train)
    # Held-out values stay positive after min-max here, so the floor never applies and scipy agrees.
    for data in (X_train, X_test):
        np.testing.assert_allclose(
            bc.transform(data), _reference_transform(X_train, data, lambdas), rtol=1e-9, atol=1e-12
        )


def test_clip_maps_unseen_values_to_the_training_extremes():
    X_train = np.array([[0.0], [1.0], [3.0], [10.0]])
    bc = BoxCoxTransformer(lambdas=[-1.5], extrapolation="clip").fit(X_train)
    out = bc.transform(np.array([[-50.0], [0.0], [10.0], [1e6]]))
    assert out[0, 0] == out[1, 0]
    assert out[2, 0] == out[3, 0]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("extrapolation", EXTRAPOLATIONS)
@pytest.mark.parametrize("lam", [-20.0, -1e-13, 0.0, 1.0, 2.0, 20.0])
def test_data_far_outside_the_training_range_gives_finite_output(method, extrapolation, lam):
    rng = np.random.default_rng(3)
    X_train = rng.uniform(-1.0, 2.0, size=(40, 3))
    lo, hi = X_train.min(axis=0), X_train.max(axis=0)
    width = hi - lo
    X_test = np.vstack([lo - 100 * width, hi + 100 * width, lo - 1e-3, hi + 1e-3, (lo + hi) / 2])
    bc = BoxCoxTransformer(np.full(3, lam), method=method, extrapolation=extrapolation).fit(
        X_train
    )
    out = bc.transform(X_test)
    assert out.dtype == np.float64
    assert np.isfinite(out).all(), f"non-finite output for λ={lam}: {out}"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("lambdas", ["mle", [20.0, -20.0, 0.0]])
def test_constant_columns_give_finite_output(method, lambdas):
    X_train = np.column_stack([np.full(10, 5.0), np.full(10, -2.0), np.arange(10.0)])
    with pytest.warns(ConstantColumnWarning, match="'x0', 'x1'"):
        bc = BoxCoxTransformer(lambdas, method=method).fit(X_train)
    assert np.isfinite(bc.transform(X_train)).all()
    assert np.isfinite(bc.transform(np.array([[1e6, -1e6, 3.0], [-7.0, 0.0, -1e3]]))).all()
    # Exactly 0 for Box-Cox (Z = 1); Yeo-Johnson's constant can be ~1e9 and its mean carries rounding.
    np.testing.assert_allclose(bc.transform(X_train)[:, :2], 0.0, atol=1e-6)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("extrapolation", EXTRAPOLATIONS)
@pytest.mark.parametrize(
    ("magnitude", "unseen"),
    [
        (1e300, [[1.7e308, -1.7e308], [-1e308, 1e308]]),  # as far out as float64 goes
        (1e-300, [[1.5e-298, -1.5e-298], [-1e-300, 1e-300]]),  # 150× the training scale
    ],
)
@pytest.mark.parametrize("standardize", [True, False])
@pytest.mark.parametrize("lam", [-20.0, 0.0, 0.5, 20.0])
def test_huge_and_tiny_magnitudes_give_finite_output(
    method, extrapolation, magnitude, unseen, standardize, lam
):
    X_train = magnitude * np.random.default_rng(4).uniform(-1.0, 1.0, size=(30, 2))
    bc = BoxCoxTransformer(
        [lam, lam], method=method, extrapolation=extrapolation, standardize=standardize
    )
    assert np.isfinite(bc.fit_transform(X_train)).all()
    out = bc.transform(np.vstack([X_train[:5], unseen]))
    assert np.isfinite(out).all(), f"non-finite output at magnitude {magnitude}, λ={lam}: {out}"


finite_columns = hnp.arrays(
    np.float64,
    st.integers(2, 25),
    elements=st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
)


# Hypothesis likes columns such as [0, 0, …, 1e-300, 1e6], which rightly warn about extreme values,
# and constant columns, which rightly warn that no λ changes them.
@pytest.mark.filterwarnings("ignore::optuna_boxcox._math._numerics.ExtremeValueWarning")
@pytest.mark.filterwarnings("ignore::optuna_boxcox._math._numerics.ConstantColumnWarning")
@settings(max_examples=60, deadline=None)
@given(
    train=finite_columns,
    test=finite_columns,
    lam=st.floats(-20.0, 20.0),
    method=st.sampled_from(METHODS),
    extrapolation=st.sampled_from(EXTRAPOLATIONS),
    standardize=st.booleans(),
)
def test_each_column_is_monotone_non_decreasing_in_its_input(
    train, test, lam, method, extrapolation, standardize
):
    bc = BoxCoxTransformer(
        [lam], method=method, extrapolation=extrapolation, standardize=standardize
    )
    bc.fit(train[:, None])
    x = np.sort(np.concatenate([train, test, [train.min() - 1e3, train.max() * 10]]))
    out = bc.transform(x[:, None])[:, 0]
    assert np.isfinite(out).all()
    assert (np.diff(out) >= 0).all(), f"transform decreases somewhere for λ={lam}: {x} -> {out}"


# --- maximum-likelihood λ ------------------------------------------------------------------------


def test_mle_lambdas_equal_scipy_boxcox_normmax_of_each_scaled_column(breast_cancer):
    X = breast_cancer.data.to_numpy(dtype=np.float64)
    Z = 1.0 + (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    expected = [stats.boxcox_normmax(Z[:, j], method="mle") for j in range(X.shape[1])]
    np.testing.assert_allclose(BoxCoxTransformer().fit(X).lambdas_, expected, rtol=1e-9)


def test_mle_lambdas_of_yeo_johnson_equal_scipy_on_raw_columns(breast_cancer):
    X = breast_cancer.data.to_numpy(dtype=np.float64)[:, :6]
    expected = [stats.yeojohnson_normmax(X[:, j]) for j in range(X.shape[1])]
    np.testing.assert_allclose(
        BoxCoxTransformer(method="yeo-johnson").fit(X).lambdas_, expected, rtol=1e-9
    )


@pytest.mark.parametrize("method", METHODS)
def test_mle_gives_a_constant_column_lambda_one(method):
    X = np.column_stack([np.full(20, 3.0), np.linspace(1.0, 5.0, 20) ** 2])
    with pytest.warns(ConstantColumnWarning, match="'x0'"):
        assert BoxCoxTransformer(method=method).fit(X).lambdas_[0] == 1.0


# --- inverse_transform ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("standardize", [True, False])
def test_inverse_transform_round_trips_training_data(breast_cancer, method, standardize):
    X = breast_cancer.data.to_numpy(dtype=np.float64)
    lambdas = np.random.default_rng(5).uniform(-3, 3, X.shape[1])
    lambdas[:3] = [0.0, 1.0, 2.0]  # the special branches of both inverses
    if method == "yeo-johnson":
        X = X - np.median(X, axis=0)  # both signs, so both Yeo-Johnson branches are exercised
        lambdas = lambdas / 10  # raw features span ~1e3; keep (1 + |x|)^λ well inside float64
    bc = BoxCoxTransformer(lambdas, method=method, standardize=standardize)
    np.testing.assert_allclose(bc.inverse_transform(bc.fit_transform(X)), X, rtol=1e-6, atol=1e-9)


def test_inverse_transform_of_values_outside_the_image_stays_finite():
    bc = BoxCoxTransformer([2.0, -2.0], standardize=False).fit(np.array([[1.0, 1.0], [2.0, 3.0]]))
    assert np.isfinite(bc.inverse_transform(np.array([[-10.0, 10.0], [1e300, -1e300]]))).all()


# --- λ given by the user -------------------------------------------------------------------------


def test_dict_lambdas_by_name_position_and_dataframe_column(breast_cancer):
    X = breast_cancer.data.iloc[:, :3]
    expected = np.array([0.5, -1.0, 2.0])
    by_column = dict(zip(X.columns, expected))
    np.testing.assert_array_equal(BoxCoxTransformer(by_column).fit(X).lambdas_, expected)
    arr = X.to_numpy()
    by_output_name = {"x0": 0.5, "x1": -1.0, "x2": 2.0}
    np.testing.assert_array_equal(BoxCoxTransformer(by_output_name).fit(arr).lambdas_, expected)
    by_position_and_name = {0: 0.5, 2: 2.0, "x1": -1.0}
    np.testing.assert_array_equal(
        BoxCoxTransformer(by_position_and_name).fit(arr).lambdas_, expected
    )


@pytest.mark.parametrize(
    ("lambdas", "message"),
    [
        ([1.0, 2.0], r"shape \(2,\) but X has 3 features"),
        ([[1.0, 2.0, 3.0]], r"shape \(1, 3\) but X has 3 features"),
        ({"x0": 1.0, "x1": 1.0}, r"missing feature\(s\) \['x2'\]"),
        ({"x0": 1.0, "x1": 1.0, "x2": 1.0, "x9": 1.0}, "unknown feature 'x9'"),
        ({"x0": 1.0, 0: 2.0, "x1": 1.0, "x2": 1.0}, "'x0' more than once"),
        ({"x0": 1.0, "x1": "one", "x2": 1.0}, r"lambdas\['x1'\] must be a real number"),
        ([1.0, np.nan, 1.0], r"non-finite λ for feature\(s\) \['x1'\]"),
        ({"x0": 1.0, "x1": 1.0, "x2": np.inf}, r"non-finite λ for feature\(s\) \['x2'\]"),
        (["a", "b", "c"], "lambdas must be numbers"),
    ],
)
def test_bad_lambdas_raise_value_error_naming_the_problem(lambdas, message):
    X = np.arange(12.0).reshape(4, 3)
    with pytest.raises(ValueError, match=message):
        BoxCoxTransformer(lambdas).fit(X)


def test_missing_feature_in_dict_is_named_by_dataframe_column():
    X = pd.DataFrame({"radius": [1.0, 2.0, 4.0], "area": [3.0, 1.0, 2.0]})
    with pytest.raises(ValueError, match=r"missing feature\(s\) \['area'\]"):
        BoxCoxTransformer({"radius": 1.0}).fit(X)


def test_nan_in_input_is_rejected():
    X = np.array([[1.0, 2.0], [np.nan, 3.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="NaN"):
        BoxCoxTransformer().fit(X)
    bc = BoxCoxTransformer().fit(np.nan_to_num(X))
    with pytest.raises(ValueError, match="NaN"):
        bc.transform(X)


# --- extreme values ------------------------------------------------------------------------------


def _with_one_huge_value(n=200):
    X = np.random.default_rng(0).normal(size=(n, 3))
    X[5, 1] = 1e300
    return X


def test_one_huge_value_warns_naming_its_column():
    X = _with_one_huge_value()
    with pytest.warns(ExtremeValueWarning) as record:
        bc = BoxCoxTransformer().fit(X)
    assert len(record) == 1
    message = str(record[0].message)
    assert "'x1'" in message and "'x0'" not in message and "'x2'" not in message, message
    assert "\n" not in message
    assert record[0].filename == __file__, "the warning should point at the caller's fit"
    # What the warning is about: the rest of the column collapsed to Z = 1 and λ_MLE ran away.
    assert bc.lambdas_[1] < -100


def test_extreme_value_warning_names_dataframe_columns_and_comes_from_fit_only():
    X = pd.DataFrame(_with_one_huge_value(), columns=["a", "income", "c"])
    with pytest.warns(ExtremeValueWarning, match="'income'"):
        bc = BoxCoxTransformer().fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtremeValueWarning)
        bc.transform(X)


def test_yeo_johnson_has_no_range_scaling_to_warn_about():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtremeValueWarning)
        # Given λ: scipy's Yeo-Johnson MLE itself fails on 1e300 ("lower bound exceeds the upper").
        BoxCoxTransformer([1.0, 1.0, 1.0], method="yeo-johnson").fit(_with_one_huge_value())


@pytest.mark.parametrize("dataset", ["sonar", "breast_cancer", "wine", "iris", "exp_normal"])
def test_ordinary_data_fits_without_an_extreme_value_warning(dataset, request):
    if dataset in ("sonar", "breast_cancer"):
        X = request.getfixturevalue(dataset).data
    elif dataset == "exp_normal":  # ordinary right-skewed data, even with 100,000 rows
        X = np.exp(np.random.default_rng(1).normal(size=(100_000, 3)))
    else:
        from sklearn import datasets

        X = getattr(datasets, f"load_{dataset}")().data
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtremeValueWarning)
        BoxCoxTransformer().fit(X)


def test_crowded_means_ninety_percent_within_one_percent_of_the_range():
    # 100 rows: the shortest interval holding 90 of them is 0.5 % of the range, or 2 %.
    bulk = np.linspace(0.0, 0.005, 90)
    crowded = np.concatenate([bulk, np.linspace(0.5, 1.0, 10)])
    wider = np.concatenate([np.linspace(0.0, 0.02, 90), np.linspace(0.5, 1.0, 10)])
    fewer = np.concatenate([bulk[:89], np.linspace(0.4, 1.0, 11)])
    X = np.column_stack([crowded, wider, fewer])
    np.testing.assert_array_equal(crowded_columns(X), [0])


def test_a_column_of_mostly_one_value_is_not_crowded():
    flag = np.zeros(200)
    flag[:7] = 1.0  # a rare flag: 96.5 % zeros, nothing for range scaling to squeeze
    constant = np.full(200, 3.0)
    assert crowded_columns(np.column_stack([flag, constant])).size == 0


def test_crowding_is_measured_without_overflow_at_the_ends_of_float64():
    X = np.random.default_rng(2).normal(size=(50, 1))
    X[0, 0], X[1, 0] = -1.5e308, 1.5e308  # their difference overflows float64
    with np.errstate(over="raise"):
        np.testing.assert_array_equal(crowded_columns(X), [0])


# --- range scaling after the power step -------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_range_scale_is_the_power_step_then_scikit_learns_min_max_scaler(method):
    from sklearn.preprocessing import MinMaxScaler

    rng = np.random.default_rng(3)
    X = rng.lognormal(size=(80, 3))
    train, test = _split(X)
    lambdas = [0.5, -1.0, 2.0]
    reference = BoxCoxTransformer(lambdas, method=method, standardize=False).fit(train)
    scaler = MinMaxScaler().fit(reference.transform(train))
    fitted = BoxCoxTransformer(lambdas, method=method, range_scale=True).fit(train)
    for part in (train, test):
        expected = scaler.transform(reference.transform(part))
        np.testing.assert_allclose(fitted.transform(part), expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(fitted.inverse_transform(fitted.transform(part)), part)
    out = fitted.transform(train)
    np.testing.assert_allclose([out.min(axis=0), out.max(axis=0)], [[0, 0, 0], [1, 1, 1]])


def test_range_scale_with_lambda_one_is_min_max_scaler():
    from sklearn.preprocessing import MinMaxScaler

    X = np.random.default_rng(4).normal(size=(60, 4))
    out = BoxCoxTransformer(np.ones(4), range_scale=True).fit_transform(X)
    np.testing.assert_allclose(out, MinMaxScaler().fit_transform(X), atol=1e-14)


def test_the_gates_fitted_pair_gives_the_transformers_range_scaled_numbers():
    from optuna_boxcox._math._numerics import fitted_pair

    X = np.random.default_rng(5).lognormal(size=(70, 3))
    train, test = _split(X)
    lambdas = np.array([0.3, 2.0, -0.5])
    fitted = BoxCoxTransformer(lambdas, range_scale=True).fit(train)
    a, b = fitted_pair(lambdas, train, test, range_scale=True)
    np.testing.assert_array_equal(a, fitted.transform(train))
    np.testing.assert_array_equal(b, fitted.transform(test))


@pytest.mark.parametrize("range_scale", [False, True])
@pytest.mark.parametrize("extrapolation", ["extrapolate", "clip"])
def test_a_folds_shared_range_step_gives_each_lambdas_own_numbers(range_scale, extrapolation):
    from optuna_boxcox._math._numerics import fitted_pair
    from optuna_boxcox._math._numerics import range_pair

    X = np.random.default_rng(6).lognormal(size=(90, 3)) * [1.0, 1e3, 1e-3]
    train, test = _split(X)
    test = test * 1.5  # held-out values outside the training range: extrapolated or clipped
    ranged = range_pair(train, test, extrapolation=extrapolation)
    for lambdas in (np.array([0.3, 2.0, -0.5]), np.ones(3), np.array([0.0, -4.0, 4.0])):
        fitted = BoxCoxTransformer(lambdas, extrapolation=extrapolation, range_scale=range_scale)
        fitted.fit(train)
        a, b = fitted_pair(
            lambdas,
            train,
            test,
            extrapolation=extrapolation,
            range_scale=range_scale,
            ranged=ranged,
        )
        np.testing.assert_array_equal(a, fitted.transform(train))
        np.testing.assert_array_equal(b, fitted.transform(test))
