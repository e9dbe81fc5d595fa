"""What other tabular tools put in front of a model instead of a searched Λ: the benchmark's peer
transforms.

- ``kdi``: kditransform's ``KDITransformer()`` (the kernel-density integral transform TabPFN
  offers among its feature transforms; default settings: bandwidth factor 1, output on [0, 1])
  followed by ``StandardScaler``. The library presents it as a drop-in for min-max scaling or the
  quantile transform; the standard scaling puts it on the footing of the other standardised rows
  (Box-Cox, Yeo-Johnson, skew-rule), so that what differs is the shape of the map, not the scale
  a classifier's regularisation or kernel width sees.
- ``squashing``: skrub's ``SquashingScaler()`` with its defaults (robust centring and scaling by
  the interquartile range, then a smooth clip into [-3, 3]).
- ``skew-rule``: TabPFN's rule of thumb, :class:`SkewRuleTransformer`: each feature whose
  training skewness exceeds 0.5 in absolute value gets its maximum-likelihood Box-Cox λ, every
  other λ = 1; then every feature is standard scaled.

``kdi`` and ``squashing`` need the optional extra ``peers`` (``pip install -e '.[peers]'`` in
the checkout); they are imported when the transform is built, never when this package
is imported, and asking for one that is not installed fails with :class:`MissingPeerError`.
``skew-rule`` needs nothing beyond scikit-learn and SciPy.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any
import warnings

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator
from sklearn.base import OneToOneFeatureMixin
from sklearn.base import TransformerMixin
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from optuna_boxcox._math._transform import BoxCoxTransformer

#: The peer transforms by key: what each row is called.
PEER_TRANSFORMS: dict[str, str] = {
    "kdi": "KDITransformer, then StandardScaler (kditransform)",
    "squashing": "SquashingScaler (skrub)",
    "skew-rule": "Box-Cox MLE where |skew| > 0.5, then StandardScaler (TabPFN's rule)",
}

#: The module each peer needs, by key (none for the rule built here).
PEER_MODULES: dict[str, str] = {"kdi": "kditransform", "squashing": "skrub"}

#: The optional dependency group that installs them.
PEERS_EXTRA = "peers"

#: A feature is skewed, and Box-Cox transformed by the skew rule, above this absolute skewness.
SKEW_THRESHOLD = 0.5


class MissingPeerError(ImportError):
    """A peer transform was asked for and the library it needs is not installed."""


def missing_peer(key: str) -> str | None:
    """The one-line reason the peer ``key`` cannot be built here, or None when it can (or is not a
    peer that needs a library). Looks the module up without importing it."""
    module = PEER_MODULES.get(key)
    if module is None or importlib.util.find_spec(module) is not None:
        return None
    return (
        f"transform {key!r} needs {module}, which is not installed: "
        f"pip install -e '.[{PEERS_EXTRA}]' in the optuna-boxcox checkout"
    )


def available_peers() -> list[str]:
    """The peers that can be built here, in :data:`PEER_TRANSFORMS` order."""
    return [key for key in PEER_TRANSFORMS if missing_peer(key) is None]


def require_peers(keys: Any) -> None:
    """Raise :class:`MissingPeerError` (one line) for the first key asked for that cannot be built."""
    for key in keys:
        reason = missing_peer(key)
        if reason is not None:
            raise MissingPeerError(reason)


def peer_transform(key: str) -> Any:
    """A fresh, unfitted peer transform by key (see the module's list)."""
    if key == "skew-rule":
        return SkewRuleTransformer()
    if key not in PEER_MODULES:
        raise ValueError(
            f"unknown peer transform {key!r}; choose from {', '.join(PEER_TRANSFORMS)}"
        )
    require_peers([key])
    try:
        module = importlib.import_module(PEER_MODULES[key])
    except ImportError as error:  # found but broken (a failed compiled part, say)
        raise MissingPeerError(
            f"transform {key!r}: {PEER_MODULES[key]} fails to import: {error}"
        ) from error
    if key == "kdi":
        # KDITransformer.fit centres each column in place and back again: on the caller's array
        # that rounds the data (and fails on a read-only one), so it gets a copy of its own.
        copy = FunctionTransformer(_float_copy, feature_names_out="one-to-one")
        return make_pipeline(copy, module.KDITransformer(), StandardScaler())
    return module.SquashingScaler()


def _float_copy(X: Any) -> np.ndarray:
    """A new, writable float64 array of X's values."""
    return np.array(X, dtype=np.float64)


class SkewRuleTransformer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Box-Cox only the skewed features, then standard scale them all (TabPFN's rule of thumb).

    A feature is skewed when the absolute sample skewness of its training values
    (``scipy.stats.skew``, the biased estimator) exceeds :data:`SKEW_THRESHOLD`; a constant feature
    is not. A skewed feature gets the maximum-likelihood λ of this package's
    :class:`~optuna_boxcox.BoxCoxTransformer` (``lambdas="mle"``: scaled into [1, 2] with its
    training range, then scipy's Box-Cox MLE), any other λ = 1, which after the standardisation is
    exactly :class:`~sklearn.preprocessing.StandardScaler`. The [1, 2] scaling (rather than
    scikit-learn's Box-Cox on shifted data) keeps every feature in the transform's domain, test
    values below the training minimum included, and makes this row differ from the ``box-cox`` row
    only in which features are transformed.

    Attributes
    ----------
    skewness_ : ndarray of shape (n_features,)
        The training skewness of each feature (0 for a constant one).
    skewed_ : ndarray of shape (n_features,), bool
        Which features are Box-Cox transformed.
    transformer_ : BoxCoxTransformer
        The fitted transform, with ``lambdas_`` the λ used.
    """

    def fit(self, X, y=None):
        """Find the skewed features and their λ on X."""
        del y
        with warnings.catch_warnings():
            # Only its λ are used: the fit below says what there is to say about the columns.
            warnings.simplefilter("ignore")
            mle = BoxCoxTransformer(lambdas="mle").fit(X)
        values = np.asarray(X, dtype=np.float64)
        varying = np.ptp(values, axis=0) > 0
        skewness = np.zeros(values.shape[1])
        skewness[varying] = stats.skew(values[:, varying], axis=0)
        self.skewness_ = skewness
        self.skewed_ = np.abs(skewness) > SKEW_THRESHOLD
        lambdas = np.where(self.skewed_, mle.lambdas_, 1.0)
        self.transformer_ = BoxCoxTransformer(lambdas=lambdas).fit(X)
        self.n_features_in_ = self.transformer_.n_features_in_
        if hasattr(self.transformer_, "feature_names_in_"):
            self.feature_names_in_ = self.transformer_.feature_names_in_
        return self

    def transform(self, X):
        """Transform X with the fitted λ and scaling."""
        check_is_fitted(self, "transformer_")
        return self.transformer_.transform(X)


__all__ = [
    "PEERS_EXTRA",
    "PEER_MODULES",
    "PEER_TRANSFORMS",
    "SKEW_THRESHOLD",
    "MissingPeerError",
    "SkewRuleTransformer",
    "available_peers",
    "missing_peer",
    "peer_transform",
    "require_peers",
]
