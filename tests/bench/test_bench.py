"""``optuna-boxcox bench`` runs its three paths side by side and reports agreement (CI size).

The timings themselves are not asserted (machines are noisy); what must hold is that the command
runs end to end, prints the ratios and finds the same Λ on every path, which its exit status says.
"""

from __future__ import annotations

import re

import pytest

from optuna_boxcox.cli import main


@pytest.mark.long
@pytest.mark.timeout(600)
def test_bench_reports_ratios_and_the_same_lambda_on_every_path(sonar, tmp_path, capsys):
    csv = tmp_path / "sonar.csv"
    sonar.frame.to_csv(csv, index=False)
    status = main(
        [
            "bench",
            "--sections",
            "components",
            "--csv",
            str(csv),
            "--classifiers",
            "bayes",
            "--b-trials",
            "12",
            "--memory-preset",
            "",
            "--preset",
            "iterative",
            "--repeats",
            "2",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    row = [line for line in out.splitlines() if line.startswith("bayes")][-1]
    assert "True, True, True" in row
    assert "a/c" in out and "write" in out and "start-up" in row
    assert "machine" in out and "tail" in out and "medians of 2 alternating runs" in out


@pytest.mark.long
@pytest.mark.timeout(600)
def test_end_to_end_bench_times_whole_processes_and_finds_the_same_lambda(tmp_path, capsys):
    status = main(
        [
            "bench",
            "--sections",
            "end-to-end",
            "--cases",
            "breast_cancer[:4]:bayes:iterative",
            "--e2e-repeats",
            "1",
            "--script-trials",
            "12",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    row = [line for line in out.splitlines() if line.startswith("breast_cancer[:4]")][-1]
    assert row.endswith("True"), row  # the search and the plain loop chose the same Λ
    assert "plain/search" in out and "tail" in out
    script = [line for line in out.splitlines() if line.startswith("study script")][-1]
    assert "same trials: True" in script


def test_the_machines_own_parallel_speed_up_leaves_no_process_behind():
    import multiprocessing

    from optuna_boxcox.bench import parallel_capacity

    # Its value is a timing (not asserted here); its children must all be gone afterwards.
    assert parallel_capacity(3, iterations=100_000) > 0
    assert multiprocessing.active_children() == []


def test_the_peak_memory_reported_is_the_childs_own_not_its_parents():
    import subprocess
    import sys

    import numpy as np

    parent = np.ones(100_000_000)  # 763 MiB resident here, before the child starts
    code = "from optuna_boxcox.bench.components import _peak_rss_kib; print(_peak_rss_kib())"
    child_kib = int(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    assert parent.sum() == 100_000_000
    assert child_kib < 500 * 1024  # the imports take ~200 MiB; Linux's ru_maxrss said 763+ here


@pytest.mark.timeout(600)
def test_scale_bench_reports_the_evaluator_and_the_ratio_per_size(tmp_path, capsys):
    status = main(
        [
            "bench",
            "--sections",
            "scale",
            "--sizes",
            "300",
            "--scale-classifiers",
            "bayes,knn",
            "--scale-trials",
            "11",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("300 ")]
    assert {row[1]: row[2] for row in rows[-2:]} == {
        "bayes": "gaussian-nb",
        "knn": "knn:incremental",
    }
    assert all(float(row[5]) > 0 and float(row[7]) > 0 for row in rows[-2:])


def test_the_parallel_bench_ceiling_is_measured_with_two_independent_processes():
    from optuna_boxcox.bench.parallel import ceiling

    # Its value is a timing (not asserted beyond being one): two processes did two units of work.
    assert ceiling(200_000) > 0


@pytest.mark.timeout(600)
def test_end_to_end_bench_takes_a_csv_path_relative_to_where_it_is_run(
    sonar, tmp_path, monkeypatch, capsys
):
    # The timed processes run in a scratch folder; the user's relative path still names the file.
    sonar.frame.iloc[:, [0, 1, 2, -1]].to_csv(tmp_path / "small.csv", index=False)
    monkeypatch.chdir(tmp_path)
    status = main(
        [
            "bench",
            "--sections",
            "end-to-end",
            "--csv",
            "small.csv",
            "--cases",
            "sonar:bayes:iterative",
            "--e2e-repeats",
            "1",
            "--script-trials",
            "0",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert [line for line in out.splitlines() if line.startswith("sonar")][-1].endswith("True")


@pytest.mark.timeout(600)
def test_read_bench_reads_the_study_back_equal_with_both_readers(capsys):
    status = main(
        [
            "bench",
            "--sections",
            "read",
            "--read-case",
            "breast_cancer[:4]:bayes:iterative",
            "--e2e-repeats",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "(176 trials)" in out and "equal trials: True" in out


@pytest.mark.long
@pytest.mark.timeout(600)
def test_workers_bench_times_k_workers_beside_the_ceiling_and_checks_each_position_once(capsys):
    from optuna_boxcox.bench.workers import postgres_bindir

    if postgres_bindir() is None:
        pytest.skip("PostgreSQL server not installed (make test installs Debian's postgresql)")
    pytest.importorskip("psycopg", reason="psycopg not installed (pip extra 'postgres')")
    status = main(
        [
            "bench",
            "--sections",
            "workers",
            "--workers-sleep",
            "2",
            "--workers-sleep-case",
            "0.05:100:2:iterative",
            "--workers-svc",
            "",
            "--workers-repeats",
            "2",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert "sleep 0.05 s, 100×2, iterative" in out and "ceiling" in out
    assert "medians of 2 alternating runs" in out
    (spread,) = [line for line in out.splitlines() if line.strip().startswith("(2 runs:")]
    assert len(spread.split("speed-up/k")[1].split(",")) == 2, spread  # each run's speed-up
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert [row[0] for row in rows] == ["1", "2"], out
    for row in rows:
        assert row[6] == row[11] == "|", row
        startup, seconds, speedup, ceiling, fraction = map(float, row[1:6])
        working, working_speedup, working_ceiling, working_fraction = map(float, row[7:11])
        assert 0 < startup < seconds and 0 < working < seconds and ceiling > 0
        # The table prints each figure to 2 decimals: the quotient of two printed figures is
        # off by up to half a unit of each, carried through the division.
        assert fraction == pytest.approx(speedup / ceiling, abs=_rounding(speedup, ceiling))
        assert working_fraction == pytest.approx(
            working_speedup / working_ceiling, abs=_rounding(working_speedup, working_ceiling)
        )
        made, planned = map(int, row[13].split("/"))
        assert made >= planned > 0  # every fit of the plan made, some maybe twice
        assert row[14:] == ["True", "True"], row  # each position COMPLETE once, the same Λopt
    assert float(rows[0][3]) == 1.0 and float(rows[1][12]) > 1.0  # 2 workers may gain


def _rounding(numerator: float, denominator: float) -> float:
    """How far numerator / denominator may be from the printed quotient when all three are
    printed to 2 decimals."""
    half = 0.005
    return half + half / denominator + numerator * half / (denominator * (denominator - half))


@pytest.mark.long
@pytest.mark.timeout(600)
def test_fidelity_bench_scores_each_mode_on_the_held_out_rows(tmp_path, capsys):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    frame = X.iloc[:, :4].copy()
    frame["y"] = y
    csv = tmp_path / "bc.csv"
    frame.to_csv(csv, index=False)
    status = main(
        [
            "bench",
            "--sections",
            "fidelity",
            "--fidelity-data",
            f"csv:{csv}",
            "--fidelity-classifiers",
            "bayes",
            "--fidelity-rows",
            "400",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    row = next(line for line in out.splitlines() if line.startswith("bc ")).split()
    # 70 % of the 400 rows searched; three held-out accuracies, each a share of 120 rows.
    assert row[1:3] == ["bayes", "280"], row
    accuracies = [float(v) for v in row[8:11]]
    assert all(0 < a <= 100 and abs(a * 1.2 - round(a * 1.2)) < 0.01 for a in accuracies), row
    assert int(row[6]) <= 280  # the subsample is never more than the rows searched
    assert "auto − exact: mean" in out
    # auto's estimate beside the searches' measured times (exact chosen, nothing timed: no
    # estimate on 280 rows, below two rungs' floor).
    estimated = [line for line in out.splitlines() if line.startswith("bc ")][-1].split()
    assert estimated[:5] == ["bc", "bayes", "280", "exact", "—"], estimated
    assert float(estimated[5]) > 0 and float(estimated[8]) > 0, estimated


def test_fidelity_bench_sets_autos_estimates_beside_the_measured_search_times(tmp_path):
    from optuna_boxcox.bench import fidelity

    timed = {"exact_minutes": 3.0, "search_minutes": 1.0, "priced": [[500, 0.1]]}
    row = {
        "data": "scale50000",
        "classifier": "svc",
        "rows": 35000,
        "auto": {**timed, "fidelity": {"min_rows": 200, "eta": 3, "top_rows": None}},
        "search_seconds": {"auto": 90.0},
    }
    line = fidelity.format_estimates([row]).splitlines()[-1].split()
    # auto chose halving, estimated 60 s, measured 90 s: 1.5; the exact search did not run.
    assert (
        line
        == ["scale50000", "svc", "35000", "halving", "60.0", "90.0", "1.50", "180.0"] + ["—"] * 2
    )
    # Exact chosen: its estimate beside the measured time.
    small = {**row, "auto": {"fidelity": None, "exact_minutes": 0.5, "priced": []}}
    small["search_seconds"] = {"auto": 3.0, "exact": 3.2}
    line = fidelity.format_estimates([small]).splitlines()[-1].split()
    assert line[3:] == ["exact", "30.0", "3.0", "0.10", "30.0", "3.2", "0.11"]
    with pytest.raises(ValueError, match="subsample with exact and auto"):
        fidelity.measure("scale", "bayes", tmp_path, modes=("auto", "subsample"))


@pytest.mark.timeout(600)
def test_bench_prints_logistic_regressions_best_scores_beside_its_ratio(sonar, tmp_path, capsys):
    # The row gives both best scores beside the ratio; the fast scorer retraces scikit-learn's
    # fit, so the batched search takes the plain loop's path.
    csv = tmp_path / "sonar.csv"
    sonar.frame.to_csv(csv, index=False)
    main(
        [
            "bench",
            "--sections",
            "components",
            "--csv",
            str(csv),
            "--features",
            "3",
            "--classifiers",
            "logistic",
            "--b-trials",
            "6",
            "--memory-preset",
            "",
            "--repeats",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert "187 × 3" in out
    row = [line for line in out.splitlines() if line.startswith("logistic")][-1]
    # The fast scorer retraces scikit-learn's fit: the plain loop's Λ and best score.
    assert "True, True, True" in row
    best_a, best_c = (float(v) for v in re.findall(r"best a ([0-9.]+), c ([0-9.]+)", row)[0])
    assert best_a == best_c


def test_price_bench_times_fresh_processes_and_prints_the_median_ratio(tmp_path, capsys):
    from sklearn.datasets import load_iris

    csv = tmp_path / "iris.csv"
    load_iris(as_frame=True).frame.rename(columns={"target": "y"}).to_csv(csv, index=False)
    args = ["bench", "--sections", "price", "--csv", str(csv), "--price-rounds", "1"]
    status = main([*args, "--price-classifiers", "bayes", "--price-numpy"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "NumPy arrays" in out and "1 round;" in out
    row = [line for line in out.splitlines() if line.startswith("bayes")][-1]
    # pipeline ms, default s, ratio, first fit s, first/pipeline: all measured, all positive
    numbers = [float(v) for v in re.findall(r"(\d+(?:\.\d+)?)\s*(?:ms|s|x)", row)]
    assert len(numbers) == 5 and all(v > 0 for v in numbers), row
    assert re.search(r"median of the default/pipeline ratios: \d+x", out)


def test_price_bench_says_in_one_line_why_a_process_failed(tmp_path, capsys):
    csv = tmp_path / "unlabelled.csv"
    csv.write_text("a,b\n1,2\n3,4\n")
    status = main(["bench", "--sections", "price", "--csv", str(csv), "--price-rounds", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1
    assert "price: the pipeline process for bayes failed" in err[0]


@pytest.mark.long
@pytest.mark.timeout(600)
def test_rows_bench_times_the_three_fits_in_fresh_processes_and_checks_the_hump(tmp_path, capsys):
    status = main(
        [
            "bench",
            "--sections",
            "rows",
            "--rows-sizes",
            "400,3000",
            "--rows-features",
            "4",
            "--rows-classifiers",
            "bayes",
            "--rows-data",
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    cells = [line.split() for line in out.splitlines() if line.startswith("bayes ")]
    assert [cell[1] for cell in cells] == ["400", "3,000"]
    # Held-out accuracies as percentages, peaks as multiples, and what the default searched.
    assert all(0 < float(cell[6]) <= 100 and cell[-1] for cell in cells)
    assert "no size took longer than" in out or "HUMP" in out
    assert sorted(p.name for p in tmp_path.glob("*.done")) == ["rows3000x4.done", "rows400x4.done"]
