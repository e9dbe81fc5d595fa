"""What a new user met on a fresh clone (issue #54): each test fails on the commit before its
fix."""

from __future__ import annotations

import re

import optuna

from optuna_boxcox.cli import main


def test_a_bounded_runs_last_progress_line_does_not_read_as_unfinished(
    tmp_path, capsys, monkeypatch
):
    # "search: 50/1,320 trials (4 %), 7.9 trials/s, about 2 min 41 s left" was the last line
    # after --n-trials 50 was reached.
    monkeypatch.chdir(tmp_path)
    args = ["search", "--dataset", "iris", "--classifier", "bayes", "--sampler", "iterative"]
    assert main([*args, "--n-trials", "20", "--no-figures"]) == 0
    last = [line for line in capsys.readouterr().err.splitlines() if line.startswith("search:")][
        -1
    ]
    assert re.fullmatch(r"search: 20/176 trials \(11 %\), .* elapsed, 156 trials not run", last), (
        last
    )


def test_data_too_small_for_the_gates_folds_are_judged_by_a_rule_that_fits_saying_which(
    tmp_path, capsys, monkeypatch
):
    # A 4-row CSV of two classes ran the gate's 5x2 CV, every candidate scoring 0.5, and the
    # user was not told the data were too small to judge.
    monkeypatch.chdir(tmp_path)
    rows = "a,b,y\n1.0,2.0,0\n2.0,3.5,0\n3.0,1.5,1\n4.0,5.0,1\n"
    (tmp_path / "bc4.csv").write_text(rows)
    args = ["search", "--csv", "bc4.csv", "--label", "y", "--classifier", "svc", "--no-figures"]
    assert main(args) == 0
    decision = [
        line for line in capsys.readouterr().out.splitlines() if line.startswith("decision")
    ]
    assert decision == [
        "decision   anchor ones used, not gated (the smallest class has 2 rows, too few for the "
        "gate's 5 held-out folds)"
    ]


def test_the_dashboards_first_page_of_attributes_says_which_lambda_was_used(
    tmp_path, capsys, monkeypatch
):
    # optuna-dashboard's Best Trial card shows the searched Λ even when the gate used an anchor;
    # the decision was raw JSON on the second page of the study's attributes.
    from optuna_boxcox._optuna import study_id_of
    from optuna_boxcox.storage import open_storage

    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'g.db'}"
    args = ["search", "--dataset", "wine", "--features", "4", "--classifier", "knn"]
    assert main([*args, "--storage", url, "--no-figures"]) == 0
    assert "decision   anchor ones used" in capsys.readouterr().out
    storage = open_storage(url)  # what the dashboard reads, in its order
    study = optuna.load_study(study_name="wine/knn/guarded", storage=storage)
    # The dashboard lists them as the backend stores them (in the order written); a reader that
    # sorts them by key finds it first too. Its table shows 5 rows a page.
    (frozen,) = storage.get_all_studies()
    assert "boxcox_chosen" in list(frozen.user_attrs)[:5]
    attrs = storage.get_study_user_attrs(study_id_of(study))
    assert "boxcox_chosen" in sorted(attrs)[:5]
    best = study.best_trial.number
    assert attrs["boxcox_chosen"] == (
        f"Λ = 1 (standard scaling), the gate's choice; not the Best Trial's searched Λ (number "
        f"{best}): alcohol 1, malic_acid 1, ash 1, alcalinity_of_ash 1"
    )


def test_a_guarded_search_the_gate_cannot_judge_says_nothing_of_a_choice(tmp_path, monkeypatch):
    # With transforms searched the gate does not run: no "not yet decided" is left behind.
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 't.db'}"
    args = ["search", "--dataset", "iris", "--classifier", "bayes", "--epochs", "1"]
    args += ["--transforms", "box-cox,identity", "--storage", url, "--no-figures"]
    assert main(args) == 0
    (summary,) = optuna.get_all_study_summaries(url)
    assert "boxcox_chosen" not in summary.user_attrs
