"""What :func:`~optuna_boxcox.experiments.compare.compare` compares: the problems (a data set, a
classifier, a split), the outer splits and permuted labels, the fixed transforms it is measured
against, and the studies' names and records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
import re
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from sklearn.metrics import accuracy_score
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import FunctionTransformer
from sklearn.preprocessing import MaxAbsScaler
from sklearn.preprocessing import MinMaxScaler
from sklearn.preprocessing import PowerTransformer
from sklearn.preprocessing import QuantileTransformer
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._math._transform import BoxCoxTransformer
from optuna_boxcox._objective._objective import CRITERIA
from optuna_boxcox._objective._objective import METRICS
from optuna_boxcox.experiments._peers import PEER_TRANSFORMS
from optuna_boxcox.experiments._peers import peer_transform

if TYPE_CHECKING:
    from optuna.storages import BaseStorage


#: The sampler every other is tested against, and whose budget is the default.
REFERENCE_SAMPLER = "coordinate"


#: Study user attributes: seconds the sampler ran (summed over runs that did work), the
#: comparison's settings, and the chosen Λ's held-out score (a dict: score, metric, fold, rows).
WALL_ATTR = "wall_seconds"


#: Study user attribute holding the comparison's settings (beside :data:`WALL_ATTR`).
SETTINGS_ATTR = "compare"


#: Study user attribute holding the chosen Λ's held-out score (beside :data:`WALL_ATTR`).
HELD_OUT_ATTR = "held_out"


#: User attribute (per fold: ``fixed_scores:fold<k>``) of the fixed transforms' study: transform →
#: {"inner": …, "held_out": …}.
FIXED_ATTR = "fixed_scores"


#: Seed of the outer splits (holdout and repeated k-fold).
OUTER_SEED = 0


#: The fixed transforms scored beside the searches, by key: what each row is called.
FIXED_TRANSFORMS: dict[str, str] = {
    "raw": "raw features (no scaling)",
    "standard": "StandardScaler",
    "minmax": "MinMaxScaler",
    "maxabs": "MaxAbsScaler",
    "quantile": "QuantileTransformer (normal)",
    "yeo-johnson": "Yeo-Johnson (PowerTransformer, MLE)",
    "box-cox": "Box-Cox MLE (BoxCoxTransformer)",
}


#: Every transform a comparison can score, by key: :data:`FIXED_TRANSFORMS` (scikit-learn and this
#: package) and the peers other tabular tools use (:data:`PEER_TRANSFORMS`; kdi
#: and squashing need the optional extra ``peers``).
ALL_TRANSFORMS: dict[str, str] = {**FIXED_TRANSFORMS, **PEER_TRANSFORMS}


def fixed_transform(key: str, n_samples: int = 1000) -> Any:
    """A fresh fixed transform by key (see :data:`ALL_TRANSFORMS`), for ``n_samples`` rows.

    - ``raw``: the identity; the classifier sees the features as they are.
    - ``standard``, ``minmax``, ``maxabs``: scikit-learn's scalers with their defaults.
    - ``quantile``: ``QuantileTransformer(output_distribution="normal")`` with scikit-learn's
      default of 1,000 quantiles, or one per row when there are fewer rows (as scikit-learn does,
      without its warning).
    - ``yeo-johnson``: ``PowerTransformer(method="yeo-johnson")``: per-feature MLE λ on the raw
      features, standardised.
    - ``box-cox``: this package's :class:`~optuna_boxcox.BoxCoxTransformer` with ``lambdas="mle"``:
      the paper's MLE strategy ([1, 2] scaling, per-feature MLE λ, standardised), which is also
      where the searches start.
    - ``kdi``, ``squashing``, ``skew-rule``: the peers
      (:data:`PEER_TRANSFORMS`).
    """
    if key in PEER_TRANSFORMS:
        return peer_transform(key)
    makers: dict[str, Callable[[], Any]] = {
        "raw": FunctionTransformer,
        "standard": StandardScaler,
        "minmax": MinMaxScaler,
        "maxabs": MaxAbsScaler,
        "quantile": lambda: QuantileTransformer(
            output_distribution="normal", n_quantiles=min(1000, n_samples), random_state=0
        ),
        "yeo-johnson": lambda: PowerTransformer(method="yeo-johnson"),
        "box-cox": lambda: BoxCoxTransformer(lambdas="mle"),
    }
    if key not in makers:
        raise ValueError(
            f"unknown fixed transform {key!r}; choose from {', '.join(ALL_TRANSFORMS)}"
        )
    return makers[key]()


def reference_transforms(n_samples: int = 1000) -> dict[str, Any]:
    """What a user would otherwise do, by row label (every :data:`FIXED_TRANSFORMS`)."""
    return {label: fixed_transform(key, n_samples) for key, label in FIXED_TRANSFORMS.items()}


def held_out_metric(scoring: Any) -> tuple[str, Callable[[np.ndarray, np.ndarray], float]]:
    """The metric held-out predictions are scored with: the search's own, or accuracy when the
    search scores a classifier-free criterion."""
    if callable(scoring):
        return getattr(scoring, "__name__", "score"), scoring
    if scoring in CRITERIA:
        return "accuracy", accuracy_score
    return scoring, METRICS[scoring]


# -- splits and labels ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Split:
    """The rows a search sees (``train``) and the rows its Λ is scored on (``test``, None: none).

    ``fold`` numbers the folds of an outer cross-validation (None for a single split).
    """

    train: np.ndarray
    test: np.ndarray | None = None
    fold: int | None = None


def parse_outer_cv(value: str | int | tuple[int, int]) -> tuple[int, int]:
    """``"5x2"`` → (5 repeats, 2 folds); ``"10"`` or 10 → (1, 10); a pair passes through."""
    if isinstance(value, tuple):
        repeats, folds = value
    else:
        match = re.fullmatch(r"\s*(?:(\d+)\s*[x×]\s*)?(\d+)\s*", str(value))
        if match is None:
            raise ValueError(
                f"outer CV must read REPEATSxFOLDS (e.g. 5x2) or FOLDS (e.g. 5), got {value!r}"
            )
        repeats, folds = int(match.group(1) or 1), int(match.group(2))
    if repeats < 1 or folds < 2:
        raise ValueError(f"outer CV needs at least 1 repeat of 2 folds, got {repeats}x{folds}")
    return int(repeats), int(folds)


def outer_tag(outer_cv: str | int | tuple[int, int]) -> str:
    """``outer5x2``: how an outer cross-validation is named in study names and settings."""
    repeats, folds = parse_outer_cv(outer_cv)
    return f"outer{repeats}x{folds}"


def outer_splits(
    y: Any,
    *,
    outer_cv: str | int | tuple[int, int] | None = None,
    test_size: float | None = None,
    random_state: int = OUTER_SEED,
) -> list[Split]:
    """The splits of the data: all of it (no held-out), one stratified holdout, or R×K folds."""
    y = np.asarray(y)
    rows = np.arange(len(y))
    if outer_cv is not None and test_size:
        raise ValueError("give test_size (one holdout) or outer_cv (repeated k-fold), not both")
    if test_size:
        train, test = train_test_split(
            rows, test_size=test_size, stratify=y, random_state=random_state
        )
        return [Split(train, test)]
    if outer_cv is None:
        return [Split(rows)]
    repeats, folds = parse_outer_cv(outer_cv)
    splitter = RepeatedStratifiedKFold(
        n_splits=folds, n_repeats=repeats, random_state=random_state
    )
    return [
        Split(train, test, k)
        for k, (train, test) in enumerate(splitter.split(np.zeros_like(y), y))
    ]


def permuted_labels(y: Any, seed: int = 0) -> np.ndarray:
    """The labels in a random order (``numpy.random.default_rng(seed).permutation``): any link
    between features and class is broken, class counts are kept."""
    return np.random.default_rng(seed).permutation(np.asarray(y))


# -- what is scored -------------------------------------------------------------------------------
@dataclass
class Problem:
    """One data set with one classifier and one labelling, split for the searches.

    Args:
        dataset, classifier: Names, for the study names.
        X, y: The data (a DataFrame keeps its column names as the λ parameters' names).
        estimator: The classifier.
        splits: Where searches train and their Λ are scored (:func:`outer_splits`).
        null_seed: The seed the labels were permuted with (None: the real labels).
    """

    dataset: str
    classifier: str
    X: Any
    y: np.ndarray
    estimator: Any
    splits: list[Split]
    null_seed: int | None = None

    def rows(self, index: np.ndarray) -> tuple[Any, np.ndarray]:
        X = self.X.iloc[index] if hasattr(self.X, "iloc") else np.asarray(self.X)[index]
        return X, self.y[index]


@dataclass
class Scores:
    """Inner and held-out scores of one method, one per study (searches) or split (fixed
    transforms), on the real labels and — with ``null`` — on permuted ones."""

    name: str
    best: list[float] = field(default_factory=list)
    held_out: list[float] = field(default_factory=list)
    null_best: list[float] = field(default_factory=list)
    null_held_out: list[float] = field(default_factory=list)


@dataclass
class SamplerRuns(Scores):
    """The studies of one sampler, one per seed (× outer fold), in seed-major order."""

    trials: list[int] = field(default_factory=list)
    trials_to_99: list[int] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    curves: list[np.ndarray] = field(default_factory=list)
    study_names: list[str] = field(default_factory=list)
    p_value: float | None = None


@dataclass(frozen=True)
class RunSettings:
    """How a comparison's studies are run and named, built once from the keywords of
    :func:`~optuna_boxcox.experiments.compare.compare` or
    :func:`~optuna_boxcox.experiments.benchmark.benchmark` and checked there.

    Attributes:
        samplers: Registry names of the searches (:func:`~optuna_boxcox.make_sampler`).
        seeds: The samplers' seeds: one study per sampler, seed and split.
        transforms: Keys of the fixed transforms scored beside them (:data:`ALL_TRANSFORMS`).
        n_trials: Trials per study (None: a paper sampler's whole plan, the coordinate search's
            budget for the others).
        scoring, cv: The search's score (see :class:`~optuna_boxcox.BoxCoxObjective`).
        test_size, outer_cv: How the chosen Λ is scored on rows the search never saw (one
            holdout, or repeated k-fold); both None: no held-out score.
        storage: Where the studies live (URL, or a storage when ``n_jobs`` is 1).
        n_jobs: Studies run at once, each in a process of its own (-1: one per CPU).
        progress: Show progress over the studies, with the time left.
        progress_label: What the progress line calls the run.
    """

    samplers: tuple[str, ...]
    seeds: tuple[int, ...]
    transforms: tuple[str, ...]
    n_trials: int | None
    scoring: Any
    cv: int | None
    test_size: float | None
    outer_cv: str | int | tuple[int, int] | None
    storage: str | BaseStorage | None
    n_jobs: int
    progress: bool
    progress_label: str


def study_name(
    dataset: str,
    classifier: str,
    sampler: str,
    seed: int | None,
    settings: RunSettings,
    *,
    null_seed: int | None = None,
    fold: int | None = None,
) -> str:
    """``<dataset>/<classifier>/<sampler>/seed<k>``, tagged with the non-default ``settings``
    (budget, scoring, cv, test size, outer cross-validation) and ``null_seed``, and ``/fold<k>``
    for a fold of an outer cross-validation.

    The fixed transforms' scores live in the study ``<dataset>/<classifier>/fixed/<tags>`` (``seed``
    None, no budget tag), one user attribute per fold.
    """
    n_trials, scoring, outer_cv = settings.n_trials, settings.scoring, settings.outer_cv
    tags = []
    if n_trials is not None:
        tags.append(f"n{n_trials}")
    if scoring != "accuracy":
        tags.append(held_out_metric(scoring)[0] if callable(scoring) else str(scoring))
    if settings.cv:
        tags.append(f"cv{settings.cv}")
    if settings.test_size:
        tags.append(f"test{settings.test_size:g}")
    if outer_cv is not None:
        tags.append(outer_tag(outer_cv))
    if null_seed is not None:
        tags.append(f"null{null_seed}")
    return "/".join(
        [
            dataset,
            classifier,
            sampler,
            *([f"seed{seed}"] if seed is not None else []),
            *(["-".join(tags)] if tags else []),
            *([f"fold{fold}"] if fold is not None else []),
        ]
    )
