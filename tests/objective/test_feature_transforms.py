"""Per-feature transform choice: ``BoxCoxObjective(transforms=...)``.

Each feature gets a categorical ``"<feature>:transform"`` beside its λ; "identity" is the standardized
raw feature and "drop" fits the classifier without it. The default is the paper's space, recorded
exactly as before. The coordinate search sweeps a feature's transform right before its λ; Optuna's
samplers sample the choices as categorical parameters; ``objectives=("score", "n_features")`` makes
a two-objective study whose Pareto front ``search`` attaches to it.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import optuna
import pytest
from sklearn.base import clone
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import optimize
from optuna_boxcox._math._numerics import scale_column
from optuna_boxcox._math._numerics import yeojohnson_column
from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.samplers import SphericalSampler
from optuna_boxcox.samplers import make_sampler

CHOICES = ("box-cox", "identity", "drop")


@pytest.fixture(scope="module")
def cancer8(breast_cancer):
    return breast_cancer.data.iloc[:, :8], breast_cancer.target


def _point(objective, transforms, lambdas=None):
    """The vector of a point with these transforms (and λ, default the start's)."""
    params = dict(objective.initial_params)
    for name, transform in zip(objective.param_names, transforms):
        params[f"{name}:transform"] = transform
    for name, lam in zip(objective.param_names, lambdas if lambdas is not None else []):
        params[name] = lam
    return objective.to_point(params)


def _random_points(objective, n, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = objective.space.initial.copy()
        for d in range(objective.space.dim):
            if rng.random() < 0.5:
                if objective.space.kind(d) == "lambda":
                    x[d] = rng.uniform(-3.0, 3.0)
                else:
                    grid = objective.space.grid(d, 11)
                    x[d] = grid[rng.integers(len(grid))]
        yield x


def test_default_transforms_record_the_papers_space_exactly(wine4):
    X, y = wine4
    plain = BoxCoxObjective(X, y, KNeighborsClassifier())
    explicit = BoxCoxObjective(X, y, KNeighborsClassifier(), transforms=("box-cox",))
    assert plain.space.to_attr() == explicit.space.to_attr()
    assert set(plain.space.to_attr()) == {"names", "low", "high", "initial"}, (
        "a λ-only study must record the search space as it always did (old studies resume)"
    )
    assert list(plain.search_space) == list(X.columns)


def test_each_feature_gets_a_transform_parameter_right_before_its_lambda(wine4):
    X, y = wine4
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), transforms=CHOICES)
    names = list(objective.search_space)
    expected = [n for feature in X.columns for n in (f"{feature}:transform", feature)]
    assert names == expected
    distribution = objective.search_space[f"{X.columns[0]}:transform"]
    assert isinstance(distribution, optuna.distributions.CategoricalDistribution)
    assert distribution.choices == CHOICES
    assert all(objective.initial_params[f"{f}:transform"] == "box-cox" for f in X.columns), (
        "the search starts from the paper's transform of every feature"
    )
    assert objective.param_names == list(X.columns), "param_names are the λ, one per feature"


@pytest.mark.parametrize(
    "estimator",
    [KNeighborsClassifier(), GaussianNB(), SVC(), SVC(gamma="auto")],
    ids=["knn", "bayes", "svc-scale", "svc-auto"],
)
def test_fast_scores_with_dropped_and_identity_features_equal_scikit_learns(cancer8, estimator):
    X, y = cancer8
    kwargs = dict(transforms=("box-cox", "identity", "drop", "yeo-johnson"))
    fast = BoxCoxObjective(X, y, estimator, **kwargs)
    generic = BoxCoxObjective(X, y, estimator, fast=False, **kwargs)
    assert fast.evaluator != "sklearn"
    for x in _random_points(fast, 25):
        assert fast.evaluate(x) == generic.evaluate(x), fast.configuration(x)


@pytest.mark.parametrize(
    "estimator",
    [KNeighborsClassifier(), GaussianNB(), SVC(gamma="auto")],
    ids=["knn", "bayes", "svc-auto"],
)
def test_a_sweep_beside_a_dropped_feature_scores_as_one_point_at_a_time(cancer8, estimator):
    # A batch that sweeps one λ goes through the fast scorer's sweep; a dropped feature beside it
    # is a column of zeros there, which an SVC (gamma="auto" counts the columns) cannot take for
    # a dropped one: its points are scored one at a time instead.
    X, y = cancer8
    kwargs = dict(transforms=("box-cox", "identity", "drop", "yeo-johnson"))
    batched = BoxCoxObjective(X, y, estimator, **kwargs)
    one_by_one = BoxCoxObjective(X, y, estimator, **kwargs)
    transforms = ["box-cox"] * 8
    for dropped in ([], [5], [2]):
        for j in dropped:
            transforms[j] = "drop"
        start = batched.to_params(_point(batched, transforms))
        sweep = [batched.to_point({**start, X.columns[2]: lam}) for lam in np.linspace(-3, 3, 7)]
        assert batched.evaluate_batch(sweep) == [one_by_one.evaluate(x) for x in sweep]
        # A sweep of a feature's transform: the kept columns differ from point to point.
        choices = [
            batched.to_point({**start, f"{X.columns[2]}:transform": choice})
            for choice in kwargs["transforms"]
        ]
        assert batched.evaluate_batch(choices) == [one_by_one.evaluate(x) for x in choices]


def test_drop_fits_the_classifier_without_the_column(cancer8):
    # SVC's gamma="scale" reads X.var() of the whole matrix: a zero column is not a dropped one.
    X, y = cancer8
    objective = BoxCoxObjective(X, y, SVC(), transforms=CHOICES)
    transforms = ["box-cox"] * 8
    transforms[2] = transforms[5] = "drop"
    x = _point(objective, transforms)
    kept = [j for j in range(8) if transforms[j] != "drop"]
    lambdas = objective.configuration(x).lambdas
    full = BoxCoxObjective(X, y, SVC()).transform(lambdas)
    without = full[:, kept]
    expected = (clone(SVC()).fit(without, y).predict(without) == y).mean()
    assert objective.evaluate(x) == expected
    np.testing.assert_array_equal(objective.transform(x), without)
    assert objective.n_kept(x) == 6


def test_identity_is_the_standardized_raw_feature_and_yeo_johnson_the_raw_one(wine4):
    X, y = wine4
    objective = BoxCoxObjective(
        X, y, KNeighborsClassifier(), transforms=("box-cox", "identity", "yeo-johnson")
    )
    x = _point(objective, ["identity", "yeo-johnson", "box-cox", "box-cox"], [0.7, 0.5, 2.0, 1.0])
    scaled = objective.transform(x)
    raw = X.to_numpy(dtype=np.float64)
    np.testing.assert_allclose(scaled[:, 0], StandardScaler().fit_transform(raw[:, :1])[:, 0])
    np.testing.assert_array_equal(scaled[:, 1], scale_column(yeojohnson_column(raw[:, 1], 0.5)))
    # Box-Cox with λ = 1 is affine, so after scaling it is the identity (SPEC §1).
    np.testing.assert_allclose(
        objective.transform(_point(objective, ["box-cox"] * 4, [1.0] * 4))[:, 0],
        scaled[:, 0],
        atol=1e-12,
    )


def test_the_lambda_of_a_dropped_feature_is_not_refitted(wine4):
    X, y = wine4
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), transforms=CHOICES)
    points = [
        _point(objective, ["drop", "box-cox", "box-cox", "box-cox"], [lam, 1.0, 1.0, 1.0])
        for lam in np.linspace(-5, 5, 11)
    ]
    scores = objective.evaluate_batch(points)
    assert objective.n_evaluations == 1, "a λ the transform ignores cost a fit per value"
    assert len(set(scores)) == 1


def test_dropping_every_feature_scores_the_most_frequent_class(wine4):
    X, y = wine4
    objective = BoxCoxObjective(X, y, SVC(), transforms=CHOICES)
    score = objective.evaluate(_point(objective, ["drop"] * 4))
    assert score == np.mean(y == np.bincount(y).argmax())
    assert objective.n_kept(_point(objective, ["drop"] * 4)) == 0


def test_coordinate_search_sweeps_a_features_transform_before_its_lambda(wine4):
    X, y = wine4
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), transforms=CHOICES)
    sampler = CoordinateGridSampler(epochs=2, shift_epoch=2, shuffle_epoch=2, finer_epoch=2)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    result = optimize(study, objective)
    trials = study.get_trials()
    assert len(trials) == sampler.budget(objective.space) == 2 * 4 * (3 + 11)
    directions = [t.user_attrs["direction"] for t in trials[: 3 + 11 + 3]]
    first = X.columns[0]
    assert (
        directions == [f"{first}:transform"] * 3 + [first] * 11 + [f"{X.columns[1]}:transform"] * 3
    )
    assert [t.params[f"{first}:transform"] for t in trials[:3]] == list(CHOICES)
    assert result.params == {
        **result.params,
        **objective.to_params(objective.to_point(result.params)),
    }
    assert result.best_value == max(t.value for t in trials)


def test_a_shift_epoch_draws_one_of_the_choices(wine4):
    X, y = wine4
    objective = BoxCoxObjective(X, y, GaussianNB(), transforms=CHOICES)
    sampler = CoordinateGridSampler(epochs=2, shift_epoch=1, grid_size=3)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    optimize(study, objective)
    for trial in study.get_trials():
        assert all(trial.params[f"{f}:transform"] in CHOICES for f in X.columns)


@pytest.mark.parametrize("batch", [True, False])
def test_batched_and_trial_by_trial_runs_write_the_same_choices(tmp_path, wine4, batch):
    X, y = wine4
    storage = f"sqlite:///{tmp_path / 's.db'}"
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), transforms=CHOICES)
    sampler = CoordinateGridSampler(epochs=1, grid_size=3)
    study = optuna.create_study(direction="maximize", sampler=sampler, storage=storage)
    optimize(study, objective, batch=batch)
    reference = optuna.create_study(
        direction="maximize", sampler=CoordinateGridSampler(epochs=1, grid_size=3)
    )
    optimize(reference, BoxCoxObjective(X, y, KNeighborsClassifier(), transforms=CHOICES))
    stored = optuna.load_study(study_name=study.study_name, storage=storage).get_trials()
    assert [t.params for t in stored] == [t.params for t in reference.get_trials()]
    assert [t.value for t in stored] == [t.value for t in reference.get_trials()]


def test_the_papers_other_samplers_refuse_a_space_with_choices(wine4):
    X, y = wine4
    objective = BoxCoxObjective(X, y, GaussianNB(), transforms=CHOICES)
    study = optuna.create_study(direction="maximize", sampler=SphericalSampler())
    with pytest.raises(ValueError, match="searches λ only"):
        optimize(study, objective)


@pytest.mark.parametrize("name", ["tpe", "random"])
def test_optuna_samplers_sample_the_choices_as_categoricals(wine4, name):
    X, y = wine4
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), transforms=CHOICES)
    study = optuna.create_study(direction="maximize", sampler=make_sampler(name, seed=1))
    optimize(study, objective, n_trials=20)
    seen = {t.params[f"{f}:transform"] for t in study.get_trials() for f in X.columns}
    assert seen == set(CHOICES)
    for trial in study.get_trials():
        assert trial.value == objective.evaluate(trial.params)


def test_two_objectives_make_a_pareto_study_with_nsga2(wine4):
    X, y = wine4
    objective = BoxCoxObjective(
        X, y, KNeighborsClassifier(), transforms=CHOICES, objectives=("score", "n_features")
    )
    assert objective.directions == ["maximize", "minimize"]
    study = optuna.create_study(directions=objective.directions, sampler=make_sampler("nsga2"))
    optimize(study, objective, n_trials=30)
    assert study.metric_names == ["accuracy", "n_features"]
    for trial in study.get_trials():
        assert trial.values == [objective.evaluate(trial.params), objective.n_kept(trial.params)]
    assert study.best_trials, "a Pareto front"


def test_a_study_with_another_number_of_objectives_is_refused(wine4):
    X, y = wine4
    two = BoxCoxObjective(
        X, y, GaussianNB(), transforms=CHOICES, objectives=("score", "n_features")
    )
    with pytest.raises(
        ValueError, match="direction: \\['maximize'\\] there, \\['maximize', 'minimize'\\] here"
    ):
        two.register(optuna.create_study(direction="maximize"))
    study = optuna.create_study(directions=two.directions, sampler=CoordinateGridSampler())
    with pytest.raises(ValueError, match="follows one score"):
        optimize(study, two)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(transforms=("identity", "drop")), "method 'box-cox' must be one of transforms"),
        (dict(transforms=("box-cox", "log")), "transforms must be among"),
        (dict(transforms=("box-cox", "box-cox")), "must not repeat"),
        (dict(transforms=CHOICES, scoring="fisher"), "criterion of the Box-Cox λ alone"),
        (dict(objectives=("score", "n_features")), "needs 'drop' among transforms"),
        (dict(objectives=("n_features",)), "objectives must be"),
    ],
)
def test_bad_transform_arguments_say_what_is_wrong(wine4, kwargs, message):
    X, y = wine4
    with pytest.raises(ValueError, match=message):
        BoxCoxObjective(X, y, GaussianNB(), **kwargs)


def test_a_study_of_other_choices_is_refused(wine4):
    X, y = wine4
    study = optuna.create_study(direction="maximize")
    BoxCoxObjective(X, y, GaussianNB(), transforms=("box-cox", "identity", "drop")).register(study)
    other = BoxCoxObjective(X, y, GaussianNB(), transforms=("box-cox", "yeo-johnson", "drop"))
    with pytest.raises(ValueError, match="another experiment \\(transforms: "):
        other.register(study)


def test_search_attaches_the_pareto_front_to_the_study(tmp_path):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "optuna_boxcox.cli",
            "search",
            "--dataset",
            "wine",
            "--features",
            "5",
            "--classifier",
            "knn",
            "--transforms",
            "box-cox,identity,drop",
            "--sampler",
            "nsga2",
            "--n-trials",
            "30",
            "--storage",
            storage,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "Pareto front of accuracy and features kept" in run.stdout
    study = optuna.load_study(study_name="wine/knn/nsga2", storage=storage)
    assert study.directions == [
        optuna.study.StudyDirection.MAXIMIZE,
        optuna.study.StudyDirection.MINIMIZE,
    ]
    attrs = storage_of(study).get_study_system_attrs(study_id_of(study))
    assert any(k.startswith("dashboard:plot_data:pareto-front") for k in attrs), (
        "search did not attach the Pareto front for optuna-dashboard"
    )
