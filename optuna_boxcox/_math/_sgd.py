"""scikit-learn's binary SGD with the perceptron or hinge loss, compiled, for the perceptron fast path.

The paper's linear classifier, ``SGDClassifier(loss="perceptron", random_state=…)``, has no structure
to reuse between two Λ: every score is a full fit. scikit-learn spends about 1.4 ms of a ~2 ms fit
on input validation and set-up around a core loop of ~20 µs per epoch. :func:`fit_sgd_binary` is
that core loop for the settings :func:`sgd_settings` accepts — the same shuffles (scikit-learn's
``our_rand_r`` xorshift, reseeded identically each epoch), the same learning-rate schedule, weight
scaling, loss and stopping rule, in the same floating-point order — so it returns the weights
scikit-learn would, bit for bit (the tests compare them). Anything else is left to scikit-learn.

``_plain_sgd`` is private to scikit-learn and has changed: up to 1.7 an epoch counted as an
improvement by its summed loss, from 1.8 on by its mean objective (loss plus the L2 penalty). The
port follows the installed release's rule, and is only trusted on the releases it was verified
against (:data:`optuna_boxcox._math._sklearn_compat.PLAIN_SGD_VERIFIED`); on any other release
:func:`sgd_settings` declines and scikit-learn fits as usual.

Numba compiles the loop on first use (:mod:`optuna_boxcox._math._jit`); without Numba there is no fast path.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from optuna_boxcox._math import _sklearn_compat
from optuna_boxcox._math._jit import compiled

#: scikit-learn's loss names with the hinge threshold they use.
_THRESHOLDS = {"perceptron": 0.0, "hinge": 1.0}
_MAX_INT = int(np.iinfo(np.int32).max)


def sgd_settings(estimator: Any) -> dict[str, Any] | None:
    """The arguments of :func:`fit_sgd_binary` that reproduce ``clone(estimator).fit`` on binary
    labels, or None when the estimator's settings are outside what it reproduces or the installed
    scikit-learn is not one the port was verified against."""
    if not _sklearn_compat.PLAIN_SGD_PORT_MATCHES:
        return None
    params = estimator.get_params(deep=False)
    supported = (
        params["loss"] in _THRESHOLDS
        and params["penalty"] in ("l2", None)
        and params["learning_rate"] == "optimal"
        and params["early_stopping"] is False
        and params["average"] is False
        and params["class_weight"] is None
        and params["shuffle"] in (True, False)
        and params["fit_intercept"] in (True, False)
        and isinstance(params["random_state"], numbers.Integral)
        and isinstance(params["max_iter"], numbers.Integral)
        and params["max_iter"] >= 1
        and isinstance(params["n_iter_no_change"], numbers.Integral)
        and (params["tol"] is None or isinstance(params["tol"], numbers.Real))
        and isinstance(params["alpha"], numbers.Real)
        and params["alpha"] > 0
    )
    if not supported:
        return None
    # The seeds fit_binary draws: make_dataset's (unused by the sequential pass), then the shuffle's.
    rng = np.random.RandomState(int(params["random_state"]))
    rng.randint(1, np.iinfo(np.int32).max)
    seed = int(rng.randint(_MAX_INT))
    alpha = float(params["alpha"])
    typw = np.sqrt(1.0 / np.sqrt(alpha))
    # scikit-learn divides by max(1, |the loss's gradient at (y=1, p=-typw)|), which is 1 for both losses.
    initial_eta0 = typw
    return {
        "seed": seed,
        "alpha": alpha,
        "optimal_init": float(1.0 / (initial_eta0 * alpha)),
        "max_iter": int(params["max_iter"]),
        "tol": -math.inf if params["tol"] is None else float(params["tol"]),
        "n_iter_no_change": int(params["n_iter_no_change"]),
        "fit_intercept": bool(params["fit_intercept"]),
        "shuffle": bool(params["shuffle"]),
        "threshold": _THRESHOLDS[params["loss"]],
        "l2": params["penalty"] == "l2",
        "stop_on_objective": _sklearn_compat.PLAIN_SGD_STOPS_ON_OBJECTIVE,
    }


def fit_sgd_binary(
    X: np.ndarray, y: np.ndarray, settings: dict[str, Any]
) -> tuple[np.ndarray, float, int] | None:
    """(coef, intercept, n_iter) of scikit-learn's binary SGD fit on C-ordered float64 ``X`` and ±1
    ``y``, or None where scikit-learn raises (non-finite weights) or where this core cannot vouch
    for identical decisions (a margin within rounding; see :func:`_sgd_core`)."""
    core = sgd_kernel()
    if core is None:
        return None
    n, p = X.shape
    w = np.zeros(p)
    intercept, n_iter, status = core(
        X,
        y,
        w,
        np.arange(n),
        settings["seed"],
        settings["alpha"],
        settings["optimal_init"],
        settings["max_iter"],
        settings["tol"],
        settings["n_iter_no_change"],
        settings["fit_intercept"],
        settings["shuffle"],
        settings["threshold"],
        settings["l2"],
        settings["stop_on_objective"],
    )
    return (w, intercept, n_iter) if status == 0 else None


def sgd_kernel() -> Any:
    """The compiled :func:`_sgd_core`, or None without Numba (compiled at its first call; a fresh
    installation's notice comes here)."""
    return compiled(_sgd_core, announce="the perceptron's and SGD's fast fit", lean=True)


def _sgd_core(
    X,
    y,
    w,
    index,
    seed,
    alpha,
    optimal_init,
    max_iter,
    tol,
    n_iter_no_change,
    fit_intercept,
    shuffle,
    threshold,
    l2,
    stop_on_objective,
):
    """scikit-learn's ``_plain_sgd`` for dense binary data (Numba).

    Every operation that moves the weights is scikit-learn's, in its order: the shuffles, the
    learning rate, the weight scale and its resets, ``w += x · update / wscale``, the intercept. The
    two sums scikit-learn runs left to right — the dot product ``w·x`` and ``‖w‖²`` — are taken here
    over four interleaved partial sums, several times faster and different only in rounding. Those
    sums only steer (a) whether a sample updates (``y·p ≤ threshold``) and (b) when the epochs stop
    (the mean objective against ``best - tol``). Each such decision is checked against a bound on
    the rounding difference; if any decision is that close, the result is flagged ambiguous and the
    caller lets scikit-learn fit instead. So the returned weights are scikit-learn's whenever the
    flag says so.

    ``stop_on_objective`` picks the release's stopping rule: the epoch's mean objective (loss plus
    penalty) against ``best - tol`` (scikit-learn ≥ 1.8), or its summed loss against
    ``best - tol · n`` (up to 1.7).

    ``w`` (zeros, p) receives the weights; ``index`` is ``arange(n)``, shuffled in place. Returns
    (intercept, n_iter, status) with status 0 = exact, 1 = non-finite weights (scikit-learn
    raises), 2 = a decision within rounding (use scikit-learn). The caller allocates both arrays:
    a kernel that allocates none compiles faster (:func:`optuna_boxcox._math._jit.compiled`).
    """
    n, p = X.shape
    wscale = 1.0
    sq_norm = 0.0
    intercept = 0.0
    t = 1.0
    best_objective = math.inf
    best_slack = 0.0
    no_improvement = 0
    epoch = 0
    # |sequential − interleaved| ≤ 2·p·u·Σ|terms| for a p-term sum; 1e-12 covers p up to ~4,000
    # with a wide margin, and ties are rarer still.
    relative = 1e-12 * max(p, 1) / 4.0 + 1e-14
    for epoch in range(max_iter):
        objective_sum = 0.0
        slack = 0.0  # bound on how far objective_sum may be from scikit-learn's
        if shuffle:
            state = seed
            for i in range(n - 1):
                if state == 0:
                    state = 1
                state ^= (state << 13) & 0xFFFFFFFF
                state ^= state >> 17
                state ^= (state << 5) & 0xFFFFFFFF
                j = i + (state % 2147483648) % (n - i)
                index[i], index[j] = index[j], index[i]
        for i in range(n):
            k = index[i]
            d0 = 0.0
            d1 = 0.0
            d2 = 0.0
            d3 = 0.0
            m0 = 0.0
            m1 = 0.0
            m2 = 0.0
            m3 = 0.0
            f = 0
            while f + 4 <= p:
                t0 = w[f] * X[k, f]
                t1 = w[f + 1] * X[k, f + 1]
                t2 = w[f + 2] * X[k, f + 2]
                t3 = w[f + 3] * X[k, f + 3]
                d0 += t0
                d1 += t1
                d2 += t2
                d3 += t3
                m0 += abs(t0)
                m1 += abs(t1)
                m2 += abs(t2)
                m3 += abs(t3)
                f += 4
            while f < p:
                t0 = w[f] * X[k, f]
                d0 += t0
                m0 += abs(t0)
                f += 1
            inner = ((d0 + d1) + (d2 + d3)) * wscale
            magnitude = ((m0 + m1) + (m2 + m3)) * abs(wscale)
            prediction = inner + intercept
            # Both sums of exact zeros are exact; otherwise bound the dot products' difference and
            # the final addition's rounding.
            tolerance = relative * magnitude + 4.5e-16 * abs(prediction) if magnitude > 0 else 0.0
            eta = 1.0 / (alpha * (optimal_init + t - 1))
            z = prediction * y[k]
            if tolerance > 0 and abs(z - threshold) <= tolerance:
                return intercept, epoch + 1, 2
            if z <= threshold:  # the loss is inexact by as much as z; zero loss is exact
                objective_sum += threshold - z
                slack += tolerance
            if l2 and stop_on_objective:
                norm = math.sqrt(sq_norm)
                penalty = alpha * (1.0 * 0.5 * (norm * norm) + 0.0)
                objective_sum += penalty
                slack += relative * penalty
            dloss = -y[k] if z <= threshold else 0.0
            if dloss < -1e12:
                dloss = -1e12
            elif dloss > 1e12:
                dloss = 1e12
            update = -eta * dloss
            update *= 1.0 * 1.0  # class weight × sample weight
            if l2:
                c = max(0.0, 1.0 - (1.0 * eta * alpha))
                wscale *= c
                sq_norm *= c * c
                if wscale < 1e-9:
                    for f in range(p):
                        w[f] *= wscale
                    wscale = 1.0
            if update != 0.0:
                step = update / wscale
                s0 = 0.0
                s1 = 0.0
                s2 = 0.0
                s3 = 0.0
                f = 0
                while f + 4 <= p:
                    w[f] += X[k, f] * step
                    w[f + 1] += X[k, f + 1] * step
                    w[f + 2] += X[k, f + 2] * step
                    w[f + 3] += X[k, f + 3] * step
                    s0 += w[f] * w[f]
                    s1 += w[f + 1] * w[f + 1]
                    s2 += w[f + 2] * w[f + 2]
                    s3 += w[f + 3] * w[f + 3]
                    f += 4
                while f < p:
                    w[f] += X[k, f] * step
                    s0 += w[f] * w[f]
                    f += 1
                sq_norm = ((s0 + s1) + (s2 + s3)) * (wscale * wscale)
            if fit_intercept and update != 0.0:
                intercept += update * 1.0
            t += 1
        finite = math.isfinite(intercept)
        for f in range(p):
            finite = finite and math.isfinite(w[f])
        if not finite:
            return intercept, epoch + 1, 1
        # scikit-learn ≥ 1.8 compares the mean objective with best - tol, earlier releases the
        # summed loss with best - tol·n; the same expressions here, for the same rounding.
        if stop_on_objective:
            epoch_objective = objective_sum / n
            epoch_slack = slack / n
            margin = tol
        else:
            epoch_objective = objective_sum
            epoch_slack = slack
            margin = tol * n
        # The summation of objective_sum itself adds at most n·u relative on top of the slack.
        if epoch_slack > 0:
            epoch_slack += 1e-13 * abs(epoch_objective)
        both = epoch_slack + best_slack
        if (
            both > 0
            and tol > -math.inf
            and abs(epoch_objective - (best_objective - margin)) <= both
        ):
            return intercept, epoch + 1, 2
        if both > 0 and abs(epoch_objective - best_objective) <= both:
            return intercept, epoch + 1, 2
        if tol > -math.inf and epoch_objective > best_objective - margin:
            no_improvement += 1
        else:
            no_improvement = 0
        if epoch_objective < best_objective:
            best_objective = epoch_objective
            best_slack = epoch_slack
        if no_improvement >= n_iter_no_change:
            break
    for f in range(p):
        w[f] *= wscale
    return intercept, epoch + 1, 0
