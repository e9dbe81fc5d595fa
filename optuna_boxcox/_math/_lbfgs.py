"""scikit-learn's ``LogisticRegression(solver="lbfgs")`` fit, retraced without its overhead.

scikit-learn hands SciPy's L-BFGS-B the objective ``mean(loss_i) + ½·l2·‖w‖²`` (``l2 = 1/(C·n)``,
the intercept unpenalised; binomial loss for two classes, multinomial for more), from zeros,
with ``gtol=tol``, ``ftol=64·eps``, ``maxls=50`` and ten corrections; on a few hundred rows most of
its time is SciPy's and scikit-learn's Python around two dozen iterations. :func:`lbfgs_fit`
takes the same steps in compiled code: without bounds, L-BFGS-B's subspace step is the two-loop
L-BFGS direction with ``H₀ = (sᵀy / yᵀy)·I``, its first step is ``-g`` scaled to unit length,
its line search is Moré and Thuente's (MINPACK-2 ``dcsrch``, ``ftol=1e-3``, ``gtol=0.9``,
``xtol=0.1``), and it stops on the gradient's largest component, the relative reduction of the
objective, or ``max_iter``. The steps agree with SciPy's to rounding, not bit for bit (other
summation orders), so the result says when a stopping test was within rounding of its threshold
or the run ended any other way than on the gradient test, and how far a second rounding of the
same run moved the coefficients: the caller asks scikit-learn where that could matter.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from optuna_boxcox._math._jit import compiled

#: L-BFGS-B's defaults as scikit-learn calls it.
_CORRECTIONS = 10
_MAX_LINE_SEARCH = 50
_STEP_MAX = 1e10
_LS_FTOL = 1e-3
_LS_GTOL = 0.9
_LS_XTOL = 0.1
#: A stopping test within this relative distance of its threshold could have gone the other way
#: in SciPy's arithmetic: the fit is then reported unsure.
_NEAR = 1e-6

#: Two roundings of the same run that differ by more than this share of the largest coefficient
#: are not trusted to stand for SciPy's (see :func:`lbfgs_fit`).
_AGREE = 1e-8

CONVERGED = 0
UNSURE = 1

_EPS = float(np.finfo(np.float64).eps)

# Compile time is what a fresh installation's first fit waits for, so the kernels keep to what
# Numba types quickly: scalars from ``math``, loops instead of slices, arrays allocated by the
# caller, and flags as floats, since a bool constant passed to a compiled helper is typed as a
# literal and compiles the helper once more (each of these measured: docs/performance_log.md).


def _loss_gradient(X, codes, n_classes, w, l2, fit_intercept, grad, raw):  # pragma: no cover
    """The objective at ``w`` (K × d, K = 1 for two classes), its gradient written to ``grad``."""
    n, p = X.shape
    d = w.shape[1]
    K = w.shape[0]
    # X·Wᵀ and Rᵀ·X below are loops, not np.dot: Numba's BLAS binding was most of this kernel's
    # first compilation (a fresh install's first fit waited ~20 s for it), and a loop sums in
    # one order on every CPU.
    for i in range(n):
        for k in range(K):
            acc = 0.0
            for j in range(p):
                acc += X[i, j] * w[k, j]
            raw[i, k] = acc
    if fit_intercept:
        for i in range(n):
            for k in range(K):
                raw[i, k] += w[k, d - 1]
    total = 0.0
    for i in range(n):
        if n_classes == 2:
            r = raw[i, 0]
            y = 1.0 if codes[i] == 1 else 0.0
            # The binomial loss and its derivative, as scikit-learn's Cython computes them.
            if r <= 0.0:
                e = math.exp(r)
                loss = (e if r <= -37.0 else math.log1p(e)) - y * r
                g = ((1.0 - y) * e - y) / (1.0 + e)
            elif r <= 18.0:
                e = math.exp(-r)
                loss = math.log1p(e) + (1.0 - y) * r
                g = ((1.0 - y) - y * e) / (1.0 + e)
            else:
                e = math.exp(-r)
                loss = e + (1.0 - y) * r
                g = ((1.0 - y) - y * e) / (1.0 + e)
            total += loss
            raw[i, 0] = g / n
        else:
            top = raw[i, 0]
            for k in range(1, K):
                if raw[i, k] > top:
                    top = raw[i, k]
            own = raw[i, codes[i]]
            sum_exp = 0.0
            for k in range(K):
                raw[i, k] = math.exp(raw[i, k] - top)
                sum_exp += raw[i, k]
            total += math.log(sum_exp) + top - own
            for k in range(K):
                g = raw[i, k] / sum_exp
                if k == codes[i]:
                    g -= 1.0
                raw[i, k] = g / n
    for k in range(K):
        for j in range(p):
            grad[k, j] = 0.0
    for i in range(n):
        for k in range(K):
            r = raw[i, k]
            for j in range(p):
                grad[k, j] += r * X[i, j]
    for k in range(K):
        for j in range(p):
            grad[k, j] += l2 * w[k, j]
    if fit_intercept:
        for k in range(K):
            acc = 0.0
            for i in range(n):
                acc += raw[i, k]
            grad[k, d - 1] = acc
    penalty = 0.0
    for k in range(K):
        for j in range(p):
            penalty += w[k, j] * w[k, j]
    return total / n + 0.5 * l2 * penalty


def _dot(a, b):  # pragma: no cover - compiled
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    return acc


def _cubic(f_a, f_b, t_a, t_b, d_a, d_b, clamp):  # pragma: no cover - compiled
    """The cubic through two points of φ (values, slopes): MINPACK-2's ``theta`` and unsigned
    ``gamma``, in its order of operations. ``clamp`` (1.0) floors the discriminant at 0, as
    ``dcstep`` does where the cubic may not have a minimiser."""
    theta = 3.0 * (f_a - f_b) / (t_b - t_a) + d_a + d_b
    s = max(abs(theta), abs(d_a), abs(d_b))
    disc = (theta / s) ** 2 - (d_a / s) * (d_b / s)
    if clamp > 0.0:
        disc = max(0.0, disc)
    return theta, s * math.sqrt(disc)


def _step(stx, fx, dx, sty, fy, dy, stp, fp, dp, brackt, stpmin, stpmax):  # pragma: no cover
    """Moré–Thuente's safeguarded step (MINPACK-2 ``dcstep``): the next trial step and the
    updated interval of uncertainty (``brackt``: 1.0 once the minimum is bracketed, else 0.0)."""
    opposite = (dp < 0.0 and dx > 0.0) or (dp > 0.0 and dx < 0.0)
    if fp > fx:
        # Higher value: the minimum is bracketed; cubic or cubic-quadratic mean.
        theta, gamma = _cubic(fx, fp, stx, stp, dx, dp, 0.0)
        if stp < stx:
            gamma = -gamma
        p = (gamma - dx) + theta
        q = ((gamma - dx) + gamma) + dp
        stpc = stx + (p / q) * (stp - stx)
        stpq = stx + ((dx / ((fx - fp) / (stp - stx) + dx)) / 2.0) * (stp - stx)
        if abs(stpc - stx) <= abs(stpq - stx):
            stpf = stpc
        else:
            stpf = stpc + (stpq - stpc) / 2.0
        brackt = 1.0
    elif opposite:
        # Derivatives of opposite sign: bracketed; the step nearer the secant's.
        theta, gamma = _cubic(fx, fp, stx, stp, dx, dp, 0.0)
        if stp > stx:
            gamma = -gamma
        p = (gamma - dp) + theta
        q = ((gamma - dp) + gamma) + dx
        stpc = stp + (p / q) * (stx - stp)
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
        brackt = 1.0
    elif abs(dp) < abs(dx):
        # Same sign, derivative shrinking: the cubic's step if it points the right way.
        theta, gamma = _cubic(fx, fp, stx, stp, dx, dp, 1.0)
        if stp > stx:
            gamma = -gamma
        p = (gamma - dp) + theta
        q = (gamma + (dx - dp)) + gamma
        r = p / q
        if r < 0.0 and gamma != 0.0:
            stpc = stp + r * (stx - stp)
        elif stp > stx:
            stpc = stpmax
        else:
            stpc = stpmin
        stpq = stp + (dp / (dp - dx)) * (stx - stp)
        if brackt > 0.0:
            stpf = stpc if abs(stpc - stp) < abs(stpq - stp) else stpq
            if stp > stx:
                stpf = min(stp + 0.66 * (sty - stp), stpf)
            else:
                stpf = max(stp + 0.66 * (sty - stp), stpf)
        else:
            stpf = stpc if abs(stpc - stp) > abs(stpq - stp) else stpq
            stpf = min(stpmax, max(stpmin, stpf))
    else:
        # Same sign, derivative not shrinking.
        if brackt > 0.0:
            theta, gamma = _cubic(fp, fy, stp, sty, dy, dp, 0.0)
            if stp > sty:
                gamma = -gamma
            p = (gamma - dp) + theta
            q = ((gamma - dp) + gamma) + dy
            stpf = stp + (p / q) * (sty - stp)
        elif stp > stx:
            stpf = stpmax
        else:
            stpf = stpmin
    if fp > fx:
        sty, fy, dy = stp, fp, dp
    else:
        if opposite:
            sty, fy, dy = stx, fx, dx
        stx, fx, dx = stp, fp, dp
    return stx, fx, dx, sty, fy, dy, stpf, brackt


def _fit(
    X,
    codes,
    n_classes,
    l2,
    fit_intercept,
    gtol,
    max_iter,
    w,
    x,
    grad,
    g,
    raw,
    S,
    Y,
    SY,
    alpha,
    work,
):  # pragma: no cover - compiled
    """L-BFGS-B from ``w`` (zeros) as scikit-learn runs it; ``w`` is overwritten with the result.
    ``x`` and ``g`` are ``w`` and ``grad`` flattened; the rest is the caller's workspace
    (:func:`_workspace`). Returns (status, iterations)."""
    size = x.shape[0]
    m = _CORRECTIONS
    ftol = 64.0 * _EPS
    stored = 0
    head = 0
    theta = 1.0
    direction = work[0]
    start = work[1]
    g_old = work[2]
    f = _loss_gradient(X, codes, n_classes, w, l2, fit_intercept, grad, raw)
    status = CONVERGED
    largest = 0.0
    for i in range(size):
        largest = max(largest, abs(g[i]))
    if abs(largest - gtol) <= _NEAR * gtol:
        status = UNSURE
    if largest <= gtol:
        return status, 0
    iteration = 0
    while True:
        # The direction: -g for the first step, else the two-loop product -H·g.
        for i in range(size):
            direction[i] = -g[i]
        if stored > 0:
            for back in range(stored):
                slot = (head - 1 - back) % m
                alpha[slot] = _dot(S[slot], direction) / SY[slot]
                for i in range(size):
                    direction[i] -= alpha[slot] * Y[slot, i]
            for i in range(size):
                direction[i] /= theta
            for forth in range(stored):
                slot = (head - stored + forth) % m
                beta = _dot(Y[slot], direction) / SY[slot]
                for i in range(size):
                    direction[i] += (alpha[slot] - beta) * S[slot, i]
        dnorm = math.sqrt(_dot(direction, direction))
        stp = min(1.0 / dnorm, _STEP_MAX) if iteration == 0 else 1.0
        for i in range(size):
            start[i] = x[i]
            g_old[i] = g[i]
        f_old = f
        gd_old = _dot(g, direction)
        if not gd_old < 0.0:
            return UNSURE, iteration
        # Moré–Thuente line search (MINPACK-2 dcsrch) on φ(t) = f(start + t·direction).
        finit, ginit = f, gd_old
        gtest = _LS_FTOL * ginit
        width = _STEP_MAX
        width1 = width / 0.5
        stx, fx, gx = 0.0, finit, ginit
        sty, fy, gy = 0.0, finit, ginit
        stmin, stmax = 0.0, stp + 4.0 * stp
        brackt = 0.0
        stage = 1
        evaluations = 0
        while True:
            for i in range(size):
                x[i] = start[i] + stp * direction[i]
            f = _loss_gradient(X, codes, n_classes, w, l2, fit_intercept, grad, raw)
            gd = _dot(g, direction)
            evaluations += 1
            if not math.isfinite(f):
                return UNSURE, iteration
            ftest = finit + stp * gtest
            if stage == 1 and f <= ftest and gd >= 0.0:
                stage = 2
            if f <= ftest and abs(gd) <= _LS_GTOL * -ginit:
                break  # converged
            if (
                (brackt > 0.0 and (stp <= stmin or stp >= stmax))
                or (brackt > 0.0 and stmax - stmin <= _LS_XTOL * stmax)
                or stp == _STEP_MAX
                or stp == 0.0
            ):
                return UNSURE, iteration  # SciPy's warnings: rare, not retraced
            if evaluations >= _MAX_LINE_SEARCH:
                return UNSURE, iteration
            # While no step satisfied the test, the step is taken on the modified function
            # ψ(t) = φ(t) - t·gtest; ``shift`` 0.0 leaves every value as it is, to the bit.
            shift = gtest if stage == 1 and f <= fx and f > ftest else 0.0
            stx, fxm, gxm, sty, fym, gym, stp, brackt = _step(
                stx,
                fx - stx * shift,
                gx - shift,
                sty,
                fy - sty * shift,
                gy - shift,
                stp,
                f - stp * shift,
                gd - shift,
                brackt,
                stmin,
                stmax,
            )
            fx = fxm + stx * shift
            fy = fym + sty * shift
            gx = gxm + shift
            gy = gym + shift
            if brackt > 0.0:
                if abs(sty - stx) >= 0.66 * width1:
                    stp = stx + 0.5 * (sty - stx)
                width1 = width
                width = abs(sty - stx)
                stmin = min(stx, sty)
                stmax = max(stx, sty)
            else:
                stmin = stp + 1.1 * (stp - stx)
                stmax = stp + 4.0 * (stp - stx)
            stp = min(_STEP_MAX, max(0.0, stp))
            if (brackt > 0.0 and (stp <= stmin or stp >= stmax)) or (
                brackt > 0.0 and stmax - stmin <= _LS_XTOL * stmax
            ):
                stp = stx
        iteration += 1
        if iteration >= max_iter:
            return UNSURE, iteration
        largest = 0.0
        for i in range(size):
            largest = max(largest, abs(g[i]))
        if abs(largest - gtol) <= _NEAR * gtol:
            status = UNSURE
        if largest <= gtol:
            return status, iteration
        scale = max(abs(f_old), abs(f), 1.0)
        if f_old - f <= 2.0 * ftol * scale:
            return UNSURE, iteration  # the relative-reduction stop, or within rounding of it
        # The correction pair s = stp·d, y = Δg, with sᵀy as L-BFGS-B computes it.
        sy = (gd - gd_old) * stp
        if sy <= _EPS * (-gd_old * stp):
            continue  # L-BFGS-B skips the update
        yy = 0.0
        for i in range(size):
            S[head, i] = stp * direction[i]
            Y[head, i] = g[i] - g_old[i]
            yy += Y[head, i] * Y[head, i]
        SY[head] = sy
        theta = yy / sy
        head = (head + 1) % m
        stored = min(stored + 1, m)


def lbfgs_fit(
    X: np.ndarray,
    codes: np.ndarray,
    n_classes: int,
    C: float,
    fit_intercept: bool,
    tol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray | None]:
    """The coefficients scikit-learn's lbfgs fit reaches on the design matrix ``X`` (n × p, no
    intercept column) and class indices ``codes``: a K × (p + intercept) array (K = 1 for two
    classes), and how far another rounding of the same steps moved them (a K × (p + intercept)
    array of absolute differences), or None when the run cannot stand for SciPy's: a stopping
    test within rounding of its threshold, an ending other than on the gradient, or two roundings
    that disagree by more than :data:`_AGREE` of the largest coefficient.

    Rounding errors grow along L-BFGS's iterations: over a few dozen they stay near 1e-12 of the
    coefficients, over a hundred on a wide multinomial problem they reached 5e-5. So the fit is
    run twice, the second time on the rows in reverse order (every sum over rows rounds
    differently, as another BLAS would): the difference measures how far SciPy's own rounding
    can have taken scikit-learn's run.
    """
    n, p = X.shape
    K = 1 if n_classes == 2 else n_classes
    w = np.zeros((K, p + int(fit_intercept)))
    kernel = fit_kernel()
    if kernel is None:  # pragma: no cover - numba is a dependency
        return w, None
    l2 = 1.0 / (C * n)
    X = np.ascontiguousarray(X, dtype=np.float64)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    settings = (n_classes, l2, fit_intercept, float(tol), int(max_iter))
    status, _ = kernel(X, codes, *settings, *_workspace(w, n))
    if status != CONVERGED:
        return w, None
    again = np.zeros_like(w)
    reversed_rows = (np.ascontiguousarray(X[::-1]), np.ascontiguousarray(codes[::-1]))
    status, _ = kernel(*reversed_rows, *settings, *_workspace(again, n))
    spread = np.abs(w - again)
    if status != CONVERGED or not np.max(spread) <= _AGREE * np.max(np.abs(w)):
        return w, None
    return w, spread


def _workspace(w: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """:func:`_fit`'s arrays, after its settings: ``w`` and its gradient, each also flattened,
    the n × K raw scores, the corrections S and Y with their sᵀy and two-loop coefficients, and
    three work vectors (direction, start, previous gradient)."""
    K, d = w.shape
    size = K * d
    grad = np.empty((K, d))
    return (
        w,
        w.reshape(size),
        grad,
        grad.reshape(size),
        np.empty((n, K)),
        np.zeros((_CORRECTIONS, size)),
        np.zeros((_CORRECTIONS, size)),
        np.zeros(_CORRECTIONS),
        np.zeros(_CORRECTIONS),
        np.empty((3, size)),
    )


def fit_kernel() -> Any:
    """The compiled :func:`_fit`, or None without Numba. It calls its helpers by their module
    names, so they are compiled and put in their place first. Nothing is compiled until the
    first call; a fresh installation's notice comes here."""
    for name in ("_loss_gradient", "_dot", "_cubic", "_step"):
        function = globals()[name]
        if hasattr(function, "py_func"):
            continue  # compiled on an earlier call
        function = compiled(function, lean=True)
        if function is None:  # pragma: no cover - numba is a dependency
            return None
        globals()[name] = function
    return compiled(_fit, announce="LogisticRegression's fast fit", lean=True)
