"""``bench``: what a user sees, measured side by side in one run.

Sections (``--sections``, in this order by default):

- ``end-to-end``: ``optuna-boxcox search`` against the paper's plain loop as a script, and a study
  script with ``optuna_boxcox.optimize`` against ``study.optimize`` — whole processes, start-up
  included (:mod:`optuna_boxcox.bench.end_to_end`);
- ``components``: inside one process, the plain loop, ``study.optimize`` and the batched path,
  with one and two jobs beside the machine's own two-process speed-up
  (:mod:`optuna_boxcox.bench.components`);
- ``scale`` (not run by default): 1k–50k rows × 30 features, each classifier, per evaluation
  against the plain loop, peak memory and the evaluator chosen (:mod:`optuna_boxcox.bench.scale`);
- ``parallel`` (not run by default): reproduce, compare and a search with two jobs against one,
  as a fraction of the machine's own two-process ceiling (:mod:`optuna_boxcox.bench.parallel`);
- ``read`` (not run by default): a finished study read back cold by Optuna's reader and by the
  package's bulk reader (:mod:`optuna_boxcox.bench.read`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

BENCH_CLASSIFIERS = ("linear", "knn", "bayes", "svc")
SECTIONS = ("end-to-end", "components", "scale", "parallel", "read", "fidelity")
DEFAULT_SECTIONS = ("end-to-end", "components")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="end-to-end commands and study scripts, and the components of a search, side by side",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--csv", type=Path, default=None, help="sonar as a CSV (sonar cases and components)"
    )
    parser.add_argument("--label", default="y", help="the class column of --csv (default y)")
    parser.add_argument(
        "--sections",
        default=",".join(DEFAULT_SECTIONS),
        help=f"comma-separated, of {', '.join(SECTIONS)} (default: {','.join(DEFAULT_SECTIONS)})",
    )
    parser.add_argument(
        "--sizes",
        default="1000,5000,20000,50000",
        help="scale: rows of the synthetic data sets (default 1000,5000,20000,50000)",
    )
    parser.add_argument(
        "--scale-classifiers",
        default="bayes,linear,knn,svc",
        help="scale: comma-separated classifiers (default bayes,linear,knn,svc)",
    )
    parser.add_argument(
        "--scale-trials",
        type=int,
        default=22,
        help="scale: trials of each search, two sweeps by default (cut at --scale-cap)",
    )
    parser.add_argument(
        "--scale-cap",
        type=float,
        default=300.0,
        help="scale: seconds after which a search starts no new trial, and the plain loop is "
        "stopped (default 300)",
    )
    parser.add_argument(
        "--parallel-cases",
        default="reproduce,compare,search",
        help="parallel: comma-separated, of reproduce, compare, search",
    )
    parser.add_argument(
        "--read-case",
        default="sonar:bayes:combined2",
        help="read: DATA:CLASSIFIER:PRESET of the study searched, then read back "
        "(default sonar:bayes:combined2, 20,160 trials)",
    )
    parser.add_argument(
        "--cases",
        default=None,
        help="end-to-end: comma-separated DATA:CLASSIFIER:PRESET (DATA: sonar, or "
        "breast_cancer[:N] for its first N features); default: the issue's set",
    )
    parser.add_argument(
        "--e2e-repeats",
        type=int,
        default=3,
        help="end-to-end: alternating runs of each pair of processes (medians; default 3)",
    )
    parser.add_argument(
        "--script-trials",
        type=int,
        default=110,
        help="end-to-end: trials of the study.optimize study script (default 110; 0 skips both "
        "study scripts)",
    )
    parser.add_argument(
        "--classifiers",
        default=",".join(BENCH_CLASSIFIERS),
        help="components: comma-separated (default linear,knn,bayes,svc)",
    )
    parser.add_argument("--preset", default="iterative", help="components: the preset")
    parser.add_argument(
        "--fidelity-data",
        default="scale",
        help="fidelity: comma-separated data sets, 'scale' (the synthetic generator) or "
        "csv:PATH (default scale)",
    )
    parser.add_argument(
        "--fidelity-classifiers",
        default="bayes,linear,knn,svc",
        help="fidelity: comma-separated classifiers (default bayes,linear,knn,svc)",
    )
    parser.add_argument(
        "--fidelity-rows",
        type=int,
        default=5000,
        help="fidelity: rows of each data set before the 70/30 split (default 5000)",
    )
    parser.add_argument(
        "--fidelity-repeats",
        type=int,
        default=1,
        help="fidelity: alternating runs of the three searches (medians; default 1)",
    )
    parser.add_argument(
        "--b-trials",
        type=int,
        default=110,
        help="components: trials of (b) plain study.optimize to time and compare with (c) "
        "(0: the whole plan)",
    )
    parser.add_argument(
        "--memory-preset",
        default="combined2",
        help="components: preset of the peak-RSS run ('' to skip)",
    )
    parser.add_argument(
        "--n-jobs", type=int, default=2, help="components: jobs of the parallel (c) runs (≥ 2)"
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="components: alternating (c) runs with one job and with --n-jobs; medians",
    )
    parser.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    import tempfile

    from optuna_boxcox.cli._args import UsageError
    from optuna_boxcox.cli._args import split_names

    sections = split_names(args.sections) or []
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown or not sections:
        raise UsageError(f"unknown section(s) {unknown or sections}; choose from {SECTIONS}")
    if args.csv is not None:
        # The timed processes run in a scratch folder: a relative path would not be found there.
        args.csv = args.csv.resolve()
        if not args.csv.is_file():
            raise UsageError(f"CSV file not found: {args.csv}")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        if "end-to-end" in sections:
            ok = _end_to_end(args, Path(tmp)) and ok
        if "components" in sections:
            ok = _components(args, Path(tmp)) and ok
        if "scale" in sections:
            _scale(args, Path(tmp))
        if "parallel" in sections:
            _parallel(args, Path(tmp))
        if "read" in sections:
            ok = _read(args, Path(tmp)) and ok
        if "fidelity" in sections:
            _fidelity(args, Path(tmp))
    return 0 if ok else 1


def _scale(args: argparse.Namespace, workdir: Path) -> None:
    from optuna_boxcox.bench import scale
    from optuna_boxcox.cli._args import split_names

    print(
        "scale: make_classification(n, 30 features, 10 informative), exp(X / 2); the first "
        f"{args.scale_trials} trials of the iterative search on SQLite, default memory budget; "
        "ms per new evaluation (search) and per evaluation of the paper's plain loop on the "
        "search's first Λ; peak MiB of the search process; * = cut at the time cap",
        flush=True,
    )
    rows = []
    for n in (int(v) for v in split_names(args.sizes) or []):
        for classifier in split_names(args.scale_classifiers) or []:
            rows.append(
                scale.scale_row(
                    n, classifier, workdir, trials=args.scale_trials, cap=args.scale_cap
                )
            )
            print(scale.format_scale_rows(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(scale.format_scale_rows(rows))
    print()


def _read(args: argparse.Namespace, workdir: Path) -> bool:
    from optuna_boxcox.bench import read
    from optuna_boxcox.cli._args import UsageError

    parts = args.read_case.rsplit(":", 2)
    data, classifier, preset = parts if len(parts) == 3 else ("", "", "")
    if not (data and classifier and preset):
        raise UsageError(f"--read-case takes DATA:CLASSIFIER:PRESET, got {args.read_case!r}")
    if data == "sonar" and args.csv is None:
        raise UsageError("the read section on sonar needs --csv sonar.csv")
    row = read.compare_readers(
        data, classifier, preset, sonar_csv=args.csv, workdir=workdir, repeats=args.e2e_repeats
    )
    print(read.format_read_row(row), flush=True)
    return row["equal"]


def _fidelity(args: argparse.Namespace, workdir: Path) -> None:
    from optuna_boxcox.bench import fidelity
    from optuna_boxcox.cli._args import split_names

    print(
        f"fidelity: iterative search on 70 % of {args.fidelity_rows} rows, exact vs "
        "--fidelity auto vs --subsample at about auto's time; held-out accuracy on the other "
        f"30 % (medians of {args.fidelity_repeats} alternating runs)",
        flush=True,
    )
    rows = []
    for data in split_names(args.fidelity_data) or []:
        for classifier in split_names(args.fidelity_classifiers) or []:
            rows.append(
                fidelity.measure(
                    data,
                    classifier,
                    workdir,
                    rows=args.fidelity_rows,
                    repeats=args.fidelity_repeats,
                )
            )
            print(fidelity.format_rows(rows[-1:]).splitlines()[2], flush=True)
    print()
    print(fidelity.format_rows(rows))
    print()


def _parallel(args: argparse.Namespace, workdir: Path) -> None:
    from optuna_boxcox.bench import parallel
    from optuna_boxcox.cli._args import split_names

    print(
        f"parallel: --n-jobs 2 against 1 (medians of {args.e2e_repeats} alternating runs); "
        "'machine': two independent processes side by side against one after the other, "
        "measured beside each pair; 'fraction': speed-up / machine",
        flush=True,
    )
    rows = []
    for case in split_names(args.parallel_cases) or []:
        rows.append(parallel.measure(case, workdir, repeats=args.e2e_repeats))
        print(parallel.format_parallel_rows(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(parallel.format_parallel_rows(rows))
    print()


def _end_to_end(args: argparse.Namespace, workdir: Path) -> bool:
    from optuna_boxcox.bench import end_to_end
    from optuna_boxcox.cli._args import UsageError
    from optuna_boxcox.cli._args import split_names

    cases = end_to_end.DEFAULT_CASES
    if args.cases is not None:
        try:
            cases = tuple(tuple(c.rsplit(":", 2)) for c in split_names(args.cases) or [])
            assert all(len(c) == 3 for c in cases) and cases
        except AssertionError:
            raise UsageError(
                f"--cases takes DATA:CLASSIFIER:PRESET,…, got {args.cases!r}"
            ) from None
    if any(data == "sonar" for data, _, _ in cases) and args.csv is None:
        raise UsageError("the sonar cases need --csv sonar.csv")
    print(
        f"end to end: whole processes, start-up included; medians of {args.e2e_repeats} "
        "alternating runs; 'tail': share of the search command's time after its last trial was "
        "written; MiB: the search's peak resident memory",
        flush=True,
    )
    rows = []
    for data, classifier, preset in cases:
        rows.append(
            end_to_end.compare_search(
                data,
                classifier,
                preset,
                sonar_csv=args.csv,
                workdir=workdir,
                repeats=args.e2e_repeats,
            )
        )
        print(end_to_end.format_search_rows(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(end_to_end.format_search_rows(rows))
    ok = all(r["same_lambda"] for r in rows)
    if args.script_trials > 0:
        scripts = end_to_end.compare_study_scripts(
            workdir, optuna_trials=args.script_trials, repeats=args.e2e_repeats
        )
        print(end_to_end.format_script_row(scripts), flush=True)
        ok = ok and scripts["same_trials"]
    print()
    return ok


def _components(args: argparse.Namespace, workdir: Path) -> bool:
    import warnings

    import optuna
    from threadpoolctl import threadpool_limits

    from optuna_boxcox.bench import bench_classifier
    from optuna_boxcox.bench import format_rows
    from optuna_boxcox.bench import peak_rss_of_search
    from optuna_boxcox.bench import training_fold
    from optuna_boxcox.cli._args import UsageError
    from optuna_boxcox.datasets import load_csv

    if args.csv is None:
        raise UsageError("the components section needs --csv sonar.csv")
    if args.n_jobs < 2 or args.repeats < 1:
        raise UsageError("bench: --n-jobs must be at least 2 and --repeats at least 1")
    warnings.simplefilter("ignore", FutureWarning)  # SVC(probability=True) in (a)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = training_fold(*load_csv(args.csv, args.label))
    print(
        f"components: {args.csv.name} training fold {X.shape[0]} × {X.shape[1]}, preset "
        f"{args.preset!r}, every trial persisted in SQLite; per-evaluation milliseconds, one "
        f"BLAS/OpenMP thread per process; (c) and (c)x{args.n_jobs}: medians of {args.repeats} "
        f"alternating runs, c/c{args.n_jobs} the median ratio of neighbouring runs (its range "
        f"beside it); 'machine': the speed-up {args.n_jobs} processes of a plain Python loop got "
        f"beside them; 'write': share of (c)'s time spent writing to SQLite; 'tail': share of "
        f"(c)x{args.n_jobs}'s time after its last fit (writing sweeps of Λ scored before)",
        flush=True,
    )
    rows = []
    # One thread per process in all three paths: scikit-learn's threaded k-NN search and BLAS would
    # otherwise compete for the cores with whatever else runs, and (c) with 2 jobs with itself.
    with threadpool_limits(1):
        for name in (n.strip() for n in args.classifiers.split(",")):
            rows.append(
                bench_classifier(
                    X,
                    y,
                    name,
                    args.preset,
                    args.b_trials,
                    workdir,
                    n_jobs=args.n_jobs,
                    repeats=args.repeats,
                )
            )
            print(format_rows(rows[-1:]).splitlines()[-1], flush=True)
        print()
        print(format_rows(rows))
        if args.memory_preset:
            rss, trials = peak_rss_of_search(
                args.csv, args.label, "bayes", args.memory_preset, workdir
            )
            print(
                f"\npeak RSS of a {args.memory_preset!r} search (bayes, {trials} trials "
                f"persisted): {rss:.0f} MiB"
            )
    return all(r["same_lambda_a_c"] and r["same_lambda_c_c2"] and r["b_equals_c"] for r in rows)
