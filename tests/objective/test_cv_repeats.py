"""Repeated inner folds (``cv_repeats``): a Λ's score is the mean over every fold of every repeat,
as a plain loop over scikit-learn's ``RepeatedStratifiedKFold`` computes it; the repeats are
part of the experiment, so a study searched with other repeats is refused."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from sklearn.datasets import load_wine
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import SearchSpec
from optuna_boxcox import StudyMismatch

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True, as_frame=True)
    return X.iloc[:, :5], y


@pytest.mark.parametrize("estimator", [GaussianNB(), KNeighborsClassifier()])
def test_a_score_is_the_mean_over_every_fold_of_every_repeat(wine, estimator):
    X, y = wine
    spec = SearchSpec(estimator, cv=4, cv_repeats=3, seed=7)
    objective = BoxCoxObjective.from_spec(spec, X, y)
    score = objective.evaluate(objective.to_point(objective.initial_params))
    transformed = objective.transform(objective.mle_lambdas)
    folds = RepeatedStratifiedKFold(n_splits=4, n_repeats=3, random_state=7)
    expected = [
        np.mean(
            estimator.fit(transformed[train], y.iloc[train]).predict(transformed[test])
            == y.iloc[test]
        )
        for train, test in folds.split(transformed, y)
    ]
    assert len(expected) == 12
    assert score == pytest.approx(np.mean(expected), abs=1e-12)


def test_one_repeat_is_the_plain_folds_and_keeps_the_old_record(wine):
    X, y = wine
    once = BoxCoxObjective.from_spec(SearchSpec(GaussianNB(), cv=4, cv_repeats=1), X, y)
    plain = BoxCoxObjective(X, y, GaussianNB(), cv=4)
    point = plain.to_point(plain.initial_params)
    assert once.evaluate(point) == plain.evaluate(point)
    assert "cv_repeats" not in once.spec.to_dict()  # studies recorded before it read the same


def test_other_repeats_are_another_experiment(wine):
    X, y = wine
    study = optuna.create_study(direction="maximize")
    spec = SearchSpec(GaussianNB(), cv=3, cv_repeats=2)
    study.optimize(BoxCoxObjective.from_spec(spec, X, y), n_trials=2)
    other = BoxCoxObjective.from_spec(SearchSpec(GaussianNB(), cv=3), X, y)
    with pytest.raises(StudyMismatch, match="cv repeats: 2 there, 1 here"):
        other.register(study)


def test_repeats_need_folds(wine):
    X, y = wine
    with pytest.raises(ValueError, match=r"cv_repeats repeats the inner folds of cv given as"):
        BoxCoxObjective.from_spec(SearchSpec(GaussianNB(), cv_repeats=2), X, y)


def test_the_estimator_and_the_command_take_the_repeats(wine, tmp_path, capsys):
    X, y = wine
    model = BoxCoxClassifier(GaussianNB(), cv=3, cv_repeats=2, sampler="coordinate").fit(X, y)
    assert model.study_.user_attrs["boxcox_spec"]["cv_repeats"] == 2
    with pytest.raises(ValueError, match="cv_repeats"):
        BoxCoxClassifier(GaussianNB(), cv=3, cv_repeats=0).fit(X, y)

    from optuna_boxcox.cli import main

    search = [
        "search",
        "--dataset",
        "iris",
        "--classifier",
        "bayes",
        "--cv",
        "3",
        "--sampler",
        "coordinate",
        "--epochs",
        "1",
        "--no-figures",
        "--storage",
        f"sqlite:///{tmp_path / 's.db'}",
    ]
    assert main([*search, "--cv-repeats", "2"]) == 0
    # Without --cv the library's advice is worded with the command's flags.
    assert main([s for s in search if s not in ("--cv", "3")] + ["--cv-repeats", "2"]) == 2
    assert "--cv-repeats repeats the inner folds of --cv given as" in capsys.readouterr().err
    assert main([*search, "--cv-repeats", "x"]) == 2
    assert "--cv-repeats: must be a whole number of at least 1, got 'x'" in capsys.readouterr().err
