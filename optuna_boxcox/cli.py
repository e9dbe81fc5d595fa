"""The ``optuna-boxcox`` command line: thin composition of the package's pieces."""

from __future__ import annotations

import argparse
from pathlib import Path
import sys
import time
from typing import Any

import numpy as np
import optuna

from optuna_boxcox import __version__
from optuna_boxcox._objective import CRITERIA
from optuna_boxcox._objective import METRICS
from optuna_boxcox._objective import BoxCoxObjective
from optuna_boxcox._runner import run_batched
from optuna_boxcox.classifiers import CLASSIFIERS
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.datasets import DATASETS
from optuna_boxcox.datasets import DataError
from optuna_boxcox.datasets import load_csv
from optuna_boxcox.datasets import load_dataset
from optuna_boxcox.figures import attach_figures
from optuna_boxcox.figures import search_figures
from optuna_boxcox.samplers import SAMPLERS
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import DEFAULT_STORAGE
from optuna_boxcox.storage import open_storage
from optuna_boxcox.storage import redact

#: Modules that add sub-commands (each defines ``register(subparsers)``).
_COMMAND_MODULES: list[str] = [
    "optuna_boxcox.compare",
    "optuna_boxcox.reproduce",
    "optuna_boxcox.meta",
    "optuna_boxcox.bench",
]


class UsageError(Exception):
    """A problem the user can fix; printed as one line without a traceback."""


# -- search ------------------------------------------------------------------------------------
def add_search_arguments(parser: argparse.ArgumentParser) -> None:
    data = parser.add_mutually_exclusive_group()
    data.add_argument("--dataset", default=None, help=f"a named data set: {', '.join(DATASETS)}")
    data.add_argument("--csv", type=Path, help="a CSV file with a header row (needs --label)")
    parser.add_argument("--label", help="the class column of --csv")
    parser.add_argument(
        "--features", type=int, default=None, help="use only the first N features (quick runs)"
    )
    parser.add_argument("--classifier", default="knn", help=f"one of {', '.join(CLASSIFIERS)}")
    parser.add_argument(
        "--sampler",
        default="coordinate",
        help="coordinate (the paper's iterative grid search) or a Table-4 preset "
        f"(iterative, shift, shuffle, finer, combined1, combined2), or: {', '.join(SAMPLERS)}",
    )
    parser.add_argument(
        "--scoring",
        default="accuracy",
        help=f"one of {', '.join([*METRICS, *CRITERIA])} (default: accuracy)",
    )
    parser.add_argument(
        "--cv", type=int, default=None, help="inner k-fold instead of resubstitution"
    )
    parser.add_argument(
        "--storage",
        default=DEFAULT_STORAGE,
        help=f"study storage URL or journal file (default {DEFAULT_STORAGE})",
    )
    parser.add_argument(
        "--study-name", default=None, help="default: <dataset>/<classifier>/<sampler>"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--n-jobs",
        type=int,
        default=1,
        help="batched paper samplers: processes scoring each batch (this one writes meanwhile); "
        "--no-batch and other samplers: threads of study.optimize",
    )
    parser.add_argument(
        "--n-trials",
        type=int,
        default=None,
        help="trial budget (default: the sampler's own, or 100)",
    )
    parser.add_argument(
        "--no-figures",
        action="store_true",
        help="do not attach the search's figures and note to the study (shown by optuna-dashboard)",
    )
    parser.add_argument(
        "--no-batch",
        action="store_true",
        help="one trial at a time through study.optimize (to share a study with other workers); "
        "by default the paper's samplers run batch by batch with one write per batch",
    )


def load_data(args: argparse.Namespace) -> tuple[Any, Any, str]:
    if args.csv is not None:
        if not args.label:
            raise UsageError("--csv needs --label naming the class column")
        X, y = load_csv(args.csv, args.label)
        name = args.csv.stem
    else:
        name = args.dataset or "breast_cancer"
        X, y = load_dataset(name)
    if args.features is not None:
        if args.features < 1:
            raise UsageError(f"--features must be at least 1, got {args.features}")
        X = X.iloc[:, : args.features]
    return X, y, name


def run_search(args: argparse.Namespace) -> dict[str, Any]:
    """Run (or resume) one study and return what was found."""
    X, y, data_name = load_data(args)
    classifier = make_classifier(args.classifier)
    try:
        sampler = make_sampler(args.sampler, seed=args.seed)
    except ValueError as error:
        raise UsageError(str(error)) from None
    objective = BoxCoxObjective(
        X, y, classifier, scoring=args.scoring, cv=args.cv, random_state=args.seed
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
    objective.register(
        study
    )  # a study made for another λ space is refused before anything is written
    study.set_user_attr(
        "objective",
        {
            "dataset": data_name,
            "classifier": args.classifier,
            "scoring": args.scoring,
            "cv": args.cv if args.cv else "resubstitution",
            "n_samples": int(X.shape[0]),
            "n_features": int(X.shape[1]),
            # What a joining worker needs to rebuild the same objective and sampler.
            "features": args.features,
            "sampler": args.sampler,
            "seed": args.seed,
            "csv": str(args.csv) if args.csv is not None else None,
            "label": args.label,
        },
    )
    budget = None
    if isinstance(sampler, PlanSampler):
        budget = sampler.budget(len(objective.param_names))
    n_trials = args.n_trials
    if n_trials is None and budget is None:
        n_trials = 100
    started = time.perf_counter()
    with _progress(study, budget if n_trials is None else n_trials) as progress:
        if budget is not None and n_trials is None and not args.no_batch:
            run_batched(study, objective, sampler, n_jobs=args.n_jobs, on_batch=progress.batch)
        else:
            study.optimize(objective, n_trials=n_trials, n_jobs=args.n_jobs, callbacks=[progress])
    elapsed = time.perf_counter() - started
    if isinstance(sampler, PlanSampler) and sampler.result(study).params is not None:
        result = sampler.result(study)
        params, best = result.params, result.best_value
    else:
        params, best = study.best_params, study.best_value
    if not getattr(args, "no_figures", False):
        attach_figures(study, *search_figures(study, objective, sampler))
    return {
        "study": study,
        "study_name": study_name,
        "storage": args.storage,
        "objective": objective,
        "sampler": sampler,
        "params": params,
        "best": best,
        "base": objective.evaluate(np.ones(len(objective.param_names))),
        "mle": objective.evaluate(objective.mle_lambdas),
        "elapsed": elapsed,
    }


class _progress:
    """A tqdm bar over the trials of a study (on a terminal), as an Optuna callback."""

    def __init__(self, study: optuna.Study, total: int | None) -> None:
        self.study, self.total, self.bar, self._written = study, total, None, 0

    def __enter__(self):
        if sys.stderr.isatty():
            from tqdm import tqdm

            done = len(
                self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
            )
            self.bar = tqdm(total=self.total, initial=min(done, self.total or done), unit="trial")
        return self

    def __call__(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if self.bar is not None:
            self.bar.update(1)

    def batch(self, written: int, total: int | None) -> None:
        if self.bar is not None:
            self.bar.update(written - self._written)
            self._written = written

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.close()


def print_search(found: dict[str, Any]) -> None:
    objective = found["objective"]
    print(
        f"study      {found['study_name']}  ({len(found['study'].trials)} trials, {found['elapsed']:.1f} s)"
    )
    print(f"storage    {redact(found['storage'])}")
    print(
        f"score      base (λ = 1) {found['base']:.4f}   MLE {found['mle']:.4f}   Box-Cox search {found['best']:.4f}"
    )
    print("λ by feature:")
    width = max(len(n) for n in objective.param_names)
    mle = objective.mle_params
    print(f"  {'feature':<{width}}  {'λ':>8}  {'λ_MLE':>8}")
    for name in objective.param_names:
        print(f"  {name:<{width}}  {found['params'][name]:8.3f}  {mle[name]:8.3f}")


def dashboard_hint(storage: str) -> str:
    return f"open it in optuna-dashboard:  optuna-boxcox dashboard {redact(storage)}    (or: optuna-dashboard {redact(storage)})"


def cmd_search(args: argparse.Namespace) -> int:
    found = run_search(args)
    print_search(found)
    print(dashboard_hint(found["storage"]))
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Join an existing study as one more worker, trial by trial, with the study's own settings."""
    storage = open_storage(args.storage)
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
    joined = argparse.Namespace(
        dataset=None if csv else spec["dataset"],
        csv=csv,
        label=args.label or spec.get("label"),
        features=spec.get("features"),
        classifier=spec["classifier"],
        sampler=spec["sampler"],
        scoring=spec["scoring"],
        cv=None if spec["cv"] == "resubstitution" else spec["cv"],
        storage=args.storage,
        study_name=args.study_name,
        seed=spec["seed"],
        n_jobs=args.n_jobs,
        n_trials=None,
        no_batch=True,
        no_figures=True,
    )
    found = run_search(joined)
    print(f"worker done: study {args.study_name!r} has {len(found['study'].trials)} trials")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
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
        no_batch=False,
        no_figures=False,
    )
    print(
        "optuna-boxcox demo: the paper's iterative coordinate grid search (Algorithm 6) choosing one"
    )
    print(
        "Box-Cox λ per feature of scikit-learn's wine data for a k-nearest-neighbours classifier.\n"
    )
    found = run_search(args)
    print_search(found)
    print(f"\nthe study is in {redact(found['storage'])} as {found['study_name']!r}")
    print(dashboard_hint(found["storage"]))
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    from optuna.artifacts import FileSystemArtifactStore
    import optuna_dashboard

    storage = open_storage(args.storage)
    artifacts = Path(args.artifact_dir)
    artifacts.mkdir(parents=True, exist_ok=True)
    print(
        f"optuna-dashboard on {redact(args.storage)}: http://{args.host}:{args.port}/  (Ctrl-C stops it)",
        flush=True,
    )
    optuna_dashboard.run_server(
        storage,
        host=args.host,
        port=args.port,
        artifact_store=FileSystemArtifactStore(str(artifacts)),
    )
    return 0


# -- entry point ---------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="optuna-boxcox",
        description="Per-feature Box-Cox λ chosen for a classifier, searched with Optuna samplers.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    search = sub.add_parser(
        "search", help="run or resume one study (one data set, classifier, sampler)"
    )
    add_search_arguments(search)
    search.set_defaults(func=cmd_search)

    worker = sub.add_parser(
        "worker",
        help="join an existing study as one more worker (e.g. many machines on PostgreSQL)",
    )
    worker.add_argument("--storage", required=True, help="the study's storage URL")
    worker.add_argument("--study-name", required=True)
    worker.add_argument(
        "--csv",
        type=Path,
        default=None,
        help="the data, when the study was made from a CSV elsewhere",
    )
    worker.add_argument("--label", default=None)
    worker.add_argument(
        "--n-jobs", type=int, default=1, help="threads of study.optimize in this worker"
    )
    worker.set_defaults(func=cmd_worker)

    demo = sub.add_parser("demo", help="a real search on a bundled data set, recorded in SQLite")
    demo.add_argument("--storage", default=DEFAULT_STORAGE)
    demo.set_defaults(func=cmd_demo)

    dash = sub.add_parser(
        "dashboard", help="serve optuna-dashboard on a study storage (127.0.0.1 by default)"
    )
    dash.add_argument(
        "storage",
        nargs="?",
        default=DEFAULT_STORAGE,
        help=f"storage URL or journal file (default {DEFAULT_STORAGE})",
    )
    dash.add_argument("--host", default="127.0.0.1")
    dash.add_argument("--port", type=int, default=8080)
    dash.add_argument(
        "--artifact-dir",
        default="studies/artifacts",
        help="where figures attached to studies are kept",
    )
    dash.set_defaults(func=cmd_dashboard)

    # Commands that live beside the pieces they compose; each module has register(subparsers).
    import importlib

    for module in _COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        return args.func(args)
    except (UsageError, DataError, ValueError, KeyError) as error:
        if args.debug:
            raise
        message = str(error).strip("'\"")
        print(f"optuna-boxcox: error: {redact(message)}", file=sys.stderr)
        return 2
    except Exception as error:  # storage unreachable and other environment failures
        if args.debug:
            raise
        text = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(
            f"optuna-boxcox: error: {type(error).__name__}: {redact(text)} (run with --debug for details)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
