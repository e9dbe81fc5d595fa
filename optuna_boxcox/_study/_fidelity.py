"""Rows as the fidelity: candidates scored on growing stratified row subsets (successive halving).

A search with a :class:`Fidelity` scores each candidate first on ``min_rows`` rows, promotes the
best ``1/eta`` of them to ``eta`` times more rows, and so on up to the top rung (all rows, unless
capped). The rows of every rung are a stratified subset drawn once; the transform's [1, 2] scaling
and the MLE start point come from all rows, so a λ means the same transform at every rung.

``fidelity="auto"`` (:class:`AutoFidelity`) chooses from a price instead of a guess: the
classifier's cost class (seconds a new point costs on the reference machine, by rows, features and
classes, in the evaluators' registry) is the cost model, and the search's time is estimated exact
and with halving (:func:`choose_fidelity`), counting the new points the search will score
(:func:`expected_new_points`), not its plan's positions. Nothing is timed, so the choice is a
function of the data's shape, the classifier and the settings alone (``_auto``). What was chosen,
and from which inputs, is a :class:`FidelityChoice`, recorded in the study so that a resumed search
or another worker uses the same rungs. ``auto`` is the default of a new study (decided in the
lifecycle's ``plan_search``).
"""

from __future__ import annotations

from dataclasses import dataclass
import math
from typing import Any

import numpy as np

#: A spec's fidelity when none was asked for: the lifecycle's ``plan_search`` decides it (the
#: fidelity a resumed study was made with, else ``auto``).
DEFAULT_REQUEST = "default"
#: Optuna's default reduction factor of successive halving.
DEFAULT_ETA = 3
#: No rung scores on fewer rows than this: below it one row moves the accuracy by over half a
#: percent, and the ranking of a sweep's candidates is mostly noise.
MIN_RUNG_ROWS = 200
#: ... nor on fewer than this many rows per class (a rare class must still be learnable).
MIN_RUNG_ROWS_PER_CLASS = 10
#: ``auto`` searches exactly when the exact search is estimated to take at most this long: the
#: halving search would save seconds and cost the fidelity of the scores. Not a minute: an
#: exact search estimated just under one can take twice as long where halving takes a fifth.
EXACT_SECONDS = 20.0
#: ``auto`` chooses halving only when it is estimated at most this share of the exact time; with
#: a cost that hardly grows with the rows, the rungs below the top would add more than they save.
HALVING_SHARE = 0.5
#: Time ``auto`` plans a search for: a halving search estimated longer gets its top rung capped
#: to the most rows that fit (the result is then confirmed on all rows). Chosen so that with
#: the guarded default's gate and start-up a default search ends within a quarter of an hour.
DEFAULT_BUDGET_SECONDS = 12 * 60.0
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


@dataclass(frozen=True)
class Fidelity:
    """Successive halving over stratified row subsets (Optuna's semantics).

    Args:
        min_rows: Rows of the first rung (Optuna's ``min_resource``).
        eta: Reduction factor (Optuna's ``reduction_factor``): a rung has ``eta`` times the rows
            of the one below, and ``1/eta`` of its candidates go up.
        top_rows: Rows of the last rung; None for all rows of the objective.
    """

    min_rows: int
    eta: int = DEFAULT_ETA
    top_rows: int | None = None

    def __post_init__(self) -> None:
        if not is_int(self.min_rows) or self.min_rows < 2:
            raise ValueError(
                f"fidelity min_rows must be an int of at least 2, got {self.min_rows!r}"
            )
        if not is_int(self.eta) or self.eta < 2:
            raise ValueError(f"fidelity eta must be an int of at least 2, got {self.eta!r}")
        if self.top_rows is not None and (
            not is_int(self.top_rows) or self.top_rows < self.min_rows
        ):
            raise ValueError(
                f"fidelity top_rows must be None or an int of at least min_rows "
                f"({self.min_rows}), got {self.top_rows!r}"
            )

    def rungs(self, n_samples: int) -> tuple[int, ...]:
        """Increasing row counts ``min_rows·eta^k`` below the top, then the top (all rows unless
        capped)."""
        top = n_samples if self.top_rows is None else min(self.top_rows, n_samples)
        rows = []
        r = self.min_rows
        while r < top:
            rows.append(r)
            r *= self.eta
        return (*rows, top)

    def promoted(self, n_alive: int) -> int:
        """How many of ``n_alive`` candidates go up one rung: ``max(1, n_alive // eta)``."""
        return max(1, n_alive // self.eta)

    def to_attrs(self) -> dict[str, Any]:
        """JSON for the study and the search spec."""
        return {"min_rows": int(self.min_rows), "eta": int(self.eta), "top_rows": self.top_rows}

    @classmethod
    def from_attrs(cls, attrs: Any) -> Fidelity:
        return cls(attrs["min_rows"], attrs.get("eta", DEFAULT_ETA), attrs.get("top_rows"))

    def describe(self, n_samples: int) -> str:
        """``"halving from 556 to 5,000 rows, η=3"``."""
        rungs = self.rungs(n_samples)
        return f"halving from {rungs[0]:,} to {rungs[-1]:,} rows, η={self.eta}"


@dataclass(frozen=True)
class AutoFidelity:
    """Ask for the fidelity to be chosen from the classifier's priced cost (see
    :func:`choose_fidelity`).

    Args:
        positions: Candidates the search will score; None: the sampler's plan when it knows it,
            else :data:`TYPICAL_POSITIONS_PER_FEATURE` per parameter.
        batch: Candidates halved together (a sweep); None: the sampler's grid size when it has
            one, else :data:`TYPICAL_BATCH`.
        budget_seconds: Time to plan the search for (the top rung is capped to fit it).
        eta: The reduction factor of a halving search.
        default: Not asked for: the default of a new study (the choice says so).
    """

    positions: int | None = None
    batch: int | None = None
    budget_seconds: float = DEFAULT_BUDGET_SECONDS
    eta: int = DEFAULT_ETA
    default: bool = False


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
class FidelityChoice:
    """The fidelity a search runs with, and why: what the study records.

    Attributes:
        fidelity: The halving's rungs, or None for exact.
        requested: ``"auto"`` (chosen here from the measurements) or ``"given"``.
        reason: Why, in a few words (for ``describe`` and ``search``'s line).
        priced: ``(rows, seconds per evaluation)`` by the cost class, for ``auto``.
        inputs: The rule's inputs for ``auto`` (the cost class, features, classes, folds).
        exponent: Of the fitted power law.
        positions, batch: What the estimates assumed.
        new_points: The new points the estimates counted (:func:`expected_new_points`).
        exact_minutes, search_minutes: Estimated time of the exact search and of the one chosen.
        most_minutes: The chosen search's time were every position a new point: what the
            budget was planned for.
        default: ``auto`` was not asked for: it is the default of a new study.
    """

    fidelity: Fidelity | None
    requested: str = "given"
    reason: str = ""
    priced: tuple[tuple[int, float], ...] = ()
    exponent: float | None = None
    positions: int | None = None
    batch: int | None = None
    exact_minutes: float | None = None
    search_minutes: float | None = None
    new_points: int | None = None
    default: bool = False
    most_minutes: float | None = None
    inputs: dict[str, Any] | None = None

    def to_attrs(self) -> dict[str, Any]:
        attrs = {
            "fidelity": None if self.fidelity is None else self.fidelity.to_attrs(),
            "requested": self.requested,
            "reason": self.reason,
            "priced": [[int(r), float(s)] for r, s in self.priced],
            "exponent": self.exponent,
            "positions": self.positions,
            "batch": self.batch,
            "exact_minutes": self.exact_minutes,
            "search_minutes": self.search_minutes,
        }
        # Only where there is something to say: choices recorded before keep their record.
        if self.new_points is not None:
            attrs["new_points"] = int(self.new_points)
        if self.default:
            attrs["default"] = True
        if self.most_minutes is not None:
            attrs["most_minutes"] = self.most_minutes
        if self.inputs is not None:
            attrs["inputs"] = self.inputs
        return attrs

    @classmethod
    def from_attrs(cls, attrs: Any) -> FidelityChoice:
        fidelity = attrs.get("fidelity")
        return cls(
            None if fidelity is None else Fidelity.from_attrs(fidelity),
            requested=attrs.get("requested", "given"),
            reason=attrs.get("reason", ""),
            # Choices recorded before the rule was priced kept their timings as "measured".
            priced=tuple(
                (int(r), float(s)) for r, s in attrs.get("priced") or attrs.get("measured") or ()
            ),
            inputs=attrs.get("inputs"),
            exponent=attrs.get("exponent"),
            positions=attrs.get("positions"),
            batch=attrs.get("batch"),
            exact_minutes=attrs.get("exact_minutes"),
            search_minutes=attrs.get("search_minutes"),
            new_points=attrs.get("new_points"),
            default=bool(attrs.get("default", False)),
            most_minutes=attrs.get("most_minutes"),
        )

    def summary(self, n_samples: int, classifier: str) -> str:
        """One line: ``"halving from 556 to 5,000 rows, η=3 (SVC ~1.4 s a fit at 5,000 rows by
        its cost class, exact search ~25 min estimated)"`` or ``"exact (...)"``; ``auto`` by default says so
        (``"exact (auto, the default: ...)"``)."""
        what = "exact" if self.fidelity is None else self.fidelity.describe(n_samples)
        if self.default:
            why = f"auto, the default: {self.reason}" if self.reason else "auto, the default"
            return self._summary(what, n_samples, classifier, why)
        return self._summary(what, n_samples, classifier, self.reason)

    def _summary(self, what: str, n_samples: int, classifier: str, reason: str) -> str:
        if not self.priced:
            return f"{what} ({reason})" if reason else what
        cost = CostModel(self.priced)
        estimate = f"exact search ~{minutes_text(self.exact_minutes)} estimated"
        if self.fidelity is not None:
            estimate += f", this one ~{minutes_text(self.search_minutes)}"
        if self.most_minutes is not None:
            estimate += f" (at most ~{minutes_text(self.most_minutes)})"
        return (
            f"{what} ({classifier} ~{_seconds(cost.seconds(n_samples))} a fit at "
            f"{n_samples:,} rows by its cost class, {estimate}; {reason})"
        )


def may_halve(fidelity: Any, choice: Any) -> bool:
    """Whether a search of this fidelity request and recorded choice (``FidelityChoice.to_attrs``
    or None) may score on row subsets (whose draw the seed decides): rungs given, or ``auto``
    unless it chose exact."""
    identity = fidelity_identity(fidelity)
    if identity is None:
        return False
    if identity == "auto" and choice is not None:
        return choice.get("fidelity") is not None
    return True


def fidelity_identity(fidelity: Any) -> Any:
    """What a study's identity records of a fidelity request: None (exact), ``"auto"`` (the rungs
    chosen by measurement, whatever they came out as), or the rungs given."""
    if isinstance(fidelity, FidelityChoice):
        if fidelity.requested == "auto":
            return "auto"
        fidelity = fidelity.fidelity
    if fidelity is None or fidelity == "exact":
        return None
    if fidelity == "auto" or isinstance(fidelity, AutoFidelity):
        return "auto"
    if fidelity == DEFAULT_REQUEST:
        return DEFAULT_REQUEST  # not decided yet (plan_search decides it)
    if isinstance(fidelity, Fidelity):
        return fidelity.to_attrs()
    if isinstance(fidelity, dict):
        return Fidelity.from_attrs(fidelity).to_attrs()
    return Fidelity(fidelity).to_attrs()


def resolve_request(fidelity: Any) -> FidelityChoice | AutoFidelity:
    """A ``fidelity=`` argument as a choice made (exact, rows given, a choice recorded) or an
    ``auto`` still to measure; a one-line ValueError for anything else."""
    if isinstance(fidelity, (FidelityChoice, AutoFidelity)):
        return fidelity
    if fidelity is None or fidelity == "exact":
        return FidelityChoice(None, reason="as asked")
    if fidelity == "auto":
        return AutoFidelity()
    if fidelity == DEFAULT_REQUEST:
        raise ValueError(
            "fidelity='default' is decided by the search lifecycle (plan_search): plan the spec "
            "first, or pass 'exact', 'auto' or a number of rows"
        )
    if isinstance(fidelity, Fidelity):
        return FidelityChoice(fidelity, reason="as asked")
    if is_int(fidelity):
        return FidelityChoice(Fidelity(int(fidelity)), reason="as asked")
    raise ValueError(
        f"fidelity must be 'exact', 'auto', a number of rows (int) or a Fidelity, got {fidelity!r}"
    )


def rung_floor(n_classes: int) -> int:
    """The fewest rows a rung of ``auto`` may have."""
    return max(MIN_RUNG_ROWS, MIN_RUNG_ROWS_PER_CLASS * n_classes)


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
    (docs/performance.md). So a search is *planned* for the most (:func:`choose_fidelity` caps
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
    made = dict(
        priced=cost.priced,
        exponent=round(cost.exponent, 3),
        positions=positions,
        batch=batch,
        exact_minutes=round(exact / 60, 2),
        new_points=new_points,
    )
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


def score_folds(cv: Any) -> int:
    """Fits a score takes: 1 for resubstitution, else the inner folds."""
    if cv is None or cv == "resubstitution":
        return 1
    if is_int(cv):
        return int(cv)
    get_n_splits = getattr(cv, "get_n_splits", None)
    try:
        return max(1, int(get_n_splits())) if get_n_splits is not None else 10
    except (TypeError, ValueError):
        return 10


def is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def minutes_text(minutes: float | None) -> str:
    if minutes is None:
        return "?"
    if minutes < 1:
        return f"{max(1, round(minutes * 60))} s"
    return f"{minutes:.1f} min" if minutes < 10 else f"{minutes:.0f} min"


def _seconds(seconds: float) -> str:
    return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
