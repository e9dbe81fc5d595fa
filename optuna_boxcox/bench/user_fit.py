"""A user's whole fit: the plain pipeline, then ``BoxCoxClassifier`` with its defaults.

    /usr/bin/time -v python -m optuna_boxcox.bench.user_fit data.csv --classifier logistic

Reads a CSV (label column ``y``), fits ``make_pipeline(StandardScaler(), clf)`` and then
``BoxCoxClassifier(clf)``, and prints both fits' seconds and training accuracies and the search's
best score (docs/performance_log.md, LogisticRegression's fast path).
"""

from __future__ import annotations

import argparse
import time
import warnings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--label", default="y")
    parser.add_argument("--features", type=int, default=None)
    parser.add_argument("--classifier", default="logistic")
    args = parser.parse_args(argv)

    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from optuna_boxcox import BoxCoxClassifier
    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.datasets import load_csv

    warnings.simplefilter("ignore")
    X, y = load_csv(args.csv, args.label)
    if args.features:
        X = X.iloc[:, : args.features]
    started = time.perf_counter()
    plain = make_pipeline(StandardScaler(), make_classifier(args.classifier)).fit(X, y)
    plain_seconds = time.perf_counter() - started
    started = time.perf_counter()
    model = BoxCoxClassifier(make_classifier(args.classifier)).fit(X, y)
    seconds = time.perf_counter() - started
    print(
        f"{X.shape[0]} × {X.shape[1]}: BoxCoxClassifier fit {seconds:.2f} s, best "
        f"{model.best_score_:.4f}, training accuracy {model.score(X, y):.4f}; plain pipeline fit "
        f"{1e3 * plain_seconds:.1f} ms, training accuracy {plain.score(X, y):.4f}"
    )


if __name__ == "__main__":
    main()
