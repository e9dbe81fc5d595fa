"""What a new user's first CSV meets: one line that says what to do (a tokenizing error spanned
two, an unnamed header column became ``Unnamed: 0`` silently, a text or empty column stopped the
search with no hint), a way to leave columns out (``--drop-columns``), classifier names in any
case, and a word about data too small to search."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from optuna_boxcox.cli import main
from optuna_boxcox.storage import open_storage

ROWS = "1.5,2.0,0\n2.5,3.1,1\n3.1,1.2,0\n4.2,5.3,1\n1.1,2.2,0\n2.9,3.3,1\n"


def _csv(folder: Path, name: str, text: str) -> str:
    (folder / name).write_text(text)
    return str(folder / name)


def _search(*options: str) -> list[str]:
    return ["search", *options, "--sampler", "mle", "--no-figures"]


@pytest.mark.parametrize(
    ("file", "text", "options", "said"),
    [
        (
            "ragged.csv",
            "a,b,y\n1,2,0\n2,3,1,5\n3,1,0\n",
            [],
            "ragged.csv as CSV: line 3 has 4 fields where the header has 3",
        ),
        (
            "indexed.csv",
            ",a,b,y\n0,1,2,0\n1,2,3,1\n2,3,1,0\n3,3,2,1\n",
            [],
            "column 1 of indexed.csv has no name in the header",
        ),
        (
            "text.csv",
            "a,name,y\n1.5,x,0\n2.5,y,1\n3.1,z,0\n4.2,w,1\n",
            [],
            "non-numeric feature column(s) in text.csv: name; encode them as numbers, or leave "
            "them out (--drop-columns name)",
        ),
        (
            "empty.csv",
            "a,gone,y\n1.5,,0\n2.5,,1\n3.1,,0\n4.2,,1\n",
            [],
            "missing (NaN) values in column(s) of empty.csv: gone; fill them in, or leave the "
            "column(s) out (--drop-columns gone)",
        ),
        (
            "plain.csv",
            "a,b,y\n" + ROWS,
            ["--drop-columns", "a,zz"],
            "--drop-columns names 'zz', not a column of plain.csv",
        ),
        ("plain.csv", "a,b,y\n" + ROWS, ["--study-name", ""], "--study-name '' names no study"),
        (
            "plain.csv",
            "a,b,y\n" + ROWS,
            ["--storage", "postgresql://user:secret@localhost:five/db"],
            "the port after the host must be a number",
        ),
    ],
    ids=["ragged", "unnamed", "text", "empty", "unknown-drop", "blank-name", "bad-port"],
)
def test_a_first_csv_is_refused_in_one_line_saying_what_to_do(
    tmp_path, capsys, monkeypatch, file, text, options, said
):
    monkeypatch.chdir(tmp_path)
    path = _csv(tmp_path, file, text)
    storage = ["--storage", f"sqlite:///{tmp_path / 's.db'}"]
    assert main(_search("--csv", path, "--label", "y", *storage, *options)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err
    assert "secret" not in err and "invalid literal" not in err, err
    assert not (tmp_path / "s.db").exists(), "a refused search left a study behind"


def test_dropped_columns_are_left_out_recorded_and_read_again_by_a_worker(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    text = "id,a,note,b,y\n" + "".join(
        f"{i},{1 + i % 4 + i / 7:.2f},n{i},{2 + i % 3 + i / 5:.2f},{i % 2}\n" for i in range(12)
    )
    path = _csv(tmp_path, "drop.csv", text)
    url = f"sqlite:///{tmp_path / 's.db'}"
    search = _search("--csv", path, "--label", "y", "--storage", url, "--study-name", "d")
    assert main([*search, "--drop-columns", "note", "--drop-columns", "id"]) == 0, (
        capsys.readouterr()
    )
    study = optuna.load_study(study_name="d", storage=open_storage(url))
    assert sorted(study.best_params) == ["a", "b"]
    spec = study.user_attrs["boxcox_spec"]
    assert spec["source"]["drop_columns"] == ["note", "id"], spec["source"]
    capsys.readouterr()
    worker = ["worker", "--storage", url, "--study-name", "d", "--csv", path, "--label", "y"]
    assert main([*worker, "--n-trials", "1"]) == 0, capsys.readouterr().err


def test_a_classifier_is_named_in_any_case(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 's.db'}"
    assert main(_search("--dataset", "iris", "--classifier", "KNN", "--storage", url)) == 0
    names = optuna.get_all_study_names(storage=open_storage(url))
    assert names == ["iris/knn/mle"], names


def test_data_too_few_to_tell_lambda_apart_are_said_so_before_the_search(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    path = _csv(tmp_path, "four.csv", "a,b,y\n1,2,0\n2,3,1\n3,1,0\n4,5,1\n")
    url = f"sqlite:///{tmp_path / 's.db'}"
    argv = ["search", "--csv", path, "--label", "y", "--classifier", "bayes", "--storage", url]
    assert main([*argv, "--no-figures"]) == 0
    said = [line for line in capsys.readouterr().err.splitlines() if "FewRowsWarning" in line]
    assert said and "4 rows for 2 classes" in said[0], said
