"""What the commands show a new user is what they use and what works (issue #67, items 10 and 15):
the score shown first is the one of the Λ used, said in words, and a command they are told to
type runs as printed from a fresh clone after ``make demo`` (no environment activated)."""

from __future__ import annotations

import os
from pathlib import Path
import re
import shlex
import shutil
import subprocess
import sys

import optuna

from optuna_boxcox._study._decision import NAMES
from optuna_boxcox.cli import main

REPO = Path(__file__).resolve().parents[2]
#: The environment's own folder of console scripts (``.venv/bin`` after ``make demo``).
BIN = Path(sys.executable).parent


def _without_the_environment() -> dict[str, str]:
    """The environment of a shell that ran ``make demo``: this installation's scripts are not on
    its PATH."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != BIN]
    return {**os.environ, "PATH": os.pathsep.join(path)}


def test_search_shows_first_the_score_of_the_lambda_it_uses_and_who_chose_it(
    tmp_path, monkeypatch, capsys
):
    # The score line showed the searched Λ's score while every λ printed below it was the MLE's
    # (or 1): the gate had chosen an anchor, and the line did not say so.
    monkeypatch.chdir(tmp_path)
    assert main(["search", "--dataset", "wine", "--classifier", "bayes", "--no-figures"]) == 0
    lines = capsys.readouterr().out.splitlines()
    result = optuna.load_study(
        study_name="wine/bayes/guarded", storage="sqlite:///studies/optuna-boxcox.db"
    ).user_attrs["boxcox_result"]
    assert result["chosen"] != "searched", "this case is here for a gate that chose an anchor"
    (score,) = [line for line in lines if line.startswith("score")]
    assert score == (
        f"score      {result['best_value']:.4f} with the Λ used: {NAMES[result['chosen']]}, "
        "chosen by the gate over the searched Λ"
    ), score
    table = lines[lines.index("λ by feature:") + 2 :]
    shown = {line.split()[0]: float(line.split()[1]) for line in table if line.startswith("  ")}
    assert shown == {name: round(value, 3) for name, value in result["params"].items()}


def test_the_dashboard_command_a_search_prints_runs_as_printed(tmp_path):
    # "optuna-boxcox dashboard …" after make demo: command not found, since make demo does not
    # activate .venv.
    env = _without_the_environment()
    printed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from optuna_boxcox.cli.search import dashboard_hint; "
            "print(dashboard_hint('sqlite:///studies/optuna-boxcox.db'))",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = re.fullmatch(
        r"open it in optuna-dashboard:  (.+) dashboard (\S+)(?:    \(or: (.+) (\S+)\))?\n",
        printed,
    )
    assert found, printed
    commands = [found[1]] + ([found[3]] if found[3] else [])
    for command in commands:
        program = shlex.split(command)[0]
        where = REPO / program if os.sep in program else shutil.which(program, path=env["PATH"])
        assert where is not None and os.access(where, os.X_OK), (
            f"{command!r} as printed is not found from {REPO} with PATH={env['PATH']}"
        )
    ran = subprocess.run(
        [*shlex.split(commands[0]), "--help"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, f"{commands[0]!r} as printed does not run:\n{ran.stderr}"


def test_a_command_is_shown_by_name_when_the_path_finds_this_installations(monkeypatch):
    from optuna_boxcox.cli._command import command

    script = BIN / "optuna-boxcox"
    if not script.exists():  # the package run from a checkout, not installed
        assert command().endswith(" -m optuna_boxcox.cli")
        return
    monkeypatch.setenv("PATH", os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    assert command() == "optuna-boxcox"
    monkeypatch.setenv("PATH", _without_the_environment()["PATH"])
    monkeypatch.chdir(BIN.parent.parent)
    # From the folder that holds the environment, as make demo runs: .venv/bin/optuna-boxcox.
    assert command() in (str(script.relative_to(BIN.parent.parent)), str(script)), command()


def test_the_readmes_commands_run_as_printed_after_make_demo():
    # The README's command block started with "optuna-boxcox search …": not on the PATH after
    # make demo, which installs into .venv without activating it.
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", readme, re.M | re.S)
    unfound = []
    for block in blocks:
        activated = False
        for line in block.splitlines():
            activated = activated or line.startswith(". .venv/bin/activate")
            if line.split(" ", 1)[0] in ("optuna-boxcox", "optuna-dashboard") and not activated:
                unfound.append(line)
    assert unfound == [], f"not on the PATH after make demo: {unfound}"
    assert (REPO / "Makefile").read_text().count("$(VENV)/bin/optuna-boxcox demo") == 1
