"""The guarded default's measuring script (``python -m optuna_boxcox.bench.guard``): its usage."""

from __future__ import annotations

import pytest

from optuna_boxcox.bench import guard


@pytest.mark.parametrize("argv", [["--help"], ["-h"]])
def test_help_prints_the_usage(argv, capsys):
    assert guard.main(argv) == 0
    assert capsys.readouterr().out.startswith("usage: python -m optuna_boxcox.bench.guard")


@pytest.mark.parametrize("argv", [[], ["table"], ["results.jsonl", "iris"], ["table", "a", "b"]])
def test_wrong_arguments_print_the_usage_and_exit_2(argv, capsys):
    # Before: an IndexError traceback.
    assert guard.main(argv) == 2
    assert capsys.readouterr().err.startswith("usage: ")
