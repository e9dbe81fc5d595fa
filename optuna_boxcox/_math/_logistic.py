"""L2-penalised logistic regression by Newton's method, warm-started, for the LogisticRegression fast path.

scikit-learn's ``LogisticRegression`` (solvers lbfgs, newton-cg, newton-cholesky) minimises

    C · Σ_i loss_i(θ) + ½‖w‖²        (w: θ without the intercept, which is not penalised)

with the binomial loss for two classes and the multinomial one (a coefficient vector per class) for
more; the objective is strictly convex in w, so its optimum is unique (the multinomial intercepts up
to a common shift, which no prediction sees). scikit-learn stops its solver once the largest
component of the gradient of that objective divided by ``C · n`` is at most ``tol``; this module
converges to the optimum itself (Newton steps from a warm start, to rounding) and bounds how far
scikit-learn's stopping point can move a decision value: to first order its offset from the
optimum is ``H⁻¹ g`` with ``‖g‖_∞ ≤ tol · C · n``, so a row's decision value (or difference of two
classes' values) moves by at most ``tol · C · n · ‖H⁻¹ x̃‖₁`` (:func:`decision_radius`).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor
from scipy.linalg import cho_solve
from scipy.special import expit
from scipy.special import log_expit
from scipy.special import logsumexp

#: A Newton step this small relative to θ ends the iteration: the step just taken leaves an error
#: of its square (quadratic convergence), far below the decision-value margin.
_STEP_TOLERANCE = 1e-10
#: Steps larger than this (relative to θ) are damped by a backtracking line search; smaller ones are
#: in Newton's quadratic region, where the objective's change is below its rounding.
_FULL_STEP = 1e-3
_MAX_NEWTON = 100
_MAX_HALVINGS = 60


def design(S: np.ndarray, fit_intercept: bool) -> np.ndarray:
    """S with a column of ones for the intercept (last) when there is one."""
    if not fit_intercept:
        return np.ascontiguousarray(S)
    return np.hstack([S, np.ones((S.shape[0], 1))])


def _penalty_mask(width: int, fit_intercept: bool) -> np.ndarray:
    mask = np.ones(width)
    if fit_intercept:
        mask[-1] = 0.0
    return mask


def _binary(
    X: np.ndarray, target: np.ndarray, C: float, theta: np.ndarray, mask: np.ndarray, hessian: bool
) -> tuple[float, np.ndarray, np.ndarray | None]:
    z = X @ theta
    value = -C * float(np.sum(log_expit(np.where(target > 0, z, -z)))) + 0.5 * float(
        np.sum(mask * theta**2)
    )
    p = expit(z)
    gradient = C * (X.T @ (p - target)) + mask * theta
    H = None
    if hessian:
        H = C * ((X.T * (p * (1.0 - p))) @ X)
        H[np.diag_indices_from(H)] += mask
    return value, gradient, H


def _multinomial(
    X: np.ndarray,
    Y: np.ndarray,
    C: float,
    theta: np.ndarray,
    mask: np.ndarray,
    hessian: bool,
    fit_intercept: bool,
) -> tuple[float, np.ndarray, np.ndarray | None]:
    K, d = theta.shape
    Z = X @ theta.T
    lse = logsumexp(Z, axis=1)
    value = C * float(np.sum(lse - np.sum(Z * Y, axis=1))) + 0.5 * float(np.sum(mask * theta**2))
    P = np.exp(Z - lse[:, None])
    gradient = (C * ((P - Y).T @ X) + mask * theta).ravel()
    H = None
    if hessian:
        # Σ_i x x^T P_k (δ_kl − P_l): a block diagonal of X^T diag(P_k) X less A^T A, A = P ⊗ x.
        A = (P[:, :, None] * X[:, None, :]).reshape(X.shape[0], K * d)
        H = -(A.T @ A)
        for k in range(K):
            H[k * d : (k + 1) * d, k * d : (k + 1) * d] += (X.T * P[:, k]) @ X
        H *= C
        H[np.diag_indices_from(H)] += np.tile(mask, K)
        if fit_intercept:
            # Shifting every intercept alike changes nothing: H is singular along that direction u.
            # H + uu^T acts as H on its complement, where the gradient and every step stay.
            u = np.zeros(K * d)
            u[d - 1 :: d] = 1.0
            H += np.outer(u, u)
    return value, gradient, H


class LogisticFit:
    """The optimum of the objective for a design matrix X (:func:`design`) and class indices."""

    def __init__(self, codes: np.ndarray, n_classes: int, C: float, fit_intercept: bool) -> None:
        self.codes = np.asarray(codes)
        self.n_classes = n_classes
        self.C = float(C)
        self.fit_intercept = bool(fit_intercept)
        self.binary = n_classes == 2
        self.target = (self.codes == 1).astype(np.float64)
        self.Y = np.eye(n_classes)[self.codes] if not self.binary else None

    def shape(self, width: int) -> tuple[int, ...]:
        return (width,) if self.binary else (self.n_classes, width)

    def evaluate(
        self, X: np.ndarray, theta: np.ndarray, hessian: bool
    ) -> tuple[float, np.ndarray, np.ndarray | None]:
        mask = _penalty_mask(X.shape[1], self.fit_intercept)
        if self.binary:
            return _binary(X, self.target, self.C, theta, mask, hessian)
        return _multinomial(X, self.Y, self.C, theta, mask, hessian, self.fit_intercept)

    def solve(
        self, X: np.ndarray, theta0: np.ndarray | None
    ) -> tuple[np.ndarray, tuple[np.ndarray, bool]] | None:
        """The optimum θ from ``theta0`` (None: zeros) and the Cholesky factor of the Hessian there,
        or None if Newton's method did not converge (non-finite values, too many steps)."""
        theta = np.zeros(self.shape(X.shape[1])) if theta0 is None else theta0.copy()
        if not self.binary and self.fit_intercept:
            theta[:, -1] -= np.mean(theta[:, -1])  # keep the intercepts on the complement of u
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for _ in range(_MAX_NEWTON):
                value, gradient, H = self.evaluate(X, theta, hessian=True)
                if not (np.isfinite(value) and np.all(np.isfinite(H))):
                    return None
                try:
                    factor = cho_factor(H, check_finite=False)
                except np.linalg.LinAlgError:
                    return None
                step = -cho_solve(factor, gradient, check_finite=False).reshape(theta.shape)
                size = float(np.max(np.abs(step)))
                scale = 1.0 + float(np.max(np.abs(theta)))
                if not np.isfinite(size):
                    return None
                if size <= _STEP_TOLERANCE * scale:
                    return theta + step, factor
                t = 1.0
                if size > _FULL_STEP * scale:
                    slope = float(np.dot(gradient, step.ravel()))
                    for _ in range(_MAX_HALVINGS):
                        trial, _, _ = self.evaluate(X, theta + t * step, hessian=False)
                        if np.isfinite(trial) and trial <= value + 1e-4 * t * slope:
                            break
                        t *= 0.5
                    else:
                        return None
                theta = theta + t * step
        return None


def decision_radius(
    X: np.ndarray,
    factor: tuple[np.ndarray, bool],
    gradient_bound: float,
    winner: np.ndarray | None = None,
) -> np.ndarray:
    """How far scikit-learn's decision values can be from the optimum's, to first order, given
    that its gradient's largest component is at most ``gradient_bound``: per row for two classes
    (one vector of coefficients), per row and class for more (the difference between the row's
    ``winner`` and that class; 0 for the winner itself)."""
    n, d = X.shape
    size = factor[0].shape[0]
    inverse = cho_solve(factor, np.eye(size), check_finite=False)
    if winner is None:
        return gradient_bound * np.sum(np.abs(X @ inverse), axis=1)
    K = size // d
    radius = np.zeros((n, K))
    blocks = inverse.reshape(K, d, size)
    for start in range(0, n, 256):
        rows = slice(start, min(n, start + 256))
        # H⁻¹ (x ⊗ e_c), row block × class × coefficient.
        B = np.einsum("nd,cde->nce", X[rows], blocks)
        own = B[np.arange(B.shape[0]), winner[rows]]
        radius[rows] = gradient_bound * np.sum(np.abs(own[:, None, :] - B), axis=2)
    return radius
