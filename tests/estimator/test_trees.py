"""Tree models are invariant to monotone per-feature transforms: the default fit does not search."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.ensemble import AdaBoostClassifier
from sklearn.ensemble import ExtraTreesClassifier
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from sklearn.tree import ExtraTreeClassifier

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox import MonotoneInvariantWarning
from optuna_boxcox._lifecycle._guard import monotone_invariant

TREES = [
    DecisionTreeClassifier(random_state=0),
    ExtraTreeClassifier(random_state=0),
    RandomForestClassifier(n_estimators=20, random_state=0),
    ExtraTreesClassifier(n_estimators=20, random_state=0),
    GradientBoostingClassifier(n_estimators=20, random_state=0),
    HistGradientBoostingClassifier(max_iter=20, random_state=0),
    make_pipeline(MinMaxScaler(), DecisionTreeClassifier(random_state=0)),
]


class _Counted(DecisionTreeClassifier):
    """Counts its fits, so a test can tell that no search scored anything."""

    fits = 0

    def fit(self, X, y, sample_weight=None, check_input=True):
        type(self).fits += 1
        return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)


@pytest.mark.parametrize("tree", TREES, ids=lambda e: type(e).__name__)
def test_a_tree_is_fitted_on_standard_scaled_data_without_a_search(breast_cancer, tree):
    X, y = breast_cancer.data.iloc[:, :6], breast_cancer.target
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = BoxCoxClassifier(tree).fit(X, y)
    said = [w for w in caught if issubclass(w.category, MonotoneInvariantWarning)]
    assert len(said) == 1
    assert "\n" not in str(said[0].message)
    assert said[0].filename == __file__
    assert np.array_equal(fitted.lambdas_, np.ones(6))
    assert fitted.decision_["chosen"] == "ones"
    assert fitted.study_ is None
    plain = clone(tree).fit(StandardScaler().fit_transform(X), y)
    scaled = StandardScaler().fit(X).transform(X)
    np.testing.assert_array_equal(fitted.predict(X), plain.predict(scaled))


def test_no_trial_is_scored_for_a_tree(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :4], breast_cancer.target
    _Counted.fits = 0
    with pytest.warns(MonotoneInvariantWarning):
        BoxCoxClassifier(_Counted(random_state=0)).fit(X, y)
    assert _Counted.fits == 1  # the final model, nothing scored before it


def test_a_named_sampler_still_searches_for_a_tree(breast_cancer):
    X, y = breast_cancer.data.iloc[:100, :2], breast_cancer.target.iloc[:100]
    with warnings.catch_warnings():
        warnings.simplefilter("error", MonotoneInvariantWarning)
        fitted = BoxCoxClassifier(DecisionTreeClassifier(random_state=0), sampler="mle").fit(X, y)
    assert fitted.study_ is not None


@pytest.mark.parametrize(
    "estimator",
    [
        GaussianNB(),
        AdaBoostClassifier(),  # its base estimator may be anything
        make_pipeline(PCA(), DecisionTreeClassifier()),  # PCA mixes the features
    ],
    ids=lambda e: type(e).__name__,
)
def test_other_classifiers_are_not_monotone_invariant(estimator):
    assert not monotone_invariant(estimator)
