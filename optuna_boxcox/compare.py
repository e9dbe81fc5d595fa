"""Comparing samplers on one data set: same budget, several seeds, one storage, resumable.

Every (sampler, seed) is its own study named ``<dataset>/<classifier>/<sampler>/seed<k>``. The
paper's samplers run batch by batch (:func:`~optuna_boxcox._runner.run_batched`); Optuna's samplers
run on an in-memory copy of the study and their trials are appended to the storage in one write per
chunk, so a comparison costs what the samplers cost, not what per-parameter commits cost. A study
that already holds its budget is read, not re-run.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
import time
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState
from scipy import stats
from sklearn.base import clone
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.preprocessing import PowerTransformer
from sklearn.preprocessing import QuantileTransformer
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._objective import BoxCoxObjective
from optuna_boxcox._persist import TrialRecord
from optuna_boxcox._persist import write_trials
from optuna_boxcox._runner import run_batched
from optuna_boxcox._transform import BoxCoxTransformer
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import open_storage

if TYPE_CHECKING:
    from collections.abc import Sequence

#: The sampler every other is tested against, and whose budget is the default.
REFERENCE_SAMPLER = "coordinate"
#: Trials an Optuna sampler runs in memory between two writes to the storage.
_CHUNK = 200
WALL_ATTR = "wall_seconds"


@dataclass
class SamplerRuns:
    """The studies of one sampler, one per seed."""

    name: str
    best: list[float] = field(default_factory=list)
    held_out: list[float] = field(default_factory=list)
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
    storage: str | None = None,
    scoring: str = "accuracy",
    cv: int | None = None,
    test_size: float | None = None,
    n_jobs: int = 1,
    progress: bool = False,
) -> tuple[list[SamplerRuns], dict[str, tuple[float, float | None]]]:
    """Run (or read back) every sampler × seed; return per-sampler runs and reference scores.

    ``test_size`` holds out a stratified part of the data: searches see only the rest, and each
    chosen Λ is also scored on the held-out part (classifier fitted on the search data).
    """
    X_train, X_test, y_train, y_test = X, None, y, None
    if test_size:
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=test_size, stratify=y, random_state=0
        )
    objective = BoxCoxObjective(X_train, y_train, estimator, scoring=scoring, cv=cv)
    budget = n_trials or make_sampler(REFERENCE_SAMPLER).budget(len(objective.param_names))
    store = open_storage(storage)
    runs = []
    for name in samplers:
        run = SamplerRuns(name)
        for seed in range(seeds):
            study_name = f"{dataset}/{classifier}/{name}/seed{seed}"
            study, params = _run_one(
                store, study_name, objective, name, seed, budget, n_jobs, progress
            )
            values = [
                t.value for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            ]
            curve = np.maximum.accumulate(values)
            run.best.append(float(curve[-1]))
            run.curves.append(curve)
            run.trials_to_99.append(int(np.argmax(curve >= 0.99 * curve[-1])) + 1)
            run.wall.append(float(study.user_attrs.get(WALL_ATTR, np.nan)))
            if X_test is not None:
                run.held_out.append(
                    _held_out(
                        X_train, y_train, X_test, y_test, estimator, objective.to_lambdas(params)
                    )
                )
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
            outer = float(np.mean(model.predict(np.asarray(X_test, float)) == np.asarray(y_test)))
        references[label] = (inner, outer)
    return runs, references


def _run_one(store, study_name, objective, name, seed, budget, n_jobs, progress):
    # Nelder–Mead's plan has no natural end: give it the shared budget. The paper's grid samplers
    # keep their own (fixed) plans.
    settings = {"n_trials": budget} if name == "nelder-mead" else {}
    sampler = make_sampler(name, seed=seed, **settings)
    study = optuna.create_study(
        storage=store,
        study_name=study_name,
        direction="maximize",
        sampler=sampler,
        load_if_exists=True,
    )
    done = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    started = time.perf_counter()
    if isinstance(sampler, PlanSampler):
        if done < sampler.budget(objective.space.dim):
            run_batched(study, objective, sampler, n_jobs=n_jobs)
        result = sampler.result(study)
        params = result.params
    else:
        if done < budget:
            _run_in_memory(study, objective, sampler, budget - done)
        params = study.best_params
    if done < budget:
        previous = study.user_attrs.get(WALL_ATTR, 0.0)
        study.set_user_attr(WALL_ATTR, previous + time.perf_counter() - started)
    if progress:
        print(f"  {study_name}: {len(study.trials)} trials", flush=True)
    return study, params


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
            study, [_record(t) for t in memory.trials[before:] if t.state == TrialState.COMPLETE]
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


def _held_out(X_train, y_train, X_test, y_test, estimator, lambdas) -> float:
    transformer = BoxCoxTransformer(lambdas=lambdas).fit(np.asarray(X_train, float))
    model = clone(estimator).fit(transformer.transform(np.asarray(X_train, float)), y_train)
    predicted = model.predict(transformer.transform(np.asarray(X_test, float)))
    return float(np.mean(predicted == np.asarray(y_test)))


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
    runs: list[SamplerRuns], references: dict[str, tuple[float, float | None]]
) -> str:
    held = any(r.held_out for r in runs)
    header = f"{'sampler':<52} {'best inner (mean ± sd)':>22}" + (
        f" {'held-out':>9}" if held else ""
    )
    header += f" {'trials to 99%':>13} {'wall s':>8} {'Wilcoxon p vs coordinate':>25}"
    lines = [header, "-" * len(header)]
    for r in runs:
        line = f"{r.name:<52} {np.mean(r.best):>12.4f} ± {np.std(r.best):<7.4f}"
        if held:
            line += f" {np.mean(r.held_out):>9.4f}"
        p = "—" if r.p_value is None else f"{r.p_value:.3f}"
        line += f" {np.mean(r.trials_to_99):>13.0f} {np.nanmean(r.wall):>8.1f} {p:>25}"
        lines.append(line)
    for label, (inner, outer) in references.items():
        line = f"{label:<52} {inner:>12.4f}          "
        if held:
            line += f" {outer:>9.4f}"
        lines.append(line)
    return "\n".join(lines)


# -- command line -------------------------------------------------------------------------------
def register(subparsers: Any) -> None:
    from optuna_boxcox.classifiers import CLASSIFIERS
    from optuna_boxcox.cli import DEFAULT_STORAGE

    parser = subparsers.add_parser(
        "compare", help="several samplers × seeds on one data set, as one table"
    )
    data = parser.add_mutually_exclusive_group()
    data.add_argument("--dataset", default="breast_cancer")
    data.add_argument("--csv", type=Path)
    parser.add_argument("--label", help="the class column of --csv")
    parser.add_argument("--features", type=int, default=None, help="use only the first N features")
    parser.add_argument("--classifier", default="knn", help=f"one of {', '.join(CLASSIFIERS)}")
    parser.add_argument(
        "--samplers",
        default="coordinate,tpe,nelder-mead,random",
        help="comma-separated registry names",
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--n-trials",
        type=int,
        default=None,
        help=f"budget per study (default: the {REFERENCE_SAMPLER} sampler's E·p·L)",
    )
    parser.add_argument("--scoring", default="accuracy")
    parser.add_argument("--cv", type=int, default=None)
    parser.add_argument(
        "--test-size", type=float, default=None, help="hold out this fraction for an outer score"
    )
    parser.add_argument("--storage", default=DEFAULT_STORAGE)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument(
        "--plot", type=Path, default=None, help="best-so-far plot (HTML); default under studies/"
    )
    parser.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.cli import UsageError
    from optuna_boxcox.cli import load_data
    from optuna_boxcox.samplers import SAMPLERS

    names = [s.strip() for s in args.samplers.split(",") if s.strip()]
    unknown = [n for n in names if n not in SAMPLERS and not n.startswith("coordinate:")]
    if unknown:
        raise UsageError(
            f"unknown sampler(s) {', '.join(unknown)}; choose from {', '.join(SAMPLERS)}"
        )
    if args.seeds < 1:
        raise UsageError("--seeds must be at least 1")
    X, y, data_name = load_data(args)
    print(
        f"comparing {', '.join(names)} on {data_name} with {args.classifier}, {args.seeds} seeds",
        flush=True,
    )
    runs, references = compare(
        X,
        y,
        make_classifier(args.classifier),
        dataset=data_name,
        classifier=args.classifier,
        samplers=names,
        seeds=args.seeds,
        n_trials=args.n_trials,
        storage=args.storage,
        scoring=args.scoring,
        cv=args.cv,
        test_size=args.test_size,
        n_jobs=args.n_jobs,
        progress=True,
    )
    print(format_table(runs, references))
    plot = args.plot or Path("studies") / f"compare-{data_name}-{args.classifier}.html"
    plot.parent.mkdir(parents=True, exist_ok=True)
    from optuna_boxcox.figures import best_so_far

    store = open_storage(args.storage)
    studies = {
        r.name: [
            optuna.load_study(
                study_name=f"{data_name}/{args.classifier}/{r.name}/seed{k}", storage=store
            )
            for k in range(args.seeds)
        ]
        for r in runs
    }
    best_so_far(studies).write_html(str(plot), include_plotlyjs=True)
    print(f"best-so-far plot: {plot}")
    return 0


__all__ = ["compare", "format_table", "reference_transforms"]
