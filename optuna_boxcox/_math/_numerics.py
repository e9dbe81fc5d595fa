"""Column-wise numerics of the paper's transform, shared by the transformer and the objective.

The transform is that of Blum, Elgendi & Menon (2022), Algorithms 3 and 4: range standardisation into
[1, 2], Box-Cox with one λ per column, standard scaling.

Nothing here knows about Optuna or scikit-learn estimators: plain functions on float64 arrays, so the
objective can re-transform a single column when only its λ changed.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any
from typing import NamedTuple
import warnings

import numpy as np
from scipy import optimize
from scipy import special
from scipy import stats

from optuna_boxcox._math._jit import compiled

#: Z values below this are raised to it before Box-Cox ("extrapolate" mode): Box-Cox needs Z > 0.
Z_FLOOR = 1e-6
#: ``λ·log z`` is saturated here so that no finite input and λ overflows to inf (exp(700) is finite).
MAX_EXPONENT = 700.0
#: Below this |λ| the Box-Cox limit log(z) (Yeo-Johnson: log1p) is used; expm1 keeps the rest exact.
LAMBDA_ZERO = 1e-12
_EPS = float(np.finfo(np.float64).eps)

METHODS = ("box-cox", "yeo-johnson")
EXTRAPOLATIONS = ("extrapolate", "clip")

#: A column is crowded when at least this share of its values lies within :data:`CROWDED_WIDTH`
#: of its range (see :func:`crowded_columns`).
CROWDED_SHARE = 0.9
CROWDED_WIDTH = 0.01

#: Elements of the blocks of rows the transform and other passes over a matrix work on: a block
#: stays in cache between the steps (docs/performance_log.md has the sizes measured).
_BLOCK_ELEMENTS = 1 << 16


class ExtremeValueWarning(UserWarning):
    """A few extreme values set a column's range, so range scaling squeezes the rest together."""


class ConstantColumnWarning(UserWarning):
    """Feature columns with a single value."""


def constant_columns(X: np.ndarray) -> np.ndarray:
    """Indices of the columns of X holding a single value."""
    if X.shape[0] == 0:
        return np.zeros(0, dtype=int)
    same = np.ones(X.shape[1], dtype=bool)
    for block in _row_blocks(X):  # a block's comparison at a time, not one of all of X
        same &= np.all(X[:1] == block, axis=0)
    return np.flatnonzero(same)


def _row_blocks(X: np.ndarray) -> Any:
    """Views of consecutive rows of X, each about :data:`_BLOCK_ELEMENTS` elements."""
    rows = max(1, _BLOCK_ELEMENTS // max(1, X.shape[1]))
    return (X[start : start + rows] for start in range(0, X.shape[0], rows))


def column_names(width: int) -> list[str]:
    """The names messages give the columns of an array (no names of its own): scikit-learn's
    ``x0, x1, …``, as ``get_feature_names_out`` gives them."""
    return [f"x{j}" for j in range(width)]


def warn_constant_columns(X: np.ndarray, names: list[str], stacklevel: int = 2) -> None:
    """Warn (:class:`ConstantColumnWarning`, one line) naming the :func:`constant_columns` of X:
    range scaling maps such a column to Z = 1, which every λ leaves as it is."""
    constant = [names[j] for j in constant_columns(X)]
    if not constant:
        return
    shown = ", ".join(map(repr, constant[:5])) + (
        f" and {len(constant) - 5} more" if len(constant) > 5 else ""
    )
    warnings.warn(
        f"constant column(s) {shown}: no λ changes them, they are left constant; drop them to "
        "search the others only",
        ConstantColumnWarning,
        stacklevel=stacklevel + 1,
    )


def fit_range(X: np.ndarray, names: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-column minimum and range of X; a constant column gets range 1 (it then maps to Z = 1).

    Raises:
        ValueError: A column's range exceeds the largest float64 (it spans about ±1e308), so
            range scaling would make it constant; the message names it (by ``names``, else by
            position).
    """
    data_min = np.min(X, axis=0)
    with np.errstate(over="ignore"):
        data_range = np.max(X, axis=0) - data_min
    overflowing = np.flatnonzero(np.isinf(data_range) & np.isfinite(data_min))
    if overflowing.size:
        listing = ", ".join(
            repr(names[j]) if names is not None else f"at position {j}" for j in overflowing
        )
        raise ValueError(
            f"feature column(s) {listing} span more than the largest float64 (maximum minus "
            "minimum overflows), so scaling them into [1, 2] would make them constant: divide "
            "them by a constant first (Box-Cox's range scaling makes any scale the same)"
        )
    data_range = np.where(data_range > 0, data_range, 1.0)
    return data_min, data_range


def bulk_widths(X: np.ndarray, share: float = CROWDED_SHARE) -> np.ndarray:
    """Per column, the width of the shortest interval holding ``share`` of its values, as a fraction
    of the column's range: what range scaling into [1, 2] leaves of the bulk of the column.

    0 where that many values are equal (or the column is constant), 1 when no fewer than all
    values will do (fewer than 1 / (1 - share) rows). Beyond :data:`CROWDED_SAMPLE_ROWS` rows the
    interval is that of a fixed sample of them (:func:`sample_rows`), measured against the whole
    column's range: sorting every column of millions of rows would cost more than the fit.
    """
    n = X.shape[0]
    k = math.ceil(share * n)
    if n < 2 or k >= n:
        return np.where(np.ptp(X, axis=0) > 0, 1.0, 0.0) if n else np.zeros(X.shape[1])
    rows = sample_rows(n, CROWDED_SAMPLE_ROWS) if n > CROWDED_SAMPLE_ROWS else None
    if rows is not None:
        k = math.ceil(share * rows.shape[0])
    widths = np.empty(X.shape[1])
    spans = np.empty(X.shape[1])
    # A group of columns at a time, so that the sorted copy stays small however wide X is.
    group = max(1, (1 << 22) // (n if rows is None else rows.shape[0]))
    for start in range(0, X.shape[1], group):
        columns = slice(start, start + group)
        part = X[:, columns] if rows is None else X[rows, columns]
        # Halved, so that the differences of finite values cannot overflow (halving is exact).
        half = np.sort(part, axis=0) * 0.5
        m = half.shape[0]
        widths[columns] = np.min(half[k - 1 :] - half[: m - k + 1], axis=0)
        if rows is None:
            spans[columns] = half[-1] - half[0]
        else:
            spans[columns] = (
                np.max(X[:, columns], axis=0) * 0.5 - np.min(X[:, columns], axis=0) * 0.5
            )
    return np.divide(widths, spans, out=np.zeros_like(widths), where=spans > 0)


#: Beyond this many rows, :func:`bulk_widths` measures a sample of this many.
CROWDED_SAMPLE_ROWS = 100_000


def sample_rows(n: int, m: int) -> np.ndarray:
    """``m ≤ n`` of ``range(n)`` in order, one drawn from each of m equal strata (seeded): spread
    over the rows like a fixed stride, without falling in step with data that repeats with a
    period; the same rows on every machine."""
    edges = np.arange(m + 1, dtype=np.int64) * n // m
    return np.random.default_rng(0).integers(edges[:-1], edges[1:])


def crowded_columns(X: np.ndarray) -> np.ndarray:
    """Indices of the columns of training data X whose range scaling into [1, 2] leaves at least
    :data:`CROWDED_SHARE` (90 %) of their values within :data:`CROWDED_WIDTH` (1 %) of the range.

    That happens when a few extreme values set the range (one 1e300 in a column of ordinary
    numbers puts every other value at Z = 1 to the last bit, and the Box-Cox λ fitted to them is
    extreme); ordinary skewed data such as exp(N(0, 1)) keeps its bulk several times wider. A
    column whose bulk is one repeated value (mostly zeros, a rare flag) is not crowded: scaling
    loses nothing there.
    """
    return _crowded(bulk_widths(X))


def _crowded(widths: np.ndarray) -> np.ndarray:
    return np.flatnonzero((widths > 0) & (widths < CROWDED_WIDTH))


def warn_crowded_columns(X: np.ndarray, names: list[str], stacklevel: int = 2) -> None:
    """Warn (:class:`ExtremeValueWarning`, one line) naming the :func:`crowded_columns` of X."""
    widths = bulk_widths(X)
    crowded = _crowded(widths)
    if crowded.size == 0:
        return
    listing = ", ".join(
        f"{names[j]!r} ({CROWDED_SHARE:.0%} of its values within {widths[j]:.2g} of its range)"
        for j in crowded
    )
    warnings.warn(
        f"a few extreme values set the range of feature(s) {listing}; scaled into [1, 2], the "
        "rest are squeezed together and the Box-Cox λ becomes extreme. Clip or log-transform "
        "such values first.",
        ExtremeValueWarning,
        stacklevel=stacklevel + 1,
    )


def range_standardise(
    X: np.ndarray,
    data_min: np.ndarray,
    data_range: np.ndarray,
    extrapolation: str = "extrapolate",
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Map X into Z = 1 + (X - min) / range, i.e. [1, 2] on the training data (paper Algorithm 3).

    Unseen values can leave [1, 2]. ``"extrapolate"`` (the paper's behaviour) keeps them but raises
    Z below :data:`Z_FLOOR` to the floor; ``"clip"`` clamps Z into [1, 2]. ``out``: an array of
    X's shape to write Z into (a fit over many rows reuses one for every column).
    """
    # Each step in place on the one array: the same floats as fresh arrays, one allocation.
    with np.errstate(over="ignore", invalid="ignore"):
        Z = np.subtract(np.asarray(X), data_min, out=out, dtype=np.float64)
        Z /= data_range
        Z += 1.0
    # A finite X can still overflow here (1e308 - (-1e308)); saturate instead of producing inf.
    Z = np.nan_to_num(Z, copy=False, nan=1.0, posinf=np.finfo(np.float64).max, neginf=Z_FLOOR)
    if extrapolation == "clip":
        return np.clip(Z, 1.0, 2.0, out=Z)
    return np.maximum(Z, Z_FLOOR, out=Z)


def boxcox_column(z: np.ndarray, lam: float) -> np.ndarray:
    """Box-Cox of positive values with one λ, computed as ``expm1(λ·log z) / λ`` (stable near λ = 0)."""
    return boxcox_from_log(np.log(z), lam)


def boxcox_from_log(log_z: np.ndarray, lam: float) -> np.ndarray:
    """:func:`boxcox_column` given ``log z`` (a search re-transforms a column for many λ)."""
    if abs(lam) < LAMBDA_ZERO:
        return log_z.copy()
    return _boxcox_power(lam, log_z)


def _boxcox_power(lam: Any, log_z: np.ndarray) -> np.ndarray:
    """``expm1(λ·log z) / λ`` for λ away from 0 (a λ column broadcasts over rows of λ)."""
    return np.expm1(np.clip(lam * log_z, -MAX_EXPONENT, MAX_EXPONENT)) / lam


def boxcox_rows(log_z: np.ndarray, lambdas: np.ndarray) -> np.ndarray:
    """:func:`boxcox_from_log` of one column for each λ, as the rows of one array, the same floats
    (a coordinate sweep transforms one column for a dozen λ)."""
    lambdas = np.asarray(lambdas, dtype=np.float64)
    out = np.empty((len(lambdas), len(log_z)))
    zero = np.abs(lambdas) < LAMBDA_ZERO
    out[zero] = log_z
    if not zero.all():
        out[~zero] = _boxcox_power(lambdas[~zero][:, None], log_z)
    return out


def yeojohnson_column(x: np.ndarray, lam: float) -> np.ndarray:
    """Yeo-Johnson of real values with one λ, in the same expm1/log1p form as :func:`boxcox_column`."""
    out = np.empty_like(x, dtype=np.float64)
    pos = x >= 0
    lp = np.log1p(x[pos])
    if abs(lam) < LAMBDA_ZERO:
        out[pos] = lp
    else:
        out[pos] = np.expm1(np.clip(lam * lp, -MAX_EXPONENT, MAX_EXPONENT)) / lam
    ln = np.log1p(-x[~pos])
    two_minus = 2.0 - lam
    if abs(two_minus) < LAMBDA_ZERO:
        out[~pos] = -ln
    else:
        out[~pos] = -np.expm1(np.clip(two_minus * ln, -MAX_EXPONENT, MAX_EXPONENT)) / two_minus
    return out


def power_column(values: np.ndarray, lam: float, method: str) -> np.ndarray:
    """The per-column power transform of ``method`` ("box-cox" on Z, "yeo-johnson" on raw X)."""
    if method == "box-cox":
        return boxcox_column(values, lam)
    return yeojohnson_column(values, lam)


def power_columns(values: np.ndarray, lambdas: np.ndarray, method: str) -> np.ndarray:
    """Apply :func:`power_column` to every column with its own λ."""
    out = np.empty(values.shape, dtype=np.float64)
    for j, lam in enumerate(lambdas):
        out[:, j] = power_column(values[:, j], float(lam), method)
    return out


def mle_lambdas(values: np.ndarray, method: str) -> np.ndarray:
    """Per-column maximum-likelihood λ (scipy's ``boxcox_normmax`` / ``yeojohnson_normmax``).

    A constant column has no likelihood to maximise; it gets λ = 1 (any λ gives the same output).
    scipy takes ~20 ms a column and experiments build many objectives on the same training folds,
    so results are remembered per data (a few hundred recent matrices), keyed by a hash of the
    matrix's bytes read in place (a copy of a 10M × 50 matrix would be 4 GB).
    """
    values = np.asarray(values, dtype=np.float64)
    if values.shape[0] <= EXACT_MLE_ROWS:
        # The columns of a C-ordered copy, as ever: NumPy's log can round a strided column's
        # values otherwise, and the recorded searches hold these bits.
        values = np.ascontiguousarray(values)
    key = (method, values.shape, _digest(values))
    if key not in _MLE_MEMO:
        if len(_MLE_MEMO) >= 256:
            _MLE_MEMO.pop(next(iter(_MLE_MEMO)))
        _MLE_MEMO[key] = _mle_lambdas(values, method)
    return _MLE_MEMO[key].copy()


_MLE_MEMO: dict[tuple[str, tuple[int, ...], bytes], np.ndarray] = {}


def _digest(values: np.ndarray) -> bytes:
    """blake2b of ``values.tobytes()`` (C order), without that copy: a C-contiguous array is hashed
    through its buffer, any other a block of rows at a time."""
    h = hashlib.blake2b(digest_size=16)
    if values.flags.c_contiguous:
        h.update(memoryview(values).cast("B"))
        return h.digest()
    rows = max(1, _BLOCK_ELEMENTS // max(1, values.shape[1]))
    for start in range(0, values.shape[0], rows):
        h.update(memoryview(np.ascontiguousarray(values[start : start + rows])).cast("B"))
    return h.digest()


def _mle_lambdas(values: np.ndarray, method: str) -> np.ndarray:
    return np.array([_column_mle(values[:, j], method) for j in range(values.shape[1])])


def _column_mle(column: np.ndarray, method: str) -> float:
    """One column's entry of :func:`mle_lambdas` (not remembered): 1 for a constant column or
    where the optimiser finds no finite λ."""
    if np.ptp(column) == 0:
        return 1.0
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        if method == "box-cox":
            lam = boxcox_mle(column)
        else:
            lam = stats.yeojohnson_normmax(column)
    return float(lam) if np.isfinite(lam) else 1.0


#: Up to this many rows, :func:`boxcox_mle` runs scipy's own optimiser over scipy's arithmetic
#: (bit for bit scipy's λ, which the recorded searches of the paper's presets hold), cheap on
#: columns this short. Longer columns take the one-pass Newton path.
EXACT_MLE_ROWS = 10_000


def boxcox_mle(column: np.ndarray) -> float:
    """``scipy.stats.boxcox_normmax(column, method="mle")`` of a positive column: bit for bit up to
    :data:`EXACT_MLE_ROWS` rows; beyond, the maximum itself to ~1e-12, where scipy's Brent search
    stops within 1.5e-8 of λ and its log-likelihood's rounding noise (~1e-7 of λ near 0).

    Up to the threshold, scipy's optimiser (Brent's method from the bracket (-2, 2)) runs over
    scipy's arithmetic (:func:`_boxcox_mle_exact`), ten times faster than scipy. Beyond it,
    Newton's method finds the root of the log-likelihood's derivative, each step one compiled
    pass over the column (:func:`_boxcox_mle_newton`): the log-likelihood is concave in λ
    (Kouider & Chen 1995), so the root is scipy's maximum. Where the optimum would overflow the
    transformed data, scipy answers (it then constrains λ).
    """
    column = np.asarray(column, dtype=np.float64)
    if column.shape[0] <= EXACT_MLE_ROWS:
        lam = _boxcox_mle_exact(column)
    else:
        lam = _boxcox_mle_newton(column)
        if lam is None:  # no finite optimum in reach (a constant or non-positive column)
            lam = _boxcox_mle_exact(column)
    extreme = math.log(float(np.max(column)) if lam > 0 else float(np.min(column)))
    if not abs(lam * extreme) < 650:  # scipy constrains λ so that the data stay finite
        return float(stats.boxcox_normmax(column, method="mle"))
    return lam


def _boxcox_mle_exact(column: np.ndarray) -> float:
    """scipy's Brent search over the log-likelihood of Box-Cox with the variance taken in log
    space by log-sum-exp, as scipy does it, on the column's logarithms taken once: scipy's array
    wrapper around the log-likelihood costs ~2 ms a call, 15–20 calls a column."""
    logdata = np.log(np.asarray(column, dtype=np.float64))
    n = logdata.shape[0]
    total = np.sum(logdata)
    signs = np.stack((np.ones_like(logdata), -np.ones_like(logdata)), axis=0)

    def negative_llf(lmb: float) -> float:
        if lmb == 0:
            logvar = np.log(np.var(logdata))
        else:
            logx = lmb * logdata
            logmean = np.broadcast_to(
                special.logsumexp(logx, keepdims=True) - math.log(n), logx.shape
            )
            logxmu, _ = special.logsumexp(
                np.stack((logx, logmean), axis=0), axis=0, b=signs, return_sign=True
            )
            logvar = special.logsumexp(2 * logxmu) - math.log(n) - 2 * math.log(abs(lmb))
        return -((lmb - 1) * total - n / 2 * logvar)

    return float(optimize.brent(negative_llf, brack=(-2.0, 2.0)))


#: Newton's start comes from every k-th value of a long column, about this many of them, to
#: within _START_TOL of max(1, |λ|) (its sampling error is larger anyway).
_START_SAMPLE = 1 << 14
_START_TOL = 1e-4
#: Newton stops once a step is below this fraction of max(1, |λ|): converging quadratically,
#: λ after it is off by about that squared.
_NEWTON_TOL = 1e-7
_NEWTON_STEPS = 100
#: Values a block of the compiled pass holds while it takes their block's central moments.
_PASS_BLOCK = 256


def _boxcox_mle_newton(column: np.ndarray) -> float | None:
    """The root of the Box-Cox log-likelihood's derivative by safeguarded Newton steps, each one
    pass over the column's logarithms (:func:`_llf_slope`), started from the root for a sample of
    every k-th value; None where none is found (a constant or non-positive column)."""
    kernels = _mle_kernels()
    if kernels is None:  # pragma: no cover - numba is a dependency
        return None
    log_column, llf_slope = kernels
    logs = np.empty(column.shape[0])
    low, high = log_column(column, logs)
    if not (math.isfinite(low) and math.isfinite(high)) or low == high:
        return None
    work = (np.empty((4, _PASS_BLOCK)), np.empty(2))
    stride = logs.shape[0] // _START_SAMPLE
    lam = 1.0
    if stride >= 4:
        lam = _newton(llf_slope, logs, stride, lam, low, high, work, _START_TOL)
        if lam is None:
            lam = 1.0
    return _newton(llf_slope, logs, 1, lam, low, high, work, _NEWTON_TOL)


def _newton(
    llf_slope: Any,
    logs: np.ndarray,
    stride: int,
    lam: float,
    low: float,
    high: float,
    work: tuple[np.ndarray, np.ndarray],
    tol: float,
) -> float | None:
    """Newton's method on the log-likelihood's derivative g′(λ) over every ``stride``-th log,
    kept inside the bracket its signs give (g′ falls: the log-likelihood is concave), bisecting
    where a step would leave it and going at most 4·(1 + |λ|) towards a side not yet bracketed."""
    buffer, out = work
    left, right = -math.inf, math.inf  # g′(left) > 0 > g′(right)
    for _ in range(_NEWTON_STEPS):
        # Logs shifted by their maximum (λ ≥ 0) or minimum (λ < 0): every λ·(log x - shift) ≤ 0,
        # so nothing overflows, whatever the data's scale.
        llf_slope(logs, stride, lam, high if lam >= 0 else low, buffer, out)
        slope, curvature = float(out[0]), float(out[1])
        if not math.isfinite(slope):
            return None
        if slope == 0:
            return lam
        if slope > 0:
            left = lam
        else:
            right = lam
        reach = 4.0 * (1.0 + abs(lam))
        step = -slope / curvature if curvature < 0 else math.copysign(reach, slope)
        if not math.isfinite(step):
            step = math.copysign(reach, slope)
        if math.isinf(right if step > 0 else left):
            step = math.copysign(min(abs(step), reach), step)
        proposed = lam + step
        if not left < proposed < right:
            proposed = 0.5 * (left + right)
        scale = max(1.0, abs(lam))
        if abs(proposed - lam) <= tol * scale or right - left <= tol * scale:
            return proposed
        lam = proposed
    return None


def _mle_kernels() -> tuple[Any, Any] | None:
    """The compiled :func:`_log_column` and :func:`_llf_slope`, or None without Numba."""
    log_column = compiled(_log_column, lean=True)
    llf_slope = compiled(_llf_slope, announce="the Box-Cox MLE of long columns", lean=True)
    if log_column is None or llf_slope is None:  # pragma: no cover - numba is a dependency
        return None
    return log_column, llf_slope


def _log_column(column, out):  # pragma: no cover - compiled by Numba
    """``out[:] = log(column)`` and the least and greatest of them."""
    low = math.inf
    high = -math.inf
    for i in range(column.shape[0]):
        value = math.log(column[i])
        out[i] = value
        low = min(low, value)
        high = max(high, value)
    return low, high


# Coefficients 1 / (m! (m + k + 1)) of the series of y = ∫₀^d e^(λs) ds and of its first two
# derivatives in λ, in powers of t = λd (k = 0, 1, 2), for |t| below _SERIES where the closed
# forms would lose digits to cancellation; 13 terms leave < 1e-21 of the first.
_SERIES = 0.125
_SERIES_TERMS = 13
_SERIES_COEFFICIENTS = np.array(
    [[1.0 / (math.factorial(m) * (m + k + 1)) for m in range(_SERIES_TERMS)] for k in range(3)]
)


def _llf_slope(logs, stride, lam, shift, buffer, out):  # pragma: no cover - compiled by Numba
    """The first two derivatives in λ of the Box-Cox log-likelihood per value, over every
    ``stride``-th of ``logs``, in one pass: ``out[0] = g′(λ)``, ``out[1] = g″(λ)`` where
    g(λ) = (λ - 1)·mean(log x) - ½·log var(y) and y = (x^λ - 1) / λ.

    With d = log x - shift and y = (e^(λd) - 1) / λ = ∫₀^d e^(λs) ds, the shift moves g by a
    term linear in λ that mean(d) in place of mean(log x) takes out. y′ = ∫₀^d s·e^(λs) ds and
    y″ = ∫₀^d s²·e^(λs) ds come from closed forms, or series near λd = 0. Then
    g′ = mean(d) - cov(y, y′) / var(y) and g″ = 2·(cov(y, y′) / var(y))² - (var(y′) +
    cov(y, y″)) / var(y). The means and co-moments are taken two-pass within blocks of values
    held in ``buffer`` and merged block by block (Chan et al.), in one fixed order and without
    fast-math (no reassociation, no fused multiply-adds): the same floats on every run and
    thread, the C library's exp aside."""
    n = logs.shape[0]
    size = buffer.shape[1]
    coefficients = _SERIES_COEFFICIENTS
    terms = coefficients.shape[1]
    inverse = 1.0 / lam if lam != 0.0 else 0.0
    count = 0.0
    mean_d = 0.0
    mean_y = 0.0
    mean_1 = 0.0
    mean_2 = 0.0
    c_yy = 0.0
    c_y1 = 0.0
    c_11 = 0.0
    c_y2 = 0.0
    i = 0
    while i < n:
        filled = 0
        while filled < size and i < n:
            d = logs[i] - shift
            t = lam * d
            if t > -_SERIES:
                p0 = coefficients[0, terms - 1]
                p1 = coefficients[1, terms - 1]
                p2 = coefficients[2, terms - 1]
                for m in range(terms - 2, -1, -1):
                    p0 = p0 * t + coefficients[0, m]
                    p1 = p1 * t + coefficients[1, m]
                    p2 = p2 * t + coefficients[2, m]
                y = d * p0
                y1 = d * d * p1
                y2 = d * d * d * p2
            else:
                e = math.exp(t)  # e - 1 loses at most 3 bits here, and exp is faster than expm1
                y = (e - 1.0) * inverse
                y1 = (d * e - y) * inverse
                y2 = (d * d * e - 2.0 * y1) * inverse
            buffer[0, filled] = d
            buffer[1, filled] = y
            buffer[2, filled] = y1
            buffer[3, filled] = y2
            filled += 1
            i += stride
        s_d = 0.0
        s_y = 0.0
        s_1 = 0.0
        s_2 = 0.0
        for k in range(filled):
            s_d += buffer[0, k]
            s_y += buffer[1, k]
            s_1 += buffer[2, k]
            s_2 += buffer[3, k]
        block_d = s_d / filled
        block_y = s_y / filled
        block_1 = s_1 / filled
        block_2 = s_2 / filled
        b_yy = 0.0
        b_y1 = 0.0
        b_11 = 0.0
        b_y2 = 0.0
        for k in range(filled):
            dy = buffer[1, k] - block_y
            d1 = buffer[2, k] - block_1
            b_yy += dy * dy
            b_y1 += dy * d1
            b_11 += d1 * d1
            b_y2 += dy * (buffer[3, k] - block_2)
        total = count + filled
        weight = count * filled / total
        share = filled / total
        dy = block_y - mean_y
        d1 = block_1 - mean_1
        d2 = block_2 - mean_2
        c_yy += b_yy + dy * dy * weight
        c_y1 += b_y1 + dy * d1 * weight
        c_11 += b_11 + d1 * d1 * weight
        c_y2 += b_y2 + dy * d2 * weight
        mean_d += (block_d - mean_d) * share
        mean_y += dy * share
        mean_1 += d1 * share
        mean_2 += d2 * share
        count = total
    ratio = c_y1 / c_yy
    out[0] = mean_d - ratio
    out[1] = 2.0 * ratio * ratio - (c_11 + c_y2) / c_yy


def fit_scale(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and scale of each column as ``StandardScaler`` computes them (constant column → scale 1)."""
    mean = B.mean(axis=0)
    var = B.var(axis=0)
    scale = np.where(_constant(B.shape[0], mean, var), 1.0, np.sqrt(var))
    return mean, scale


def _constant(n: int, mean: Any, var: Any) -> Any:
    """scikit-learn's rule (_is_constant_feature): a variance of n values within the error bound
    of the two-pass algorithm counts as zero, and such a column is only centred."""
    return var <= n * _EPS * var + (n * mean * _EPS) ** 2


def fit_minmax(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimum and range of each column as ``MinMaxScaler`` scales by them (a constant column, or
    one whose range overflows, gets range 1: it is only shifted)."""
    low = B.min(axis=0)
    with np.errstate(over="ignore"):
        span = B.max(axis=0) - low
    return low, np.where(np.isfinite(span) & (span > 0), span, 1.0)


def minmax(B: np.ndarray, low: np.ndarray, span: np.ndarray) -> np.ndarray:
    """(B - low) / span, saturated so that finite input never becomes inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = (B - low) / span
    return np.nan_to_num(
        out, nan=0.0, posinf=np.finfo(np.float64).max, neginf=-np.finfo(np.float64).max
    )


def mean_var(values: np.ndarray) -> tuple[float, float]:
    """``(np.mean(values), np.var(values))`` of a 1-D float64 array, bit for bit: the same two
    sums NumPy takes, without its reductions' argument handling, which costs more than the sums on
    a few hundred values (naive Bayes's scorer takes them for every class of every column)."""
    mean, _, var = _moments(values)
    return float(mean), float(var)


def mean_var_rows(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`mean_var` of each row of B, as two arrays (one pass for the mean, where
    ``np.mean`` and ``np.var`` would each take it)."""
    mean, _, var = _moments(B)
    return mean, var


def _moments(values: np.ndarray) -> tuple[Any, np.ndarray, Any]:
    """The mean, the centred values and the variance along the last axis (of a 1-D array, or of
    each row), in ``np.mean``'s and ``np.var``'s own arithmetic (the same floats)."""
    n = values.shape[-1]
    mean = np.add.reduce(values, axis=-1) / n
    centred = values - mean[..., None]
    return mean, centred, np.add.reduce(centred * centred, axis=-1) / n


def scale_column(column: np.ndarray) -> np.ndarray:
    """One column standard-scaled: ``standardise(column, *fit_scale(column[:, None]))`` bit for bit,
    without the 2-D reductions' overhead (the objective re-scales one column per trial)."""
    n = column.shape[0]
    with np.errstate(over="ignore", invalid="ignore"):
        mean, centred, var = _moments(column)
        constant = _constant(n, mean, var)
        scale = 1.0 if constant else np.sqrt(var)
        out = centred if constant else centred / scale
    if np.isfinite(out).all():
        return out
    return standardise(column, mean, scale)


def scale_rows(B: np.ndarray) -> np.ndarray:
    """:func:`scale_column` of each row of B, the same floats: the sums run along each row as
    they run along a column alone."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean, centred, var = _moments(B)
        scale = np.where(_constant(B.shape[1], mean, var), 1.0, np.sqrt(var))
        out = centred / scale[:, None]  # ÷ 1.0 is exact
    for r in np.flatnonzero(~np.isfinite(out).all(axis=1)):
        out[r] = standardise(B[r], mean[r], scale[r])  # saturated as scale_column saturates
    return out


def standardise(B: np.ndarray, mean: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """(B - mean) / scale, saturated so that finite input never becomes inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = (B - mean) / scale
    return np.nan_to_num(
        out, nan=0.0, posinf=np.finfo(np.float64).max, neginf=-np.finfo(np.float64).max
    )


class RangedPair(NamedTuple):
    """A fold's Λ-free first step of Box-Cox (:func:`range_pair`)."""

    data_min: np.ndarray
    data_range: np.ndarray
    train: np.ndarray
    test: np.ndarray


def range_pair(
    train: np.ndarray, test: np.ndarray, *, extrapolation: str = "extrapolate"
) -> RangedPair:
    """``train``'s per-column minimum and range, and ``train`` and ``test`` scaled into Z by them:
    what :func:`fit_columns` computes before any λ, the same numbers."""
    with np.errstate(all="ignore"):
        data_min, data_range = fit_range(train)
        return RangedPair(
            data_min,
            data_range,
            range_standardise(train, data_min, data_range, extrapolation),
            range_standardise(test, data_min, data_range, extrapolation),
        )


class PowerSettings(NamedTuple):
    """The settings of a transform that :func:`fit_columns` reads (a ``BoxCoxTransformer`` has
    them too)."""

    method: str = "box-cox"
    extrapolation: str = "extrapolate"
    range_scale: bool = False
    standardize: bool = True


def fitted_pair(
    lambdas: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    *,
    method: str = "box-cox",
    extrapolation: str = "extrapolate",
    range_scale: bool = False,
    ranged: RangedPair | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``BoxCoxTransformer(lambdas, …).fit(train)``'s transform of ``train`` and of ``test``, the
    same numbers, without the estimator's validation and warnings: for callers that fit it many
    times on float64 data they checked once (the guarded default's folds, where scikit-learn's
    checks cost more than the transform). ``ranged`` is :func:`range_pair` of the same
    ``train`` and ``test`` (Box-Cox only), for a caller fitting several Λ on one fold."""
    lambdas = np.asarray(lambdas, dtype=np.float64)
    if lambdas.shape != (train.shape[1],) or not np.all(np.isfinite(lambdas)):
        raise ValueError(f"lambdas must be {train.shape[1]} finite numbers, got {lambdas!r}")
    settings = PowerSettings(method, extrapolation, range_scale)
    fitted = fit_columns(
        train, lambdas, settings, column_names(train.shape[1]), ranged=ranged, test=test
    )
    return fitted.train, fitted.test


class FittedColumns(NamedTuple):
    """What :func:`fit_columns` fitted, and its transform of the data (and of ``test``)."""

    data_min: np.ndarray | None
    data_range: np.ndarray | None
    lambdas: np.ndarray
    shift: np.ndarray | None  # the power step's minimum (range scaling) or mean
    scale: np.ndarray | None  # ... its range or standard deviation
    train: np.ndarray | None  # None when the fit was asked for no transform
    test: np.ndarray | None


def fit_columns(
    X: np.ndarray,
    lambdas: np.ndarray | None,
    settings: Any,
    names: list[str],
    *,
    warn_stacklevel: int | None = None,
    ranged: RangedPair | None = None,
    test: np.ndarray | None = None,
    transform: bool = True,
) -> FittedColumns:
    """A transformer's fit on checked float64 data, all of it here: Box-Cox's range (or
    ``ranged``'s, fitted already), λ (``None``: the MLE), the power step and its scaling, and
    their transform of X (without ``transform``: None) and of ``test``. ``settings`` has the
    transformer's ``method``, ``extrapolation``, ``range_scale`` and ``standardize``. With
    ``warn_stacklevel`` (counted from the caller), constant and crowded columns are warned about.

    Beyond :data:`EXACT_MLE_ROWS` rows the fit goes column by column (:func:`_fit_by_column`),
    holding no matrix beyond the transforms it returns; up to it, these are the floats of the
    paper presets' recorded searches."""
    if X.shape[0] > EXACT_MLE_ROWS:
        return _fit_by_column(
            X, lambdas, settings, names, warn_stacklevel, ranged, test, transform
        )
    method = settings.method
    if warn_stacklevel is not None:
        warn_constant_columns(X, names, stacklevel=warn_stacklevel + 1)
    data_min = data_range = None
    # Overflow is expected and saturated by the numerics (the output stays finite); don't warn.
    with np.errstate(all="ignore"):
        if ranged is not None:
            data_min, data_range, values, test_values = ranged
        elif method == "box-cox":
            if warn_stacklevel is not None:
                warn_crowded_columns(X, names, stacklevel=warn_stacklevel + 1)
            data_min, data_range = fit_range(X, names)
            values = range_standardise(X, data_min, data_range, settings.extrapolation)
            test_values = (
                None
                if test is None
                else range_standardise(test, data_min, data_range, settings.extrapolation)
            )
        else:
            values, test_values = X, test
        if lambdas is None:
            lambdas = mle_lambdas(values, method)
        B = power_columns(values, lambdas, method)
        shift = scale = None
        if settings.range_scale:
            shift, scale = fit_minmax(B)
        elif settings.standardize:
            shift, scale = fit_scale(B)
        out = scaled_power(B, settings, shift, scale) if transform else None
        if test_values is not None:
            test_values = scaled_power(
                power_columns(test_values, lambdas, method), settings, shift, scale
            )
    return FittedColumns(data_min, data_range, lambdas, shift, scale, out, test_values)


def _fit_by_column(
    X: np.ndarray,
    lambdas: np.ndarray | None,
    settings: Any,
    names: list[str],
    warn_stacklevel: int | None,
    ranged: RangedPair | None,
    test: np.ndarray | None,
    transform: bool,
) -> FittedColumns:
    """:func:`fit_columns` on many rows: each column's Z, λ, power step and its scaling in turn,
    then the transforms a block of rows at a time (:func:`transform_columns`; with ``ranged``,
    the same floats as its Z would give).

    Passes over X: one for the constant columns, two for the range (two more and a 100,000-row
    sample for the crowded ones), and one column at a time for everything else. A column's
    mean and variance are summed along it (pairwise), to rounding what all rows at once give."""
    method = settings.method
    if warn_stacklevel is not None:
        warn_constant_columns(X, names, stacklevel=warn_stacklevel + 1)
    p = X.shape[1]
    data_min = data_range = None
    fitted = np.array(lambdas, dtype=np.float64) if lambdas is not None else np.ones(p)
    shift = scale = None
    if settings.range_scale or settings.standardize:
        shift, scale = np.empty(p), np.empty(p)
    # One Z and one power step for every column in turn: arrays of 80 MB at 10M rows are mapped
    # afresh by each allocation, and the kernel's page faults cost more than the arithmetic.
    Z = np.empty(X.shape[0]) if method == "box-cox" and ranged is None else None
    B = np.empty(X.shape[0]) if shift is not None else None
    with np.errstate(all="ignore"):
        if ranged is not None:
            data_min, data_range = ranged.data_min, ranged.data_range
        elif method == "box-cox":
            if warn_stacklevel is not None:
                warn_crowded_columns(X, names, stacklevel=warn_stacklevel + 1)
            data_min, data_range = fit_range(X, names)
        for j in range(p):
            values = X[:, j] if ranged is None else ranged.train[:, j]
            if Z is not None:
                values = range_standardise(
                    values, data_min[j], data_range[j], settings.extrapolation, out=Z
                )
            if lambdas is None:
                fitted[j] = _column_mle(values, method)
            if B is not None:
                power = _power_into(values, float(fitted[j]), method, B)
                if settings.range_scale:
                    shift[j], scale[j] = (v[0] for v in fit_minmax(power[:, None]))
                else:
                    shift[j], scale[j] = _mean_scale(power)
    parts = (data_min, data_range, fitted, shift, scale)
    out = transform_columns(X, settings, *parts) if transform else None
    held = None if test is None else transform_columns(test, settings, *parts)
    return FittedColumns(*parts, out, held)


def _power_into(values: np.ndarray, lam: float, method: str, out: np.ndarray) -> np.ndarray:
    """:func:`power_column` of a column, Box-Cox's written into ``out`` step by step (the same
    floats as :func:`boxcox_column`)."""
    if method != "box-cox":
        return yeojohnson_column(values, lam)
    np.log(values, out=out)
    if abs(lam) >= LAMBDA_ZERO:
        out *= lam
        np.clip(out, -MAX_EXPONENT, MAX_EXPONENT, out=out)
        np.expm1(out, out=out)
        out /= lam
    return out


def _mean_scale(column: np.ndarray) -> tuple[float, float]:
    """:func:`fit_scale` of one column, its mean and variance summed along it; ``column`` is
    overwritten (by its squared deviations)."""
    n = column.shape[0]
    mean = np.add.reduce(column) / n
    column -= mean
    column *= column
    var = np.add.reduce(column) / n
    return float(mean), 1.0 if _constant(n, mean, var) else float(np.sqrt(var))


def transform_columns(
    X: np.ndarray,
    settings: Any,
    data_min: np.ndarray | None,
    data_range: np.ndarray | None,
    lambdas: np.ndarray,
    shift: np.ndarray | None,
    scale: np.ndarray | None,
) -> np.ndarray:
    """The fitted map of checked float64 X (Box-Cox's range, the power step, its scaling), a
    block of rows at a time into one output: every step is elementwise, so these are the floats
    of all rows at once, without their full-size temporaries."""
    out = np.empty(X.shape, dtype=np.float64)
    rows = max(1, _BLOCK_ELEMENTS // max(1, X.shape[1]))
    with np.errstate(all="ignore"):
        for start in range(0, X.shape[0], rows):
            values = X[start : start + rows]
            if settings.method == "box-cox":
                values = range_standardise(values, data_min, data_range, settings.extrapolation)
            B = power_columns(values, lambdas, settings.method)
            out[start : start + rows] = scaled_power(B, settings, shift, scale)
    return out


def scaled_power(B: np.ndarray, settings: Any, shift: Any, scale: Any) -> np.ndarray:
    """The power-transformed data scaled as fitted: into [0, 1], standardised, or as it is."""
    if settings.range_scale:
        return minmax(B, shift, scale)
    if not settings.standardize:
        return B
    return standardise(B, shift, scale)
