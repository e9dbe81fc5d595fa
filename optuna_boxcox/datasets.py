"""Data sets by name, or from a CSV file the user gives.

``breast_cancer``, ``iris`` and ``wine`` ship with scikit-learn and work offline. ``sonar`` (UCI
Sonar, 208 × 60) comes from OpenML through :func:`sklearn.datasets.fetch_openml`, cached in
scikit-learn's data home after the first download; offline, pass the CSV with ``load_csv``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
import csv
from pathlib import Path
import re
from typing import Any
import warnings

import numpy as np
import pandas as pd
from sklearn import datasets as _sk

from optuna_boxcox._math import _numerics
from optuna_boxcox._math._numerics import ConstantColumnWarning
from optuna_boxcox._math._numerics import constant_columns
from optuna_boxcox._system._advice import Advised

BUNDLED = ("breast_cancer", "iris", "wine")
DATASETS = (*BUNDLED, "sonar")


class DataError(ValueError):
    """A data set that cannot be used as it is (the message names the problem)."""


class DataAdvice(Advised, DataError):
    """A :class:`DataError` whose remedy names an option (``str``: the parameter; a command
    words it as its flag)."""


def load_dataset(name: str, *, data_home: str | None = None) -> tuple[pd.DataFrame, pd.Series]:
    """Features (DataFrame, named columns) and labels of a named data set."""
    if name in BUNDLED:
        bunch = getattr(_sk, f"load_{name}")(as_frame=True)
        return bunch.data, bunch.target
    if name == "sonar":
        return _load_sonar(data_home)
    raise DataError(
        f"unknown data set {name!r}; choose one of {', '.join(DATASETS)} or give a CSV path"
    )


def _load_sonar(data_home: str | None) -> tuple[pd.DataFrame, pd.Series]:
    try:
        bunch = _sk.fetch_openml(
            "sonar", version=1, as_frame=True, data_home=data_home, parser="auto"
        )
    except Exception as error:  # network errors come in many types
        raise DataAdvice(
            "could not fetch sonar from OpenML (offline?): pass the data as a CSV instead, e.g. "
            "{csv} sonar.csv {label} y"
        ) from error
    X = bunch.data.astype(np.float64)
    X.columns = [f"x{j}" for j in range(X.shape[1])]
    # OpenML labels the classes "Rock"/"Mine"; 1 = rock as in the UCI file.
    y = (bunch.target.astype(str).str.lower().str.startswith("r")).astype(int).rename("y")
    return X, y


def load_csv(
    path: str | Path, label: str, *, drop_columns: Sequence[str] = ()
) -> tuple[pd.DataFrame, pd.Series]:
    """Features and labels from a CSV file with a header row; ``label`` names the class column.

    Every other column must be numeric and finite, but the columns ``drop_columns`` names, which
    are left out (text, identifiers, a column of missing values).
    """
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path} is a directory, not a CSV file")
    if not path.is_file():
        raise DataError(f"CSV file not found: {path}")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read {path} as CSV: {_csv_reason(error)}") from error
    header = _header(path)
    duplicates = [name for name, n in Counter(header).items() if n > 1]
    if duplicates:
        raise DataError(
            f"{path.name} names more than one column {', '.join(map(repr, duplicates))}; give "
            "each column a name of its own"
        )
    unnamed = [j + 1 for j, name in enumerate(header) if not name]
    if unnamed:
        # pandas would read it as "Unnamed: 0" and search a λ for it: a row index, most often.
        raise DataError(
            f"column {', '.join(map(str, unnamed))} of {path.name} has no name in the header "
            "(a row index that pandas' to_csv wrote?): name it, or write the file without "
            "the index (index=False)"
        )
    if label not in frame.columns:
        raise DataError(
            f"label column {label!r} not in {path.name}; its columns are {', '.join(map(str, frame.columns[:10]))}"
            + ("…" if frame.shape[1] > 10 else "")
        )
    if label in drop_columns:
        raise DataError(f"{label!r} is the label column of {path.name}: it cannot be dropped")
    frame = drop_features(frame, drop_columns, source=path.name)
    y = frame.pop(label)
    if y.isna().any():
        raise DataError(
            f"label column {label!r} of {path.name} is empty in {int(y.isna().sum())} row(s)"
        )
    X = validate_features(frame, source=path.name)
    warn_constant(X, source=path.name)
    return X, y


def _header(path: Path) -> list[str]:
    """The header's names as written, stripped (pandas would read a second ``a`` as ``a.1``
    and an empty name as ``Unnamed: 0``)."""
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        return [name.strip() for name in next(csv.reader(f), [])]


def _csv_reason(error: Exception) -> str:
    """Why pandas could not read a CSV file, in one line (its tokenizer's message spans two)."""
    said = " ".join(str(error).split())
    fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", said)
    if fields is None:
        return said or type(error).__name__
    expected, line, saw = fields.groups()
    return f"line {line} has {saw} fields where the header has {expected}"


def drop_features(
    X: pd.DataFrame, names: Sequence[str], *, source: str = "the data"
) -> pd.DataFrame:
    """``X`` without the columns ``names``, or a DataError naming one it lacks."""
    names = list(dict.fromkeys(names))
    unknown = [name for name in names if name not in X.columns]
    if unknown:
        columns = ", ".join(map(str, X.columns[:10])) + ("…" if X.shape[1] > 10 else "")
        raise DataAdvice(
            "{drop_columns} names {unknown}, not a column of {source} (its columns are {columns})",
            unknown=", ".join(map(repr, unknown)),
            source=source,
            columns=columns,
        )
    return X.drop(columns=names)


def warn_constant(X: pd.DataFrame, *, source: str = "the data") -> None:
    """One line naming the constant feature columns: no λ changes them, so their share of the
    search is spent for nothing."""
    # The package's one rule for a constant column (the search's, on the same float64 values).
    values = X.to_numpy(dtype=np.float64)
    constant = [str(X.columns[j]) for j in constant_columns(values)]
    # With every column constant, the search refuses the data itself, naming them.
    if constant and len(constant) < X.shape[1]:
        shown = ", ".join(map(repr, constant[:5])) + (
            f" and {len(constant) - 5} more" if len(constant) > 5 else ""
        )
        warnings.warn(
            f"constant column(s) {shown} of {source}: no λ changes them; drop them to search "
            "the others only",
            ConstantColumnWarning,
            stacklevel=2,
        )


def validate_features(X: Any, *, source: str = "the data") -> pd.DataFrame:
    """Numeric, finite, non-empty features, or a DataError naming the offending columns."""
    X = pd.DataFrame(X)
    if X.shape[1] == 0:
        raise DataError(f"{source} has no feature columns")
    if X.shape[0] == 0:
        raise DataError(f"{source} has no rows (0 samples)")
    if X.shape[0] == 1:
        raise DataError(f"{source} has one row; a search scores a classifier on at least two")
    non_numeric = [str(c) for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
    if non_numeric:
        raise DataAdvice(
            "non-numeric feature column(s) in {source}: {names}; encode them as numbers, or "
            "leave them out ({drop_columns} {listed})",
            source=source,
            names=", ".join(non_numeric),
            listed=",".join(non_numeric),
        )
    values = X.to_numpy(dtype=np.float64)
    for problem, found, remedy in (
        ("missing (NaN)", np.isnan(values), "fill them in"),
        ("infinite", np.isinf(values), "replace them"),
    ):
        bad = [str(c) for c, hit in zip(X.columns, found.any(axis=0)) if hit]
        if bad:
            raise DataAdvice(
                "{problem} values in column(s) of {source}: {names}; {remedy}, or leave the "
                "column(s) out ({drop_columns} {listed})",
                problem=problem,
                source=source,
                names=", ".join(bad),
                remedy=remedy,
                listed=",".join(bad),
            )
    try:
        _numerics.fit_range(values, [str(c) for c in X.columns])
    except ValueError as error:
        raise DataError(f"{source}: {error}") from None
    return X
