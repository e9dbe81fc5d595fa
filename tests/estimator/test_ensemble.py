"""Ensembles: ``BoxCoxClassifier(ensemble=ℓ)`` votes with the ℓ best distinct
configurations of its study (the kernel model selection ensembles of seed 004).

The chosen configuration comes first, then the study's trials by decreasing score; ties in the vote
go to the members' mean probability (else decision value, else the best-ranked member), and
predict_proba and decision_function always agree with the vote.
"""

from __future__ import annotations

import numpy as np
from optuna.distributions import IntDistribution
import pytest
from sklearn.datasets import load_wine
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox._ensemble import Member
from optuna_boxcox._ensemble import _tie_breaker


@pytest.fixture(scope="module")
def wine():
    return load_wine(return_X_y=True, as_frame=True)


@pytest.fixture(scope="module")
def voting(wine):
    X, y = wine
    return BoxCoxClassifier(KNeighborsClassifier(), sampler="spherical", ensemble=5).fit(X, y)


def test_without_ensemble_the_single_best_predicts_as_before(wine):
    X, y = wine
    clf = BoxCoxClassifier(KNeighborsClassifier(), sampler="spherical").fit(X, y)
    assert not hasattr(clf, "ensemble_")
    np.testing.assert_array_equal(
        clf.predict(X), clf.estimator_.predict(clf.transformer_.transform(X))
    )


def test_an_ensemble_of_one_is_the_single_best(wine):
    X, y = wine
    single = BoxCoxClassifier(KNeighborsClassifier(), sampler="spherical").fit(X, y)
    one = BoxCoxClassifier(KNeighborsClassifier(), sampler="spherical", ensemble=1).fit(X, y)
    assert len(one.ensemble_) == 1
    np.testing.assert_array_equal(one.predict(X), single.predict(X))


def test_members_are_the_best_distinct_configurations_chosen_first(voting):
    members = voting.ensemble_
    assert len(members) == 5
    assert members[0].params == voting.best_params_
    assert members[0].score == voting.best_score_
    scores = [m.score for m in members[1:]]
    assert scores == sorted(scores, reverse=True)
    keys = [tuple(sorted(m.params.items())) for m in members]
    assert len(set(keys)) == len(keys), "a configuration votes once"
    trials = voting.study_.get_trials()
    best_others = sorted(
        (t for t in trials if t.params != voting.best_params_), key=lambda t: (-t.value, t.number)
    )
    assert [m.params for m in members[1:]] == [t.params for t in best_others[:4]]


def test_predict_proba_and_decision_function_agree_with_the_vote(voting, wine):
    X, _ = wine
    predicted = voting.predict(X)
    proba = voting.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(voting.classes_[np.argmax(proba, axis=1)], predicted)
    votes = np.zeros_like(proba)
    for member in voting.ensemble_:
        codes = member.estimator.predict(member.transformer.transform(X))
        votes[np.arange(len(X)), np.searchsorted(voting.classes_, codes)] += 1
    majority = votes.max(axis=1)
    chosen = votes[np.arange(len(X)), np.searchsorted(voting.classes_, predicted)]
    np.testing.assert_array_equal(chosen, majority)


def test_decision_function_of_a_binary_ensemble_is_signed_by_the_vote(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :5], breast_cancer.target
    clf = BoxCoxClassifier(SVC(), sampler="spherical", ensemble=4).fit(X, y)
    decision = clf.decision_function(X)
    assert decision.shape == (len(X),)
    np.testing.assert_array_equal(clf.classes_[(decision > 0).astype(int)], clf.predict(X))
    assert not hasattr(clf, "predict_proba"), "SVC without probability has no probabilities"


class _Fixed:
    """A fitted stand-in member: fixed predictions and, optionally, probabilities."""

    def __init__(self, codes, proba=None):
        self.codes = np.asarray(codes)
        if proba is not None:
            self.predict_proba = lambda X: np.asarray(proba, dtype=float)

    def predict(self, X):
        return self.codes


def _members(*estimators):
    return [Member({}, 0.0, None, e) for e in estimators]


def test_a_tied_vote_goes_to_the_higher_mean_probability():
    members = _members(
        _Fixed([0], [[0.6, 0.4]]),
        _Fixed([1], [[0.1, 0.9]]),
        _Fixed([0], [[0.5, 0.5]]),
        _Fixed([1], [[0.45, 0.55]]),
    )
    breaker = _tie_breaker(members, [None] * 4, [m.estimator.codes for m in members], 2)
    assert np.argmax(np.array([[2.0, 2.0]]) + breaker) == 1


def test_without_scores_a_tied_vote_goes_to_the_best_ranked_member():
    members = _members(_Fixed([2]), _Fixed([0]), _Fixed([0]), _Fixed([2]))
    breaker = _tie_breaker(members, [None] * 4, [m.estimator.codes for m in members], 3)
    assert np.all(breaker < 1.0)
    assert np.argmax(np.array([[2.0, 0.0, 2.0]]) + breaker) == 2


def test_a_small_study_makes_a_smaller_ensemble(wine):
    X, y = wine
    clf = BoxCoxClassifier(KNeighborsClassifier(), sampler="mle", ensemble=5).fit(X, y)
    assert len(clf.ensemble_) == 1, "the MLE search has one trial"


def test_refitting_without_an_ensemble_forgets_the_old_one(wine):
    X, y = wine
    clf = BoxCoxClassifier(KNeighborsClassifier(), sampler="spherical", ensemble=3).fit(X, y)
    clf.set_params(ensemble=None).fit(X, y)
    assert not hasattr(clf, "ensemble_")


def test_members_carry_their_own_transforms_and_settings(wine):
    X, y = wine
    clf = BoxCoxClassifier(
        KNeighborsClassifier(),
        transforms=("box-cox", "identity", "drop"),
        estimator_params={"n_neighbors": IntDistribution(1, 15)},
        cv=3,
        n_trials=120,
        ensemble=3,
    ).fit(X, y)
    for member in clf.ensemble_:
        kept = [n for n in X.columns if member.params[f"{n}:transform"] != "drop"]
        assert member.transformer.transform(X.to_numpy()).shape == (len(X), len(kept))
        assert member.estimator.n_neighbors == member.params["estimator:n_neighbors"]
    assert clf.estimator_.n_neighbors == clf.best_params_["estimator:n_neighbors"]
