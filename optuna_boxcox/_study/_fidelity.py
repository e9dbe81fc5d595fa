"""Rows as the fidelity: candidates scored on growing stratified row subsets (successive halving).

A search with a :class:`Fidelity` scores each candidate first on ``min_rows`` rows, promotes the
best ``1/eta`` of them to ``eta`` times more rows, and so on up to the top rung (all rows, unless
capped). The rows of every rung are a stratified subset drawn once; the transform's [1, 2] scaling
and the MLE start point come from all rows, so a λ means the same transform at every rung.

``fidelity="auto"`` (:class:`AutoFidelity`) chooses from a price instead of a guess: the
classifier's cost class (seconds a new point costs on the reference machine, by rows, features and
classes, in the evaluators' registry) is the cost model, and the search's time is estimated exact
and with halving, counting the new points the search will score, not its plan's positions. Nothing
is timed, so the choice is a function of the data's shape, the classifier and the settings alone.

This module is what a study records of a fidelity: the rungs asked for (:class:`Fidelity`), the
request (:class:`AutoFidelity`), what was chosen and from which inputs (:class:`FidelityChoice`,
recorded in the study so that a resumed search or another worker uses the same rungs) and what the
study's identity says of it. The cost model that chooses is ``optuna_boxcox._objective._auto``'s.
``auto`` is the default of a new study (decided in the lifecycle's ``plan_search``). A request is
parsed once, at each public edge, by :func:`parse_fidelity` into one :data:`FidelityRequest`.
"""

from __future__ import annotations

from dataclasses import dataclass
import numbers
from typing import Any

#: Optuna's default reduction factor of successive halving.
DEFAULT_ETA = 3
#: No rung scores on fewer rows than this: below it one row moves the accuracy by over half a
#: percent, and the ranking of a sweep's candidates is mostly noise.
MIN_RUNG_ROWS = 200
#: ... nor on fewer than this many rows per class (a rare class must still be learnable).
MIN_RUNG_ROWS_PER_CLASS = 10
#: Time ``auto`` plans a search for: a halving search estimated longer gets its top rung capped
#: to the most rows that fit (the result is then confirmed on all rows). Chosen so that with
#: the guarded default's gate and start-up a default search ends within a quarter of an hour.
DEFAULT_BUDGET_SECONDS = 12 * 60.0


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
    """Ask for the fidelity to be chosen from the classifier's priced cost (``fidelity="auto"``;
    the user guide's "Large data sets and fidelity" says how it chooses).

    Args:
        positions: Candidates the search will score; None: the sampler's plan when it knows it,
            else the cost model's typical positions per parameter.
        batch: Candidates halved together (a sweep); None: the sampler's grid size when it has
            one, else the cost model's typical sweep.
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
class Exact:
    """Every candidate scored on all rows: the paper's search."""

    def __repr__(self) -> str:
        return "EXACT"


@dataclass(frozen=True)
class Unasked:
    """No fidelity asked for: the lifecycle's ``plan_search`` decides it (the fidelity a resumed
    study was made with, else :class:`AutoFidelity` marked as the default)."""

    def __repr__(self) -> str:
        return "DEFAULT_REQUEST"


#: The exact request (every candidate on all rows).
EXACT = Exact()
#: The request of a search that asked for none (``"default"``).
DEFAULT_REQUEST = Unasked()
#: What a search may ask for, once parsed (:func:`parse_fidelity`): the one type a spec holds.
FidelityRequest = Exact | Fidelity | AutoFidelity | Unasked


def parse_fidelity(value: Any, *, none: FidelityRequest = EXACT) -> FidelityRequest:
    """A ``fidelity=`` argument as its typed request, or a one-line ValueError: ``"exact"``,
    ``"auto"``, ``"default"``, a number of rows, a :class:`Fidelity` or :class:`AutoFidelity`, or
    a study's record of the rungs (a dict). ``None`` is ``none``: exact for the objective and a
    spec, the default for the estimator. Parsed once at each public edge; nothing downstream
    looks at the forms again."""
    if value is None:
        return none
    if isinstance(value, (Exact, Fidelity, AutoFidelity, Unasked)):
        return value
    if isinstance(value, str):
        named = {"exact": EXACT, "auto": AutoFidelity(), "default": DEFAULT_REQUEST}
        if value in named:
            return named[value]
    elif is_int(value):
        return Fidelity(int(value))
    elif isinstance(value, dict):
        return Fidelity.from_attrs(value)
    raise ValueError(
        f"fidelity must be 'exact', 'auto', a number of rows (int) or a Fidelity, got {value!r}"
    )


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
        new_points: The new points the estimates counted.
        exact_minutes, search_minutes: Estimated time of the exact search and of the one chosen.
        most_minutes: The chosen search's time were every position a new point: what the
            budget was planned for.
        default: ``auto`` was not asked for: it is the default of a new study.
        fit_seconds: The price of one new point on all the data's rows (the summary's "a fit").
        sample: The rows of the stratified sample the default searches instead of all (the
            spec's ``subsample``), or None.
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
    fit_seconds: float | None = None
    sample: int | None = None

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
        if self.fit_seconds is not None:
            attrs["fit_seconds"] = self.fit_seconds
        if self.sample is not None:
            attrs["sample"] = int(self.sample)
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
            fit_seconds=attrs.get("fit_seconds"),
            sample=attrs.get("sample"),
        )

    def summary(self, n_samples: int, classifier: str) -> str:
        """One line: ``"halving from 556 to 5,000 rows, η=3 (SVC ~1.4 s a fit at 5,000 rows by
        its cost class, exact search ~25 min estimated)"`` or ``"exact (...)"``; ``auto`` by default says so
        (``"exact (auto, the default: ...)"``)."""
        what = "exact" if self.fidelity is None else self.fidelity.describe(n_samples)
        if self.sample is not None:
            what = f"exact on a stratified sample of {self.sample:,} of the {n_samples:,} rows"
        if self.default:
            why = f"auto, the default: {self.reason}" if self.reason else "auto, the default"
            return self._summary(what, n_samples, classifier, why)
        return self._summary(what, n_samples, classifier, self.reason)

    def _summary(self, what: str, n_samples: int, classifier: str, reason: str) -> str:
        if not self.priced:
            return f"{what} ({reason})" if reason else what
        rows, seconds = n_samples, self.fit_seconds
        if seconds is None:  # a choice recorded before its price on all rows was: the last priced
            rows, seconds = max(
                ((r, s) for r, s in self.priced if r <= n_samples), default=min(self.priced)
            )
        estimate = f"exact search ~{minutes_text(self.exact_minutes)} estimated"
        if self.fidelity is not None or self.sample is not None:
            estimate += f", this one ~{minutes_text(self.search_minutes)}"
        if self.most_minutes is not None:
            estimate += f" (at most ~{minutes_text(self.most_minutes)})"
        return (
            f"{what} ({classifier} ~{_seconds(seconds)} a fit at "
            f"{rows:,} rows by its cost class, {estimate}; {reason})"
        )


def may_halve(fidelity: FidelityRequest, choice: FidelityChoice | None) -> bool:
    """Whether a search of this request and choice may score on row subsets (whose draw the seed
    decides): rungs given, or ``auto`` unless it chose exact."""
    if isinstance(fidelity, Exact):
        return False
    if isinstance(fidelity, AutoFidelity) and choice is not None:
        return choice.fidelity is not None
    return True


def fidelity_identity(fidelity: FidelityRequest) -> Any:
    """What a study's identity records of a fidelity request: None (exact), ``"auto"`` (the rungs
    chosen by their price, whatever they came out as), ``"default"`` (not decided yet), or the
    rungs given."""
    if isinstance(fidelity, Exact):
        return None
    if isinstance(fidelity, AutoFidelity):
        return "auto"
    if isinstance(fidelity, Unasked):
        return "default"
    return fidelity.to_attrs()


def given_choice(fidelity: Exact | Fidelity) -> FidelityChoice:
    """The choice a request that names its rungs (or exact) makes: itself, as asked."""
    return FidelityChoice(None if isinstance(fidelity, Exact) else fidelity, reason="as asked")


def rung_floor(n_classes: int) -> int:
    """The fewest rows a rung of ``auto`` may have."""
    return max(MIN_RUNG_ROWS, MIN_RUNG_ROWS_PER_CLASS * n_classes)


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
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def minutes_text(minutes: float | None) -> str:
    if minutes is None:
        return "?"
    if minutes < 1:
        return f"{max(1, round(minutes * 60))} s"
    return f"{minutes:.1f} min" if minutes < 10 else f"{minutes:.0f} min"


def _seconds(seconds: float) -> str:
    return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
