"""A fitted BoxCoxClassifier as a user keeps it: pickled without its in-memory study, and its
transformer knowing the DataFrame's column names it was fitted on."""

import pickle
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.naive_bayes import GaussianNB

from optuna_boxcox import BoxCoxClassifier


def _frame():
    return load_breast_cancer(return_X_y=True, as_frame=True)


def test_a_pickled_classifier_leaves_its_in_memory_study_out():
    X, y = _frame()
    clf = BoxCoxClassifier(GaussianNB(), sampler="spherical").fit(X, y)
    assert len(clf.study_.trials) > 10
    dumped = pickle.dumps(clf)
    assert len(dumped) < 50_000  # the study's trials would be most of it
    again = pickle.loads(dumped)
    assert again.study_ is None and len(clf.study_.trials) > 10  # the fitted one keeps it
    np.testing.assert_array_equal(again.predict(X), clf.predict(X))
    np.testing.assert_array_equal(again.lambdas_, clf.lambdas_)


def test_a_study_in_a_database_is_pickled_as_its_address(tmp_path):
    X, y = _frame()
    storage = f"sqlite:///{tmp_path / 's.db'}"
    clf = BoxCoxClassifier(GaussianNB(), sampler="spherical", storage=storage, study_name="s")
    clf.fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    assert again.study_ is not None and len(again.study_.trials) == len(clf.study_.trials)


def test_the_transformer_knows_the_frames_names():
    X, y = _frame()
    clf = BoxCoxClassifier(GaussianNB(), sampler="spherical").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Z = clf.transformer_.transform(X)  # no "fitted without feature names"
        clf.predict(X)
    assert list(clf.transformer_.get_feature_names_out()) == list(X.columns)
    np.testing.assert_array_equal(clf.estimator_.predict(Z), clf.predict(X))
