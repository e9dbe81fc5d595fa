"""Classifier-free criteria of Bicego and Baldo 2016 (seed 001, eq. 2, 7, 8, 10–12, 14; SPEC §2).

Each criterion scores one transformed training set without fitting a classifier, so a search can
maximise it instead of the resubstitution accuracy. All four are "higher is better":

- ``"ml"`` (:func:`log_likelihood`): Box-Cox profile log-likelihood, a measure of Gaussianity of each
  column; larger means the power-transformed columns are closer to normal.
- ``"pcml"`` (:func:`per_class_log_likelihood`): the same, measured inside each class and summed;
  larger means every class is closer to normal.
- ``"fisher"`` (:func:`fisher_criterion`): trace(Sw⁻¹ Sb), class separability; larger means class
  means lie further apart relative to the spread within the classes.
- ``"1nn-mm"`` (:func:`nn_margin`): 1-NN hypothesis margin; larger means every sample sits closer to
  its own class than to any other class.

The likelihood criteria look at the power transform itself (its input, its output before standard
scaling, and λ, for the Jacobian term); the separability criteria look at the final, standard-scaled
data the classifier would see. :data:`CRITERIA` records which is which for the objective.

Like :mod:`optuna_boxcox._math._numerics`, nothing here knows about Optuna or scikit-learn estimators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import NamedTuple

import numpy as np
from scipy import linalg
from scipy.spatial.distance import cdist

if TYPE_CHECKING:
    from collections.abc import Callable

#: Rows of the distance matrix computed at once by :func:`nn_margin` (block × n floats in memory).
NN_BLOCK_ROWS = 1024


def _column_log_variances(transformed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log σ² (ddof = 0) of every column, and a mask of the columns that are constant.

    The variance is computed on the column divided by its largest magnitude, so that a power transform
    with a large |λ| (values up to e^700 / λ) does not overflow when squared. A column counts as constant
    when its variance is within the rounding error of the two-pass algorithm (scikit-learn's
    ``_is_constant_feature`` rule, as in :func:`optuna_boxcox._math._numerics.fit_scale`): identical values
    can leave a variance of 1e-34, whose log would otherwise dominate the criterion.
    """
    n = transformed.shape[0]
    scale = np.max(np.abs(transformed), axis=0)
    safe_scale = np.where(scale > 0, scale, 1.0)
    unit = transformed / safe_scale
    mean = unit.mean(axis=0)
    var = unit.var(axis=0)
    eps = np.finfo(np.float64).eps
    constant = (scale == 0) | (var <= n * eps * var + (n * mean * eps) ** 2)
    log_var = 2.0 * np.log(safe_scale) + np.log(np.where(constant, 1.0, var))
    return log_var, constant


def _log_jacobians(values: np.ndarray, method: str) -> np.ndarray:
    """Per-column Σ_i log |d transform / d x| divided by (λ − 1), for Box-Cox or Yeo-Johnson."""
    if method == "box-cox":
        return np.sum(np.log(values), axis=0)
    if method == "yeo-johnson":
        return np.sum(np.sign(values) * np.log1p(np.abs(values)), axis=0)
    raise ValueError(f"method must be 'box-cox' or 'yeo-johnson', got {method!r}")


def log_likelihood(
    values: np.ndarray,
    transformed: np.ndarray,
    lambdas: np.ndarray,
    method: str = "box-cox",
) -> float:
    """ML criterion (seed 001 eq. 7): mean over columns of the profile log-likelihood of eq. 2.

    For column j, ``-n/2·log σ_j² + (λ_j − 1)·Σ_i log values_ij``, the Box-Cox log-likelihood of the
    column maximised over the normal mean and variance (``scipy.stats.boxcox_llf``). For Yeo-Johnson the
    Jacobian term is ``(λ_j − 1)·Σ_i sign(x)·log1p(|x|)`` (``scipy.stats.yeojohnson_llf``).
    Higher is better: the transformed columns are closer to normal.

    The seed's eq. 7 averages (1/d Σ_k) over the columns, which SPEC §2 follows ("mean over columns"); its
    eq. 3 for the spherical MLE sums them instead, which has the same argmax. Columns that are constant
    after the transform are left out of the mean: their variance is zero, log σ² = −∞, and they carry no
    information about λ. With no informative column the criterion is 0.

    Parameters
    ----------
    values : ndarray of shape (n_samples, n_features)
        Input of the power transform: the [1, 2]-scaled Z for Box-Cox (all > 0), raw X for Yeo-Johnson.
    transformed : ndarray of shape (n_samples, n_features)
        The power-transformed columns, before standard scaling.
    lambdas : ndarray of shape (n_features,)
        λ of each column.
    method : {"box-cox", "yeo-johnson"}

    Returns
    -------
    float
    """
    values = np.asarray(values, dtype=np.float64)
    transformed = np.asarray(transformed, dtype=np.float64)
    lambdas = np.asarray(lambdas, dtype=np.float64)
    n = transformed.shape[0]
    log_var, constant = _column_log_variances(transformed)
    per_column = -0.5 * n * log_var + (lambdas - 1.0) * _log_jacobians(values, method)
    if np.all(constant):
        return 0.0
    return float(np.mean(per_column[~constant]))


def per_class_log_likelihood(
    values: np.ndarray,
    transformed: np.ndarray,
    lambdas: np.ndarray,
    y: np.ndarray,
    method: str = "box-cox",
) -> float:
    """PCML criterion (seed 001 eq. 8): the sum over classes of :func:`log_likelihood` on the class's rows.

    Higher is better: every class on its own is closer to normal. A column constant inside one class is
    left out of that class's mean only; a singleton class has no variance at all and contributes 0.
    Parameters as for :func:`log_likelihood`, plus the labels ``y`` of shape (n_samples,).
    """
    values = np.asarray(values, dtype=np.float64)
    transformed = np.asarray(transformed, dtype=np.float64)
    y = np.asarray(y)
    return float(
        sum(
            log_likelihood(values[y == label], transformed[y == label], lambdas, method)
            for label in np.unique(y)
        )
    )


def fisher_criterion(X: np.ndarray, y: np.ndarray) -> float:
    """Fisher criterion (seed 001 eq. 10–12): trace(Sw⁻¹ Sb) on the standard-scaled transformed data.

    ``Sw = Σ_ℓ P_ℓ Σ_ℓ`` with Σ_ℓ the (ddof = 0) covariance of class ℓ and P_ℓ = n_ℓ / n;
    ``Sb = Σ_ℓ P_ℓ (M_ℓ − M_0)(M_ℓ − M_0)ᵀ``. Higher is better: classes are further apart relative to
    their spread. Sw is inverted with a symmetric pseudo-inverse, so a singular Sw (a constant or
    duplicated column, fewer samples than features) gives a finite value; for a column that is an exact
    copy or a constant, the value equals that of the data without it. With one class Sb = 0 and so is
    the criterion. Invariant to any invertible per-column affine map while Sw is non-singular.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)

    Returns
    -------
    float
    """
    X = np.asarray(X, dtype=np.float64)
    labels, codes = np.unique(np.asarray(y), return_inverse=True)
    n = X.shape[0]
    counts = np.bincount(codes, minlength=labels.size)
    class_means = np.zeros((labels.size, X.shape[1]))
    np.add.at(class_means, codes, X)
    class_means /= counts[:, None]
    within = X - class_means[codes]
    Sw = within.T @ within / n
    between = class_means - X.mean(axis=0)
    Sb = (between * (counts / n)[:, None]).T @ between
    # Both matrices are symmetric, so trace(A·B) is the sum of their elementwise product.
    return float(np.sum(linalg.pinvh(Sw) * Sb))


def nn_margin(X: np.ndarray, y: np.ndarray) -> float:
    """1NN-MM criterion (seed 001 eq. 14): Σ_x ½(‖x − nearmiss(x)‖ − ‖x − nearhit(x)‖), Euclidean.

    nearhit(x) is the nearest *other* sample with the label of x (a duplicate of x counts, at distance
    0), nearmiss(x) the nearest sample with another label. Higher is better: positive when samples lie
    nearer their own class than any other, negative when the leave-one-out 1-NN rule mostly errs.

    A sample whose class has no other member has no nearhit, and its hypothesis margin is undefined
    (leave-one-out 1-NN always misclassifies it). It contributes 0: counting only its miss term would
    reward pushing a lone point away from everything, which says nothing about separating classes.
    Likewise with a single class nothing has a nearmiss and the criterion is 0. The sum (not the
    mean) follows eq. 14; it is computed in blocks of rows, so memory stays O(block · n).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)

    Returns
    -------
    float
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    n = X.shape[0]
    total = 0.0
    for start in range(0, n, NN_BLOCK_ROWS):
        rows = np.arange(start, min(start + NN_BLOCK_ROWS, n))
        dist = cdist(X[rows], X)
        same = y[rows, None] == y[None, :]
        same[np.arange(rows.size), rows] = False  # a sample is not its own nearhit
        hit = np.min(np.where(same, dist, np.inf), axis=1)
        different = y[rows, None] != y[None, :]
        miss = np.min(np.where(different, dist, np.inf), axis=1)
        defined = np.isfinite(hit) & np.isfinite(miss)
        total += 0.5 * float(np.sum(miss[defined] - hit[defined]))
    return total


class Criterion(NamedTuple):
    """How the objective calls one criterion.

    ``data`` is ``"power"`` for ``function(values, transformed, lambdas[, y], method=...)`` (before
    standard scaling) or ``"scaled"`` for ``function(X_scaled, y)`` (after it); ``needs_labels`` says
    whether ``y`` is passed.
    """

    function: Callable[..., float]
    data: str
    needs_labels: bool
    equation: str


#: The criteria of seed 001 by name; every one is maximised.
CRITERIA: dict[str, Criterion] = {
    "ml": Criterion(log_likelihood, "power", False, "eq. 2, 7"),
    "pcml": Criterion(per_class_log_likelihood, "power", True, "eq. 8"),
    "fisher": Criterion(fisher_criterion, "scaled", True, "eq. 10-12"),
    "1nn-mm": Criterion(nn_margin, "scaled", True, "eq. 14"),
}
