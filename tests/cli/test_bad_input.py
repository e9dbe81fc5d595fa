"""Bad input everywhere: each surface refuses it with a message naming the problem, or gives a finite
result; a failed command never changes a study that is already in the storage.

Surfaces: BoxCoxClassifier, BoxCoxTransformer, BoxCoxObjective, ``load_csv``, ``open_storage`` and
the ``search`` command run as a user runs it (one subprocess per case, all cases at once).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
import importlib.util
import os
from pathlib import Path
import re
import shutil
import subprocess
import sys
from typing import Any
import warnings

import numpy as np
import optuna
import pandas as pd
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.datasets import load_wine
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox import BoxCoxObjective
from optuna_boxcox import BoxCoxTransformer
from optuna_boxcox._math._numerics import ExtremeValueWarning
from optuna_boxcox.datasets import ConstantColumnWarning
from optuna_boxcox.datasets import DataError
from optuna_boxcox.datasets import load_csv
from optuna_boxcox.storage import open_storage

#: Expected outcome "a finite result" (every other expectation is a regex the error must match).
FINITE = "finite"
#: A surface a case does not apply to.
NA = None

HAS_PSYCOPG = importlib.util.find_spec("psycopg") is not None
PASSWORD_URL = "postgresql+psycopg://u:secret@127.0.0.1:1/db"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


# -- the data cases ----------------------------------------------------------------------------------
def _data(case: str) -> tuple[pd.DataFrame, pd.Series]:
    """20 samples × 5 lognormal features f0..f4 and two alternating classes, with the case's defect."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.lognormal(size=(20, 5)), columns=[f"f{j}" for j in range(5)])
    y = pd.Series([0, 1] * 10, name="y")
    if case == "nan":
        X.iloc[3, 1] = np.nan
    elif case == "infinite":
        X.iloc[3, 1] = np.inf
    elif case == "zero-rows":
        X, y = X.iloc[:0], y.iloc[:0]
    elif case == "zero-columns":
        X = X.iloc[:, :0]
    elif case == "one-sample":
        X, y = X.iloc[:1], y.iloc[:1]
    elif case == "one-class":
        y[:] = 0
    elif case == "constant-column":
        X["f1"] = 7.0
    elif case == "huge-1e300":
        X = X * 1e300
    elif case == "tiny-1e-300":
        X = X * 1e-300
    elif case == "range-overflows":
        # max - min exceeds the largest float64: range scaling would make the column constant.
        X["f1"] = np.linspace(-1.0, 1.0, 20) * 1.7e308
    elif case == "non-numeric-column":
        X["f1"] = ["a", "b"] * 10
    return X, y  # "label-column-missing" only changes the CSV's header


def _good() -> tuple[pd.DataFrame, pd.Series]:
    return _data("good")


#: case → expected outcome on (classifier, transformer, objective, load_csv, search command).
EXPECTED = {
    "nan": ("NaN",) * 5,
    "infinite": ("infinit",) * 5,
    "zero-rows": (r"0 sample\(s\)", r"0 sample\(s\)", r"0 sample\(s\)", "no rows", "no rows"),
    "zero-columns": (
        r"0 feature\(s\)",
        r"0 feature\(s\)",
        r"0 feature\(s\)",
        "no feature columns",
        "no feature columns",
    ),
    "one-sample": (
        r"1 sample\(s\).*minimum of 2",
        FINITE,
        r"1 sample\(s\).*minimum of 2",
        "has one row",  # not scikit-learn's "Found array with 1 sample(s)" (#36)
        "has one row",
    ),
    "one-class": ("single class", FINITE, "single class", FINITE, "single class"),
    "constant-column": (FINITE,) * 5,
    "huge-1e300": (FINITE,) * 5,
    "tiny-1e-300": (FINITE,) * 5,
    "range-overflows": (r"f1'? span more than the largest float64|position 1 span more",) * 5,
    "non-numeric-column": ("non-numeric feature column.*f1",) * 5,
    "label-column-missing": (
        NA,
        NA,
        NA,
        "label column 'y' not in data.csv",
        "label column 'y' not in data.csv",
    ),
}
CLASSIFIER, TRANSFORMER, OBJECTIVE, CSV, CLI = range(5)
DATA = {case: _data(case) for case in EXPECTED}


def _cases(surface: int) -> list:
    return [
        pytest.param(case, EXPECTED[case][surface], id=case)
        for case in DATA
        if EXPECTED[case][surface] is not NA
    ]


def _write_csv(case: str, directory: Path) -> Path:
    X, y = DATA[case]
    frame = pd.concat([X, y.rename("class" if case == "label-column-missing" else "y")], axis=1)
    path = directory / "data.csv"
    frame.to_csv(path, index=False)
    return path


def _knn() -> KNeighborsClassifier:
    return KNeighborsClassifier(n_neighbors=3)


def _assert_finite(*arrays: Any) -> None:
    for array in arrays:
        assert np.all(np.isfinite(np.asarray(array, dtype=np.float64))), array


#: The constant-column and one-sample cases warn that no λ changes a constant column, as they
#: should (test_a_constant_column_is_named_in_the_packages_own_warning_never_numpys asserts
#: it); the tests marked with it ask for an error or a finite result.
CONSTANT_COLUMNS_WARN = pytest.mark.filterwarnings(
    "ignore::optuna_boxcox.datasets.ConstantColumnWarning"
)


@CONSTANT_COLUMNS_WARN
@pytest.mark.parametrize("case, expected", _cases(CLASSIFIER))
def test_classifier_names_the_problem_or_gives_a_finite_result(case, expected):
    X, y = DATA[case]
    clf = BoxCoxClassifier(_knn(), sampler="spherical")
    if expected is not FINITE:
        with pytest.raises(ValueError, match=expected):
            clf.fit(X, y)
        return
    clf.fit(X, y)
    _assert_finite(clf.lambdas_, clf.best_score_, clf.predict_proba(X))
    assert set(clf.predict(X)) <= set(clf.classes_)


@CONSTANT_COLUMNS_WARN
@pytest.mark.parametrize("case, expected", _cases(TRANSFORMER))
def test_transformer_names_the_problem_or_gives_a_finite_result(case, expected):
    X, _ = DATA[case]
    if expected is not FINITE:
        with pytest.raises(ValueError, match=expected):
            BoxCoxTransformer().fit(X)
        return
    p = X.shape[1]
    for lambdas in ("mle", [-10.0] * p, [0.0] * p, [10.0] * p):
        transformer = BoxCoxTransformer(lambdas).fit(X)
        _assert_finite(
            transformer.lambdas_,
            transformer.transform(X),
            transformer.inverse_transform(transformer.transform(X)),
        )


@pytest.mark.parametrize("case, expected", _cases(OBJECTIVE))
def test_objective_names_the_problem_or_gives_a_finite_result(case, expected):
    X, y = DATA[case]
    if expected is not FINITE:
        with pytest.raises(ValueError, match=expected):
            BoxCoxObjective(X, y, _knn())
        return
    objective = BoxCoxObjective(X, y, _knn())
    space = objective.space
    for lambdas in (np.ones(space.dim), objective.mle_lambdas, space.low, space.high):
        score = objective.evaluate(lambdas)
        _assert_finite(score, objective.transform(lambdas))
        assert 0.0 <= score <= 1.0


@CONSTANT_COLUMNS_WARN
@pytest.mark.parametrize("case, expected", _cases(CSV))
def test_load_csv_names_the_problem_or_gives_finite_features(case, expected, tmp_path):
    path = _write_csv(case, tmp_path)
    if expected is not FINITE:
        with pytest.raises(DataError, match=expected):
            load_csv(path, "y")
        return
    X, y = load_csv(path, "y")
    assert X.shape == DATA[case][0].shape and len(y) == len(X)
    _assert_finite(X)


# -- cases only the estimators and the objective meet -------------------------------------------------
def test_mismatched_feature_count_is_refused_by_name():
    X, y = _good()  # fitted on 5 features, asked about 4
    four = X.iloc[:, :4].to_numpy()
    clf = BoxCoxClassifier(_knn(), sampler="mle").fit(X.to_numpy(), y)
    transformer = BoxCoxTransformer().fit(X.to_numpy())
    for call in (
        clf.predict,
        clf.predict_proba,
        transformer.transform,
        transformer.inverse_transform,
    ):
        with pytest.raises(ValueError, match=r"X has 4 features, but .* is expecting 5 features"):
            call(four)
    objective = BoxCoxObjective(X, y, _knn())
    for call in (objective.evaluate, objective.transform):
        with pytest.raises(ValueError, match=r"expected 5 λ, one per feature"):
            call(np.ones(4))


def test_a_constant_column_is_named_in_the_packages_own_warning_never_numpys():
    X, y = _good()
    X["f1"] = 7.0
    for fit in (
        lambda: BoxCoxClassifier(GaussianNB()).fit(X, y),  # the guarded default
        lambda: BoxCoxTransformer().fit(X),
    ):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.simplefilter("error", RuntimeWarning)
            fit()
        constant = [w for w in caught if issubclass(w.category, ConstantColumnWarning)]
        assert len(constant) == 1 and "'f1'" in str(constant[0].message), caught
        assert "\n" not in str(constant[0].message)


def test_data_whose_every_column_is_constant_are_refused_by_the_search_in_one_line():
    X, y = _good()
    X[:] = 7.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"every feature column is constant \('f0', "):
            BoxCoxClassifier(GaussianNB()).fit(X, y)
        with pytest.raises(ValueError, match="every feature column is constant"):
            BoxCoxObjective(X, y, GaussianNB())
    with pytest.warns(ConstantColumnWarning, match="'f0', 'f1'"):
        assert np.all(BoxCoxTransformer().fit_transform(X) == 0.0)  # nothing to search there


def test_one_value_of_1e300_gives_no_overflow_warning():
    # The gate's held-out folds see it far outside their training range: a candidate's
    # transform sends it near 1e300, which GaussianNB squares.
    X, y = _good()
    X.iloc[0, 0] = 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtremeValueWarning)  # the package's own, named column
        warnings.simplefilter("error", RuntimeWarning)
        clf = BoxCoxClassifier(GaussianNB()).fit(X, y)
        BoxCoxTransformer().fit(X)
    _assert_finite(clf.lambdas_, clf.best_score_)


@pytest.mark.filterwarnings("ignore:the data have:UserWarning")  # rows too few, on purpose
def test_a_knn_with_more_neighbours_than_rows_is_refused_before_a_study_exists(tmp_path):
    X, y = _good()
    storage = f"sqlite:///{tmp_path / 'k.db'}"
    clf = BoxCoxClassifier(KNeighborsClassifier(), storage=storage)
    with pytest.raises(ValueError, match=r"n_neighbors=5 rows to fit; the data have 4"):
        clf.fit(X.iloc[:4], y.iloc[:4])
    assert not (tmp_path / "k.db").exists()


@pytest.mark.filterwarnings("ignore:the data have:UserWarning")  # rows too few, on purpose
def test_the_gate_of_a_knn_on_rows_too_few_to_judge_uses_standard_scaling():
    X, y = _good()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        clf = BoxCoxClassifier(KNeighborsClassifier()).fit(X.iloc[:6], y.iloc[:6])
    assert not clf.decision_["gated"] and clf.decision_["chosen"] == "ones"
    assert "too few for the gate's 5 held-out folds" in clf.decision_["rule"]


def test_the_gate_of_a_knn_whose_folds_are_smaller_than_k_keeps_the_search():
    rng = np.random.default_rng(0)
    X, y = rng.lognormal(size=(10, 2)), np.repeat([0, 1], 5)  # folds train on 8 rows
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        clf = BoxCoxClassifier(KNeighborsClassifier(n_neighbors=9)).fit(X, y)
    assert not clf.decision_["gated"] and "n_neighbors=9" in clf.decision_["rule"]
    assert clf.decision_["chosen"] == "searched"


@pytest.mark.parametrize("extrapolation", ["extrapolate", "clip"])
def test_test_values_1000_times_outside_the_training_range_give_finite_output(extrapolation):
    X, y = _good()
    far = np.vstack([X.to_numpy() * 1000, -X.to_numpy() * 1000])
    clf = BoxCoxClassifier(_knn(), sampler="spherical", extrapolation=extrapolation).fit(
        X.to_numpy(), y
    )
    _assert_finite(clf.predict_proba(far))
    assert set(clf.predict(far)) <= set(clf.classes_)
    for lambdas in ("mle", [-10.0] * 5, [0.0] * 5, [10.0] * 5):
        transformer = BoxCoxTransformer(lambdas, extrapolation=extrapolation).fit(X.to_numpy())
        _assert_finite(transformer.transform(far))


@pytest.mark.parametrize("surface", ["classifier", "objective"])
def test_lambda_domain_given_backwards_is_refused(surface):
    X, y = _good()
    with pytest.raises(ValueError, match="low < high"):
        if surface == "classifier":
            BoxCoxClassifier(_knn(), sampler="mle", bounds=(5, -5)).fit(X, y)
        else:
            BoxCoxObjective(X, y, _knn(), bounds=(5, -5))


# -- storages ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def existing_db(tmp_path_factory) -> Path:
    """A SQLite file holding study 'existing' with three finished trials (copied for each case)."""
    path = tmp_path_factory.mktemp("existing") / "existing.db"
    study = optuna.create_study(
        storage=f"sqlite:///{path}",
        study_name="existing",
        sampler=optuna.samplers.RandomSampler(seed=0),
    )
    study.optimize(lambda trial: trial.suggest_float("x", 0, 1), n_trials=3)
    return path


def _existing_study(directory: Path, existing_db: Path) -> str:
    """The URL of a copy of ``existing_db`` in ``directory``."""
    shutil.copyfile(existing_db, directory / "existing.db")
    return f"sqlite:///{directory / 'existing.db'}"


def _snapshot(url: str, name: str) -> tuple:
    """What must survive a failed command: the trials (state, params, value) and the study's attributes."""
    study = optuna.load_study(study_name=name, storage=url)
    trials = [(t.number, t.state, t.params, t.value) for t in study.trials]
    return trials, study.user_attrs


#: case → (storage URL, given the directory of the existing study; expected error; exit code).
STORAGE = {
    "storage-unreachable": (
        lambda d: PASSWORD_URL,
        r"cannot open storage postgresql\+psycopg://u:\*\*\*@127\.0\.0\.1:1/db: .*refused"
        if HAS_PSYCOPG
        else r"storage postgresql\+psycopg://u:\*\*\*@127\.0\.0\.1:1/db needs the database driver 'psycopg'",
        1,
    ),
    "storage-driver-missing": (
        lambda d: PASSWORD_URL,
        r"storage postgresql\+psycopg://u:\*\*\*@127\.0\.0\.1:1/db needs the database driver 'psycopg'",
        1,
    ),
    "storage-malformed-url": (
        lambda d: "notaurl://",
        r"storage 'notaurl://' is not a database URL",
        2,
    ),
    "storage-sqlite-dir-missing": (
        lambda d: "sqlite:////nonexistent-dir/x.db",
        r"cannot open SQLite storage sqlite:////nonexistent-dir/x\.db: .*nonexistent-dir",
        1,
    ),
    "storage-sqlite-inside-a-file": (
        lambda d: f"sqlite:///{d / 'existing.db' / 'x.db'}",
        r"cannot open SQLite storage .*existing\.db/x\.db",
        1,
    ),
}


def _storage_cases() -> list:
    return [pytest.param(case, id=case) for case in STORAGE]


@pytest.fixture
def hide_psycopg(monkeypatch):
    """Make ``import psycopg`` fail as it does where the driver is not installed."""
    monkeypatch.setitem(sys.modules, "psycopg", None)


@pytest.mark.parametrize("case", _storage_cases())
@pytest.mark.parametrize("surface", ["open_storage", "classifier"])
def test_unusable_storage_is_refused_by_name(surface, case, tmp_path, existing_db, request):
    if case == "storage-driver-missing":
        request.getfixturevalue("hide_psycopg")
    existing = _existing_study(tmp_path, existing_db)
    before = _snapshot(existing, "existing")
    url, expected, _ = STORAGE[case]
    with pytest.raises((ValueError, RuntimeError), match=expected) as raised:
        if surface == "open_storage":
            open_storage(url(tmp_path))
        else:
            X, y = _good()
            BoxCoxClassifier(_knn(), sampler="mle", storage=url(tmp_path), study_name="s").fit(
                X, y
            )
    assert "secret" not in str(raised.value)
    assert _snapshot(existing, "existing") == before


def _wine3() -> tuple[pd.DataFrame, pd.Series]:
    X, y = load_wine(return_X_y=True, as_frame=True)
    return X.iloc[:, :3], y


@pytest.mark.parametrize("surface", ["classifier", "objective"])
def test_study_name_reused_for_another_search_space_is_refused_and_left_intact(surface, tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    bc_X, bc_y = load_breast_cancer(return_X_y=True, as_frame=True)
    if surface == "classifier":
        BoxCoxClassifier(_knn(), sampler="mle", storage=url, study_name="shared").fit(*_wine3())
        before = _snapshot(url, "shared")
        with pytest.raises(ValueError, match="holds another experiment \\(columns: "):
            BoxCoxClassifier(_knn(), sampler="mle", storage=url, study_name="shared").fit(
                bc_X, bc_y
            )
    else:
        study = optuna.create_study(storage=url, study_name="shared", direction="maximize")
        study.optimize(BoxCoxObjective(*_wine3(), _knn()), n_trials=2)
        before = _snapshot(url, "shared")
        with pytest.raises(ValueError, match="holds another experiment \\(columns: "):
            BoxCoxObjective(bc_X, bc_y, _knn()).register(
                optuna.load_study(study_name="shared", storage=url)
            )
    assert len(before[0]) >= 1
    assert _snapshot(url, "shared") == before


# -- the search command, as a user runs it ------------------------------------------------------------
def _search(*args: str, sampler: str = "mle") -> list[str]:
    return [
        sys.executable,
        "-m",
        "optuna_boxcox.cli",
        "search",
        *args,
        "--sampler",
        sampler,
        "--no-figures",
    ]


#: Bad --fidelity and --pruner values on wine (178 rows): case → (options, the error's words).
FIDELITY_OPTIONS = {
    "fidelity-not-a-number": (
        ["--fidelity", "half"],
        r"--fidelity must be exact, auto or a number of rows, got 'half'",
    ),
    "fidelity-one-row": (["--fidelity", "1"], r"--fidelity must be at least 2 rows, got 1"),
    "fidelity-all-rows": (["--fidelity", "178"], r"min_rows=178 must be below the 178 rows"),
    "fidelity-too-few-per-class": (["--fidelity", "5"], r"at least 2 rows per class \(6 for 3"),
    "pruner-unknown": (
        ["--fidelity", "40", "--pruner", "asha"],
        r"--pruner must be one of successive-halving, hyperband, median, none, got 'asha'",
    ),
    "pruner-with-exact": (
        ["--fidelity", "exact", "--pruner", "median"],
        r"--pruner needs --fidelity auto or N",
    ),
}


def _cli_plan(directory: Path, existing_db: Path) -> dict[str, Any]:
    """Every CLI case: its directory, commands (run in order), environment, and the watched study."""
    plans: dict[str, Any] = {}
    for case in DATA:
        where = directory / case
        where.mkdir()
        _write_csv(case, where)
        plans[case] = {
            "cwd": where,
            "commands": [
                _search("--csv", "data.csv", "--label", "y", "--storage", "sqlite:///s.db")
            ],
        }
    for case, (url, _, _) in STORAGE.items():
        where = directory / case
        where.mkdir()
        # Good data: the storage's refusal is to be the only line (constant columns are warned).
        pd.concat(_good(), axis=1).to_csv(where / "data.csv", index=False)
        env = None
        if case == "storage-driver-missing":
            shim = where / "no-psycopg" / "psycopg"
            shim.mkdir(parents=True)
            (shim / "__init__.py").write_text(
                "raise ModuleNotFoundError(\"No module named 'psycopg'\", name='psycopg')\n"
            )
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join(
                    filter(None, [str(shim.parent), os.environ.get("PYTHONPATH")])
                ),
            }
        plans[case] = {
            "cwd": where,
            "env": env,
            "commands": [_search("--csv", "data.csv", "--label", "y", "--storage", url(where))],
            "study": (_existing_study(where, existing_db), "existing"),
        }
    for case, (options, _) in FIDELITY_OPTIONS.items():
        where = directory / case
        where.mkdir()
        command = _search("--dataset", "wine", "--storage", "sqlite:///s.db", *options)
        plans[case] = {"cwd": where, "commands": [command]}
    where = directory / "study-name-reused"
    where.mkdir()
    shared = ("--storage", "sqlite:///s.db", "--study-name", "shared")
    plans["study-name-reused"] = {
        "cwd": where,
        "commands": [
            _search("--dataset", "wine", "--features", "3", *shared),
            _search(
                "--dataset", "breast_cancer", *shared
            ),  # the paper's samplers run batch by batch
            _search(
                "--dataset", "breast_cancer", *shared, "--n-trials", "1", sampler="tpe"
            ),  # study.optimize
        ],
        "study": (f"sqlite:///{where / 's.db'}", "shared"),
    }
    return plans


def _run_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """Run the commands in order; snapshot the watched study before each one and after the last
    (``snapshots[i]`` is what command i found, None while the study does not exist)."""
    runs, snapshots = [], []
    for command in [*plan["commands"], None]:
        if "study" in plan:
            try:
                snapshots.append(_snapshot(*plan["study"]))
            except KeyError:  # not created yet
                snapshots.append(None)
        if command is not None:
            runs.append(
                subprocess.run(
                    command,
                    cwd=plan["cwd"],
                    env=plan.get("env"),
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
            )
    return {"runs": runs, "snapshots": snapshots, "cwd": plan["cwd"]}


@pytest.fixture(scope="module", autouse=True)
def _cli_runs(request, tmp_path_factory, existing_db):
    """Start the CLI cases in the background before the first test of this file (when a selected test
    needs them): the seconds each process spends importing scikit-learn overlap the other tests."""
    if not any("cli_results" in item.fixturenames for item in request.session.items):
        yield {}
        return
    plans = _cli_plan(tmp_path_factory.mktemp("cli"), existing_db)
    with ThreadPoolExecutor(max_workers=6) as pool:
        yield {case: pool.submit(_run_plan, plan) for case, plan in plans.items()}


@pytest.fixture(scope="module")
def cli_results(_cli_runs) -> dict[str, Any]:
    return {case: future.result() for case, future in _cli_runs.items()}


def _assert_one_line_error(run: subprocess.CompletedProcess, expected: str, code: int) -> None:
    lines = run.stderr.strip().splitlines()
    assert run.returncode == code, f"exit {run.returncode}, stderr:\n{run.stderr}"
    assert len(lines) == 1 and "Traceback" not in run.stderr, (
        f"stderr is not one line:\n{run.stderr}"
    )
    assert lines[0].startswith("optuna-boxcox: error: "), lines[0]
    assert re.search(expected, lines[0]), f"{expected!r} not in {lines[0]!r}"


@pytest.mark.long
@pytest.mark.parametrize("case, expected", _cases(CLI))
def test_search_command_prints_one_line_naming_the_problem_or_a_finite_result(
    case, expected, cli_results
):
    (run,) = cli_results[case]["runs"]
    if expected is not FINITE:
        _assert_one_line_error(run, expected, 2)
        return
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    score = re.search(
        r"^score\s+\S+ with the Λ used: .+\n\s+base \(λ = 1\) (\S+)\s+MLE (\S+)\s+Box-Cox search (\S+)$",
        run.stdout,
        re.MULTILINE,
    )
    assert score, run.stdout
    table = run.stdout.split("λ_MLE\n", 1)[1].splitlines()
    lambdas = [
        float(value) for line in table if line.startswith("  ") for value in line.split()[1:]
    ]
    assert len(lambdas) == 2 * DATA[case][0].shape[1], run.stdout
    _assert_finite([float(s) for s in score.groups()], lambdas)
    (summary,) = optuna.get_all_study_summaries(f"sqlite:///{cli_results[case]['cwd'] / 's.db'}")
    _assert_finite(summary.best_trial.value)


@pytest.mark.parametrize("case", _storage_cases())
def test_search_command_with_an_unusable_storage_prints_one_redacted_line(case, cli_results):
    (run,) = cli_results[case]["runs"]
    _, expected, code = STORAGE[case]
    _assert_one_line_error(run, expected, code)
    assert "secret" not in run.stdout + run.stderr
    before, after = cli_results[case]["snapshots"]
    assert len(before[0]) == 3 and after == before


REUSED = r"study 'shared' holds another experiment \(columns: "


def test_search_command_with_a_study_name_reused_for_another_search_space(cli_results):
    result = cli_results["study-name-reused"]
    (first, second, _), (_, found, after, _) = result["runs"], result["snapshots"]
    assert first.returncode == 0, first.stderr
    _assert_one_line_error(second, REUSED, 2)
    trials_found, trials_after = found[0], after[0]
    assert len(trials_found) == 1 and trials_after == trials_found


def test_search_command_with_a_reused_study_name_keeps_the_study_description(cli_results):
    (_, found, after, _) = cli_results["study-name-reused"]["snapshots"]
    assert after[1] == found[1]


def test_search_command_one_trial_at_a_time_with_a_reused_study_name_writes_no_trial(cli_results):
    result = cli_results["study-name-reused"]
    (_, _, third), (_, found, _, after) = result["runs"], result["snapshots"]
    assert after[0] == found[0], "a failed trial was written into the existing study"
    _assert_one_line_error(third, REUSED, 2)


@pytest.mark.parametrize("case", list(FIDELITY_OPTIONS))
def test_search_command_with_a_bad_fidelity_or_pruner_prints_one_line(case, cli_results):
    (run,) = cli_results[case]["runs"]
    _assert_one_line_error(run, FIDELITY_OPTIONS[case][1], 2)
