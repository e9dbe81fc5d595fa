"""Trials of the paper's presets recorded before the runner and objective were redesigned.

``python tests/runner/recorded_trials.py`` (re)records ``tests/runner/data/recorded_trials.json``; the test in
``tests/runner/test_recorded_trials.py`` runs the same searches and compares digests. Only record
again on purpose: a change to what the presets write is a change to the paper's method.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
import sys

import optuna
from optuna.trial import TrialState

HERE = Path(__file__).resolve().parent
RECORD = HERE / "data" / "recorded_trials.json"
SONAR = HERE.parents[2] / "shared" / "data" / "sonar.csv"
SAMPLERS = (
    "iterative",
    "shift",
    "shuffle",
    "finer",
    "combined1",
    "combined2",
    "spherical",
    "diagonal",
    "mle",
    "nelder-mead",
)
CLASSIFIERS = ("bayes", "knn")
DATASETS = ("breast_cancer", "sonar")


def load(dataset: str):
    import pandas as pd
    from sklearn.datasets import load_breast_cancer

    if dataset == "sonar":
        frame = pd.read_csv(SONAR)
        return frame.drop(columns="y"), frame["y"]
    return load_breast_cancer(return_X_y=True, as_frame=True)


def digest(study: optuna.Study) -> dict:
    """Every trial's number, parameters and value in order, hashed; with the count and the best."""
    trials = sorted(study.get_trials(deepcopy=False), key=lambda t: t.number)
    h = hashlib.sha256()
    for t in trials:
        h.update(repr((t.number, t.state.name, sorted(t.params.items()), t.values)).encode())
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    return {"n_trials": len(trials), "n_complete": len(complete), "sha256": h.hexdigest()}


def run(dataset: str, classifier: str, sampler: str, storage: str) -> dict:
    import optuna_boxcox
    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.samplers import make_sampler

    X, y = load(dataset)
    objective = optuna_boxcox.BoxCoxObjective(X, y, make_classifier(classifier))
    study = optuna.create_study(
        direction="maximize",
        sampler=make_sampler(sampler, seed=0),
        storage=storage,
        study_name=f"{dataset}/{classifier}/{sampler}",
    )
    result = optuna_boxcox.optimize(study, objective)
    out = digest(study)
    out["best_value"] = result.best_value
    out["best_params"] = {k: float(v) for k, v in result.params.items()}
    return out


def cases():
    for dataset in DATASETS:
        for classifier in CLASSIFIERS:
            for sampler in SAMPLERS:
                yield dataset, classifier, sampler


if __name__ == "__main__":
    import tempfile

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    recorded = {}
    with tempfile.TemporaryDirectory() as tmp:
        storage = f"sqlite:///{tmp}/record.db"
        for case in cases():
            recorded["/".join(case)] = run(*case, storage)
            print("/".join(case), recorded["/".join(case)]["n_trials"], file=sys.stderr)
    RECORD.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
