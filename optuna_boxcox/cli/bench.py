"""``bench``: the paper's plain loop, plain ``study.optimize`` and the batched path, side by side."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

BENCH_CLASSIFIERS = ("linear", "knn", "bayes", "svc")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench", help="plain loop vs study.optimize vs the batched fast path, side by side"
    )
    parser.add_argument(
        "--csv", type=Path, required=True, help="data CSV (e.g. sonar.csv) with a label column"
    )
    parser.add_argument("--label", default="y")
    parser.add_argument("--classifiers", default=",".join(BENCH_CLASSIFIERS))
    parser.add_argument("--preset", default="iterative")
    parser.add_argument(
        "--b-trials",
        type=int,
        default=110,
        help="trials of (b) plain study.optimize to time and compare with (c) (0: the whole plan)",
    )
    parser.add_argument(
        "--memory-preset", default="combined2", help="preset of the peak-RSS run ('' to skip)"
    )
    parser.add_argument(
        "--n-jobs", type=int, default=2, help="jobs of the parallel (c) runs (≥ 2)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="alternating (c) runs with one job and with --n-jobs; figures are their medians",
    )
    parser.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    import tempfile
    import warnings

    import optuna
    from threadpoolctl import threadpool_limits

    from optuna_boxcox.bench import bench_classifier
    from optuna_boxcox.bench import format_rows
    from optuna_boxcox.bench import peak_rss_of_search
    from optuna_boxcox.bench import training_fold
    from optuna_boxcox.datasets import load_csv

    warnings.simplefilter("ignore", FutureWarning)  # SVC(probability=True) in (a)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = training_fold(*load_csv(args.csv, args.label))
    if args.n_jobs < 2 or args.repeats < 1:
        raise SystemExit("bench: --n-jobs must be at least 2 and --repeats at least 1")
    print(
        f"bench: {args.csv.name} training fold {X.shape[0]} × {X.shape[1]}, preset {args.preset!r}, "
        f"every trial persisted in SQLite; per-evaluation milliseconds, one BLAS/OpenMP thread "
        f"per process; (c) and (c)x{args.n_jobs}: medians of {args.repeats} alternating runs, "
        f"c/c{args.n_jobs} the median ratio of neighbouring runs (its range beside it); 'machine': "
        f"the speed-up {args.n_jobs} processes of a plain Python loop got beside them; 'write': share "
        f"of (c)'s time spent writing to SQLite; 'tail': share of (c)x{args.n_jobs}'s time after its "
        f"last fit (writing sweeps of Λ scored before)",
        flush=True,
    )
    rows = []
    # One thread per process in all three paths: scikit-learn's threaded k-NN search and BLAS would
    # otherwise compete for the cores with whatever else runs, and (c) with 2 jobs with itself.
    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(1):
        for name in args.classifiers.split(","):
            rows.append(
                bench_classifier(
                    X,
                    y,
                    name.strip(),
                    args.preset,
                    args.b_trials,
                    Path(tmp),
                    n_jobs=args.n_jobs,
                    repeats=args.repeats,
                )
            )
            print(format_rows(rows[-1:]).splitlines()[-1], flush=True)
        print()
        print(format_rows(rows))
        if args.memory_preset:
            rss, trials = peak_rss_of_search(
                args.csv, args.label, "bayes", args.memory_preset, Path(tmp)
            )
            print(
                f"\npeak RSS of a {args.memory_preset!r} search (bayes, {trials} trials persisted): {rss:.0f} MiB"
            )
    return (
        0
        if all(r["same_lambda_a_c"] and r["same_lambda_c_c2"] and r["b_equals_c"] for r in rows)
        else 1
    )
