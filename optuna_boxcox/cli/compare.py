"""``compare``: several samplers × seeds on one data set, as one table."""

from __future__ import annotations

import argparse
from pathlib import Path
import time
from typing import Any

from optuna_boxcox.cli._args import UsageError
from optuna_boxcox.cli._args import add_data_arguments
from optuna_boxcox.cli._args import add_jobs_argument
from optuna_boxcox.cli._args import add_objective_arguments
from optuna_boxcox.cli._args import add_storage_argument
from optuna_boxcox.cli._args import load_data
from optuna_boxcox.cli._args import split_names

# The library and its heavy dependencies are imported inside the functions that use them:
# --help imports this module and answers without Optuna, NumPy or scikit-learn (cli/__init__).

#: The fixed transforms' keys, as optuna_boxcox.experiments.compare.FIXED_TRANSFORMS has them (not imported:
#: ``--help`` would pay for scikit-learn); a test checks the two agree.
FIXED_TRANSFORMS = ("raw", "standard", "minmax", "maxabs", "quantile", "yeo-johnson", "box-cox")
#: The peers' keys, as optuna_boxcox.experiments._peers.PEER_TRANSFORMS has them (kdi and squashing
#: need the extra ``peers``).
PEER_TRANSFORMS = ("kdi", "squashing", "skew-rule")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="several samplers × seeds on one data set, as one table",
        description="Every sampler × seed is a study in one storage (resumable: a finished study "
        "is read back). The table gives each sampler's inner best (the score it maximises), with "
        "--test-size or --outer-cv the chosen Λ's held-out score and the gap between the two, and "
        "reference rows for fixed transforms (raw, StandardScaler, MinMaxScaler, MaxAbsScaler, "
        "QuantileTransformer, Yeo-Johnson MLE, Box-Cox MLE) followed by the same classifier.",
    )
    add_data_arguments(parser, default="breast_cancer")
    add_objective_arguments(parser)
    parser.add_argument(
        "--samplers",
        default="coordinate,tpe,nelder-mead,random",
        help="comma-separated sampler names (default coordinate,tpe,nelder-mead,random); "
        "guarded: the estimator's default, the coordinate search then its gate",
    )
    parser.add_argument("--seeds", type=int, default=3, help="studies per sampler (default 3)")
    parser.add_argument(
        "--n-trials",
        type=int,
        default=None,
        help="trials per study, a longer paper plan stopping there (default: each paper sampler "
        "runs its whole plan, Optuna's samplers the coordinate search's E·p·L)",
    )
    parser.add_argument(
        "--test-size",
        type=float,
        default=None,
        help="hold out this fraction of the data (stratified, random_state 0) and score each "
        "chosen Λ on it",
    )
    parser.add_argument(
        "--outer-cv",
        default=None,
        metavar="RxK",
        help="repeated stratified K-fold with R repeats (e.g. 5x2; random_state 0) instead of "
        "--test-size: every fold's training part is searched by every sampler × seed (study "
        "names end in outer5x2/fold<k>), its test part scores the chosen Λ (user attribute "
        "held_out); the table gives mean ± sd over seeds × folds",
    )
    parser.add_argument(
        "--null",
        action="store_true",
        help="also run every sampler on randomly permuted labels (studies tagged null<seed>): "
        "held-out scores must sit at chance; the table shows the gap between inner best and "
        "held-out for real and permuted labels (needs --test-size or --outer-cv)",
    )
    parser.add_argument(
        "--null-seed", type=int, default=0, help="seed of the label permutation (default 0)"
    )
    parser.add_argument(
        "--transforms",
        default=",".join(FIXED_TRANSFORMS),
        help=f"fixed transforms scored as reference rows (default {','.join(FIXED_TRANSFORMS)}; "
        "box-cox is this package's BoxCoxTransformer with MLE λ after the [1,2] scaling); also "
        f"the peers {','.join(PEER_TRANSFORMS)} (kdi and squashing need "
        "pip install -e '.[peers]' in the checkout)",
    )
    add_storage_argument(parser)
    add_jobs_argument(parser, "studies run at once, each in its own process")
    parser.add_argument(
        "--plot", type=Path, default=None, help="best-so-far plot (HTML); default under studies/"
    )
    parser.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from optuna_boxcox._lifecycle._guard import GUARDED
    from optuna_boxcox._lifecycle._open import load_study
    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.experiments.compare import compare
    from optuna_boxcox.experiments.compare import format_table
    from optuna_boxcox.experiments.compare import held_out_metric
    from optuna_boxcox.figures import best_so_far
    from optuna_boxcox.samplers import SAMPLERS
    from optuna_boxcox.storage import open_storage

    names = split_names(args.samplers) or []
    known = (*SAMPLERS, GUARDED)
    unknown = [n for n in names if n not in known and not n.startswith("coordinate:")]
    if unknown or not names:
        raise UsageError(
            f"unknown sampler(s) {', '.join(unknown) or '(none given)'}; choose from "
            f"{', '.join(known)}"
        )
    if args.seeds < 1:
        raise UsageError("--seeds must be at least 1")
    if args.n_trials is not None and args.n_trials < 1:
        raise UsageError(f"--n-trials must be at least 1, got {args.n_trials}")
    if args.test_size is not None and not 0 < args.test_size < 1:
        raise UsageError(f"--test-size must be a fraction in (0, 1), got {args.test_size}")
    check_holdout(args)
    if args.plot is not None and (args.plot.is_dir() or not args.plot.name):
        raise UsageError(
            f"--plot names the HTML file to write, got a directory: {str(args.plot)!r}"
        )
    transforms = split_names(args.transforms) or []
    unknown = [t for t in transforms if t not in (*FIXED_TRANSFORMS, *PEER_TRANSFORMS)]
    if unknown:
        raise UsageError(
            f"unknown fixed transform(s) {', '.join(unknown)}; choose from "
            f"{', '.join((*FIXED_TRANSFORMS, *PEER_TRANSFORMS))}"
        )
    check_peers(transforms)
    if args.null and not (args.test_size or args.outer_cv):
        raise UsageError("--null needs held-out scores: add --outer-cv 5x2 or --test-size 0.3")
    X, y, data_name = load_data(args)
    started = time.perf_counter()
    print(
        f"comparing {', '.join(names)} on {data_name} with {args.classifier}, "
        f"{args.seeds} seed{'s' if args.seeds > 1 else ''}",
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
        outer_cv=args.outer_cv,
        null=args.null,
        null_seed=args.null_seed,
        transforms=transforms,
        n_jobs=args.n_jobs,
        progress=True,
    )
    print(format_table(runs, references, metric=held_out_metric(args.scoring)[0]))
    print(f"wall time {time.perf_counter() - started:.1f} s")
    plot = args.plot or Path("studies") / f"compare-{data_name}-{args.classifier}.html"
    plot.parent.mkdir(parents=True, exist_ok=True)
    store = open_storage(args.storage)
    studies = {r.name: [load_study(store, name) for name in r.study_names] for r in runs}
    best_so_far(studies).write_html(str(plot), include_plotlyjs=True)
    print(f"best-so-far plot: {plot}")
    return 0


def check_peers(transforms: list[str]) -> None:
    """A peer asked for whose library is not installed: one line naming the extra."""
    from optuna_boxcox.experiments._peers import missing_peer

    for key in transforms:
        reason = missing_peer(key)
        if reason is not None:
            raise UsageError(f"--transforms: {reason}")


def check_holdout(args: argparse.Namespace) -> None:
    """--test-size and --outer-cv are two ways to hold data out: one at a time, and well formed."""
    if args.test_size and args.outer_cv:
        raise UsageError(
            "give --test-size (one holdout) or --outer-cv (repeated k-fold), not both"
        )
    if args.outer_cv:
        from optuna_boxcox.experiments.compare import parse_outer_cv

        try:
            parse_outer_cv(args.outer_cv)
        except ValueError as error:
            raise UsageError(f"--outer-cv: {error}") from None
