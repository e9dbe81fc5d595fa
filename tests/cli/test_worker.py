"""``optuna-boxcox worker`` joins a study with the study's own search spec.

Each test starts a study with ``search`` stopped early (``--n-trials``), lets ``worker`` finish it,
and compares with one uninterrupted ``search`` in a storage of its own: a worker that rebuilt
the search from some of its options only would be refused ("another experiment") or score
another objective.
"""

from __future__ import annotations

import numpy as np
import optuna
import pytest

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import SearchSpec
from optuna_boxcox.cli import main
from optuna_boxcox.cli._args import load_data_source

#: Wine's first 5 features and k-NN, the user's report: a plan of a few hundred trials.
WINE = ["--dataset", "wine", "--features", "5", "--classifier", "knn"]


def _search(storage: str, *options: str) -> None:
    status = main(["search", *options, "--storage", storage, "--study-name", "t", "--no-figures"])
    assert status == 0, f"search {' '.join(options)} exited {status}"


def _worker(storage: str, capsys: pytest.CaptureFixture, *options: str) -> None:
    capsys.readouterr()
    status = main(["worker", "--storage", storage, "--study-name", "t", *options])
    out, err = capsys.readouterr()
    assert status == 0, f"worker exited {status}: {err}"
    assert "worker done" in out


def _joined_equals_single(tmp_path, capsys, *options: str) -> None:
    joined, single = f"sqlite:///{tmp_path}/joined.db", f"sqlite:///{tmp_path}/single.db"
    _search(joined, *options, "--n-trials", "20")
    _worker(joined, capsys)
    _search(single, *options)
    by_worker = optuna.load_study(study_name="t", storage=joined)
    alone = optuna.load_study(study_name="t", storage=single)
    assert len(by_worker.trials) > 20, "the worker added no trials"
    assert by_worker.best_value == alone.best_value
    assert by_worker.best_params == alone.best_params


def test_worker_joins_a_search_of_several_transforms(tmp_path, capsys):
    _joined_equals_single(tmp_path, capsys, *WINE, "--transforms", "box-cox,identity")


def test_worker_joins_a_search_of_classifier_settings(tmp_path, capsys):
    _joined_equals_single(
        tmp_path, capsys, *WINE, "--cv", "3", "--estimator-param", "n_neighbors=int:1:9"
    )


def test_worker_joins_a_two_objective_search_and_scores_the_same_objectives(tmp_path, capsys):
    # NSGA-II draws at random, so a joined study has no single search to equal: each trial the
    # worker wrote must hold the spec's score and feature count of its point.
    storage = f"sqlite:///{tmp_path}/pareto.db"
    options = [*WINE[:4], "--classifier", "bayes", "--sampler", "nsga2"]
    _search(storage, *options, "--transforms", "box-cox,drop", "--n-trials", "10")
    _worker(storage, capsys, "--n-trials", "20")  # the study's total, raised
    study = optuna.load_study(study_name="t", storage=storage)
    spec = SearchSpec.of_study(study)
    assert spec.objectives == ("score", "n_features")
    X, y, _ = load_data_source(**spec.source)
    objective = BoxCoxObjective.from_spec(spec, X, y)
    by_worker = [t for t in study.trials if t.number >= 10]
    assert by_worker, "the worker added no trials"
    for trial in by_worker:
        score, kept = trial.values
        assert np.isclose(score, objective.evaluate(trial.params)), trial.number
        assert kept == objective.n_kept(trial.params), trial.number


def _csv_study(tmp_path):
    """Wine's first three features as data.csv, and a study "t" of 5 trials searched on it."""
    X, y = load_data_source(dataset="wine", features=3)[:2]
    path = tmp_path / "data.csv"
    X.assign(y=y).to_csv(path, index=False)
    storage = f"sqlite:///{tmp_path}/a.db"
    _search(
        storage, "--csv", str(path), "--label", "y", "--classifier", "bayes", "--n-trials", "5"
    )
    return X, y, path, storage


def test_worker_refuses_a_csv_edited_since_the_study_began(tmp_path, capsys):
    X, y, path, storage = _csv_study(tmp_path)
    X.assign(y=np.roll(y.to_numpy(), 3)).to_csv(path, index=False)
    capsys.readouterr()
    assert main(["worker", "--storage", storage, "--study-name", "t", "--csv", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(data fingerprint: " in err, err
    assert len(optuna.load_study(study_name="t", storage=storage).trials) == 5


def test_the_worker_that_finishes_the_plan_leaves_the_note_naming_the_lambda_used(
    tmp_path, capsys
):
    # Workers draw no figures, but the study a worker finishes shows the Λ used and the decision
    # in the dashboard: its note counts every trial of the plan, not the 20 of the early search.
    from optuna_dashboard import get_note

    storage = f"sqlite:///{tmp_path}/joined.db"
    _search(storage, *WINE[:4], "--classifier", "knn", "--n-trials", "20")
    study = optuna.load_study(study_name="t", storage=storage)
    assert "| trials | 20 finished |" in get_note(study)  # --no-figures keeps the note
    _worker(storage, capsys)
    study = optuna.load_study(study_name="t", storage=storage)
    note = get_note(study)
    finished = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert f"| trials | {len(finished)} finished |" in note, note
    result = study.user_attrs["boxcox_result"]
    head = note.split("| | |")[0]
    assert "**Λ used: " in head, note
    assert result["decision"] in head, note
    names = study.user_attrs["boxcox_search_space"]["names"]
    (row,) = [line for line in head.splitlines() if line.startswith(f"| `{names[0]}` |")]
    assert row.split("|")[2] == f" {result['params'][names[0]]:.3f} ", note
    assert not _graphs(study), "a worker drew figures"
    # The README's way to the figures: search again on the finished plan, which adds no trial.
    search = ["search", *WINE[:4], "--classifier", "knn", "--storage", storage, "--study-name"]
    assert main([*search, "t"]) == 0
    study = optuna.load_study(study_name="t", storage=storage)
    assert len(study.trials) == len(finished)
    assert _graphs(study) and get_note(study) == note


def _graphs(study: optuna.Study) -> list[str]:
    """The optuna-dashboard graph attributes of the study (its attached figures)."""
    from optuna_boxcox._optuna import storage_of
    from optuna_boxcox._optuna import study_id_of

    attrs = storage_of(study).get_study_system_attrs(study_id_of(study))
    return [k for k in attrs if k.startswith("dashboard:plot_data:")]


def _recorded_csv(study: optuna.Study, path: str, label: str) -> None:
    """Make the study record another CSV file and label, as a crafted study database would."""
    import json

    from optuna_boxcox._study._spec import SPEC_ATTR

    record = json.loads(json.dumps(study.user_attrs[SPEC_ATTR]))
    record["source"].update(csv=path, label=label)
    study.set_user_attr(SPEC_ATTR, record)


def test_worker_opens_no_file_a_study_records_unless_told_to(tmp_path, capsys):
    """A study records the CSV it was made from; a crafted one named a secret file, which the
    worker opened and quoted the first line of in its error. It opens only a file the user names
    with --csv, and says so in one line, quoting no file."""
    storage = _csv_study(tmp_path)[3]
    secret = tmp_path / "secret.txt"
    secret.write_text("password=hunter2,token=abc\n1,2\n")
    _recorded_csv(optuna.load_study(study_name="t", storage=storage), str(secret), "y")
    capsys.readouterr()
    assert main(["worker", "--storage", storage, "--study-name", "t"]) == 2
    out, err = capsys.readouterr()
    assert "hunter2" not in out + err, "the worker printed a line of a file the study named"
    assert err.count("\n") == 1 and "--csv" in err, err
    assert len(optuna.load_study(study_name="t", storage=storage).trials) == 5


def test_worker_reads_the_csv_the_user_confirms_with_the_same_flag(tmp_path, capsys):
    _, _, path, storage = _csv_study(tmp_path)
    capsys.readouterr()
    status = main(["worker", "--storage", storage, "--study-name", "t", "--csv", str(path)])
    err = capsys.readouterr().err
    assert status == 0, err
    assert len(optuna.load_study(study_name="t", storage=storage).trials) > 5


def test_worker_on_a_study_of_optunas_sampler_stops_at_the_studys_total(tmp_path, capsys):
    """``search --n-trials 12`` with TPE, then ``worker``: the worker used to run its own 100
    trials more; it stops at the study's total, as the same search again does."""
    storage = f"sqlite:///{tmp_path}/tpe.db"
    _search(storage, *WINE[:4], "--classifier", "bayes", "--sampler", "tpe", "--n-trials", "12")
    _worker(storage, capsys)
    assert len(optuna.load_study(study_name="t", storage=storage).trials) == 12
