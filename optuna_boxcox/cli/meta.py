"""``meta``: an Optuna study over the iterative grid search's own settings."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from optuna_boxcox.cli._args import CLASSIFIERS
from optuna_boxcox.cli._args import add_jobs_argument
from optuna_boxcox.cli._args import add_storage_argument
from optuna_boxcox.cli._command import command

# The library and its heavy dependencies are imported inside the functions that use them:
# --help imports this module and answers without Optuna, NumPy or scikit-learn (cli/__init__).

PAPER_SEED = 42


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "meta",
        help="an Optuna study over the iterative grid search's own settings (grid size, epochs, …)",
        description="An Optuna study whose parameters are the settings of the iterative grid "
        "search (grid_size, epochs, shift_epoch, shuffle_epoch, finer_epoch) and whose value is "
        "the outer cross-validated accuracy of the Box-Cox pipeline; the paper's Table-4 rows run "
        "first, then TPE.",
    )
    parser.add_argument(
        "--classifier", default="bayes", help=f"one of {', '.join(CLASSIFIERS)} (default bayes)"
    )
    parser.add_argument(
        "--dataset",
        default="breast_cancer",
        choices=("breast_cancer", "sonar"),
        help="the data (default breast_cancer; sonar from OpenML, or --csv)",
    )
    parser.add_argument("--csv", type=Path, help="sonar (or other data) from a CSV file")
    parser.add_argument("--label", default="y", help="the class column of --csv (default y)")
    parser.add_argument("--features", type=int, default=None, help="use only the first N features")
    parser.add_argument("--folds", type=int, default=3, help="outer folds (default 3)")
    parser.add_argument("--repeats", type=int, default=1, help="outer repeats (default 1)")
    parser.add_argument(
        "--n-trials", type=int, default=30, help="finished trials to reach (default 30)"
    )
    parser.add_argument(
        "--seed", type=int, default=PAPER_SEED, help="seed of TPE and the coordinate search"
    )
    add_storage_argument(parser)
    parser.add_argument("--study-name", default=None, help="default meta/<dataset>/<classifier>/…")
    add_jobs_argument(parser, "worker processes for the folds of a trial")
    parser.set_defaults(
        func=cmd_meta,
        start_over="use another --study-name or --storage, or delete the study, to start it over",
    )


def cmd_meta(args: argparse.Namespace) -> int:
    from optuna_boxcox.experiments.meta import format_meta
    from optuna_boxcox.experiments.meta import meta_study
    from optuna_boxcox.storage import redact

    result = meta_study(
        classifier=args.classifier,
        dataset=args.dataset,
        csv=args.csv,
        label=args.label,
        features=args.features,
        folds=args.folds,
        repeats=args.repeats,
        n_trials=args.n_trials,
        seed=args.seed,
        storage=args.storage,
        study_name=args.study_name,
        n_jobs=args.n_jobs,
        progress=True,
    )
    print(format_meta(result))
    print(
        f"\nwall time {result.wall_seconds:.1f} s; study in {redact(args.storage)} "
        f"({command()} dashboard {redact(args.storage)})"
    )
    return 0
