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


class ExtremeValueWarning(UserWarning):
    """A few extreme values set a column's range, so range scaling squeezes the rest together."""


class ConstantColumnWarning(UserWarning):
    """Feature columns with a single value."""


def constant_columns(X: np.ndarray) -> np.ndarray:
    """Indices of the columns of X holding a single value."""
    if X.shape[0] == 0:
        return np.zeros(0, dtype=int)
    return np.flatnonzero(np.all(X[:1] == X, axis=0))


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
    values will do (fewer than 1 / (1 - share) rows).
    """
    n = X.shape[0]
    k = math.ceil(share * n)
    if n < 2 or k >= n:
        return np.where(np.ptp(X, axis=0) > 0, 1.0, 0.0) if n else np.zeros(X.shape[1])
    # Halved, so that the differences of finite values cannot overflow (halving is exact).
    half = np.sort(X, axis=0) * 0.5
    widths = np.min(half[k - 1 :] - half[: n - k + 1], axis=0)
    spans = half[-1] - half[0]
    return np.divide(widths, spans, out=np.zeros_like(widths), where=spans > 0)


def crowded_columns(X: np.ndarray) -> np.ndarray:
    """Indices of the columns of training data X whose range scaling into [1, 2] leaves at least
    :data:`CROWDED_SHARE` (90 %) of their values within :data:`CROWDED_WIDTH` (1 %) of the range.

    That happens when a few extreme values set the range (one 1e300 in a column of ordinary
    numbers puts every other value at Z = 1 to the last bit, and the Box-Cox λ fitted to them is
    extreme); ordinary skewed data such as exp(N(0, 1)) keeps its bulk several times wider. A
    column whose bulk is one repeated value (mostly zeros, a rare flag) is not crowded: scaling
    loses nothing there.
    """
    widths = bulk_widths(X)
    return np.flatnonzero((widths > 0) & (widths < CROWDED_WIDTH))


def warn_crowded_columns(X: np.ndarray, names: list[str], stacklevel: int = 2) -> None:
    """Warn (:class:`ExtremeValueWarning`, one line) naming the :func:`crowded_columns` of X."""
    crowded = crowded_columns(X)
    if crowded.size == 0:
        return
    widths = bulk_widths(X[:, crowded])
    listing = ", ".join(
        f"{names[j]!r} ({CROWDED_SHARE:.0%} of its values within {w:.2g} of its range)"
        for j, w in zip(crowded, widths)
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
) -> np.ndarray:
    """Map X into Z = 1 + (X - min) / range, i.e. [1, 2] on the training data (paper Algorithm 3).

    Unseen values can leave [1, 2]. ``"extrapolate"`` (the paper's behaviour) keeps them but raises
    Z below :data:`Z_FLOOR` to the floor; ``"clip"`` clamps Z into [1, 2].
    """
    with np.errstate(over="ignore", invalid="ignore"):
        Z = 1.0 + (X - data_min) / data_range
    # A finite X can still overflow here (1e308 - (-1e308)); saturate instead of producing inf.
    Z = np.nan_to_num(Z, nan=1.0, posinf=np.finfo(np.float64).max, neginf=Z_FLOOR)
    if extrapolation == "clip":
        return np.clip(Z, 1.0, 2.0)
    return np.maximum(Z, Z_FLOOR)


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
    so results are remembered per data (a few hundred recent matrices).
    """
    values = np.ascontiguousarray(values, dtype=np.float64)
    key = (method, values.shape, hashlib.blake2b(values.tobytes(), digest_size=16).digest())
    if key not in _MLE_MEMO:
        if len(_MLE_MEMO) >= 256:
            _MLE_MEMO.pop(next(iter(_MLE_MEMO)))
        _MLE_MEMO[key] = _mle_lambdas(values, method)
    return _MLE_MEMO[key].copy()


_MLE_MEMO: dict[tuple[str, tuple[int, ...], bytes], np.ndarray] = {}


def _mle_lambdas(values: np.ndarray, method: str) -> np.ndarray:
    lambdas = np.ones(values.shape[1])
    for j in range(values.shape[1]):
        col = values[:, j]
        if np.ptp(col) == 0:
            continue
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            if method == "box-cox":
                lam = boxcox_mle(col)
            else:
                lam = stats.yeojohnson_normmax(col)
        if np.isfinite(lam):
            lambdas[j] = float(lam)
    return lambdas


def boxcox_mle(column: np.ndarray) -> float:
    """``scipy.stats.boxcox_normmax(column, method="mle")`` of a positive column, bit for bit and
    ten times faster.

    scipy maximises ``boxcox_llf`` with Brent's method from the bracket (-2, 2); its array wrapper
    around the log-likelihood costs ~2 ms a call, 15–20 calls a column, most of the start-up of a
    search. Here the same optimiser evaluates the same arithmetic (the log-likelihood of Box-Cox
    with the variance taken in log space by log-sum-exp, as scipy does it) on the column's
    logarithms, taken once. Where the optimum would overflow the transformed data, scipy answers
    (it then constrains λ).
    """
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

    lam = float(optimize.brent(negative_llf, brack=(-2.0, 2.0)))
    extreme = math.log(float(np.max(column)) if lam > 0 else float(np.min(column)))
    if not abs(lam * extreme) < 650:  # scipy constrains λ so that the data stay finite
        return float(stats.boxcox_normmax(column, method="mle"))
    return lam


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
    names = [f"x{j}" for j in range(train.shape[1])]
    fitted = fit_columns(train, lambdas, settings, names, ranged=ranged, test=test)
    return fitted.train, fitted.test


class FittedColumns(NamedTuple):
    """What :func:`fit_columns` fitted, and its transform of the data (and of ``test``)."""

    data_min: np.ndarray | None
    data_range: np.ndarray | None
    lambdas: np.ndarray
    shift: np.ndarray | None  # the power step's minimum (range scaling) or mean
    scale: np.ndarray | None  # ... its range or standard deviation
    train: np.ndarray
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
) -> FittedColumns:
    """A transformer's fit on checked float64 data, all of it here: Box-Cox's range (or
    ``ranged``'s, fitted already), λ (``None``: the MLE), the power step and its scaling, and
    their transform of X and of ``test``. ``settings`` has the transformer's ``method``,
    ``extrapolation``, ``range_scale`` and ``standardize``. With ``warn_stacklevel`` (counted
    from the caller), constant and crowded columns are warned about."""
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
        out = scaled_power(B, settings, shift, scale)
        if test_values is not None:
            test_values = scaled_power(
                power_columns(test_values, lambdas, method), settings, shift, scale
            )
    return FittedColumns(data_min, data_range, lambdas, shift, scale, out, test_values)


def scaled_power(B: np.ndarray, settings: Any, shift: Any, scale: Any) -> np.ndarray:
    """The power-transformed data scaled as fitted: into [0, 1], standardised, or as it is."""
    if settings.range_scale:
        return minmax(B, shift, scale)
    if not settings.standardize:
        return B
    return standardise(B, shift, scale)
