"""What a new user met on a fresh clone (issue #54): each test fails on the commit before its
fix."""

from __future__ import annotations

import re

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
