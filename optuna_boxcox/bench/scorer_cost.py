"""Seconds a new point costs a classifier's fast scorer, for its cost class (docs/performance_log.md).

    python -m optuna_boxcox.bench.scorer_cost --classifier logistic

On ``make_classification(n, p)``, ``exp(X / 2)``, standard-scaled Box-Cox columns: the scorer is
reset at Λ = 1, then one column at a time changes to a random λ in [−2, 3] (``set_column`` and
``score``, the columns prepared beforehand); prints the median and the minimum of ``--repeats``
such points per shape, one BLAS thread.
"""

from __future__ import annotations

import argparse
import time


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classifier", default="logistic")
    parser.add_argument(
        "--shapes",
        default="300x17x2,2000x10x2,2000x30x2,5000x30x2,20000x30x2,2000x30x3",
        help="comma-separated ROWSxFEATURESxCLASSES",
    )
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)

    import numpy as np
    from scipy import stats
    from sklearn.datasets import make_classification
    from sklearn.metrics import accuracy_score
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    from optuna_boxcox._objective._evaluators import make_fast_scorer
    from optuna_boxcox.classifiers import make_classifier

    for shape in args.shapes.split(","):
        n, p, k = (int(v) for v in shape.split("x"))
        X, y = make_classification(n, p, n_informative=min(p - 2, 10), n_classes=k, random_state=0)
        Z = 1 + (np.exp(X / 2) - np.exp(X / 2).min(axis=0)) / np.ptp(np.exp(X / 2), axis=0)

        def column(j: int, lam: float, Z: np.ndarray = Z) -> np.ndarray:
            return StandardScaler().fit_transform(stats.boxcox(Z[:, j], lam)[:, None])[:, 0]

        scorer = make_fast_scorer(make_classifier(args.classifier), y, accuracy_score)
        if scorer is None:
            print(f"{shape}: no fast scorer")
            continue
        rng = np.random.default_rng(0)
        changes = [
            (j, column(j, lam))
            for j, lam in (
                (int(rng.integers(p)), float(rng.uniform(-2, 3))) for _ in range(args.repeats)
            )
        ]
        seconds = []
        with threadpool_limits(1):
            scorer.reset(np.column_stack([column(j, 1.0) for j in range(p)]))
            scorer.score()
            for j, values in changes:
                started = time.perf_counter()
                scorer.set_column(j, values)
                scorer.score()
                seconds.append(time.perf_counter() - started)
        median = float(np.median(seconds))
        print(
            f"{n} x {p}, {k} classes: median {1e3 * median:.2f} ms, min {1e3 * min(seconds):.2f} ms, "
            f"{median / (n * p):.2g} s per row and feature",
            flush=True,
        )


if __name__ == "__main__":
    main()
