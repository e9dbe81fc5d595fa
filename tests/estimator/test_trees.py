"""Tree models are invariant to monotone per-feature transforms: the default fit does not search."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.ensemble import AdaBoostClassifier
from sklearn.ensemble import BaggingClassifier
from sklearn.ensemble import ExtraTreesClassifier
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.ensemble import RandomForestClassifier
from sklearn.ensemble import StackingClassifier
from sklearn.ensemble import VotingClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.preprocessing import StandardScaler
from sklearn.preprocessing import minmax_scale
from sklearn.tree import DecisionTreeClassifier
from sklearn.tree import ExtraTreeClassifier

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox import MonotoneInvariantWarning
from optuna_boxcox._objective._evaluators import monotone_invariant

TREES = [
    DecisionTreeClassifier(random_state=0),
    RandomForestClassifier(n_estimators=20, random_state=0),
    GradientBoostingClassifier(n_estimators=20, random_state=0),
    HistGradientBoostingClassifier(max_iter=20, random_state=0),
    make_pipeline(MinMaxScaler(), DecisionTreeClassifier(random_state=0)),
    AdaBoostClassifier(n_estimators=10, random_state=0),  # its default member is a stump
    BaggingClassifier(n_estimators=5, max_features=0.5, random_state=0),
    BaggingClassifier(make_pipeline(StandardScaler(), DecisionTreeClassifier()), random_state=0),
    VotingClassifier(
        [("tree", DecisionTreeClassifier(random_state=0)), ("skip", "drop")], voting="soft"
    ),
]

#: The same kinds kept from memorising their training rows (a fully grown tree predicts every
#: training row's own label whatever its splits), so that a moved split shows in the oracle below.
#: Members train on every row: a row a member did not see can fall either side of a threshold
#: placed midway between two values, for any tree.
SHALLOW = [
    DecisionTreeClassifier(max_depth=3, random_state=0),
    RandomForestClassifier(n_estimators=20, max_depth=3, bootstrap=False, random_state=0),
    GradientBoostingClassifier(n_estimators=20, max_depth=2, random_state=0),
    HistGradientBoostingClassifier(max_iter=20, max_depth=3, random_state=0),
    make_pipeline(MinMaxScaler(), DecisionTreeClassifier(max_depth=3, random_state=0)),
    AdaBoostClassifier(n_estimators=10, random_state=0),
    BaggingClassifier(
        DecisionTreeClassifier(max_depth=3),
        n_estimators=5,
        max_features=0.5,
        bootstrap=False,
        random_state=0,
    ),
    VotingClassifier(
        [("tree", DecisionTreeClassifier(max_depth=3, random_state=0)), ("skip", "drop")],
        voting="soft",
    ),
]
#: Thresholds drawn uniformly between a node's smallest and largest value: Λ moves them.
EXTRA_TREES = [
    ExtraTreeClassifier(max_depth=3, random_state=0),
    ExtraTreesClassifier(n_estimators=20, max_depth=3, random_state=0),
]


def _box_cox_fits(breast_cancer, model):
    """Training-row predictions of ``model`` fitted on standard-scaled columns, then on the same
    columns through the paper's [1, 2] scaling and Box-Cox at three λ (a plain loop)."""
    X, y = breast_cancer.data.iloc[:, :6].to_numpy(), breast_cancer.target.to_numpy()
    scaled = StandardScaler().fit_transform(X)
    plain = clone(model).fit(scaled, y).predict(scaled)
    moved = []
    for lam in (-3.0, 0.0, 2.5):
        Z = np.column_stack([stats.boxcox(minmax_scale(c, (1, 2)), lam) for c in X.T])
        Z = StandardScaler().fit_transform(Z)
        moved.append(clone(model).fit(Z, y).predict(Z))
    return plain, moved


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


@pytest.mark.parametrize("model", SHALLOW, ids=lambda e: type(e).__name__)
def test_no_box_cox_changes_what_an_invariant_model_predicts(breast_cancer, model):
    assert monotone_invariant(model)
    plain, moved = _box_cox_fits(breast_cancer, model)
    assert 0 < plain.sum() < len(plain) and not np.array_equal(plain, breast_cancer.target)
    for predicted in moved:
        np.testing.assert_array_equal(predicted, plain)


@pytest.mark.parametrize("model", EXTRA_TREES, ids=lambda e: type(e).__name__)
def test_extra_trees_are_searched_because_box_cox_moves_their_splits(breast_cancer, model):
    assert not monotone_invariant(model)
    plain, moved = _box_cox_fits(breast_cancer, model)
    assert any(not np.array_equal(predicted, plain) for predicted in moved)


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
        AdaBoostClassifier(GaussianNB()),  # an ensemble is invariant only if its members are
        BaggingClassifier(KNeighborsClassifier()),
        VotingClassifier([("tree", DecisionTreeClassifier()), ("nb", GaussianNB())]),
        # learns from out-of-fold predictions, which move with a threshold's place
        StackingClassifier([("tree", DecisionTreeClassifier())]),
        VotingClassifier([("skip", "drop")]),
        VotingClassifier(None),  # scikit-learn's fit says what is wrong with it
        make_pipeline(PCA(), DecisionTreeClassifier()),  # PCA mixes the features
    ],
    ids=lambda e: type(e).__name__,
)
def test_other_classifiers_are_not_monotone_invariant(estimator):
    assert not monotone_invariant(estimator)
