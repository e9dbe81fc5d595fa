"""Same data, same answer: a default fit is a function of the data, the classifier, the settings
and ``random_state`` alone — not of how busy the machine is (issue 43). At 5,000 rows:
``python -m optuna_boxcox.bench.same_answer NAME --rows 5000 --features 8``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from optuna_boxcox.bench.same_answer import ANSWER
from optuna_boxcox.bench.same_answer import quiet_and_busy
from optuna_boxcox.classifiers import make_classifier


@pytest.mark.parametrize(
    "name",
    ["bayes", "linear", "knn", "svc", "logistic", pytest.param("nn", marks=pytest.mark.slow)],
)
def test_a_default_fit_is_the_same_quiet_and_beside_two_busy_processes(name, tmp_path):
    X, y = make_classification(1200, 4, random_state=0)
    X = np.exp(X / 2)
    classifier = LogisticRegression() if name == "logistic" else make_classifier(name)
    quiet, loaded, _ = quiet_and_busy(classifier, X, y, str(tmp_path))
    for what, one, two in zip(ANSWER, quiet, loaded):
        assert one == two, f"{name}: {what} differs on a busy machine"
