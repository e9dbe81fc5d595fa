"""``python -m optuna_boxcox.bench.mle`` runs end to end at a tiny size and reports its numbers.

Timings are not asserted (machines are noisy): what must hold is that both fits run, and that
the λ are scipy's (the peer's fit holds scipy's ``boxcox_normmax`` of each scaled column).
"""

from __future__ import annotations

import re

import numpy as np

from optuna_boxcox._math._numerics import EXACT_MLE_ROWS
from optuna_boxcox.bench import mle

ROWS = EXACT_MLE_ROWS + 2_000  # the Newton path


def test_the_bench_prints_the_ratio_the_lambda_difference_and_the_peak_memory(capsys):
    assert mle.main(["--rows", str(ROWS), "--features", "12", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert f"{ROWS} × 12 float64" in out
    assert re.search(r"ratio \(PowerTransformer / BoxCoxTransformer\)\s+[\d.]+×", out), out
    difference = re.search(r"boxcox_normmax \(12 column\(s\)\)\s+(\S+)", out)
    assert difference and float(difference.group(1)) < 1e-6, out
    assert "peak memory beyond the input: fit" in out and "process peak resident size" in out


def test_without_the_peer_scipy_checks_the_first_columns_and_the_data_can_be_saved(tmp_path):
    npy = tmp_path / "X.npy"
    result = mle.run(ROWS, 3, 2, peer=False, check_columns=2, npy=npy)
    assert npy.exists() and result["power_median"] is None and len(result["boxcox_seconds"]) == 2
    assert result["scipy_lambdas"].shape == (2,) and result["max_relative_difference"] < 1e-6
    again = mle.run(ROWS, 3, 1, peer=False, check_columns=0, npy=npy)  # read back, not made
    np.testing.assert_array_equal(again["lambdas"], result["lambdas"])
    assert again["max_relative_difference"] is None
    assert "PowerTransformer" not in mle.format_result(again)
