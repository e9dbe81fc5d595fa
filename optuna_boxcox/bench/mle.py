"""The Box-Cox MLE fit at users' sizes: ``BoxCoxTransformer`` against ``PowerTransformer``.

    python -m optuna_boxcox.bench.mle                      # 1M × 20, three alternating runs
    python -m optuna_boxcox.bench.mle --rows 10000000 --features 50 --no-peer --npy X.npy

The data are ``make_classification(rows, features, n_informative=10, random_state=0)`` mapped by
``exp(X / 2)`` (positive and skewed). ``BoxCoxTransformer(lambdas="mle").fit`` on them (its range
scaling into [1, 2] included) runs against ``PowerTransformer(method="box-cox").fit`` on the same
columns scaled into [1, 2], alternating over the repeats so that the machine's drift hits both
alike; the table gives the medians and their ratio, the largest relative difference of the λ
from scipy's ``boxcox_normmax(method="mle")`` of each scaled column, and the peak memory of one
``BoxCoxTransformer`` fit, and of a fit and transform, beyond the input (tracemalloc, which NumPy
reports its arrays to), with the process's peak resident size.

``--npy PATH`` reads X from PATH, writing it there first when it does not exist: a fresh process
run on the file (``/usr/bin/time -v``) then holds X without ``make_classification``'s own peak.
"""

from __future__ import annotations

import argparse
import gc
from pathlib import Path
import resource
import statistics
import sys
import time
import tracemalloc
from typing import Any
import warnings

import numpy as np

DEFAULT_ROWS = 1_000_000
DEFAULT_FEATURES = 20


def make_data(rows: int, features: int) -> np.ndarray:
    """``exp(X / 2)`` of ``make_classification(rows, features, n_informative=10,
    random_state=0)``; fewer than 12 features keep scikit-learn's rule (informative and
    redundant columns fit in them)."""
    from sklearn.datasets import make_classification

    informative = min(10, features)
    redundant = min(2, features - informative)
    X, _ = make_classification(
        n_samples=rows,
        n_features=features,
        n_informative=informative,
        n_redundant=redundant,
        random_state=0,
    )
    X *= 0.5
    return np.exp(X, out=X)  # in place: the data's one copy


def load_data(rows: int, features: int, npy: Path | None) -> np.ndarray:
    """:func:`make_data`, or X read from ``npy`` (written there first if missing)."""
    if npy is None:
        return make_data(rows, features)
    if not npy.exists():
        np.save(npy, make_data(rows, features))
    X = np.load(npy)
    if X.shape != (rows, features):
        raise SystemExit(f"{npy} holds {X.shape[0]} × {X.shape[1]}, not {rows} × {features}")
    return X


def scaled(X: np.ndarray) -> np.ndarray:
    """X's columns scaled into [1, 2] as the transformer scales them (the peer's input)."""
    from optuna_boxcox._math._numerics import fit_range
    from optuna_boxcox._math._numerics import range_standardise

    return range_standardise(X, *fit_range(X))


def peak_bytes(function: Any) -> int:
    """The most memory NumPy and Python held at once while ``function()`` ran, beyond what they
    held before (tracemalloc: slow, so never inside a timed run)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        function()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def run(
    rows: int = DEFAULT_ROWS,
    features: int = DEFAULT_FEATURES,
    repeats: int = 3,
    *,
    peer: bool = True,
    check_columns: int = 2,
    npy: Path | None = None,
) -> dict[str, Any]:
    """The measurements :func:`main` prints, as a dict: seconds of every run of each fit, their
    medians and ratio, the λ and scipy's (all columns from the peer's fit, whose λ are scipy's;
    without the peer, scipy's of the first ``check_columns``), the peak bytes beyond the input."""
    from scipy import stats
    from sklearn.preprocessing import PowerTransformer

    from optuna_boxcox import BoxCoxTransformer

    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    X = load_data(rows, features, npy)
    Z = scaled(X) if peer else None
    ours: list[float] = []
    theirs: list[float] = []
    lambdas = reference = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a crowded column's warning is not what is measured
        BoxCoxTransformer().fit(X[: min(rows, 20_000)])  # Numba's kernels loaded, not timed
        for _ in range(repeats):
            started = time.perf_counter()
            lambdas = BoxCoxTransformer(lambdas="mle").fit(X).lambdas_
            ours.append(time.perf_counter() - started)
            if peer:
                started = time.perf_counter()
                # scikit-learn calls scipy.stats.boxcox, whose λ is boxcox_normmax(method="mle")
                reference = PowerTransformer(method="box-cox", standardize=True).fit(Z).lambdas_
                theirs.append(time.perf_counter() - started)
        if not peer and check_columns > 0:
            from optuna_boxcox._math._numerics import fit_range
            from optuna_boxcox._math._numerics import range_standardise

            low, span = fit_range(X)
            reference = np.array(
                [
                    stats.boxcox_normmax(range_standardise(X[:, j], low[j], span[j]), method="mle")
                    for j in range(min(check_columns, features))
                ]
            )
        del Z
        fit_peak = peak_bytes(lambda: BoxCoxTransformer().fit(X))
        both_peak = peak_bytes(lambda: BoxCoxTransformer().fit(X).transform(X))
    compared = lambdas[: len(reference)] if reference is not None else None
    return {
        "rows": rows,
        "features": features,
        "repeats": repeats,
        "input_bytes": X.nbytes,
        "boxcox_seconds": ours,
        "power_seconds": theirs,
        "boxcox_median": statistics.median(ours),
        "power_median": statistics.median(theirs) if theirs else None,
        "ratio": statistics.median(theirs) / statistics.median(ours) if theirs else None,
        "lambdas": lambdas,
        "scipy_lambdas": reference,
        "max_relative_difference": (
            float(np.max(np.abs(compared - reference) / np.abs(reference)))
            if reference is not None and len(reference)
            else None
        ),
        "fit_peak_bytes": fit_peak,
        "fit_transform_peak_bytes": both_peak,
        "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def format_result(result: dict[str, Any]) -> str:
    """The lines :func:`main` prints."""
    mb = 1 / 2**20
    size = result["input_bytes"]
    lines = [
        f"{result['rows']} × {result['features']} float64 ({size * mb:.0f} MB); medians of "
        f"{result['repeats']} alternating run(s)",
        f"BoxCoxTransformer(lambdas='mle').fit  {result['boxcox_median']:.2f} s  "
        f"(runs: {', '.join(f'{s:.2f}' for s in result['boxcox_seconds'])})",
    ]
    if result["power_median"] is not None:
        lines += [
            f"PowerTransformer(method='box-cox').fit  {result['power_median']:.2f} s  "
            f"(runs: {', '.join(f'{s:.2f}' for s in result['power_seconds'])})",
            f"ratio (PowerTransformer / BoxCoxTransformer)  {result['ratio']:.1f}×",
        ]
    if result["max_relative_difference"] is not None:
        lines.append(
            f"largest relative λ difference to scipy's boxcox_normmax ("
            f"{len(result['scipy_lambdas'])} column(s))  {result['max_relative_difference']:.2e}"
        )
    lines += [
        f"peak memory beyond the input: fit {result['fit_peak_bytes'] * mb:.0f} MB "
        f"({result['fit_peak_bytes'] / size:.2f} × X), fit + transform "
        f"{result['fit_transform_peak_bytes'] * mb:.0f} MB "
        f"({result['fit_transform_peak_bytes'] / size:.2f} × X)",
        f"process peak resident size {result['max_rss_bytes'] * mb:.0f} MB (the peer and the "
        "data's generation included)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--features", type=int, default=DEFAULT_FEATURES)
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="alternating runs of each fit (medians; PowerTransformer takes minutes at 1M × 20)",
    )
    parser.add_argument(
        "--no-peer",
        dest="peer",
        action="store_false",
        help="time BoxCoxTransformer only (10M × 50: PowerTransformer would take hours)",
    )
    parser.add_argument(
        "--check-columns",
        type=int,
        default=2,
        help="without the peer, columns whose λ scipy computes for the comparison (default 2)",
    )
    parser.add_argument(
        "--npy", type=Path, default=None, help="read X from this .npy (written first if missing)"
    )
    args = parser.parse_args(argv)
    if args.rows < 2 or args.features < 1 or args.repeats < 1:
        parser.error("--rows must be at least 2, --features and --repeats at least 1")
    result = run(
        args.rows,
        args.features,
        args.repeats,
        peer=args.peer,
        check_columns=args.check_columns,
        npy=args.npy,
    )
    print(format_result(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
