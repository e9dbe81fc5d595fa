"""``compare``: several samplers × seeds on one data set, as one table."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from optuna_boxcox.cli._args import UsageError
from optuna_boxcox.cli._args import add_data_arguments
from optuna_boxcox.cli._args import add_jobs_argument
from optuna_boxcox.cli._args import add_objective_arguments
from optuna_boxcox.cli._args import add_storage_argument
from optuna_boxcox.cli._args import load_data
from optuna_boxcox.cli._args import split_names


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare", help="several samplers × seeds on one data set, as one table"
    )
    add_data_arguments(parser, default="breast_cancer")
    add_objective_arguments(parser)
    parser.add_argument(
        "--samplers",
        default="coordinate,tpe,nelder-mead,random",
        help="comma-separated sampler names (default coordinate,tpe,nelder-mead,random)",
    )
    parser.add_argument("--seeds", type=int, default=3, help="studies per sampler (default 3)")
    parser.add_argument(
        "--n-trials",
        type=int,
        default=None,
        help="trials per study (default: the coordinate search's E·p·L); a paper sampler "
        "whose plan is longer stops there",
    )
    parser.add_argument(
        "--test-size",
        type=float,
        default=None,
        help="hold out this fraction of the data and score each chosen Λ on it",
    )
    add_storage_argument(parser)
    add_jobs_argument(parser, "studies run at once, each in its own process")
    parser.add_argument(
        "--plot", type=Path, default=None, help="best-so-far plot (HTML); default under studies/"
    )
    parser.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    import optuna

    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.compare import compare
    from optuna_boxcox.compare import format_table
    from optuna_boxcox.compare import held_out_metric
    from optuna_boxcox.compare import study_name
    from optuna_boxcox.figures import best_so_far
    from optuna_boxcox.samplers import SAMPLERS
    from optuna_boxcox.storage import open_storage

    names = split_names(args.samplers) or []
    unknown = [n for n in names if n not in SAMPLERS and not n.startswith("coordinate:")]
    if unknown or not names:
        raise UsageError(
            f"unknown sampler(s) {', '.join(unknown) or '(none given)'}; choose from "
            f"{', '.join(SAMPLERS)}"
        )
    if args.seeds < 1:
        raise UsageError("--seeds must be at least 1")
    if args.n_trials is not None and args.n_trials < 1:
        raise UsageError(f"--n-trials must be at least 1, got {args.n_trials}")
    if args.test_size is not None and not 0 < args.test_size < 1:
        raise UsageError(f"--test-size must be a fraction in (0, 1), got {args.test_size}")
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
    print(format_table(runs, references, metric=held_out_metric(args.scoring)[0]))
    plot = args.plot or Path("studies") / f"compare-{data_name}-{args.classifier}.html"
    plot.parent.mkdir(parents=True, exist_ok=True)
    store = open_storage(args.storage)
    settings = dict(
        n_trials=args.n_trials, scoring=args.scoring, cv=args.cv, test_size=args.test_size
    )
    studies = {
        r.name: [
            optuna.load_study(
                study_name=study_name(data_name, args.classifier, r.name, k, **settings),
                storage=store,
            )
            for k in range(args.seeds)
        ]
        for r in runs
    }
    best_so_far(studies).write_html(str(plot), include_plotlyjs=True)
    print(f"best-so-far plot: {plot}")
    return 0
