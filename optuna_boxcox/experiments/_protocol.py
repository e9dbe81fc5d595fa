"""The paper's evaluation protocol (SPEC §7), one outer fold at a time.

Outer: ``RepeatedStratifiedKFold(n_splits=10, n_repeats=5, random_state=42)``. Base: StandardScaler +
classifier, accuracy on the test fold. A Box-Cox row: search Λ on the training fold with the row's
strategy (resubstitution accuracy, :class:`~optuna_boxcox.BoxCoxObjective`), fit
:class:`~optuna_boxcox.BoxCoxTransformer` with that Λ on the training fold, fit the classifier on
it, accuracy on the test fold (the paper's Algorithms 2–4).

The inner search runs the sampler's plan directly against ``objective.evaluate``: the plan *is* the
paper's algorithm, and a full table takes millions of evaluations, too many to pay for an Optuna
trial each. What is stored (one trial per outer fold) is decided by the caller.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from dataclasses import dataclass
import time
from typing import TYPE_CHECKING
from typing import Any
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._math._transform import BoxCoxTransformer
from optuna_boxcox._objective._objective import BoxCoxObjective
from optuna_boxcox._study._presets import PRESET_LABELS
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.experiments._names import ROW_KEYS
from optuna_boxcox.samplers import PRESETS
from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.samplers import DiagonalSampler
from optuna_boxcox.samplers import FullGridSampler
from optuna_boxcox.samplers import MLESampler
from optuna_boxcox.samplers import SphericalSampler

if TYPE_CHECKING:
    from optuna_boxcox.samplers import PlanSampler

#: The paper's seed: the outer folds, the classifiers, and the Shift/Shuffle draws of the searches.
PAPER_SEED = 42


@dataclass(frozen=True)
class Protocol:
    """Outer cross-validation: ``RepeatedStratifiedKFold(n_splits, n_repeats, random_state)``."""

    n_splits: int = 10
    n_repeats: int = 5
    random_state: int = PAPER_SEED

    def __post_init__(self) -> None:
        if self.n_splits < 2:
            raise ValueError(f"folds must be at least 2, got {self.n_splits}")
        if self.n_repeats < 1:
            raise ValueError(f"repeats must be at least 1, got {self.n_repeats}")

    @property
    def n_folds(self) -> int:
        return self.n_splits * self.n_repeats

    @property
    def is_paper(self) -> bool:
        return self == Protocol()

    @property
    def tag(self) -> str:
        """``10x5`` for the paper's protocol."""
        tag = f"{self.n_splits}x{self.n_repeats}"
        return tag if self.random_state == PAPER_SEED else f"{tag}-seed{self.random_state}"

    def study_name(self, *parts: str) -> str:
        """``parts`` joined by ``/``, with this protocol's tag last unless it is the paper's, so a
        study run under another protocol never resumes (or is mistaken for) the paper's study."""
        return "/".join([*parts, *([] if self.is_paper else [self.tag])])

    def splits(self, X: np.ndarray, y: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        cv = RepeatedStratifiedKFold(
            n_splits=self.n_splits, n_repeats=self.n_repeats, random_state=self.random_state
        )
        return list(cv.split(X, y))

    def to_attr(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Row:
    """One row of the paper's Tables 5–8: a Box-Cox search strategy (or the base pipeline).

    Attributes:
        key: Name on the command line and in study names.
        paper_row: The paper's row it is compared with.
        make: Factory of the row's sampler; ``None`` for the base pipeline (no Box-Cox).
        two_d_only: Only for the 2-D tables (the full grid).
        label: How reports name it (default: ``paper_row``).
    """

    key: str
    paper_row: str
    make: Callable[[], PlanSampler] | None
    two_d_only: bool = False
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.paper_row)

    def sampler(self) -> PlanSampler | None:
        return None if self.make is None else self.make()


def _preset(name: str) -> Callable[[], PlanSampler]:
    return lambda: CoordinateGridSampler.from_preset(name, seed=PAPER_SEED)


BASE = Row("base", "Base accuracy", None)
#: The rows by key, in the paper's order. ``diagonal`` runs the authors' code, which produced the
#: published Diagonal rows (SPEC §5); ``diagonal-alg8`` is Algorithm 8 as the paper's text defines it,
#: compared with the same published row. ``grid`` is the full 11 × 11 grid of the 2-D tables.
ROWS: dict[str, Row] = {
    r.key: r
    for r in (
        BASE,
        Row("diagonal", "Diagonal", lambda: DiagonalSampler(authors_code=True)),
        Row(
            "diagonal-alg8",
            "Diagonal",
            lambda: DiagonalSampler(),
            label="Diagonal (Algorithm 8 text)",
        ),
        Row("spherical", "Spherical", lambda: SphericalSampler()),
        Row("mle", "MLE", lambda: MLESampler()),
        Row("grid", "2D grid search", lambda: FullGridSampler(), two_d_only=True),
        *(Row(name, PRESET_LABELS[name], _preset(name)) for name in PRESETS),
    )
}
assert tuple(k for k in ROWS if k != "base") == ROW_KEYS

#: Rows a table runs unless told otherwise (the paper's rows; base always runs).
DEFAULT_ROWS = ("diagonal", "spherical", "mle", "grid", *PRESETS)


def search(objective: BoxCoxObjective, sampler: PlanSampler) -> tuple[np.ndarray, float]:
    """Run ``sampler``'s plan to its end on ``objective``; return (Λopt, its score).

    Every batch of the plan is scored with ``objective.evaluate_batch`` and sent back, exactly as
    the sampler does inside an Optuna study, without the study.
    """
    point, score = sampler.plan(objective.space).run(objective.evaluate_batch)
    return np.asarray(point, dtype=np.float64), float(score)


@dataclass
class FoldResult:
    """What one outer fold gave for one (row, classifier)."""

    fold: int
    test_accuracy: float
    train_accuracy: float  # resubstitution accuracy of the chosen Λ (the search's best)
    lambdas: list[float] | None
    n_evaluations: int
    seconds: float

    def to_attrs(self) -> dict[str, Any]:
        return {
            "test_accuracy": self.test_accuracy,
            "train_accuracy": self.train_accuracy,
            "lambdas": self.lambdas,
            "n_evaluations": self.n_evaluations,
            "seconds": self.seconds,
        }

    @classmethod
    def from_attrs(cls, fold: int, attrs: dict[str, Any]) -> FoldResult:
        return cls(
            fold,
            float(attrs["test_accuracy"]),
            float(attrs["train_accuracy"]),
            attrs.get("lambdas"),
            int(attrs.get("n_evaluations", 0)),
            float(attrs.get("seconds", 0.0)),
        )


def evaluate_fold(
    X: np.ndarray,
    y: np.ndarray,
    split: tuple[np.ndarray, np.ndarray],
    classifier: str,
    sampler: PlanSampler | None,
    fold: int = 0,
) -> FoldResult:
    """One outer fold: the base pipeline when ``sampler`` is None, else the Box-Cox pipeline."""
    train, test = split
    started = time.perf_counter()
    with warnings.catch_warnings():
        # The perceptron and the MLP warn about convergence at the paper's settings; that is part of
        # the protocol being reproduced, not news.
        warnings.simplefilter("ignore", ConvergenceWarning)
        if sampler is None:
            transform: Any = StandardScaler()
            lambdas, n_evaluations = None, 0
        else:
            objective = BoxCoxObjective.from_spec(SearchSpec(classifier), X[train], y[train])
            best, _ = search(objective, sampler)
            transform = BoxCoxTransformer(lambdas=best)
            lambdas, n_evaluations = [float(v) for v in best], objective.n_evaluations
        X_train = transform.fit_transform(X[train])
        model = make_classifier(classifier).fit(X_train, y[train])
        train_accuracy = float(np.mean(model.predict(X_train) == y[train]))
        test_accuracy = float(np.mean(model.predict(transform.transform(X[test])) == y[test]))
    return FoldResult(
        fold, test_accuracy, train_accuracy, lambdas, n_evaluations, time.perf_counter() - started
    )
