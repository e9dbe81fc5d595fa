"""Arguments every command shares, defined once: data, classifier and scoring, storage, jobs."""

from __future__ import annotations

import argparse
from pathlib import Path
import re
from typing import TYPE_CHECKING
from typing import Any

from optuna_boxcox._defaults import DEFAULT_FIDELITY
from optuna_boxcox._defaults import DEFAULT_STORAGE
from optuna_boxcox._defaults import REPRODUCE_STORAGE
from optuna_boxcox.classifiers import CLASSIFIERS as PAPER_CLASSIFIERS
from optuna_boxcox.classifiers import PRACTITIONER_CLASSIFIERS

if TYPE_CHECKING:
    import pandas as pd

# The library and its heavy dependencies are imported inside the functions that use them:
# --help imports this module and answers without Optuna, NumPy or scikit-learn (cli/__init__).

__all__ = ["DEFAULT_STORAGE", "REPRODUCE_STORAGE"]

DATASETS = ("breast_cancer", "iris", "wine", "sonar")
CLASSIFIERS = tuple(PAPER_CLASSIFIERS)
SCORINGS = ("accuracy", "balanced_accuracy", "f1", "mcc", "ml", "pcml", "fisher", "1nn-mm")
#: Options whose value may start with a minus sign: "--grid-range -5,5".
SIGNED_VALUE_OPTIONS = ("--grid-range",)


class UsageError(Exception):
    """A problem the user can fix; printed as one line without a traceback."""


def flag_of(name: str) -> str:
    """A parameter's flag, ``grid_size`` → ``--grid-size``: argparse's own rule from a flag to its
    destination, read backwards (every option of the commands follows it)."""
    return "--" + name.replace("_", "-")


def add_data_arguments(parser: argparse.ArgumentParser, *, default: str | None = None) -> None:
    """--dataset or --csv/--label, --drop-columns and --features."""
    data = parser.add_mutually_exclusive_group()
    data.add_argument(
        "--dataset",
        default=default,
        help=f"a named data set: {', '.join(DATASETS)} (default {default or 'breast_cancer'}; "
        "sonar comes from OpenML, or pass its CSV)",
    )
    data.add_argument("--csv", type=Path, help="a CSV file with a header row (needs --label)")
    parser.add_argument("--label", help="the class column of --csv")
    parser.add_argument(
        "--drop-columns",
        action="append",
        default=None,
        metavar="NAME[,NAME…]",
        help="leave these columns of --csv (or of the data set) out of the features: text, "
        "identifiers, a column of missing values; may be repeated",
    )
    parser.add_argument(
        "--features",
        type=int,
        default=None,
        help="use only the first N features, of those not dropped (quick runs)",
    )


def add_objective_arguments(parser: argparse.ArgumentParser, *, classifier: str = "knn") -> None:
    """--classifier, --scoring, --cv."""
    parser.add_argument(
        "--classifier",
        default=classifier,
        type=lambda text: text.strip().lower(),  # KNN is knn: a name, not a study of its own
        help=f"the paper's classifiers: {', '.join(CLASSIFIERS)}; a practitioner's: "
        f"{', '.join(PRACTITIONER_CLASSIFIERS)} (default {classifier})",
    )
    parser.add_argument(
        "--scoring",
        default="accuracy",
        help=f"what the search maximises: {', '.join(SCORINGS)} (default accuracy)",
    )
    parser.add_argument(
        "--cv",
        type=int,
        default=None,
        help="score Λ by inner stratified k-fold instead of the paper's resubstitution",
    )


def add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    """--max-memory, --subsample, --fidelity: for data sets far larger than the paper's."""
    parser.add_argument(
        "--max-memory",
        default=None,
        metavar="SIZE",
        help="memory the objective may use, with its unit: e.g. 500MiB or 2GB (default: half "
        "the available memory, at most 2 GiB); past it exact block-wise evaluators or "
        "scikit-learn's own path are used instead of n × n matrices, and a size too small for "
        "the data is refused with the least that fits",
    )
    parser.add_argument(
        "--subsample",
        type=int,
        default=None,
        metavar="N",
        help="score every Λ on N rows (stratified, seeded by --seed); the search is recorded "
        "with it, and a model built from the result is fitted on all rows",
    )
    parser.add_argument(
        "--fidelity",
        default=None,
        metavar="exact|auto|N",
        help="exact: every Λ on all rows; N: successive halving, candidates scored first on N "
        "rows (stratified), the best third promoted to 3 times the rows, up to all rows; auto: "
        "priced from the classifier's cost class and the data's shape, nothing timed (exact "
        "when the rows are fewer than two rungs' floor or the exact search is estimated under "
        "20 s, halving when it is estimated to save at least half the time, its top rung "
        "capped to fit 12 minutes and the result then confirmed on all rows); recorded in the study, and a resumed "
        f"study keeps its own (default: {DEFAULT_FIDELITY} for a new study, printed before the "
        "search starts)",
    )


def add_storage_argument(
    parser: argparse.ArgumentParser, *, default: str = DEFAULT_STORAGE
) -> None:
    parser.add_argument(
        "--storage",
        default=default,
        help=f"study storage: an RDB URL (SQLite, PostgreSQL) or a .jsonl journal file "
        f"(default {default})",
    )


def add_jobs_argument(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--n-jobs", type=int, default=1, help=f"{help} (-1: one per CPU)")


def load_data(args: argparse.Namespace) -> tuple[pd.DataFrame, pd.Series, str]:
    """The features, labels and name of the data the arguments name."""
    return load_data_source(
        dataset=args.dataset,
        csv=args.csv,
        label=args.label,
        features=args.features,
        drop_columns=dropped_columns(args),
    )


def dropped_columns(args: argparse.Namespace) -> list[str] | None:
    """``--drop-columns a,b --drop-columns c`` → ``["a", "b", "c"]``; None when not given."""
    given = getattr(args, "drop_columns", None)
    if not given:
        return None
    return [name for text in given for name in split_names(text) or []]


def load_data_source(
    dataset: str | None = None,
    csv: str | Path | None = None,
    label: str | None = None,
    features: int | None = None,
    drop_columns: list[str] | None = None,
) -> tuple[pd.DataFrame, pd.Series, str]:
    """The features, labels and name of a named data set or a CSV file (without the columns
    ``drop_columns``, then its first ``features`` columns when given): what a search spec's
    ``source`` records."""
    from optuna_boxcox.datasets import drop_features
    from optuna_boxcox.datasets import load_csv
    from optuna_boxcox.datasets import load_dataset

    if csv is not None:
        if not label:
            raise UsageError("--csv needs --label naming the class column")
        X, y = load_csv(Path(csv), label, drop_columns=drop_columns or ())
        name = Path(csv).stem
    else:
        name = dataset or "breast_cancer"
        if label:
            raise UsageError(
                f"--label names the class column of --csv; the data set {name!r} has its own"
            )
        X, y = load_dataset(name)
        X = drop_features(X, drop_columns or (), source=name)
    if features is not None:
        if features < 1:
            raise UsageError(f"--features must be at least 1, got {features}")
        if features > X.shape[1]:
            raise UsageError(f"--features {features}: {name} has {X.shape[1]} features")
        X = X.iloc[:, :features]
    return X, y, name


def check_cv(cv: int | None, y: Any) -> None:
    """``--cv``: at least 2 folds and no more than the smallest class has rows (stratified
    folds), or a one-line UsageError instead of scikit-learn's own."""
    if cv is None:
        return
    if cv < 2:
        raise UsageError(f"--cv must be at least 2 folds, got {cv}")
    import pandas as pd

    smallest = int(pd.Series(y).value_counts().min())
    if cv > smallest:
        raise UsageError(
            f"--cv {cv}: the smallest class has {smallest} row(s), and stratified folds need "
            f"one each; give --cv {smallest} or less"
            if smallest >= 2
            else f"--cv {cv}: the smallest class has 1 row, too few for stratified folds"
        )


def check_max_memory(text: str | None) -> str | None:
    """``--max-memory``: a size with its unit, or a one-line UsageError (a bare ``10`` would be
    ten bytes, surely not what was meant). Whether it fits the data is the objective's to say,
    as for the library's ``memory_limit``."""
    if text is None:
        return None
    from optuna_boxcox._objective._memory import parse_memory

    if text.strip().replace(".", "", 1).isdigit():
        raise UsageError(f"--max-memory {text}: give a unit, e.g. {text.strip()}MiB or {text}GB")
    try:
        parse_memory(text)
    except ValueError:
        raise UsageError(
            f"--max-memory {text!r} is not a size; write e.g. 500MiB or 2GB"
        ) from None
    return text


def parse_fidelity(text: str | None) -> Any:
    """``--fidelity``: ``exact``, ``auto`` or a number of rows as the typed request, or a
    one-line UsageError; not given: the default request (the search lifecycle decides: a
    resumed study's own, else auto)."""
    from optuna_boxcox._study._fidelity import DEFAULT_REQUEST
    from optuna_boxcox._study._fidelity import parse_fidelity as parse

    if text is None:
        return DEFAULT_REQUEST
    value = text.strip().lower()
    if value in ("exact", "auto"):
        return parse(value)
    try:
        rows = int(value)
    except ValueError:
        raise UsageError(
            f"--fidelity must be exact, auto or a number of rows, got {text!r}"
        ) from None
    if rows < 2:
        raise UsageError(f"--fidelity must be at least 2 rows, got {rows}")
    return parse(rows)


def split_names(text: str | None) -> list[str] | None:
    """``"a,b, c"`` → ``["a", "b", "c"]``; None stays None."""
    return None if text is None else [t.strip() for t in text.split(",") if t.strip()]


def positive(kind: type = int) -> Any:
    """An argparse type: a positive number of ``kind``."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, got {text}")
        return value

    parse.__name__ = f"positive {kind.__name__}"
    return parse


def attach_signed_values(argv: list[str]) -> list[str]:
    """``--grid-range -5,5`` → ``--grid-range=-5,5``: before Python 3.13 argparse takes "-5,5" for
    an option and answers "expected one argument", and the paper's own range starts with a minus."""
    joined: list[str] = []
    i = 0
    while i < len(argv):
        if (
            argv[i] in SIGNED_VALUE_OPTIONS
            and i + 1 < len(argv)
            and re.match(r"-[\d.]", argv[i + 1])
        ):
            joined.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            joined.append(argv[i])
            i += 1
    return joined
