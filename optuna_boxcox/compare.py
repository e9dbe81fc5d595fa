"""Comparing samplers on one data set: same budget, several seeds, one storage, resumable.

Every (sampler, seed) is its own study named ``<dataset>/<classifier>/<sampler>/seed<k>``, followed
by a tag of the settings that differ from the defaults (``/n300`` for a budget given explicitly,
``/f1`` for another scoring, ``/cv5``, ``/test0.25``), so a comparison with other settings never
reads another's studies. The paper's samplers run through :func:`optuna_boxcox.optimize` (batch by
batch) and stop at the budget if their plan is longer; Optuna's samplers run on an in-memory copy of
the study and their trials are appended to the storage in one write per chunk, so a comparison
costs what the samplers cost, not what per-parameter commits cost. A study that already holds its
trials is read, not re-run; independent studies run in parallel with ``n_jobs``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
import time
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState
from scipy import stats
from sklearn.base import clone
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.preprocessing import PowerTransformer
from sklearn.preprocessing import QuantileTransformer
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._objective import CRITERIA
from optuna_boxcox._objective import METRICS
from optuna_boxcox._objective import BoxCoxObjective
from optuna_boxcox._optimize import optimize
from optuna_boxcox._optuna._write import TrialRecord
from optuna_boxcox._optuna._write import write_trials
from optuna_boxcox._parallel import map_tasks
from optuna_boxcox._progress import Progress
from optuna_boxcox._settings import record_settings
from optuna_boxcox._transform import BoxCoxTransformer
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import open_storage

if TYPE_CHECKING:
    from collections.abc import Sequence

    from optuna.storages import BaseStorage

#: The sampler every other is tested against, and whose budget is the default.
REFERENCE_SAMPLER = "coordinate"
#: Trials an Optuna sampler runs in memory between two writes to the storage.
_CHUNK = 200
#: Study user attributes: seconds the sampler ran (summed over runs that did work), and the
#: comparison's settings.
WALL_ATTR = "wall_seconds"
SETTINGS_ATTR = "compare"


@dataclass
class SamplerRuns:
    """The studies of one sampler, one per seed."""

    name: str
    best: list[float] = field(default_factory=list)
    held_out: list[float] = field(default_factory=list)
    trials: list[int] = field(default_factory=list)
    trials_to_99: list[int] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    curves: list[np.ndarray] = field(default_factory=list)
    p_value: float | None = None


def reference_transforms() -> dict[str, Any]:
    """What a user would otherwise do, scored the same way."""
    return {
        "no transform (StandardScaler)": StandardScaler(),
        "PowerTransformer box-cox (MLE, after [1,2] scaling)": make_pipeline(
            MinMaxScaler(feature_range=(1, 2)), PowerTransformer(method="box-cox")
        ),
        "PowerTransformer yeo-johnson": PowerTransformer(method="yeo-johnson"),
        "QuantileTransformer (normal)": make_pipeline(
            QuantileTransformer(output_distribution="normal", n_quantiles=100, random_state=0),
            StandardScaler(),
        ),
    }


def held_out_metric(scoring: Any) -> tuple[str, Callable[[np.ndarray, np.ndarray], float]]:
    """The metric held-out predictions are scored with: the search's own, or accuracy when the
    search scores a classifier-free criterion."""
    if callable(scoring):
        return getattr(scoring, "__name__", "score"), scoring
    if scoring in CRITERIA:
        return "accuracy", accuracy_score
    return scoring, METRICS[scoring]


def study_name(
    dataset: str,
    classifier: str,
    sampler: str,
    seed: int,
    *,
    n_trials: int | None = None,
    scoring: Any = "accuracy",
    cv: int | None = None,
    test_size: float | None = None,
) -> str:
    """``<dataset>/<classifier>/<sampler>/seed<k>``, tagged with the non-default settings."""
    tags = []
    if n_trials is not None:
        tags.append(f"n{n_trials}")
    if scoring != "accuracy":
        tags.append(held_out_metric(scoring)[0] if callable(scoring) else str(scoring))
    if cv:
        tags.append(f"cv{cv}")
    if test_size:
        tags.append(f"test{test_size:g}")
    return "/".join(
        [dataset, classifier, sampler, f"seed{seed}", *(["-".join(tags)] if tags else [])]
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
    n_jobs: int = 1,
    progress: bool = False,
) -> tuple[list[SamplerRuns], dict[str, tuple[float, float | None]]]:
    """Run (or read back) every sampler × seed; return per-sampler runs and reference scores.

    Args:
        X, y: The data.
        estimator: The classifier.
        dataset, classifier: Names, for the study names.
        samplers: Registry names (:func:`~optuna_boxcox.make_sampler`).
        seeds: Studies per sampler (seeds 0 … seeds - 1).
        n_trials: Trials per study (default: the coordinate search's E·p·L). A paper sampler whose
            plan is shorter runs its plan; a longer one stops at the budget.
        storage: Where the studies live (URL, or a storage when ``n_jobs`` is 1).
        scoring, cv: The search's score (see :class:`~optuna_boxcox.BoxCoxObjective`).
        test_size: Hold out a stratified part of the data: searches see only the rest, and each
            chosen Λ is scored on the held-out part (classifier fitted on the search data) with
            the search's metric (accuracy for a classifier-free criterion).
        n_jobs: Studies run at once, each in a process of its own (-1: one per CPU).
        progress: Show progress over the studies, with the time left.
    """
    X_train, X_test, y_train, y_test = X, None, y, None
    if test_size:
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=test_size, stratify=y, random_state=0
        )
    objective = BoxCoxObjective(X_train, y_train, estimator, scoring=scoring, cv=cv)
    budget = n_trials or make_sampler(REFERENCE_SAMPLER).budget(objective.space.dim)
    settings = {
        "budget": budget,
        "scoring": scoring if isinstance(scoring, str) else held_out_metric(scoring)[0],
        "cv": cv,
        "test_size": test_size,
    }
    tasks = [(name, seed) for name in samplers for seed in range(seeds)]
    names = {
        task: study_name(
            dataset,
            classifier,
            task[0],
            task[1],
            n_trials=n_trials,
            scoring=scoring,
            cv=cv,
            test_size=test_size,
        )
        for task in tasks
    }
    if n_jobs != 1 and not isinstance(storage, (str, type(None))):
        n_jobs = 1  # a storage object cannot be shared with forked processes
    store = (
        open_storage(storage)
        if n_jobs == 1 and not hasattr(storage, "get_all_trials")
        else storage
    )
    metric = held_out_metric(scoring)[1]
    test = None if X_test is None else (X_train, y_train, X_test, y_test, estimator, metric)

    def work(task: tuple[str, int]) -> dict[str, Any]:
        target = store if n_jobs == 1 else open_storage(storage)
        return _run_one(target, names[task], objective, task[0], task[1], budget, settings, test)

    found: dict[tuple[str, int], dict[str, Any]] = {}
    with Progress(len(tasks), unit="study", label="compare", enabled=progress) as bar:

        def collect(task: tuple[str, int], summary: dict[str, Any]) -> None:
            found[task] = summary
            bar.update()

        map_tasks(tasks, work, collect, n_jobs=n_jobs)
    runs = []
    for name in samplers:
        run = SamplerRuns(name)
        for seed in range(seeds):
            summary = found[(name, seed)]
            run.best.append(summary["best"])
            run.curves.append(summary["curve"])
            run.trials.append(len(summary["curve"]))
            run.trials_to_99.append(summary["trials_to_99"])
            run.wall.append(summary["wall"])
            if summary["held_out"] is not None:
                run.held_out.append(summary["held_out"])
        runs.append(run)
    _wilcoxon(runs)
    references = {}
    for label, transform in reference_transforms().items():
        inner = objective.score_features(clone(transform).fit_transform(objective.X))
        outer = None
        if X_test is not None:
            model = make_pipeline(clone(transform), clone(estimator)).fit(
                np.asarray(X_train, float), y_train
            )
            outer = float(metric(np.asarray(y_test), model.predict(np.asarray(X_test, float))))
        references[label] = (inner, outer)
    return runs, references


def _run_one(
    store: Any,
    name: str,
    objective: BoxCoxObjective,
    sampler_name: str,
    seed: int,
    budget: int,
    settings: dict[str, Any],
    test: tuple | None,
) -> dict[str, Any]:
    """Run (or read) one study; return what the table needs of it."""
    # Nelder–Mead's plan has no natural end: give it the shared budget. The paper's grid samplers
    # keep their own (fixed) plans, stopped at the budget when longer.
    sampler_settings = {"n_trials": budget} if sampler_name == "nelder-mead" else {}
    sampler = make_sampler(sampler_name, seed=seed, **sampler_settings)
    study = optuna.create_study(
        storage=store,
        study_name=name,
        direction="maximize",
        sampler=sampler,
        load_if_exists=True,
    )
    record_settings(
        study,
        SETTINGS_ATTR,
        settings,
        hint="use another --storage, or delete the study to run it again",
    )
    target = budget
    if isinstance(sampler, PlanSampler):
        target = min(budget, sampler.budget(objective.space.dim))
    done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    started = time.perf_counter()
    if done < target:
        if isinstance(sampler, PlanSampler):
            optimize(study, objective, n_trials=target - done)
        else:
            _run_in_memory(study, objective, sampler, target - done)
        previous = study.user_attrs.get(WALL_ATTR, 0.0)
        study.set_user_attr(WALL_ATTR, previous + time.perf_counter() - started)
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))[:target]
    if isinstance(sampler, PlanSampler):
        params = sampler.result(study).params
    else:
        params = max(trials, key=lambda t: t.value).params  # the first best, as Optuna's
    curve = np.maximum.accumulate([t.value for t in trials])
    held_out = None
    if test is not None:
        held_out = _held_out(*test, objective.to_lambdas(params))
    return {
        "best": float(curve[-1]),
        "curve": curve,
        "trials_to_99": int(np.argmax(curve >= 0.99 * curve[-1])) + 1,
        "wall": float(study.user_attrs.get(WALL_ATTR, np.nan)),
        "held_out": held_out,
    }


def _run_in_memory(
    study: optuna.Study, objective: BoxCoxObjective, sampler: Any, n_trials: int
) -> None:
    """Optimise on an in-memory copy (seeded with the stored trials), appending chunks to storage."""
    objective.register(study)
    memory = optuna.create_study(direction="maximize", sampler=sampler)
    for key, value in study.user_attrs.items():
        memory.set_user_attr(key, value)
    memory.add_trials(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    remaining = n_trials
    while remaining > 0:
        chunk = min(_CHUNK, remaining)
        before = len(memory.trials)
        memory.optimize(objective, n_trials=chunk)
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


def format_table(
    runs: list[SamplerRuns],
    references: dict[str, tuple[float, float | None]],
    *,
    metric: str = "accuracy",
) -> str:
    """The comparison as a text table: inner best, held-out score (``metric``), trials, speed."""
    held = any(r.held_out for r in runs)
    held_title = f"held-out {metric}"
    width = max(len(held_title), 9)
    header = f"{'sampler':<52} {'best inner (mean ± sd)':>22}" + (
        f" {held_title:>{width}}" if held else ""
    )
    header += (
        f" {'trials':>7} {'trials to 99%':>13} {'wall s':>8} {'Wilcoxon p vs coordinate':>25}"
    )
    lines = [header, "-" * len(header)]
    for r in runs:
        line = f"{r.name:<52} {np.mean(r.best):>12.4f} ± {np.std(r.best):<7.4f}"
        if held:
            line += f" {np.mean(r.held_out):>{width}.4f}"
        p = "—" if r.p_value is None else f"{r.p_value:.3f}"
        line += (
            f" {np.mean(r.trials):>7.0f} {np.mean(r.trials_to_99):>13.0f}"
            f" {np.nanmean(r.wall):>8.1f} {p:>25}"
        )
        lines.append(line)
    for label, (inner, outer) in references.items():
        line = f"{label:<52} {inner:>12.4f}          "
        if held:
            line += f" {outer:>{width}.4f}"
        lines.append(line)
    return "\n".join(lines)


__all__ = ["compare", "format_table", "held_out_metric", "reference_transforms", "study_name"]
