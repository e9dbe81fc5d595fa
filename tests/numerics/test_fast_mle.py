"""The Box-Cox MLE on both sides of EXACT_MLE_ROWS: scipy's bits up to it, Newton's beyond.

scipy's ``boxcox_normmax(method="mle")`` is the oracle. Beyond the threshold the two differ by
where scipy's Brent search stops: within 1.48e-8 of λ, and within the rounding noise of its
log-sum-exp log-likelihood, which leaves its λ ~1e-7 wide whatever λ is (near λ = 0, finer than
1e-6 of λ). So there λ is also held to the root of the derivative computed in extended
precision, which Newton's answer meets to ~1e-12.
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pytest
from scipy import optimize
from scipy import stats

from optuna_boxcox._math import _numerics
from optuna_boxcox._math._numerics import EXACT_MLE_ROWS
from optuna_boxcox._math._numerics import boxcox_mle
from optuna_boxcox._math._numerics import mle_lambdas

N = EXACT_MLE_ROWS + 10_001


def _scaled(x: np.ndarray) -> np.ndarray:
    return 1.0 + (x - x.min()) / (x.max() - x.min())


def _column(case: str, n: int = N) -> np.ndarray:
    """A column of ``n`` positive values; the comment gives its λ."""
    rng = np.random.default_rng(7)
    if case == "normal":  # 0.98
        return _scaled(rng.normal(size=n))
    if case == "near zero":  # -0.028
        return _scaled(rng.beta(2.0, 3.0, n))
    if case == "near two":  # 1.90
        return _scaled(rng.beta(3.0, 2.0, n))
    if case == "beyond two":  # 2.25: outside scipy's bracket (-2, 2)
        return _scaled(rng.beta(2.5, 1.5, n))
    if case == "near minus two":  # -1.89
        return _scaled(np.exp(rng.normal(0.0, 0.2, n)))
    if case == "far left":  # -39
        return _scaled(np.exp(rng.normal(size=n)))
    if case == "far right":  # 9.2
        return _scaled(rng.beta(8.0, 1.0, n))
    if case == "heavy skew":  # about -9000
        return _scaled(np.exp(3.0 * rng.normal(size=n)))
    if case == "ties":  # a few dozen distinct values
        return _scaled(np.round(np.exp(rng.normal(size=n)), 1))
    if case == "two values":
        return _scaled((rng.random(n) < 0.3).astype(float))
    if case == "raw lognormal":  # 0.001, not scaled
        return np.exp(rng.normal(size=n))
    if case == "raw tiny":
        return np.exp(rng.normal(size=n)) * 1e-200
    if case == "raw huge":
        return np.exp(rng.normal(size=n)) * 1e200
    if case == "raw wide":  # 1e-260 .. 1e260
        return np.exp(rng.uniform(-600.0, 600.0, n))
    if case == "raw gamma":
        return rng.gamma(2.0, 3.0, n)
    raise ValueError(case)


SCALED = [
    "normal",
    "near zero",
    "near two",
    "beyond two",
    "near minus two",
    "far left",
    "far right",
    "heavy skew",
    "ties",
    "two values",
]
RAW = ["raw lognormal", "raw tiny", "raw huge", "raw wide", "raw gamma"]


def _scipy(column: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.boxcox_normmax(column, method="mle"))


def _precise_root(column: np.ndarray, near: float) -> float:
    """The root of the log-likelihood's derivative, the sums in extended precision (80 bits)."""
    logs = np.log(column.astype(np.longdouble))
    logs -= logs.mean()  # the root does not move with the logs' shift; nothing overflows

    def slope(lam: float) -> float:
        lam = np.longdouble(lam)
        e = np.exp(lam * logs)
        y = np.expm1(lam * logs) / lam
        y1 = (logs * e - y) / lam  # the derivative of y in λ
        centred = y - y.mean()
        return float(logs.mean() - np.mean(centred * (y1 - y1.mean())) / np.mean(centred**2))

    width = 1e-4 * max(1.0, abs(near))
    return optimize.brentq(slope, near - width, near + width, xtol=1e-300, rtol=1e-15)


@pytest.mark.parametrize("case", SCALED + RAW)
def test_beyond_the_threshold_the_mle_is_scipys(case):
    column = _column(case)
    lam = boxcox_mle(column)
    expected = _scipy(column)
    # Near λ = 0 a relative tolerance asks more than scipy gives: its log-likelihood's rounding
    # noise (1e-11 on 20,000 values) hides λ's last ~1e-7 (see test_..._the_precise_root).
    np.testing.assert_allclose(lam, expected, rtol=1e-6, atol=5e-7 if abs(expected) < 0.1 else 0)


@pytest.mark.parametrize("case", ["normal", "near zero", "far left", "heavy skew", "raw tiny"])
def test_beyond_the_threshold_the_mle_is_the_precise_root(case):
    column = _column(case)
    lam = boxcox_mle(column)
    np.testing.assert_allclose(lam, _precise_root(column, lam), rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("case", ["normal", "far left", "two values", "raw wide"])
def test_up_to_the_threshold_the_mle_is_scipys_bit_for_bit(case):
    column = _column(case, EXACT_MLE_ROWS)
    assert boxcox_mle(column) == _scipy(column)


def test_the_threshold_parts_the_two_paths():
    column = _column("far left", EXACT_MLE_ROWS + 1)
    assert boxcox_mle(column[:-1]) == _numerics._boxcox_mle_exact(column[:-1])
    newton = boxcox_mle(column)
    assert newton == _numerics._boxcox_mle_newton(column)
    np.testing.assert_allclose(newton, _numerics._boxcox_mle_exact(column), rtol=1e-6)


def test_an_optimum_that_would_overflow_is_scipys_constrained_one():
    # λ ≈ 9 on values near 1e300: the transformed maximum would overflow, so scipy constrains λ.
    column = 1e300 * _column("far right")
    with pytest.warns(UserWarning, match="constrained optimum"):  # scipy's own warning
        lam = boxcox_mle(column)
    assert lam == _scipy(column)
    assert lam * np.log(column.max()) <= 710


def test_the_mle_is_the_same_floats_for_a_strided_column_and_on_every_call():
    column = _column("far left")
    matrix = np.column_stack([column, column[::-1]])
    first = boxcox_mle(column)
    assert boxcox_mle(matrix[:, 0]) == first == boxcox_mle(column.copy())


def test_a_constant_or_non_positive_long_column_takes_the_exact_path():
    lambdas = mle_lambdas(np.column_stack([np.full(N, 1.5), _column("normal")]), "box-cox")
    assert lambdas[0] == 1.0
    np.testing.assert_allclose(lambdas[1], _scipy(_column("normal")), rtol=1e-6)
    assert _numerics._boxcox_mle_newton(np.full(N, 1.5)) is None
    assert _numerics._boxcox_mle_newton(np.concatenate([[-1.0], _column("normal")])) is None


def test_the_memo_key_hashes_the_bytes_in_place():
    values = np.random.default_rng(0).random((300, 7)) + 1.0
    expected = hashlib.blake2b(values.tobytes(), digest_size=16).digest()
    assert _numerics._digest(values) == expected
    assert _numerics._digest(np.asfortranarray(values)) == expected
    wide = np.random.default_rng(1).random((_numerics._BLOCK_ELEMENTS // 5, 10)) + 1.0
    assert (
        _numerics._digest(wide[:, ::2])
        == hashlib.blake2b(np.ascontiguousarray(wide[:, ::2]).tobytes(), digest_size=16).digest()
    )


def test_mle_lambdas_of_a_long_matrix_in_any_layout_are_the_same():
    Z = np.column_stack([_column(case) for case in ("normal", "ties", "far right")])
    expected = [_scipy(Z[:, j]) for j in range(Z.shape[1])]
    lambdas = mle_lambdas(Z, "box-cox")
    np.testing.assert_allclose(lambdas, expected, rtol=1e-6)
    _numerics._MLE_MEMO.clear()  # computed again, from columns laid out otherwise
    np.testing.assert_array_equal(mle_lambdas(np.asfortranarray(Z), "box-cox"), lambdas)
