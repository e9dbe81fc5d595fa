"""``--n-trials`` is the study's total on the command line: the same command again resumes.

Issue 43, item 5: ``search --sampler tpe --n-trials 200`` run twice ended with 400 trials, and a
search interrupted at 218 of 300 ended with 521 once resumed. The Python API keeps Optuna's
meaning (``n_trials`` more trials per call).
"""

from __future__ import annotations

import re

import optuna
from optuna.trial import TrialState
import pytest
from sklearn.datasets import load_breast_cancer

from optuna_boxcox.cli import main
from optuna_boxcox.cli.search import add_search_arguments

NAME_TPE = re.compile(r"^study +(\S+/knn/tpe) +\((\d+) trials, (.*)\)$", re.M)


@pytest.fixture
def command(tmp_path, monkeypatch):
    """``search`` on a small CSV (6 columns of breast cancer and y), in a throw-away storage."""
    monkeypatch.chdir(tmp_path)
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X.iloc[:, :6].assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    return [
        *("search", "--csv", "data.csv", "--label", "y", "--classifier", "knn"),
        *("--storage", f"sqlite:///{tmp_path}/x.db", "--no-figures"),
    ]


def _states(storage: str, name: str) -> dict[str, int]:
    study = optuna.load_study(study_name=name, storage=storage)
    states: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        states[trial.state.name] = states.get(trial.state.name, 0) + 1
    return states


def test_the_same_tpe_command_twice_runs_its_trials_once(command, capsys):
    tpe = [*command, "--sampler", "tpe", "--n-trials", "6"]
    assert main(tpe) == 0
    first = NAME_TPE.search(capsys.readouterr().out)
    assert first and first[2] == "6", first
    assert main(tpe) == 0
    again = NAME_TPE.search(capsys.readouterr().out)
    assert again and again[2] == "6" and again[3] == "finished earlier: nothing to do", again[0]
    assert main([*command, "--sampler", "tpe", "--n-trials", "9"]) == 0  # a larger total: 3 more
    assert _states(command[command.index("--storage") + 1], first[1]) == {"COMPLETE": 9}


def test_a_resumed_tpe_search_scores_the_waiting_trial_within_its_total(command, capsys):
    # As an interrupted search leaves it: trials scored, one put back WAITING, one failed.
    tpe = [*command, "--sampler", "tpe", "--n-trials", "8"]
    assert main([*tpe[:-1], "4"]) == 0
    name = NAME_TPE.search(capsys.readouterr().out)[1]
    storage = command[command.index("--storage") + 1]
    study = optuna.load_study(study_name=name, storage=storage)
    waiting = dict(study.trials[0].params)
    study.enqueue_trial(waiting)
    study.add_trial(optuna.trial.create_trial(state=TrialState.FAIL))
    assert main(tpe) == 0
    assert _states(storage, name) == {"COMPLETE": 8, "FAIL": 1}
    trials = optuna.load_study(study_name=name, storage=storage).trials
    assert trials[4].state == TrialState.COMPLETE and trials[4].params == waiting


def test_the_paper_samplers_stop_their_plan_at_the_same_total(command, capsys):
    iterative = [*command, "--classifier", "bayes", "--sampler", "iterative", "--n-trials", "20"]
    assert main(iterative) == 0
    assert main(iterative) == 0
    out = capsys.readouterr().out
    assert "(20 trials, finished earlier: nothing to do)" in out, out
    assert "it stopped at --n-trials 20; a larger --n-trials continues it" in out, out
    assert "run the same command to continue it" not in out, out


def test_the_help_says_n_trials_is_the_studys_total():
    import argparse

    parser = argparse.ArgumentParser(prog="search")
    add_search_arguments(parser)
    shown = " ".join(parser.format_help().split())
    assert "--n-trials N_TRIALS the study's total of finished trials" in shown, shown
    assert "the same command again runs only those still missing" in shown, shown


def test_trials_another_process_writes_meanwhile_count_toward_the_total(command, monkeypatch):
    # Several processes running the same search each count what is missing when they start:
    # without a look at the study between trials, together they ran that many again.
    from optuna_boxcox._objective._objective import BoxCoxObjective

    scored = BoxCoxObjective.__call__
    calls = []

    def and_another_process(self, trial):
        calls.append(trial.number)
        if len(calls) == 2:  # another process wrote three trials meanwhile
            first = trial.study.trials[0]
            for _ in range(3):
                trial.study.add_trial(
                    optuna.trial.create_trial(
                        params=first.params, distributions=first.distributions, value=first.value
                    )
                )
        return scored(self, trial)

    monkeypatch.setattr(BoxCoxObjective, "__call__", and_another_process)
    storage = command[command.index("--storage") + 1]
    assert main([*command, "--sampler", "tpe", "--n-trials", "6"]) == 0
    (summary,) = optuna.get_all_study_summaries(storage)
    assert _states(storage, summary.study_name) == {"COMPLETE": 6}
    assert len(calls) == 3
