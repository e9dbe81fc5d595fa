"""The paper's search as a plain script: every candidate transformed and scored from scratch.

    python -m optuna_boxcox.bench.plain_loop --csv sonar.csv --label y --classifier bayes \\
        --preset combined2

This is what the paper's pseudo-code does for each candidate Λ: rescale every column into [1, 2],
apply ``scipy.stats.boxcox`` per column, fit a fresh ``StandardScaler`` and the paper's classifier
(``SVC(probability=True)`` for svc), predict the training data, accuracy. The candidates come from
the same plan as ``optuna-boxcox search`` (Algorithm 6 with the preset's settings, from the
per-feature MLE point), and a Λ seen before is looked up instead of refitted, as any sensible
script would. Nothing is stored. Prints one JSON line: the chosen Λ, its score, the evaluations,
the candidates and the seconds the search took.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", required=True)
    parser.add_argument("--label", default="y")
    parser.add_argument("--features", type=int, default=None)
    parser.add_argument("--classifier", default="bayes")
    parser.add_argument("--preset", default="iterative")
    args = parser.parse_args(argv)

    import numpy as np

    from optuna_boxcox._math._numerics import fit_range
    from optuna_boxcox._math._numerics import mle_lambdas
    from optuna_boxcox._math._numerics import range_standardise
    from optuna_boxcox._study._space import LambdaSpace
    from optuna_boxcox._study._space import default_bounds
    from optuna_boxcox.bench.components import paper_classifier
    from optuna_boxcox.bench.components import plain_loop_score
    from optuna_boxcox.datasets import load_csv
    from optuna_boxcox.samplers import CoordinateGridSampler

    warnings.simplefilter("ignore")  # SVC(probability=True)'s deprecation, convergence warnings
    X, y = load_csv(args.csv, args.label)
    if args.features:
        X = X.iloc[:, : args.features]
    X, y = X.to_numpy(dtype=np.float64), y.to_numpy()
    started = time.perf_counter()
    # The search's domain and starting point, as the objective declares them (SPEC §3).
    low, span = fit_range(X)
    start = mle_lambdas(range_standardise(X, low, span), "box-cox")
    bounds = default_bounds(start)
    space = LambdaSpace(tuple(f"x{j}" for j in range(X.shape[1])), *bounds, start)
    classifier = paper_classifier(args.classifier)
    seen: dict[bytes, float] = {}
    candidates = 0

    def score(points: list[np.ndarray]) -> list[float]:
        nonlocal candidates
        candidates += len(points)
        scores = []
        for x in points:
            key = np.asarray(x, dtype=np.float64).tobytes()
            if key not in seen:
                seen[key] = plain_loop_score(X, y, x, classifier)
            scores.append(seen[key])
        return scores

    sampler = CoordinateGridSampler.from_preset(args.preset)
    chosen, best = sampler.plan(space).run(score)
    print(
        json.dumps(
            {
                "lambdas": [float(v) for v in chosen],
                "score": best,
                "evaluations": len(seen),
                "candidates": candidates,
                "seconds": time.perf_counter() - started,
            }
        )
    )


if __name__ == "__main__":
    main()
