"""``python -m optuna_boxcox.cli``: the same as the ``optuna-boxcox`` command."""

import sys

from optuna_boxcox.cli import main

sys.exit(main())
