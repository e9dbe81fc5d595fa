"""A new user's first hour with the command line: one test per thing that went wrong.

Commands whose exit, interruption or files matter run as a user runs them, as a subprocess of this
Python with this checkout first on its path; the others call :func:`optuna_boxcox.cli.main` in
this process. Each runs in a temporary folder of its own, so the default ``studies/`` is its own.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import warnings

from cli_run import run_cli
from cli_run import user_env
import numpy as np
import optuna
import pandas as pd
import pytest
from shared import free_port

from optuna_boxcox._system import _progress
from optuna_boxcox.cli import INTERRUPTED
from optuna_boxcox.cli import main
from optuna_boxcox.samplers import make_sampler

#: A small, quick search: wine's first 3 features, naive Bayes, the iterative preset (132 trials).
SMALL = ["--dataset", "wine", "--features", "3", "--classifier", "bayes", "--sampler", "iterative"]


def _one_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, f"the user should see one line, saw {len(lines)}:\n{stderr}"
    return lines[0]


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _trials(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=1) as connection:
            return connection.execute("SELECT count(*) FROM trials").fetchone()[0]
    except sqlite3.Error:  # not created yet, or its tables not yet
        return 0


# -- 2. the study's metric is named after the scoring, not "Objective 0" ---------------------------


def test_search_names_the_study_metric_after_its_scoring(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    args = ["search", *SMALL, "--scoring", "balanced_accuracy", "--no-figures"]
    assert main([*args, "--storage", storage]) == 0
    study = optuna.load_study(study_name="wine/bayes/iterative", storage=storage)
    assert study.metric_names == ["balanced_accuracy"], "the dashboard would show 'Objective 0'"


# -- 4. a typo in a storage path is an error, never a new database ---------------------------------


@pytest.mark.parametrize("storage", ["sqlite:///no/such/dir/x.db", "no/such/dir/x.jsonl"])
def test_search_refuses_a_storage_in_a_missing_directory_and_creates_nothing(tmp_path, storage):
    run = run_cli("search", *SMALL, "--storage", storage, cwd=tmp_path)
    assert run.returncode in (1, 2), run.stderr
    line = _one_line(run.stderr)
    assert "no/such/dir" in line, f"the refusal does not name the path: {line}"
    assert _files(tmp_path) == [], "a misspelt storage path created files or folders"


@pytest.mark.parametrize(
    "storage", ["misspelt.db", "sqlite:///misspelt.db", "misspelt.jsonl", None], ids=str
)
def test_dashboard_refuses_a_storage_that_does_not_exist_and_creates_nothing(tmp_path, storage):
    # None: the default storage, from a folder where no search ran yet.
    where = [storage] if storage else []
    run = run_cli("dashboard", *where, "--port", str(free_port()), cwd=tmp_path, timeout=60)
    assert run.returncode in (1, 2), f"the dashboard started:\n{run.stdout}{run.stderr}"
    line = _one_line(run.stderr)
    named = "misspelt" if storage else "studies/optuna-boxcox.db"
    assert named in line, f"the refusal does not name the storage: {line}"
    assert _files(tmp_path) == [], "the dashboard created files for a storage that is not there"


def test_dashboard_opens_a_plain_path_to_an_sqlite_file_as_optuna_dashboard_does(tmp_path):
    from optuna_boxcox.cli.dashboard import storage_url

    db = tmp_path / "s.db"
    optuna.create_study(storage=f"sqlite:///{db}")
    assert storage_url(str(db)) == f"sqlite:///{db}"
    assert storage_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"


def test_a_refused_dashboard_answers_without_loading_scikit_learn(tmp_path):
    # Loading scikit-learn only to print a refusal took seconds of a command that is otherwise
    # instant (the error handler asked whether the error was a DataError).
    code = (
        "import sys; from optuna_boxcox.cli import main; "
        "assert main(['dashboard', 'misspelt.db']) != 0; print('sklearn' in sys.modules)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=user_env(), capture_output=True, text=True
    )
    assert run.stdout.strip() == "False", run.stdout + run.stderr


# -- 5. Ctrl-C keeps what was scored, says so in one line, and the same command resumes ------------


@pytest.mark.long
def test_ctrl_c_during_search_exits_130_in_one_line_and_the_same_command_resumes(tmp_path):
    db = tmp_path / "s.db"
    command = [
        sys.executable,
        "-m",
        "optuna_boxcox.cli",
        "search",
        "--dataset",
        "breast_cancer",
        "--classifier",
        "knn",
        "--sampler",
        "combined2",
        "--storage",
        f"sqlite:///{db}",
        "--no-figures",
    ]
    budget = make_sampler("combined2").budget(30)
    search = subprocess.Popen(
        command,
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
        assert search.poll() is None, "the search ended before it could be interrupted"
        search.send_signal(signal.SIGINT)
        out, err = search.communicate(timeout=60)
    finally:
        if search.poll() is None:
            search.kill()
            search.wait()
    assert search.returncode == INTERRUPTED, f"exit status {search.returncode}:\n{out}\n{err}"
    line = _one_line(err)
    found = re.fullmatch(
        r"optuna-boxcox: interrupted after (\d+) trials; run the same command to resume", line
    )
    assert found, line
    kept = _trials(db)
    assert 0 < kept < budget
    assert int(found[1]) == kept, "the line does not say how many trials the study holds"

    resumed = subprocess.run(command, cwd=tmp_path, env=user_env(), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"({budget} trials, " in resumed.stdout, resumed.stdout
    study = optuna.load_study(study_name="breast_cancer/knn/combined2", storage=f"sqlite:///{db}")
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == budget, "trials were lost or scored twice across the interruption"
    assert sorted(t.number for t in trials) == list(range(budget))
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)


# -- 6. a busy port is named at once, before any server starts --------------------------------------


def test_dashboard_on_a_busy_port_refuses_in_one_line_without_starting(tmp_path):
    db = tmp_path / "s.db"
    optuna.create_study(storage=f"sqlite:///{db}")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        started = time.monotonic()
        run = run_cli(
            "dashboard", f"sqlite:///{db}", "--port", str(port), cwd=tmp_path, timeout=60
        )
        seconds = time.monotonic() - started
    assert run.returncode != 0
    line = _one_line(run.stderr)
    assert f"port {port}" in line, line
    assert run.stdout == "", f"a server was announced: {run.stdout}"
    assert not (tmp_path / "artifacts").exists(), "the refused dashboard made its artifact folder"
    assert seconds < 20, f"the refusal took {seconds:.1f} s"


# -- 7. compare --n-trials: every sampler stops at the budget; another budget, other studies -------

COMPARED = "coordinate,iterative,spherical,tpe,nelder-mead,random"


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """The studies of ``compare --n-trials 30``, then of ``--n-trials 20``, and what each printed."""
    folder = tmp_path_factory.mktemp("compare")
    storage = f"sqlite:///{folder / 'c.db'}"
    printed = {}
    for n_trials in (30, 20):
        run = run_cli(
            "compare",
            *["--dataset", "wine", "--features", "3", "--classifier", "bayes", "--seeds", "1"],
            *["--samplers", COMPARED, "--n-trials", str(n_trials), "--storage", storage],
            cwd=folder,
            timeout=300,
        )
        assert run.returncode == 0, run.stderr
        printed[n_trials] = run.stdout
    counts = {s.study_name: s.n_trials for s in optuna.get_all_study_summaries(storage)}
    return counts, printed


def test_compare_stops_every_sampler_at_n_trials(compared):
    counts, _ = compared
    budget30 = {name: n for name, n in counts.items() if name.endswith("/n30")}
    assert len(budget30) == len(COMPARED.split(",")), sorted(counts)
    assert all(n <= 30 for n in budget30.values()), budget30
    assert budget30["wine/bayes/coordinate/seed0/n30"] == 30
    assert budget30["wine/bayes/iterative/seed0/n30"] == 30, "a plan sampler ran past the budget"


def test_compare_with_another_n_trials_runs_other_studies(compared):
    counts, printed = compared
    assert counts["wine/bayes/coordinate/seed0/n30"] == 30, "the first budget's study changed"
    assert counts["wine/bayes/coordinate/seed0/n20"] == 20, sorted(counts)
    assert all(n <= 20 for name, n in counts.items() if name.endswith("/n20"))
    row = next(line for line in printed[20].splitlines() if line.startswith("coordinate "))
    assert re.search(r"\s20\s", row), f"the table shows another budget's results: {row}"


# -- 8. reproduce keeps its studies apart from the user's searches ---------------------------------


def test_reproduce_writes_to_its_own_default_storage(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = ["table8", "--folds", "2", "--repeats", "1", "--classifiers", "bayes", "--rows", "mle"]
    assert main(["reproduce", *args, "--no-progress"]) == 0
    assert not (tmp_path / "studies" / "optuna-boxcox.db").exists()
    names = [
        s.study_name for s in optuna.get_all_study_summaries("sqlite:///studies/reproduce.db")
    ]
    assert names and all(n.startswith("reproduce/") for n in names), names


# -- 10. extreme values: the search warns as the transformer does -----------------------------------


def test_search_warns_in_one_line_naming_a_column_squeezed_by_one_extreme_value(tmp_path):
    rng = np.random.default_rng(0)
    data = pd.DataFrame(rng.lognormal(size=(200, 3)), columns=["a", "income", "c"])
    data.loc[5, "income"] = 1e300
    data["y"] = [0, 1] * 100
    data.to_csv(tmp_path / "d.csv", index=False)
    run = run_cli(
        *["search", "--csv", "d.csv", "--label", "y", "--classifier", "bayes"],
        *["--sampler", "iterative", "--storage", "sqlite:///s.db", "--no-figures"],
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    warned = [line for line in run.stderr.splitlines() if "extreme" in line]
    assert len(warned) == 1 and "'income'" in warned[0], run.stderr
    assert "'a'" not in warned[0] and "'c'" not in warned[0]


def test_a_warning_during_a_command_is_one_line(monkeypatch, capsys):
    from optuna_boxcox._math._numerics import ExtremeValueWarning
    from optuna_boxcox.cli import search

    def warn(args):
        message = "a few extreme values\nset the range of 'income'"
        warnings.warn(message, ExtremeValueWarning, stacklevel=2)
        return 0

    monkeypatch.setattr(search, "cmd_search", warn)
    assert main(["search"]) == 0
    assert capsys.readouterr().err == (
        "optuna-boxcox: ExtremeValueWarning: a few extreme values set the range of 'income'\n"
    )


# -- 11. progress with the time left when stderr is not a terminal ---------------------------------


@pytest.mark.parametrize(
    ("command", "unit"),
    [
        (["search", *SMALL, "--no-figures"], "trials"),
        (
            [
                *["compare", "--dataset", "wine", "--features", "3", "--classifier", "bayes"],
                *["--samplers", "coordinate,random", "--seeds", "1", "--n-trials", "20"],
            ],
            "tasks",  # a search, or the fixed transforms of one split
        ),
        (
            [
                *["reproduce", "table8", "--folds", "2", "--repeats", "1"],
                *["--classifiers", "bayes", "--rows", "mle"],
            ],
            "folds",
        ),
    ],
    ids=["search", "compare", "reproduce"],
)
def test_progress_lines_with_the_time_left_when_stderr_is_not_a_terminal(
    command, unit, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_progress, "LOG_EVERY", 0.0)  # a line at every step instead of every 10 s
    assert main([*command, "--storage", f"sqlite:///{tmp_path / 's.db'}"]) == 0
    label = command[0]
    progress = re.compile(
        rf"{label}: [\d,]+/[\d,]+ {unit} \(\d+ %\), [\d,.]+ {unit}/s, about .+ left"
    )
    lines = capsys.readouterr().err.splitlines()
    assert any(progress.fullmatch(line) for line in lines), "\n".join(lines) or "(nothing)"


def test_progress_lines_come_every_ten_seconds_by_default():
    assert _progress.LOG_EVERY == 10.0
    assert _progress.Progress(5, enabled=False).every == 10.0


# -- 12. every option of every command says what it is for: tests/package/test_cli_help.py -------


# -- 13. the paper's sampler settings on the command line ------------------------------------------


def test_search_grid_settings_set_the_number_of_trials_and_are_recorded(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    settings = ["--epochs", "1", "--grid-size", "5", "--no-figures"]
    assert main(["search", *SMALL, *settings, "--storage", storage]) == 0
    study = optuna.load_study(study_name="wine/bayes/iterative", storage=storage)
    assert len(study.trials) == 1 * 3 * 5, "E·p·L trials"
    recorded = study.user_attrs["boxcox_sampler"]["settings"]
    assert (recorded["epochs"], recorded["grid_size"]) == (1, 5), recorded
    assert study.user_attrs["boxcox_spec"]["sampler_settings"] == {"epochs": 1, "grid_size": 5}


def test_search_accepts_a_negative_grid_range_as_the_next_argument(tmp_path, capsys):
    # argparse takes "-3,3" for an option of its own; the paper's range starts with a minus.
    storage = f"sqlite:///{tmp_path / 's.db'}"
    args = ["search", *SMALL, "--grid-range", "-3,3", "--epochs", "1", "--no-figures"]
    assert main([*args, "--storage", storage]) == 0
    study = optuna.load_study(study_name="wine/bayes/iterative", storage=storage)
    assert study.user_attrs["boxcox_sampler"]["settings"]["grid_range"] == [-3.0, 3.0]
    assert {round(t.params["ash"], 6) for t in study.trials} >= {-3.0, 3.0}


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["--sampler", "tpe", "--epochs", "2"], "--epochs does not apply to the 'tpe' sampler"),
        (["--sampler", "spherical", "--shift-epoch", "2"], "--shift-epoch"),
        (["--grid-range", "5"], "--grid-range"),
        (["--grid-range", "a,b"], "--grid-range"),
        (["--grid-range", "5,-5"], "--grid-range"),
        (["--grid-range", "nan,1"], "--grid-range"),
        (["--grid-range", "-5,5,1"], "--grid-range"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "refused",
)
def test_search_refuses_a_setting_it_cannot_use_in_one_line(tmp_path, capsys, options, named):
    db = tmp_path / "s.db"
    args = ["search", "--dataset", "wine", "--features", "3", "--classifier", "bayes"]
    assert main([*args, *options, "--storage", f"sqlite:///{db}"]) == 2
    err = capsys.readouterr().err
    line = _one_line(err)
    assert named in line, line
    assert line.count("'") % 2 == 0, f"a quote of the message went missing: {line}"
    assert not db.exists(), "a refused command created the study's storage"


# -- 15. make demo, twice ---------------------------------------------------------------------------


def test_demo_run_twice_says_it_finished_earlier(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    first = capsys.readouterr().out
    assert main(["demo"]) == 0
    second = capsys.readouterr().out
    timing = re.compile(r"^study .*\(\d+ trials, [\d.]+ s\)$", re.M)
    assert timing.search(first), first
    assert "finished earlier: nothing to do" in second, second
    assert not timing.search(second), "the second run reports a search time for no search"
    study = optuna.load_study(
        study_name="demo/wine/knn/coordinate", storage="sqlite:///studies/optuna-boxcox.db"
    )
    assert study.metric_names == ["accuracy"]


def _dashboard_view(storage: str, study_name: str) -> tuple[str, list[str]]:
    """The note and the ids of the figures optuna-dashboard shows on a study's page."""
    from optuna_dashboard import get_note

    from optuna_boxcox._optuna import storage_of
    from optuna_boxcox._optuna import study_id_of

    study = optuna.load_study(study_name=study_name, storage=storage)
    attrs = storage_of(study).get_study_system_attrs(study_id_of(study))
    prefix = "dashboard:plot_data:"
    figures = {k.removeprefix(prefix).rsplit(":", 1)[0] for k in attrs if k.startswith(prefix)}
    return get_note(study), sorted(figures)


def test_demo_attaches_the_note_and_figures_a_search_does(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 's.db'}"
    assert main(["demo", "--storage", storage]) == 0
    search = ["search", "--dataset", "wine", "--classifier", "knn", "--sampler", "coordinate"]
    assert main([*search, "--storage", storage]) == 0
    capsys.readouterr()
    demo_note, demo_figures = _dashboard_view(storage, "demo/wine/knn/coordinate")
    search_note, search_figures = _dashboard_view(storage, "wine/knn/coordinate")
    assert search_figures, "search attached no figures"
    assert demo_figures == search_figures, "the demo's study lacks the figures a search's has"
    assert demo_note.replace("demo/", "", 1) == search_note, (
        f"the demo's note is not a search's:\n{demo_note}"
    )


def test_the_last_progress_line_is_not_repeated_when_the_work_ends():
    log = io.StringIO()
    with _progress.Progress(2, unit="study", label="compare", stream=log, every=0) as progress:
        progress.update()
        progress.update()
    lines = log.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert lines[-1].startswith("compare: 2/2 studies (100 %)"), lines


def test_log_lines_count_studies_and_folds_in_plain_words():
    assert _progress.plural("study") == "studies"
    assert _progress.plural("trial") == "trials"
    assert _progress.plural("λ row") == "λ rows"
    assert math.isclose(_progress.Progress(3, enabled=False, every=2).every, 2.0)
