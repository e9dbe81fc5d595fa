"""A user's study script, with ``optuna_boxcox.optimize`` or with plain ``study.optimize``.

    python -m optuna_boxcox.bench.study_script --storage sqlite:///s.db --runner plugin
    python -m optuna_boxcox.bench.study_script --storage sqlite:///s.db --runner optuna \\
        --n-trials 200

examples/quickstart.py (the tutorial's study script) with naive Bayes in place of its SVC (breast cancer, the iterative
coordinate search): the same objective, sampler and SQLite storage either way; only the call that
runs the study differs.
Prints one JSON line: trials written and the seconds the call took (start-up excluded).
"""

from __future__ import annotations

import argparse
import json
import time


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--storage", required=True)
    parser.add_argument("--study-name", default="script")
    parser.add_argument("--runner", choices=("plugin", "optuna"), default="plugin")
    parser.add_argument("--n-trials", type=int, default=None)
    args = parser.parse_args(argv)

    import optuna
    from sklearn.datasets import load_breast_cancer
    from sklearn.naive_bayes import GaussianNB

    import optuna_boxcox

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    objective = optuna_boxcox.BoxCoxObjective(X, y, GaussianNB())
    study = optuna.create_study(
        storage=args.storage,  # a URL, as examples/quickstart.py passes it: Optuna's RDBStorage
        study_name=args.study_name,
        direction="maximize",
        sampler=optuna_boxcox.CoordinateGridSampler.from_preset("iterative"),
        load_if_exists=True,
    )
    started = time.perf_counter()
    if args.runner == "plugin":
        optuna_boxcox.optimize(study, objective, n_trials=args.n_trials)
    else:
        study.optimize(objective, n_trials=args.n_trials)
    seconds = time.perf_counter() - started
    print(json.dumps({"trials": len(study.get_trials(deepcopy=False)), "seconds": seconds}))


if __name__ == "__main__":
    main()
