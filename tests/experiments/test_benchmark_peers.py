"""`benchmark` against what users would pick instead (the peer transforms), on the fixed halves of
the development sets."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler

from optuna_boxcox.datasets import DataError
from optuna_boxcox.experiments.benchmark import DEV_A
from optuna_boxcox.experiments.benchmark import DEV_B
from optuna_boxcox.experiments.benchmark import HALVES
from optuna_boxcox.experiments.benchmark import LOSS_MARGIN
from optuna_boxcox.experiments.benchmark import MissingPeerError
from optuna_boxcox.experiments.benchmark import benchmark
from optuna_boxcox.experiments.benchmark import default_transforms
from optuna_boxcox.experiments.benchmark import expand_datasets
from optuna_boxcox.experiments.benchmark import format_benchmark
from optuna_boxcox.experiments.compare import ALL_TRANSFORMS
from optuna_boxcox.experiments.compare import FIXED_TRANSFORMS
from optuna_boxcox.experiments.compare import PEER_TRANSFORMS
from optuna_boxcox.experiments.compare import fixed_transform
from optuna_boxcox.experiments.compare import outer_splits

kditransform = pytest.importorskip("kditransform")
skrub = pytest.importorskip("skrub")

TEN = [
    "raw",
    "standard",
    "minmax",
    "maxabs",
    "quantile",
    "yeo-johnson",
    "box-cox",
    "kdi",
    "squashing",
    "skew-rule",
]


@pytest.fixture
def skewed():
    """Rows of a log-normal, a normal, an exponential and a constant column: two skewed."""
    rng = np.random.default_rng(7)
    return np.column_stack(
        [
            rng.lognormal(sigma=0.8, size=80),
            rng.normal(size=80),
            rng.exponential(size=80) + 3,
            np.full(80, 2.5),
        ]
    )


# -- the peers ------------------------------------------------------------------------------------
def test_the_ten_methods_are_the_seven_and_the_three_peers():
    assert list(ALL_TRANSFORMS) == TEN
    assert list(FIXED_TRANSFORMS) + list(PEER_TRANSFORMS) == TEN
    assert default_transforms() == TEN, "with the extra installed the default is all ten"
    from optuna_boxcox.cli import compare as compare_command

    assert tuple(PEER_TRANSFORMS) == compare_command.PEER_TRANSFORMS


def test_kdi_is_kditransform_then_standard_scaling(skewed):
    train, test = skewed[:60], skewed[60:]
    kdi = kditransform.KDITransformer().fit(train.copy())
    scaler = StandardScaler().fit(kdi.transform(train.copy()))
    expected = scaler.transform(kdi.transform(test.copy()))
    before = train.copy()
    ours = fixed_transform("kdi").fit(train)
    np.testing.assert_allclose(ours.transform(test), expected, rtol=0, atol=1e-12)
    assert np.array_equal(train, before), "fitting leaves the caller's data untouched"
    frame = pd.DataFrame(train, columns=list("abcd"))
    np.testing.assert_allclose(
        fixed_transform("kdi").fit(frame).transform(pd.DataFrame(test, columns=list("abcd"))),
        expected,
        atol=1e-12,
    )


def test_squashing_is_skrub_s_squashing_scaler(skewed):
    train, test = skewed[:60], skewed[60:]
    expected = skrub.SquashingScaler().fit(train).transform(test)
    np.testing.assert_array_equal(
        fixed_transform("squashing").fit(train).transform(test), expected
    )


@pytest.mark.filterwarnings("ignore:constant column")
def test_the_skew_rule_box_coxes_the_skewed_features_and_standardises_all(skewed):
    train, test = skewed[:60], skewed[60:]
    # Oracle, column by column: the skewness, then scipy's Box-Cox MLE on the column scaled into
    # [1, 2] with its training range, or nothing; then the training mean and standard deviation.
    expected = np.empty_like(test)
    for j in range(train.shape[1]):
        column, new = train[:, j], test[:, j]
        low, span = column.min(), np.ptp(column)
        if span > 0 and abs(stats.skew(column)) > 0.5:
            lam = stats.boxcox_normmax(1 + (column - low) / span, method="mle")
            column = stats.boxcox(1 + (column - low) / span, lam)
            new = stats.boxcox(1 + (new - low) / span, lam)
        scale = column.std() if column.std() > 0 else 1.0
        expected[:, j] = (new - column.mean()) / scale
    rule = fixed_transform("skew-rule").fit(train)
    assert rule.skewed_.tolist() == [True, False, True, False]
    np.testing.assert_allclose(rule.transform(test), expected, atol=1e-8)
    # On the unskewed columns the rule is StandardScaler itself.
    np.testing.assert_allclose(
        rule.transform(test)[:, 1],
        StandardScaler().fit(train[:, [1]]).transform(test[:, [1]])[:, 0],
    )


@pytest.mark.parametrize(("key", "module"), [("kdi", "kditransform"), ("squashing", "skrub")])
def test_a_missing_peer_is_one_line_naming_the_extra_only_when_asked_for(
    key, module, monkeypatch, tmp_path, capsys
):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if not installed
    assert key not in default_transforms(), "the default leaves out what is not installed"
    with pytest.raises(
        MissingPeerError, match=r"pip install -e '\.\[peers\]' in the optuna-boxcox checkout"
    ) as raised:
        fixed_transform(key)
    assert "\n" not in str(raised.value) and module in str(raised.value)
    url = f"sqlite:///{tmp_path / 'b.db'}"
    with pytest.raises(MissingPeerError):
        benchmark(["iris", "wine"], ["bayes"], [], [key, "standard"], storage=url)
    other = "squashing" if key == "kdi" else "kdi"
    result = benchmark(["iris", "wine"], ["bayes"], [], [other, "skew-rule"], storage=url)
    assert result.methods == [other, "skew-rule"], "only the peer asked for must be installed"

    from optuna_boxcox.cli import main

    assert main(["benchmark", "--datasets", "iris,wine", "--transforms", key]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install -e '.[peers]'" in err, err
    assert main(["benchmark", "--datasets", "iris,wine", "--transforms", "all"]) == 2
    assert "pip install -e '.[peers]'" in capsys.readouterr().err
    by_default = ["benchmark", "--datasets", "iris,wine", "--features", "1", "--samplers", ""]
    by_default += ["--classifiers", "bayes", "--test-size", "0.3", "--storage", url]
    assert main([*by_default, "--plot-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"fixed transforms: {key} left out, not installed" in out
    assert "× 9 methods" in out


def test_the_core_package_does_not_import_the_peers():
    code = (
        "import sys, optuna_boxcox, optuna_boxcox.cli\n"
        "import optuna_boxcox.experiments.benchmark, optuna_boxcox.experiments.compare\n"
        "optuna_boxcox.cli.build_parser()\n"
        "assert not {'kditransform', 'skrub'} & set(sys.modules), sorted(sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr


# -- the halves -----------------------------------------------------------------------------------
def test_the_halves_are_disjoint_and_together_the_25_development_sets():
    assert not set(DEV_A) & set(DEV_B)
    assert len(set(DEV_A)) == len(DEV_A) == 13 and len(set(DEV_B)) == len(DEV_B) == 12
    assert set(HALVES["dev"]) == set(DEV_A) | set(DEV_B) and len(HALVES["dev"]) == 25
    assert {"breast_cancer", "digits", "iris"} <= set(DEV_A) and "wine" in DEV_B


def _csv_folder(root, names, layout):
    """One small CSV per name (class column y), at root/NAME.csv or root/dev/NAME.csv."""
    rng = np.random.default_rng(0)
    for name in names:
        folder = root / "dev" if layout(name) else root
        folder.mkdir(exist_ok=True)
        frame = pd.DataFrame(rng.lognormal(size=(40, 2)), columns=["x0", "x1"])
        frame["y"] = np.tile([0, 1], 20)
        frame.to_csv(folder / f"{name}.csv", index=False)


def test_a_half_resolves_to_bundled_sets_and_the_csv_files_in_the_folder(tmp_path):
    bundled = {"breast_cancer", "digits", "iris", "wine"}
    files = [n for n in HALVES["dev"] if n not in bundled]
    _csv_folder(tmp_path, files, layout=lambda name: name != "sonar")
    resolved = expand_datasets(["dev-b"], tmp_path)
    assert resolved == [
        name
        if name == "wine"
        else f"csv:{tmp_path / 'sonar.csv'}"
        if name == "sonar"
        else f"csv:{tmp_path / 'dev' / f'{name}.csv'}"
        for name in DEV_B
    ]
    assert len(expand_datasets(["dev"], tmp_path)) == 25
    assert expand_datasets(["iris", "cm1"], tmp_path) == ["iris", f"csv:{tmp_path}/dev/cm1.csv"]
    assert expand_datasets(["cm1", "moons:3"]) == ["cm1", "moons:3"], "no folder: names as given"


def test_missing_files_of_a_half_are_named_in_one_line(tmp_path, capsys):
    from optuna_boxcox.cli import main

    _csv_folder(tmp_path, ["cm1", "kc1"], layout=lambda name: True)
    with pytest.raises(DataError) as raised:
        expand_datasets(["dev-a"], tmp_path)
    message = str(raised.value)
    absent = [n for n in DEV_A if n not in {"cm1", "kc1", "breast_cancer", "digits", "iris"}]
    assert message.endswith(", ".join(absent)) and "\n" not in message
    with pytest.raises(DataError, match=r"\(data_dir DIR"):  # the library names its parameter
        expand_datasets(["dev-a"])
    assert main(["benchmark", "--datasets", "dev-a"]) == 2  # ... and the command its flag
    assert "(--data-dir DIR, with" in capsys.readouterr().err

    assert main(["benchmark", "--datasets", "dev-a", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "abalone9-18" in err and "saheart" in err, err


def test_outer_1x5_is_one_stratified_5_fold():
    y = np.repeat([0, 1, 2], [50, 30, 20])
    splits = outer_splits(y, outer_cv="1x5")
    assert len(splits) == 5
    tested = np.sort(np.concatenate([s.test for s in splits]))
    assert tested.tolist() == list(range(100)), "every row is tested exactly once"
    for split in splits:
        assert np.bincount(y[split.test]).tolist() == [10, 6, 4]
    reference = StratifiedKFold(n_splits=5, shuffle=True, random_state=0).split(y, y)
    assert [s.test.tolist() for s in splits] == [t.tolist() for _, t in reference]


# -- the benchmark with the peers -----------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Two data sets (one a CSV read by name from a folder), one classifier, the ten fixed methods
    and the guarded default, held out by 1×5 stratified CV."""
    root = tmp_path_factory.mktemp("peers")
    _csv_folder(root, ["saheart"], layout=lambda name: True)
    url = f"sqlite:///{root / 'b.db'}"
    return benchmark(
        ["iris", "saheart"],
        ["bayes"],
        ["guarded"],
        data_dir=root,
        features=2,
        n_trials=6,
        outer_cv="1x5",
        storage=url,
    )


def test_the_guarded_default_is_tested_against_the_best_of_the_ten(tiny):
    assert tiny.methods == [*TEN, "guarded"] and tiny.fixed == TEN
    ranks = tiny.ranks["bayes"]
    means = {m: np.mean([tiny.scores[(d, "bayes", m)] for d in tiny.datasets]) for m in TEN}
    best = min(TEN, key=lambda m: (ranks[m], -means[m]))
    assert tiny.best_fixed["bayes"] == best
    column = {m: [tiny.scores[(d, "bayes", m)] for d in tiny.datasets] for m in tiny.methods}
    for method in tiny.methods:
        p = tiny.p_values["bayes"][method]
        if method == best:
            assert p is None
        elif column[method] == column[best]:
            assert p == 1.0
        else:
            expected = stats.wilcoxon(column[method], column[best], zero_method="zsplit").pvalue
            assert p == pytest.approx(expected)
    table = format_benchmark(tiny)
    assert "against the best other method" in table
    assert "among the 10 (peers kdi, squashing, skew-rule included)" in table


def test_the_loss_rate_is_printed_for_every_method_peers_included(tiny):
    for method in tiny.methods:
        lost = [
            tiny.scores[(d, "bayes", method)]
            < max(tiny.scores[(d, "bayes", r)] for r in ("standard", "box-cox")) - LOSS_MARGIN
            for d in tiny.datasets
        ]
        assert tiny.loss_rates["bayes"][method] == pytest.approx(np.mean(lost))
    (row,) = [
        line
        for line in format_benchmark(tiny).splitlines()
        if line.startswith("bayes") and "%" in line
    ]
    assert row.count("%") == len(tiny.methods)


def test_a_half_is_named_in_the_table_and_the_summary_study(tmp_path):
    # The members of dev-b given one by one are dev-b all the same; one fewer is not.
    bundled = {"breast_cancer", "digits", "iris", "wine"}
    _csv_folder(tmp_path, [n for n in DEV_B if n not in bundled], layout=lambda name: True)
    url = f"sqlite:///{tmp_path / 'b.db'}"
    settings = dict(data_dir=tmp_path, features=1, test_size=0.3, storage=url)
    result = benchmark(list(DEV_B), ["bayes"], [], ["standard", "box-cox"], **settings)
    assert result.half == "dev-b" and result.summary_study.startswith("benchmark/dev-b-")
    first = format_benchmark(result).splitlines()[0]
    assert first == "data sets: dev-b (confirm half of the 25 development sets, 12 sets)"
    fewer = benchmark(list(DEV_B[:-1]), ["bayes"], [], ["standard"], **settings)
    assert fewer.half is None and not format_benchmark(fewer).startswith("data sets:")
