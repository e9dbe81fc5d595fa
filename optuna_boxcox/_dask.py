"""Dask arrays and DataFrames for data bigger than memory: the one module that talks to Dask.

Everything here works block by block: a *block* is the rows of one chunk with all of their columns
(columns split over several chunks are rechunked into one), a NumPy array for a Dask Array and a
pandas DataFrame for a partition of a Dask DataFrame. A statistic is computed in one pass (one
``dask.compute``) as a small result per block, combined here; a transform is a lazy ``map_blocks``.
Only a block's results, never the data, reach this process (except :func:`take_rows` and
:func:`labels`, which compute what was asked for).

Dask is imported only when a function needs it, so the package imports without it (the optional
extra ``dask``); :func:`is_dask` looks at ``sys.modules`` and imports nothing.

:func:`fit_transformer` and :func:`transform` are :class:`~optuna_boxcox.BoxCoxTransformer`'s fit
and transform of Dask input, with the same fitted attributes and values (to rounding) as its NumPy
fit and transform of the computed data. The maximum-likelihood λ of ``lambdas="mle"`` is found
from the Box-Cox log-likelihood's sufficient statistics of each block (the row count, Σ log z and
the mean and centred sum of squares of the transformed column), all columns at once, a few λ per
column in each pass (:func:`boxcox_mle_lambdas`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
import functools
import hashlib
import inspect
import math
import sys
from typing import TYPE_CHECKING
from typing import Any
from typing import NamedTuple

import numpy as np
from scipy import special
from scipy import stats
from sklearn.base import clone
from sklearn.base import is_classifier

from optuna_boxcox._math import _numerics

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Generator
    from collections.abc import Sequence

_LOG2 = math.log(2.0)
#: Up to λ·log 2 = this, expm1(λ·log z) itself is summed: its squares stay far from overflowing.
_DIRECT = 300.0
#: λ evaluated on each side of a column's best λ in one pass of the MLE search: each pass narrows
#: the bracket (m + 1)-fold for 2m evaluations, so fewer passes over the data cost more arithmetic.
MLE_SIDE_POINTS = 3
#: The MLE search stops when its bracket is this narrow relative to max(1, |λ|), then takes the
#: vertex of the parabola through the bracket's three points (far below scipy's own tolerance).
MLE_BRACKET = 1e-4
#: scipy's default ``ymax`` of ``boxcox_normmax`` for float64 data (its ``BIG_FLOAT``).
SCIPY_YMAX = float(np.finfo(np.float64).max) / 10000
#: Passes after which a column's search gives up and keeps its best λ (it never needs them: the
#: log-likelihood of non-constant data has a finite maximum, bracketed in a few expansions).
MLE_MAX_PASSES = 60


# -- what is a Dask collection, and its blocks --------------------------------------------------


def is_dask(X: Any) -> bool:
    """Whether X is a Dask Array, DataFrame or Series (False, importing nothing, when Dask was
    never imported: then X cannot be one)."""
    array = sys.modules.get("dask.array")
    if array is not None and isinstance(X, array.Array):
        return True
    frames = sys.modules.get("dask.dataframe")
    return frames is not None and isinstance(X, (frames.DataFrame, frames.Series))


def _is_frame(X: Any) -> bool:
    frames = sys.modules.get("dask.dataframe")
    return frames is not None and isinstance(X, (frames.DataFrame, frames.Series))


def _blocks(X: Any) -> list:
    """One ``Delayed`` per row block of X, in row order, each with all of X's columns."""
    if _is_frame(X):
        return list(X.to_delayed())
    return list(_single_column_chunk(X).to_delayed().ravel())


def _single_column_chunk(X: Any) -> Any:
    if X.ndim == 2 and X.numblocks[1] > 1:
        return X.rechunk({1: -1})  # a row block's columns are merged one row block at a time
    return X


def _per_block(func: Callable, X: Any, *args: Any) -> tuple:
    """``func(block, *args)`` of every block of X, computed in one pass (only these come back)."""
    import dask

    return dask.compute(*[dask.delayed(func)(block, *args) for block in _blocks(X)])


def _block_lengths(X: Any, blocks: list | None = None) -> np.ndarray:
    """The rows of each block: an array's chunks when known, else counted in a pass."""
    if _is_frame(X):
        return np.asarray(X.map_partitions(len).compute(), dtype=np.intp)
    if not np.isnan(X.chunks[0]).any():
        return np.asarray(X.chunks[0], dtype=np.intp)
    import dask

    blocks = _blocks(X) if blocks is None else blocks
    counted = dask.compute(*[dask.delayed(len)(block) for block in blocks])
    return np.asarray(counted, dtype=np.intp)


def _float_block(block: Any) -> np.ndarray:
    values = np.asarray(block, dtype=np.float64)
    return values if values.ndim == 2 else values.reshape(len(values), -1)


# -- one-pass statistics ------------------------------------------------------------------------


class _Range(NamedTuple):
    """Row count, per-column minimum and maximum, and whether every value is finite."""

    n: int
    low: np.ndarray
    high: np.ndarray
    finite: bool


def _block_range(block: Any, func: Callable | None = None) -> _Range:
    values = _float_block(block if func is None else func(block))
    if values.shape[0] == 0:
        empty = np.full(values.shape[1], np.nan)
        return _Range(0, empty, empty, True)
    return _Range(
        values.shape[0],
        values.min(axis=0),
        values.max(axis=0),
        bool(np.isfinite(values).all()),
    )


def _range_pass(X: Any, func: Callable | None = None) -> _Range:
    """:class:`_Range` of X (of ``func`` of each block), in one pass."""
    parts = [part for part in _per_block(_block_range, X, func) if part.n]
    if not parts:
        empty = np.full(X.shape[1], np.nan)
        return _Range(0, empty, empty, True)
    return _Range(
        sum(part.n for part in parts),
        np.min([part.low for part in parts], axis=0),
        np.max([part.high for part in parts], axis=0),
        all(part.finite for part in parts),
    )


def column_range(X: Any, names: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-column minimum and range of X in one pass: :func:`~._numerics.fit_range` of the computed
    X (range 1 for a constant column; a range overflowing float64 raises, naming the column by
    ``names`` or by position), as NumPy arrays.

    Raises:
        ValueError: X holds NaN or infinity, or a column's range overflows.
    """
    found = _range_pass(X)
    _check_finite(found)
    # fit_range of the two rows (minimum, maximum) is fit_range of X: same minimum, same maximum.
    return _numerics.fit_range(np.stack([found.low, found.high]), names)


def _block_summary(block: Any) -> tuple[_Range, bytes]:
    """A block's :class:`_Range` and the SHA-256 of its float64 values in C order."""
    values = np.ascontiguousarray(_float_block(block))
    return _block_range(values), hashlib.sha256(values.data).digest()


def range_and_fingerprint(
    X: Any, y: np.ndarray, names: list[str] | None = None
) -> tuple[np.ndarray, np.ndarray, str]:
    """:func:`column_range` of X and a fingerprint of X and its labels ``y`` (in memory), in one
    pass: the SHA-256 of X's shape, each block's digest in row order and the labels, so that an
    edit of any value, label or row gives another (a Dask fingerprint: it differs from the
    fingerprint of the same numbers as a NumPy array, which hashes their bytes whole).

    Raises:
        ValueError: X holds NaN or infinity, or a column's range overflows.
    """
    parts = _per_block(_block_summary, X)
    ranges = [part for part, _ in parts if part.n]
    if not ranges:
        raise ValueError("X has no rows: a classifier needs at least two")
    found = _Range(
        sum(part.n for part in ranges),
        np.min([part.low for part in ranges], axis=0),
        np.max([part.high for part in ranges], axis=0),
        all(part.finite for part in ranges),
    )
    _check_finite(found)
    if found.n != len(y):
        raise ValueError(f"X has {found.n} rows but y has {len(y)} labels")
    digest = hashlib.sha256(f"dask {found.n} x {len(found.low)}".encode())
    for _, block_digest in parts:
        digest.update(block_digest)
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    digest.update("\x1f".join(map(repr, classes.tolist())).encode())
    digest.update(np.asarray(codes, dtype=np.int64).tobytes())
    low, span = _numerics.fit_range(np.stack([found.low, found.high]), names)
    return low, span, digest.hexdigest()


def is_frame(X: Any) -> bool:
    """Whether X is a Dask DataFrame or Series."""
    return _is_frame(X)


def column_names(X: Any) -> list[str]:
    """A Dask DataFrame's column names, or ``x0, x1, …`` for a 2-D Dask array.

    Raises:
        ValueError: X is not 2-D.
    """
    if _is_frame(X):
        return [str(c) for c in X.columns]
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (rows × features), got {X.ndim} dimension(s)")
    return [f"x{j}" for j in range(X.shape[1])]


def _check_finite(found: _Range) -> None:
    if not found.finite:
        raise ValueError("Input X contains NaN or infinity.")


class _Moments(NamedTuple):
    """Row count, mean and centred sum of squares (M2) of each column: variance = M2 / n."""

    n: int
    mean: np.ndarray
    m2: np.ndarray


def _block_moments(block: Any, func: Callable) -> _Moments:
    values = _float_block(func(block))
    if values.shape[0] == 0:
        return _Moments(0, np.zeros(values.shape[1]), np.zeros(values.shape[1]))
    with np.errstate(over="ignore", invalid="ignore"):
        mean = values.mean(axis=0)
        centred = values - mean
        return _Moments(values.shape[0], mean, np.einsum("ij,ij->j", centred, centred))


def _combine(a: _Moments, b: _Moments) -> _Moments:
    """The moments of two blocks together (Chan, Golub & LeVeque's pairwise update)."""
    if a.n == 0 or b.n == 0:
        return b if a.n == 0 else a
    n = a.n + b.n
    delta = b.mean - a.mean
    with np.errstate(over="ignore", invalid="ignore"):  # inf, as NumPy's variance would be
        return _Moments(n, a.mean + delta * (b.n / n), a.m2 + b.m2 + delta**2 * (a.n * b.n / n))


def _combine_all(parts: Sequence[_Moments]) -> _Moments:
    """Pairwise, as a tree: the rounding error grows with log(blocks), not with their number."""
    if len(parts) <= 1:
        return parts[0] if parts else _Moments(0, np.zeros(0), np.zeros(0))
    half = len(parts) // 2
    return _combine(_combine_all(parts[:half]), _combine_all(parts[half:]))


def _moment_pass(X: Any, func: Callable) -> _Moments:
    return _combine_all(_per_block(_block_moments, X, func))


def moments(X: Any, func: Callable) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and (population) variance of ``func(block)`` over all rows of X, in one
    pass, each block's moments combined with the others' stably (Chan et al.'s parallel update)."""
    found = _moment_pass(X, func)
    if found.n == 0:
        raise ValueError("X has no rows: its mean and variance are undefined")
    return found.mean, found.m2 / found.n


# -- into memory ----------------------------------------------------------------------------------


def labels(y: Any) -> np.ndarray:
    """The labels y (a Dask Series, one-column DataFrame or array, or already in memory) computed
    into a 1-D NumPy array: labels are one value a row, small beside the features."""
    values = np.asarray(y.compute() if is_dask(y) else y)
    if values.ndim == 2 and values.shape[1] == 1:
        return values.ravel()
    return values


def _take(block: Any, local: np.ndarray) -> np.ndarray:
    return np.asarray(block)[local]


def take_rows(X: Any, rows: Any) -> np.ndarray:
    """The rows of X at the sorted indices ``rows``, computed into a NumPy array: only the blocks
    holding them are computed, each returning its rows (a DataFrame's partitions, whose lengths Dask
    does not know, are counted in a first pass)."""
    import dask

    rows = np.asarray(rows, dtype=np.intp)
    if rows.ndim != 1 or np.any(np.diff(rows) < 0):
        raise ValueError("rows must be a 1-D array of row indices in increasing order")
    blocks = _blocks(X)
    bounds = np.concatenate([[0], np.cumsum(_block_lengths(X, blocks))])
    if rows.size and (rows[0] < 0 or rows[-1] >= bounds[-1]):
        raise IndexError(f"row indices must lie in [0, {bounds[-1]}): X has {bounds[-1]} rows")
    which = np.searchsorted(bounds, rows, side="right") - 1
    wanted = np.unique(which)
    parts = dask.compute(
        *[dask.delayed(_take)(blocks[b], rows[which == b] - bounds[b]) for b in wanted]
    )
    if parts:
        return np.concatenate(parts)
    return np.empty((0, *X.shape[1:]))


# -- lazy maps ------------------------------------------------------------------------------------


def _apply(block: Any, func: Callable) -> np.ndarray:
    return np.asarray(func(block), dtype=np.float64)


def _apply_to_frame(part: Any, func: Callable, columns: list[str]) -> Any:
    import pandas as pd

    return pd.DataFrame(
        np.asarray(func(part), dtype=np.float64), index=part.index, columns=columns
    )


def _predict_frame(part: Any, func: Callable) -> Any:
    import pandas as pd

    return pd.Series(np.asarray(func(part)), index=part.index)


def transform_blocks(
    func: Callable, X: Any, n_out: int, columns: Sequence[str] | None = None
) -> Any:
    """``func`` (a block of rows → an array of shape (rows, n_out)) applied lazily block by block.

    A Dask Array gives a float64 Dask Array with X's row chunks and the columns in one chunk
    (X's columns are rechunked into one first if they are split). A Dask DataFrame gives a Dask
    DataFrame with X's partitions and index and the columns ``columns`` (``x0``, ``x1``, … when
    not given); ``func`` then receives each partition as a pandas DataFrame.
    """
    if _is_frame(X):
        import pandas as pd

        names = [f"x{j}" for j in range(n_out)] if columns is None else [str(c) for c in columns]
        meta = pd.DataFrame({name: pd.Series(dtype=np.float64) for name in names})
        return X.map_partitions(_apply_to_frame, func, names, meta=meta)
    X = _single_column_chunk(X)
    return X.map_blocks(
        functools.partial(_apply, func=func),
        dtype=np.float64,
        chunks=(X.chunks[0], (n_out,)),
        meta=np.empty((0, 0), dtype=np.float64),
    )


def predict_blocks(func: Callable, X: Any, dtype: Any = np.float64) -> Any:
    """``func`` (a block of rows → one prediction a row, e.g. a fitted classifier's ``predict``)
    applied lazily block by block: a 1-D Dask Array of ``dtype`` (Dask cannot ask ``func`` for it
    without calling it; ``classifier.classes_.dtype`` is a classifier's). A DataFrame's partitions
    reach ``func`` as pandas DataFrames."""
    if _is_frame(X):
        import pandas as pd

        meta = pd.Series(dtype=dtype)
        return X.map_partitions(_predict_frame, func, meta=meta).to_dask_array()
    X = _single_column_chunk(X)
    return X.map_blocks(
        functools.partial(_apply_predict, func=func),
        drop_axis=1,
        dtype=dtype,
        meta=np.empty((0,), dtype=dtype),
    )


def _apply_predict(block: Any, func: Callable) -> np.ndarray:
    return np.asarray(func(block)).ravel()


# -- fitting an estimator block by block ------------------------------------------------------


def _aligned_blocks(X: Any, y: Any) -> list[tuple[Any, Any]]:
    """(X block, y block) pairs holding the same rows; y may be in memory."""
    x_blocks = _blocks(X)
    if is_dask(y) and _is_frame(X) and _is_frame(y) and X.npartitions == y.npartitions:
        return list(zip(x_blocks, _blocks(y)))  # their lengths are compared as they arrive
    lengths = _block_lengths(X, x_blocks)
    if not is_dask(y):
        y = np.asarray(y)
        if len(y) != lengths.sum():
            raise ValueError(f"X has {lengths.sum()} rows but y has {len(y)} labels")
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        return [(block, y[a:b]) for block, a, b in zip(x_blocks, bounds[:-1], bounds[1:])]
    if _is_frame(y):
        y = y.to_dask_array(lengths=True)
    elif np.isnan(y.chunks[0]).any():
        y = y.compute_chunk_sizes()
    if y.shape[0] != lengths.sum():
        raise ValueError(f"X has {lengths.sum()} rows but y has {y.shape[0]} labels")
    if y.chunks[0] != tuple(lengths):
        y = y.rechunk({0: tuple(int(n) for n in lengths)})
    return list(zip(x_blocks, _blocks(y)))


def partial_fit_blocks(
    estimator: Any, func: Callable | None, X: Any, y: Any, classes: Any = None
) -> Any:
    """Fit ``estimator`` on X and y block by block: ``estimator.partial_fit(func(X_block),
    y_block, classes=classes)`` for each block in row order, one block computed at a time (the next
    one is computed while the estimator learns from the current one, so two are in memory at most).

    ``func`` maps a block of X (``None``: the block itself), e.g. a fitted transformer's
    ``transform``. A classifier's ``classes`` default to the labels found in y (one pass over y).
    Returns the estimator.

    Raises:
        TypeError: The estimator has no ``partial_fit``.
    """
    if not hasattr(estimator, "partial_fit"):
        raise TypeError(
            f"{type(estimator).__name__} has no partial_fit, so it cannot be fitted block by "
            "block: use an estimator that has one, such as SGDClassifier(loss='log_loss') (a "
            "logistic regression) or GaussianNB, or pass a sample that fits in memory"
        )
    import dask

    keywords = {}
    if is_classifier(estimator):
        keywords["classes"] = np.unique(labels(y)) if classes is None else classes
    elif classes is not None:
        keywords["classes"] = classes
    pairs = _aligned_blocks(X, y)
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(dask.compute, *pairs[0]) if pairs else None
        for i in range(len(pairs)):
            x_block, y_block = pending.result()
            if i + 1 < len(pairs):
                pending = pool.submit(dask.compute, *pairs[i + 1])
            y_block = np.asarray(y_block)
            y_block = y_block.ravel() if y_block.ndim == 2 else y_block
            if len(x_block) != len(y_block):
                raise ValueError(
                    f"block {i} of X has {len(x_block)} rows but y's has {len(y_block)}: X and y "
                    "must be partitioned alike"
                )
            if len(x_block):
                features = x_block if func is None else func(x_block)
                estimator.partial_fit(features, y_block, **keywords)
    return estimator


# -- BoxCoxTransformer on Dask ------------------------------------------------------------------


class _FittedMap(NamedTuple):
    """What a fitted transformer's map of a block needs, copied so that a lazy result keeps the
    fit it was made with (a later refit of the transformer does not change it)."""

    settings: _numerics.PowerSettings
    data_min: np.ndarray | None
    data_range: np.ndarray | None
    lambdas: np.ndarray
    shift: np.ndarray | None
    scale: np.ndarray | None


def _map_block(fitted: _FittedMap, block: Any) -> np.ndarray:
    """The transformer's map of one block, the NumPy transform's steps (of ``_math._numerics``):
    Z (Box-Cox), the power step, the fitted scaling."""
    values = _float_block(block)
    if not np.isfinite(values).all():
        raise ValueError("Input X contains NaN or infinity.")
    settings = fitted.settings
    with np.errstate(all="ignore"):
        if settings.method == "box-cox":
            values = _numerics.range_standardise(
                values, fitted.data_min, fitted.data_range, settings.extrapolation
            )
        power = _numerics.power_columns(values, fitted.lambdas, settings.method)
        return _numerics.scaled_power(power, settings, fitted.shift, fitted.scale)


def _check_input(transformer: Any, X: Any) -> None:
    """Refuse what the NumPy path's validation refuses before computing anything."""
    name = type(transformer).__name__
    if X.ndim != 2:  # a Dask Series (1-D) too
        raise ValueError(
            f"{name} expects a 2-D Dask Array or a Dask DataFrame, got {X.ndim}-D input"
        )
    if _is_frame(X):
        import pandas as pd

        bad = [
            repr(str(column))
            for column, dtype in X.dtypes.items()
            if not pd.api.types.is_numeric_dtype(dtype)
        ]
    else:
        bad = [] if X.dtype.kind in "biuf" else [f"of dtype {X.dtype}"]
    if bad:
        raise ValueError(
            f"non-numeric feature column(s) {', '.join(bad)} in X: every feature must be a number "
            "(encode categorical columns as numbers first)"
        )
    if X.shape[1] == 0:
        raise ValueError(f"X has 0 feature(s): {name} needs at least one feature column")


def _stand_in(X: Any) -> Any:
    """Two rows with X's columns (0 then 1: no column is constant or crowded)."""
    rows = np.repeat(np.array([[0.0], [1.0]]), X.shape[1], axis=1)
    if not _is_frame(X):
        return rows
    import pandas as pd

    return pd.DataFrame(rows, columns=X.columns)


def _fit_features(transformer: Any, X: Any) -> np.ndarray | None:
    """Set ``n_features_in_`` and ``feature_names_in_`` as the NumPy fit sets them, and return the
    given λ resolved to column order (``None`` for ``"mle"``). The transformer's own NumPy fit, of a
    two-row stand-in with X's columns, resolves and checks them, with the same messages."""
    mle = isinstance(transformer.lambdas, str)
    probe = clone(transformer)
    if mle:
        probe.set_params(lambdas=np.ones(X.shape[1]))
    probe.fit(_stand_in(X))
    transformer.n_features_in_ = probe.n_features_in_
    if hasattr(probe, "feature_names_in_"):
        transformer.feature_names_in_ = probe.feature_names_in_
    elif hasattr(transformer, "feature_names_in_"):
        del transformer.feature_names_in_
    return None if mle else probe.lambdas_


def _feature_names(transformer: Any) -> list[str]:
    if hasattr(transformer, "feature_names_in_"):
        return [str(name) for name in transformer.feature_names_in_]
    return [f"x{j}" for j in range(transformer.n_features_in_)]


def fit_transformer(transformer: Any, X: Any, *, warn_stacklevel: int = 4) -> Any:
    """Fit a ``BoxCoxTransformer`` on the Dask Array or DataFrame X and return X transformed,
    lazily (:func:`transform`): the fitted attributes of its NumPy fit of the computed X, to
    rounding (the λ of ``"mle"`` to scipy's tolerance, see :func:`boxcox_mle_lambdas`).

    Passes over X: one for the range (and the row count and finiteness), those of the MLE, and one
    for the mean and variance (or minimum and maximum) of the power-transformed columns. Constant
    columns are warned about (``warn_stacklevel`` frames up: the user's line when called from the
    transformer's ``_fit``); crowded columns are not looked for (that takes a sort of each column).

    Raises:
        ValueError: What the NumPy fit raises (non-numeric, NaN, no rows, overflowing range, bad λ).
        NotImplementedError: ``lambdas="mle"`` with ``method="yeo-johnson"``.
    """
    _check_input(transformer, X)
    given = _fit_features(transformer, X)
    method = transformer.method
    if given is None and method != "box-cox":
        raise NotImplementedError(
            "lambdas='mle' with method='yeo-johnson' is not available for Dask input: give the λ, "
            "or fit on a sample that fits in memory"
        )
    names = _feature_names(transformer)
    found = _range_pass(X)
    if found.n == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape=(0, {X.shape[1]})) while a minimum of 1 is "
            f"required by {type(transformer).__name__}."
        )
    _check_finite(found)
    bounds = np.stack([found.low, found.high])
    _numerics.warn_constant_columns(bounds, names, stacklevel=warn_stacklevel + 1)
    data_min = data_range = None
    if method == "box-cox":
        data_min, data_range = _numerics.fit_range(bounds, names)
    lambdas = given
    if lambdas is None:
        constant = found.low == found.high
        lambdas = boxcox_mle_lambdas(X, data_min, data_range, constant)
    unscaled = _numerics.PowerSettings(method, transformer.extrapolation, False, False)
    power = functools.partial(
        _map_block, _FittedMap(unscaled, data_min, data_range, lambdas, None, None)
    )
    shift = scale = None
    if transformer.range_scale:
        spread = _range_pass(X, power)
        shift, scale = _numerics.fit_minmax(np.stack([spread.low, spread.high]))
    elif transformer.standardize:
        spread = _moment_pass(X, power)
        eps = np.finfo(np.float64).eps
        with np.errstate(over="ignore", invalid="ignore"):
            var = spread.m2 / spread.n
            # _numerics.fit_scale's rule (scikit-learn's): a variance within the two-pass
            # algorithm's error bound is zero, and such a column is only centred.
            constant = var <= spread.n * eps * var + (spread.n * spread.mean * eps) ** 2
            shift, scale = spread.mean, np.where(constant, 1.0, np.sqrt(var))
    # The attributes _math._transform's _fit_arrays sets, from the same quantities.
    if method == "box-cox":
        transformer.data_min_, transformer.data_range_ = data_min, data_range
    transformer.lambdas_ = lambdas
    if transformer.range_scale:
        transformer.power_min_, transformer.power_range_ = shift, scale
    elif transformer.standardize:
        transformer.mean_, transformer.scale_ = shift, scale
    return transform(transformer, X)


def transform(transformer: Any, X: Any) -> Any:
    """A fitted ``BoxCoxTransformer``'s transform of the Dask Array or DataFrame X, lazily: a Dask
    Array (float64, X's row chunks, the columns in one chunk) for an Array, a Dask DataFrame with
    the transformer's ``get_feature_names_out()`` and X's partitions and index for a DataFrame.
    The values are those of its NumPy transform of the computed X; a block holding NaN or infinity
    raises ValueError when it is computed."""
    _check_input(transformer, X)
    name = type(transformer).__name__
    if X.shape[1] != transformer.n_features_in_:
        raise ValueError(
            f"X has {X.shape[1]} features, but {name} is expecting "
            f"{transformer.n_features_in_} features as input."
        )
    fitted_names = getattr(transformer, "feature_names_in_", None)
    if _is_frame(X) and fitted_names is not None and list(X.columns) != list(fitted_names):
        raise ValueError(
            f"The feature names should match those that were passed during fit: {name} was "
            f"fitted on {list(fitted_names)}, X has {list(X.columns)}."
        )
    shift = scale = None
    if transformer.range_scale:
        shift, scale = transformer.power_min_, transformer.power_range_
    elif transformer.standardize:
        shift, scale = transformer.mean_, transformer.scale_
    settings = _numerics.PowerSettings(
        transformer.method,
        transformer.extrapolation,
        transformer.range_scale,
        transformer.standardize,
    )
    box_cox = transformer.method == "box-cox"
    fitted = _FittedMap(
        settings,
        np.array(transformer.data_min_) if box_cox else None,
        np.array(transformer.data_range_) if box_cox else None,
        np.array(transformer.lambdas_),
        None if shift is None else np.array(shift),
        None if scale is None else np.array(scale),
    )
    return transform_blocks(
        functools.partial(_map_block, fitted),
        X,
        transformer.n_features_in_,
        columns=transformer.get_feature_names_out(),
    )


# -- the maximum-likelihood λ, from per-block sufficient statistics -----------------------------


def _scaled_boxcox(log_z: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Box-Cox of each column (its own λ) as ``t`` = boxcox / c(λ), a constant of λ alone
    (:func:`_log_scale`), so that no λ overflows the variance (scipy's is taken in log space).

    λ = 0: t = log z. Otherwise t = expm1(λ·log z) (c = 1/λ), within (-1, 0] for λ < 0 and
    below e^:data:`_DIRECT` for λ > 0 (z in [1, 2]); beyond, t = boxcox(z) / boxcox(2) within
    [0, 1], as exp(λ(log z - log 2))·expm1(-λ·log z) / expm1(-λ·log 2).
    """
    with np.errstate(over="ignore"):  # where λ·log z overflows, the scaled form replaces it
        t = np.expm1(log_z * lam)
    zero = np.abs(lam) < _numerics.LAMBDA_ZERO
    if zero.any():
        t[:, zero] = log_z[:, zero]
    large = lam * _LOG2 > _DIRECT
    if large.any():
        pos, lp = lam[large], log_z[:, large]
        t[:, large] = np.exp(pos * (lp - _LOG2)) * (np.expm1(-pos * lp) / np.expm1(-pos * _LOG2))
    return t


def _log_scale(lam: np.ndarray) -> np.ndarray:
    """log c(λ)² of :func:`_scaled_boxcox`: var(boxcox) = c(λ)²·var(t)."""
    out = np.zeros(lam.shape)
    with np.errstate(all="ignore"):
        direct = (np.abs(lam) >= _numerics.LAMBDA_ZERO) & ~(lam * _LOG2 > _DIRECT)
        out[direct] = -2.0 * np.log(np.abs(lam[direct]))
        large = lam * _LOG2 > _DIRECT
        pos = lam[large]
        # log boxcox(2) = λ·log 2 + log(1 - 2^-λ) - log λ
        out[large] = 2.0 * (pos * _LOG2 + np.log(-np.expm1(-pos * _LOG2)) - np.log(pos))
    return out


class _LikelihoodSums(NamedTuple):
    """One block's (or several blocks') sufficient statistics of the Box-Cox log-likelihood."""

    sum_log: np.ndarray  # Σ log z of each column
    moments: _Moments  # of t (see _scaled_boxcox), one column per (column, λ)


def _block_likelihood(
    block: Any, columns: np.ndarray, data_min: np.ndarray, data_range: np.ndarray, grid: np.ndarray
) -> _LikelihoodSums:
    """Sufficient statistics of the columns ``columns`` of one block for the λ of ``grid`` (a row
    of λ per column; NaN: none there)."""
    values = _float_block(block)
    if len(columns) < values.shape[1]:
        values = values[:, columns]
    with np.errstate(all="ignore"):
        log_z = np.log(_numerics.range_standardise(values, data_min, data_range))
    n = log_z.shape[0]
    mean = np.zeros(grid.shape)
    m2 = np.zeros(grid.shape)
    if n:
        for k in range(grid.shape[1]):
            # A column with fewer λ than the others has NaN there: any λ will do, it is not read.
            t = _scaled_boxcox(log_z, np.nan_to_num(grid[:, k], nan=1.0))
            mean[:, k] = t.mean(axis=0)
            t -= mean[:, k]
            m2[:, k] = np.einsum("ij,ij->j", t, t)
    return _LikelihoodSums(log_z.sum(axis=0), _Moments(n, mean, m2))


def _likelihoods(
    X: Any, columns: np.ndarray, data_min: np.ndarray, data_range: np.ndarray, grid: np.ndarray
) -> np.ndarray:
    """scipy's ``boxcox_llf`` of each column of ``columns`` (of X scaled into Z) at each λ of its
    row of ``grid``, in one pass."""
    parts = _per_block(_block_likelihood, X, columns, data_min[columns], data_range[columns], grid)
    sum_log = np.sum([part.sum_log for part in parts], axis=0)
    found = _combine_all([part.moments for part in parts])
    with np.errstate(divide="ignore", invalid="ignore"):
        log_var = np.log(found.m2 / found.n) + _log_scale(grid)
        llf = (grid - 1.0) * sum_log[:, None] - found.n / 2.0 * log_var
    return np.where(np.isfinite(llf), llf, -np.inf)


def _maximise() -> Generator[np.ndarray, np.ndarray, float]:
    """One column's search for its maximum-likelihood λ: yields the λ to evaluate next, is sent
    their log-likelihoods, returns the λ.

    Like scipy's ``optimize.brent(brack=(-2, 2))``, it starts in (-2, 2) and goes beyond when
    the likelihood still rises at an end; it assumes, as Brent's method does, one maximum there.
    A grid of 2m + 1 points spans (-2, 2); while the best λ is the lowest or highest seen, 2m
    points look four times as far beyond it; then 2m points split the bracket around the best
    (its two neighbours) into m + 1 parts a side, until the bracket is :data:`MLE_BRACKET`
    narrow and the parabola through its three points gives the λ.
    """
    m = MLE_SIDE_POINTS
    seen_x = np.linspace(-2.0, 2.0, 2 * m + 1)
    seen_f = yield seen_x
    for _ in range(MLE_MAX_PASSES):
        order = np.argsort(seen_x, kind="stable")
        x, f = seen_x[order], seen_f[order]
        best = int(np.argmax(f))
        span = x[-1] - x[0]
        steps = np.arange(1, 2 * m + 1) * (3.0 * span / (2 * m))
        if best == 0:
            proposal = x[0] - steps
        elif best == len(x) - 1:
            proposal = x[-1] + steps
        else:
            low, mid, high = x[best - 1 : best + 2]
            if high - low <= MLE_BRACKET * max(1.0, abs(mid)):
                return _vertex(x[best - 1 : best + 2], f[best - 1 : best + 2])
            parts = np.arange(1, m + 1) / (m + 1)
            proposal = np.concatenate([mid - (mid - low) * parts, mid + (high - mid) * parts])
        values = yield proposal
        seen_x = np.concatenate([seen_x, proposal])
        seen_f = np.concatenate([seen_f, values])
    return float(seen_x[np.argmax(seen_f)])


def _vertex(x: np.ndarray, f: np.ndarray) -> float:
    """The maximum of the parabola through three points (the middle one, the best, if it fails)."""
    a, b, c = x
    fa, fb, fc = f
    p = (b - a) ** 2 * (fb - fc) - (b - c) ** 2 * (fb - fa)
    q = (b - a) * (fb - fc) - (b - c) * (fb - fa)
    if q == 0 or not np.isfinite(p / q):
        return float(b)
    vertex = b - 0.5 * p / q
    return float(vertex) if a < vertex < c else float(b)


def boxcox_mle_lambdas(
    X: Any, data_min: np.ndarray, data_range: np.ndarray, constant: np.ndarray
) -> np.ndarray:
    """The maximum-likelihood Box-Cox λ of each column of X scaled into Z = [1, 2] by ``data_min``
    and ``data_range``: scipy's ``boxcox_normmax(z, method="mle")`` of the computed column to
    well within 1e-6 relative (scipy's Brent stops at 1.5e-8), 1 for a ``constant`` column.

    Every column is searched at once (:func:`_maximise`), each pass over X evaluating the
    log-likelihood at 2·:data:`MLE_SIDE_POINTS` λ per column from per-block sufficient
    statistics. Like scipy, a λ so large that the transformed maximum would pass ``ymax`` is
    constrained to reach it exactly.
    """
    lambdas = np.ones(len(data_min))
    searches = {int(j): _maximise() for j in np.flatnonzero(~constant)}
    asked = {j: next(search) for j, search in searches.items()}
    while asked:
        columns = np.array(sorted(asked))
        width = max(len(asked[j]) for j in columns)
        grid = np.full((len(columns), width), np.nan)
        for row, j in enumerate(columns):
            grid[row, : len(asked[j])] = asked[j]
        llf = _likelihoods(X, columns, data_min, data_range, grid)
        for row, j in enumerate(columns):
            try:
                asked[j] = searches[j].send(llf[row, : len(asked[j])])
            except StopIteration as done:
                lambdas[j] = done.value
                del asked[j]
    return _constrained(np.where(np.isfinite(lambdas), lambdas, 1.0))


def _constrained(lambdas: np.ndarray) -> np.ndarray:
    """scipy's last step of ``boxcox_normmax`` (since 1.12, whose ``ymax`` it has): where
    boxcox(max z, λ) = boxcox(2, λ) would exceed ``ymax``, λ solving boxcox(2, λ) = ymax (by the
    Lambert W function, as scipy solves it)."""
    if "ymax" not in inspect.signature(stats.boxcox_normmax).parameters:
        return lambdas
    over = special.boxcox(2.0, lambdas) > SCIPY_YMAX
    if over.any():
        y = SCIPY_YMAX
        w = special.lambertw(-(2.0 ** (-1.0 / y)) * _LOG2 / y, k=-1)
        lambdas = np.where(over, float(np.real(-w / _LOG2 - 1.0 / y)), lambdas)
    return lambdas
