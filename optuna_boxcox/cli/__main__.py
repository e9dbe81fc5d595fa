"""``python -m optuna_boxcox.cli``: the same as the ``optuna-boxcox`` command."""

from optuna_boxcox.cli import run

run()
