"""Default places, importable without any dependency (the command line's ``--help`` reads them)."""

#: Where studies go unless told otherwise (relative to the working directory).
DEFAULT_STORAGE = "sqlite:///studies/optuna-boxcox.db"
#: Reproductions of the paper's tables get a storage of their own: their hundreds of studies would
#: bury the user's own in the dashboard's list.
REPRODUCE_STORAGE = "sqlite:///studies/reproduce.db"
#: Trials for samplers without a plan of their own (TPE, random, …) when no trial budget is given.
DEFAULT_OPEN_ENDED_TRIALS = 100
#: ``--fidelity`` when not given: a new study's is ``auto`` (exact without timing anything where
#: the data are obviously small for the classifier: the paper's searches), a resumed study keeps
#: its own.
DEFAULT_FIDELITY = "auto"
#: ``--pruner`` when not given, for a search with a fidelity through study.optimize.
DEFAULT_PRUNER = "successive-halving"
