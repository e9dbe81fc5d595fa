"""`compare`: every sampler × seed in one storage, one table, a plot, and resuming."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import optuna
import pytest
from scipy import stats
from sklearn.metrics import balanced_accuracy_score
from sklearn.model_selection import RepeatedStratifiedKFold
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import BoxCoxTransformer
from optuna_boxcox import make_sampler
from optuna_boxcox.cli import compare as compare_command
from optuna_boxcox.experiments.compare import FIXED_TRANSFORMS
from optuna_boxcox.experiments.compare import compare
from optuna_boxcox.experiments.compare import format_table
from optuna_boxcox.experiments.compare import parse_outer_cv


@pytest.mark.long
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
        "raw features",
        "StandardScaler",
        "QuantileTransformer",
        "Box-Cox MLE",
    ):
        assert row in first.stdout
    assert (tmp_path / "plot.html").stat().st_size > 10_000
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(url))
    assert names == sorted(
        [
            *(
                f"breast_cancer/knn/{s}/seed{k}"
                for s in ("coordinate", "tpe", "nelder-mead", "random")
                for k in (0, 1)
            ),
            "breast_cancer/knn/fixed",
        ]
    )
    fixed = optuna.load_study(
        study_name=names.pop(names.index("breast_cancer/knn/fixed")), storage=url
    )
    assert len(fixed.user_attrs["fixed_scores"]) == 7 and len(fixed.trials) == 7
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
    assert "held-out" in text and "Box-Cox MLE" in text


def _plain_loop(X, y, sampler_name, seed, n_trials):
    """The search of one outer fold as a user would write it: Optuna's own study.optimize in
    memory, then the chosen Λ's pipeline fitted on the training rows."""
    objective = BoxCoxObjective(X, y, KNeighborsClassifier(), scoring="balanced_accuracy")
    sampler = make_sampler(sampler_name, seed=seed)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study.optimize(objective, n_trials=n_trials)
    params = sampler.result(study).params if hasattr(sampler, "result") else study.best_params
    return study.best_value, objective.to_lambdas(params)


def _held_out_oracle(X, y, splits, sampler_name, n_trials):
    """(inner best, held-out balanced accuracy) per fold, in fold order."""
    found = []
    for train, test in splits:
        best, lambdas = _plain_loop(X.iloc[train], y[train], sampler_name, 0, n_trials)
        model = make_pipeline(BoxCoxTransformer(lambdas=lambdas), KNeighborsClassifier())
        model.fit(X.iloc[train].to_numpy(float), y[train])
        predicted = model.predict(X.iloc[test].to_numpy(float))
        found.append((best, balanced_accuracy_score(y[test], predicted)))
    return found


@pytest.fixture(scope="module")
def outer_and_null(breast_cancer, tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('outer') / 'o.db'}"
    settings = dict(
        dataset="bc",
        classifier="knn",
        samplers=["coordinate", "random"],
        seeds=1,
        n_trials=20,
        scoring="balanced_accuracy",
        outer_cv="2x2",
        null=True,
        transforms=["standard", "box-cox"],
        storage=url,
    )
    X, y = breast_cancer.data.iloc[:, :2], breast_cancer.target.to_numpy()
    runs, references = compare(X, y, KNeighborsClassifier(), **settings)
    return X, y, url, settings, runs, references


@pytest.mark.long
def test_outer_folds_score_the_chosen_lambda_as_a_plain_loop_would(outer_and_null):
    X, y, url, _, runs, references = outer_and_null
    splits = list(RepeatedStratifiedKFold(n_splits=2, n_repeats=2, random_state=0).split(X, y))
    for run in runs:
        expected = _held_out_oracle(X, y, splits, run.name, 20)
        assert run.best == pytest.approx([b for b, _ in expected], abs=1e-12), run.name
        assert run.held_out == pytest.approx([h for _, h in expected], abs=1e-12), run.name
        assert len(run.study_names) == 4 and run.study_names[3].endswith("-outer2x2/fold3")
        for k, name in enumerate(run.study_names):
            attrs = optuna.load_study(study_name=name, storage=url).user_attrs
            assert attrs["held_out"]["score"] == run.held_out[k], "per-fold score in the study"
            assert attrs["held_out"]["metric"] == "balanced_accuracy"
            assert attrs["compare"]["fold"] == k
    standard = references[FIXED_TRANSFORMS["standard"]]
    for k, (train, test) in enumerate(splits):
        model = make_pipeline(StandardScaler(), KNeighborsClassifier()).fit(
            X.iloc[train], y[train]
        )
        assert standard.held_out[k] == pytest.approx(
            balanced_accuracy_score(y[test], model.predict(X.iloc[test]))
        )
        assert standard.best[k] == pytest.approx(
            balanced_accuracy_score(y[train], model.predict(X.iloc[train]))
        ), "a fixed transform's inner score is the search's own (resubstitution)"


def test_null_check_repeats_every_search_on_permuted_labels(outer_and_null):
    X, y, url, _, runs, references = outer_and_null
    permuted = np.random.default_rng(0).permutation(y)
    assert sorted(permuted) == sorted(y) and not np.array_equal(permuted, y)
    splits = list(
        RepeatedStratifiedKFold(n_splits=2, n_repeats=2, random_state=0).split(X, permuted)
    )
    for run in runs:
        expected = _held_out_oracle(X, permuted, splits, run.name, 20)
        assert run.null_best == pytest.approx([b for b, _ in expected], abs=1e-12)
        assert run.null_held_out == pytest.approx([h for _, h in expected], abs=1e-12)
    names = {s.study_name for s in optuna.get_all_study_summaries(url)}
    assert "bc/knn/random/seed0/n20-balanced_accuracy-outer2x2-null0/fold2" in names
    assert len(names) == 2 * 2 * 4 + 2, "2 samplers × real and permuted labels × 4 folds, and the"
    " fixed transforms' study for either labelling"
    fixed = optuna.load_study(
        study_name="bc/knn/fixed/balanced_accuracy-outer2x2-null0", storage=url
    ).user_attrs
    assert (
        fixed["fixed_scores:fold3"]["box-cox"]["held_out"]
        == references[FIXED_TRANSFORMS["box-cox"]].null_held_out[3]
    )
    text = format_table(runs, references, metric="balanced_accuracy")
    header = next(line for line in text.splitlines() if line.startswith("method"))
    for column in ("inner best", "held-out", "gap", "inner (perm.)", "held-out (perm.)"):
        assert column in header
    coordinate = next(line for line in text.splitlines() if line.startswith("coordinate"))
    gap = np.mean(runs[0].null_best) - np.mean(runs[0].null_held_out)
    assert f"{gap:+.4f}" in coordinate, "the table shows the permuted labels' gap"


def test_outer_folds_are_read_back_not_rerun(outer_and_null, breast_cancer, monkeypatch):
    X, y, url, settings, runs, references = outer_and_null
    before = {
        s.study_name: s.n_trials
        for s in optuna.get_all_study_summaries(url, include_best_trial=False)
    }
    import optuna_boxcox.experiments._compare_runs as module

    def no_search(*args, **kwargs):
        raise AssertionError("a finished fold was searched again")

    import optuna_boxcox._lifecycle._search as lifecycle

    monkeypatch.setattr(lifecycle, "optimize", no_search)
    monkeypatch.setattr(lifecycle, "optimize_in_memory", no_search)
    monkeypatch.setattr(module, "_held_out", no_search)
    monkeypatch.setattr(module, "_score_fixed", no_search)
    monkeypatch.setattr(module, "BoxCoxObjective", no_search)
    again, again_references = compare(X, y, KNeighborsClassifier(), **settings)
    assert [r.held_out for r in again] == [r.held_out for r in runs]
    assert [r.null_held_out for r in again] == [r.null_held_out for r in runs]
    assert again_references == references
    after = {
        s.study_name: s.n_trials
        for s in optuna.get_all_study_summaries(url, include_best_trial=False)
    }
    assert after == before


def test_null_check_needs_held_out_scores(breast_cancer):
    with pytest.raises(ValueError, match="needs held-out scores"):
        compare(
            breast_cancer.data.iloc[:, :2],
            breast_cancer.target,
            KNeighborsClassifier(),
            dataset="bc",
            classifier="knn",
            samplers=["random"],
            null=True,
        )


@pytest.mark.parametrize(
    ("text", "expected"), [("5x2", (5, 2)), ("3 x 4", (3, 4)), ("10", (1, 10)), ("2×5", (2, 5))]
)
def test_outer_cv_reads_repeats_by_folds(text, expected):
    assert parse_outer_cv(text) == expected


@pytest.mark.parametrize("text", ["5x1", "x2", "five", "0x2"])
def test_outer_cv_refuses_what_is_no_cross_validation(text):
    with pytest.raises(ValueError, match="outer CV"):
        parse_outer_cv(text)


def test_command_names_the_library_fixed_transforms():
    assert tuple(FIXED_TRANSFORMS) == compare_command.FIXED_TRANSFORMS


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--null"], "--null needs held-out scores"),
        (["--outer-cv", "5x2", "--test-size", "0.3"], "not both"),
        (["--outer-cv", "5by2"], "--outer-cv"),
        (["--transforms", "standard,log"], "unknown fixed transform(s) log"),
    ],
)
def test_command_refuses_honest_score_options_that_do_not_fit(arguments, message, capsys):
    from optuna_boxcox.cli import main

    assert main(["compare", "--features", "2", *arguments]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_null_check_on_breast_cancer_sits_at_chance_for_every_sampler(breast_cancer, tmp_path):
    """Held-out balanced accuracy on permuted labels within 0.5 ± 0.08."""
    runs, references = compare(
        breast_cancer.data,
        breast_cancer.target,
        KNeighborsClassifier(),
        dataset="breast_cancer",
        classifier="knn",
        samplers=["coordinate", "tpe", "nelder-mead", "random"],
        seeds=1,
        n_trials=330,
        scoring="balanced_accuracy",
        outer_cv="5x2",
        null=True,
        storage=f"sqlite:///{tmp_path / 'null.db'}",
        n_jobs=2,
    )
    for run in runs:
        assert abs(np.mean(run.null_held_out) - 0.5) <= 0.08, run.name
        assert np.mean(run.held_out) > 0.9, f"{run.name} learns the real labels"
        assert np.mean(run.null_best) - np.mean(run.null_held_out) > 0.1, (
            f"{run.name}: resubstitution on noise should look better than chance"
        )
    text = format_table(runs, references, metric="balanced_accuracy")
    assert "gap (perm.)" in text


@pytest.mark.long
def test_compare_scores_the_holdout_with_f1_as_scikit_learn_does(tmp_path):
    # An independent oracle: StandardScaler + k-NN fitted on the same stratified 75 % and scored
    # with f1_score on the other 25 %, as a plain scikit-learn script would.
    from sklearn.datasets import load_breast_cancer
    from sklearn.metrics import f1_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from optuna_boxcox.classifiers import make_classifier

    command = [
        *[sys.executable, "-m", "optuna_boxcox.cli", "compare", "--dataset", "breast_cancer"],
        *["--features", "3", "--classifier", "knn", "--samplers", "coordinate", "--seeds", "1"],
        *["--scoring", "f1", "--test-size", "0.25", "--storage", f"sqlite:///{tmp_path / 'c.db'}"],
        *["--plot", str(tmp_path / "plot.html")],
    ]
    first = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "held-out: f1 of the chosen Λ" in first.stdout
    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X[:, :3], y, test_size=0.25, stratify=y, random_state=0
    )
    model = make_pipeline(StandardScaler(), make_classifier("knn")).fit(X_train, y_train)
    expected = f1_score(y_test, model.predict(X_test))
    row = next(line for line in first.stdout.splitlines() if line.startswith("StandardScaler"))
    assert float(row.split()[4]) == pytest.approx(expected, abs=5e-5)  # name, inner ± sd, held-out

    second = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr
    table = lambda out: [line for line in out.splitlines() if line.startswith("coordinate")]
    assert table(second.stdout) == table(first.stdout), "wall time and scores read back"


def test_every_search_study_of_a_compare_run_has_a_note_naming_the_lambda_used(
    breast_cancer, tmp_path
):
    # The dashboard shows every study the package makes with the Λ used and the decision in
    # words: a comparison's studies too (the note and its figures).
    from optuna_dashboard import get_note

    X, y = breast_cancer.data.iloc[:, :2], breast_cancer.target
    url = f"sqlite:///{tmp_path / 'n.db'}"
    compare(
        X,
        y,
        KNeighborsClassifier(),
        dataset="bc",
        classifier="knn",
        samplers=["coordinate", "random", "guarded"],
        seeds=1,
        storage=url,
        n_trials=20,
    )
    searches = [
        s.study_name
        for s in optuna.get_all_study_summaries(url)
        if not s.study_name.split("/")[2].startswith("fixed")
    ]
    assert len(searches) == 3, searches
    for name in searches:
        study = optuna.load_study(study_name=name, storage=url)
        note = get_note(study)
        head = note.split("| | |")[0]
        assert "**Λ used: " in head, (name, note)
        result = study.user_attrs.get("boxcox_result")
        if result is not None and result.get("trial") is not None:
            assert f"(trial {result['trial']})" in head, (name, note)
        if result is None:  # a plan stopped at the budget: the note names the trial holding it
            number = int(re.search(r"\*\*Λ used: the searched Λ\*\* \(trial (\d+)\)", head)[1])
            result = {"params": study.trials[number].params}
        used = result["params"]
        for feature, value in used.items():
            assert f"| `{feature}` | {value:.3f} |" in note, (name, note)
        assert _graphs(study), f"{name} has no figures"
    # A study read back (the same comparison again) keeps its note.
    before = {n: get_note(optuna.load_study(study_name=n, storage=url)) for n in searches}
    compare(
        X,
        y,
        KNeighborsClassifier(),
        dataset="bc",
        classifier="knn",
        samplers=["coordinate", "random", "guarded"],
        seeds=1,
        storage=url,
        n_trials=20,
    )
    assert before == {n: get_note(optuna.load_study(study_name=n, storage=url)) for n in searches}


def _graphs(study: optuna.Study) -> list[str]:
    """The optuna-dashboard graph attributes of the study (its attached figures)."""
    from optuna_boxcox._optuna import storage_of
    from optuna_boxcox._optuna import study_id_of

    attrs = storage_of(study).get_study_system_attrs(study_id_of(study))
    return [k for k in attrs if k.startswith("dashboard:plot_data:")]
