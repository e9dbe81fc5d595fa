"""``search``, ``worker`` and ``demo``: one study, run or resumed, and reported."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
import time
from typing import Any

from optuna_boxcox.cli._args import UsageError
from optuna_boxcox.cli._args import add_data_arguments
from optuna_boxcox.cli._args import add_jobs_argument
from optuna_boxcox.cli._args import add_objective_arguments
from optuna_boxcox.cli._args import add_scale_arguments
from optuna_boxcox.cli._args import add_storage_argument
from optuna_boxcox.cli._args import load_data
from optuna_boxcox.cli._args import positive

#: Trials for samplers without a plan of their own (TPE, random, …) when --n-trials is not given.
DEFAULT_OPEN_ENDED_TRIALS = 100
#: Settings of the paper's grid samplers that ``search`` offers as options.
GRID_SETTINGS = ("grid_size", "grid_range")
COORDINATE_SETTINGS = ("epochs", "shift_epoch", "shuffle_epoch", "finer_epoch")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a search: what was scored is written; the same command resumes."""

    def __init__(self, n_trials: int) -> None:
        super().__init__(f"interrupted after {n_trials} trials; run the same command to resume")
        self.n_trials = n_trials


def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    add_data_arguments(parser)
    add_objective_arguments(parser)
    add_scale_arguments(parser)
    parser.add_argument(
        "--sampler",
        default="coordinate",
        help="coordinate (the paper's iterative grid search), a Table-4 preset (iterative, "
        "shift, shuffle, finer, combined1, combined2), spherical, diagonal, grid, mle, "
        "nelder-mead, or one of Optuna's: tpe, random, cmaes, qmc, gp (default coordinate)",
    )
    settings = parser.add_argument_group(
        "settings of the paper's samplers (override the preset's; recorded in the study)"
    )
    settings.add_argument("--grid-size", type=positive(int), help="L, grid points per sweep")
    settings.add_argument(
        "--grid-range", help="LOW,HIGH of the global grid (the paper's: -5,5)", metavar="LOW,HIGH"
    )
    settings.add_argument("--epochs", type=positive(int), help="E, passes over all features")
    settings.add_argument("--shift-epoch", type=positive(int), help="Shift every s epochs")
    settings.add_argument("--shuffle-epoch", type=positive(int), help="Shuffle every h epochs")
    settings.add_argument("--finer-epoch", type=positive(int), help="Finer every f epochs")
    add_storage_argument(parser)
    parser.add_argument(
        "--study-name", default=None, help="default: <dataset>/<classifier>/<sampler>"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampler and inner folds")
    add_jobs_argument(
        parser,
        "processes scoring each batch of the paper's samplers (the first worker also writes); "
        "--no-batch and Optuna's samplers: threads of study.optimize",
    )
    parser.add_argument(
        "--n-trials",
        type=positive(int),
        default=None,
        help="trial budget (default: the paper's samplers run their plan; others "
        f"{DEFAULT_OPEN_ENDED_TRIALS})",
    )
    parser.add_argument(
        "--timeout",
        type=positive(float),
        default=None,
        help="stop after this many seconds (between batches); the same command resumes",
    )
    parser.add_argument(
        "--no-figures",
        action="store_true",
        help="do not attach the search's figures and note to the study (shown by optuna-dashboard)",
    )
    parser.add_argument(
        "--report-timings",
        type=Path,
        default=None,
        help=argparse.SUPPRESS,  # for the end-to-end benchmark: when the last trial was written
    )
    parser.add_argument(
        "--no-batch",
        action="store_true",
        help="one trial at a time through study.optimize (to share a study with other workers); "
        "by default the paper's samplers run batch by batch with one write per batch",
    )


def sampler_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The sampler settings given on the command line (refused where the sampler has none)."""
    from optuna_boxcox.samplers import PRESETS

    given: dict[str, Any] = {}
    for name in (*GRID_SETTINGS, *COORDINATE_SETTINGS):
        value = getattr(args, name, None)
        if value is not None:
            given[name] = value
    if "grid_range" in given:
        given["grid_range"] = parse_grid_range(given["grid_range"])
    name = args.sampler.strip().lower().removeprefix("coordinate:")
    coordinate = name == "coordinate" or name in PRESETS
    grid = coordinate or name in ("spherical", "diagonal", "grid")
    wrong = [k for k in given if not grid or (k in COORDINATE_SETTINGS and not coordinate)]
    if wrong:
        options = ", ".join("--" + k.replace("_", "-") for k in wrong)
        verb = "does" if len(wrong) == 1 else "do"
        raise UsageError(f"{options} {verb} not apply to the {args.sampler!r} sampler")
    return given


def parse_grid_range(text: str) -> tuple[float, float]:
    """``"-5,5"`` (or ``"-5:5"``) → (-5.0, 5.0): two finite numbers, the first below the second."""
    try:
        low, high = (float(p) for p in text.replace(":", ",").split(","))
    except ValueError:
        raise UsageError(f"--grid-range must be LOW,HIGH (e.g. -5,5), got {text!r}") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise UsageError(
            f"--grid-range must be two finite numbers LOW,HIGH with LOW < HIGH, got {text!r}"
        )
    return low, high


def run_search(args: argparse.Namespace) -> dict[str, Any]:
    """Run (or resume) one study and return what was found."""
    import numpy as np
    import optuna

    from optuna_boxcox._objective import BoxCoxObjective
    from optuna_boxcox._optimize import RunStats
    from optuna_boxcox._optimize import optimize
    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.samplers import PlanSampler
    from optuna_boxcox.samplers import make_sampler
    from optuna_boxcox.storage import open_storage

    X, y, data_name = load_data(args)
    classifier = make_classifier(args.classifier)
    try:
        sampler = make_sampler(args.sampler, seed=args.seed, **sampler_settings(args))
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None
    objective = BoxCoxObjective(
        X,
        y,
        classifier,
        scoring=args.scoring,
        cv=args.cv,
        random_state=args.seed,
        memory_limit=getattr(args, "max_memory", None),
        subsample=getattr(args, "subsample", None),
    )
    study_name = args.study_name or f"{data_name}/{args.classifier}/{args.sampler}"
    storage = open_storage(args.storage)
    study = optuna.create_study(
        storage=storage,
        study_name=study_name,
        sampler=sampler,
        direction="maximize",
        load_if_exists=True,
    )
    # A study made for another λ space is refused before anything is written.
    objective.register(study)
    spec = {
        "dataset": data_name,
        "classifier": args.classifier,
        "scoring": args.scoring,
        "cv": args.cv if args.cv else "resubstitution",
        "n_samples": int(X.shape[0]),
        "n_features": int(X.shape[1]),
        "subsample": getattr(args, "subsample", None),
        "max_memory": getattr(args, "max_memory", None),
        # What a joining worker needs to rebuild the same objective and sampler.
        "features": args.features,
        "sampler": args.sampler,
        "settings": {
            k: list(v) if isinstance(v, tuple) else v for k, v in sampler_settings(args).items()
        },
        "seed": args.seed,
        "csv": str(args.csv) if args.csv is not None else None,
        "label": args.label,
    }
    if study.user_attrs.get("objective") != spec:
        study.set_user_attr("objective", spec)
    n_trials = args.n_trials
    if n_trials is None and not isinstance(sampler, PlanSampler):
        n_trials = DEFAULT_OPEN_ENDED_TRIALS
    stats = RunStats()
    started = time.perf_counter()
    try:
        result = optimize(
            study,
            objective,
            n_trials=n_trials,
            timeout=args.timeout,
            n_jobs=args.n_jobs,
            show_progress_bar=True,
            batch=not args.no_batch,
            stats=stats,
        )
    except KeyboardInterrupt:
        raise Interrupted(len(study.get_trials(deepcopy=False))) from None
    elapsed = time.perf_counter() - started
    written_at = time.time()
    trials = study.get_trials(deepcopy=False)
    params, best = result.params, result.best_value
    if params is None:
        raise UsageError(f"study {study_name!r} has no finished trial to report")
    base = objective.evaluate(np.ones(len(objective.param_names)))
    mle = objective.evaluate(objective.mle_lambdas)
    if not getattr(args, "no_figures", False):
        from optuna_boxcox.figures import attach_figures
        from optuna_boxcox.figures import search_figures

        figures, note = search_figures(
            study,
            objective,
            sampler,
            result=result,
            trials=trials,
            user_attrs=study.user_attrs,
            base_score=base,
            mle_score=mle,
        )
        attach_figures(study, figures, note)
    return {
        "study": study,
        "study_name": study_name,
        "storage": args.storage,
        "objective": objective,
        "sampler": sampler,
        "result": result,
        "params": params,
        "best": best,
        "base": base,
        "mle": mle,
        "elapsed": elapsed,
        "n_trials": len(trials),
        "new_trials": stats.trials if not args.no_batch else None,
        "written_at": written_at,
    }


def print_search(found: dict[str, Any]) -> None:
    from optuna_boxcox.storage import redact

    objective = found["objective"]
    result = found["result"]
    if found["new_trials"] == 0 and result.finished:
        timing = "finished earlier: nothing to do"
    elif found["new_trials"] == 0:
        timing = "nothing new to do"
    else:
        timing = f"{found['elapsed']:.1f} s"
    print(f"study      {found['study_name']}  ({found['n_trials']} trials, {timing})")
    print(f"storage    {redact(found['storage'])}")
    described = objective.describe()
    if described["subsample"] is not None:
        print(
            f"subsample  every Λ scored on {described['n_scored']} of {described['n_samples']} "
            "rows (stratified); a model with these λ is fitted on all rows"
        )
    print(
        f"score      base (λ = 1) {found['base']:.4f}   MLE {found['mle']:.4f}   "
        f"Box-Cox search {found['best']:.4f}"
    )
    if not result.finished and result.budget is None and hasattr(found["sampler"], "budget"):
        print("           (the plan is not finished: run the same command to continue it)")
    print("λ by feature:")
    width = max(len(n) for n in objective.param_names)
    mle = objective.mle_params
    print(f"  {'feature':<{width}}  {'λ':>8}  {'λ_MLE':>8}")
    for name in objective.param_names:
        print(f"  {name:<{width}}  {found['params'][name]:8.3f}  {mle[name]:8.3f}")


def dashboard_hint(storage: str) -> str:
    from optuna_boxcox.storage import redact

    return (
        f"open it in optuna-dashboard:  optuna-boxcox dashboard {redact(storage)}    "
        f"(or: optuna-dashboard {redact(storage)})"
    )


def cmd_search(args: argparse.Namespace) -> int:
    found = run_search(args)
    print_search(found)
    print(dashboard_hint(found["storage"]))
    if args.report_timings is not None:
        import json

        from optuna_boxcox._process import peak_rss_kib

        timings = {"written_at": found["written_at"], "peak_kib": peak_rss_kib()}
        args.report_timings.write_text(json.dumps(timings))
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Join an existing study as one more worker, trial by trial, with the study's own settings."""
    import optuna

    from optuna_boxcox.storage import open_storage
    from optuna_boxcox.storage import redact

    storage = open_storage(args.storage, create=False)
    try:
        study = optuna.load_study(study_name=args.study_name, storage=storage)
    except KeyError:
        raise UsageError(
            f"no study {args.study_name!r} in {redact(args.storage)}; start it with 'search'"
        ) from None
    spec = study.user_attrs.get("objective")
    if not spec or "sampler" not in spec:
        raise UsageError(
            f"study {args.study_name!r} was not created by 'optuna-boxcox search'; cannot join it"
        )
    csv = args.csv or (Path(spec["csv"]) if spec.get("csv") else None)
    settings = spec.get("settings") or {}
    joined = argparse.Namespace(
        dataset=None if csv else spec["dataset"],
        csv=csv,
        label=args.label or spec.get("label"),
        features=spec.get("features"),
        subsample=spec.get("subsample"),
        max_memory=spec.get("max_memory"),
        classifier=spec["classifier"],
        sampler=spec["sampler"],
        scoring=spec["scoring"],
        cv=None if spec["cv"] == "resubstitution" else spec["cv"],
        storage=args.storage,
        study_name=args.study_name,
        seed=spec["seed"],
        n_jobs=args.n_jobs,
        n_trials=None,
        timeout=None,
        no_batch=True,
        no_figures=True,
        **{name: settings.get(name) for name in (*GRID_SETTINGS, *COORDINATE_SETTINGS)},
    )
    if joined.grid_range is not None:
        joined.grid_range = ",".join(map(str, joined.grid_range))
    found = run_search(joined)
    print(f"worker done: study {args.study_name!r} has {found['n_trials']} trials")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from optuna_boxcox.storage import redact

    args = argparse.Namespace(
        dataset="wine",
        csv=None,
        label=None,
        features=None,
        classifier="knn",
        sampler="coordinate",
        scoring="accuracy",
        cv=None,
        storage=args.storage,
        study_name="demo/wine/knn/coordinate",
        seed=0,
        n_jobs=1,
        n_trials=None,
        timeout=None,
        no_batch=False,
        no_figures=False,
    )
    print(
        "optuna-boxcox demo: the paper's iterative coordinate grid search (Algorithm 6) "
        "choosing one"
    )
    print(
        "Box-Cox λ per feature of scikit-learn's wine data for a k-nearest-neighbours "
        "classifier.\n"
    )
    found = run_search(args)
    print_search(found)
    print(f"\nthe study is in {redact(found['storage'])} as {found['study_name']!r}")
    print(dashboard_hint(found["storage"]))
    return 0


def register(subparsers: Any) -> None:
    search = subparsers.add_parser(
        "search", help="run or resume one study (one data set, classifier, sampler)"
    )
    add_search_arguments(search)
    search.set_defaults(func=cmd_search)

    worker = subparsers.add_parser(
        "worker",
        help="join an existing study as one more worker (e.g. many machines on PostgreSQL)",
    )
    worker.add_argument("--storage", required=True, help="the study's storage URL")
    worker.add_argument("--study-name", required=True, help="the study to join")
    worker.add_argument(
        "--csv",
        type=Path,
        default=None,
        help="the data, when the study was made from a CSV elsewhere",
    )
    worker.add_argument("--label", default=None, help="the class column of --csv")
    add_jobs_argument(worker, "threads of study.optimize in this worker")
    worker.set_defaults(func=cmd_worker)

    demo = subparsers.add_parser(
        "demo", help="a real search on a bundled data set, recorded in SQLite"
    )
    add_storage_argument(demo)
    demo.set_defaults(func=cmd_demo)
