"""BoxCoxClassifier: the paper's Algorithms 3–4 in scikit-learn and Optuna workflows.

scikit-learn's own estimator checks are in test_sklearn_checks.py.
"""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.model_selection import cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox.samplers import CoordinateGridSampler
from optuna_boxcox.samplers import SphericalSampler
from optuna_boxcox.samplers import make_sampler


def test_fixed_unit_lambdas_predict_like_standard_scaling(breast_cancer):
    X, y = breast_cancer.data, breast_cancer.target
    # A domain of width 2e-12 around 1 pins every λ at 1 (the MLE is clipped into it).
    clf = BoxCoxClassifier(SVC(), sampler="mle", bounds=(1.0 - 1e-12, 1.0 + 1e-12)).fit(X, y)
    np.testing.assert_allclose(clf.lambdas_, 1.0, atol=1e-11)
    reference = make_pipeline(StandardScaler(), SVC()).fit(X, y)
    np.testing.assert_array_equal(clf.predict(X), reference.predict(X))


def test_fitted_attributes_name_lambdas_after_features(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :4], breast_cancer.target
    clf = BoxCoxClassifier(KNeighborsClassifier(), sampler="spherical").fit(X, y)
    assert list(clf.feature_names_in_) == list(X.columns)
    assert set(clf.study_.best_params) == set(X.columns)
    assert clf.lambdas_.shape == (4,)
    assert clf.n_features_in_ == 4
    assert len(clf.study_.trials) == 11
    assert 0.0 <= clf.best_score_ <= 1.0
    assert list(clf.classes_) == [0, 1]


def test_classifier_works_in_pipeline_cross_val_and_grid_search(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :3], breast_cancer.target
    pipe = Pipeline([("clf", BoxCoxClassifier(KNeighborsClassifier(), sampler="spherical"))])
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.6)
    search = GridSearchCV(
        BoxCoxClassifier(KNeighborsClassifier(), sampler="spherical"),
        {"sampler": ["spherical", "mle"]},
        cv=2,
    ).fit(X, y)
    assert search.best_params_["sampler"] in ("spherical", "mle")


def test_classifier_records_its_study_in_a_storage(tmp_path, breast_cancer):
    X, y = breast_cancer.data.iloc[:, :3], breast_cancer.target
    url = f"sqlite:///{tmp_path / 'study.db'}"
    clf = BoxCoxClassifier(
        KNeighborsClassifier(), sampler="diagonal", storage=url, study_name="bc"
    )
    clf.fit(X, y)
    study = optuna.load_study(study_name="bc", storage=url)
    assert len(study.trials) == 3 * 11 + 1
    assert set(study.trials[0].params) == set(X.columns)


def test_unknown_sampler_name_is_a_clear_error(breast_cancer):
    X, y = breast_cancer.data.iloc[:, :3], breast_cancer.target
    with pytest.raises(ValueError, match="sampler"):
        BoxCoxClassifier(sampler="simulated-annealing").fit(X, y)


def _small(breast_cancer):
    return breast_cancer.data.iloc[:60, :3], breast_cancer.target.iloc[:60]


def test_default_sampler_is_the_papers_iterative_grid_search(breast_cancer):
    X, y = _small(breast_cancer)
    clf = BoxCoxClassifier(KNeighborsClassifier()).fit(X, y)
    assert isinstance(clf.study_.sampler, CoordinateGridSampler)
    assert clf.study_.sampler.settings() == make_sampler("coordinate").settings()
    assert len(clf.study_.trials) == 4 * 3 * 11  # E·p·L


def test_a_study_passed_as_storage_is_searched_with_its_own_sampler(breast_cancer):
    X, y = _small(breast_cancer)
    sampler = optuna.samplers.RandomSampler(seed=3)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    clf = BoxCoxClassifier(KNeighborsClassifier(), storage=study, n_trials=5).fit(X, y)
    assert clf.study_ is study
    assert study.sampler is sampler, "fit replaced the sampler of the user's study"
    assert len(study.trials) == 5
    assert clf.best_score_ == study.best_value


def test_a_study_with_a_paper_sampler_runs_its_budget_and_result(breast_cancer):
    X, y = _small(breast_cancer)
    study = optuna.create_study(direction="maximize", sampler=SphericalSampler())
    clf = BoxCoxClassifier(KNeighborsClassifier(), storage=study).fit(X, y)
    assert len(study.trials) == 11  # Algorithm 7: one trial per grid value
    assert np.all(clf.lambdas_ == clf.lambdas_[0]), "the spherical search gives one λ to all"


@pytest.mark.parametrize(
    "sampler", ["tpe", optuna.samplers.RandomSampler(seed=0)], ids=["tpe", "RandomSampler"]
)
def test_a_sampler_given_with_a_study_is_refused_and_the_study_left_alone(breast_cancer, sampler):
    X, y = _small(breast_cancer)
    own = optuna.samplers.TPESampler(seed=0)
    study = optuna.create_study(direction="maximize", sampler=own)
    with pytest.raises(
        ValueError, match=r"conflicts with the study passed as storage.*TPESampler"
    ):
        BoxCoxClassifier(KNeighborsClassifier(), sampler=sampler, storage=study).fit(X, y)
    assert study.sampler is own and study.trials == []


def test_a_minimising_study_is_refused(breast_cancer):
    X, y = _small(breast_cancer)
    study = optuna.create_study(direction="minimize")
    with pytest.raises(ValueError, match=r"direction\(s\) \['minimize'\].*direction='maximize'"):
        BoxCoxClassifier(KNeighborsClassifier(), storage=study).fit(X, y)
    assert study.trials == []


def test_a_study_name_other_than_the_studys_own_is_refused(breast_cancer):
    X, y = _small(breast_cancer)
    study = optuna.create_study(direction="maximize", study_name="mine")
    with pytest.raises(ValueError, match=r"study_name='other' differs .* \('mine'\)"):
        BoxCoxClassifier(KNeighborsClassifier(), storage=study, study_name="other").fit(X, y)


def test_a_plan_stopped_before_its_first_batch_keeps_its_best_trial(breast_cancer):
    X, y = _small(breast_cancer)
    # The diagonal search's first batch is all p·L single-direction sweeps; 5 trials end inside it.
    clf = BoxCoxClassifier(KNeighborsClassifier(), sampler="diagonal", n_trials=5).fit(X, y)
    assert len(clf.study_.trials) == 5
    assert clf.best_score_ == clf.study_.best_value
    np.testing.assert_array_equal(clf.lambdas_, list(clf.study_.best_params.values()))


def test_a_subsampled_search_scores_few_rows_and_the_model_is_fitted_on_all(breast_cancer):
    from sklearn.naive_bayes import GaussianNB

    X, y = breast_cancer.data, breast_cancer.target
    clf = BoxCoxClassifier(GaussianNB(), sampler="spherical", subsample=120).fit(X, y)
    described = clf.study_.user_attrs["boxcox_evaluator"]
    assert described["n_scored"] == 120 and described["n_samples"] == len(X)
    # The transform and the classifier saw every row.
    np.testing.assert_array_equal(clf.transformer_.data_min_, X.min().to_numpy())
    assert clf.estimator_.class_count_.sum() == len(X)


def test_a_search_with_a_fidelity_prunes_trials_and_fits_the_model_on_all_rows(breast_cancer):
    from optuna.trial import TrialState
    from sklearn.naive_bayes import GaussianNB

    X, y = breast_cancer.data, breast_cancer.target
    clf = BoxCoxClassifier(GaussianNB(), sampler="tpe", n_trials=30, fidelity=60).fit(X, y)
    assert clf.get_params()["fidelity"] == 60
    assert clf.study_.user_attrs["boxcox_spec"]["fidelity"]["min_rows"] == 60
    states = [t.state for t in clf.study_.trials]
    assert TrialState.PRUNED in states and TrialState.COMPLETE in states
    # The best trial's value is its score on all rows (the top rung).
    assert max(clf.study_.trials[-1].intermediate_values) in (60, 180, 540, len(X))
    assert clf.best_score_ == clf.study_.best_value
    assert len(clf.study_.best_trial.intermediate_values) == 4
    assert clf.estimator_.class_count_.sum() == len(X)


def test_a_fit_leaves_a_note_on_its_study_naming_the_lambda_used(tmp_path, breast_cancer):
    # The dashboard shows every study the package makes with the Λ used and the decision in
    # words: a fit's study too (the note only, by default: the figures cost a fit more than 10 %).
    from optuna_dashboard import get_note

    from optuna_boxcox._study._decision import NAMES

    X, y = breast_cancer.data.iloc[:, :3], breast_cancer.target
    url = f"sqlite:///{tmp_path / 'study.db'}"
    clf = BoxCoxClassifier(GaussianNB(), storage=url, study_name="bc").fit(X, y)
    study = optuna.load_study(study_name="bc", storage=url)
    note = get_note(study)
    head = note.split("| | |")[0]
    assert f"**Λ used: {NAMES[clf.decision_['chosen']]}**" in head, note
    for name, used in zip(X.columns, clf.lambdas_):
        (row,) = [line for line in head.splitlines() if line.startswith(f"| `{name}` |")]
        assert row.split("|")[2] == f" {used:.3f} ", note
    assert "| classifier | GaussianNB |" in note
    assert not _graphs(study), "figures drawn by default"


def test_a_fit_with_figures_attaches_them_beside_the_note(breast_cancer):
    from optuna_dashboard import get_note

    X, y = breast_cancer.data.iloc[:, :2], breast_cancer.target
    clf = BoxCoxClassifier(GaussianNB(), sampler="diagonal", figures=True).fit(X, y)
    graphs = _graphs(clf.study_)
    assert any(k.startswith("dashboard:plot_data:transform:") for k in graphs), graphs
    assert "**Λ used: the searched Λ** (trial " in get_note(clf.study_)


def _graphs(study: optuna.Study) -> list[str]:
    """The optuna-dashboard graph attributes of the study (its attached figures)."""
    from optuna_boxcox._optuna import storage_of
    from optuna_boxcox._optuna import study_id_of

    attrs = storage_of(study).get_study_system_attrs(study_id_of(study))
    return [k for k in attrs if k.startswith("dashboard:plot_data:")]
