"""
A coordinate search and its figures
===================================

The paper's iterative coordinate-wise grid search (Algorithm 6, the ``iterative`` preset of
Table 4) chooses one Box-Cox λ per feature of the wine data for a k-nearest-neighbours
classifier. The study lives in memory; :func:`optuna_boxcox.figures.search_figures` draws the
figures that ``optuna-boxcox search`` attaches to a study for optuna-dashboard.
"""

import optuna
from sklearn.datasets import load_wine
from sklearn.neighbors import KNeighborsClassifier

import optuna_boxcox
from optuna_boxcox import figures

optuna.logging.set_verbosity(optuna.logging.WARNING)

X, y = load_wine(return_X_y=True, as_frame=True)
X = X.iloc[:, :6]  # six of the 13 features keep the search to a few seconds
objective = optuna_boxcox.BoxCoxObjective(X, y, KNeighborsClassifier())
sampler = optuna_boxcox.CoordinateGridSampler.from_preset("iterative", seed=0)
study = optuna.create_study(direction="maximize", sampler=sampler)  # in memory
result = optuna_boxcox.optimize(study, objective)  # E · p · L = 4 · 6 · 11 trials
print(f"{len(study.trials)} trials, best resubstitution accuracy {result.best_value:.4f}")
for feature, lam in result.params.items():
    print(f"  {feature:20} λ = {lam:6.3f}")

# %%
# Each feature's λ after every sweep
# ----------------------------------
#
# A sweep tries the grid's 11 values for one feature, the others held at the best Λ so far
# (Λopt). Sweep 0 is the start: every feature's maximum-likelihood λ. The features whose λ
# moved have colours of their own.

drawn, note = figures.search_figures(study, objective, sampler, result=result)
drawn["lambda-trajectory"].show()

# %%
# The best score so far
# ---------------------
#
# Resubstitution accuracy (fit and predict the training rows, the paper's score) of the best
# Λ after each finished trial.

drawn["best-so-far"].show()

# %%
# The transform at the chosen Λ
# -----------------------------
#
# Each feature is scaled into [1, 2] and Box-Cox transformed with its λ; drawn min-max scaled,
# the curves show how strongly each λ bends its feature (λ = 1 is a straight line).

drawn["transform"].show()

# %%
# The note
# --------
#
# The Markdown note the study gets beside its figures (optuna-dashboard shows it on the
# study's page): the Λ used, the scores at λ = 1 and at the maximum-likelihood λ.

print(note)
