"""A scikit-learn classifier that chooses its Box-Cox λ with an Optuna study.

Blum, Elgendi & Menon (2022), "Impact of Box-Cox Transformation on Machine-Learning Algorithms",
Algorithms 3 (fit) and 4 (prediction), with the λ search of their Algorithms 5–8 run as an Optuna
study. Optionally each feature's transform and the classifier's settings are searched with the λ,
and the ℓ best configurations of the study vote (the ensembles of kernel model selection, seed 004).
"""

from __future__ import annotations

from contextlib import contextmanager
import copy
from numbers import Integral
from numbers import Real
from typing import Any
import warnings

import numpy as np
import optuna
from optuna.study import StudyDirection
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin
from sklearn.base import MetaEstimatorMixin
from sklearn.svm import SVC
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.validation import validate_data

from optuna_boxcox import _dask
from optuna_boxcox._ensemble import Member
from optuna_boxcox._ensemble import ballot
from optuna_boxcox._ensemble import best_members
from optuna_boxcox._ensemble import fit_member
from optuna_boxcox._lifecycle._guard import GUARDED
from optuna_boxcox._lifecycle._guard import SEARCH_SAMPLER
from optuna_boxcox._lifecycle._search import RunOptions
from optuna_boxcox._lifecycle._search import Where
from optuna_boxcox._lifecycle._search import run_search
from optuna_boxcox._lifecycle._search import sample_size
from optuna_boxcox._math._sklearn_compat import HasMethods
from optuna_boxcox._math._sklearn_compat import Interval
from optuna_boxcox._math._sklearn_compat import StrOptions
from optuna_boxcox._math._sklearn_compat import fit_context
from optuna_boxcox._math._transform import BoxCoxTransformer
from optuna_boxcox._math._transform import check_features
from optuna_boxcox._math._transform import transform_checked
from optuna_boxcox._objective._arguments import CheckedData
from optuna_boxcox._objective._arguments import Whole
from optuna_boxcox._objective._arguments import array_names
from optuna_boxcox._objective._arguments import check_arrays
from optuna_boxcox._objective._evaluators import MonotoneInvariantWarning
from optuna_boxcox._objective._evaluators import monotone_invariant
from optuna_boxcox._objective._experiment import stratified_subsample
from optuna_boxcox._objective._objective import CRITERIA
from optuna_boxcox._objective._objective import METRICS
from optuna_boxcox._objective._points import Configuration
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._study._fidelity import DEFAULT_REQUEST
from optuna_boxcox._study._fidelity import parse_fidelity
from optuna_boxcox._study._spec import SearchSpec
from optuna_boxcox.samplers import PRESETS
from optuna_boxcox.samplers import SAMPLERS

#: The sampler when neither ``sampler`` nor a study is given: the paper's iterative grid search,
#: then the gate of :mod:`optuna_boxcox._lifecycle._guard` (searched Λ against the MLE and Λ = 1 anchors).
DEFAULT_SAMPLER = GUARDED


def _estimator_has(attr: str):
    def check(self: BoxCoxClassifier) -> bool:
        if hasattr(self, "ensemble_"):
            return all(hasattr(member.estimator, attr) for member in self.ensemble_)
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
        else ``"guarded"``. A name from the registry:

        - ``"guarded"`` (the default): the paper's coordinate search, then a gate on rows no fit
          saw: the searched Λ, the per-feature MLE Λ (the search's start point) and Λ = 1
          (standard scaling) compete, each classifier by its rule. k-NN: exact leave-one-out
          accuracy, the searched Λ kept only if it beats Λ = 1 by more than one standard
          error of the per-row differences and its 5-fold × 2 repeated stratified
          cross-validation score is above Λ = 1's too; where it is kept, the MLE Λ is used
          instead if its leave-one-out accuracy is as high. RBF SVC: the best 5 × 2
          cross-validation score of the three. Others (naive Bayes, …): 5 × 2 cross-validation,
          the searched Λ kept only if it beats the better anchor by more than one
          (Nadeau–Bengio corrected) standard error. Else that anchor is used. The
          resubstitution score flatters classifiers that memorise (k-NN, RBF SVC), and a choice
          among thousands of candidates overfits it: the gate keeps what the data support. See
          ``decision_``. Linear classifiers (the perceptron, …) keep the searched Λ ungated:
          their training accuracy is not flattered, and the gate only added noise;
          LogisticRegression, RidgeClassifier and LinearSVC are gated like naive Bayes. The MLP
          searches no Λ (a search is thousands of its fits): the best 5 × 2 cross-validation
          score of the MLE Λ and Λ = 1, each standard or min-max scaled after the power step, is
          used. Searches with ``transforms``, ``estimator_params`` or ``ensemble`` are not
          gated (the coordinate search alone);
        - ``"coordinate"`` (or ``"iterative"``): the paper's iterative grid search, Algorithm 6;
          its Table-4 variants ``"shift"``, ``"shuffle"``, ``"finer"`` (Algorithms 6.1–6.3),
          ``"combined1"`` and ``"combined2"``, also written ``"coordinate:<variant>"``;
        - ``"grid"`` (the full grid, Algorithm 5, for up to 10,000 grid points),
          ``"spherical"`` (Algorithm 7), ``"diagonal"`` (Algorithm 8), ``"mle"`` (per-feature
          maximum-likelihood λ, one trial);
        - ``"nelder-mead"``: Nelder and Mead's downhill simplex in the λ domain, with restarts;
        - Optuna's ``"tpe"``, ``"random"``, ``"cmaes"``, ``"qmc"``, ``"nsga2"`` and ``"gp"``
          (needs PyTorch).

        With ``transforms`` or ``estimator_params``, the coordinate search and Optuna's samplers
        (the other paper samplers search λ only).

        Or a sampler instance, deep-copied at every fit. A sampler cannot be combined with a
        study given as ``storage``: that study searches with its own sampler.
    n_trials : int, default=None
        New trials of each fit, Optuna's meaning (a fit on a stored study runs this many more;
        the command line's ``--n-trials`` is the study's total instead); ``None`` lets the
        paper's samplers run their own budget (E·p·L for the coordinate search) and gives other
        samplers 100 trials.
    scoring : str or callable, default="accuracy"
        What the search maximises (see :class:`BoxCoxObjective`): a metric name (``"accuracy"``,
        ``"balanced_accuracy"``, ``"f1"``, ``"mcc"``), one of Bicego & Baldo's (2016)
        classifier-free criteria (``"ml"``, ``"pcml"``, ``"fisher"``, ``"1nn-mm"``) or
        ``metric(y_true, y_pred)``.
    cv : int, splitter or None, default=None
        ``None`` for the paper's resubstitution score (fit and predict the training data), else
        inner stratified folds.
    cv_repeats : int, default=1
        Repeats of the inner stratified folds of an integer ``cv``, each shuffled anew: the mean
        over the repeats scores a Λ with less noise, at that many times the fits.
    error_score : "raise" or float, default="raise"
        What a classifier fit that raises scores during the search, as in scikit-learn's
        searches; ``"raise"`` stops the search. See :class:`BoxCoxObjective`.
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
        A study is resumed only for the same experiment — the same data, classifier and
        parameters, scoring, cv, transforms, estimator parameters, subsample, λ bounds and
        fidelity — else fit raises :class:`~optuna_boxcox.StudyMismatch` naming the first that differs; a study
        optuna-boxcox did not make is used only while it is empty.
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
        on all rows. ``None``: all rows, or, for the default (no ``fidelity``) where searching
        all rows would cost more than three passes of the classifier over the data, a sample
        the search's plan sizes and records (``fidelity_["sample"]``); its MLE anchor and the
        gate are the sample's, in the Box-Cox range of all rows.
    fidelity : {"exact", "auto"}, int or None, default=None
        ``"exact"`` scores each Λ on all training rows; an int N searches by successive
        halving over stratified row subsets from N rows (Optuna's pruner decides for Optuna's
        samplers: successive halving unless ``storage`` is a study with its own); ``"auto"``
        chooses from the classifier's cost class and the data's shape, nothing timed: exact
        where the data are small for the classifier or the exact search is priced under 20 s,
        else halving (see :class:`AutoFidelity`). ``None``: a study resumed from
        ``storage`` keeps the fidelity it was made with, a new one is ``"auto"`` (exact on data
        as small as the paper's; not with ``subsample``). Recorded in the study; what was
        chosen is ``fidelity_``. See :class:`BoxCoxObjective`.
    verbose : int, default=0
        0 silences Optuna's per-trial log lines during ``fit``.
    transforms : tuple of str or None, default=None
        What each feature may be given, searched per feature with its λ when there are several:
        ``"box-cox"``, ``"yeo-johnson"``, ``"identity"`` (the standardized raw feature) and
        ``"drop"`` (left out). ``None`` is ``(method,)``, the paper's search. See
        :class:`BoxCoxObjective`.
    estimator_params : dict or None, default=None
        Settings of ``estimator`` searched with the transform: name → Optuna distribution, e.g.
        ``{"n_neighbors": IntDistribution(1, 21)}``. With the paper's resubstitution score,
        settings that memorise the training data (k = 1, distance weights) score perfectly:
        search them with ``cv``.
    ensemble : int or None, default=None
        ``None``: predict with the single configuration the search chose. ℓ: predict by majority
        vote of the ℓ best distinct configurations of the study (the chosen one first, then the
        trials by decreasing score, the earliest first among equal scores), each fitted on all
        the training data. A tie in the vote goes to the tied class with the highest mean
        ``predict_proba`` of the members, else the highest mean ``decision_function`` (squashed
        into (0, 1) by the logistic function), else the class of the best-ranked member among
        those voting for a tied class. ``predict_proba`` is then the vote shares with that tie
        breaker (votes plus the mean member probability, normalised), ``decision_function`` the
        votes plus the tie breaker (binary: class 1's minus class 0's), so both always agree
        with ``predict``. Fewer configurations than ℓ (a small study) make a smaller ensemble;
        other configurations that drop every feature are left out.
    figures : bool, default=False
        Every fit leaves a Markdown note on its study, shown by optuna-dashboard: the Λ used, the
        decision in words and the search's settings. ``True`` attaches the search's figures
        too (λ trajectory, best so far, transform curves, the grid of a two-feature search);
        they add about a third to a small fit, so they are off by default.

    Attributes
    ----------
    lambdas_ : ndarray of shape (n_features,)
        The chosen λ, in feature order.
    search_lambdas_ : ndarray of shape (n_features,)
        The λ the search chose (``lambdas_`` unless the guarded default used an anchor).
    decision_ : dict or None
        The guarded default's decision (None when no gate ran): ``chosen`` (``"searched"``,
        ``"mle"`` or ``"ones"``; for the MLP also ``"mle_minmax"`` or ``"minmax"``, min-max
        scaled after the power step: ``transformer_.range_scale``), the ``criterion``
        (``"leave-one-out"`` or ``"5x2 cv"``) and the ``scores`` of the candidates by it, the better ``anchor``, the searched Λ's
        ``difference`` over it and the ``threshold`` it had to exceed, the ``rule``, k-NN's
        ``confirmation`` (5 × 2 CV scores of the searched Λ and the anchor, when leave-one-out
        kept it) and the ``settings`` it was made with; for a linear classifier (not gated: its training accuracy is not flattered)
        ``gated`` is False and the searched Λ is kept; on data whose smallest class has fewer
        rows than the gate's 5 folds ``gated`` is False and ``chosen`` is ``"ones"`` (standard
        scaling), the ``rule`` saying why. Also recorded in the study's user
        attribute ``boxcox_decision``. For a tree model with the default sampler (no search: no
        monotone per-feature transform changes its fit, said in a ``MonotoneInvariantWarning``)
        ``chosen`` is ``"ones"``, ``gated`` False, ``study_`` None and ``best_score_`` NaN.
    fidelity_ : dict
        The fidelity the search ran with and why: ``summary`` (one line, as ``search`` prints
        it), ``fidelity`` (the rungs' ``min_rows``, ``eta`` and ``top_rows``, or None for
        exact), ``requested`` (``"auto"`` or ``"given"``), ``default`` (``auto`` because none
        was asked for), ``reason``, and for ``auto`` the ``priced`` seconds it chose from (rows and a new
        point's seconds by the classifier's cost class, nothing timed) and the estimated
        ``exact_minutes`` and ``search_minutes``.
    best_params_ : dict
        The chosen configuration as the study's parameters (λ, transforms and settings).
    best_score_ : float
        The search score of ``lambdas_`` on the training data (the search's criterion).
    study_ : optuna.Study
        The study that chose them. A pickled classifier leaves out a study held in memory (the
        default): unpickled, ``study_`` is None; give ``storage`` to keep the study.
    transformer_ : BoxCoxTransformer
        The fitted transform (with ``transforms``, a feature map that applies each feature's own
        transform and leaves out the dropped ones).
    estimator_ : classifier
        The classifier fitted on transformed training data (with the chosen settings).
    ensemble_ : list of Member
        With ``ensemble``: the voting configurations, best first, each with its ``params``,
        ``score``, fitted ``transformer`` and ``estimator``.
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
            StrOptions(set(SAMPLERS) | {f"coordinate:{preset}" for preset in PRESETS} | {GUARDED}),
            HasMethods(["sample_independent"]),
            None,
        ],
        "n_trials": [Interval(Integral, 1, None, closed="left"), None],
        "scoring": [StrOptions(set(METRICS) | set(CRITERIA)), callable],
        "cv": ["cv_object", None],
        "cv_repeats": [Interval(Integral, 1, None, closed="left")],
        "error_score": [StrOptions({"raise"}), Real],
        "method": [StrOptions({"box-cox", "yeo-johnson"})],
        "extrapolation": [StrOptions({"extrapolate", "clip"})],
        "bounds": [tuple, dict, None],
        "storage": [str, HasMethods(["create_new_study"]), optuna.Study, None],
        "study_name": [str, None],
        "n_jobs": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "memory_limit": [Interval(Integral, 1, None, closed="left"), str, None],
        "subsample": [Interval(Integral, 2, None, closed="left"), None],
        "fidelity": [
            StrOptions({"exact", "auto"}),
            Interval(Integral, 2, None, closed="left"),
            None,
        ],
        "verbose": ["verbose"],
        "transforms": [tuple, list, None],
        "estimator_params": [dict, None],
        "ensemble": [Interval(Integral, 1, None, closed="left"), None],
        "figures": ["boolean"],
    }

    def __init__(
        self,
        estimator: Any = None,
        *,
        sampler: str | optuna.samplers.BaseSampler | None = None,
        n_trials: int | None = None,
        scoring: Any = "accuracy",
        cv: Any = None,
        cv_repeats: int = 1,
        error_score: str | float = "raise",
        method: str = "box-cox",
        extrapolation: str = "extrapolate",
        bounds: tuple[float, float] | None = None,
        storage: Any = None,
        study_name: str | None = None,
        n_jobs: int = 1,
        random_state: int | None = 0,
        memory_limit: int | str | None = None,
        subsample: int | None = None,
        fidelity: str | int | None = None,
        verbose: int = 0,
        transforms: tuple[str, ...] | None = None,
        estimator_params: dict[str, Any] | None = None,
        ensemble: int | None = None,
        figures: bool = False,
    ) -> None:
        self.estimator = estimator
        self.sampler = sampler
        self.n_trials = n_trials
        self.scoring = scoring
        self.cv = cv
        self.cv_repeats = cv_repeats
        self.error_score = error_score
        self.method = method
        self.extrapolation = extrapolation
        self.bounds = bounds
        self.storage = storage
        self.study_name = study_name
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.memory_limit = memory_limit
        self.subsample = subsample
        self.fidelity = fidelity
        self.verbose = verbose
        self.transforms = transforms
        self.estimator_params = estimator_params
        self.ensemble = ensemble
        self.figures = figures

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
        X : array-like of shape (n_samples, n_features), or a Dask array or DataFrame
            Training data, finite numbers. A Dask collection (the optional extra ``dask``) is
            read chunk by chunk: the default's stratified sample is searched in memory, the
            transform fitted on all rows and the classifier block by block with its
            ``partial_fit`` (docs: "Data bigger than memory").
        y : array-like of shape (n_samples,), or a Dask array or Series
            Class labels.

        Returns
        -------
        self : BoxCoxClassifier
            The fitted classifier.
        """
        if _dask.is_dask(X) or _dask.is_dask(y):
            return self._fit_dask(X, y)
        # scikit-learn's validation (its messages are its estimator checks'), then the package's
        # own, once, by check_data: every step after it takes the data as they are.
        check_features(X)
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        names = getattr(self, "feature_names_in_", None)
        named = names is not None
        if not named:
            names = array_names(self.n_features_in_)
        # fit, scikit-learn's fit_context, then the user's line.
        data = check_arrays(X, y, names, named=named, warn_stacklevel=3)
        self.classes_ = np.unique(data.y)
        if self._sampler_name() == GUARDED and self._owns_study() and self._plain_trees():
            return self._fit_without_search(data)
        objective, study = self._search(data)

        def member(params: dict, score: float, range_scale: bool = False) -> Member:
            """The configuration ``params`` fitted on the data."""
            return fit_member(
                objective.configuration(params),
                params,
                score,
                self._inner(),
                data.X,
                data.y,
                method=self.method,
                extrapolation=self.extrapolation,
                range_scale=range_scale,
                names=getattr(self, "feature_names_in_", None),
            )

        chosen = member(self.best_params_, self.best_score_, range_scale=self._range_scaled)
        self.transformer_, self.estimator_ = chosen.transformer, chosen.estimator
        if self.ensemble is not None:
            self.ensemble_ = best_members(objective, study, chosen, self.ensemble, member)
        elif hasattr(self, "ensemble_"):
            del self.ensemble_  # from an earlier fit with an ensemble
        return self

    def _sampler_name(self) -> Any:
        sampler = self.sampler if self.sampler is not None else DEFAULT_SAMPLER
        if sampler == GUARDED and self.ensemble is not None:
            return SEARCH_SAMPLER  # an ensemble votes over the search's best: not gated
        return sampler

    def _spec(self) -> SearchSpec:
        """The search this estimator's parameters ask for."""
        sampler = self._sampler_name()
        return SearchSpec(
            self._inner(),
            scoring=self.scoring,
            cv=self.cv,
            cv_repeats=self.cv_repeats,
            error_score=self.error_score,
            method=self.method,
            extrapolation=self.extrapolation,
            transforms=self.transforms,
            estimator_params=self.estimator_params or {},
            subsample=self.subsample,
            bounds=self.bounds,
            # None: the lifecycle's default (a resumed study's own fidelity, else auto).
            fidelity=parse_fidelity(self.fidelity, none=DEFAULT_REQUEST),
            # The user's own sampler object or study searches with itself: nothing to rebuild.
            sampler=sampler if isinstance(sampler, str) and self._owns_study() else None,
            seed=self._seed(),
        )

    def _search(self, data: CheckedData) -> tuple[Any, optuna.Study]:
        """Run (or resume) the study on ``data`` and keep what it chose: the fitted attributes of
        the search (``study_``, ``fidelity_``, ``decision_``, Λ and scores). Returns the objective
        and the study."""
        spec = self._spec()
        with _optuna_verbosity(self.verbose):
            # A study of another experiment (other data, classifier, scoring, …) is refused before
            # its old best is reported as this fit's.
            found = run_search(
                spec,
                data,
                self._where(),
                RunOptions(
                    sampler=self._sampler(spec),
                    memory_limit=self.memory_limit,
                    n_jobs=self.n_jobs,
                    n_trials=self.n_trials,
                    note=True,
                    figures=self.figures,
                ),
            )
        objective, study, params, best = found.objective, found.study, found.params, found.best
        self.study_ = study
        choice = objective.fidelity_choice
        summary = choice.summary(objective.n_samples, type(objective.estimator).__name__)
        self.fidelity_ = {"summary": summary, **choice.to_attrs()}
        # The guarded default's gate ran in run_search: params are the chosen Λ.
        self.search_lambdas_ = objective.to_lambdas(found.search_params or params)
        self.decision_ = None if found.decision is None else found.decision.to_dict()
        self.lambdas_ = objective.to_lambdas(params)
        self.best_params_ = dict(params)
        self.best_score_ = float(best)
        self._range_scaled = found.range_scaled
        return objective, study

    def _fit_dask(self, X: Any, y: Any) -> BoxCoxClassifier:
        """``fit`` on a Dask collection, which need not fit in memory: the default's stratified
        sample is drawn into memory for the search and the gate (in the Box-Cox range of all
        rows), then the transform is fitted on all rows and the classifier block by block with
        its ``partial_fit``. Data small enough to search whole are computed and fitted as NumPy."""
        estimator = self._inner()
        refused = [
            name
            for name in ("subsample", "fidelity", "ensemble", "transforms")
            if getattr(self, name) is not None
        ] + (["estimator_params"] if self.estimator_params else [])
        if refused:
            raise ValueError(
                f"{', '.join(refused)} cannot be combined with a Dask collection: leave "
                "them unset (the default searches its own sample of the rows)"
            )
        if not hasattr(estimator, "partial_fit"):
            # Said before any pass over the data.
            _dask.partial_fit_blocks(estimator, None, X, y)
        names = _dask.column_names(X)
        y_all = _dask.labels(y)
        check_classification_targets(y_all)
        self.classes_ = np.unique(y_all)
        self.n_features_in_ = len(names)
        if _dask.is_frame(X):
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        # An array's columns are x0, x1, … in messages (these names only word them), lambda_0,
        # lambda_1, … as λ parameters.
        data_min, data_range, fingerprint = _dask.range_and_fingerprint(X, y_all, names)
        named = _dask.is_frame(X)
        names = names if named else array_names(len(names))
        plan = Whole(len(y_all), y_all, None, data_min, data_range)
        shape = CheckedData(tuple(names), np.empty((0, len(names))), y_all, fingerprint, plan)
        size = sample_size(self._spec(), shape)
        if size is None:  # small enough to search whole: as NumPy
            return self.fit(_dask.take_rows(X, np.arange(len(y_all))), y_all)
        rows = stratified_subsample(y_all, size, self._seed())
        whole = Whole(len(y_all), y_all, rows, data_min, data_range)
        sample = check_arrays(
            _dask.take_rows(X, rows), y_all[rows], names, named=named, warn_stacklevel=3
        )
        data = CheckedData(sample.names, sample.X, sample.y, fingerprint, whole, named)
        self._search(data)
        settings = {
            "lambdas": self.lambdas_,
            "method": self.method,
            "extrapolation": self.extrapolation,
        }
        transformer = BoxCoxTransformer(**settings, range_scale=self._range_scaled)
        _dask.fit_transformer(transformer, X)  # fitted in place (its lazy transform unused)
        self.transformer_ = transformer
        self.estimator_ = _dask.partial_fit_blocks(
            estimator, self.transformer_.transform, X, y_all, classes=self.classes_
        )
        if hasattr(self, "ensemble_"):
            del self.ensemble_
        return self

    def _plain_trees(self) -> bool:
        """The default's shortcut applies: a tree model with only Λ to choose."""
        return (
            self.transforms is None
            and not self.estimator_params
            and monotone_invariant(self._inner())
        )

    def _fit_without_search(self, data: CheckedData) -> BoxCoxClassifier:
        """Λ = 1 (standard scaling) for a tree model, which no monotone per-feature transform
        changes: said in one line, recorded in ``decision_``, and no study."""
        name = type(self._inner()).__name__
        reason = f"{name} is invariant to monotone per-feature transforms such as Box-Cox"
        warnings.warn(
            MonotoneInvariantWarning(f"{reason}: no search, Λ = 1 (standard scaling)"),
            stacklevel=4,  # this, fit, scikit-learn's fit_context, then the user's line
        )
        names = list(data.names)
        ones = np.ones(len(names))
        self.study_ = None
        self.search_lambdas_ = ones.copy()
        self.lambdas_ = ones.copy()
        self.decision_ = {
            "chosen": "ones",
            "lambdas": [1.0] * len(names),
            "gated": False,
            "rule": f"not searched: {reason}",
        }
        self.fidelity_ = {"summary": "no search", "fidelity": None, "reason": reason}
        self.best_params_ = dict.fromkeys(names, 1.0)
        self.best_score_ = float("nan")
        configuration = Configuration(ones, (self.method,) * len(names), {})
        chosen = fit_member(
            configuration,
            self.best_params_,
            self.best_score_,
            self._inner(),
            data.X,
            data.y,
            method=self.method,
            extrapolation=self.extrapolation,
            names=getattr(self, "feature_names_in_", None),
        )
        self.transformer_, self.estimator_ = chosen.transformer, chosen.estimator
        if hasattr(self, "ensemble_"):
            del self.ensemble_
        return self

    def _where(self) -> Where:
        """Where fit searches: the user's own study, or a new (or resumed) one."""
        if isinstance(self.storage, optuna.Study):
            return Where(study=_users_study(self.storage, self.sampler, self.study_name))
        return Where(storage=self.storage, study_name=self.study_name)

    def _sampler(self, spec: SearchSpec) -> Any:
        """The sampler object fit searches a study it opens with: none when the spec names one,
        else a copy of the one given (the user's own study keeps its own)."""
        if isinstance(self.storage, optuna.Study) or spec.sampler:
            return None
        return copy.deepcopy(self.sampler)

    def _owns_study(self) -> bool:
        return not isinstance(self.storage, optuna.Study)

    def _validated(self, X: Any) -> np.ndarray:
        check_is_fitted(self)
        check_features(X)
        return validate_data(self, X, dtype=np.float64, reset=False)

    def _transform(self, X: Any) -> np.ndarray:
        # X is checked against the classifier's own names; its transformer keeps them too.
        X = self._validated(X)
        return transform_checked(self.transformer_, X)

    def predict(self, X: Any) -> np.ndarray:
        """Class labels of X: transform with the fitted parts, then the classifier (Algorithm 4);
        with ``ensemble``, the vote of its configurations. A Dask collection gives a lazy Dask
        array, block by block."""
        if _dask.is_dask(X):
            check_is_fitted(self)
            return _dask.predict_blocks(self.predict, X, dtype=self.classes_.dtype)
        if hasattr(self, "ensemble_"):
            return self.classes_[
                np.argmax(ballot(self.ensemble_, self.classes_, self._validated(X)), axis=1)
            ]
        Xt = self._transform(X)
        return self.estimator_.predict(Xt)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of X (a Dask collection: a lazy Dask array, block by block)."""
        if _dask.is_dask(X):
            check_is_fitted(self)
            return _dask.transform_blocks(self.predict_proba, X, len(self.classes_))
        if hasattr(self, "ensemble_"):
            votes = ballot(self.ensemble_, self.classes_, self._validated(X))
            return votes / votes.sum(axis=1, keepdims=True)
        Xt = self._transform(X)
        return self.estimator_.predict_proba(Xt)

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log class probabilities of X (where the classifier has ``predict_log_proba``)."""
        if hasattr(self, "ensemble_"):
            with np.errstate(divide="ignore"):
                return np.log(self.predict_proba(X))
        Xt = self._transform(X)
        return self.estimator_.predict_log_proba(Xt)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X: Any) -> np.ndarray:
        """The classifier's decision values of X, transformed with the fitted parts (where the
        classifier has ``decision_function``); an ensemble's: the members' votes (for two classes
        the second class's votes minus the first's)."""
        if hasattr(self, "ensemble_"):
            votes = ballot(self.ensemble_, self.classes_, self._validated(X))
            return votes[:, 1] - votes[:, 0] if len(self.classes_) == 2 else votes
        Xt = self._transform(X)
        return self.estimator_.decision_function(Xt)

    def __getstate__(self) -> dict[str, Any]:
        # A study in memory (the default) is every trial of the search: a pickled model keeps
        # what predicts and leaves it out; a study in a database is pickled as its address.
        state = dict(super().__getstate__())  # a copy: the fitted classifier keeps its study
        study = state.get("study_")
        if isinstance(study, optuna.Study) and isinstance(
            storage_of(study), optuna.storages.InMemoryStorage
        ):
            state["study_"] = None
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags


def _users_study(study: optuna.Study, sampler: Any, study_name: Any) -> optuna.Study:
    """The study passed as ``storage``, searched as it is: its sampler is the user's choice, so
    a different one asked for here is a contradiction, not something to swap in silently."""
    if sampler is not None:
        raise ValueError(
            f"sampler={sampler!r} conflicts with the study passed as storage, which "
            f"searches with its own {type(study.sampler).__name__}: leave sampler=None, or "
            "pass a storage URL to let fit create the study"
        )
    if study_name is not None and study_name != study.study_name:
        raise ValueError(
            f"study_name={study_name!r} differs from the name of the study passed as "
            f"storage ({study.study_name!r}): leave study_name=None"
        )
    if study.directions != [StudyDirection.MAXIMIZE]:
        raise ValueError(
            f"the study passed as storage has direction(s) "
            f"{[d.name.lower() for d in study.directions]}; the search maximises one score, "
            "so create it with direction='maximize'"
        )
    return study
