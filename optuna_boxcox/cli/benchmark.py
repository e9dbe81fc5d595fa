"""``benchmark``: many data sets × classifiers × methods, held-out scores, ranks and tests."""

from __future__ import annotations

import argparse
from pathlib import Path
import time
from typing import Any

from optuna_boxcox.classifiers import ALL_CLASSIFIERS
from optuna_boxcox.cli._args import SCORINGS
from optuna_boxcox.cli._args import UsageError
from optuna_boxcox.cli._args import add_jobs_argument
from optuna_boxcox.cli._args import add_storage_argument
from optuna_boxcox.cli._args import split_names
from optuna_boxcox.cli._command import command
from optuna_boxcox.cli.compare import FIXED_TRANSFORMS
from optuna_boxcox.cli.compare import PEER_TRANSFORMS
from optuna_boxcox.cli.compare import check_holdout
from optuna_boxcox.cli.compare import check_peers

#: Every fixed method by name (``--transforms all``).
ALL_TRANSFORMS = (*FIXED_TRANSFORMS, *PEER_TRANSFORMS)

# The library and its heavy dependencies are imported inside the functions that use them:
# --help imports this module and answers without Optuna, NumPy or scikit-learn (cli/__init__).

DEFAULT_DATASETS = "breast_cancer,wine,iris,digits,moons,blobs"
#: Mirrors optuna_boxcox.experiments.benchmark.DEFAULT_MAX_ROWS (the module is imported only when the command
#: runs, so that --help stays fast); a test keeps the two equal.
DEFAULT_MAX_ROWS = 1500


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "benchmark",
        help="many data sets × classifiers × methods: held-out scores, average ranks, Wilcoxon",
        description="Every (data set, classifier, sampler, outer fold) is a study in one storage "
        "(resumable: a finished study is read back). Each method — a fixed transform or a "
        "sampler's chosen Λ — is fitted on each fold's training part and scored on its test part; "
        "the table gives the mean held-out score per data set, the average rank of each method per "
        "classifier (1 = best, ties share their mean rank), the two-sided Wilcoxon signed-rank "
        "p-value of each method against the best other method (the fixed transform of lowest "
        "average rank, peers included) across the data sets (zero_method='zsplit') and the loss "
        "rate (data sets more than 1 point below the better of standard and box-cox). The rank "
        "plot is attached to a summary study benchmark/<settings> and written as HTML (and PNG "
        "with kaleido and Chromium).",
    )
    parser.add_argument(
        "--datasets",
        default=DEFAULT_DATASETS,
        help="comma-separated: breast_cancer, iris, wine, sonar (OpenML), digits (load_digits "
        "pooled over 2×2 pixel blocks: 16 features), gaussian_quantiles, moons, blobs, random "
        "(the paper's Figure 1 sets, seed 1; moons:7 for seed 7), csv:PATH, csv:FOLDER (every "
        ".csv in it), or a fixed half of the 25 development sets: dev-a (design: 13 sets), "
        "dev-b (confirm: 12), dev (both); dev2 (the second folder's 39), dev-all (all 64, "
        "reported per folder too), whose CSV files are read from --data-dir "
        f"(default {DEFAULT_DATASETS})",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the folder of the development sets' CSV files: a name that is not one of the "
        "package's (breast_cancer, iris, wine, digits, the Figure 1 sets) is read from "
        "DIR/NAME.csv, DIR/dev/NAME.csv or DIR/dev2/NAME.csv (needed by dev-a, dev-b, dev, dev2, "
        "dev-all)",
    )
    parser.add_argument(
        "--label", default="y", help="the class column of csv: data sets (default y)"
    )
    parser.add_argument(
        "--features",
        type=int,
        default=None,
        help="use only the first N features of every data set",
    )
    parser.add_argument(
        "--max-rows",
        type=int,
        default=DEFAULT_MAX_ROWS,
        help="a larger data set is replaced by a stratified sample of this many rows "
        "(train_test_split(train_size=N, stratify=y, random_state=0); its name gets -rN); 0 keeps "
        f"every row (default {DEFAULT_MAX_ROWS})",
    )
    parser.add_argument(
        "--classifiers",
        default="knn,bayes,linear",
        help=f"comma-separated, of {', '.join(ALL_CLASSIFIERS)} (default knn,bayes,linear)",
    )
    parser.add_argument(
        "--samplers",
        default="coordinate,tpe",
        help="comma-separated samplers (default coordinate,tpe); guarded: the estimator's "
        "default, the coordinate search then its gate",
    )
    parser.add_argument(
        "--transforms",
        default=None,
        help=f"comma-separated fixed transforms of {','.join(ALL_TRANSFORMS)}, or all (box-cox "
        "is this package's BoxCoxTransformer with MLE λ after the [1,2] scaling; kdi: "
        "kditransform's KDITransformer then StandardScaler; squashing: skrub's SquashingScaler; "
        "skew-rule: Box-Cox MLE where |skew| > 0.5, then StandardScaler). kdi and squashing "
        "need pip install -e '.[peers]' in the checkout. Default: all ten, less a peer not installed "
        "(said when the run starts)",
    )
    parser.add_argument(
        "--n-trials",
        type=int,
        default=None,
        help="trials per study, the same for every sampler; a longer plan stops there (default: "
        "the paper's samplers run their whole plan, Optuna's get as many trials as the coordinate "
        "search's plan, E·p·L, on each data set; the table lists the trials per search)",
    )
    parser.add_argument(
        "--scoring",
        default="accuracy",
        help=f"what the searches maximise and the held-out metric: {', '.join(SCORINGS)} "
        "(default accuracy; accuracy is held out for the classifier-free criteria)",
    )
    parser.add_argument(
        "--cv", type=int, default=None, help="inner stratified k-fold instead of resubstitution"
    )
    parser.add_argument(
        "--outer-cv",
        default=None,
        metavar="RxK",
        help="held-out scores from repeated stratified K-fold with R repeats (default 5x2, "
        "random_state 0)",
    )
    parser.add_argument(
        "--test-size",
        type=float,
        default=None,
        help="held-out scores from one stratified holdout of this fraction instead (random_state 0)",
    )
    parser.add_argument("--seed", type=int, default=0, help="the samplers' seed (default 0)")
    add_storage_argument(parser)
    add_jobs_argument(parser, "studies run at once, each in its own process")
    parser.add_argument(
        "--plot-dir",
        type=Path,
        default=Path("studies"),
        help="where the rank plot is written as benchmark-ranks.html/.png (default studies/)",
    )
    parser.set_defaults(func=cmd_benchmark)


def cmd_benchmark(args: argparse.Namespace) -> int:
    from optuna_boxcox._lifecycle._guard import GUARDED
    from optuna_boxcox.experiments.benchmark import RANK_PLOT
    from optuna_boxcox.experiments.benchmark import benchmark
    from optuna_boxcox.experiments.benchmark import default_transforms
    from optuna_boxcox.experiments.benchmark import expand_datasets
    from optuna_boxcox.experiments.benchmark import format_benchmark
    from optuna_boxcox.figures import write_figures
    from optuna_boxcox.samplers import SAMPLERS
    from optuna_boxcox.storage import redact

    datasets = expand_datasets(split_names(args.datasets) or [], args.data_dir)
    classifiers = split_names(args.classifiers) or []
    samplers = split_names(args.samplers) or []
    left_out: list[str] = []
    if args.transforms is None:
        transforms = default_transforms()
        left_out = [t for t in ALL_TRANSFORMS if t not in transforms]
    elif args.transforms.strip() == "all":
        transforms = list(ALL_TRANSFORMS)
    else:
        transforms = split_names(args.transforms) or []
    for option, names, known in (
        ("--classifiers", classifiers, ALL_CLASSIFIERS),
        ("--samplers", samplers, (*SAMPLERS, GUARDED)),
        ("--transforms", transforms, ALL_TRANSFORMS),
    ):
        unknown = [n for n in names if n not in known and not n.startswith("coordinate:")]
        if unknown:
            raise UsageError(
                f"{option}: unknown {', '.join(unknown)}; choose from {', '.join(known)}"
            )
    if not classifiers or (not samplers and not transforms):
        raise UsageError("give at least one classifier and one method (sampler or transform)")
    missing = [d[len("csv:") :] for d in datasets if d.startswith("csv:")]
    missing = [path for path in missing if not Path(path).is_file()]
    if missing:  # said first: "give at least two" would hide that a file named was not found
        raise UsageError(f"--datasets: CSV file not found: {', '.join(missing)}")
    if len(datasets) < 2:
        raise UsageError("--datasets: give at least two (methods are ranked across data sets)")
    if args.max_rows < 0 or args.max_rows == 1:
        raise UsageError(f"--max-rows must be 0 (every row) or at least 2, got {args.max_rows}")
    if args.n_trials is not None and args.n_trials < 1:
        raise UsageError(f"--n-trials must be at least 1, got {args.n_trials}")
    if args.test_size is not None and not 0 < args.test_size < 1:
        raise UsageError(f"--test-size must be a fraction in (0, 1), got {args.test_size}")
    check_holdout(args)
    check_peers(transforms)
    started = time.perf_counter()
    if left_out:
        print(
            f"fixed transforms: {', '.join(left_out)} left out, not installed "
            "(pip install -e '.[peers]' in the optuna-boxcox checkout)",
            flush=True,
        )
    print(
        f"benchmark: {len(datasets)} data sets × {len(classifiers)} classifiers × "
        f"{len(transforms) + len(samplers)} methods",
        flush=True,
    )
    result = benchmark(
        datasets,
        classifiers,
        samplers,
        transforms,
        label=args.label,
        data_dir=args.data_dir,
        features=args.features,
        max_rows=args.max_rows or None,
        n_trials=args.n_trials,
        scoring=args.scoring,
        cv=args.cv,
        outer_cv=args.outer_cv or (None if args.test_size else "5x2"),
        test_size=args.test_size,
        seed=args.seed,
        storage=args.storage,
        n_jobs=args.n_jobs,
        progress=True,
    )
    print(format_benchmark(result))
    written = write_figures({RANK_PLOT: result.figure}, args.plot_dir, include_plotlyjs=True)
    print(
        f"\ntasks: {result.studies_run} searches run, {result.studies_read} read back, "
        f"{result.studies_fixed} fixed-transform scorings (one per split); "
        f"wall time {time.perf_counter() - started:.1f} s"
    )
    print(f"rank plot: {', '.join(map(str, written))}")
    print(
        f"summary study {result.summary_study!r} in {redact(args.storage)} "
        f"({command()} dashboard {redact(args.storage)})"
    )
    return 0
