"""The library's words for what a user gives it: an array's columns are named alike by the
classifier and the transformer (the classifier said ``lambda_1`` where the transformer said
``x1``), a blank study name is refused, classifier names are read in any case, and data too few
to tell Λ apart are said so."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox import BoxCoxTransformer
from optuna_boxcox.classifiers import make_classifier


def _said(fit) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("problem", ["constant", "extreme"])
def test_an_arrays_columns_are_named_alike_by_the_classifier_and_the_transformer(problem):
    rng = np.random.default_rng(0)
    X = rng.gamma(2.0, size=(40, 3)) + 0.1
    if problem == "constant":
        X[:, 1] = 3.0
    else:
        X[0, 1] = 1e300
    y = np.r_[np.zeros(20), np.ones(20)]
    classifier = _said(lambda: BoxCoxClassifier(GaussianNB(), sampler="mle").fit(X, y))
    transformer = _said(lambda: BoxCoxTransformer().fit(X))
    about = [m for m in classifier if "column" in m or "feature(s)" in m]
    assert about and all("'x1'" in m for m in about), about
    assert not [m for m in classifier if "lambda_" in m], classifier
    assert [m for m in transformer if "'x1'" in m], transformer
    # The λ parameters keep the names studies record.
    fitted = BoxCoxClassifier(GaussianNB(), sampler="mle")
    _said(lambda: fitted.fit(X, y))
    assert "lambda_1" in fitted.best_params_


def test_a_blank_study_name_is_refused_in_the_librarys_words():
    X = np.random.default_rng(1).gamma(2.0, size=(20, 2)) + 0.1
    y = np.r_[np.zeros(10), np.ones(10)]
    with pytest.raises(ValueError, match="study_name ' ' names no study"):
        BoxCoxClassifier(GaussianNB(), study_name=" ").fit(X, y)


def test_a_classifier_name_is_read_in_any_case():
    assert type(make_classifier(" KNN ")) is type(make_classifier("knn"))
    with pytest.raises(ValueError, match="unknown classifier 'KNNN'"):
        make_classifier("KNNN")


def test_data_too_few_to_tell_lambda_apart_are_said_so():
    X = np.array([[1.0, 2.0], [2.0, 3.0], [3.0, 1.0], [4.0, 5.0]])
    y = np.array([0, 1, 0, 1])
    said = _said(lambda: BoxCoxClassifier(GaussianNB()).fit(X, y))
    assert [m for m in said if "4 rows for 2 classes" in m], said
    enough = np.random.default_rng(2).gamma(2.0, size=(40, 2)) + 0.1
    labels = np.r_[np.zeros(20), np.ones(20)]
    said = _said(lambda: BoxCoxClassifier(GaussianNB(), sampler="mle").fit(enough, labels))
    assert not [m for m in said if "rows for" in m], said
