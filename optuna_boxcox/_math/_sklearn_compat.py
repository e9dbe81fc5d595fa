"""Every use of scikit-learn's private API, in one module, checked against the installed version.

The estimators follow scikit-learn's own conventions for parameter checking (``_parameter_constraints``
with ``Interval``, ``StrOptions`` and ``HasMethods``, enforced by ``_fit_context``), and
:mod:`optuna_boxcox._math._sgd` mirrors scikit-learn's private Cython loop ``_plain_sgd`` bit for bit.
None of that is public API, so it can change in any scikit-learn release. Importing it only here
means one file to read when a new scikit-learn breaks something, and one place that says which
versions were verified.

- Parameter validation (``sklearn.utils._param_validation``, ``sklearn.base._fit_context``) has no
  public equivalent; without it the package cannot work, so a scikit-learn that lacks it is refused
  at import with the supported range.
- The SGD port has a public fallback, scikit-learn's own ``SGDClassifier.fit``: outside the versions
  it was verified against (:data:`PLAIN_SGD_VERIFIED`), :data:`PLAIN_SGD_PORT_MATCHES` is False and
  the fast path steps aside.

Supported scikit-learn: 1.6 (the first with the public ``sklearn.utils.validation.validate_data``
and ``__sklearn_tags__``) up to 1.9.
"""

from __future__ import annotations

from typing import Any

from packaging.version import Version
import sklearn

#: The scikit-learn releases this package was tested with, as pinned in pyproject.toml.
SUPPORTED = ">=1.6,<1.10"

SKLEARN_VERSION = Version(sklearn.__version__)

try:
    from sklearn.base import _fit_context as fit_context
    from sklearn.utils._param_validation import HasMethods
    from sklearn.utils._param_validation import Interval
    from sklearn.utils._param_validation import StrOptions
    from sklearn.utils._param_validation import validate_params
except ImportError as exc:  # pragma: no cover - only on an unsupported scikit-learn
    raise ImportError(
        f"optuna-boxcox needs scikit-learn{SUPPORTED} (its parameter validation API); "
        f"scikit-learn {sklearn.__version__} is installed: {exc}"
    ) from exc

#: Minor releases whose ``sklearn.linear_model._sgd_fast._plain_sgd`` the port in
#: :mod:`optuna_boxcox._math._sgd` returns bit for bit (tests/numerics/test_sgd.py, run against each of them).
PLAIN_SGD_VERIFIED = ((1, 6), (1, 7), (1, 8), (1, 9))
PLAIN_SGD_PORT_MATCHES = SKLEARN_VERSION.release[:2] in PLAIN_SGD_VERIFIED
#: scikit-learn 1.8 changed ``_plain_sgd``'s stopping rule from the summed loss of an epoch to its
#: mean objective (loss plus penalty); the port follows the installed release.
PLAIN_SGD_STOPS_ON_OBJECTIVE = SKLEARN_VERSION.release[:2] >= (1, 8)


def validate_estimator_params(estimator: Any) -> None:
    """Check ``estimator``'s parameters against its ``_parameter_constraints`` as its ``fit``
    would, raising scikit-learn's ``InvalidParameterError`` (a ``ValueError``) if one is invalid."""
    estimator._validate_params()


def fitted_rbf_gamma(model: Any) -> float:
    """The γ a fitted RBF ``SVC`` used (``gamma="scale"`` resolved on its training data): the
    private ``_gamma`` it keeps, there since scikit-learn 0.20 and in every supported release."""
    return float(model._gamma)


__all__ = [
    "PLAIN_SGD_PORT_MATCHES",
    "PLAIN_SGD_STOPS_ON_OBJECTIVE",
    "PLAIN_SGD_VERIFIED",
    "SKLEARN_VERSION",
    "SUPPORTED",
    "HasMethods",
    "Interval",
    "StrOptions",
    "fit_context",
    "fitted_rbf_gamma",
    "validate_estimator_params",
    "validate_params",
]
