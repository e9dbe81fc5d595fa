"""``optuna-boxcox bench``: the paper's plain loop, plain ``study.optimize`` and the batched fast path,
side by side on the same data, classifier and preset, with the ratios measured in one run.

(a) the paper's loop as its pseudo-code writes it: every candidate re-scales all columns, applies
    ``scipy.stats.boxcox`` per column, fits a fresh ``StandardScaler`` and the paper's classifier
    (``SVC(probability=True)`` for svc), predicts the training data; driven by the same plan.
(b) ``study.optimize`` with :class:`CoordinateGridSampler` and :class:`BoxCoxObjective` on SQLite.
(c) :func:`optuna_boxcox.optimize` on SQLite: transactions of ≥ 100 trials, incremental transform, exact fast
    scorers (compiled kernels for the perceptron and k-NN/SVC distances).

(b) and (c) build and warm their objective before the clock starts (loading compiled kernels is a
one-off start-up of about a second per process, printed separately); (a) has none.

All three must choose the same Λ; (b) is slow by design, so by default it runs the first
``--b-trials`` trials of the plan and is checked trial by trial against (c)'s first trials.

(c) with one job and with ``--n-jobs`` jobs alternate ``--repeats`` times, (a) beside them in the
first three: this machine's speed drifts (the same run took 0.9 s and 1.3 s a minute apart), so
each figure is the median of its runs and the speed-up the median of the ratios of neighbouring
runs. Beside each pair, the same number of
processes runs a fixed pure-Python loop, for the speed-up the machine itself gives at that moment
(a ceiling for any program), and the bench reports the share of the parallel run spent after the
last fit: sweeps of Λ scored before, which only one process can write to SQLite.
"""

from __future__ import annotations

import gc
from pathlib import Path
import sqlite3
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np
import optuna
from scipy import stats
from sklearn.base import clone
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._objective._objective import BoxCoxObjective
from optuna_boxcox._runner import RunStats
from optuna_boxcox._runner import optimize
from optuna_boxcox._system._process import peak_rss_kib
from optuna_boxcox.classifiers import BENCHMARKED
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.classifiers import paper_svc
from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.storage import open_storage

BENCH_CLASSIFIERS = BENCHMARKED
#: Repeats of (a) alternating with (c) (its median is taken).
_PLAIN_REPEATS = 3


def training_fold(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """The first training fold of the paper's outer protocol, features cast to float32 as the authors did."""
    X = np.asarray(X, dtype=np.float32).astype(np.float64)
    y = np.asarray(y)
    train, _ = next(RepeatedStratifiedKFold(n_splits=10, n_repeats=5, random_state=42).split(X, y))
    return X[train], y[train]


def paper_classifier(name: str) -> Any:
    return paper_svc() if name == "svc" else make_classifier(name)


def plain_loop_score(X: np.ndarray, y: np.ndarray, lambdas: np.ndarray, classifier: Any) -> float:
    """One evaluation exactly as the paper's pseudo-code does it."""
    Z = 1 + (X - X.min(axis=0)) / np.where(np.ptp(X, axis=0) > 0, np.ptp(X, axis=0), 1.0)
    B = np.column_stack([stats.boxcox(Z[:, j], lmbda=lam) for j, lam in enumerate(lambdas)])
    S = StandardScaler().fit_transform(B)
    model = clone(classifier).fit(S, y)
    return float(np.mean(model.predict(S) == y))


def run_plain_loop(X, y, classifier_name, sampler, space) -> tuple[np.ndarray, float, int, float]:
    """The sampler's plan, every point scored by :func:`plain_loop_score`: (Λopt, its score,
    evaluations, seconds)."""
    classifier = paper_classifier(classifier_name)
    evaluations = 0

    def score(points: list[np.ndarray]) -> list[float]:
        nonlocal evaluations
        evaluations += len(points)
        return [plain_loop_score(X, y, x, classifier) for x in points]

    started = time.perf_counter()
    chosen, best = sampler.plan(space).run(score)
    return chosen, float(best), evaluations, time.perf_counter() - started


def warm_objective(X, y, classifier_name) -> tuple[BoxCoxObjective, float]:
    """The objective with its one-off start-up (compiled kernels, first transform) done, and how
    long that start-up took."""
    objective = BoxCoxObjective(X, y, make_classifier(classifier_name))
    started = time.perf_counter()
    objective.warm_up()
    return objective, time.perf_counter() - started


def run_optimize(X, y, classifier_name, preset, url, n_trials) -> tuple[optuna.Study, float]:
    objective, _ = warm_objective(X, y, classifier_name)
    sampler = CoordinateGridSampler.from_preset(preset)
    study = optuna.create_study(
        storage=open_storage(url), study_name="b", direction="maximize", sampler=sampler
    )
    started = time.perf_counter()
    study.optimize(objective, n_trials=n_trials)
    return study, time.perf_counter() - started


def run_fast(
    X, y, classifier_name, preset, url, n_jobs
) -> tuple[optuna.Study, Any, float, float, RunStats]:
    objective, startup = warm_objective(X, y, classifier_name)
    sampler = CoordinateGridSampler.from_preset(preset)
    study = optuna.create_study(
        storage=open_storage(url), study_name="c", direction="maximize", sampler=sampler
    )
    stats = RunStats()
    gc.collect()  # earlier runs' garbage is not this run's cost
    started = time.perf_counter()
    result = optimize(study, objective, n_jobs=n_jobs, stats=stats)
    return study, result, time.perf_counter() - started, startup, stats


def _spin(iterations: int) -> int:
    total = 0
    for i in range(iterations):
        total += i * i
    return total


def _spin_when_told(connection: Any, iterations: int) -> None:
    connection.recv()
    _spin(iterations)
    connection.send(None)


def parallel_capacity(n_jobs: int, iterations: int = 1_500_000) -> float:
    """How many times the work of one process ``n_jobs`` processes do in the same time, right now:
    a fixed pure-Python loop run ``n_jobs`` times here, then once here and once in each of
    ``n_jobs - 1`` forked children at the same time (started beforehand; nothing shared)."""
    import multiprocessing

    started = time.perf_counter()
    for _ in range(n_jobs):
        _spin(iterations)
    alone = time.perf_counter() - started
    context = multiprocessing.get_context("fork")
    pipes = [context.Pipe() for _ in range(n_jobs - 1)]
    children = [
        context.Process(target=_spin_when_told, args=(theirs, iterations)) for _, theirs in pipes
    ]
    for child in children:
        child.start()
    started = time.perf_counter()
    for mine, _ in pipes:
        mine.send(None)
    _spin(iterations)
    for mine, _ in pipes:
        mine.recv()
    together = time.perf_counter() - started
    for child in children:
        child.join()
    return alone / together


def bench_classifier(
    X, y, name, preset, b_trials, workdir: Path, *, n_jobs: int = 2, repeats: int = 5
) -> dict[str, Any]:
    space = BoxCoxObjective(X, y, make_classifier(name)).space
    sampler = CoordinateGridSampler.from_preset(preset)
    budget = sampler.budget(space.dim)
    plain_seconds = []
    # (c) with one job and with n_jobs, alternating, each run on a new SQLite file.
    # (seconds, share spent writing, share after the last fit)
    runs: dict[int, list[tuple[float, float, float]]] = {1: [], n_jobs: []}
    results, capacity = [], []
    for k in range(repeats):
        # (a) alternates with (c) too, so that its ratio to (c) is of runs made side by side; in
        # the first three repeats only (the plain loop is the long part of the section).
        if k < _PLAIN_REPEATS:
            lambdas_a, best_a, n_a, seconds_a = run_plain_loop(X, y, name, sampler, space)
            plain_seconds.append(seconds_a)
        for jobs in (1, n_jobs):
            study, result, seconds, startup, stats = run_fast(
                X, y, name, preset, f"sqlite:///{workdir / f'c{jobs}-{name}-{k}.db'}", jobs
            )
            runs[jobs].append(
                (seconds, stats.persist_seconds / seconds, 1 - stats.scoring_seconds / seconds)
            )
            results.append(result.params)
            if k == 0 and jobs == 1:
                study_c, result_c, first_startup = study, result, startup
            del study
        capacity.append(parallel_capacity(n_jobs))
    t_a = statistics.median(plain_seconds)
    t_c = statistics.median(run[0] for run in runs[1])
    t_c2 = statistics.median(run[0] for run in runs[n_jobs])
    speedups = [one[0] / many[0] for one, many in zip(runs[1], runs[n_jobs])]
    n_b = budget if b_trials <= 0 else min(b_trials, budget)
    study_b, t_b = run_optimize(X, y, name, preset, f"sqlite:///{workdir / f'b-{name}.db'}", n_b)
    lambdas_c = np.array(list(result_c.params.values()))
    trials_b = study_b.trials[:n_b]
    trials_c = study_c.trials[:n_b]
    b_matches = all(
        tb.params == tc.params and tb.value == tc.value for tb, tc in zip(trials_b, trials_c)
    )
    return {
        "classifier": name,
        "trials": budget,
        "a_ms": 1e3 * t_a / n_a,
        "b_ms": 1e3 * t_b / n_b,
        "c_ms": 1e3 * t_c / budget,
        "c2_ms": 1e3 * t_c2 / budget,
        "c_c2": statistics.median(speedups),
        "c_c2_range": (min(speedups), max(speedups)),
        "n_jobs": n_jobs,
        "repeats": repeats,
        "c_write_share": statistics.median(run[1] for run in runs[1]),
        "c2_tail_share": statistics.median(run[2] for run in runs[n_jobs]),
        "capacity": statistics.median(capacity),
        "capacity_range": (min(capacity), max(capacity)),
        "same_lambda_a_c": bool(np.array_equal(lambdas_a, lambdas_c)),
        "best_a": best_a,
        "best_c": float(result_c.best_value),
        "same_lambda_c_c2": all(params == result_c.params for params in results),
        "b_equals_c": b_matches
        and (n_b < budget or study_b.sampler.result(study_b).params == result_c.params),
        "b_trials": n_b,
        "startup_s": first_startup,
    }


def peak_rss_of_search(
    csv: Path, label: str, classifier: str, preset: str, workdir: Path
) -> tuple[float, int]:
    """Peak RSS (MiB) of a separate process running one batched search persisted to SQLite."""
    code = (
        "from optuna_boxcox.bench.components import _child_search; "
        f"_child_search({str(csv)!r}, {label!r}, {classifier!r}, {preset!r}, {str(workdir / 'rss.db')!r})"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    trials, rss_kib = completed.stdout.split()[-2:]
    return int(rss_kib) / 1024, int(trials)


def _peak_rss_kib() -> int:
    return peak_rss_kib()


def _child_search(csv: str, label: str, classifier: str, preset: str, db: str) -> None:
    from optuna_boxcox.datasets import load_csv

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = training_fold(*load_csv(csv, label))
    run_fast(X, y, classifier, preset, f"sqlite:///{db}", 1)
    peak = _peak_rss_kib()
    # Counted in SQL: Optuna's study summaries read every trial, which took minutes and GiBs here.
    with sqlite3.connect(db) as connection:
        ((trials,),) = connection.execute(
            "SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE'"
        ).fetchall()
    print(trials, peak)


def format_rows(rows: list[dict[str, Any]]) -> str:
    jobs = rows[0]["n_jobs"] if rows else 2
    head = (
        f"{'classifier':<10} {'trials':>7} {'(a) ms':>8} {'(b) ms':>8} {'(c) ms':>8} {f'(c)x{jobs} ms':>9} "
        f"{'a/c':>6} {'b/c':>7} {f'c/c{jobs}':>6} {'(range)':>11} {'machine':>7} {'(range)':>11} "
        f"{'write':>6} {'tail':>5}  same Λ a=c, c=c{jobs}, b=c"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        low, high = r["c_c2_range"]
        machine_low, machine_high = r["capacity_range"]
        lines.append(
            f"{r['classifier']:<10} {r['trials']:>7} {r['a_ms']:>8.2f} {r['b_ms']:>8.1f} {r['c_ms']:>8.3f} "
            f"{r['c2_ms']:>9.3f} {r['a_ms'] / r['c_ms']:>6.1f} {r['b_ms'] / r['c_ms']:>7.0f} "
            f"{r['c_c2']:>6.2f} {f'{low:.2f}–{high:.2f}':>11} {r['capacity']:>7.2f} "
            f"{f'{machine_low:.2f}–{machine_high:.2f}':>11} {r['c_write_share']:>6.0%} {r['c2_tail_share']:>5.0%}  "
            f"{r['same_lambda_a_c']}, {r['same_lambda_c_c2']}, "
            f"{r['b_equals_c']} (first {r['b_trials']} trials); best a {r['best_a']:.4f}, "
            f"c {r['best_c']:.4f}; "
            f"start-up {r['startup_s']:.2f} s"
        )
    return "\n".join(lines)


__all__ = [
    "bench_classifier",
    "format_rows",
    "peak_rss_of_search",
    "plain_loop_score",
    "training_fold",
]
