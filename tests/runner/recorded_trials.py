"""Trials of the paper's presets: the record, and the plain loop that is their oracle anywhere.

``python tests/runner/recorded_trials.py`` (re)records ``tests/runner/data/recorded_trials.json``; the test in
``tests/runner/test_recorded_trials.py`` runs the same searches and compares them with the record
and with :func:`plain_loop` run on the same machine. Only record again on purpose: a change to
what the presets write is a change to the paper's method.

The per-feature MLE start point differs in its last bits from one CPU to another (NumPy's
vectorised ``log`` differs with AVX-512; 1e-8 to 6e-7 on breast cancer), and every trial holding
an MLE λ differs with it. So the record keeps, beside each digest, a hash of the start point it was
recorded from: the digest is compared only where this machine computes the same start point,
while the plain loop is compared point for point on every machine. ``"start": null`` marks the
sonar cases outside the quick set, recorded on a machine whose start point was not kept: their
end is compared up to the MLE's last bits.
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


def start_hash(X) -> str:
    """The hash of the MLE start point's bits on this machine (the only CPU-dependent input)."""
    from optuna_boxcox._math._numerics import fit_range
    from optuna_boxcox._math._numerics import mle_lambdas
    from optuna_boxcox._math._numerics import range_standardise

    values = X.to_numpy(dtype="float64")
    low, span = fit_range(values)
    return hashlib.sha256(
        mle_lambdas(range_standardise(values, low, span), "box-cox").tobytes()
    ).hexdigest()


def search(dataset: str, classifier: str, sampler: str, storage: str):
    """The preset's whole search through the plugin's runner: (study, result)."""
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
    return study, optuna_boxcox.optimize(study, objective)


def summary(study: optuna.Study, result, dataset: str) -> dict:
    """What the record keeps of a search: its digest, end, and the start point it ran from."""
    out = digest(study)
    out["best_value"] = result.best_value
    out["best_params"] = {k: float(v) for k, v in result.params.items()}
    out["start"] = start_hash(load(dataset)[0])
    return out


def run(dataset: str, classifier: str, sampler: str, storage: str) -> dict:
    return summary(*search(dataset, classifier, sampler, storage), dataset)


def plain_loop(dataset: str, classifier: str, sampler: str) -> tuple[list[str], list, dict]:
    """The sampler's plan driven by a plain loop, as the paper's script would: every candidate in
    order, each scored by a fresh objective's ``evaluate`` (a point seen before looked up).
    Returns (parameter names, candidates in order, score by the candidate's bytes)."""
    import numpy as np

    import optuna_boxcox
    from optuna_boxcox.classifiers import make_classifier
    from optuna_boxcox.samplers import make_sampler

    X, y = load(dataset)
    objective = optuna_boxcox.BoxCoxObjective(X, y, make_classifier(classifier))
    names = list(objective.param_names)
    candidates: list = []
    seen: dict[bytes, float] = {}

    def score(points):
        scores = []
        for x in points:
            x = np.asarray(x, dtype=np.float64)
            if x.tobytes() not in seen:
                seen[x.tobytes()] = objective.evaluate(dict(zip(names, x)))
            candidates.append(x)
            scores.append(seen[x.tobytes()])
        return scores

    make_sampler(sampler, seed=0).plan(objective.space).run(score)
    return names, candidates, seen


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
