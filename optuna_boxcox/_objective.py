"""The callable an Optuna study optimises: data, transform and classifier joined (SPEC §2)."""

from __future__ import annotations

from collections.abc import Callable
import threading
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.metrics import accuracy_score
from sklearn.metrics import balanced_accuracy_score
from sklearn.metrics import f1_score
from sklearn.metrics import matthews_corrcoef
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_array

from optuna_boxcox import _numerics
from optuna_boxcox._space import SPACE_ATTR
from optuna_boxcox._space import LambdaSpace
from optuna_boxcox._space import default_bounds
from optuna_boxcox._transform import _check_features

if TYPE_CHECKING:
    from collections.abc import Mapping
    from collections.abc import Sequence

    import optuna


def _f1(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    average = "binary" if len(np.unique(y_true)) <= 2 else "macro"
    pos_label = np.unique(y_true)[-1]
    if average == "binary":
        return f1_score(y_true, y_pred, pos_label=pos_label, zero_division=0.0)
    return f1_score(y_true, y_pred, average=average, zero_division=0.0)


#: Metrics of predictions, by name. Binary F1 counts the larger label as positive.
METRICS: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
    "accuracy": accuracy_score,
    "balanced_accuracy": balanced_accuracy_score,
    "f1": _f1,
    "mcc": matthews_corrcoef,
}
#: Classifier-free criteria of Bicego & Baldo (seed 001), computed on the transformed data.
CRITERIA = ("ml", "pcml", "fisher", "1nn-mm")

# Scores a search maximises; the paper minimises 1 - accuracy, the same search.


class BoxCoxObjective:
    """Score of a classifier on Box-Cox transformed data, for one Λ per Optuna trial.

    Each feature's λ is a float parameter named after the feature (DataFrame column names;
    ``lambda_0``, ``lambda_1``, … for arrays). The score is the paper's resubstitution accuracy
    (fit and predict the training data, SPEC §2) unless ``cv`` asks for an inner stratified k-fold
    score; other metrics and the classifier-free criteria of Bicego & Baldo can be chosen.

    The objective records its λ space in the study (user attribute ``boxcox_search_space``), which is
    how the plugin's samplers learn the parameter order, bounds and the MLE starting point in every
    worker. Re-scoring a Λ it has seen is a cache hit; a new Λ re-transforms only changed columns.

    Example::

        import optuna
        from sklearn.datasets import load_breast_cancer
        from sklearn.neighbors import KNeighborsClassifier
        from optuna_boxcox import BoxCoxObjective, CoordinateGridSampler

        X, y = load_breast_cancer(return_X_y=True, as_frame=True)
        objective = BoxCoxObjective(X, y, KNeighborsClassifier())
        study = optuna.create_study(direction="maximize",
                                    sampler=CoordinateGridSampler.from_preset("iterative"))
        study.optimize(objective)

    Args:
        X: Training data, (n_samples, n_features) array or DataFrame with finite numeric values.
        y: Class labels.
        estimator: scikit-learn classifier (cloned for every fit).
        scoring: ``"accuracy"`` (default), ``"f1"``, ``"mcc"``, ``"balanced_accuracy"``, one of the
            criteria ``"ml"``, ``"pcml"``, ``"fisher"``, ``"1nn-mm"``, or a callable
            ``metric(y_true, y_pred) -> float`` (higher is better).
        cv: ``None`` for resubstitution (the paper), an int k for stratified k-fold on the training
            data (shuffled with ``random_state``), or a scikit-learn splitter. The transform's
            min/max and scaling come from all of X (they are unsupervised); the classifier is refit
            per fold.
        method: ``"box-cox"`` (the paper) or ``"yeo-johnson"``.
        extrapolation: How the fitted transform treats values outside the training range
            (``"extrapolate"`` or ``"clip"``, SPEC §1). Resubstitution never meets any.
        bounds: The λ domain: ``None`` for SPEC §3's default (hull of [-10, 10] and [G-5, G+5]), a
            ``(low, high)`` pair for every feature, or a mapping feature name → ``(low, high)``.
        initial_params: The starting point G; default the per-feature maximum-likelihood λ.
        random_state: Seed of the inner folds.
        fast: Use an exact specialised scorer where one exists (GaussianNB, k-NN, RBF SVC with
            resubstitution): same predictions as scikit-learn's fit and predict, several times
            faster; it defers to scikit-learn whenever a result would hinge on a near-tie.
    """

    def __init__(
        self,
        X: Any,
        y: Any,
        estimator: Any,
        *,
        scoring: str | Callable[[np.ndarray, np.ndarray], float] = "accuracy",
        cv: int | Any | None = None,
        method: str = "box-cox",
        extrapolation: str = "extrapolate",
        bounds: tuple[float, float] | Mapping[str, tuple[float, float]] | None = None,
        initial_params: Mapping[str, float] | None = None,
        random_state: int | None = 0,
        fast: bool = True,
    ) -> None:
        if method not in _numerics.METHODS:
            raise ValueError(f"method must be one of {_numerics.METHODS}, got {method!r}")
        if extrapolation not in _numerics.EXTRAPOLATIONS:
            raise ValueError(
                f"extrapolation must be one of {_numerics.EXTRAPOLATIONS}, got {extrapolation!r}"
            )
        self.names = _feature_names(X)
        _check_features(X)
        self.X = check_array(X, dtype=np.float64, ensure_min_samples=2, input_name="X")
        self.y = np.asarray(y)
        if self.y.ndim != 1 or len(self.y) != len(self.X):
            raise ValueError(
                f"y must be 1-D with one label per row of X ({len(self.X)}), got shape {self.y.shape}"
            )
        if len(np.unique(self.y)) < 2:
            raise ValueError("y has a single class; a classifier needs at least two")
        if type_of_target(self.y) not in ("binary", "multiclass"):
            raise ValueError(
                f"y must hold class labels, got target type {type_of_target(self.y)!r}"
            )
        self.estimator = estimator
        self.fast = fast
        self.method = method
        self.extrapolation = extrapolation
        self.scoring = scoring
        self._score_fn = self._resolve_scoring(scoring)
        self._splits = self._resolve_cv(cv, random_state)
        self.cv = cv

        if method == "box-cox":
            self.data_min, self.data_range = _numerics.fit_range(self.X)
            self.values = _numerics.range_standardise(self.X, self.data_min, self.data_range)
        else:
            self.values = self.X
        mle = _numerics.mle_lambdas(self.values, method)
        start = (
            mle if initial_params is None else np.array([initial_params[n] for n in self.names])
        )
        low, high = self._resolve_bounds(bounds, start)
        self.space = LambdaSpace(tuple(self.names), low, high, start)
        self.mle_lambdas = np.clip(mle, low, high)

        self._cache: dict[bytes, float] = {}
        self._log_columns: np.ndarray | None = None
        self._lock = threading.Lock()
        self._local = threading.local()
        self._registered: set[tuple[int, int]] = set()
        self.n_evaluations = 0  # evaluations that fitted a classifier (cache misses)

    # -- the λ space -----------------------------------------------------------------------
    @property
    def param_names(self) -> list[str]:
        return list(self.space.names)

    @property
    def search_space(self) -> dict[str, optuna.distributions.FloatDistribution]:
        return self.space.distributions()

    @property
    def initial_params(self) -> dict[str, float]:
        """The search's starting point G (default: per-feature Box-Cox MLE), as a params dict."""
        return self.space.to_params(self.space.initial)

    @property
    def mle_params(self) -> dict[str, float]:
        """The per-feature maximum-likelihood λ (clipped into the domain), as a params dict."""
        return self.space.to_params(self.mle_lambdas)

    def to_params(self, lambdas: Sequence[float]) -> dict[str, float]:
        """λ vector in feature order → params dict."""
        if len(lambdas) != self.space.dim:
            raise ValueError(f"expected {self.space.dim} λ, got {len(lambdas)}")
        return self.space.to_params(lambdas)

    def to_lambdas(self, params: Mapping[str, float]) -> np.ndarray:
        """Params dict (e.g. ``study.best_params``) → λ vector in feature order."""
        return self.space.to_vector(params)

    def register(self, study: optuna.Study) -> None:
        """Record the λ space in the study so samplers in every worker can find it.

        Called automatically on the first trial; refuses a study that already holds another space.
        """
        key = (id(study._storage), study._study_id)
        if key in self._registered:
            return
        mine = self.space.to_attr()
        theirs = study.user_attrs.get(SPACE_ATTR)
        if theirs is None:
            study.set_user_attr(SPACE_ATTR, mine)
        elif theirs["names"] != mine["names"] or not (
            np.allclose(theirs["low"], mine["low"]) and np.allclose(theirs["high"], mine["high"])
        ):
            raise ValueError(
                f"study {study.study_name!r} was created for another λ search space "
                f"({len(theirs['names'])} parameters {theirs['names'][:3]}…); "
                "use a new study name for this data"
            )
        self._registered.add(key)

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, trial: optuna.Trial) -> float:
        self.register(trial.study)
        lambdas = np.array(
            [
                trial.suggest_float(n, lo, hi)
                for n, lo, hi in zip(self.space.names, self.space.low, self.space.high)
            ]
        )
        return self.evaluate(lambdas)

    @property
    def metric_name(self) -> str:
        """The scoring's name (``accuracy``, ``ml``, …), which names the study's objective."""
        if isinstance(self.scoring, str):
            return self.scoring
        return getattr(self.scoring, "__name__", "score")

    def evaluate_batch(self, points: Sequence[Sequence[float]]) -> list[float]:
        """Scores of several Λ, in order (each as :meth:`evaluate` gives it)."""
        return [self.evaluate(x) for x in points]

    def evaluate(self, lambdas: Sequence[float] | Mapping[str, float]) -> float:
        """Score of one Λ (cached: a Λ scored before is not refitted)."""
        if not isinstance(lambdas, np.ndarray) and hasattr(lambdas, "keys"):
            lambdas = self.to_lambdas(lambdas)
        lambdas = self._checked(lambdas)
        key = lambdas.tobytes()
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        values, transformed, scaled = self._transformed(lambdas)
        score = self._score(values, transformed, scaled, lambdas)
        with self._lock:
            self._cache[key] = score
            self.n_evaluations += 1
        return score

    def cached_score(self, lambdas: Sequence[float]) -> float | None:
        """The score of a Λ scored before (here or reported by :meth:`remember_score`), else None."""
        key = self._checked(lambdas).tobytes()
        with self._lock:
            return self._cache.get(key)

    def remember_score(self, lambdas: Sequence[float], score: float) -> None:
        """Record a score computed elsewhere (a worker process) as if evaluated here."""
        key = self._checked(lambdas).tobytes()
        with self._lock:
            if key not in self._cache:
                self._cache[key] = float(score)
                self.n_evaluations += 1

    def warm_up(self) -> None:
        """Build this thread's transform and fast scorer and load its compiled kernels now.

        The first score otherwise pays these one-off costs (about a second for Numba); call this
        before timing, or before forking workers so that they inherit the warm state. Scores nothing
        into the cache.
        """
        _, _, scaled = self._transformed(self._checked(self.space.initial))
        scorer = (
            None
            if isinstance(self.scoring, str) and self.scoring in CRITERIA
            else self._fast_scorer(scaled)
        )
        if scorer is not None:
            scorer.score()
            # A fast scorer may leave the kernel of a column change to the first update.
            scorer.warm_up()

    def transform(self, lambdas: Sequence[float]) -> np.ndarray:
        """The standard-scaled transformed training data for ``lambdas`` (a copy)."""
        return self._transformed(self._checked(lambdas))[2].copy()

    def _checked(self, lambdas: Sequence[float]) -> np.ndarray:
        lambdas = np.asarray(lambdas, dtype=np.float64)
        if lambdas.shape != (self.space.dim,):
            raise ValueError(
                f"expected {self.space.dim} λ, one per feature of X, got an array of shape {lambdas.shape}"
            )
        if not np.isfinite(lambdas).all():
            raise ValueError(f"λ must be finite, got {lambdas.tolist()}")
        return lambdas

    def _transformed(self, lambdas: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per thread, keep the last transform and redo only the columns whose λ changed."""
        state = self._local
        if getattr(state, "lambdas", None) is None:
            # C order: scikit-learn copies (or slows down on) Fortran-ordered input.
            state.lambdas = np.full(self.space.dim, np.nan)
            state.transformed = np.empty(self.values.shape)
            state.scaled = np.empty(self.values.shape)
            state.changed = set()  # columns the fast scorer has not seen yet
        for j in np.flatnonzero(lambdas != state.lambdas):
            state.changed.add(int(j))
            column = self._power_column(int(j), float(lambdas[j]))
            state.transformed[:, j] = column
            state.scaled[:, j] = _numerics.scale_column(column)
        state.lambdas = lambdas.copy()
        return self.values, state.transformed, state.scaled

    def _power_column(self, j: int, lam: float) -> np.ndarray:
        if self.method != "box-cox":
            return _numerics.power_column(self.values[:, j], lam, self.method)
        if self._log_columns is None:  # log Z per column, contiguous: searches revisit columns
            self._log_columns = np.ascontiguousarray(np.log(self.values).T)
        return _numerics.boxcox_from_log(self._log_columns[j], lam)

    def _score(
        self,
        values: np.ndarray,
        transformed: np.ndarray,
        scaled: np.ndarray,
        lambdas: np.ndarray,
    ) -> float:
        if isinstance(self.scoring, str) and self.scoring in CRITERIA:
            return float(self._score_fn(values, transformed, scaled, lambdas))
        fast = self._fast_scorer(scaled)
        if fast is not None:
            score = fast.score()
            if score is not None:
                return float(score)
        return self.score_features(scaled)

    def _fast_scorer(self, scaled: np.ndarray) -> Any:
        """This thread's exact specialised scorer, synced with ``scaled``, or None (generic path)."""
        if not self.fast or self._splits is not None:
            return None
        state = self._local
        scorer = getattr(state, "fast", None)
        if scorer is None:
            from optuna_boxcox._evaluators import make_fast_scorer

            scorer = make_fast_scorer(self.estimator, self.y, self._score_fn) or False
            state.fast = scorer
            if scorer:
                scorer.reset(scaled)
                state.changed.clear()
        if not scorer:
            return None
        for j in sorted(state.changed):
            scorer.set_column(j, scaled[:, j])
        state.changed.clear()
        return scorer

    def score_features(self, features: np.ndarray) -> float:
        """The objective's classifier score on a ready feature matrix (one row per training sample).

        This is how other transforms (StandardScaler, PowerTransformer, …) are scored the same way
        as a Λ; classifier-free criteria need the Box-Cox internals and are refused here.
        """
        if isinstance(self.scoring, str) and self.scoring in CRITERIA:
            raise ValueError(f"scoring {self.scoring!r} scores Box-Cox λ, not arbitrary features")
        if self._splits is None:
            model = clone(self.estimator).fit(features, self.y)
            return float(self._score_fn(self.y, model.predict(features)))
        scores = []
        for train, test in self._splits:
            model = clone(self.estimator).fit(features[train], self.y[train])
            scores.append(self._score_fn(self.y[test], model.predict(features[test])))
        return float(np.mean(scores))

    # -- argument resolution ---------------------------------------------------------------
    def _resolve_scoring(self, scoring: Any) -> Callable[..., float]:
        if callable(scoring):
            return scoring
        if scoring in METRICS:
            return METRICS[scoring]
        if scoring in CRITERIA:
            return self._criterion(scoring)
        raise ValueError(
            f"unknown scoring {scoring!r}; choose one of {sorted(METRICS) + list(CRITERIA)} "
            "or pass a callable metric(y_true, y_pred)"
        )

    def _criterion(self, name: str) -> Callable[..., float]:
        from optuna_boxcox import _criteria

        method, y = self.method, self.y
        if name == "ml":
            return lambda v, t, s, lam: _criteria.log_likelihood(v, t, lam, method)
        if name == "pcml":
            return lambda v, t, s, lam: _criteria.per_class_log_likelihood(v, t, lam, y, method)
        if name == "fisher":
            return lambda v, t, s, lam: _criteria.fisher_criterion(s, y)
        return lambda v, t, s, lam: _criteria.nn_margin(s, y)

    def _resolve_cv(
        self, cv: Any, random_state: int | None
    ) -> list[tuple[np.ndarray, np.ndarray]] | None:
        if cv is None or cv == "resubstitution":
            return None
        if isinstance(cv, (int, np.integer)):
            if cv < 2:
                raise ValueError(f"cv must be at least 2 folds, got {cv}")
            cv = StratifiedKFold(int(cv), shuffle=True, random_state=random_state)
        if not hasattr(cv, "split"):
            raise ValueError(f"cv must be None, an int or a scikit-learn splitter, got {cv!r}")
        return [(train, test) for train, test in cv.split(self.X, self.y)]

    def _resolve_bounds(self, bounds: Any, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if bounds is None:
            return default_bounds(start)
        p = len(self.names)
        if hasattr(bounds, "keys"):
            missing = [n for n in self.names if n not in bounds]
            if missing:
                raise ValueError(f"bounds lack the features {missing}")
            pairs = [bounds[n] for n in self.names]
        else:
            pairs = [bounds] * p
        low = np.array([float(lo) for lo, _ in pairs])
        high = np.array([float(hi) for _, hi in pairs])
        if np.any(low >= high):
            raise ValueError(
                f"λ bounds must be given as (low, high) with low < high, got {bounds}"
            )
        return low, high


def _feature_names(X: Any) -> list[str]:
    columns = getattr(X, "columns", None)
    if columns is not None:
        names = [str(c) for c in columns]
        if len(set(names)) == len(names):
            return names
        raise ValueError("X has duplicate column names; each λ parameter is named after one")
    n_features = np.shape(X)[1] if np.ndim(X) == 2 else 0
    return [f"lambda_{j}" for j in range(n_features)]
