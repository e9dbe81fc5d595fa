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
  package's bulk reader (:mod:`optuna_boxcox.bench.read`);
- ``workers`` (not run by default): k batched search processes on one PostgreSQL study against
  one, beside the machine's own ceiling, with a classifier whose fit sleeps and with SVC
  (:mod:`optuna_boxcox.bench.workers`);
- ``fidelity`` (not run by default): the exact, auto and subsampled searches' held-out accuracy
  and seconds (:mod:`optuna_boxcox.bench.fidelity`);
- ``price`` (not run by default): the default ``BoxCoxClassifier(clf).fit`` against
  ``make_pipeline(StandardScaler(), clf)`` on ``--csv``, in fresh processes
  (:mod:`optuna_boxcox.bench.price`);
- ``rows`` (not run by default): the default fit against the StandardScaler and MLE pipelines
  as the rows grow (10k to 10M), fresh processes, held-out accuracy and peak memory
  (:mod:`optuna_boxcox.bench.rows`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from optuna_boxcox.classifiers import BENCHMARKED

# The library and its heavy dependencies are imported inside the functions that use them:
# --help imports this module and answers without Optuna, NumPy or scikit-learn (cli/__init__).

BENCH_CLASSIFIERS = (*BENCHMARKED, "logistic")
SECTIONS = (
    "end-to-end",
    "components",
    "scale",
    "parallel",
    "read",
    "workers",
    "fidelity",
    "price",
    "rows",
)
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
        "--workers-storage",
        default=None,
        help="workers: a PostgreSQL database URL (default: a throw-away server started with the "
        "local PostgreSQL binaries)",
    )
    parser.add_argument(
        "--workers-sleep",
        default="2,4,8",
        help="workers: numbers of workers against one, with the sleeping classifier ('' skips)",
    )
    parser.add_argument(
        "--workers-sleep-case",
        default="0.5:300:8:iterative",
        help="workers: SECONDS:ROWS:FEATURES:SAMPLER[:GRID_SIZE] of the sleeping classifier's "
        "search (default 0.5:300:8:iterative, 352 trials)",
    )
    parser.add_argument(
        "--workers-repeats",
        type=int,
        default=1,
        help="workers: alternating runs of the ceiling and the k workers for each k (medians; "
        "default 1)",
    )
    parser.add_argument(
        "--workers-svc",
        default="2,3",
        help="workers: numbers of workers against one, with SVC ('' skips)",
    )
    parser.add_argument(
        "--workers-svc-case",
        default="5000:10:iterative:1",
        help="workers: ROWS:FEATURES:SAMPLER[:EPOCHS] of the SVC search (default "
        "5000:10:iterative:1, one epoch, 110 trials)",
    )
    parser.add_argument(
        "--cases",
        default=None,
        help="end-to-end: comma-separated DATA:CLASSIFIER:PRESET (DATA: sonar, or "
        "breast_cancer:N for its first N features); default: the issue's set",
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
        help="components: comma-separated (default linear,knn,bayes,svc,logistic)",
    )
    parser.add_argument(
        "--features",
        type=int,
        default=None,
        help="components: the first N features of --csv (default all)",
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
        "--fidelity-modes",
        default=None,
        metavar="LIST",
        help="fidelity: which searches run, among exact,auto,subsample (default all three; "
        "subsample needs the other two; auto alone for data whose exact search takes hours)",
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
    parser.add_argument(
        "--price-classifiers",
        default="bayes,linear,logistic,linear-svc,knn",
        help="price: comma-separated classifiers (default bayes,linear,logistic,linear-svc,knn)",
    )
    parser.add_argument(
        "--price-rounds",
        type=int,
        default=3,
        help="price: alternating pairs of processes per classifier (medians; default 3)",
    )
    parser.add_argument(
        "--price-numpy",
        action="store_true",
        help="price: fit NumPy arrays instead of the DataFrame --csv reads into",
    )
    parser.add_argument(
        "--rows-sizes",
        default="10000,20000,50000,100000,300000,1000000",
        help="rows: comma-separated training rows (default 10000,…,1000000)",
    )
    parser.add_argument(
        "--rows-features", type=int, default=20, help="rows: features of the data (default 20)"
    )
    parser.add_argument(
        "--rows-classifiers",
        default="bayes,linear,logistic,linear-svc,knn",
        help="rows: comma-separated classifiers (default bayes,linear,logistic,linear-svc,knn)",
    )
    parser.add_argument(
        "--rows-repeats",
        type=int,
        default=1,
        help="rows: alternating rounds of the three fits (medians; default 1)",
    )
    parser.add_argument(
        "--rows-data",
        type=Path,
        default=None,
        help="rows: folder for the generated arrays, kept for later runs (default: a scratch "
        "folder; 10M x 50 is 4 GB)",
    )
    parser.add_argument(
        "--rows-timeout",
        type=float,
        default=3600.0,
        help="rows: seconds a fit may take before the section stops (default 3600)",
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
        if "workers" in sections:
            ok = _workers(args, Path(tmp)) and ok
        if "fidelity" in sections:
            _fidelity(args, Path(tmp))
        if "price" in sections:
            _price(args, Path(tmp))
        if "rows" in sections:
            ok = _rows(args, Path(tmp)) and ok
    return 0 if ok else 1


def _rows(args: argparse.Namespace, workdir: Path) -> bool:
    import subprocess

    from optuna_boxcox.bench import rows
    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.cli._args import UsageError
    from optuna_boxcox.cli._args import split_names

    names = split_names(args.rows_classifiers) or []
    try:
        sizes = [int(v) for v in split_names(args.rows_sizes) or []]
    except ValueError:
        raise UsageError(f"--rows-sizes must be whole numbers, got {args.rows_sizes!r}") from None
    if not names or not sizes or min(sizes) < 100 or args.rows_repeats < 1:
        raise UsageError(
            "rows needs classifiers, sizes of 100 rows or more and --rows-repeats ≥ 1"
        )
    if args.rows_features < 1:
        raise UsageError(f"--rows-features must be at least 1, got {args.rows_features}")
    for name in names:
        try:
            make_classifier(name)
        except ValueError as error:
            raise UsageError(str(error)) from None
    folder = args.rows_data or workdir
    folder.mkdir(parents=True, exist_ok=True)
    print(
        f"rows: make_classification(n + {rows.HELD_OUT:,}, {args.rows_features} features, 10 "
        "informative), exp(X / 2), the last 100,000 rows held out; fresh processes, the "
        f"pipeline, MLE-pipeline and default fits alternating, {args.rows_repeats} round(s), "
        "medians; ratio = default / pipeline; peak = a fit's peak resident memory (the process's, "
        "imports and the array read included) / the training array",
        flush=True,
    )
    stems = {n: rows.make_data(folder, n, args.rows_features) for n in sorted(sizes)}
    print(rows.HEADER, flush=True)
    for name in names:
        cells = []
        for n, stem in stems.items():
            try:
                cells.append(
                    rows.measure(name, stem, repeats=args.rows_repeats, timeout=args.rows_timeout)
                )
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
                print(f"{name:<11} {n:>10,} {error}", flush=True)
                continue
            print(rows.format_cell(cells[-1]), flush=True)
        if cells:
            print(f"{'':<11} {rows.hump(cells)}", flush=True)
    print()
    return True


def _price(args: argparse.Namespace, workdir: Path) -> None:
    import statistics

    from optuna_boxcox.bench import price
    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.cli._args import UsageError
    from optuna_boxcox.cli._args import split_names

    names = split_names(args.price_classifiers) or []
    if args.price_rounds < 1 or not names:
        raise UsageError("price needs --price-rounds of at least 1 and one classifier or more")
    for name in names:
        try:
            make_classifier(name)
        except ValueError as error:
            raise UsageError(str(error)) from None
    csv = args.csv
    if csv is None:  # scikit-learn's own copy, so that the section runs offline as it is
        from sklearn.datasets import load_breast_cancer

        frame = load_breast_cancer(as_frame=True).frame.rename(columns={"target": args.label})
        csv = workdir / "breast_cancer.csv"
        frame.to_csv(csv, index=False)
    print(
        f"price: {csv.name}, {'NumPy arrays' if args.price_numpy else 'a DataFrame'}; fresh "
        "processes each timing 3 fits of one kind, nothing fitted before; pipeline and default "
        f"alternate, {args.price_rounds} round{'s' if args.price_rounds != 1 else ''}; 'ratio' = "
        "default / pipeline (medians over "
        "rounds of each process's median of 3); 'first fit' = a process's first default fit",
        flush=True,
    )
    print(price.HEADER, flush=True)
    rows = []
    for name in names:
        try:
            rows.append(
                price.measure(
                    str(csv), args.label, name, rounds=args.price_rounds, numpy=args.price_numpy
                )
            )
        except RuntimeError as error:
            raise UsageError(f"price: {error}") from None
        print(price.format_row(rows[-1]), flush=True)
    ratios = [row.ratio for row in rows]
    print(f"median of the default/pipeline ratios: {statistics.median(ratios):.0f}x")
    print()


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


def _workers(args: argparse.Namespace, workdir: Path) -> bool:
    from optuna_boxcox.bench import workers
    from optuna_boxcox.cli._args import UsageError
    from optuna_boxcox.cli._args import split_names

    def counts(text: str, option: str) -> list[int]:
        try:
            ks = [int(k) for k in split_names(text) or []]
        except ValueError:
            ks = [0]
        if any(k < 2 for k in ks):
            raise UsageError(f"{option} takes numbers of workers of at least 2, got {text!r}")
        return ks

    def case_of(text: str, option: str, fields: int, sleep: bool) -> workers.WorkersCase:
        parts = text.split(":")
        try:
            assert fields <= len(parts) <= fields + 1
            seconds = float(parts.pop(0)) if sleep else 0.0
            rows, features, sampler = int(parts[0]), int(parts[1]), parts[2]
            extra = int(parts[3]) if len(parts) > 3 else None
            assert rows > 0 and 1 <= features <= 30 and seconds >= 0 and (extra or 1) > 0
        except (AssertionError, ValueError):
            form = (
                "SECONDS:ROWS:FEATURES:SAMPLER[:GRID_SIZE]"
                if sleep
                else ("ROWS:FEATURES:SAMPLER[:EPOCHS]")
            )
            raise UsageError(f"{option} takes {form} (1 to 30 features), got {text!r}") from None
        settings = {} if extra is None else {"grid_size" if sleep else "epochs": extra}
        return workers.WorkersCase(
            classifier="sleep" if sleep else "svc",
            rows=rows,
            features=features,
            seconds=seconds,
            sampler=sampler,
            settings=settings,
        )

    if args.workers_repeats < 1:
        raise UsageError(f"--workers-repeats must be at least 1, got {args.workers_repeats}")
    plans = []
    ks = counts(args.workers_sleep, "--workers-sleep")
    if ks:
        plans.append((case_of(args.workers_sleep_case, "--workers-sleep-case", 4, True), ks))
    ks = counts(args.workers_svc, "--workers-svc")
    if ks:
        plans.append((case_of(args.workers_svc_case, "--workers-svc-case", 3, False), ks))
    for case, _ in plans:
        try:
            workers.case_sampler(case)
        except ValueError as error:
            raise UsageError(str(error)) from None
    print(
        "workers: k search processes (optuna_boxcox.optimize) on one PostgreSQL study against "
        "one; the processes of a run are started together and released together once all are "
        "ready ('start-up': seconds until then — imports, data, objective, connection); 'whole "
        "commands': start-up included; 'once all are ready': from the release to the last exit; "
        "'ceiling': the one worker's fits in one process against split over k processes (same "
        "start-up, no plan, no claims); 'fraction' = speed-up / ceiling; 'sweeps': the most k "
        "workers can gain when each sweep waits for its last fit; 'fits': fits made by all "
        "workers / by the one; 'once': every plan position COMPLETE exactly once; 'same Λ': "
        "Λopt and value as the one worker's"
        + (
            f"; medians of {args.workers_repeats} alternating runs of the ceiling and the workers"
            if args.workers_repeats > 1
            else ""
        ),
        flush=True,
    )
    ok = True
    with workers.temporary_storage(args.workers_storage) as url:
        for case, ks in plans:
            print(f"\n{case.label}", flush=True)
            print(workers.format_workers_rows([]), flush=True)
            rows = workers.measure(
                case,
                ks,
                url,
                workdir,
                repeats=args.workers_repeats,
                report=lambda row: print(
                    workers.format_workers_rows([row], header=False), flush=True
                ),
            )
            ok = ok and all(r["once"] and r["same"] for r in rows)
    print()
    return ok


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

    modes = tuple(split_names(args.fidelity_modes) or fidelity.MODES)
    print(
        f"fidelity: iterative search on 70 % of {args.fidelity_rows} rows, "
        f"{' vs '.join(fidelity.MODE_TITLES[m] for m in modes)}; held-out accuracy on the other "
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
                    modes=modes,
                )
            )
            print(fidelity.format_rows(rows[-1:]).splitlines()[2], flush=True)
    print()
    print(fidelity.format_rows(rows))
    print()
    print("estimated (before the search, by auto) vs measured (the search, after) seconds:")
    print(fidelity.format_estimates(rows))
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


def _case_data(data: str) -> str:
    """An end-to-end case's DATA (sonar, NAME, NAME:N or NAME[:N]) as ``end_to_end`` takes it,
    refusing in one line a data set it cannot load."""
    from optuna_boxcox.cli._args import UsageError
    from optuna_boxcox.datasets import BUNDLED

    name, _, rest = data.replace("[:", ":").rstrip("]").partition(":")
    if data == "sonar":
        return data
    if name not in BUNDLED or not (rest == "" or (rest.isdigit() and int(rest) > 0)):
        raise UsageError(
            f"--cases: unknown DATA {data!r}; give sonar, or one of {', '.join(BUNDLED)} "
            "optionally with :N for its first N features"
        )
    return f"{name}[:{rest}]" if rest else name


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
        # DATA as the help writes it, breast_cancer:N, or as the defaults do, breast_cancer[:N].
        cases = tuple((_case_data(data), c, p) for data, c, p in cases)
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
    X, y = load_csv(args.csv, args.label)
    if args.features:
        X = X.iloc[:, : args.features]
    X, y = training_fold(X, y)
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
