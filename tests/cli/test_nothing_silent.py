"""Issue #36, "nothing lost, nothing silent": one test per thing a new user saw go wrong.

Commands whose exit, signals or files matter run as a user runs them, as a subprocess of this
Python with this checkout first on its path; the others call :func:`optuna_boxcox.cli.main` in
this process, each in a temporary folder of its own.
"""

from __future__ import annotations

from pathlib import Path
import re
import signal
import sqlite3
import subprocess
import sys
import time

from cli_run import run_cli
from cli_run import user_env
import optuna
import pytest
from shared import skip_if_ignored

from optuna_boxcox.cli import main
from optuna_boxcox.storage import open_storage


def test_progress_counts_the_settings_sweeps_in_the_plan(tmp_path, capsys, monkeypatch):
    # The plan of a search that also sweeps a classifier setting was counted without that
    # setting's sweeps: "1,196/660 trials (181 %)".
    monkeypatch.chdir(tmp_path)
    args = ["search", "--dataset", "iris", "--classifier", "knn", "--grid-size", "3"]
    args += ["--epochs", "1", "--estimator-param", "weights=cat:uniform,distance", "--no-figures"]
    assert main(args) == 0
    err = capsys.readouterr().err
    # The last line (a slow machine prints others before it).
    done, total = re.findall(r"search: ([\d,]+)/([\d,]+) trials", err)[-1]
    assert done == total, err


def test_a_settings_mismatch_is_one_short_line_naming_the_first_field_and_restart(
    tmp_path, capsys, monkeypatch
):
    # Was two raw dicts of settings, ~600 characters, without --restart.
    monkeypatch.chdir(tmp_path)
    search = ["search", "--dataset", "iris", "--features", "2", "--classifier", "knn"]
    assert main([*search, "--grid-size", "1", "--no-figures"]) == 0
    capsys.readouterr()
    assert main([*search, "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 250, err
    assert "(grid_size: 1 there, 11 here)" in err and "--restart" in err, err
    assert "{" not in err, err


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_worker_on_a_finished_study_adds_no_trial(tmp_path, capsys, monkeypatch, kind):
    # Each worker run added one trial ({'phase': 'done'}): 396 → 397 → 398.
    monkeypatch.chdir(tmp_path)
    storage = f"sqlite:///{tmp_path}/a.db" if kind == "sqlite" else str(tmp_path / "a.jsonl")
    search = ["search", "--dataset", "iris", "--features", "2", "--classifier", "bayes"]
    assert main([*search, "--grid-size", "3", "--storage", storage, "--study-name", "t"]) == 0
    study = optuna.load_study(study_name="t", storage=open_storage(storage))
    before = len(study.trials)
    for _ in range(2):
        assert main(["worker", "--storage", storage, "--study-name", "t"]) == 0
    assert len(study.trials) == before
    assert f"has {before} trials" in capsys.readouterr().out


def test_ctrl_c_in_a_trial_of_optunas_samplers_fails_nothing_and_logs_no_traceback(caplog):
    # Optuna marked the interrupted trial FAIL and logged "Trial 21 failed … KeyboardInterrupt"
    # with its 25-line traceback; the command then counted that trial as done.
    from optuna_boxcox import optimize

    calls = []

    def objective(trial):
        x = trial.suggest_float("x", -1, 1)
        calls.append(x)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return x**2

    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0))
    with pytest.raises(KeyboardInterrupt):
        optimize(study, objective, n_trials=5)
    states = [t.state.name for t in study.trials]
    assert states == ["COMPLETE", "COMPLETE", "WAITING"], states
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    optimize(study, objective, n_trials=1)  # the interrupted point is scored first
    assert study.trials[2].state.name == "COMPLETE"
    assert study.trials[2].params["x"] == calls[2]


def _trials(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=1) as connection:
            return connection.execute("SELECT count(*) FROM trials").fetchone()[0]
    except sqlite3.Error:  # not created yet, or its tables not yet
        return 0


def _stopped_search(tmp_path, options, name, settle=0.0):
    """A search command (``options``) sent signal ``name`` once it has written trials (and
    ``settle`` seconds more); its exit status, stderr lines other than progress, and the study
    file."""
    db = tmp_path / "s.db"
    command = [sys.executable, "-m", "optuna_boxcox.cli", "search", *options]
    search = subprocess.Popen(
        [*command, "--storage", f"sqlite:///{db}", "--no-figures"],
        cwd=tmp_path,
        env=user_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while _trials(db) == 0 and search.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(settle)
        assert search.poll() is None, "the search ended before it could be stopped"
        search.send_signal(getattr(signal, name))
        out, err = search.communicate(timeout=60)
    finally:
        if search.poll() is None:
            search.kill()
            search.wait()
    lines = [line for line in err.splitlines() if not line.startswith("search: ")]  # progress
    return search.returncode, f"{out}\n{err}", lines, db


@pytest.mark.parametrize(("name", "status"), [("SIGTERM", 143), ("SIGHUP", 129)])
def test_sigterm_and_sighup_write_what_was_scored_in_one_line_like_ctrl_c(tmp_path, name, status):
    # SIGTERM (timeout, a batch scheduler, docker stop) ended the search with no message and
    # the scored trials not yet written lost.
    skip_if_ignored(name)
    options = ["--dataset", "breast_cancer", "--classifier", "knn", "--sampler", "combined2"]
    returncode, said, lines, db = _stopped_search(tmp_path, options, name)
    assert returncode == status, f"exit status {returncode}:\n{said}"
    assert len(lines) == 1, said
    found = re.fullmatch(
        rf"optuna-boxcox: stopped by {name} after (\d+) trials; run the same command to resume",
        lines[0],
    )
    assert found, lines[0]
    assert int(found[1]) == _trials(db) > 0


def test_a_plan_too_large_to_write_is_refused_in_one_line_before_any_trial(tmp_path, capsys):
    # 20 rows × 10,000 columns planned 440,000 trials without a word and wrote 8.6 GB in 5 min.
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    data = pd.DataFrame(rng.lognormal(size=(20, 1000)), columns=[f"f{i}" for i in range(1000)])
    data.assign(y=np.repeat([0, 1], 10)).to_csv(tmp_path / "wide.csv", index=False)
    storage = f"sqlite:///{tmp_path}/wide.db"
    search = ["search", "--csv", str(tmp_path / "wide.csv"), "--label", "y"]
    search += ["--classifier", "bayes", "--storage", storage, "--no-figures"]
    assert main(search) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "44,000 trials" in err and "--allow-large" in err and "--grid-size" in err, err
    assert not (tmp_path / "wide.db").exists(), "the refusal wrote a study"
    # Confirmed, or cut short with --n-trials, it runs.
    assert main([*search, "--n-trials", "20"]) == 0
    assert main([*search, "--allow-large", "--timeout", "1"]) == 0


def _csv(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(text)
    return str(folder / name)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--dataset", "iris", "--label", "y"], "--label names the class column of --csv"),
        (["--dataset", "iris", "--features", "100"], "--features 100: iris has 4 features"),
        (["--dataset", "iris", "--max-memory", "10"], "--max-memory 10: give a unit"),
        (
            ["--dataset", "iris", "--max-memory", "1KB"],
            "--max-memory 1KB is too small for 150 rows × 4 features",
        ),
        (["--dataset", "iris", "--cv", "1000"], "the smallest class has 50 row(s)"),
        (["--dataset", "iris", "--cv", "1"], "--cv must be at least 2"),
        (["--csv", "{tmp}/dup.csv", "--label", "y"], "names more than one column 'a'"),
        (["--csv", "{tmp}/one.csv", "--label", "y"], "one.csv has one row"),
        (["--csv", "{tmp}", "--label", "y"], "is a directory, not a CSV file"),
    ],
)
def test_what_was_accepted_without_a_word_or_misreported_is_refused_in_one_line(
    tmp_path, capsys, monkeypatch, options, said
):
    monkeypatch.chdir(tmp_path)
    _csv(tmp_path, "dup.csv", "a,a,y\n1,2,0\n2,3,1\n3,1,0\n4,2,1\n")
    _csv(tmp_path, "one.csv", "a,b,y\n1,2,0\n")
    options = [o.replace("{tmp}", str(tmp_path)) for o in options]
    assert main(["search", *options, "--classifier", "knn", "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err
    assert not (tmp_path / "studies").exists() or not list((tmp_path / "studies").iterdir())


def test_constant_columns_are_named_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _csv(tmp_path, "c.csv", "a,c,y\n1,2,0\n2,2,1\n3,2,0\n4,2,1\n5,2,0\n6,2,1\n")
    search = ["search", "--csv", path, "--label", "y", "--sampler", "random", "--n-trials", "2"]
    assert main([*search, "--no-figures"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "constant" in line]
    assert warned == [
        "optuna-boxcox: ConstantColumnWarning: constant column(s) 'c' of c.csv: no λ changes "
        "them; drop them to search the others only"
    ]


def test_sampler_names_are_case_insensitive_as_classifier_names_are(tmp_path, capsys, monkeypatch):
    # --sampler TPE made a study "iris/knn/TPE" of its own beside "iris/knn/tpe".
    monkeypatch.chdir(tmp_path)
    search = ["search", "--dataset", "iris", "--features", "2", "--n-trials", "2", "--no-figures"]
    assert main([*search, "--sampler", "TPE"]) == 0
    assert "study      iris/knn/tpe  (2 trials" in capsys.readouterr().out


def test_a_missing_absolute_storage_path_does_not_say_where_it_looked(tmp_path, capsys):
    assert main(["dashboard", str(tmp_path / "nope.db")]) == 1
    err = capsys.readouterr().err
    assert "no study storage at" in err and "looked in" not in err, err


def test_an_unknown_estimator_param_is_one_line_without_an_unrelated_warning(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    search = ["search", "--dataset", "iris", "--estimator-param", "foo=int:1:3", "--no-figures"]
    assert main(search) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "are not parameters of KNeighborsClassifier" in err, err


def test_the_full_grid_refusal_names_the_options_that_exist(tmp_path, capsys, monkeypatch):
    # It advised raising max_points, which has no option; --n-trials works.
    monkeypatch.chdir(tmp_path)
    assert main(["search", "--dataset", "iris", "--sampler", "grid", "--no-figures"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 1 and "--n-trials" in err[0] and "raise max_points" not in err[0], err


def test_qmc_says_nothing_of_being_experimental(tmp_path):
    # As a user runs it: the tests' own configuration ignores Optuna's ExperimentalWarning.
    search = ["search", "--dataset", "iris", "--features", "2", "--sampler", "qmc"]
    done = run_cli(*search, "--n-trials", "2", "--no-figures", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Experimental" not in done.stderr, done.stderr


def test_the_lambda_table_aligns_short_and_wide_feature_names(tmp_path, capsys, monkeypatch):
    from optuna_boxcox._system._text import display_width

    monkeypatch.chdir(tmp_path)
    path = _csv(tmp_path, "w.csv", "a,日本,y\n1,2,0\n2,3,1\n3,1,0\n4,5,1\n5,2,0\n6,3,1\n")
    search = ["search", "--csv", path, "--label", "y", "--classifier", "bayes", "--no-figures"]
    assert main(search) == 0
    out = capsys.readouterr().out.splitlines()
    table = out[out.index("λ by feature:") + 1 :][:3]
    assert [display_width(line) for line in table] == [display_width(table[0])] * 3, table


def test_benchmark_names_a_missing_csv_instead_of_asking_for_two(tmp_path, capsys):
    missing = tmp_path / "nonexist.csv"
    assert main(["benchmark", "--datasets", f"csv:{missing}", "--classifiers", "knn"]) == 2
    err = capsys.readouterr().err
    assert err == f"optuna-boxcox: error: --datasets: CSV file not found: {missing}\n", err


def test_png_figures_not_written_says_why_even_when_the_error_is_blank(tmp_path, monkeypatch):
    # "PNG figures not written (RuntimeError: )": the reason was the error's empty first line.
    import plotly.graph_objects as go
    import plotly.io as pio

    from optuna_boxcox import figures

    def fail(*_args, **_kwargs):
        raise RuntimeError("\n\nChrome not found\n")

    monkeypatch.setattr(pio, "write_images", fail)
    with pytest.warns(RuntimeWarning) as warned:
        assert figures.write_figures({"a": go.Figure()}, tmp_path, formats=("png",)) == []
    assert "(RuntimeError: Chrome not found)" in str(warned[0].message)


def test_n_jobs_as_threads_of_study_optimize_is_capped_at_the_usable_cores(monkeypatch):
    from optuna_boxcox import optimize
    from optuna_boxcox._system import _parallel

    monkeypatch.setattr(_parallel, "usable_cores", lambda: 2)
    threads = set()

    def objective(trial):
        import threading

        threads.add(threading.get_ident())
        return trial.suggest_float("x", 0, 1)

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    with pytest.warns(RuntimeWarning, match="n_jobs=64 is more than the 2 CPU core"):
        optimize(study, objective, n_trials=20, n_jobs=64)
    assert len(study.trials) == 20 and len(threads) <= 2


def test_a_claim_failed_by_a_takeover_after_it_was_read_running_is_not_completed(tmp_path):
    # _claims.complete read RUNNING, then wrote COMPLETE: a heartbeat-stale takeover committed in
    # between was overwritten, and the position scored twice.
    from datetime import datetime

    from sklearn.datasets import load_iris
    from sklearn.naive_bayes import GaussianNB

    from optuna_boxcox import BoxCoxObjective
    from optuna_boxcox._optuna import _claims
    from optuna_boxcox._optuna import _sql
    from optuna_boxcox.samplers import PlanRun
    from optuna_boxcox.samplers import make_sampler

    X, y = load_iris(return_X_y=True, as_frame=True)
    study = optuna.create_study(
        storage=f"sqlite:///{tmp_path}/c.db",
        sampler=make_sampler("iterative"),
        direction="maximize",
    )
    objective = BoxCoxObjective(X, y, GaussianNB())
    objective.register(study)
    (claimed,) = _claims.claim(
        study,
        [_claims.Claim(0, objective.space.to_params(objective.space.initial), {})],
        objective.space.distributions(),
        position_key=PlanRun.position_key,
        owner="elsewhere:1:1",
    )
    call = _sql.Sql.__call__

    def takeover_after_the_read(self, statement, parameters=()):
        rows = call(self, statement, parameters)
        if statement.startswith("SELECT trial_id FROM trials"):
            call(self, "UPDATE trials SET state = 'FAIL' WHERE trial_id = ?", (claimed.trial_id,))
        return rows

    done = (claimed, 0.9, {}, datetime.now(), optuna.trial.TrialState.COMPLETE, None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_sql.Sql, "__call__", takeover_after_the_read)
        _claims.complete(study, [done])
    (trial,) = study.get_trials()
    assert trial.state.name == "FAIL" and trial.value is None


def test_compares_fixed_transforms_study_shows_its_scores_not_an_empty_minimize_study(
    tmp_path, capsys, monkeypatch
):
    # The fixed transforms' study held no trial and said "minimize" in the dashboard.
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'c.db'}"
    compare = ["compare", "--dataset", "iris", "--samplers", "random", "--seeds", "1"]
    assert (
        main([*compare, "--n-trials", "3", "--transforms", "raw,standard", "--storage", url]) == 0
    )
    err = capsys.readouterr().err
    assert "2/2 tasks (100 %)" in err, err
    fixed = optuna.load_study(study_name="iris/knn/fixed", storage=url)
    assert fixed.direction == optuna.study.StudyDirection.MAXIMIZE
    shown = {t.user_attrs["transform"]: t.value for t in fixed.trials}
    recorded = fixed.user_attrs["fixed_scores"]
    assert shown == {
        "raw features (no scaling)": recorded["raw"]["inner"],
        "StandardScaler": recorded["standard"]["inner"],
    }


def test_compare_plot_naming_a_directory_is_one_line(tmp_path, capsys, monkeypatch):
    # --plot '' is the current directory: IsADirectoryError after the whole comparison ran.
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "--dataset", "iris", "--samplers", "random", "--plot", ""]) == 2
    err = capsys.readouterr().err
    assert err.startswith("optuna-boxcox: error: --plot") and err.count("\n") == 1, err


def test_benchmark_summary_adds_up_to_its_progress_count(tmp_path, capsys, monkeypatch):
    # Progress said "4/4 studies" and the summary "2 run": the fixed transforms' scoring is a task.
    monkeypatch.chdir(tmp_path)
    bench = ["benchmark", "--datasets", "iris,wine", "--features", "2", "--classifiers", "knn"]
    bench += [
        "--samplers",
        "random",
        "--transforms",
        "raw",
        "--n-trials",
        "2",
        "--test-size",
        "0.3",
    ]
    bench += ["--storage", f"sqlite:///{tmp_path}/b.db", "--plot-dir", str(tmp_path)]
    assert main(bench) == 0
    captured = capsys.readouterr()
    total = re.findall(r"(\d+)/(\d+) tasks \(100 %\)", captured.err)
    summary = re.search(
        r"tasks: (\d+) searches run, (\d+) read back, (\d+) fixed-transform", captured.out
    )
    assert total and summary, (captured.out, captured.err)
    assert sum(map(int, summary.groups())) == int(total[-1][1]) == 4


def test_bench_cases_take_the_data_as_the_help_writes_it(capsys):
    from optuna_boxcox.cli.bench import _case_data

    assert _case_data("breast_cancer:8") == _case_data("breast_cancer[:8]") == "breast_cancer[:8]"
    assert _case_data("sonar") == "sonar"
    assert main(["bench", "--sections", "end-to-end", "--cases", "nope:3:bayes:iterative"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("optuna-boxcox: error: --cases: unknown DATA 'nope:3'"), err


@pytest.mark.long
def test_a_signal_during_a_fit_that_swallows_it_still_stops_the_search(tmp_path):
    # scikit-learn's MLP catches the KeyboardInterrupt a signal raises while it trains, warns
    # "Training interrupted by user" and returns: the search went on, and the next signal quit at
    # once. Most of an MLP search's time is spent in its training loop, where the signal lands.
    options = ["--dataset", "wine", "--classifier", "nn", "--sampler", "iterative"]
    returncode, said, lines, db = _stopped_search(tmp_path, options, "SIGTERM", settle=0.5)
    assert returncode == 143, f"exit status {returncode}:\n{said}"
    assert len(lines) == 1 and "stopped by SIGTERM after" in lines[0], said
    found = re.search(r"after (\d+) trials", lines[0])
    assert int(found[1]) == _trials(db) > 0


def test_a_warning_repeated_by_every_fold_is_said_once(capsys):
    import warnings

    from optuna_boxcox import cli

    with warnings.catch_warnings():
        cli._SHOWN.clear()
        warnings.simplefilter("always")
        warnings.showwarning = cli._show_warning
        for _ in range(3):
            warnings.warn("an MLP that does not converge", RuntimeWarning, stacklevel=1)
        warnings.warn("another", RuntimeWarning, stacklevel=1)
    err = capsys.readouterr().err.splitlines()
    assert err.count("optuna-boxcox: RuntimeWarning: an MLP that does not converge") == 1
    assert err.count("optuna-boxcox: RuntimeWarning: another") == 1
