"""Quickstart: one Box-Cox λ per feature of breast cancer for an SVC, recorded in SQLite.

    python examples/quickstart.py    # from any folder: the study goes to ./quickstart.db

The tutorial (docs/tutorial.md, "Keeping the study") shows this script as it is. Running it again
resumes the same study, and finds the search finished. Open the study with
``optuna-boxcox dashboard quickstart.db``.
"""

import optuna
from sklearn.datasets import load_breast_cancer
from sklearn.svm import SVC

import optuna_boxcox

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
objective = optuna_boxcox.BoxCoxObjective(X, y, SVC())  # one λ parameter per column of X
sampler = optuna_boxcox.CoordinateGridSampler.from_preset("iterative", seed=0)
study = optuna.create_study(
    direction="maximize",
    sampler=sampler,
    storage="sqlite:///quickstart.db",  # a file in the folder you run it from
    study_name="bc-svc",
    load_if_exists=True,
)
result = optuna_boxcox.optimize(study, objective)  # 4 · 30 · 11 trials in ~10 s, then it stops
print(result.params, result.best_value)  # Λopt by feature, its score
