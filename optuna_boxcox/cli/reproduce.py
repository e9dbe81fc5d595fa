"""``reproduce``: one of the paper's tables, beside the published numbers."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from optuna_boxcox.cli._args import CLASSIFIERS
from optuna_boxcox.cli._args import REPRODUCE_STORAGE
from optuna_boxcox.cli._args import UsageError
from optuna_boxcox.cli._args import add_jobs_argument
from optuna_boxcox.cli._args import add_storage_argument
from optuna_boxcox.cli._args import split_names
from optuna_boxcox.cli._command import command

# The library and its heavy dependencies are imported inside the functions that use them:
# --help imports this module and answers without Optuna, NumPy or scikit-learn (cli/__init__).

TARGETS = ("table2", "table3", "table5", "table6", "table7", "table8")


def register(subparsers: Any) -> None:
    from optuna_boxcox.experiments._names import ROW_KEYS
    from optuna_boxcox.experiments._names import SYNTHETIC_NAMES
    from optuna_boxcox.experiments._names import TABLE3_SEEDS

    parser = subparsers.add_parser(
        "reproduce",
        help="re-run one of the paper's tables (2, 3, 5–8) and compare it with the published "
        "numbers",
        description="Re-run one of the paper's tables (2, 3, 5-8) under its cross-validation "
        "protocol, record every fold as a trial in the study storage (a second run continues an "
        "interrupted one), and print the result beside the published numbers.",
    )
    parser.add_argument("target", choices=TARGETS, help="the table to reproduce")
    parser.add_argument(
        "--classifiers", help=f"comma-separated, of {', '.join(CLASSIFIERS)} (default: all)"
    )
    parser.add_argument(
        "--rows",
        help="tables 5–8: comma-separated search strategies, of "
        f"{', '.join(ROW_KEYS)} (default: the paper's rows; the base "
        "always runs)",
    )
    parser.add_argument("--folds", type=int, default=10, help="outer folds (paper: 10)")
    parser.add_argument("--repeats", type=int, default=5, help="outer repeats (paper: 5)")
    add_storage_argument(parser, default=REPRODUCE_STORAGE)
    parser.add_argument(
        "--out", default="studies", help="directory for the CSV, Markdown and figures"
    )
    add_jobs_argument(parser, "worker processes computing folds (grid rows) at once")
    parser.add_argument(
        "--csv", type=Path, help="tables 5–6: sonar from this CSV file instead of OpenML"
    )
    parser.add_argument("--label", default="y", help="the class column of --csv (default y)")
    parser.add_argument(
        "--pairs", help="tables 6 and 8: comma-separated feature pairs, e.g. 8-41,2-48"
    )
    parser.add_argument(
        "--datasets", help=f"table 2: comma-separated, of {', '.join(SYNTHETIC_NAMES)}"
    )
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help=f"table 3: use seeds 1…N of the random data set (default {len(TABLE3_SEEDS)})",
    )
    parser.add_argument(
        "--max-tasks",
        type=int,
        default=None,
        help="stop after this many new folds (grid rows); run again to continue",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress report")
    parser.set_defaults(func=cmd_reproduce)


def cmd_reproduce(args: argparse.Namespace) -> int:
    from optuna_boxcox.experiments.reproduce import reproduce
    from optuna_boxcox.storage import redact

    if args.csv is not None and args.target not in ("table5", "table6"):
        raise UsageError("--csv gives the sonar data, used by table5 and table6 only")
    result = reproduce(
        args.target,
        classifiers=split_names(args.classifiers),
        rows=split_names(args.rows),
        folds=args.folds,
        repeats=args.repeats,
        storage=args.storage,
        out=args.out,
        n_jobs=args.n_jobs,
        progress=not args.no_progress,
        csv=args.csv,
        label=args.label,
        pairs=split_names(args.pairs),
        datasets=split_names(args.datasets),
        seeds=None if args.seeds is None else list(range(1, args.seeds + 1)),
        max_tasks=args.max_tasks,
    )
    print(result.format())
    print(
        f"\nwall time {result.wall_seconds:.1f} s"
        + ("" if result.complete else " (incomplete: run again to continue)")
    )
    for path in [*result.files, *result.figures]:
        print(f"wrote {path}")
    print(
        f"studies in {redact(args.storage)} under reproduce/…  "
        f"({command()} dashboard {redact(args.storage)})"
    )
    return 0
