"""A Ctrl-C that comes while the search process writes a message to its writer process."""

from __future__ import annotations

from pathlib import Path
import sqlite3
import subprocess
import sys

import pytest
from shared import skip_if_ignored

REPO = Path(__file__).resolve().parents[2]

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
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, *search],
            cwd=tmp_path,
            env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
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
    with sqlite3.connect(db) as connection:
        ((complete,),) = connection.execute("SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE'")
    assert f"after {complete} trials" in said[0], (said, complete)
