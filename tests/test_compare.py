"""`compare`: every sampler × seed in one storage, one table, a plot, and resuming."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import optuna
from scipy import stats
from sklearn.neighbors import KNeighborsClassifier

from optuna_boxcox.compare import compare
from optuna_boxcox.compare import format_table


def test_compare_command_writes_all_studies_to_one_file_and_resumes(tmp_path):
    url = f"sqlite:///{tmp_path / 'compare.db'}"
    command = [
        sys.executable,
        "-m",
        "optuna_boxcox.cli",
        "compare",
        "--dataset",
        "breast_cancer",
        "--features",
        "3",
        "--classifier",
        "knn",
        "--samplers",
        "coordinate,tpe,nelder-mead,random",
        "--seeds",
        "2",
        "--storage",
        url,
        "--plot",
        str(tmp_path / "plot.html"),
    ]
    first = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    for row in (
        "coordinate",
        "tpe",
        "nelder-mead",
        "random",
        "no transform",
        "QuantileTransformer",
    ):
        assert row in first.stdout
    assert (tmp_path / "plot.html").stat().st_size > 10_000
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(url))
    assert names == sorted(
        f"breast_cancer/knn/{s}/seed{k}"
        for s in ("coordinate", "tpe", "nelder-mead", "random")
        for k in (0, 1)
    )
    counts = {n: len(optuna.load_study(study_name=n, storage=url).trials) for n in names}
    assert set(counts.values()) == {4 * 3 * 11}, (
        "every sampler gets the coordinate search's E·p·L budget"
    )

    second = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    assert {n: len(optuna.load_study(study_name=n, storage=url).trials) for n in names} == counts
    table = lambda out: [
        line for line in out.splitlines() if line.startswith(("coordinate", "tpe", "random"))
    ]
    assert table(second.stdout) == table(first.stdout), "the re-run read the finished studies back"


def test_table_reports_wilcoxon_against_the_coordinate_sampler(breast_cancer, tmp_path):
    X, y = breast_cancer.data.iloc[:, :2], breast_cancer.target
    runs, references = compare(
        X,
        y,
        KNeighborsClassifier(),
        dataset="bc",
        classifier="knn",
        samplers=["coordinate", "random"],
        seeds=3,
        storage=f"sqlite:///{tmp_path / 'w.db'}",
        n_trials=30,
        test_size=0.3,
    )
    coordinate, random = runs
    expected = stats.wilcoxon(random.best, coordinate.best, zero_method="zsplit").pvalue
    if np.allclose(np.subtract(random.best, coordinate.best), 0):
        expected = 1.0
    assert random.p_value == expected and coordinate.p_value is None
    assert len(random.held_out) == 3 and all(0 < v <= 1 for v in random.held_out)
    for run in runs:
        for curve, best in zip(run.curves, run.best):
            assert np.all(np.diff(curve) >= 0) and curve[-1] == best
    text = format_table(runs, references)
    assert "held-out" in text and "PowerTransformer box-cox" in text
