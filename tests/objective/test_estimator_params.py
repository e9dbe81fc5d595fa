"""Classifier settings in the same study: ``BoxCoxObjective(estimator_params=...)``.

Each setting is a parameter ``"estimator:<name>"`` that starts at the estimator's own value; the
coordinate search sweeps it over its grid (every choice, an int range thinned to the grid size);
the fast evaluators follow the settings they cover and defer to scikit-learn for the others, with
the same scores; the command line takes ``--estimator-param NAME=SPEC``.
"""

from __future__ import annotations

import warnings

import numpy as np
import optuna
from optuna.distributions import CategoricalDistribution
from optuna.distributions import FloatDistribution
from optuna.distributions import IntDistribution
import pytest
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import SVC

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import optimize
from optuna_boxcox._study._space import LambdaSpace
from optuna_boxcox.cli._args import UsageError
from optuna_boxcox.cli._space_args import parse_estimator_param
from optuna_boxcox.samplers import CoordinateGridSampler

# Most tests search settings by resubstitution on purpose (the fast scorers must follow them
# there too); the warning that says it favours memorising is asserted once, below ("pass cv=k").
pytestmark = pytest.mark.filterwarnings(
    "ignore:classifier settings searched by resubstitution:UserWarning"
)

KNN_PARAMS = {
    "n_neighbors": IntDistribution(1, 21),
    "weights": CategoricalDistribution(["uniform", "distance"]),
}


def _with(objective, **settings):
    params = dict(objective.initial_params)
    params.update({f"estimator:{k}": v for k, v in settings.items()})
    return objective.to_point(params)


def test_settings_are_parameters_that_start_at_the_estimators_own_values(wine4):
    X, y = wine4
    objective = BoxCoxObjective(
        X, y, KNeighborsClassifier(n_neighbors=7), estimator_params=KNN_PARAMS
    )
    assert list(objective.search_space)[-2:] == ["estimator:n_neighbors", "estimator:weights"]
    assert objective.search_space["estimator:n_neighbors"] == KNN_PARAMS["n_neighbors"]
    assert objective.initial_params["estimator:n_neighbors"] == 7
    assert objective.initial_params["estimator:weights"] == "uniform"
    outside = BoxCoxObjective(
        X, y, KNeighborsClassifier(n_neighbors=40), estimator_params=KNN_PARAMS
    )
    assert outside.initial_params["estimator:n_neighbors"] == 1, "outside its range: the lowest"


def test_an_int_range_is_thinned_to_the_grid_size_and_a_categorical_kept_whole():
    space = LambdaSpace.of(
        [
            ("k", "setting", IntDistribution(1, 21), 1),
            ("few", "setting", IntDistribution(2, 6), 2),
            ("w", "setting", CategoricalDistribution(["a", "b", "c"]), "a"),
            ("c", "setting", FloatDistribution(0.01, 100.0, log=True), 0.01),
        ]
    )
    assert space.grid(0, 11).tolist() == list(range(1, 22, 2))
    assert space.grid(1, 11).tolist() == [2, 3, 4, 5, 6]
    assert space.grid(2, 2).tolist() == [0, 1, 2], "every choice, whatever the grid size"
    np.testing.assert_allclose(space.grid(3, 5), [0.01, 0.1, 1.0, 10.0, 100.0])
    assert space.to_params(space.initial) == {"k": 1, "few": 2, "w": "a", "c": 0.01}
    assert LambdaSpace.from_attr(space.to_attr()).signature() == space.signature()


@pytest.mark.parametrize(
    ("estimator", "params"),
    [
        (KNeighborsClassifier(), KNN_PARAMS),
        (
            SVC(),
            {
                "C": FloatDistribution(0.1, 10.0, log=True),
                "gamma": CategoricalDistribution(["scale", "auto", 0.5]),
            },
        ),
        (GaussianNB(), {"var_smoothing": FloatDistribution(1e-12, 1e-3, log=True)}),
    ],
    ids=["knn", "svc", "bayes"],
)
def test_fast_evaluators_follow_the_settings_with_scikit_learns_scores(
    breast_cancer, estimator, params
):
    X, y = breast_cancer.data.iloc[:, :6], breast_cancer.target
    fast = BoxCoxObjective(X, y, estimator, estimator_params=params)
    generic = BoxCoxObjective(X, y, estimator, estimator_params=params, fast=False)
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = fast.space.initial.copy()
        for d in range(fast.space.dim):
            if fast.space.kind(d) == "setting":
                grid = fast.space.grid(d, 5)
                x[d] = grid[rng.integers(len(grid))]
            elif rng.random() < 0.3:
                x[d] = rng.uniform(-3, 3)
        assert fast.evaluate(x) == generic.evaluate(x), fast.configuration(x).settings
    # A sweep of k and one of a λ under another k, as the coordinate search scores them.
    k = (
        fast.space.names.index("estimator:n_neighbors")
        if "estimator:n_neighbors" in params
        else None
    )
    if k is not None:
        sweep = [_with(fast, n_neighbors=n) for n in range(1, 22, 2)]
        assert fast.evaluate_batch(sweep) == [generic.evaluate(x) for x in sweep]
        base = _with(fast, n_neighbors=9)
        lambdas = []
        for lam in np.linspace(-5, 5, 11):
            x = base.copy()
            x[0] = lam
            lambdas.append(x)
        assert fast.evaluate_batch(lambdas) == [generic.evaluate(x) for x in lambdas]


def test_a_setting_without_a_fast_path_goes_to_scikit_learn(wine4):
    X, y = wine4
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), estimator_params=KNN_PARAMS)
    assert objective.evaluator.startswith("knn:")
    distance = _with(objective, weights="distance", n_neighbors=5)
    expected = BoxCoxObjective(
        X, y, KNeighborsClassifier(weights="distance"), fast=False
    ).evaluate(objective.configuration(distance).lambdas)
    assert objective.evaluate(distance) == expected


def test_coordinate_search_sweeps_every_setting_and_records_it_on_every_trial(wine4):
    X, y = wine4
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), estimator_params=KNN_PARAMS, cv=3)
    sampler = CoordinateGridSampler(epochs=1)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    optimize(study, objective)
    trials = study.get_trials()
    # Stage 1: the 4 λ alone; stage 2: the 4 λ, then n_neighbors (11 of 1…21) and weights (2).
    assert len(trials) == sampler.budget(objective.space) == 4 * 11 + (4 * 11 + 11 + 2)
    assert all(
        "estimator:n_neighbors" in t.params and "estimator:weights" in t.params for t in trials
    )
    k_sweep = [t for t in trials if t.user_attrs["direction"] == "estimator:n_neighbors"]
    assert [t.params["estimator:n_neighbors"] for t in k_sweep] == list(range(1, 22, 2))
    weights = [t for t in trials if t.user_attrs["direction"] == "estimator:weights"]
    assert [t.params["estimator:weights"] for t in weights] == ["uniform", "distance"]


@pytest.mark.long
@pytest.mark.parametrize(("dataset", "n_epochs"), [("wine", 2), ("breast_cancer", 1)])
def test_settings_under_cross_validation_never_score_below_the_lambda_only_search(
    dataset, n_epochs
):
    # Stage 1 is the λ-only search trial for trial; stage 2 starts from its optimum. (One epoch
    # on breast cancer's first 10 features keeps the test short.)
    from optuna_boxcox.datasets import load_dataset

    X, y = load_dataset(dataset)
    X = X.iloc[:, :10]
    epochs = dict(epochs=n_epochs, shift_epoch=2, shuffle_epoch=2, finer_epoch=2)
    plain = BoxCoxObjective(X, y, KNeighborsClassifier(), cv=5)
    tuned = BoxCoxObjective(X, y, KNeighborsClassifier(), cv=5, estimator_params=KNN_PARAMS)
    studies = {}
    for name, objective in (("plain", plain), ("tuned", tuned)):
        studies[name] = optuna.create_study(
            direction="maximize", sampler=CoordinateGridSampler(**epochs)
        )
        optimize(studies[name], objective)
    plain_trials = studies["plain"].trials
    stage1 = studies["tuned"].trials[: len(plain_trials)]
    assert [t.value for t in stage1] == [t.value for t in plain_trials]
    assert all(
        {k: v for k, v in t.params.items() if not k.startswith("estimator:")} == u.params
        and t.params["estimator:n_neighbors"] == 5
        for t, u in zip(stage1, plain_trials)
    ), "stage 1 is the λ-only search, the settings at the classifier's own values"
    assert studies["tuned"].best_value >= studies["plain"].best_value
    assert len(studies["tuned"].trials) > len(plain_trials), "stage 2 ran"


def test_searching_settings_scores_at_least_the_lambda_only_search(wine4):
    X, y = wine4
    budget = dict(epochs=2, shift_epoch=2, shuffle_epoch=2, finer_epoch=2)
    plain = BoxCoxObjective(X, y, KNeighborsClassifier(), cv=3)
    tuned = BoxCoxObjective(X, y, KNeighborsClassifier(), cv=3, estimator_params=KNN_PARAMS)
    found = {}
    for name, objective in (("plain", plain), ("tuned", tuned)):
        study = optuna.create_study(direction="maximize", sampler=CoordinateGridSampler(**budget))
        found[name] = optimize(study, objective).best_value
    assert found["tuned"] >= found["plain"]


def test_an_unknown_setting_is_refused(wine4):
    X, y = wine4
    with pytest.raises(ValueError, match="not parameters of KNeighborsClassifier"):
        BoxCoxObjective(
            X, y, KNeighborsClassifier(), estimator_params={"k": IntDistribution(1, 3)}
        )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("n_neighbors=int:1:21", ("n_neighbors", IntDistribution(1, 21))),
        ("C=float:0.01:100:log", ("C", FloatDistribution(0.01, 100.0, log=True))),
        (
            "weights=cat:uniform,distance",
            ("weights", CategoricalDistribution(["uniform", "distance"])),
        ),
        ("gamma=cat:scale,0.5", ("gamma", CategoricalDistribution(["scale", 0.5]))),
    ],
)
def test_estimator_param_specs_of_the_command_line(text, expected):
    assert parse_estimator_param(text) == expected


@pytest.mark.parametrize("text", ["n_neighbors", "k=int:1", "k=int:a:3", "k=range:1:3", "w=cat:"])
def test_a_bad_estimator_param_spec_says_what_is_expected(text):
    with pytest.raises(UsageError, match="--estimator-param"):
        parse_estimator_param(text)


def test_settings_searched_by_resubstitution_are_warned_about(wine4):
    X, y = wine4
    with pytest.warns(UserWarning, match="pass cv=k"):
        BoxCoxObjective(X, y, KNeighborsClassifier(), estimator_params=KNN_PARAMS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BoxCoxObjective(X, y, KNeighborsClassifier(), estimator_params=KNN_PARAMS, cv=3)
        BoxCoxObjective(X, y, KNeighborsClassifier())
