"""`benchmark`: many data sets × classifiers × methods in one storage, ranked and tested, resumable."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import optuna
import pandas as pd
import pytest
from scipy import stats
from sklearn.datasets import make_classification
from sklearn.metrics import accuracy_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PowerTransformer
from sklearn.preprocessing import StandardScaler

from optuna_boxcox._optuna import storage_of
from optuna_boxcox._optuna import study_id_of
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.datasets import DataError
from optuna_boxcox.experiments.benchmark import RANK_PLOT
from optuna_boxcox.experiments.benchmark import SUMMARY_ATTR
from optuna_boxcox.experiments.benchmark import BenchmarkResult
from optuna_boxcox.experiments.benchmark import _rank_and_test
from optuna_boxcox.experiments.benchmark import average_ranks
from optuna_boxcox.experiments.benchmark import benchmark
from optuna_boxcox.experiments.benchmark import expand_datasets
from optuna_boxcox.experiments.benchmark import format_benchmark
from optuna_boxcox.experiments.benchmark import load_benchmark_data
from optuna_boxcox.experiments.benchmark import loss_rates
from optuna_boxcox.experiments.benchmark import paired_differences
from optuna_boxcox.experiments.benchmark import wilcoxon_p

CLASSIFIERS = ["knn", "bayes", "linear"]
TRANSFORMS = ["standard", "yeo-johnson"]
SAMPLERS = ["coordinate", "tpe"]
#: The plot's key in the summary study (optuna-dashboard's system attribute for a plotly graph).
PLOT_KEY = f"dashboard:plot_data:{RANK_PLOT}:"


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    """The CI-sized benchmark through the command line: 5 data sets (one a CSV) × 3 classifiers ×
    4 methods, 2 features each, 10 trials per study, one seeded holdout."""
    directory = tmp_path_factory.mktemp("benchmark")
    X, y = make_classification(
        n_samples=120, n_features=3, n_informative=2, n_redundant=0, random_state=3
    )
    csv = directory / "made.csv"
    pd.DataFrame({"a": np.exp(X[:, 0]), "b": X[:, 1], "c": X[:, 2], "cls": y}).to_csv(
        csv, index=False
    )
    url = f"sqlite:///{directory / 'bench.db'}"
    datasets = ["iris", "wine", "breast_cancer", "moons", f"csv:{csv}"]
    arguments = [
        "--datasets",
        ",".join(datasets),
        "--label",
        "cls",
        "--features",
        "2",
        "--classifiers",
        ",".join(CLASSIFIERS),
        "--samplers",
        ",".join(SAMPLERS),
        "--transforms",
        ",".join(TRANSFORMS),
        "--n-trials",
        "10",
        "--test-size",
        "0.3",
        "--n-jobs",
        "2",
        "--storage",
        url,
        "--plot-dir",
        str(directory),
    ]
    run = subprocess.run(
        [sys.executable, "-m", "optuna_boxcox.cli", "benchmark", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    settings = dict(
        label="cls",
        features=2,
        n_trials=10,
        test_size=0.3,
        storage=url,
    )
    return directory, url, datasets, arguments, settings, run.stdout


@pytest.mark.long
def test_command_prints_scores_ranks_and_p_values_and_writes_the_rank_plot(ci_run):
    directory, url, _, _, _, out = ci_run
    assert "benchmark: 5 data sets × 3 classifiers × 4 methods" in out
    for heading in (
        "held-out accuracy",
        "average rank over 5 data sets",
        "Wilcoxon signed-rank p",
    ):
        assert heading in out
    for name in ("iris-f2", "wine-f2", "breast_cancer-f2", "moons-f2", "made-f2"):
        assert out.count(name) == len(CLASSIFIERS) + 1, f"{name}: one row per classifier + trials"
    assert "trials per search" in out
    assert "tasks: 30 searches run, 0 read back, 15 fixed-transform scorings" in out
    assert (directory / f"{RANK_PLOT}.html").stat().st_size > 10_000
    studies = {s.study_name for s in optuna.get_all_study_summaries(url)}
    assert "made-f2/linear/tpe/seed0/n10-test0.3" in studies
    # Optuna's TPE with explicit arguments, the same on every supported Optuna (recorded).
    tpe = optuna.load_study(study_name="made-f2/linear/tpe/seed0/n10-test0.3", storage=url)
    recorded = tpe.user_attrs["boxcox_sampler"]
    assert recorded["name"] == "tpe" and recorded["optuna"] == optuna.__version__
    assert recorded["settings"]["multivariate"] is recorded["settings"]["constant_liar"] is True
    summary = optuna.load_study(study_name="benchmark/accuracy-test0.3-n10-seed0-f2", storage=url)
    system_attrs = storage_of(summary).get_study_system_attrs(study_id_of(summary))
    assert any(key.startswith(PLOT_KEY) for key in system_attrs), "rank plot not attached"
    assert summary.user_attrs[SUMMARY_ATTR]["methods"] == TRANSFORMS + SAMPLERS
    if "standard" in TRANSFORMS:
        assert "fit time as a multiple of the standard pipeline's" in out
        prices = summary.user_attrs[SUMMARY_ATTR]["fit_time_multiple"]
        assert all(prices[c]["standard"] == 1.0 for c in CLASSIFIERS)


def _oracle_scores(dataset: str, classifier: str, settings: dict) -> dict[str, float]:
    """Held-out accuracy of the fixed transforms, as a user would compute it with scikit-learn."""
    _, X, y = load_benchmark_data(dataset, label="cls", features=2)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=settings["test_size"], stratify=y, random_state=0
    )
    pipelines = {
        "standard": make_pipeline(StandardScaler(), make_classifier(classifier)),
        "yeo-johnson": make_pipeline(PowerTransformer(), make_classifier(classifier)),
    }
    return {
        name: accuracy_score(y_test, model.fit(X_train, y_train).predict(X_test))
        for name, model in pipelines.items()
    }


@pytest.fixture(scope="module")
def read_back(ci_run):
    """The same benchmark from Python, after the command: every study must be read, none run."""
    _, _, datasets, _, settings, _ = ci_run
    patch = pytest.MonkeyPatch()
    import optuna_boxcox.experiments._compare_runs as compare_module

    def no_search(*args, **kwargs):
        raise AssertionError("a finished study was searched again")

    import optuna_boxcox._lifecycle._search as lifecycle

    patch.setattr(lifecycle, "optimize", no_search)
    patch.setattr(lifecycle, "optimize_in_memory", no_search)
    patch.setattr(compare_module, "_held_out", no_search)
    patch.setattr(compare_module, "_score_fixed", no_search)
    patch.setattr(compare_module, "BoxCoxObjective", no_search)
    try:
        return benchmark(datasets, CLASSIFIERS, SAMPLERS, TRANSFORMS, **settings)
    finally:
        patch.undo()


def test_second_run_reads_every_study_back(ci_run, read_back):
    out = ci_run[-1]
    assert read_back.studies_run == 0 and read_back.studies_read == 30
    table = format_benchmark(read_back)
    assert table in out, "the read-back tables equal the first run's"


def test_held_out_scores_are_the_pipelines_and_the_studies_own(ci_run, read_back):
    url = ci_run[1]
    studies = {s.study_name: s for s in optuna.get_all_study_summaries(url)}
    for dataset, name in zip(ci_run[2], read_back.datasets):
        for classifier in CLASSIFIERS:
            for method, score in _oracle_scores(dataset, classifier, ci_run[4]).items():
                assert read_back.scores[(name, classifier, method)] == pytest.approx(score)
            for sampler in SAMPLERS:
                study = studies[f"{name}/{classifier}/{sampler}/seed0/n10-test0.3"]
                assert (
                    read_back.scores[(name, classifier, sampler)]
                    == (study.user_attrs["held_out"]["score"])
                )
                assert study.n_trials == 10


def test_average_ranks_are_scipy_rankdata_over_data_sets(read_back):
    methods = read_back.methods
    for classifier in CLASSIFIERS:
        per_data_set = [
            stats.rankdata([-read_back.scores[(d, classifier, m)] for m in methods])
            for d in read_back.datasets
        ]
        expected = np.mean(per_data_set, axis=0)
        assert [read_back.ranks[classifier][m] for m in methods] == pytest.approx(expected)
        assert sum(read_back.ranks[classifier].values()) == pytest.approx(
            len(methods) * (len(methods) + 1) / 2
        ), "ranks of one data set add up to 1 + 2 + … + m, ties included"


def test_p_values_are_scipy_wilcoxon_against_the_best_fixed_transform(read_back):
    for classifier in CLASSIFIERS:
        ranks = read_back.ranks[classifier]
        best = read_back.best_fixed[classifier]
        assert ranks[best] == min(ranks[t] for t in TRANSFORMS)
        reference = [read_back.scores[(d, classifier, best)] for d in read_back.datasets]
        for method in read_back.methods:
            p = read_back.p_values[classifier][method]
            if method == best:
                assert p is None
                continue
            scores = [read_back.scores[(d, classifier, method)] for d in read_back.datasets]
            if np.array_equal(scores, reference):
                assert p == 1.0
            else:
                expected = stats.wilcoxon(scores, reference, zero_method="zsplit").pvalue
                assert p == pytest.approx(expected), f"{classifier}/{method}"


def test_ties_share_their_mean_rank():
    table = np.array([[0.9, 0.8, 0.8, 0.7], [0.5, 0.6, 0.7, 0.7]])
    assert average_ranks(table).tolist() == [
        (1 + 4) / 2,
        (2.5 + 3) / 2,
        (2.5 + 1.5) / 2,
        (4 + 1.5) / 2,
    ]


def test_wilcoxon_of_equal_scores_is_one_and_of_a_clear_winner_small():
    assert wilcoxon_p([0.8, 0.9, 0.7], [0.8, 0.9, 0.7]) == 1.0
    better = [0.91, 0.82, 0.93, 0.74, 0.95, 0.86]
    assert wilcoxon_p(better, np.subtract(better, 0.05)) == pytest.approx(2 / 2**6)


def test_the_loss_rate_counts_data_sets_more_than_one_point_below_the_better_reference():
    methods = ["standard", "box-cox", "coordinate"]
    table = np.array(
        [
            [0.90, 0.80, 0.885],  # 1.5 points below standard: lost (box-cox too)
            [0.70, 0.75, 0.74],  # exactly 1 point below box-cox: not more (standard lost)
            [0.60, 0.60, 0.65],  # won
            [0.50, 0.52, 0.40],  # lost (standard too: 2 points)
        ]
    )
    rates = loss_rates(table, methods)
    assert rates == {"standard": 0.5, "box-cox": 0.25, "coordinate": 0.5}
    assert loss_rates(table[:, [0, 2]], ["standard", "coordinate"]) == {}, "needs both references"


def test_the_benchmark_table_prints_the_loss_rate_per_classifier_and_method():
    methods = ["standard", "box-cox", "coordinate"]
    result = BenchmarkResult(
        datasets=["a", "b"],
        classifiers=["knn"],
        methods=methods,
        fixed=["standard", "box-cox"],
        metric="accuracy",
        protocol="test",
    )
    for d, row in zip(["a", "b"], [[0.9, 0.8, 0.85], [0.7, 0.75, 0.76]]):
        for m, v in zip(methods, row):
            result.scores[(d, "knn", m)] = v
        result.trials[(d, "coordinate")] = 10
    _rank_and_test(result)
    assert result.loss_rates["knn"] == {"standard": 0.5, "box-cox": 0.5, "coordinate": 0.5}
    table = format_benchmark(result)
    assert "loss rate: share of the 2 data sets where a method is more than 1 point below" in table
    (row,) = [line for line in table.splitlines() if line.startswith("knn") and "%" in line]
    assert row.split()[1:] == ["50", "%", "50", "%", "50", "%"]


def test_each_method_is_compared_with_the_best_fixed_method_in_hindsight_pair_by_pair():
    # Issue #53: among near-ties an average rank is noise; the figure that counts is the paired
    # mean difference from the fixed method of highest mean, chosen knowing the results.
    methods = ["standard", "box-cox", "coordinate"]
    rows = {"a": [0.90, 0.80, 0.85], "b": [0.70, 0.78, 0.76], "c": [0.60, 0.64, 0.70]}
    result = BenchmarkResult(
        datasets=list(rows),
        classifiers=["knn"],
        methods=methods,
        fixed=["standard", "box-cox"],
        metric="accuracy",
        protocol="test",
    )
    for d, row in rows.items():
        for m, v in zip(methods, row):
            result.scores[(d, "knn", m)] = v
        result.trials[(d, "coordinate")] = 10
    _rank_and_test(result)
    # A plain loop: box-cox has the higher mean (0.74 against 0.7333).
    expected = {
        m: sum(rows[d][j] - rows[d][1] for d in rows) / len(rows) for j, m in enumerate(methods)
    }
    assert result.hindsight_best["knn"] == "box-cox"
    assert result.differences["knn"] == pytest.approx(expected)
    assert paired_differences(np.zeros((2, 3)), methods, result.fixed)[0] == "standard"  # a tie
    assert paired_differences(np.zeros((2, 3)), methods, []) == (None, {})
    table = format_benchmark(result)
    assert "paired mean difference in points from the best fixed method in hindsight" in table
    row = [line for line in table.splitlines() if line.startswith("knn")][-1]
    assert row.split() == ["knn", "box-cox", "-0.67", "+0.00", "+3.00"]


def test_fit_times_are_reported_as_the_median_multiple_of_the_standard_pipelines():
    from optuna_boxcox.experiments.benchmark import price_ratios

    seconds = np.array([[0.01, 1.0, 0.5], [0.02, 1.0, np.nan], [0.004, np.nan, 0.2]])
    ratios = price_ratios(seconds, ["standard", "guarded", "coordinate"])
    # A plain loop over the sets that have both figures.
    assert ratios["standard"] == 1.0
    assert ratios["guarded"] == pytest.approx(np.median([100.0, 50.0]))
    assert ratios["coordinate"] == pytest.approx(np.median([50.0, 50.0]))
    assert price_ratios(seconds, ["raw", "guarded", "coordinate"]) == {}


def test_the_guarded_default_is_a_method_with_its_decision_in_each_study(tmp_path):
    url = f"sqlite:///{tmp_path / 'b.db'}"
    result = benchmark(
        ["iris", "wine"],
        ["knn"],
        ["guarded"],
        ["standard", "box-cox"],
        features=2,
        n_trials=10,
        test_size=0.3,
        storage=url,
    )
    assert result.methods == ["standard", "box-cox", "guarded"]
    assert set(result.loss_rates["knn"]) == set(result.methods)
    assert "loss rate" in format_benchmark(result)
    names = [s.study_name for s in optuna.get_all_study_summaries(url)]
    guarded = [n for n in names if "/knn/guarded/" in n]
    assert len(guarded) == 2
    for name in guarded:
        study = optuna.load_study(study_name=name, storage=url)
        decision = study.user_attrs["boxcox_decision"]
        assert decision["chosen"] in ("searched", "mle", "ones")
        assert "held_out" in study.user_attrs


def test_a_guarded_benchmark_runs_its_studies_through_the_one_lifecycle(tmp_path, monkeypatch):
    """Each search is a study of the lifecycle: the spec and the comparison's settings recorded,
    the decision made once by the gate and read back by a second run, which scores nothing."""
    from optuna_boxcox._lifecycle import _guard

    calls = []
    real = _guard.guard
    monkeypatch.setattr(_guard, "guard", lambda *a, **k: calls.append(1) or real(*a, **k))
    url = f"sqlite:///{tmp_path / 'b.db'}"
    settings = dict(features=2, n_trials=10, test_size=0.3, storage=url)
    first = benchmark(["iris", "wine"], ["knn"], ["guarded", "tpe"], ["standard"], **settings)
    assert calls == [1, 1]
    names = [s.study_name for s in optuna.get_all_study_summaries(url)]
    for name in [n for n in names if "/knn/guarded/" in n or "/knn/tpe/" in n]:
        attrs = optuna.load_study(study_name=name, storage=url).user_attrs
        assert {"boxcox_spec", "compare", "held_out"} <= set(attrs)
    again = benchmark(["iris", "wine"], ["knn"], ["guarded", "tpe"], ["standard"], **settings)
    assert calls == [1, 1], "the second run read the decisions back"
    assert again.studies_run == 0 and again.scores == first.scores


def test_digits_are_pooled_into_sixteen_blocks():
    name, X, y = load_benchmark_data("digits")
    assert name == "digits" and X.shape == (1797, 16) and len(np.unique(y)) == 10
    from sklearn.datasets import load_digits

    image = load_digits().images[0]
    assert X.iloc[0]["block00"] == image[:2, :2].sum()


def test_figure_one_sets_take_a_seed_after_a_colon():
    assert load_benchmark_data("moons")[1].shape == (1000, 2)
    first, second = load_benchmark_data("moons")[1], load_benchmark_data("moons:7")[1]
    assert not np.allclose(first, second)


def test_unknown_data_set_names_the_choices():
    with pytest.raises(DataError, match="digits"):
        load_benchmark_data("mnist")


def test_command_refuses_a_single_data_set(capsys):
    from optuna_boxcox.cli import main

    assert main(["benchmark", "--datasets", "iris"]) == 2
    assert "at least two" in capsys.readouterr().err


def test_paper_samplers_run_their_whole_plan_and_optuna_samplers_the_coordinate_plan(tmp_path):
    # On 2 features the coordinate search's plan is 4 epochs × 2 × 11 = 88 trials and the Shift
    # preset's 8 × 2 × 11 = 176: the longer plan is not cut to the reference's budget, and TPE
    # gets the reference's 88 trials.
    result = benchmark(
        ["iris", "wine"],
        ["bayes"],
        ["coordinate", "coordinate:shift", "tpe"],
        ["standard"],
        features=2,
        test_size=0.3,
        storage=f"sqlite:///{tmp_path / 'plan.db'}",
    )
    for dataset in result.datasets:
        assert result.trials[(dataset, "coordinate")] == 88
        assert result.trials[(dataset, "coordinate:shift")] == 176
        assert result.trials[(dataset, "tpe")] == 88
    table = format_benchmark(result)
    assert "trials per search" in table
    assert result.winner["bayes"] in table.split("Wilcoxon")[1]
    ranks = result.ranks["bayes"]
    assert ranks[result.winner["bayes"]] == min(ranks.values())


def test_large_data_sets_are_subsampled_stratified_and_seeded(tmp_path):
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], [600, 300, 100])
    csv = tmp_path / "big.csv"
    pd.DataFrame({"a": rng.normal(size=1000), "b": np.arange(1000.0), "y": y}).to_csv(
        csv, index=False
    )
    name, X, labels = load_benchmark_data(f"csv:{csv}", max_rows=200)
    assert name == "big-r200" and X.shape == (200, 2)
    assert np.bincount(labels).tolist() == [120, 60, 20], "each class keeps its share"
    assert np.all(np.diff(X["b"]) > 0), "rows stay in the data's order"
    again = load_benchmark_data(f"csv:{csv}", max_rows=200)[1]
    assert X.equals(again), "the same sample every time"
    assert load_benchmark_data(f"csv:{csv}", max_rows=1000)[0] == "big", "small enough: whole"


def test_a_csv_folder_is_every_csv_file_in_it(tmp_path):
    for stem in ("b", "a"):
        pd.DataFrame({"x0": [1.0, 2.0], "y": [0, 1]}).to_csv(tmp_path / f"{stem}.csv", index=False)
    (tmp_path / "notes.txt").write_text("not a data set")
    assert expand_datasets(["iris", f"csv:{tmp_path}"]) == [
        "iris",
        f"csv:{tmp_path / 'a.csv'}",
        f"csv:{tmp_path / 'b.csv'}",
    ]
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"no \.csv file"):
        expand_datasets([f"csv:{tmp_path / 'empty'}"])


def test_the_command_line_default_row_limit_is_the_library_s():
    from optuna_boxcox.cli.benchmark import DEFAULT_MAX_ROWS as CLI_DEFAULT
    from optuna_boxcox.experiments.benchmark import DEFAULT_MAX_ROWS

    assert CLI_DEFAULT == DEFAULT_MAX_ROWS


def test_command_refuses_a_row_limit_of_one(capsys):
    from optuna_boxcox.cli import main

    assert main(["benchmark", "--datasets", "iris,wine", "--max-rows", "1"]) == 2
    assert "--max-rows must be 0 (every row) or at least 2" in capsys.readouterr().err
