"""Tree models' trait: no Box-Cox Λ changes their fit, so the default searches none.

A tree splits each feature between sorted values (or quantile bins): a monotone per-feature map
changes none of its partitions, and Box-Cox of the [1, 2]-scaled column is monotone.
"""

from __future__ import annotations

from typing import Any

from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MaxAbsScaler
from sklearn.preprocessing import MinMaxScaler
from sklearn.preprocessing import RobustScaler
from sklearn.preprocessing import StandardScaler


class MonotoneInvariantWarning(UserWarning):
    """The classifier is a tree model or an ensemble of them: no Box-Cox λ changes its fit, so none
    is searched."""


#: Classifiers whose fit sees each feature only through the order of its values (splits between
#: sorted values, quantile bins): a monotone per-feature map changes none of their partitions, and
#: Box-Cox of the [1, 2]-scaled column is monotone, so no Λ can beat Λ = 1. Not extra trees: they
#: draw each threshold uniformly between a node's smallest and largest value, so Λ moves their
#: splits.
#: By class name within scikit-learn's tree and ensemble modules (any subclass counts), so that
#: checking does not import those modules.
MONOTONE_INVARIANT = frozenset(
    {
        "DecisionTreeClassifier",
        "RandomForestClassifier",
        "GradientBoostingClassifier",
        "HistGradientBoostingClassifier",
    }
)
#: Steps before a pipeline's classifier that map each feature by an increasing affine function.
_MONOTONE_STEPS = (StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler)


#: Ensembles that combine their members' predictions and sample rows or features by position only:
#: invariant when every member is. AdaBoost's and bagging's default member (None) is a tree.
#: (Not stacking: its final estimator learns from the members' out-of-fold predictions, which
#: depend on where a threshold sits between two training values.)
_COMBINING = frozenset({"AdaBoostClassifier", "BaggingClassifier"})
#: A subclass of DecisionTreeClassifier that draws each threshold uniformly between a node's
#: smallest and largest value.
_RANDOM_THRESHOLDS = frozenset({"ExtraTreeClassifier"})


def monotone_invariant(estimator: Any) -> bool:
    """Whether ``estimator``'s predictions are the same for every monotone per-feature transform of
    its input: a tree model, alone or last in a pipeline of per-feature scalers, or an AdaBoost,
    bagging or voting ensemble of such models."""
    if isinstance(estimator, Pipeline):
        *first, (_, estimator) = estimator.steps
        steps_monotone = all(
            step is None or step == "passthrough" or isinstance(step, _MONOTONE_STEPS)
            for _, step in first
        )
        if not steps_monotone:
            return False
    if _named(estimator, _RANDOM_THRESHOLDS):
        return False
    if _named(estimator, MONOTONE_INVARIANT):
        return True
    if _named(estimator, _COMBINING):
        member = estimator.get_params(deep=False).get("estimator")
        return member is None or monotone_invariant(member)
    if _named(estimator, frozenset({"VotingClassifier"})):
        named = estimator.get_params(deep=False).get("estimators") or ()
        members = [m for _, m in named if m != "drop"]
        return bool(members) and all(monotone_invariant(m) for m in members)
    return False


def _named(estimator: Any, names: frozenset[str]) -> bool:
    """``estimator`` is (a subclass of) one of scikit-learn's tree or ensemble classes ``names``;
    by name, so that checking does not import those modules."""
    return any(
        kind.__module__.startswith(("sklearn.tree.", "sklearn.ensemble."))
        and kind.__name__ in names
        for kind in type(estimator).__mro__
    )
