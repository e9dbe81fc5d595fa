"""The Nelder–Mead baseline of SPEC §6: a downhill simplex over the λ domain, with restarts.

The simplex lives in the unit cube of the declared domain, u = (λ - low) / (high - low). Between
restarts each step is that of ``scipy.optimize.minimize(method="Nelder-Mead")``, operation for
operation, so that from the same initial simplex, on a function whose points never leave the domain,
both evaluate the same sequence of points. The differences are the domain, the budget and the
restarts:

* a reflection or expansion that leaves the cube is not evaluated: it counts as the worst value,
  costs no trial, and the step goes on as scipy's would with that value (contractions and shrinks
  are convex combinations of simplex vertices, so they never leave the cube);
* where scipy stops because the simplex has collapsed, or where the best vertex has not improved for
  ``stall_iterations`` iterations, the search restarts around the best point found so far;
* it runs until ``n_trials`` points are evaluated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import numpy as np

from optuna_boxcox.samplers._driver import Batch
from optuna_boxcox.samplers._driver import is_positive_int
from optuna_boxcox.samplers._plan import PlanSampler

if TYPE_CHECKING:
    from collections.abc import Generator
    from collections.abc import Mapping

    from optuna.distributions import FloatDistribution
    from optuna.samplers import BaseSampler

    from optuna_boxcox._study._space import LambdaSpace

#: A restart step never exceeds half the cube, so one of x ± step stays inside along every axis.
MAX_STEP = 0.5
#: ``n_trials=None`` means this many trials per λ (scipy's default ``maxfev = 200 · N``).
TRIALS_PER_LAMBDA = 200
#: ``stall_iterations=None`` means this many iterations per λ without a better best vertex.
STALL_ITERATIONS_PER_LAMBDA = 20
START_POINTS = ("initial", "center")


class _BudgetSpent(Exception):
    """The trial budget is used up (the role of scipy's ``_MaxFuncCallError``)."""


def coefficients(n: int, adaptive: bool) -> tuple[float, float, float, float]:
    """(ρ, χ, ψ, σ): reflection, expansion, contraction, shrink — as scipy computes them.

    Standard: (1, 2, 1/2, 1/2). Adaptive (Gao and Han 2012): (1, 1 + 2/n, 3/4 - 1/(2n), 1 - 1/n).
    """
    if adaptive:
        dim = float(n)
        return 1, 1 + 2 / dim, 0.75 - 1 / (2 * dim), 1 - 1 / dim
    return 1, 2, 0.5, 0.5


def initial_simplex(x0: np.ndarray, step: float, signs: np.ndarray | None = None) -> np.ndarray:
    """Vertex 0 is ``x0``, vertex k+1 is ``x0 + signs[k] · step · e_k`` (unit-cube coordinates).

    A vertex that would leave the cube takes the opposite sign instead.
    """
    x0 = np.asarray(x0, dtype=np.float64)
    n = len(x0)
    signs = np.ones(n) if signs is None else signs
    sim = np.empty((n + 1, n), dtype=np.float64)
    sim[0] = x0
    for k in range(n):
        y = np.array(x0, copy=True)
        moved = y[k] + signs[k] * step
        if not 0.0 <= moved <= 1.0:
            moved = y[k] - signs[k] * step
        y[k] = moved
        sim[k + 1] = y
    return sim


class _Evaluations:
    """Turns unit-cube points into plan batches; keeps the budget and the best point so far."""

    def __init__(self, space: LambdaSpace, n_trials: int, start: np.ndarray) -> None:
        self.space = space
        self.remaining = n_trials
        self.best_u = start.copy()
        self.best_f = np.inf  # minimised: f = -score
        self.restart = 0
        self.iteration = 0

    def to_lambda(self, u: np.ndarray) -> np.ndarray:
        return self.space.clip(self.space.low + u * (self.space.high - self.space.low))

    def evaluate(
        self, points: np.ndarray | list[np.ndarray], step: str
    ) -> Generator[Batch, list[float], np.ndarray]:
        """The values (to minimise) of ``points``; +inf, without a trial, for those outside the cube.

        Only as many points as the budget allows are evaluated; then :class:`_BudgetSpent` ends
        the search.
        """
        values = np.full(len(points), np.inf)
        inside = [i for i, u in enumerate(points) if np.all((u >= 0.0) & (u <= 1.0))]
        inside = inside[: self.remaining]
        if not inside:
            return values
        attrs = [
            {"restart": self.restart, "step": step, "candidate": c, "iteration": self.iteration}
            for c in range(len(inside))
        ]
        scores = yield Batch(
            [self.to_lambda(points[i]) for i in inside],
            attrs,
            self.to_lambda(self.best_u),
            -self.best_f,
        )
        for i, score in zip(inside, scores):
            values[i] = -float(score)
            if values[i] < self.best_f:  # strict: the first of equal values stays the best
                self.best_f, self.best_u = values[i], np.array(points[i], dtype=np.float64)
        self.remaining -= len(inside)
        if self.remaining <= 0:
            raise _BudgetSpent
        return values


def _sort(sim: np.ndarray, fsim: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # scipy's own ordering (np.argsort's default kind), so that ties are broken as scipy breaks them.
    ind = np.argsort(fsim)
    return np.take(sim, ind, 0), np.take(fsim, ind, 0)


def _collapsed(sim: np.ndarray, fsim: np.ndarray, xatol: float, fatol: float) -> bool:
    """scipy's convergence test with *or*: the simplex is small, or its values are (nearly) equal."""
    size = np.max(np.ravel(np.abs(sim[1:] - sim[0])))
    with np.errstate(invalid="ignore"):  # inf - inf when several vertices are worst
        spread = np.max(np.abs(fsim[0] - fsim[1:]))
    return bool(size <= xatol or spread <= fatol)


def _descend(
    evaluations: _Evaluations,
    sim: np.ndarray,
    fsim: np.ndarray,
    coefs: tuple[float, float, float, float],
    xatol: float,
    fatol: float,
    stall_iterations: int,
) -> Generator[Batch, list[float], None]:
    """Nelder–Mead iterations, statement for statement as scipy's ``_minimize_neldermead``, until
    the simplex collapses or the best vertex has not improved for ``stall_iterations`` iterations."""
    rho, chi, psi, sigma = coefs
    n = sim.shape[1]
    sim, fsim = _sort(*_sort(sim, fsim))  # scipy sorts twice before its first iteration
    stalled = 0
    while not _collapsed(sim, fsim, xatol, fatol) and stalled < stall_iterations:
        best = fsim[0]
        evaluations.iteration += 1
        xbar = np.add.reduce(sim[:-1], 0) / n
        xr = (1 + rho) * xbar - rho * sim[-1]
        (fxr,) = yield from evaluations.evaluate([xr], "reflect")
        if fxr < fsim[0]:
            xe = (1 + rho * chi) * xbar - rho * chi * sim[-1]
            (fxe,) = yield from evaluations.evaluate([xe], "expand")
            if fxe < fxr:
                sim[-1], fsim[-1] = xe, fxe
            else:
                sim[-1], fsim[-1] = xr, fxr
        elif fxr < fsim[-2]:
            sim[-1], fsim[-1] = xr, fxr
        else:
            if fxr < fsim[-1]:
                xc = (1 + psi * rho) * xbar - psi * rho * sim[-1]
                (fxc,) = yield from evaluations.evaluate([xc], "contract_outside")
                shrink = not fxc <= fxr
                if not shrink:
                    sim[-1], fsim[-1] = xc, fxc
            else:
                xcc = (1 - psi) * xbar + psi * sim[-1]
                (fxcc,) = yield from evaluations.evaluate([xcc], "contract_inside")
                shrink = not fxcc < fsim[-1]
                if not shrink:
                    sim[-1], fsim[-1] = xcc, fxcc
            if shrink:
                for j in range(1, n + 1):
                    sim[j] = sim[0] + sigma * (sim[j] - sim[0])
                fsim[1:] = yield from evaluations.evaluate(sim[1:], "shrink")
        sim, fsim = _sort(sim, fsim)
        stalled = 0 if fsim[0] < best else stalled + 1


def nelder_mead_search(
    space: LambdaSpace,
    *,
    n_trials: int,
    initial_step: float,
    start: str,
    adaptive: bool,
    xatol: float,
    fatol: float,
    stall_iterations: int,
    seed: int,
) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
    """Nelder–Mead with restarts (SPEC §6) as a plan; returns the best point and its score.

    The initial simplex (n + 1 points) and every shrink (n points) are one batch each; a reflection,
    expansion or contraction is a batch of one point. Run ``r`` ends when the simplex collapses
    (max |vertex - best vertex| ≤ ``xatol`` in the unit cube, or max |f - f_best| ≤ ``fatol``) or
    stalls; run ``r + 1`` starts from the simplex ``initial_simplex(best, step, signs)`` around the
    best point found so far, whose value is known (so a restart is a batch of n points). The step is
    ``initial_step`` again after a run that improved on the best point; after a run that did not, it
    doubles (back to ``initial_step`` once it would exceed half the cube), so that a flat region is
    left instead of re-evaluating the same simplex. The axis signs are drawn from ``seed``.
    """
    n = space.dim
    coefs = coefficients(n, adaptive)
    rng = np.random.default_rng(seed)
    if start == "center":
        x0 = np.full(n, 0.5)
    else:
        x0 = (space.initial - space.low) / (space.high - space.low)
    evaluations = _Evaluations(space, n_trials, x0)
    step = initial_step
    try:
        before = evaluations.best_f
        sim = initial_simplex(x0, step)
        fsim = yield from evaluations.evaluate(sim, "initial")
        while True:
            yield from _descend(evaluations, sim, fsim, coefs, xatol, fatol, stall_iterations)
            improved = evaluations.best_f < before
            step = initial_step if improved or 2 * step > MAX_STEP else 2 * step
            evaluations.restart += 1
            before = evaluations.best_f
            signs = rng.choice([-1.0, 1.0], size=n)
            sim = initial_simplex(evaluations.best_u, step, signs)
            fsim = np.empty(n + 1)
            fsim[0] = evaluations.best_f
            fsim[1:] = yield from evaluations.evaluate(sim[1:], "initial")
    except _BudgetSpent:
        pass
    return evaluations.to_lambda(evaluations.best_u), -evaluations.best_f


class NelderMeadSampler(PlanSampler):
    """Nelder–Mead's downhill simplex over the λ domain, with restarts, as an Optuna sampler.

    The baseline of SPEC §6. The simplex moves in the unit cube of the domain: its first vertex is
    the objective's starting point (the MLE λ) or the domain's centre, the others are one
    ``initial_step`` away along each axis. Between restarts every step is that of
    ``scipy.optimize.minimize(method="Nelder-Mead")`` (standard or, with ``adaptive=True``, Gao and
    Han's coefficients): from the same initial simplex, on a function whose simplex stays inside
    the domain, both evaluate the same points in the same order. A reflected or expanded point
    outside the domain is not evaluated; it counts as the worst value. When the simplex collapses
    (size ≤ ``xatol`` in the unit cube, or value spread ≤ ``fatol``) or the best vertex has not
    improved for ``stall_iterations`` iterations, the search restarts around the best point so far
    (see :func:`nelder_mead_search` for the restart step). After ``n_trials`` evaluations the
    sampler stops the study; :meth:`result` gives the best λ. The study's direction is honoured.

    The plan is replayed from the finished trials in the storage, so several workers can share a
    study and a killed process continues where it stopped. The ``n + 1`` points of an initial
    simplex and the ``n`` points of a shrink are evaluated concurrently; a reflection, expansion or
    contraction depends on the previous one, so meanwhile other workers wait. Each trial records
    ``restart``, ``step`` (``"initial"``, ``"reflect"``, ``"expand"``, ``"contract_outside"``,
    ``"contract_inside"``, ``"shrink"``), ``candidate`` (index in its batch), ``iteration`` and
    ``improved`` as user attributes.

    Example::

        import optuna
        from sklearn.datasets import load_breast_cancer
        from sklearn.naive_bayes import GaussianNB
        from optuna_boxcox import BoxCoxObjective
        from optuna_boxcox.samplers import NelderMeadSampler

        X, y = load_breast_cancer(return_X_y=True, as_frame=True)
        sampler = NelderMeadSampler(n_trials=300)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        study.optimize(BoxCoxObjective(X, y, GaussianNB()))   # stops after 300 trials
        print(sampler.result(study).params)

    Args:
        n_trials: Evaluations before the sampler stops the study; ``None`` means 200 per λ
            (scipy's default ``maxfev``). A study can be continued with a larger number.
        initial_step: Edge of the initial simplex in unit-cube coordinates (0.05 is scipy's
            ``nonzdelt``, 5 % of the domain's width; unlike scipy's default simplex it does not
            depend on the starting point's magnitude). At most 0.5.
        start: ``"initial"``: the space's starting point (the objective's MLE λ, or
            ``initial_params``); ``"center"``: the centre of the domain.
        adaptive: Gao and Han's dimension-dependent coefficients (scipy's ``adaptive=True``).
        xatol: The simplex has collapsed when no vertex is farther than this from the best one in
            any unit-cube coordinate (scipy's ``xatol``)...
        fatol: ...or when no vertex's value differs from the best by more than this (scipy's
            ``fatol``; scipy stops when both hold, this sampler restarts when either does).
        stall_iterations: Restart after this many iterations without a better best vertex;
            ``None`` means 20 per λ.
        seed: Seed of the restart simplices' orientations.
        search_space: λ parameters (name → FloatDistribution) when the objective is not a
            :class:`~optuna_boxcox.BoxCoxObjective`, which records its own space in the study.
        initial_params: The starting point (default: the objective's MLE point; λ = 1 for a
            plain ``search_space``).
        independent_sampler: Samples parameters outside the λ space (default: random).
        max_retries: Times a failed trial's position is re-run before it counts as the worst value.
    """

    name = "nelder-mead"

    def __init__(
        self,
        *,
        n_trials: int | None = None,
        initial_step: float = 0.05,
        start: str = "initial",
        adaptive: bool = False,
        xatol: float = 1e-4,
        fatol: float = 1e-4,
        stall_iterations: int | None = None,
        seed: int = 0,
        search_space: Mapping[str, FloatDistribution] | None = None,
        initial_params: Mapping[str, float] | None = None,
        independent_sampler: BaseSampler | None = None,
        max_retries: int = 3,
    ) -> None:
        for name, value in dict(n_trials=n_trials, stall_iterations=stall_iterations).items():
            if value is not None and not is_positive_int(value):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        if not 0.0 < float(initial_step) <= MAX_STEP:
            raise ValueError(f"initial_step must lie in (0, {MAX_STEP}], got {initial_step!r}")
        if start not in START_POINTS:
            raise ValueError(f"start must be one of {START_POINTS}, got {start!r}")
        for name, value in dict(xatol=xatol, fatol=fatol).items():
            if not float(value) >= 0.0:
                raise ValueError(f"{name} must be a non-negative number, got {value!r}")
        super().__init__(
            search_space=search_space,
            initial_params=initial_params,
            seed=seed,
            independent_sampler=independent_sampler,
            max_retries=max_retries,
        )
        self.n_trials = None if n_trials is None else int(n_trials)
        self.initial_step = float(initial_step)
        self.start = start
        self.adaptive = bool(adaptive)
        self.xatol = float(xatol)
        self.fatol = float(fatol)
        self.stall_iterations = None if stall_iterations is None else int(stall_iterations)

    def settings(self) -> dict[str, Any]:
        return {
            "n_trials": self.n_trials,
            "initial_step": self.initial_step,
            "start": self.start,
            "adaptive": self.adaptive,
            "xatol": self.xatol,
            "fatol": self.fatol,
            "stall_iterations": self.stall_iterations,
            "seed": self._seed,
        }

    def _continues(self, recorded: Mapping[str, Any]) -> bool:
        # A larger budget replays the same plan and extends it; a smaller one would drop trials.
        mine = {k: v for k, v in self.settings().items() if k != "n_trials"}
        theirs = {k: v for k, v in recorded.items() if k != "n_trials"}
        if mine != theirs:
            return False
        old = recorded.get("n_trials")
        if self.n_trials is None or old is None:
            return self.n_trials == old
        return self.n_trials >= old

    def budget(self, n_params: int) -> int:
        return self.n_trials if self.n_trials is not None else TRIALS_PER_LAMBDA * n_params

    def _plan(self, space: LambdaSpace) -> Generator[Batch, list[float], tuple[np.ndarray, float]]:
        stall = self.stall_iterations
        return nelder_mead_search(
            space,
            n_trials=self.budget(space.dim),
            initial_step=self.initial_step,
            start=self.start,
            adaptive=self.adaptive,
            xatol=self.xatol,
            fatol=self.fatol,
            stall_iterations=STALL_ITERATIONS_PER_LAMBDA * space.dim if stall is None else stall,
            seed=self._seed,
        )
