"""Same data, same answer: a default fit is a function of the data, the classifier, the settings
and ``random_state`` alone — not of how busy the machine is (issue 43)."""

from __future__ import annotations

import hashlib
import multiprocessing
import os

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox.classifiers import make_classifier


def _busy(seconds: float) -> None:
    end = os.times().elapsed + seconds
    while os.times().elapsed < end:
        pass


def _fit(classifier, X, y, storage):
    fitted = BoxCoxClassifier(classifier, storage=storage, study_name="s").fit(X, y)
    digest = hashlib.sha256()
    for t in sorted(fitted.study_.get_trials(deepcopy=False), key=lambda t: t.number):
        digest.update(repr((t.number, t.state.name, sorted(t.params.items()), t.values)).encode())
    return (
        np.asarray(fitted.search_lambdas_).tobytes(),
        np.asarray(fitted.lambdas_).tobytes(),
        repr(fitted.decision_),
        repr(fitted.fidelity_),
        digest.hexdigest(),
    )


@pytest.mark.parametrize(
    "name",
    ["bayes", "linear", "knn", "svc", "logistic", pytest.param("nn", marks=pytest.mark.slow)],
)
def test_a_default_fit_is_the_same_quiet_and_beside_two_busy_processes(name, tmp_path):
    X, y = make_classification(1200, 4, random_state=0)
    X = np.exp(X / 2)
    classifier = LogisticRegression() if name == "logistic" else make_classifier(name)
    quiet = _fit(classifier, X, y, f"sqlite:///{tmp_path}/quiet.db")
    context = multiprocessing.get_context("spawn")
    busy = [context.Process(target=_busy, args=(600.0,), daemon=True) for _ in range(2)]
    for process in busy:
        process.start()
    try:
        loaded = _fit(classifier, X, y, f"sqlite:///{tmp_path}/busy.db")
    finally:
        for process in busy:
            process.terminate()
            process.join()
    names = ("search_lambdas_", "lambdas_", "decision_", "fidelity_", "trials")
    for what, one, two in zip(names, quiet, loaded):
        assert one == two, f"{name}: {what} differs on a busy machine"
