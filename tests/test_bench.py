"""``optuna-boxcox bench`` runs its three paths side by side and reports agreement (CI size).

The timings themselves are not asserted (machines are noisy); what must hold is that the command
runs end to end, prints the ratios and finds the same Λ on every path, which its exit status says.
"""

from __future__ import annotations

import pytest

from optuna_boxcox.cli import main


@pytest.mark.timeout(600)
def test_bench_reports_ratios_and_the_same_lambda_on_every_path(sonar, tmp_path, capsys):
    csv = tmp_path / "sonar.csv"
    sonar.frame.to_csv(csv, index=False)
    status = main(["bench", "--csv", str(csv), "--classifiers", "bayes", "--b-trials", "12",
                   "--memory-preset", "", "--preset", "iterative"])
    out = capsys.readouterr().out
    assert status == 0, out
    row = [line for line in out.splitlines() if line.startswith("bayes")][-1]
    assert "True, True, True" in row
    assert "a/c" in out and "write" in out and "start-up" in row
