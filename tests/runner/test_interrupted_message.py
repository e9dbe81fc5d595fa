"""A Ctrl-C that comes while the search process writes a message to its writer process."""

from __future__ import annotations

from pathlib import Path
import sqlite3
import subprocess
import sys

import pytest
from shared import skip_if_ignored

REPO = Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}


def _interrupted(script_and_args: list[str], tmp_path: Path) -> list[str]:
    """Run ``python -c SCRIPT ARGS`` (a search that sends itself a SIGINT); check it fired and
    ended as a Ctrl-C does (130, no traceback, one line); return that line in a list."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", *script_and_args],
            cwd=tmp_path,
            env=ENV,
            capture_output=True,
            text=True,
            timeout=240,
        )
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"the search hung after the Ctrl-C: {hung.stderr!r}")
    lines = done.stderr.splitlines()
    assert lines[-1] == "fired", done.stderr
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    said = [line for line in lines if "interrupted" in line]
    assert len(said) == 1, done.stderr
    return said


#: The search, with a SIGINT sent to itself right after the length header of the first message
#: too long to go in one write (a list of trials for the writer process), before its payload.
SCRIPT = """
import os, signal, struct, sys
from multiprocessing import connection

real, parent, fired = connection.Connection._send, os.getpid(), []

def send(self, buf, *args):
    real(self, buf, *args)
    header = len(buf) == 4 and struct.unpack("!i", bytes(buf))[0] > 16384
    if header and os.getpid() == parent and not fired:
        fired.append(True)
        os.kill(parent, signal.SIGINT)

connection.Connection._send = send
from optuna_boxcox.cli import main
code = main(sys.argv[1:])
print("fired" if fired else "not fired", file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.timeout(600)
def test_ctrl_c_between_a_messages_header_and_payload_stops_the_search_cleanly(tmp_path):
    skip_if_ignored("SIGINT")
    db = tmp_path / "s.db"
    search = [
        *("search", "--dataset", "breast_cancer", "--classifier", "bayes", "--n-jobs", "2"),
        *("--sampler", "iterative", "--storage", f"sqlite:///{db}", "--no-figures"),
    ]
    said = _interrupted([SCRIPT, *search], tmp_path)
    with sqlite3.connect(db) as connection:
        ((complete,),) = connection.execute("SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE'")
    assert f"after {complete} trials" in said[0], (said, complete)


#: A search of Optuna's sampler, with a SIGINT sent to itself at the third trial, at a moment of
#: Optuna's own bookkeeping (``ask``: the trial is made, the sampler's ``before_trial`` runs;
#: ``tell``: the objective returned, its value not yet written). The handlers are the console
#: script's, as ``timeout -s INT`` or Ctrl-C meets them.
BOOKKEEPING = """
import os, signal, sys
import optuna
from optuna.study import _optimize
from optuna_boxcox.cli import _second_interrupt_quits, main

where, calls, fired = sys.argv[1], [], []

def at_third(real):
    def call(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3 and not fired:
            fired.append(True)
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)
    return call

if where == "tell":
    _optimize._tell_with_warning = at_third(_optimize._tell_with_warning)
else:
    sampler = optuna.samplers.TPESampler
    sampler.before_trial = at_third(sampler.before_trial)
_second_interrupt_quits()
code = main(sys.argv[2:])
print("fired" if fired else "not fired", file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.long
@pytest.mark.timeout(600)
@pytest.mark.parametrize("where", ["ask", "tell"])
def test_ctrl_c_while_optuna_asks_or_tells_a_trial_puts_it_back_and_says_how_many(tmp_path, where):
    # Issue 43, item 6: `timeout -s INT 8 optuna-boxcox search ... --sampler tpe` said
    # "interrupted; run the same command to resume" without the count in 2 runs of 5 and left a
    # trial RUNNING, still RUNNING after the resume: the signal had landed in Optuna's tell.
    db = tmp_path / "s.db"
    search = [
        *("search", "--dataset", "wine", "--features", "3", "--classifier", "knn"),
        *("--sampler", "tpe", "--n-trials", "6", "--storage", f"sqlite:///{db}", "--no-figures"),
    ]
    said = _interrupted([BOOKKEEPING, where, *search], tmp_path)
    with sqlite3.connect(db) as connection:
        states = dict(connection.execute("SELECT state, COUNT(*) FROM trials GROUP BY state"))
    assert "RUNNING" not in states, states
    assert said[0] == (
        f"optuna-boxcox: interrupted after {states.get('COMPLETE', 0)} trials; run the same "
        "command to resume"
    ), (said, states)
    resumed = subprocess.run(
        [sys.executable, "-m", "optuna_boxcox.cli", *search],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(db) as connection:
        states = dict(connection.execute("SELECT state, COUNT(*) FROM trials GROUP BY state"))
    assert states == {"COMPLETE": 6}, states
