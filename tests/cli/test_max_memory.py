"""``--max-memory`` and the library's ``memory_limit``: one floor, the least that fits the data,
said in one line by both (the command line refused under 16 MiB, the library took 1 MiB)."""

from __future__ import annotations

import re

import pytest
from sklearn.datasets import load_iris

from optuna_boxcox import BoxCoxClassifier
from optuna_boxcox.classifiers import make_classifier
from optuna_boxcox.cli import main


def _search(tmp_path, size: str) -> tuple[int, str]:
    storage = f"sqlite:///{tmp_path / 'iris.db'}"
    argv = ["search", "--dataset", "iris", "--classifier", "knn", "--sampler", "mle"]
    status = main([*argv, "--max-memory", size, "--storage", storage, "--no-figures"])
    return status, storage


def test_the_command_line_and_the_library_refuse_the_same_sizes_with_the_same_least(
    tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    X, y = load_iris(return_X_y=True, as_frame=True)
    with pytest.raises(ValueError, match="memory_limit 1KB is too small") as refused:
        BoxCoxClassifier(make_classifier("knn"), sampler="mle", memory_limit="1KB").fit(X, y)
    library = re.search(r"give at least (\S+),", str(refused.value)).group(1)
    status, _ = _search(tmp_path, "1KB")
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1, err
    assert "--max-memory 1KB is too small for 150 rows × 4 features" in err, err
    assert f"give at least {library}, or score fewer rows (--subsample)" in err, err
    assert not (tmp_path / "iris.db").exists(), "the refusal left a study behind"
    # The least, and sizes far under the old 16 MiB floor that fit iris, are taken by both.
    for size in (library, "1MiB"):
        BoxCoxClassifier(make_classifier("knn"), sampler="mle", memory_limit=size).fit(X, y)
        assert _search(tmp_path, size)[0] == 0, capsys.readouterr().err
