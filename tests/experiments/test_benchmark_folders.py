"""The benchmark over both development folders: dev2's tables are read from DIR/dev2/, dev-all
names all 64, and the report gives each folder's paired difference and loss rate."""

from __future__ import annotations

import numpy as np
import pandas as pd

from optuna_boxcox.experiments._benchmark_data import DEV2
from optuna_boxcox.experiments._benchmark_data import folder_of
from optuna_boxcox.experiments.benchmark import HALVES
from optuna_boxcox.experiments.benchmark import LOSS_MARGIN
from optuna_boxcox.experiments.benchmark import benchmark
from optuna_boxcox.experiments.benchmark import expand_datasets
from optuna_boxcox.experiments.benchmark import format_benchmark


def _csv(folder, name, shift=0.0):
    rng = np.random.default_rng(len(name))
    folder.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(rng.lognormal(size=(60, 2)) + shift, columns=["x0", "x1"])
    frame["y"] = np.tile([0, 1], 30)
    frame.loc[frame["y"] == 1, "x0"] *= 2.0
    frame.to_csv(folder / f"{name}.csv", index=False)


def test_the_folders_hold_64_sets_and_dev2_is_read_from_its_folder(tmp_path):
    assert len(set(DEV2)) == len(DEV2) == 39
    assert len(set(HALVES["dev-all"])) == 64 and set(HALVES["dev-all"]) >= set(DEV2)
    assert folder_of("k-pima") == "dev2" and folder_of("magic-r1500") == "dev"
    assert folder_of("r-default-r1500-f2") == "dev2" and folder_of("mine") is None
    _csv(tmp_path / "dev2", "k-pima")
    assert expand_datasets(["k-pima"], tmp_path) == [f"csv:{tmp_path / 'dev2' / 'k-pima.csv'}"]


def test_a_benchmark_over_both_folders_reports_each_folder(tmp_path):
    for name in ("sonar", "titanic"):
        _csv(tmp_path / "dev", name)
    for name in ("k-pima", "r-cats", "r-crabs"):
        _csv(tmp_path / "dev2", name, shift=1.0)
    url = f"sqlite:///{tmp_path / 'b.db'}"
    names = ["sonar", "titanic", "k-pima", "r-cats", "r-crabs"]
    result = benchmark(names, ["bayes"], [], ["standard", "box-cox", "raw"], data_dir=tmp_path,
                       features=2, test_size=0.3, storage=url)  # fmt: skip
    lines = format_benchmark(result).splitlines()
    start = lines.index(
        "per folder: paired mean difference in points from the folder's best fixed method in "
        "hindsight"
    )
    rows = [line.split() for line in lines[start + 1 : start + 6] if line.startswith("bayes")]
    assert [row[1:3] for row in rows] == [["dev", "(2)"], ["dev2", "(3)"]]
    # Each folder's figures, as a plain loop computes them from the per-set scores.
    for row, sets in zip(rows, (result.datasets[:2], result.datasets[2:])):
        table = {
            m: np.array([result.scores[(d, "bayes", m)] for d in sets]) for m in result.methods
        }
        best = max(result.fixed, key=lambda m: table[m].mean())
        assert row[3] == best
        for method, shown in zip(result.methods, row[4:]):
            assert float(shown) == round(100 * float(np.mean(table[method] - table[best])), 2)
    losses = lines.index(
        f"per folder: loss rate (more than {100 * LOSS_MARGIN:g} point below the better of "
        "standard and box-cox)"
    )
    assert any(line.startswith("bayes") and "dev2 (3)" in line for line in lines[losses:])
    # One folder alone: no per-folder table.
    alone = benchmark(names[2:], ["bayes"], [], ["standard", "box-cox"], data_dir=tmp_path,
                      features=2, test_size=0.3, storage=url)  # fmt: skip
    assert not any(line.startswith("per folder") for line in format_benchmark(alone).splitlines())
