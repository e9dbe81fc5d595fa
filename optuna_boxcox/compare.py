"""Comparing samplers on one data set: same budget, several seeds, one storage, resumable.

Every (sampler, seed) is its own study named ``<dataset>/<classifier>/<sampler>/seed<k>``, followed
by a tag of the settings that differ from the defaults (``/n300`` for a budget given explicitly,
``/f1`` for another scoring, ``/cv5``, ``/test0.25``, ``/outer5x2``, ``/null0``), so a comparison
with other settings never reads another's studies. The paper's samplers run through
:func:`optuna_boxcox.optimize` (batch by batch) and run their whole plan unless a budget is given;
Optuna's samplers run on an in-memory copy of the study and their trials are appended to the
storage in one write per chunk, so a comparison costs what the samplers cost, not what
per-parameter commits cost. A study that already holds its trials is read, not re-run; independent
studies run in parallel with ``n_jobs``.

Honest scores. The search's own score (the paper's resubstitution accuracy, or an inner k-fold) is
what the samplers maximise, so its best value flatters every sampler. Two ways to score the chosen
Λ on data the search never saw:

- ``test_size``: one stratified holdout (``train_test_split``, random_state 0);
- ``outer_cv="RxK"``: repeated stratified K-fold, R repeats (``RepeatedStratifiedKFold``,
  random_state 0), e.g. ``"5x2"``. Each outer fold's training part is the data of its own studies
  (``…/outer5x2/fold<k>``, k = 0 … R·K - 1); the chosen Λ is scored on the fold's test part with the
  search's metric and recorded in the fold's study as the user attribute ``held_out``, so a
  finished fold is read back, not rerun.

``null=True`` repeats every search on labels permuted with a seeded RNG (the same X, the same
outer protocol, studies tagged ``null<seed>``). Inner scores on permuted labels can look good —
resubstitution rewards memorising noise — but held-out scores must sit at chance; the table shows
the gap between inner best and held-out on real and on permuted labels.

Fixed transforms (:data:`FIXED_TRANSFORMS`) are scored on the same splits as reference rows: what a
user would otherwise put in front of the classifier. Their scores are kept in a study of their own,
``<dataset>/<classifier>/fixed/<tags>`` (one user attribute per fold, read back by a second run;
and one finished trial per transform and fold, its score maximised, so that the dashboard shows
what the study holds rather than an empty "minimize" study).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
import os
import re
import time
from typing import TYPE_CHECKING
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.trial import TrialState
from scipy import stats
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import accuracy_score
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.preprocessing import MaxAbsScaler
from sklearn.preprocessing import MinMaxScaler
from sklearn.preprocessing import PowerTransformer
from sklearn.preprocessing import QuantileTransformer
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._guard import GUARDED
from optuna_boxcox._guard import guard
from optuna_boxcox._guard import search_sampler
from optuna_boxcox._objective import CRITERIA
from optuna_boxcox._objective import METRICS
from optuna_boxcox._objective import BoxCoxObjective
from optuna_boxcox._optuna._write import TrialRecord
from optuna_boxcox._optuna._write import write_trials
from optuna_boxcox._parallel import map_tasks
from optuna_boxcox._progress import Progress
from optuna_boxcox._runner import optimize
from optuna_boxcox._settings import record_settings
from optuna_boxcox._spec import SearchSpec
from optuna_boxcox._transform import BoxCoxTransformer
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.samplers import record_sampler
from optuna_boxcox.storage import open_storage

if TYPE_CHECKING:
    from collections.abc import Sequence

    from optuna.storages import BaseStorage

#: The sampler every other is tested against, and whose budget is the default.
REFERENCE_SAMPLER = "coordinate"
#: Trials an Optuna sampler runs in memory between two writes to the storage.
_CHUNK = 200
#: Study user attributes: seconds the sampler ran (summed over runs that did work), the
#: comparison's settings, and the chosen Λ's held-out score (a dict: score, metric, fold, rows).
WALL_ATTR = "wall_seconds"
SETTINGS_ATTR = "compare"
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


def fixed_transform(key: str, n_samples: int = 1000) -> Any:
    """A fresh fixed transform by key (see :data:`FIXED_TRANSFORMS`), for ``n_samples`` rows.

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
    """
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
        raise ValueError(f"unknown fixed transform {key!r}; choose from {', '.join(makers)}")
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


def study_name(
    dataset: str,
    classifier: str,
    sampler: str,
    seed: int | None,
    *,
    n_trials: int | None = None,
    scoring: Any = "accuracy",
    cv: int | None = None,
    test_size: float | None = None,
    outer_cv: str | int | tuple[int, int] | None = None,
    null_seed: int | None = None,
    fold: int | None = None,
) -> str:
    """``<dataset>/<classifier>/<sampler>/seed<k>``, tagged with the non-default settings, and
    ``/fold<k>`` for a fold of an outer cross-validation.

    The fixed transforms' scores live in the study ``<dataset>/<classifier>/fixed/<tags>`` (``seed``
    None, no budget tag), one user attribute per fold.
    """
    tags = []
    if n_trials is not None:
        tags.append(f"n{n_trials}")
    if scoring != "accuracy":
        tags.append(held_out_metric(scoring)[0] if callable(scoring) else str(scoring))
    if cv:
        tags.append(f"cv{cv}")
    if test_size:
        tags.append(f"test{test_size:g}")
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


def compare(
    X: Any,
    y: Any,
    estimator: Any,
    *,
    dataset: str,
    classifier: str,
    samplers: Sequence[str],
    seeds: int = 3,
    n_trials: int | None = None,
    storage: str | BaseStorage | None = None,
    scoring: str = "accuracy",
    cv: int | None = None,
    test_size: float | None = None,
    outer_cv: str | int | tuple[int, int] | None = None,
    null: bool = False,
    null_seed: int = 0,
    transforms: Sequence[str] | None = None,
    n_jobs: int = 1,
    progress: bool = False,
) -> tuple[list[SamplerRuns], dict[str, Scores]]:
    """Run (or read back) every sampler × seed (× outer fold); return per-sampler runs and the
    fixed transforms' scores by row label.

    Args:
        X, y: The data.
        estimator: The classifier.
        dataset, classifier: Names, for the study names.
        samplers: Registry names (:func:`~optuna_boxcox.make_sampler`).
        seeds: Studies per sampler (seeds 0 … seeds - 1), per outer fold.
        n_trials: Trials per study. By default every paper sampler runs its whole plan and
            every other sampler gets the coordinate search's E·p·L; given, a paper sampler whose
            plan is shorter runs its plan and a longer one stops at the budget.
        storage: Where the studies live (URL, or a storage when ``n_jobs`` is 1).
        scoring, cv: The search's score (see :class:`~optuna_boxcox.BoxCoxObjective`).
        test_size: Hold out a stratified part of the data: searches see only the rest, and each
            chosen Λ is scored on the held-out part (classifier fitted on the search data) with
            the search's metric (accuracy for a classifier-free criterion).
        outer_cv: Instead of one holdout, repeated stratified k-fold (``"5x2"``: 5 repeats of
            2-fold): every fold's training part is searched by every sampler × seed, and its test
            part scores the chosen Λ. Scores are reported per study (seed × fold).
        null: Also run everything on permuted labels (:func:`permuted_labels` with ``null_seed``);
            needs ``test_size`` or ``outer_cv``. Filled in ``null_best`` and ``null_held_out``.
        transforms: Keys of the fixed transforms to score (default all of
            :data:`FIXED_TRANSFORMS`).
        n_jobs: Studies run at once, each in a process of its own (-1: one per CPU).
        progress: Show progress over the studies, with the time left.

    The Wilcoxon signed-rank p-value of each sampler is against the coordinate search's inner
    best, paired by seed and fold (when the coordinate search is among the samplers).
    """
    if null and not (test_size or outer_cv is not None):
        raise ValueError(
            "the null check needs held-out scores: give test_size (one holdout) or outer_cv"
        )
    splits = outer_splits(y, outer_cv=outer_cv, test_size=test_size)
    problems = [Problem(dataset, classifier, X, np.asarray(y), estimator, splits)]
    if null:
        permuted = permuted_labels(y, null_seed)
        problems.append(
            Problem(
                dataset,
                classifier,
                X,
                permuted,
                estimator,
                outer_splits(permuted, outer_cv=outer_cv, test_size=test_size),
                null_seed,
            )
        )
    keys = list(FIXED_TRANSFORMS) if transforms is None else list(transforms)
    found = run_problems(
        problems,
        samplers=samplers,
        seeds=range(seeds),
        transforms=keys,
        n_trials=n_trials,
        scoring=scoring,
        cv=cv,
        test_size=test_size,
        outer_cv=outer_cv,
        storage=storage,
        n_jobs=n_jobs,
        progress=progress,
    )
    runs = []
    for name in samplers:
        run = SamplerRuns(name)
        for p, problem in enumerate(problems):
            for seed in range(seeds):
                for s in range(len(problem.splits)):
                    summary = found[("search", p, s, name, seed)]
                    _add(run, problem, summary["best"], summary["held_out"])
                    if problem.null_seed is not None:
                        continue
                    run.curves.append(summary["curve"])
                    run.trials.append(len(summary["curve"]))
                    run.trials_to_99.append(summary["trials_to_99"])
                    run.wall.append(summary["wall"])
                    run.study_names.append(summary["name"])
        runs.append(run)
    _wilcoxon(runs)
    references = {}
    for key in keys:
        row = Scores(FIXED_TRANSFORMS[key])
        for p, problem in enumerate(problems):
            for s in range(len(problem.splits)):
                inner, outer = found[("fixed", p, s)][key]
                _add(row, problem, inner, outer)
        references[row.name] = row
    return runs, references


def _add(scores: Scores, problem: Problem, best: float, held_out: float | None) -> None:
    real = problem.null_seed is None
    (scores.best if real else scores.null_best).append(best)
    if held_out is not None:
        (scores.held_out if real else scores.null_held_out).append(held_out)


# -- running the studies --------------------------------------------------------------------------
def run_problems(
    problems: Sequence[Problem],
    *,
    samplers: Sequence[str],
    seeds: Sequence[int],
    transforms: Sequence[str],
    n_trials: int | None,
    scoring: Any,
    cv: int | None,
    test_size: float | None,
    outer_cv: str | int | tuple[int, int] | None,
    storage: str | BaseStorage | None,
    n_jobs: int = 1,
    progress: bool = False,
    label: str = "compare",
) -> dict[tuple, dict[str, Any]]:
    """Every search (problem × split × sampler × seed) and every fixed-transform scoring
    (problem × split), run or read back, spread over ``n_jobs`` processes.

    Returns a summary per task: ``("search", problem, split, sampler, seed)`` → the study's name,
    its number of trials, inner best, best-so-far curve, trials to 99 %, wall seconds, held-out score and whether it ran
    now (``ran``); ``("fixed", problem, split)`` → transform key → (inner score, held-out score).
    Indices are positions in ``problems`` and in each problem's splits.
    """
    if n_jobs != 1 and not isinstance(storage, (str, type(None))):
        n_jobs = 1  # a storage object cannot be shared with forked processes
    store = (
        open_storage(storage)
        if n_jobs == 1 and not hasattr(storage, "get_all_trials")
        else storage
    )
    opened: dict[int, BaseStorage] = {}

    def worker_storage() -> BaseStorage:
        # One storage per worker process, opened there (an engine must not cross a fork).
        if os.getpid() not in opened:
            opened[os.getpid()] = open_storage(storage)
        return opened[os.getpid()]

    metric_name, metric = held_out_metric(scoring)
    scoring_name = scoring if isinstance(scoring, str) else held_out_metric(scoring)[0]
    tasks: list[tuple] = []
    for p, problem in enumerate(problems):
        for s in range(len(problem.splits)):
            tasks.append(("fixed", p, s))
            tasks += [("search", p, s, name, seed) for name in samplers for seed in seeds]
    objectives: OrderedDict[tuple[int, int], BoxCoxObjective] = OrderedDict()

    def objective_of(p: int, s: int) -> BoxCoxObjective:
        # Tasks of one split are neighbours: a few objectives per process are enough.
        if (p, s) not in objectives:
            X_train, y_train = problems[p].rows(problems[p].splits[s].train)
            spec = SearchSpec(problems[p].estimator, scoring=scoring, cv=cv)
            objectives[(p, s)] = BoxCoxObjective.from_spec(spec, X_train, y_train)
            while len(objectives) > 4:
                objectives.popitem(last=False)
        return objectives[(p, s)]

    def work(task: tuple) -> Any:
        problem, split = problems[task[1]], problems[task[1]].splits[task[2]]
        target = store if n_jobs == 1 else worker_storage()
        objective = lambda: objective_of(task[1], task[2])  # built only if something is scored
        names = dict(
            scoring=scoring,
            cv=cv,
            test_size=test_size,
            outer_cv=outer_cv,
            null_seed=problem.null_seed,
        )
        settings: dict[str, Any] = {"scoring": scoring_name, "cv": cv, "test_size": test_size}
        if outer_cv is not None:
            settings["outer_cv"] = outer_tag(outer_cv)[len("outer") :]
        if problem.null_seed is not None:
            settings["null_seed"] = problem.null_seed
        if task[0] == "fixed":
            name = study_name(problem.dataset, problem.classifier, "fixed", None, **names)
            return _fixed_scores(
                target, name, settings, problem, split, objective, transforms, metric
            )
        sampler_name, seed = task[3], task[4]
        dim = np.shape(problem.X)[1]
        budget = n_trials or make_sampler(REFERENCE_SAMPLER).budget(dim)
        settings = {"budget": budget, **settings}
        if outer_cv is not None:
            settings["fold"] = split.fold
        name = study_name(
            problem.dataset,
            problem.classifier,
            sampler_name,
            seed,
            n_trials=n_trials,
            fold=split.fold,
            **names,
        )
        test = None
        if split.test is not None:
            X_train, y_train = problem.rows(split.train)
            X_test, y_test = problem.rows(split.test)
            test = (X_train, y_train, X_test, y_test, problem.estimator, metric)
        return _run_one(
            target,
            name,
            objective,
            dim,
            sampler_name,
            seed,
            budget,
            settings,
            test,
            metric_name,
            whole_plan=n_trials is None,
        )

    if n_jobs != 1 and tasks:
        # Compiled kernels loaded once here, inherited by every forked worker.
        objective_of(tasks[0][1], tasks[0][2]).warm_up()
    found: dict[tuple, dict[str, Any]] = {}
    # A task is one search or the fixed transforms of one split (a study holds every fold's).
    with Progress(len(tasks), unit="task", label=label, enabled=progress) as bar:

        def collect(task: tuple, summary: Any) -> None:
            found[task] = summary
            bar.update()

        map_tasks(tasks, work, collect, n_jobs=n_jobs)
    return found


def _fixed_scores(
    store: Any,
    name: str,
    settings: dict[str, Any],
    problem: Problem,
    split: Split,
    objective: Callable[[], BoxCoxObjective],
    transforms: Sequence[str],
    metric: Callable[[np.ndarray, np.ndarray], float],
) -> dict[str, tuple[float, float | None]]:
    """The fixed transforms' (inner, held-out) scores on one split: read from the study ``name``
    (user attribute ``fixed_scores:fold<k>``, or ``fixed_scores`` for a single split), the
    transforms it lacks scored and added (each also as a finished trial, for the dashboard)."""
    study = optuna.create_study(
        storage=store, study_name=name, direction="maximize", load_if_exists=True
    )
    attrs = study.user_attrs
    record_settings(
        study,
        SETTINGS_ATTR,
        settings,
        recorded=attrs,
        hint="use another --storage, or delete the study to score them again",
    )
    key = FIXED_ATTR if split.fold is None else f"{FIXED_ATTR}:fold{split.fold}"
    known = dict(attrs.get(key, {}))
    missing = [t for t in transforms if t not in known]
    if missing:
        for t, (inner, outer) in _score_fixed(
            problem, split, objective(), missing, metric
        ).items():
            known[t] = {"inner": inner, "held_out": outer}
            shown = inner if np.isfinite(inner) else outer  # a criterion has no inner score
            if shown is not None and study.direction == optuna.study.StudyDirection.MAXIMIZE:
                attrs = {"transform": FIXED_TRANSFORMS[t], HELD_OUT_ATTR: outer}
                if split.fold is not None:
                    attrs["fold"] = split.fold
                study.add_trial(optuna.trial.create_trial(value=shown, user_attrs=attrs))
        study.set_user_attr(key, known)
    return {t: (float(known[t]["inner"]), known[t]["held_out"]) for t in transforms}


def _score_fixed(
    problem: Problem,
    split: Split,
    objective: BoxCoxObjective,
    transforms: Sequence[str],
    metric: Callable[[np.ndarray, np.ndarray], float],
) -> dict[str, tuple[float, float | None]]:
    """Inner score (the search's own, on the training part) and held-out score of each fixed
    transform followed by the classifier. A classifier-free criterion has no inner score (NaN)."""
    X_train = np.asarray(problem.rows(split.train)[0], float)
    y_train = problem.y[split.train]
    scores = {}
    with warnings.catch_warnings():
        # Baselines as a user would run them: a perceptron on raw features may not converge, and
        # Yeo-Johnson's MLE may overflow on a large feature; the score says what came of it.
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        for key in transforms:
            transform = fixed_transform(key, len(split.train))
            inner = np.nan
            if not (isinstance(objective.scoring, str) and objective.scoring in CRITERIA):
                inner = objective.score_features(clone(transform).fit_transform(X_train))
            outer = None
            if split.test is not None:
                model = make_pipeline(transform, clone(problem.estimator)).fit(X_train, y_train)
                X_test = np.asarray(problem.rows(split.test)[0], float)
                outer = float(metric(problem.y[split.test], model.predict(X_test)))
            scores[key] = (float(inner), outer)
    return scores


def _run_one(
    store: Any,
    name: str,
    objective: Callable[[], BoxCoxObjective],
    dim: int,
    sampler_name: str,
    seed: int,
    budget: int,
    settings: dict[str, Any],
    test: tuple | None,
    metric_name: str = "score",
    *,
    whole_plan: bool = False,
) -> dict[str, Any]:
    """Run (or read) one study; return what the table needs of it.

    A paper sampler runs its whole plan with ``whole_plan``, else at most ``budget`` trials of it;
    Optuna's samplers run ``budget`` trials.

    With ``test`` (training rows, their labels, test rows, their labels, the classifier, the
    metric) the chosen Λ is scored on the test rows and the score recorded in the study's user
    attribute ``held_out`` (with ``metric_name``); a finished study's recorded score is read back.
    ``objective()`` gives the fold's objective (of ``dim`` λ), built only when there is scoring
    to do.
    """
    # Nelder–Mead's plan has no natural end: give it the shared budget. The paper's grid samplers
    # keep their own (fixed) plans, stopped at the budget when longer.
    sampler_settings = {"n_trials": budget} if sampler_name == "nelder-mead" else {}
    # The guarded default searches with the paper's coordinate search, then its gate decides.
    sampler = make_sampler(search_sampler(sampler_name), seed=seed, **sampler_settings)
    study = optuna.create_study(
        storage=store,
        study_name=name,
        direction="maximize",
        sampler=sampler,
        load_if_exists=True,
    )
    attrs = study.user_attrs
    record_settings(
        study,
        SETTINGS_ATTR,
        settings,
        recorded=attrs,
        hint="use another --storage, or delete the study to run it again",
    )
    record_sampler(study, sampler, recorded=attrs)
    target = budget
    if isinstance(sampler, PlanSampler):
        target = sampler.budget(dim) if whole_plan else min(budget, sampler.budget(dim))
    done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    started = time.perf_counter()
    ran = done < target
    if ran:
        if isinstance(sampler, PlanSampler):
            optimize(study, objective(), n_trials=target - done)
        else:
            _run_in_memory(study, objective(), sampler, target - done)
        study.set_user_attr(WALL_ATTR, attrs.get(WALL_ATTR, 0.0) + time.perf_counter() - started)
        attrs = study.user_attrs
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))[:target]
    curve = np.maximum.accumulate([t.value for t in trials])
    held_out = None
    if test is not None:
        recorded = attrs.get(HELD_OUT_ATTR)
        if recorded is not None and not ran:
            held_out = float(recorded["score"])
        else:
            if isinstance(sampler, PlanSampler):
                params = sampler.result(study).params
            else:
                params = max(trials, key=lambda t: t.value).params  # the first best, as Optuna's
            lambdas = objective().to_lambdas(params)
            if sampler_name == GUARDED:
                X_train, y_train, _, _, estimator, _ = test
                decision = guard(
                    objective(), estimator, np.asarray(X_train, float), y_train, params, seed=seed
                )
                decision.record(study)
                lambdas = decision.lambdas
            held_out = _held_out(*test, lambdas)
            study.set_user_attr(
                HELD_OUT_ATTR,
                {
                    "score": held_out,
                    "metric": metric_name,
                    "fold": settings.get("fold"),
                    "train_rows": len(test[1]),
                    "test_rows": len(test[3]),
                },
            )
    return {
        "name": name,
        "best": float(curve[-1]),
        "curve": curve,
        "trials": len(trials),
        "trials_to_99": int(np.argmax(curve >= 0.99 * curve[-1])) + 1,
        "wall": float(attrs.get(WALL_ATTR, np.nan)),
        "held_out": held_out,
        "ran": ran,
    }


def _run_in_memory(
    study: optuna.Study, objective: BoxCoxObjective, sampler: Any, n_trials: int
) -> None:
    """Optimise with :func:`optimize` on an in-memory copy (seeded with the stored trials),
    appending each chunk's trials to the storage: Optuna's samplers read every trial at each
    step, which a database storage answers far slower than memory."""
    objective.register(study)
    memory = optuna.create_study(direction="maximize", sampler=sampler)
    for key, value in study.user_attrs.items():
        memory.set_user_attr(key, value)
    memory.add_trials(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    remaining = n_trials
    while remaining > 0:
        chunk = min(_CHUNK, remaining)
        before = len(memory.trials)
        optimize(memory, objective, n_trials=chunk)
        write_trials(
            study,
            [_record(t) for t in memory.trials[before:] if t.state == TrialState.COMPLETE],
        )
        remaining -= chunk


def _record(trial: optuna.trial.FrozenTrial) -> TrialRecord:
    return TrialRecord(
        params=trial.params,
        distributions=trial.distributions,
        value=trial.value,
        user_attrs=trial.user_attrs,
        system_attrs={},
        datetime_start=trial.datetime_start,
        datetime_complete=trial.datetime_complete,
    )


def _held_out(X_train, y_train, X_test, y_test, estimator, metric, lambdas) -> float:
    transformer = BoxCoxTransformer(lambdas=lambdas).fit(np.asarray(X_train, float))
    model = clone(estimator).fit(transformer.transform(np.asarray(X_train, float)), y_train)
    predicted = model.predict(transformer.transform(np.asarray(X_test, float)))
    return float(metric(np.asarray(y_test), predicted))


def _wilcoxon(runs: list[SamplerRuns]) -> None:
    reference = next((r for r in runs if r.name == REFERENCE_SAMPLER), None)
    if reference is None:
        return
    for run in runs:
        if run is reference:
            continue
        differences = np.subtract(run.best, reference.best)
        if np.allclose(differences, 0):
            run.p_value = 1.0
            continue
        run.p_value = float(stats.wilcoxon(run.best, reference.best, zero_method="zsplit").pvalue)


# -- the table ------------------------------------------------------------------------------------
def _mean_sd(values: Sequence[float]) -> str:
    if not len(values) or np.all(np.isnan(values)):
        return "—"
    return f"{np.nanmean(values):.4f} ± {np.nanstd(values):.4f}"


def _gap(inner: Sequence[float], outer: Sequence[float]) -> str:
    if not len(inner) or not len(outer) or np.all(np.isnan(inner)):
        return "—"
    return f"{np.nanmean(inner) - np.mean(outer):+.4f}"


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a plain-text table: the first column left-aligned, the others right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]

    def line(cells: Sequence[str]) -> str:
        first, *rest = cells
        return " ".join(
            [f"{first:<{widths[0]}}", *(f"{c:>{w}}" for c, w in zip(rest, widths[1:]))]
        ).rstrip()

    top = line(header)
    return [top, "-" * len(top), *(line(row) for row in rows)]


def format_table(
    runs: list[SamplerRuns],
    references: dict[str, Scores],
    *,
    metric: str = "accuracy",
) -> str:
    """The comparison as a text table.

    Per row: the inner best (the search's own score; for a fixed transform, that score of its
    features), the held-out score (``metric``) and the gap between them (inner − held-out), each
    as mean ± sd over studies (seeds × outer folds) or splits; the same on permuted labels when
    the null check ran; then, for samplers, trials, trials to 99 % of the final best, wall seconds
    and the Wilcoxon signed-rank p-value of the inner best against the coordinate search.
    """
    rows: list[Scores] = [*runs, *references.values()]
    held = any(r.held_out for r in rows)
    null = any(r.null_best for r in rows)
    groups = [("", "best", "held_out")]
    if null:
        groups.append((" (perm.)", "null_best", "null_held_out"))
    header = ["method"]
    for suffix, _, _ in groups:
        header.append(("inner best" if not suffix else "inner") + suffix)
        if held:
            header += ["held-out" + suffix, "gap" + suffix]
    header += ["trials", "to 99%", "wall s", f"Wilcoxon p vs {REFERENCE_SAMPLER}"]
    cells = []
    for r in rows:
        row = [r.name]
        for _, inner_field, held_field in groups:
            inner, outer = getattr(r, inner_field), getattr(r, held_field)
            row.append(_mean_sd(inner))
            if held:
                row += [_mean_sd(outer), _gap(inner, outer)]
        if isinstance(r, SamplerRuns):
            row += [
                f"{np.mean(r.trials):.0f}",
                f"{np.mean(r.trials_to_99):.0f}",
                f"{np.nanmean(r.wall):.1f}",
                "—" if r.p_value is None else f"{r.p_value:.3f}",
            ]
        else:
            row += [""] * 4
        cells.append(row)
    notes = []
    if held:
        notes.append(
            f"held-out: {metric} of the chosen Λ on rows its search did not see; "
            "gap: inner best − held-out"
        )
    if null:
        notes.append("perm.: the same on randomly permuted labels (chance is the null)")
    return "\n".join([*notes, *text_table(header, cells)])


__all__ = [
    "FIXED_TRANSFORMS",
    "Problem",
    "SamplerRuns",
    "Scores",
    "Split",
    "compare",
    "fixed_transform",
    "format_table",
    "held_out_metric",
    "outer_splits",
    "parse_outer_cv",
    "permuted_labels",
    "reference_transforms",
    "run_problems",
    "study_name",
    "text_table",
]
