"""The objective's arguments checked and resolved: the data, the scoring and method, the λ
domain and starting point, the transforms, the classifier settings searched, the objectives and the
subsample (what :class:`~optuna_boxcox.BoxCoxObjective` builds itself from)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import hashlib
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_array

from optuna_boxcox._math import _numerics
from optuna_boxcox._math._transform import check_features
from optuna_boxcox._objective._scoring import check_scoring
from optuna_boxcox._objective._scoring import is_criterion
from optuna_boxcox._optuna import distribution_contains
from optuna_boxcox._study._space import LAMBDA
from optuna_boxcox._study._space import SETTING
from optuna_boxcox._study._space import SETTING_PREFIX
from optuna_boxcox._study._space import TRANSFORM
from optuna_boxcox._study._space import TRANSFORM_SUFFIX
from optuna_boxcox._study._space import TRANSFORMS
from optuna_boxcox._study._space import LambdaSpace
from optuna_boxcox._study._space import default_bounds

if TYPE_CHECKING:
    from collections.abc import Mapping


def check_choices(method: str, extrapolation: str, scoring: Any) -> None:
    if method not in _numerics.METHODS:
        raise ValueError(f"method must be one of {_numerics.METHODS}, got {method!r}")
    if extrapolation not in _numerics.EXTRAPOLATIONS:
        raise ValueError(
            f"extrapolation must be one of {_numerics.EXTRAPOLATIONS}, got {extrapolation!r}"
        )
    check_scoring(scoring)


def check_criterion(scoring: Any, transforms: tuple[str, ...], estimator_params: Any) -> None:
    """Refuse a criterion (a score of the λ alone) with transform choices or settings."""
    if is_criterion(scoring) and (len(transforms) > 1 or estimator_params):
        raise ValueError(
            f"scoring {scoring!r} is a criterion of the Box-Cox λ alone: search "
            "transforms or estimator_params with a classifier's score"
        )


@dataclass(frozen=True, eq=False)
class Whole:
    """What a search on rows drawn into memory knows of all the rows (data too large to hold,
    a Dask collection): how many, every label, which rows were drawn, and Box-Cox's [1, 2] range
    of all of them (a λ means the transform of all the data)."""

    n_samples: int
    y: np.ndarray
    rows: np.ndarray | None
    data_min: np.ndarray
    data_range: np.ndarray


@dataclass(frozen=True, eq=False)
class CheckedData:
    """Data checked once, where they enter: the features' names, X as float64, y as an array,
    and their fingerprint (what a study's spec records of them). With ``whole``, X and y are the
    rows ``whole.rows`` drawn from more rows than memory holds (the default's sample). ``named``:
    the columns had names of their own (a DataFrame's), else ``names`` are :func:`array_names`."""

    names: tuple[str, ...]
    X: np.ndarray
    y: np.ndarray
    fingerprint: str
    whole: Whole | None = None
    named: bool = True

    @property
    def shown(self) -> list[str]:
        """The names messages give the columns: their own, or an array's ``x0, x1, …`` as
        :class:`~optuna_boxcox.BoxCoxTransformer` says them."""
        return list(self.names) if self.named else _numerics.column_names(len(self.names))

    @property
    def n_samples(self) -> int:
        return len(self.X) if self.whole is None else self.whole.n_samples

    @property
    def labels(self) -> np.ndarray:
        """Every row's label (of all the rows, for data held in part)."""
        return self.y if self.whole is None else self.whole.y


#: Bytes of X hashed at a time by :func:`data_fingerprint`.
FINGERPRINT_BLOCK_BYTES = 1 << 24


def data_fingerprint(X: np.ndarray, y: np.ndarray) -> str:
    """SHA-256 (hex) of the rows in order: X's shape and float64 values, and the labels (their
    names and each row's), so that any edit of a value, a label, a row or the column order gives
    another fingerprint."""
    digest = hashlib.sha256()
    X = np.asarray(X, dtype=np.float64)
    digest.update(repr(X.shape).encode())
    # The bytes of X in C order, a block of rows at a time: no copy of the whole matrix (4 GB
    # at 10M × 50), and the same digest as hashing X.tobytes().
    step = max(1, FINGERPRINT_BLOCK_BYTES // max(1, 8 * X.shape[1])) if X.ndim == 2 else len(X)
    for start in range(0, max(1, len(X)), step):
        digest.update(np.ascontiguousarray(X[start : start + step]).data)
    classes, codes = np.unique(np.asarray(y), return_inverse=True)
    digest.update("\x1f".join(map(repr, classes.tolist())).encode())
    digest.update(np.asarray(codes, dtype=np.int64).tobytes())
    return digest.hexdigest()


def check_data(X: Any, y: Any) -> CheckedData:
    """(X, y) as the user gave them, checked and fingerprinted (:func:`check_arrays`), or a
    one-line error for unusable data. Data checked before pass through as they are."""
    if isinstance(X, CheckedData):
        return X
    names = feature_names(X)
    check_features(X)
    return check_arrays(X, y, names, named=getattr(X, "columns", None) is not None)


def check_arrays(
    X: Any,
    y: Any,
    names: Sequence[str],
    *,
    named: bool = True,
    warn_stacklevel: int | None = None,
) -> CheckedData:
    """Features whose names are ``names`` (``named``: their own, else :func:`array_names`; and
    whose columns :func:`check_features` accepts) and their labels, checked once and
    fingerprinted. With ``warn_stacklevel``, constant columns (but not all of them: refused) are
    warned about here."""
    names = [str(n) for n in names]
    shown = names if named else _numerics.column_names(len(names))
    X = check_array(X, dtype=np.float64, ensure_min_samples=2, input_name="X")
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != len(X):
        raise ValueError(
            f"y must be 1-D with one label per row of X ({len(X)}), got shape {y.shape}"
        )
    if len(np.unique(y)) < 2:
        raise ValueError("y has a single class; a classifier needs at least two")
    if type_of_target(y) not in ("binary", "multiclass"):
        raise ValueError(f"y must hold class labels, got target type {type_of_target(y)!r}")
    fingerprint = data_fingerprint(X, y)
    constant = _numerics.constant_columns(X)
    if len(constant) == X.shape[1]:
        listed = ", ".join(map(repr, shown[:5])) + (" …" if len(shown) > 5 else "")
        raise ValueError(
            f"every feature column is constant ({listed}): no λ changes them and a classifier "
            "has nothing to learn from them"
        )
    if warn_stacklevel is not None and len(constant):
        _numerics.warn_constant_columns(X, shown, stacklevel=warn_stacklevel + 1)
    return CheckedData(tuple(names), X, y, fingerprint, named=named)


def make_space(
    names: list[str],
    method: str,
    transforms: tuple[str, ...],
    estimator: Any,
    estimator_params: Mapping[str, BaseDistribution],
    low: np.ndarray,
    high: np.ndarray,
    start: np.ndarray,
    initial: Mapping[str, Any],
) -> LambdaSpace:
    """One λ per feature, after its transform choice when there are several; then the
    classifier's settings."""
    if len(transforms) == 1 and not estimator_params:
        return LambdaSpace(tuple(names), low, high, start)
    coordinates: list[tuple[str, str, Any, Any]] = []
    choices = CategoricalDistribution(list(transforms))
    for name, lo, hi, lam in zip(names, low, high, start):
        if len(transforms) > 1:
            transform = name + TRANSFORM_SUFFIX
            coordinates.append((transform, TRANSFORM, choices, initial.get(transform, method)))
        coordinates.append((name, LAMBDA, (lo, hi), lam))
    own = estimator.get_params()
    for name, distribution in estimator_params.items():
        key = SETTING_PREFIX + name
        value = initial.get(key, starting_value(distribution, own.get(name)))
        coordinates.append((key, SETTING, distribution, value))
    return LambdaSpace.of(coordinates)


def resolve_bounds(
    bounds: Any, names: list[str], start: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    if bounds is None:
        return default_bounds(start)
    p = len(names)
    if hasattr(bounds, "keys"):
        missing = [n for n in names if n not in bounds]
        if missing:
            raise ValueError(f"bounds lack the features {missing}")
        pairs = [bounds[n] for n in names]
    else:
        pairs = [bounds] * p
    low = np.array([float(lo) for lo, _ in pairs])
    high = np.array([float(hi) for _, hi in pairs])
    if np.any(low >= high):
        raise ValueError(f"λ bounds must be given as (low, high) with low < high, got {bounds}")
    return low, high


def resolve_transforms(transforms: Sequence[str] | None, method: str) -> tuple[str, ...]:
    if transforms is None:
        return (method,)
    if isinstance(transforms, str):
        transforms = [part.strip() for part in transforms.split(",")]
    transforms = tuple(transforms)
    unknown = [t for t in transforms if t not in TRANSFORMS]
    if unknown or not transforms:
        raise ValueError(f"transforms must be among {TRANSFORMS}, got {list(transforms)}")
    if len(set(transforms)) != len(transforms):
        raise ValueError(f"transforms must not repeat a choice, got {list(transforms)}")
    if method not in transforms:
        raise ValueError(
            f"method {method!r} must be one of transforms {list(transforms)}: the search starts "
            "from it"
        )
    return transforms


def resolve_estimator_params(
    estimator_params: Mapping[str, BaseDistribution] | None, estimator: Any
) -> dict[str, BaseDistribution]:
    if not estimator_params:
        return {}
    own = estimator.get_params() if hasattr(estimator, "get_params") else {}
    unknown = [n for n in estimator_params if n not in own]
    if unknown:
        raise ValueError(
            f"estimator_params {unknown} are not parameters of {type(estimator).__name__} "
            f"(it has {sorted(own)[:8]}…)"
        )
    wrong = [
        n
        for n, d in estimator_params.items()
        if not isinstance(d, (FloatDistribution, IntDistribution, CategoricalDistribution))
    ]
    if wrong:
        raise ValueError(
            f"estimator_params {wrong} must be Optuna distributions (FloatDistribution, "
            "IntDistribution or CategoricalDistribution)"
        )
    return dict(estimator_params)


def resolve_objectives(objectives: Sequence[str], transforms: tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(objectives, str):
        objectives = [part.strip() for part in objectives.split(",")]
    objectives = tuple(objectives)
    if objectives not in (("score",), ("score", "n_features")):
        raise ValueError(
            f"objectives must be ('score',) or ('score', 'n_features'), got {list(objectives)}"
        )
    if "n_features" in objectives and "drop" not in transforms:
        raise ValueError(
            "objectives 'n_features' needs 'drop' among transforms (else every point keeps all "
            "features)"
        )
    return objectives


def starting_value(distribution: BaseDistribution, own: Any) -> Any:
    """The estimator's own value of a setting if the distribution holds it, else its first."""
    if distribution_contains(distribution, own):
        return own
    if isinstance(distribution, CategoricalDistribution):
        return distribution.choices[0]
    return distribution.low


def feature_names(X: Any) -> list[str]:
    columns = getattr(X, "columns", None)
    if columns is not None:
        names = [str(c) for c in columns]
        if len(set(names)) == len(names):
            return names
        raise ValueError("X has duplicate column names; each λ parameter is named after one")
    return array_names(np.shape(X)[1] if np.ndim(X) == 2 else 0)


def array_names(width: int) -> list[str]:
    """The λ parameters of an array's columns: ``lambda_0, lambda_1, …``, the names studies
    record (the paper's presets' among them); messages say the columns as the transformer does
    (:attr:`CheckedData.shown`)."""
    return [f"lambda_{j}" for j in range(width)]
