"""Compare the paper's coordinate search with Optuna's TPE and a Nelder-Mead sampler on wine.

    python examples/compare_samplers.py [--seeds 3] [--features 13]

The same as `optuna-boxcox compare`; every study lands in one SQLite file under studies/.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import optuna
from sklearn.datasets import load_wine
from sklearn.neighbors import KNeighborsClassifier

from optuna_boxcox.experiments.compare import compare
from optuna_boxcox.experiments.compare import format_table

STUDIES = Path(__file__).resolve().parents[1] / "studies"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--features", type=int, default=13)
    parser.add_argument("--storage", default=f"sqlite:///{STUDIES / 'compare-example.db'}")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = load_wine(return_X_y=True, as_frame=True)
    runs, references = compare(
        X.iloc[:, : args.features],
        y,
        KNeighborsClassifier(),
        dataset="wine",
        classifier="knn",
        samplers=["coordinate", "tpe", "nelder-mead"],
        seeds=args.seeds,
        storage=args.storage,
        test_size=0.3,
    )
    print(format_table(runs, references))


if __name__ == "__main__":
    main()
