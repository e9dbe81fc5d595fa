"""What the default's search would cost in ``benchmark``, before running it: one fit per data set.

    python -m optuna_boxcox.bench.plan_cost nn --datasets dev-b --data-dir ../shared/data

For each data set as ``benchmark`` loads it (at most ``--max-rows`` rows, then an outer fold's
training part, 4/5 of them), times one fit of the classifier on standard-scaled columns (the
median of ``--repeats``) and multiplies it by the trials of the guarded default's coordinate plan
and by the outer folds. The estimate leaves out the gate, the fixed methods and the score cache's
repeated points; it is for deciding whether a run fits the time there is, not a measurement of
the run (whose own progress line gives its remaining time as it goes).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._lifecycle._guard import SEARCH_SAMPLER
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.experiments._benchmark_data import expand_datasets
from optuna_boxcox.experiments._benchmark_data import load_benchmark_data
from optuna_boxcox.samplers import SAMPLERS


def fit_seconds(classifier: str, X: np.ndarray, y: np.ndarray, repeats: int) -> float:
    """Median seconds of ``repeats`` fits of a fresh ``classifier`` on ``X`` standard-scaled."""
    X = StandardScaler().fit_transform(X)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make_classifier(classifier).fit(X, y)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("classifier")
    parser.add_argument("--datasets", default="dev-b")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--max-rows", type=int, default=1500)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    plan = SAMPLERS[SEARCH_SAMPLER](0)
    total = 0.0
    print(f"{'data set':26s} {'rows':>5s} {'cols':>4s} {'fit s':>6s} {'trials':>6s} {'hours':>6s}")
    for spec in expand_datasets(args.datasets.split(","), args.data_dir):
        name, X, y = load_benchmark_data(spec, max_rows=args.max_rows)
        X_train, _, y_train, _ = train_test_split(
            X.to_numpy(dtype=float), y, test_size=1 / args.folds, stratify=y, random_state=0
        )
        seconds = fit_seconds(args.classifier, X_train, y_train, args.repeats)
        trials = plan.budget(X.shape[1])
        hours = args.folds * trials * seconds / 3600
        total += hours
        print(
            f"{name:26s} {len(y_train):5d} {X.shape[1]:4d} {seconds:6.2f} {trials:6d} {hours:6.1f}",
            flush=True,
        )
    print(f"total: {total:.1f} h of one core for the searches alone")


if __name__ == "__main__":
    main()
