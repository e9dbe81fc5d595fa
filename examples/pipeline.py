"""BoxCoxClassifier inside a scikit-learn Pipeline, cross-validated like any estimator.

python examples/pipeline.py [--sampler spherical]
"""

from __future__ import annotations

import argparse

from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import StratifiedKFold
from sklearn.model_selection import cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from optuna_boxcox import BoxCoxClassifier


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sampler", default="coordinate")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    folds = StratifiedKFold(args.folds, shuffle=True, random_state=0)
    base = cross_val_score(
        Pipeline([("scale", StandardScaler()), ("nb", GaussianNB())]), X, y, cv=folds
    )
    boxcox = cross_val_score(
        Pipeline([("nb", BoxCoxClassifier(GaussianNB(), sampler=args.sampler))]), X, y, cv=folds
    )
    print(
        f"{args.folds}-fold accuracy: StandardScaler + GaussianNB {base.mean():.4f}, "
        f"Box-Cox ({args.sampler}) + GaussianNB {boxcox.mean():.4f}"
    )


if __name__ == "__main__":
    main()
