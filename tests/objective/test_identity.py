"""A study continued is the same experiment, or it is refused in one line (or a fresh one starts).

The identity matrix: labels changed, rows added, a column reordered, classifier, classifier
parameter, scoring, cv, direction, a study not made by optuna-boxcox, and BoxCoxClassifier reusing
a study. None may report the old study's result as the new search's.
"""

from __future__ import annotations

import numpy as np
import optuna
import pandas as pd
import pytest
from sklearn.datasets import load_wine
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import StudyMismatch
from optuna_boxcox.cli import main

#: A quick search on a CSV: naive Bayes, the iterative preset (132 trials on 3 features).
SEARCH = ["search", "--label", "y", "--classifier", "bayes", "--sampler", "iterative"]


@pytest.fixture
def wine_csv(tmp_path):
    X, y = load_wine(return_X_y=True, as_frame=True)
    frame = X.iloc[:, :3].assign(y=y)
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path, frame


def _run(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def _best(out: str) -> str:
    line = next(line for line in out.splitlines() if "Box-Cox search" in line)
    return line.split("Box-Cox search")[1].strip()


def _refused(capsys, field: str, *args: str) -> str:
    status, _, err = _run(capsys, *args)
    assert status == 2, f"expected a refusal naming {field!r}, the search ran:\n{err}"
    lines = err.strip().splitlines()
    assert len(lines) == 1, f"the user should see one line:\n{err}"
    assert f"another experiment ({field}: " in lines[0], lines[0]
    assert "--restart" in lines[0], f"the refusal should say how to start over: {lines[0]}"
    return lines[0]


def _named(path, storage: str, *more: str) -> list[str]:
    return [*SEARCH, "--csv", str(path), "--storage", storage, "--study-name", "s", *more]


def test_edited_labels_under_the_default_name_start_a_fresh_study(tmp_path, capsys, wine_csv):
    path, frame = wine_csv
    storage = f"sqlite:///{tmp_path}/a.db"
    command = [*SEARCH, "--csv", str(path), "--storage", storage, "--no-figures"]
    assert _run(capsys, *command)[0] == 0
    frame.assign(y=np.roll(frame["y"].to_numpy(), 7)).to_csv(path, index=False)
    status, edited, _ = _run(capsys, *command)
    assert status == 0
    assert "nothing to do" not in edited, "the edited file was answered with the old study"
    fresh = _run(capsys, *[*command[:-3], "--storage", f"sqlite:///{tmp_path}/b.db"])[1]
    assert _best(edited) == _best(fresh)
    assert len(optuna.get_all_study_names(storage)) == 2


def test_edited_labels_under_a_named_study_are_refused(tmp_path, capsys, wine_csv):
    path, frame = wine_csv
    storage = f"sqlite:///{tmp_path}/a.db"
    assert _run(capsys, *_named(path, storage, "--no-figures"))[0] == 0
    frame.assign(y=np.roll(frame["y"].to_numpy(), 7)).to_csv(path, index=False)
    _refused(capsys, "data fingerprint", *_named(path, storage))
    # --restart starts the named study over on the new data: the fresh result.
    status, restarted, _ = _run(capsys, *_named(path, storage, "--restart", "--no-figures"))
    assert status == 0
    fresh = _run(capsys, *_named(path, f"sqlite:///{tmp_path}/b.db", "--no-figures"))[1]
    assert _best(restarted) == _best(fresh)


def test_added_rows_are_refused(tmp_path, capsys, wine_csv):
    path, frame = wine_csv
    storage = f"sqlite:///{tmp_path}/a.db"
    assert _run(capsys, *_named(path, storage, "--no-figures"))[0] == 0
    pd.concat([frame, frame.iloc[:5]]).to_csv(path, index=False)
    _refused(capsys, "data fingerprint", *_named(path, storage))


def test_a_reordered_column_is_refused(tmp_path, capsys, wine_csv):
    path, frame = wine_csv
    storage = f"sqlite:///{tmp_path}/a.db"
    assert _run(capsys, *_named(path, storage, "--no-figures"))[0] == 0
    columns = list(frame.columns)
    frame[[columns[1], columns[0], *columns[2:]]].to_csv(path, index=False)
    _refused(capsys, "columns", *_named(path, storage))


@pytest.mark.parametrize(
    "field, changed",
    [
        ("classifier", ["--classifier", "knn"]),
        ("scoring", ["--scoring", "mcc"]),
        ("cv", ["--cv", "3"]),
        # Made with the default (auto): exact asked for explicitly is another experiment.
        ("fidelity", ["--fidelity", "exact"]),
        ("fidelity", ["--fidelity", "50"]),
    ],
)
def test_another_classifier_scoring_or_cv_is_refused(tmp_path, capsys, wine_csv, field, changed):
    path, _ = wine_csv
    storage = f"sqlite:///{tmp_path}/a.db"
    assert _run(capsys, *_named(path, storage, "--no-figures"))[0] == 0
    _refused(capsys, field, *_named(path, storage), *changed)


def test_another_classifier_parameter_is_refused():
    X, y = load_wine(return_X_y=True, as_frame=True)
    X = X.iloc[:, :3]
    study = optuna.create_study(direction="maximize")
    study.optimize(BoxCoxObjective(X, y, KNeighborsClassifier(n_neighbors=5)), n_trials=2)
    with pytest.raises(StudyMismatch, match="classifier parameters: ") as refusal:
        BoxCoxObjective(X, y, KNeighborsClassifier(n_neighbors=3)).register(study)
    assert "n_neighbors" in str(refusal.value.recorded)


def test_a_minimising_study_of_the_user_is_refused(tmp_path, capsys, wine_csv):
    path, _ = wine_csv
    storage = f"sqlite:///{tmp_path}/a.db"
    optuna.create_study(storage=storage, study_name="s", direction="minimize")
    line = _refused(capsys, "direction", *_named(path, storage))
    assert "minimize" in line


def test_a_foreign_study_with_trials_is_refused_and_an_empty_one_taken(tmp_path, capsys, wine_csv):
    path, _ = wine_csv
    storage = f"sqlite:///{tmp_path}/a.db"
    foreign = optuna.create_study(storage=storage, study_name="s", direction="maximize")
    foreign.optimize(lambda t: t.suggest_float("f1", 0, 1) + t.suggest_float("f2", 0, 1), 3)
    status, _, err = _run(capsys, *_named(path, storage, "--sampler", "tpe", "--n-trials", "5"))
    assert status == 2, "a study of someone else's trials was taken over"
    assert err.count("\n") == 1 and "made by someone else" in err, err
    optuna.create_study(storage=storage, study_name="empty", direction="maximize")
    command = [*SEARCH, "--csv", str(path), "--storage", storage, "--study-name", "empty"]
    assert _run(capsys, *command, "--no-figures")[0] == 0


def test_box_cox_classifier_refuses_a_study_of_other_labels(tmp_path):
    X, y = load_wine(return_X_y=True, as_frame=True)
    X = X.iloc[:, :3]
    storage = f"sqlite:///{tmp_path}/a.db"
    first = BoxCoxClassifier(GaussianNB(), sampler="iterative", storage=storage, study_name="s")
    first.fit(X, y)
    again = BoxCoxClassifier(GaussianNB(), sampler="iterative", storage=storage, study_name="s")
    assert again.fit(X, y).best_score_ == first.best_score_  # the same data continue the study
    with pytest.raises(StudyMismatch, match="data fingerprint: "):
        again.fit(X, np.roll(y.to_numpy(), 7))


def test_a_spec_read_back_from_its_record_is_the_same_experiment():
    from optuna.distributions import IntDistribution

    from optuna_boxcox import SearchSpec

    X, y = load_wine(return_X_y=True, as_frame=True)
    spec = SearchSpec(
        KNeighborsClassifier(weights="distance"),
        cv=3,
        transforms=("box-cox", "identity"),
        estimator_params={"n_neighbors": IntDistribution(1, 9)},
        subsample=100,
        sampler="iterative",
        sampler_settings={"grid_range": (-4.0, 4.0)},
    )
    recorded = BoxCoxObjective.from_spec(spec, X.iloc[:, :3], y).spec
    again = SearchSpec.from_dict(recorded.to_dict())
    assert again.difference(recorded) is None
    assert again.to_dict() == recorded.to_dict()
    assert SearchSpec(KNeighborsClassifier(), cv=3).difference(recorded)[0] == "columns"


def test_other_lambda_bounds_are_another_experiment():
    X, y = load_wine(return_X_y=True, as_frame=True)
    X = X.iloc[:, :3]
    study = optuna.create_study(direction="maximize")
    study.optimize(BoxCoxObjective(X, y, GaussianNB(), bounds=(-2, 2)), n_trials=2)
    BoxCoxObjective(X, y, GaussianNB(), bounds=(-2.0, 2.0)).register(study)  # the same domain
    with pytest.raises(StudyMismatch, match="λ bounds: ") as refusal:
        BoxCoxObjective(X, y, GaussianNB(), bounds=(-3, 3)).register(study)
    assert refusal.value.recorded == [-2.0, 2.0] and refusal.value.given == [-3.0, 3.0]
    with pytest.raises(StudyMismatch, match="λ bounds: "):
        BoxCoxObjective(X, y, GaussianNB()).register(study)


def test_a_spec_recorded_before_the_bounds_were_part_of_it_continues():
    from optuna_boxcox import SearchSpec

    X, y = load_wine(return_X_y=True, as_frame=True)
    objective = BoxCoxObjective(X.iloc[:, :3], y, GaussianNB(), bounds=(-2, 2))
    record = objective.spec.to_dict()
    del record["bounds"]  # as an older optuna-boxcox wrote it: its λ space record guards them
    assert objective.spec.difference(SearchSpec.from_dict(record)) is None


def test_the_record_of_the_objectives_choices_is_rewritten_for_other_choices_not_other_memory():
    # Workers started together each have their own memory limit (and what it sizes): each
    # rewriting the record only queued them on its row. Other choices are recorded.
    X, y = load_wine(return_X_y=True, as_frame=True)
    X = X.iloc[:, :3]
    study = optuna.create_study(direction="maximize")
    first = BoxCoxObjective(X, y, GaussianNB(), memory_limit="1GiB")
    first.register(study)
    assert study.user_attrs["boxcox_evaluator"] == first.describe()
    less = BoxCoxObjective(X, y, GaussianNB(), memory_limit="512MiB")
    assert less.describe()["memory_limit"] != first.describe()["memory_limit"]
    less.register(study)
    assert study.user_attrs["boxcox_evaluator"] == first.describe()
    threads = BoxCoxObjective(X, y, GaussianNB(), memory_limit="512MiB", n_threads=2)
    threads.register(study)
    assert study.user_attrs["boxcox_evaluator"] == threads.describe()
