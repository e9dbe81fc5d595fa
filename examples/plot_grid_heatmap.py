"""
The score over a grid of two λ
==============================

With two features the whole λ plane can be scored: the paper's full grid search (Algorithm 5)
evaluates its L × L points. :func:`optuna_boxcox.figures.grid_heatmap` draws the score at every
point of the paper's grid (``linspace(-5, 5, 11)`` for each λ) and marks where the spherical
search (Algorithm 7, one λ for every feature), the diagonal search (Algorithm 8, each λ alone)
and the coordinate search (Algorithm 6) ended, as in the paper's Figure 2.
"""

import optuna
from sklearn.datasets import load_breast_cancer
from sklearn.naive_bayes import GaussianNB

import optuna_boxcox
from optuna_boxcox import figures

optuna.logging.set_verbosity(optuna.logging.WARNING)

X, y = load_breast_cancer(return_X_y=True, as_frame=True)
X = X[["mean texture", "worst concave points"]]
objective = optuna_boxcox.BoxCoxObjective(X, y, GaussianNB())

studies, found = {}, {}
for name, sampler in {
    "full grid": optuna_boxcox.FullGridSampler(),
    "spherical": optuna_boxcox.SphericalSampler(),
    "diagonal": optuna_boxcox.DiagonalSampler(),
    "coordinate": optuna_boxcox.CoordinateGridSampler.from_preset("iterative", seed=0),
}.items():
    study = studies[name] = optuna.create_study(direction="maximize", sampler=sampler)  # in memory
    result = optuna_boxcox.optimize(study, objective)
    found[name] = result.params
    print(f"{name:11} {len(study.trials):4} trials, accuracy {result.best_value:.4f}")

# %%
# The heatmap
# -----------
#
# Brighter is better. The grid scores come from the same objective (its cache answers the points
# the searches already scored); the small white points are those the coordinate search
# evaluated.

figure = figures.grid_heatmap(objective, study=studies["coordinate"], markers=found)
figure.show()
