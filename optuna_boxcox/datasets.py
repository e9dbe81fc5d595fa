"""Data sets by name, or from a CSV file the user gives.

``breast_cancer``, ``iris`` and ``wine`` ship with scikit-learn and work offline. ``sonar`` (UCI
Sonar, 208 × 60) comes from OpenML through :func:`sklearn.datasets.fetch_openml`, cached in
scikit-learn's data home after the first download; offline, pass the CSV with ``load_csv``.
"""

from __future__ import annotations

from collections import Counter
import csv
from pathlib import Path
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


def load_csv(path: str | Path, label: str) -> tuple[pd.DataFrame, pd.Series]:
    """Features and labels from a CSV file with a header row; ``label`` names the class column.

    Every other column must be numeric and finite.
    """
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path} is a directory, not a CSV file")
    if not path.is_file():
        raise DataError(f"CSV file not found: {path}")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise DataError(f"cannot read {path} as CSV: {error}") from error
    duplicates = _duplicate_names(path)
    if duplicates:
        raise DataError(
            f"{path.name} names more than one column {', '.join(map(repr, duplicates))}; give "
            "each column a name of its own"
        )
    if label not in frame.columns:
        raise DataError(
            f"label column {label!r} not in {path.name}; its columns are {', '.join(map(str, frame.columns[:10]))}"
            + ("…" if frame.shape[1] > 10 else "")
        )
    y = frame.pop(label)
    if y.isna().any():
        raise DataError(
            f"label column {label!r} of {path.name} is empty in {int(y.isna().sum())} row(s)"
        )
    X = validate_features(frame, source=path.name)
    warn_constant(X, source=path.name)
    return X, y


def _duplicate_names(path: Path) -> list[str]:
    """Header names that occur more than once (pandas would read the second ``a`` as ``a.1``)."""
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        header = next(csv.reader(f), [])
    return [name for name, n in Counter(h.strip() for h in header).items() if n > 1]


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
        raise DataError(f"non-numeric feature column(s) in {source}: {', '.join(non_numeric)}")
    values = X.to_numpy(dtype=np.float64)
    for problem, found in (("missing (NaN)", np.isnan(values)), ("infinite", np.isinf(values))):
        bad = [str(c) for c, hit in zip(X.columns, found.any(axis=0)) if hit]
        if bad:
            raise DataError(f"{problem} values in column(s) of {source}: {', '.join(bad)}")
    try:
        _numerics.fit_range(values, [str(c) for c in X.columns])
    except ValueError as error:
        raise DataError(f"{source}: {error}") from None
    return X
