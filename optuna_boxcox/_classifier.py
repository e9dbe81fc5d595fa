"""A scikit-learn classifier that chooses its Box-Cox λ with an Optuna study.

Blum, Elgendi & Menon (2022), "Impact of Box-Cox Transformation on Machine-Learning Algorithms",
Algorithms 3 (fit) and 4 (prediction), with the λ search of their Algorithms 5–8 run as an Optuna
study.
"""

from __future__ import annotations

from contextlib import contextmanager
import copy
from numbers import Integral
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.study import StudyDirection
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin
from sklearn.base import MetaEstimatorMixin
from sklearn.base import clone
from sklearn.svm import SVC
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.validation import validate_data

from optuna_boxcox._numerics import ExtremeValueWarning
from optuna_boxcox._objective import CRITERIA
from optuna_boxcox._objective import METRICS
from optuna_boxcox._objective import BoxCoxObjective
from optuna_boxcox._optimize import optimize
from optuna_boxcox._sklearn_compat import HasMethods
from optuna_boxcox._sklearn_compat import Interval
from optuna_boxcox._sklearn_compat import StrOptions
from optuna_boxcox._sklearn_compat import fit_context
from optuna_boxcox._transform import BoxCoxTransformer
from optuna_boxcox._transform import _check_features
from optuna_boxcox.samplers import PRESETS
from optuna_boxcox.samplers import SAMPLERS
from optuna_boxcox.samplers import PlanSampler
from optuna_boxcox.samplers import make_sampler
from optuna_boxcox.storage import open_storage

#: Trials for samplers without a budget of their own (TPE, random, …) when n_trials is None.
DEFAULT_OPEN_ENDED_TRIALS = 100
#: The sampler when neither ``sampler`` nor a study is given: the paper's iterative grid search.
DEFAULT_SAMPLER = "coordinate"


def _estimator_has(attr: str):
    def check(self: BoxCoxClassifier) -> bool:
        inner = self.estimator_ if hasattr(self, "estimator_") else self._inner()
        return hasattr(inner, attr)

    return check


@contextmanager
def _optuna_verbosity(verbose: int):
    previous = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.INFO if verbose else optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(previous)


class BoxCoxClassifier(MetaEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Classifier on Box-Cox transformed features whose λ are chosen by an Optuna study.

    ``fit`` follows Algorithm 3 of Blum, Elgendi & Menon (2022): scale each feature into [1, 2],
    search Λ (one λ per feature) on the training data with the chosen sampler, then fit the
    transform (Box-Cox and standard scaling) and the classifier. ``predict`` and friends follow
    their Algorithm 4: transform with the fitted parts, then predict.

    Parameters
    ----------
    estimator : classifier, default=None
        The classifier to tune the transform for. ``None`` means ``SVC(break_ties=True)``: the
        paper's RBF support vector machine, whose ``predict`` breaks one-vs-one vote ties by its
        decision values, so that it always agrees with ``decision_function`` (plain ``SVC()``
        gives a tie to the first class instead; it differs only on multi-class data).
    sampler : str, optuna.samplers.BaseSampler or None, default=None
        How Λ is searched. ``None`` means the study's own sampler when ``storage`` is a study,
        else ``"coordinate"``. A name from the registry:

        - ``"coordinate"`` (or ``"iterative"``): the paper's iterative grid search, Algorithm 6;
          its Table-4 variants ``"shift"``, ``"shuffle"``, ``"finer"`` (Algorithms 6.1–6.3),
          ``"combined1"`` and ``"combined2"``, also written ``"coordinate:<variant>"``;
        - ``"grid"`` (the full grid, Algorithm 5, for up to 10,000 grid points),
          ``"spherical"`` (Algorithm 7), ``"diagonal"`` (Algorithm 8), ``"mle"`` (per-feature
          maximum-likelihood λ, one trial);
        - ``"nelder-mead"``: Nelder and Mead's downhill simplex in the λ domain, with restarts;
        - Optuna's ``"tpe"``, ``"random"``, ``"cmaes"``, ``"qmc"`` and ``"gp"`` (needs PyTorch).

        Or a sampler instance, deep-copied at every fit. A sampler cannot be combined with a
        study given as ``storage``: that study searches with its own sampler.
    n_trials : int, default=None
        Trial budget; ``None`` lets the paper's samplers run their own budget (E·p·L for the
        coordinate search) and gives other samplers 100 trials.
    scoring : str or callable, default="accuracy"
        What the search maximises (see :class:`BoxCoxObjective`): a metric name (``"accuracy"``,
        ``"balanced_accuracy"``, ``"f1"``, ``"mcc"``), one of Bicego & Baldo's (2016)
        classifier-free criteria (``"ml"``, ``"pcml"``, ``"fisher"``, ``"1nn-mm"``) or
        ``metric(y_true, y_pred)``.
    cv : int, splitter or None, default=None
        ``None`` for the paper's resubstitution score (fit and predict the training data), else
        inner stratified folds.
    method : {"box-cox", "yeo-johnson"}, default="box-cox"
        The power transform; ``"box-cox"`` is the paper's.
    extrapolation : {"extrapolate", "clip"}, default="extrapolate"
        Treatment of test values outside the training range: ``"extrapolate"`` (the paper's
        behaviour) keeps them, raised to a small positive floor where Box-Cox is undefined;
        ``"clip"`` clamps them to the training range.
    bounds : tuple or None, default=None
        λ domain ``(low, high)`` for every feature; ``None`` for the hull of [-10, 10] and
        [G - 5, G + 5] around the maximum-likelihood λ G of each feature.
    storage : str, optuna storage, optuna.Study or None, default=None
        Where the study lives: ``None`` keeps it in memory; a storage URL (e.g.
        ``"sqlite:///studies/optuna-boxcox.db"``) or storage object records it; a study object
        (single-objective, maximising) is searched as it is, with its own sampler.
    study_name : str or None, default=None
        Name of the study in ``storage`` (resumed if it exists); ``None`` lets Optuna name it.
    n_jobs : int, default=1
        The paper's samplers: processes scoring each batch (see :func:`optuna_boxcox.optimize`);
        Optuna's samplers: threads of ``study.optimize``.
    random_state : int, RandomState instance or None, default=0
        Seed of the sampler fit creates and of the inner folds (a study's own sampler keeps its
        own seed).
    memory_limit : int, str or None, default=None
        Memory the search's objective may use (bytes, or e.g. ``"500MiB"``); ``None``: half the
        available memory, at most 2 GiB. See :class:`BoxCoxObjective`.
    subsample : int or None, default=None
        Score each Λ on this many training rows (stratified, seeded with ``random_state``) — for
        data sets far larger than the paper's; the transform and the classifier are then fitted
        on all rows.
    verbose : int, default=0
        0 silences Optuna's per-trial log lines during ``fit``.

    Attributes
    ----------
    lambdas_ : ndarray of shape (n_features,)
        The chosen λ, in feature order.
    best_score_ : float
        The search score of ``lambdas_`` on the training data.
    study_ : optuna.Study
        The study that chose them.
    transformer_ : BoxCoxTransformer
        The fitted transform.
    estimator_ : classifier
        The classifier fitted on transformed training data.
    classes_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names; they name the λ parameters.

    See Also
    --------
    BoxCoxTransformer : The transform with given or MLE λ.
    BoxCoxObjective : The objective the study optimises, for your own Optuna scripts.

    References
    ----------
    .. [1] L. Blum, M. Elgendi and C. Menon, "Impact of Box-Cox Transformation on Machine-Learning
           Algorithms", Frontiers in Artificial Intelligence 5 (2022), Algorithms 3–8.
    .. [2] M. Bicego and S. Baldo, "Properties of the Box-Cox Transformation for Pattern
           Classification", Neurocomputing (2016), doi:10.1016/j.neucom.2016.08.081.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.neighbors import KNeighborsClassifier
    >>> from optuna_boxcox import BoxCoxClassifier
    >>> X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    >>> clf = BoxCoxClassifier(KNeighborsClassifier(), sampler="spherical").fit(X, y)
    >>> clf.lambdas_.shape
    (30,)

    A study of your own is searched with its own sampler:

    >>> import optuna
    >>> study = optuna.create_study(
    ...     direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0)
    ... )
    >>> clf = BoxCoxClassifier(KNeighborsClassifier(), storage=study, n_trials=5).fit(X, y)
    >>> len(study.trials)
    5
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "sampler": [
            StrOptions(set(SAMPLERS) | {f"coordinate:{preset}" for preset in PRESETS}),
            HasMethods(["sample_independent"]),
            None,
        ],
        "n_trials": [Interval(Integral, 1, None, closed="left"), None],
        "scoring": [StrOptions(set(METRICS) | set(CRITERIA)), callable],
        "cv": ["cv_object", None],
        "method": [StrOptions({"box-cox", "yeo-johnson"})],
        "extrapolation": [StrOptions({"extrapolate", "clip"})],
        "bounds": [tuple, dict, None],
        "storage": [str, HasMethods(["create_new_study"]), optuna.Study, None],
        "study_name": [str, None],
        "n_jobs": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "memory_limit": [Interval(Integral, 1, None, closed="left"), str, None],
        "subsample": [Interval(Integral, 2, None, closed="left"), None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        estimator: Any = None,
        *,
        sampler: str | optuna.samplers.BaseSampler | None = None,
        n_trials: int | None = None,
        scoring: Any = "accuracy",
        cv: Any = None,
        method: str = "box-cox",
        extrapolation: str = "extrapolate",
        bounds: tuple[float, float] | None = None,
        storage: Any = None,
        study_name: str | None = None,
        n_jobs: int = 1,
        random_state: int | None = 0,
        memory_limit: int | str | None = None,
        subsample: int | None = None,
        verbose: int = 0,
    ) -> None:
        self.estimator = estimator
        self.sampler = sampler
        self.n_trials = n_trials
        self.scoring = scoring
        self.cv = cv
        self.method = method
        self.extrapolation = extrapolation
        self.bounds = bounds
        self.storage = storage
        self.study_name = study_name
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.memory_limit = memory_limit
        self.subsample = subsample
        self.verbose = verbose

    def _inner(self) -> Any:
        # break_ties: SVC's predict otherwise settles a one-vs-one vote tie by class order while
        # decision_function settles it by confidence, and the two disagree on such a sample.
        return SVC(break_ties=True) if self.estimator is None else self.estimator

    def _seed(self) -> int:
        if self.random_state is None:
            return int(np.random.default_rng().integers(2**31 - 1))
        if isinstance(self.random_state, np.random.RandomState):
            return int(self.random_state.randint(2**31 - 1))
        return int(self.random_state)

    @fit_context(prefer_skip_nested_validation=False)  # the inner estimator validates its own
    def fit(self, X: Any, y: Any) -> BoxCoxClassifier:
        """Search Λ on (X, y) with an Optuna study, then fit the transform and the classifier.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, finite numbers.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : BoxCoxClassifier
            The fitted classifier.
        """
        _check_features(X)
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        seed = self._seed()
        frame = X
        if hasattr(self, "feature_names_in_"):
            import pandas as pd

            frame = pd.DataFrame(X, columns=self.feature_names_in_)
        objective = BoxCoxObjective(
            frame,
            y,
            self._inner(),
            scoring=self.scoring,
            cv=self.cv,
            method=self.method,
            extrapolation=self.extrapolation,
            bounds=self.bounds,
            random_state=seed,
            memory_limit=self.memory_limit,
            subsample=self.subsample,
        )
        with _optuna_verbosity(self.verbose):
            study = self._study(seed)
            sampler = study.sampler
            # A study made for another λ space is refused before a failed trial is written into it.
            objective.register(study)
            n_trials = self.n_trials
            if n_trials is None and not isinstance(sampler, PlanSampler):
                n_trials = DEFAULT_OPEN_ENDED_TRIALS
            # Batch by batch for the paper's samplers (their plan, or the first n_trials of it).
            result = optimize(study, objective, n_trials=n_trials, n_jobs=self.n_jobs)
        params, best = result.params, result.best_value
        if best is None:
            # n_trials stopped the plan before its first batch was scored: the best trial so far.
            params, best = study.best_params, study.best_value
        self.study_ = study
        self.lambdas_ = objective.to_lambdas(params)
        self.best_score_ = float(best)
        with warnings.catch_warnings():
            # The objective has said it already, about the same columns.
            warnings.simplefilter("ignore", ExtremeValueWarning)
            self.transformer_ = BoxCoxTransformer(
                lambdas=self.lambdas_, method=self.method, extrapolation=self.extrapolation
            ).fit(X)
        self.estimator_ = clone(self._inner()).fit(self.transformer_.transform(X), y)
        return self

    def _study(self, seed: int) -> optuna.Study:
        """The study fit searches in: the user's own, or a new (or resumed) one with our sampler."""
        if isinstance(self.storage, optuna.Study):
            return self._users_study(self.storage)
        sampler = self.sampler if self.sampler is not None else DEFAULT_SAMPLER
        if isinstance(sampler, str):
            sampler = make_sampler(sampler, seed=seed)
        else:
            sampler = copy.deepcopy(sampler)
        # open_storage: an unusable URL is refused with a message naming it (password redacted).
        storage = open_storage(self.storage) if isinstance(self.storage, str) else self.storage
        return optuna.create_study(
            storage=storage,
            sampler=sampler,
            study_name=self.study_name,
            direction="maximize",
            load_if_exists=self.study_name is not None,
        )

    def _users_study(self, study: optuna.Study) -> optuna.Study:
        """The study passed as ``storage``, searched as it is: its sampler is the user's choice, so
        a different one asked for here is a contradiction, not something to swap in silently."""
        if self.sampler is not None:
            raise ValueError(
                f"sampler={self.sampler!r} conflicts with the study passed as storage, which "
                f"searches with its own {type(study.sampler).__name__}: leave sampler=None, or "
                "pass a storage URL to let fit create the study"
            )
        if self.study_name is not None and self.study_name != study.study_name:
            raise ValueError(
                f"study_name={self.study_name!r} differs from the name of the study passed as "
                f"storage ({study.study_name!r}): leave study_name=None"
            )
        if study.directions != [StudyDirection.MAXIMIZE]:
            raise ValueError(
                f"the study passed as storage has direction(s) "
                f"{[d.name.lower() for d in study.directions]}; the search maximises one score, "
                "so create it with direction='maximize'"
            )
        return study

    def _transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        _check_features(X)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.transformer_.transform(X)

    def predict(self, X: Any) -> np.ndarray:
        """Class labels of X: transform with the fitted parts, then the classifier (Algorithm 4)."""
        Xt = self._transform(X)
        return self.estimator_.predict(Xt)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        Xt = self._transform(X)
        return self.estimator_.predict_proba(Xt)

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> np.ndarray:
        Xt = self._transform(X)
        return self.estimator_.predict_log_proba(Xt)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X: Any) -> np.ndarray:
        Xt = self._transform(X)
        return self.estimator_.decision_function(Xt)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
