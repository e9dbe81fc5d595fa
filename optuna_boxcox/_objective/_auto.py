"""``auto``'s cost model and decision: price the search from the classifier's cost class and the
data's shape, then choose exact or halving (:func:`choose_fidelity`).

Nothing is timed: a timing depends on the machine and on what else runs on it, and a choice made
from one gave other rungs, hence other λ, on a busy machine than on a quiet one. The price of a
new point on ``n`` rows is the cost class's (:class:`~optuna_boxcox._objective._evaluators.CostClass`,
seconds on the reference machine) times the inner folds; a classifier the evaluators' registry
does not know is priced by ``GENERIC_COST``. The rule's inputs are recorded with the choice.

This module is the cost model's one home; what a study records of a fidelity (the rungs, the
request, the choice and why) is :mod:`optuna_boxcox._study._fidelity`'s.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import math
from typing import Any

from optuna_boxcox._objective._evaluators import CostClass
from optuna_boxcox._study._fidelity import DEFAULT_BUDGET_SECONDS
from optuna_boxcox._study._fidelity import DEFAULT_ETA
from optuna_boxcox._study._fidelity import AutoFidelity
from optuna_boxcox._study._fidelity import Fidelity
from optuna_boxcox._study._fidelity import FidelityChoice
from optuna_boxcox._study._fidelity import minutes_text
from optuna_boxcox._study._fidelity import rung_floor
from optuna_boxcox._study._plan_size import PlanSize

#: ``auto`` searches exactly when the exact search is estimated to take at most this long: the
#: halving search would save seconds and cost the fidelity of the scores. Not a minute: an
#: exact search estimated just under one can take twice as long where halving takes a fifth.
EXACT_SECONDS = 20.0
#: ``auto`` chooses halving only when it is estimated at most this share of the exact time; with
#: a cost that hardly grows with the rows, the rungs below the top would add more than they save.
HALVING_SHARE = 0.5
#: Points a search with a capped top rung scores on all rows at its end (the best found and
#: the start point, see the runner's confirmation): part of the time budget.
CONFIRMED_POINTS = 2
#: Positions per λ assumed when the plan's size is unknown (Optuna's samplers): the paper's
#: iterative search takes 44 per λ (4 epochs × 11 grid points) of which about 30 are new points.
TYPICAL_POSITIONS_PER_FEATURE = 30
#: Candidates per batch assumed when the sampler does not say: the paper's sweeps of 11 points.
TYPICAL_BATCH = 11
#: Seconds beyond the rows priced grow as a power law through the last FIT_POINTS of them.
FIT_POINTS = 3
#: The short sweep a sweep evaluator's ``sweep_ratio`` compares a whole one with.
SHORT_SWEEP_POINTS = 2
#: The exponent beyond the rows priced is kept in this range: a fit reads every row (at least
#: linear), and no paper classifier grows faster than cubic.
EXPONENT_RANGE = (1.0, 3.0)
#: Rows at which the cost class is priced for the cost model (then every doubling up to the
#: data's rows): the model interpolates between them in log-log, which is exact for a power law.
PRICE_FROM_ROWS = 100
#: The default searches a stratified sample where the exact search on all rows is priced above
#: this many passes of the classifier over the data: past it the search, the MLE anchor and the
#: gate run on the sample and only the transform and the final fit see every row, so that a
#: fit costs a few passes over the data (docs/performance_log.md, "The data users have").
SAMPLE_PASSES = 3.0
#: A pass is priced on at least this many rows: on fewer, the budget is a million rows' shrunk by
#: :data:`SAMPLE_GROWTH` (the fit's cost then grows gently with the rows, and small data stay
#: exact).
PASS_ROWS = 1_000_000
#: A pass is priced linearly in the rows from the classifier's cost on this many: one pass over
#: the data, whatever the classifier's own exponent (k-NN's leave-one-out scan is quadratic).
PASS_PRICED_AT = 1_000
#: The fewest rows a sample has: the gate's folds and the λ of 20-odd features need a few
#: thousand (and data of the paper's size are never sampled).
MIN_SAMPLE_ROWS = 2_000
#: Below :data:`PASS_ROWS` the budget shrinks as ``(n / PASS_ROWS) ** SAMPLE_GROWTH``: the sample
#: grows with the rows up to a million, so that a fit never costs more on fewer rows (the
#: search's cost on a sample of one size moves with the data by more than the passes add).
SAMPLE_GROWTH = 0.25


@dataclass(frozen=True)
class CostModel:
    """Seconds per evaluation on n rows, from priced ``(rows, seconds)`` (a cost class's).

    Between the rows priced, interpolated in log-log; below the fewest, the cost of those (a fit
    has a floor: the MLP's iterations); above the most, ``a·n^b`` through the last, b the larger
    of the least-squares slope in log-log of the last :data:`FIT_POINTS` and the slope of the
    last two, kept in :data:`EXPONENT_RANGE` (a single point: linear). The cost never falls as
    the rows grow. Scalar ``math`` only: the choice must not move with a CPU's vector units.

    ``sweep_ratio``: for an evaluator that shares a sweep's work, the seconds per point of a
    sweep of ``batch`` over those of one of :data:`SHORT_SWEEP_POINTS`; None otherwise. Such a
    sweep costs a fixed part (k-NN: the distances over the other columns, quadratic in the rows)
    plus a part per point: :meth:`batch_seconds`. A halving search scores one or three
    candidates on its larger rungs: priced per point, a k-NN search is priced far too cheap."""

    priced: tuple[tuple[int, float], ...]
    sweep_ratio: float | None = None
    batch: int = TYPICAL_BATCH

    @property
    def exponent(self) -> float:
        points = self.priced[-FIT_POINTS:]
        if len(points) < 2:
            return EXPONENT_RANGE[0]
        x = [math.log(rows) for rows, _ in points]
        y = [math.log(max(seconds, 1e-9)) for _, seconds in points]
        mx, my = sum(x) / len(x), sum(y) / len(y)
        fitted = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
        slope = max(fitted, (y[-1] - y[-2]) / (x[-1] - x[-2]))
        return float(min(max(slope, EXPONENT_RANGE[0]), EXPONENT_RANGE[1]))

    def seconds(self, n: float) -> float:
        """Seconds per new point on ``n`` rows (in a sweep of ``batch`` for a sweep evaluator)."""
        priced = sorted(self.priced)
        rows = [r for r, _ in priced]
        # The cost never falls as the rows grow: each is capped by the cost of more rows.
        floor = [max(s, 1e-9) for _, s in priced]
        for k in range(len(floor) - 2, -1, -1):
            floor[k] = min(floor[k], floor[k + 1])
        if n >= rows[-1]:
            return float(floor[-1] * (n / rows[-1]) ** self.exponent)
        if n <= rows[0]:
            return float(floor[0])
        k = next(k for k in range(1, len(rows)) if n <= rows[k])
        t = (math.log(n) - math.log(rows[k - 1])) / (math.log(rows[k]) - math.log(rows[k - 1]))
        return math.exp((1 - t) * math.log(floor[k - 1]) + t * math.log(floor[k]))

    def batch_seconds(self, n: float, m: float) -> float:
        """Seconds to score ``m`` new points together on ``n`` rows: ``m`` times
        :meth:`seconds`, or, for a sweep evaluator, the sweep's fixed part plus ``m`` times its
        part per point, both read off the sweeps of ``batch`` and of
        :data:`SHORT_SWEEP_POINTS` points."""
        if m <= 0:
            return 0.0
        per_point = self.seconds(n)
        short = SHORT_SWEEP_POINTS
        if self.sweep_ratio is None or self.batch <= short or self.sweep_ratio <= 0:
            return m * per_point
        whole = self.batch  # a sweep of ``batch`` costs batch·per_point
        few = short / self.sweep_ratio  # ... and one of ``short`` costs few·per_point
        point = max(0.0, (whole - few) / (whole - short))
        fixed = max(0.0, few - short * point)
        return per_point * (fixed + m * point)


@dataclass(frozen=True)
class Pricing:
    """What ``auto`` prices a search from: the classifier's cost class and the data's shape.

    Args:
        cost: The cost class (seconds a new point costs on the reference machine).
        features: Columns of the data (λ parameters).
        classes: Classes of the labels.
        folds: Fits a score takes (1 for resubstitution, else the inner folds).
        classifier: The classifier's class name, for the record.
    """

    cost: CostClass
    features: int
    classes: int
    folds: int = 1
    classifier: str = ""

    def seconds(self, rows: int) -> float:
        """Seconds a new point costs on ``rows`` rows."""
        return self.folds * self.cost.seconds(rows, self.features, self.classes)

    def model(self, n_samples: int) -> CostModel:
        """The cost model of :func:`choose_fidelity`, priced at 100, 200, … rows and at all."""
        rows, priced = min(PRICE_FROM_ROWS, n_samples), []
        while rows < n_samples:
            priced.append((rows, self.seconds(rows)))
            rows *= 2
        priced.append((n_samples, self.seconds(n_samples)))
        return CostModel(tuple(priced), self.cost.sweep_ratio, TYPICAL_BATCH)

    def to_attrs(self) -> dict[str, Any]:
        """The rule's inputs, recorded with the choice."""
        return {
            "classifier": self.classifier,
            "cost_class": self.cost.to_attrs(),
            "features": int(self.features),
            "classes": int(self.classes),
            "folds": int(self.folds),
        }


def choose_auto(
    request: AutoFidelity, pricing: Pricing, n_samples: int, size: PlanSize
) -> FidelityChoice:
    """Price and choose: :func:`choose_fidelity` with the cost model of ``pricing`` and the
    plan's size from the request, else from the plan (``size``), else the typical one. Exact
    where the rows are too few for two rungs. A function of its arguments alone."""
    positions, batch, new_points = _planned(request, size)
    sizes = dict(positions=positions, batch=batch, new_points=new_points, default=request.default)
    inputs = pricing.to_attrs()
    floor = request.eta * rung_floor(pricing.classes)
    if n_samples < floor:
        # Too few rows for two rungs: exact is the only choice.
        return FidelityChoice(None, "auto", f"fewer than {floor:,} rows", inputs=inputs, **sizes)
    choice = choose_fidelity(
        n_samples,
        pricing.classes,
        pricing.model(n_samples),
        positions=positions,
        batch=batch,
        budget_seconds=request.budget_seconds,
        eta=request.eta,
        new_points=new_points,
    )
    return dataclasses.replace(choice, default=request.default, inputs=inputs)


def _planned(request: AutoFidelity, size: PlanSize) -> tuple[int, int, int]:
    """The positions, batch and expected new points a search is priced for: the request's, else
    the plan's, else the typical ones."""
    positions = request.positions or size.trials or TYPICAL_POSITIONS_PER_FEATURE * size.params
    batch = request.batch or size.batch or TYPICAL_BATCH
    return positions, batch, expected_new_points(positions, size.params, batch)


def _priced(
    cost: CostModel, n_samples: int, positions: int, batch: int, exact: float, new_points: Any
) -> dict[str, Any]:
    """What every priced choice records of its cost model and plan."""
    return dict(
        priced=cost.priced,
        fit_seconds=cost.seconds(n_samples),
        exponent=round(cost.exponent, 3),
        positions=positions,
        batch=batch,
        exact_minutes=round(exact / 60, 2),
        new_points=new_points,
    )


def sample_rows(
    request: AutoFidelity, pricing: Pricing, n_samples: int, size: PlanSize
) -> FidelityChoice | None:
    """The choice of the default that searches a stratified sample instead of all ``n_samples``
    rows (its ``sample``, the rows): the most rows (at least :data:`MIN_SAMPLE_ROWS`) whose exact search
    of the plan ``size`` is priced within the budget of :func:`sample_budget`. None where the
    exact search on all rows fits it (a one-trial plan always does). A function of its arguments
    alone, as :func:`choose_auto`."""
    positions, batch, new_points = _planned(request, size)
    budget = sample_budget(pricing, n_samples)
    cost = pricing.model(n_samples)
    exact = exact_seconds(cost, n_samples, new_points, batch)
    if size.one_trial or exact <= budget or n_samples <= MIN_SAMPLE_ROWS:
        return None
    low, high = MIN_SAMPLE_ROWS, n_samples - 1  # the estimate grows with the rows: bisect
    while low < high:
        middle = (low + high + 1) // 2
        fits = exact_seconds(cost, middle, new_points, batch) <= budget
        low, high = (middle, high) if fits else (low, middle - 1)
    searched = exact_seconds(cost, low, new_points, batch)
    return FidelityChoice(
        None,
        "auto",
        f"searching all rows is priced over the budget of {n_samples:,} rows "
        f"(~{minutes_text(budget / 60)}: {SAMPLE_PASSES:g} passes of the classifier over "
        f"{max(n_samples, PASS_ROWS):,} rows{_growth_text(n_samples)})",
        **_priced(cost, n_samples, positions, batch, exact, new_points),
        search_minutes=round(searched / 60, 2),
        default=request.default,
        inputs=pricing.to_attrs(),
        sample=low,
    )


def sample_budget(pricing: Pricing, n_samples: int) -> float:
    """The seconds the default's search of ``n_samples`` rows may be priced at before it searches
    a sample: :data:`SAMPLE_PASSES` passes of the classifier over ``max(n_samples, PASS_ROWS)``
    rows, times ``(n_samples / PASS_ROWS) ** SAMPLE_GROWTH`` below :data:`PASS_ROWS`."""
    one_pass = pricing.seconds(PASS_PRICED_AT) * max(n_samples, PASS_ROWS) / PASS_PRICED_AT
    return SAMPLE_PASSES * one_pass * (min(n_samples, PASS_ROWS) / PASS_ROWS) ** SAMPLE_GROWTH


def _growth_text(n_samples: int) -> str:
    if n_samples >= PASS_ROWS or SAMPLE_GROWTH == 0:
        return ""
    return f" times ({n_samples:,} / {PASS_ROWS:,})^{SAMPLE_GROWTH:g}"


def halving_seconds(
    cost: CostModel, rungs: tuple[int, ...], points: float, batch: int, eta: int
) -> float:
    """Estimated time of a halving search of ``points`` new points: per batch of ``batch``
    candidates, all scored at the first rung and ``max(1, alive // eta)`` promoted to each next
    one, scored together (a batch of points scored before costs nothing, so only the new ones
    count: ``points / batch`` batches)."""
    per_batch, alive = 0.0, max(1, batch)
    for rows in rungs:
        per_batch += cost.batch_seconds(rows, alive)
        alive = max(1, alive // eta)
    return per_batch * points / max(1, batch)


def exact_seconds(cost: CostModel, n_samples: int, points: float, batch: int) -> float:
    """Estimated time of the exact search of ``points`` new points in batches of ``batch``."""
    return cost.batch_seconds(n_samples, max(1, batch)) * points / max(1, batch)


def expected_new_points(positions: int, n_params: int, batch: int) -> int:
    """The new points (fits) a search of ``positions`` plan positions over ``n_params``
    parameters in batches of ``batch`` is estimated to score: the geometric middle of the fewest
    (its first pass, a batch per parameter, all new) and the most (every position new), so that
    the estimate is within ``sqrt(positions / first pass)`` of what any search scores — 2× for
    the paper's four epochs. A search whose positions fit one pass (Optuna's samplers: one
    batch of all their trials) counts every position.

    How many later positions are new is not known before the search: a later sweep repeats the
    current point, and all of its points when no λ moved since the parameter's last sweep (a
    cached score, no fit); the share differs by classifier and data by an order of magnitude
    (docs/performance_log.md). So a search is *planned* for the most (:func:`choose_fidelity` caps
    the top rung so that it fits the time budget: a search must not overrun it twofold) and
    *estimated* for this middle."""
    first = min(positions, max(1, n_params) * max(1, batch))
    return math.ceil(math.sqrt(first * positions))


def choose_fidelity(
    n_samples: int,
    n_classes: int,
    cost: CostModel,
    *,
    positions: int,
    batch: int = TYPICAL_BATCH,
    budget_seconds: float = DEFAULT_BUDGET_SECONDS,
    eta: int = DEFAULT_ETA,
    new_points: int | None = None,
) -> FidelityChoice:
    """What ``auto`` chooses from a cost model (pure: the pricing is ``_auto``'s).

    Times are *estimated* for ``new_points`` new points (default: every one of ``positions``)
    and *planned* for the most, every position a new point (see :func:`expected_new_points`):
    the budget holds whatever share of the later sweeps turns out new.

    Exact when the exact search is estimated at most :data:`EXACT_SECONDS` (halving does not
    pay) or the data are too few for two rungs above :func:`rung_floor`. Otherwise halving over
    as many rungs as the floor allows (``min_rows = ceil(n / eta^k)``, so the rungs grow to all
    rows) when it saves at least half the time; exact when it does not and the exact search fits
    ``budget_seconds``. A search that would not fit the budget gets its top rung capped to the
    most rows whose search, and the confirmation of its result on all rows, fits it (where even
    the capped search is no shorter than the exact one: exact).
    """
    points = positions if new_points is None else new_points
    # Both estimates are linear in the points scored: the most (every position new) times the
    # share of new points is the estimate.
    share = points / max(1, positions)
    exact_most = exact_seconds(cost, n_samples, positions, batch)
    exact = exact_most * share
    floor = rung_floor(n_classes)
    made = _priced(cost, n_samples, positions, batch, exact, new_points)
    if n_samples < eta * floor:
        return FidelityChoice(None, "auto", f"fewer than {eta * floor} rows", **made)
    if exact <= EXACT_SECONDS:
        return FidelityChoice(None, "auto", f"under {EXACT_SECONDS:.0f} s exact", **made)
    k = 1
    while math.ceil(n_samples / eta ** (k + 1)) >= floor:
        k += 1
    fidelity = Fidelity(math.ceil(n_samples / eta**k), eta)
    rungs = fidelity.rungs(n_samples)
    halving_most = halving_seconds(cost, rungs, positions, batch, eta)
    halving = halving_most * share
    exact_choice = FidelityChoice(
        None,
        "auto",
        "halving would not save half the time",
        search_minutes=made["exact_minutes"],
        most_minutes=round(exact_most / 60, 2),
        **made,
    )
    pays = halving <= HALVING_SHARE * exact
    if not pays and exact_most <= budget_seconds:
        return exact_choice
    reason = "halving pays"
    if halving_most > budget_seconds:
        # The search's result and start point are then scored on all rows too (confirmed).
        confirming = CONFIRMED_POINTS * cost.seconds(n_samples)
        search_budget = budget_seconds - confirming
        fidelity = _capped(fidelity, n_samples, cost, positions, batch, search_budget)
        rungs = fidelity.rungs(n_samples)
        searched = halving_seconds(cost, rungs, positions, batch, eta)
        halving, halving_most = searched * share + confirming, searched + confirming
        fits = "to fit" if halving_most <= budget_seconds else "as far as it goes, still over"
        reason = f"top rung capped {fits} {budget_seconds / 60:.0f} min; confirmed on all rows"
    if not pays and halving_most >= exact_most:
        # Over the budget either way, and the rungs below a capped top would not shorten it.
        return exact_choice
    made["search_minutes"] = round(halving / 60, 2)
    made["most_minutes"] = round(halving_most / 60, 2)
    return FidelityChoice(fidelity, "auto", reason, **made)


def _capped(
    fidelity: Fidelity,
    n_samples: int,
    cost: CostModel,
    points: float,
    batch: int,
    budget_seconds: float,
) -> Fidelity:
    """The fidelity with the most top rows (at least two rungs) whose search of ``points`` fits
    the budget, by bisection (the estimate grows with the top rows); the smallest when none
    fits."""

    def estimate(top: int) -> float:
        capped = Fidelity(fidelity.min_rows, fidelity.eta, top)
        return halving_seconds(cost, capped.rungs(n_samples), points, batch, capped.eta)

    low, high = fidelity.min_rows * fidelity.eta, n_samples - 1
    if estimate(low) > budget_seconds:
        return Fidelity(fidelity.min_rows, fidelity.eta, low)
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if estimate(middle) <= budget_seconds else (low, middle - 1)
    return Fidelity(fidelity.min_rows, fidelity.eta, low)
